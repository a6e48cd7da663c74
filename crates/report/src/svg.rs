//! Hand-written SVG line charts: axes with round ticks, lines with markers and dash patterns,
//! horizontal reference lines (ceilings, floors, thresholds) and pass/fail marks, and an
//! optional second y axis on the right with its own scale and lines ([`Axis2`]: a credit
//! balance beside a throughput).
//!
//! Readable without colour: every line has its own dash pattern and marker shape as well as
//! an Okabe–Ito colour (Okabe & Ito, "Color Universal Design", 2008), and pass/fail marks
//! differ in shape (filled circle / cross) and carry the words in the legend. Pure: the same
//! chart renders to the same bytes.

use std::fmt::Write as _;

/// Okabe–Ito: black, orange, sky blue, bluish green, yellow, blue, vermillion, reddish purple.
pub const OKABE_ITO: [&str; 8] = [
    "#000000", "#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7",
];

/// Colours for data lines, in order (yellow left out: too light on white paper).
const LINE_COLOURS: [&str; 6] = [
    OKABE_ITO[5],
    OKABE_ITO[1],
    OKABE_ITO[7],
    OKABE_ITO[2],
    OKABE_ITO[0],
    OKABE_ITO[3],
];
const DASHES: [&str; 6] = ["", "7 3", "2 2", "9 3 2 3", "4 4", "1 3"];
const MARKERS: [Marker; 6] = [
    Marker::Circle,
    Marker::Square,
    Marker::Triangle,
    Marker::Diamond,
    Marker::Circle,
    Marker::Square,
];

/// Ceiling lines: vermillion, long dashes. Floors: bluish green, dash-dot.
pub const CEILING: RefStyle = RefStyle {
    color: OKABE_ITO[6],
    dash: "10 4",
};
pub const FLOOR: RefStyle = RefStyle {
    color: OKABE_ITO[3],
    dash: "10 3 2 3",
};
pub const THRESHOLD: RefStyle = RefStyle {
    color: OKABE_ITO[0],
    dash: "3 3",
};
/// A burst rate (allowed while credits last): reddish purple, dash-dot-dot.
pub const BURST: RefStyle = RefStyle {
    color: OKABE_ITO[7],
    dash: "12 3 3 3 3 3",
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    None,
    Circle,
    Square,
    Triangle,
    Diamond,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RefStyle {
    pub color: &'static str,
    pub dash: &'static str,
}

/// How tick labels are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Plain numbers with k/M suffixes (IOPS).
    Count,
    /// Bytes/s in IEC units (MiB/s).
    BytesPerSec,
    /// Milliseconds.
    Ms,
    /// Seconds.
    Secs,
    /// Percent (0–100).
    Percent,
}

mod chart;

pub use chart::{Axis2, Chart, Line, Mark, RefLine};

/// Escape text for HTML and SVG.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// A round tick step for `range` split into about `n` parts (1, 2, 2.5, 5 x 10^k).
pub fn nice_step(range: f64, n: f64) -> f64 {
    if range <= 0.0 || !range.is_finite() {
        return 1.0;
    }
    let raw = range / n;
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    let m = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 2.5 {
        2.5
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    m * mag
}

fn trim(s: String) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// A tick label.
pub fn tick(v: f64, unit: Unit) -> String {
    let a = v.abs();
    match unit {
        Unit::Count => {
            if a >= 1e6 {
                format!("{}M", trim(format!("{:.2}", v / 1e6)))
            } else if a >= 1e4 {
                format!("{}k", trim(format!("{:.1}", v / 1e3)))
            } else {
                trim(format!("{v:.2}"))
            }
        }
        Unit::BytesPerSec => {
            const U: [&str; 5] = ["B/s", "KiB/s", "MiB/s", "GiB/s", "TiB/s"];
            let mut x = v;
            let mut i = 0;
            while x.abs() >= 1024.0 && i < U.len() - 1 {
                x /= 1024.0;
                i += 1;
            }
            format!("{}{}", trim(format!("{x:.1}")), U[i])
        }
        Unit::Ms => format!("{}ms", trim(format!("{v:.3}"))),
        Unit::Secs => format!("{}s", trim(format!("{v:.2}"))),
        Unit::Percent => format!("{}%", trim(format!("{v:.1}"))),
    }
}

/// A round top and tick step for data up to `max` (8% headroom), in `unit`.
fn axis_scale(max: f64, unit: Unit) -> (f64, f64) {
    let span = if max > 0.0 { max * 1.08 } else { 1.0 };
    // Bandwidth ticks are round in the IEC unit shown (25MiB/s, not 23.8MiB/s).
    let mut scale = 1.0;
    while unit == Unit::BytesPerSec && span / scale >= 1024.0 {
        scale *= 1024.0;
    }
    let step = nice_step(span / scale, 5.0) * scale;
    let top = ((max * 1.08) / step).ceil().max(1.0) * step;
    (top, step)
}

const W: f64 = 640.0;
const H: f64 = 300.0;
const L: f64 = 64.0;
const R: f64 = 16.0;
/// The right margin when there is a second axis (its tick labels and title).
const R2: f64 = 64.0;
const T: f64 = 44.0;
const B: f64 = 44.0;

/// Average width of one character of an axis title (11px sans-serif), for fitting.
const CHAR_W: f64 = 6.2;

/// A y-axis title as one line when it fits along the plot's height `ph`, else split in two
/// at the space nearest its middle (a title too long even then is still split, never cut).
fn y_label_lines(label: &str, ph: f64) -> (&str, Option<&str>) {
    if label.chars().count() as f64 * CHAR_W <= ph {
        return (label, None);
    }
    let mid = label.len() / 2;
    let split = label
        .char_indices()
        .filter(|(_, ch)| *ch == ' ')
        .map(|(i, _)| i)
        .min_by_key(|i| i.abs_diff(mid));
    match split {
        Some(i) => (&label[..i], Some(&label[i + 1..])),
        None => (label, None),
    }
}

fn marker(o: &mut String, m: Marker, x: f64, y: f64, color: &str) {
    match m {
        Marker::None => {}
        Marker::Circle => {
            let _ = write!(
                o,
                r#"<circle class="pt" cx="{x:.1}" cy="{y:.1}" r="3" fill="{color}"/>"#
            );
        }
        Marker::Square => {
            let _ = write!(
                o,
                r#"<rect class="pt" x="{:.1}" y="{:.1}" width="6" height="6" fill="{color}"/>"#,
                x - 3.0,
                y - 3.0
            );
        }
        Marker::Triangle => {
            let _ = write!(
                o,
                r#"<path class="pt" d="M{x:.1} {:.1}L{:.1} {:.1}L{:.1} {:.1}Z" fill="{color}"/>"#,
                y - 4.0,
                x + 4.0,
                y + 3.0,
                x - 4.0,
                y + 3.0
            );
        }
        Marker::Diamond => {
            let _ = write!(
                o,
                r#"<path class="pt" d="M{x:.1} {:.1}L{:.1} {y:.1}L{x:.1} {:.1}L{:.1} {y:.1}Z" fill="{color}"/>"#,
                y - 4.0,
                x + 4.0,
                y + 4.0,
                x - 4.0
            );
        }
    }
}

fn pass_fail(o: &mut String, pass: bool, x: f64, y: f64) {
    if pass {
        let _ = write!(
            o,
            r##"<circle class="pass" cx="{x:.1}" cy="{y:.1}" r="5.5" fill="none" stroke="#009E73" stroke-width="2"/>"##
        );
    } else {
        let _ = write!(
            o,
            r##"<path class="fail" d="M{:.1} {:.1}L{:.1} {:.1}M{:.1} {:.1}L{:.1} {:.1}" stroke="#D55E00" stroke-width="2.5"/>"##,
            x - 5.0,
            y - 5.0,
            x + 5.0,
            y + 5.0,
            x - 5.0,
            y + 5.0,
            x + 5.0,
            y - 5.0
        );
    }
}

/// One data line: its path (colour, dash) and a marker at each point.
fn series(o: &mut String, l: &Line, sx: &dyn Fn(f64) -> f64, sy: &dyn Fn(f64) -> f64) {
    if l.points.is_empty() {
        return;
    }
    let i = l.style % LINE_COLOURS.len();
    let (color, dash) = (LINE_COLOURS[i], DASHES[i]);
    let mut d = String::new();
    for (k, &(x, y)) in l.points.iter().enumerate() {
        let _ = write!(
            d,
            "{}{:.1} {:.1}",
            if k == 0 { "M" } else { "L" },
            sx(x),
            sy(y)
        );
    }
    let _ = write!(
        o,
        r#"<path class="series" d="{d}" fill="none" stroke="{color}" stroke-width="2"{}/>"#,
        if dash.is_empty() {
            String::new()
        } else {
            format!(r#" stroke-dasharray="{dash}""#)
        }
    );
    for &(x, y) in &l.points {
        marker(o, MARKERS[i], sx(x), sy(y), color);
    }
}

/// Where the plot sits in a chart: the data's x range and the y axes' tops, the plot's
/// top edge and size, and the chart's height.
struct Frame {
    x0: f64,
    x1: f64,
    y_top: f64,
    y_step: f64,
    /// The right axis's top and tick step, when there is one.
    y2: Option<(f64, f64)>,
    top: f64,
    hh: f64,
    pw: f64,
    ph: f64,
}

impl Frame {
    fn sx(&self, x: f64) -> f64 {
        L + (x - self.x0) / (self.x1 - self.x0) * self.pw
    }
    fn sy(&self, y: f64) -> f64 {
        self.top + self.ph - (y / self.y_top) * self.ph
    }
    fn sy_top(&self, y: f64, top2: f64) -> f64 {
        self.top + self.ph - (y / top2) * self.ph
    }
}

enum Legend {
    Line(usize),
    Pass,
    Fail,
}

/// The data's x range and y maximum (lines, marks, references, categories).
fn extent(c: &Chart) -> (f64, f64, f64) {
    let pts = c
        .lines
        .iter()
        .chain(c.lines2())
        .flat_map(|l| l.points.iter().map(|&(x, _)| (x, 0.0)))
        .chain(c.lines.iter().flat_map(|l| l.points.iter().copied()));
    let (mut x0, mut x1, mut y1) = (f64::MAX, f64::MIN, 0f64);
    for (x, y) in pts {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y1 = y1.max(y);
    }
    for m in &c.marks {
        x0 = x0.min(m.x);
        x1 = x1.max(m.x);
        y1 = y1.max(m.y);
    }
    for r in &c.refs {
        y1 = y1.max(r.y);
    }
    for (x, _) in &c.x_categories {
        x0 = x0.min(*x);
        x1 = x1.max(*x);
    }
    if x0 > x1 {
        (x0, x1) = (0.0, 1.0);
    }
    if !c.x_categories.is_empty() {
        x0 -= 0.5;
        x1 += 0.5;
    }
    if x1 - x0 <= 0.0 {
        x1 = x0 + 1.0;
    }
    (x0, x1, y1)
}

/// The right axis: its top given, or round above its data; and its tick step.
fn right_scale(c: &Chart) -> Option<(f64, f64)> {
    c.y2.as_ref().map(|a| {
        let max = a
            .lines
            .iter()
            .flat_map(|l| l.points.iter().map(|p| p.1))
            .fold(0f64, f64::max);
        match a.max {
            Some(top) if top > 0.0 => (top, nice_step(top, 5.0)),
            _ => axis_scale(max, a.unit),
        }
    })
}

/// The legend's entries: the lines (left, then right axis), then pass and fail marks.
fn legend_items(c: &Chart) -> Vec<(String, Legend)> {
    let mut legend: Vec<(String, Legend)> = c
        .lines
        .iter()
        .filter(|l| !l.points.is_empty())
        .map(|l| (l.label.clone(), Legend::Line(l.style % LINE_COLOURS.len())))
        .collect();
    legend.extend(c.lines2().iter().filter(|l| !l.points.is_empty()).map(|l| {
        (
            format!("{} (right axis)", l.label),
            Legend::Line(l.style % LINE_COLOURS.len()),
        )
    }));
    if c.marks.iter().any(|m| m.pass) {
        legend.push(("pass".into(), Legend::Pass));
    }
    if c.marks.iter().any(|m| !m.pass) {
        legend.push(("fail".into(), Legend::Fail));
    }
    legend
}

/// Where each legend entry goes (rows wrap at the plot's right edge) and how many extra
/// rows there are.
fn legend_layout(legend: &[(String, Legend)], r: f64) -> (Vec<(f64, f64)>, usize) {
    let mut legend_pos = Vec::new();
    let (mut lx, mut row) = (L, 0usize);
    for (label, _) in legend {
        let w = 40.0 + label.chars().count() as f64 * 6.6;
        if lx + w > W - r && lx > L {
            lx = L;
            row += 1;
        }
        legend_pos.push((lx, 32.0 + row as f64 * 15.0));
        lx += w;
    }
    (legend_pos, row)
}

/// Render `c` as an inline `<svg class="qchart">` element.
pub fn render(c: &Chart) -> String {
    let (x0, x1, y1) = extent(c);
    let (y_top, y_step) = axis_scale(y1, c.y_unit);
    let y2 = right_scale(c);
    let r = if y2.is_some() { R2 } else { R };
    let legend = legend_items(c);
    let (legend_pos, row) = legend_layout(&legend, r);
    // Each extra legend row makes the chart taller; the plot keeps its size.
    let extra = row as f64 * 15.0;
    let (top, hh) = (T + extra, H + extra);
    let f = Frame {
        x0,
        x1,
        y_top,
        y_step,
        y2,
        top,
        hh,
        pw: W - L - r,
        ph: H - T - B,
    };
    let mut o = String::new();
    open_chart(&mut o, c, &f);
    y_axis(&mut o, c, &f);
    x_axis(&mut o, c, &f);
    axis_titles(&mut o, c, &f);
    right_axis(&mut o, c, &f);
    references(&mut o, c, &f);
    data(&mut o, c, &f);
    draw_legend(&mut o, &legend, &legend_pos);
    o.push_str("</svg>");
    o
}

/// The `<svg>` element's opening, the plot's frame and the chart's title.
fn open_chart(o: &mut String, c: &Chart, f: &Frame) {
    let Frame {
        top, hh, pw, ph, ..
    } = *f;
    let n_points: usize = c
        .lines
        .iter()
        .chain(c.lines2())
        .map(|l| l.points.len())
        .sum();
    let _ = write!(
        o,
        r#"<svg class="qchart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {hh}" role="img" aria-label="{}" data-points="{n_points}"><title>{}</title>"#,
        esc(&c.title),
        esc(&c.title)
    );
    let _ = write!(
        o,
        r##"<rect x="{L}" y="{top}" width="{pw}" height="{ph}" fill="#fff" stroke="#999" stroke-width="0.5"/>"##
    );
    let _ = write!(
        o,
        r#"<text x="{L}" y="16" class="ct">{}</text>"#,
        esc(&c.title)
    );
}

/// The y grid and ticks.
fn y_axis(o: &mut String, c: &Chart, f: &Frame) {
    let (y_top, y_step) = (f.y_top, f.y_step);
    let (pw, sy) = (f.pw, |y| f.sy(y));
    let mut y = 0.0;
    while y <= y_top + y_step * 0.01 {
        let py = sy(y);
        let _ = write!(
            o,
            r##"<line x1="{L}" y1="{py:.1}" x2="{:.1}" y2="{py:.1}" stroke="#ddd" stroke-width="0.5"/><text x="{:.1}" y="{:.1}" text-anchor="end" class="tk">{}</text>"##,
            L + pw,
            L - 4.0,
            py + 3.5,
            esc(&tick(y, c.y_unit))
        );
        y += y_step;
    }
}

/// The x ticks: numbers, or the categories' labels.
fn x_axis(o: &mut String, c: &Chart, f: &Frame) {
    let Frame {
        x0, x1, top, ph, ..
    } = *f;
    let sx = |x| f.sx(x);
    if c.x_categories.is_empty() {
        let step = nice_step(x1 - x0, 5.0);
        let mut x = (x0 / step).ceil() * step;
        while x <= x1 + step * 0.01 {
            let px = sx(x);
            let _ = write!(
                o,
                r##"<line x1="{px:.1}" y1="{:.1}" x2="{px:.1}" y2="{:.1}" stroke="#999" stroke-width="0.5"/><text x="{px:.1}" y="{:.1}" text-anchor="middle" class="tk">{}</text>"##,
                top + ph,
                top + ph + 4.0,
                top + ph + 15.0,
                esc(&tick(x, c.x_unit))
            );
            x += step;
        }
    } else {
        for (x, label) in &c.x_categories {
            let px = sx(*x);
            let _ = write!(
                o,
                r##"<line x1="{px:.1}" y1="{:.1}" x2="{px:.1}" y2="{:.1}" stroke="#999" stroke-width="0.5"/><text x="{px:.1}" y="{:.1}" text-anchor="middle" class="tk">{}</text>"##,
                top + ph,
                top + ph + 4.0,
                top + ph + 15.0,
                esc(label)
            );
        }
    }
}

/// The x axis's title, and the y axis's (on two lines when too long for the plot).
fn axis_titles(o: &mut String, c: &Chart, f: &Frame) {
    let Frame {
        top, hh, pw, ph, ..
    } = *f;
    let _ = write!(
        o,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" class="al">{}</text>"#,
        L + pw / 2.0,
        hh - 8.0,
        esc(&c.x_label)
    );
    match y_label_lines(&c.y_label, ph) {
        (one, None) => {
            let _ = write!(
                o,
                r#"<text transform="translate(14 {:.1}) rotate(-90)" text-anchor="middle" class="al">{}</text>"#,
                top + ph / 2.0,
                esc(one)
            );
        }
        // Too long for the plot's height: two lines, side by side left of the ticks.
        (first, Some(second)) => {
            let _ = write!(
                o,
                r#"<text transform="translate(10 {:.1}) rotate(-90)" text-anchor="middle" class="al"><tspan x="0" dy="0">{}</tspan><tspan x="0" dy="12">{}</tspan></text>"#,
                top + ph / 2.0,
                esc(first),
                esc(second)
            );
        }
    }
}

/// The right axis: ticks, labels and its title.
fn right_axis(o: &mut String, c: &Chart, f: &Frame) {
    let Frame {
        y2, top, pw, ph, ..
    } = *f;
    if let (Some(a), Some((top2, step2))) = (&c.y2, y2) {
        let sy2 = |y: f64| f.sy_top(y, top2);
        let _ = write!(
            o,
            r##"<line x1="{:.1}" y1="{top}" x2="{:.1}" y2="{:.1}" stroke="#999" stroke-width="0.5"/>"##,
            L + pw,
            L + pw,
            top + ph
        );
        let mut y = 0.0;
        while y <= top2 + step2 * 0.01 {
            let py = sy2(y);
            let _ = write!(
                o,
                r##"<line x1="{:.1}" y1="{py:.1}" x2="{:.1}" y2="{py:.1}" stroke="#999" stroke-width="0.5"/><text x="{:.1}" y="{:.1}" class="tk">{}</text>"##,
                L + pw,
                L + pw + 4.0,
                L + pw + 6.0,
                py + 3.5,
                esc(&tick(y, a.unit))
            );
            y += step2;
        }
        let _ = write!(
            o,
            r#"<text transform="translate({:.1} {:.1}) rotate(90)" text-anchor="middle" class="al">{}</text>"#,
            W - 12.0,
            top + ph / 2.0,
            esc(&a.label)
        );
    }
}

/// Reference lines, labelled at the right end.
fn references(o: &mut String, c: &Chart, f: &Frame) {
    let pw = f.pw;
    for r in &c.refs {
        let py = f.sy(r.y);
        let _ = write!(
            o,
            r#"<line class="ref" x1="{L}" y1="{py:.1}" x2="{:.1}" y2="{py:.1}" stroke="{}" stroke-width="2" stroke-dasharray="{}"/><text x="{:.1}" y="{:.1}" text-anchor="end" class="rl" fill="{}">{}</text>"#,
            L + pw,
            r.style.color,
            r.style.dash,
            L + pw - 4.0,
            py - 4.0,
            r.style.color,
            esc(&r.label)
        );
    }
}

/// The data lines (left, then right axis) and the pass/fail marks.
fn data(o: &mut String, c: &Chart, f: &Frame) {
    let (sx, sy) = (|x| f.sx(x), |y| f.sy(y));
    for l in &c.lines {
        series(o, l, &sx, &sy);
    }
    if let Some((top2, _)) = f.y2 {
        let sy2 = |y: f64| f.sy_top(y, top2);
        for l in c.lines2() {
            series(o, l, &sx, &sy2);
        }
    }
    for m in &c.marks {
        pass_fail(o, m.pass, sx(m.x), sy(m.y));
    }
}

/// The legend, above the plot (laid out before the plot, below).
fn draw_legend(o: &mut String, legend: &[(String, Legend)], legend_pos: &[(f64, f64)]) {
    for ((label, item), (lx, ly)) in legend.iter().zip(legend_pos) {
        let (lx, ly) = (*lx, *ly);
        match item {
            Legend::Line(i) => {
                let _ = write!(
                    o,
                    r#"<line x1="{lx:.1}" y1="{ly}" x2="{:.1}" y2="{ly}" stroke="{}" stroke-width="2" stroke-dasharray="{}"/>"#,
                    lx + 22.0,
                    LINE_COLOURS[*i],
                    DASHES[*i]
                );
                marker(o, MARKERS[*i], lx + 11.0, ly, LINE_COLOURS[*i]);
            }
            Legend::Pass => pass_fail(o, true, lx + 11.0, ly),
            Legend::Fail => pass_fail(o, false, lx + 11.0, ly),
        }
        let _ = write!(
            o,
            r#"<text x="{:.1}" y="{:.1}" class="lg">{}</text>"#,
            lx + 26.0,
            ly + 3.5,
            esc(label)
        );
    }
}

#[cfg(test)]
mod tests;

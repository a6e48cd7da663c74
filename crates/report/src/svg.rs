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

/// Render `c` as an inline `<svg class="qchart">` element.
pub fn render(c: &Chart) -> String {
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
    let (y_top, y_step) = axis_scale(y1, c.y_unit);
    // The right axis: its top given, or round above its data.
    let y2 = c.y2.as_ref().map(|a| {
        let max = a
            .lines
            .iter()
            .flat_map(|l| l.points.iter().map(|p| p.1))
            .fold(0f64, f64::max);
        match a.max {
            Some(top) if top > 0.0 => (top, nice_step(top, 5.0)),
            _ => axis_scale(max, a.unit),
        }
    });
    let r = if y2.is_some() { R2 } else { R };
    enum Legend {
        Line(usize),
        Pass,
        Fail,
    }
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
    let mut legend_pos = Vec::new();
    let (mut lx, mut row) = (L, 0usize);
    for (label, _) in &legend {
        let w = 40.0 + label.chars().count() as f64 * 6.6;
        if lx + w > W - r && lx > L {
            lx = L;
            row += 1;
        }
        legend_pos.push((lx, 32.0 + row as f64 * 15.0));
        lx += w;
    }
    // Each extra legend row makes the chart taller; the plot keeps its size.
    let extra = row as f64 * 15.0;
    let (top, hh) = (T + extra, H + extra);
    let pw = W - L - r;
    let ph = H - T - B;
    let sx = |x: f64| L + (x - x0) / (x1 - x0) * pw;
    let sy = |y: f64| top + ph - (y / y_top) * ph;
    let n_points: usize = c
        .lines
        .iter()
        .chain(c.lines2())
        .map(|l| l.points.len())
        .sum();
    let mut o = String::new();
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
    // y grid and ticks
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
    // x ticks
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
    // the right axis: ticks, labels and its title
    if let (Some(a), Some((top2, step2))) = (&c.y2, y2) {
        let sy2 = |y: f64| top + ph - (y / top2) * ph;
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
    // reference lines, labelled at the right end
    for r in &c.refs {
        let py = sy(r.y);
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
    // data lines
    for l in &c.lines {
        series(&mut o, l, &sx, &sy);
    }
    if let Some((top2, _)) = y2 {
        let sy2 = |y: f64| top + ph - (y / top2) * ph;
        for l in c.lines2() {
            series(&mut o, l, &sx, &sy2);
        }
    }
    for m in &c.marks {
        pass_fail(&mut o, m.pass, sx(m.x), sy(m.y));
    }
    // legend, above the plot (laid out before the plot, below)
    for ((label, item), (lx, ly)) in legend.iter().zip(&legend_pos) {
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
                marker(&mut o, MARKERS[*i], lx + 11.0, ly, LINE_COLOURS[*i]);
            }
            Legend::Pass => pass_fail(&mut o, true, lx + 11.0, ly),
            Legend::Fail => pass_fail(&mut o, false, lx + 11.0, ly),
        }
        let _ = write!(
            o,
            r#"<text x="{:.1}" y="{:.1}" class="lg">{}</text>"#,
            lx + 26.0,
            ly + 3.5,
            esc(label)
        );
    }
    o.push_str("</svg>");
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_and_steps() {
        assert_eq!(nice_step(540.0, 5.0), 200.0);
        assert_eq!(nice_step(10.0, 5.0), 2.0);
        assert_eq!(nice_step(12.0, 5.0), 2.5);
        assert_eq!(tick(500.0, Unit::Count), "500");
        assert_eq!(tick(15_300.0, Unit::Count), "15.3k");
        assert_eq!(tick(104_857_600.0, Unit::BytesPerSec), "100MiB/s");
        assert_eq!(tick(2.5, Unit::Secs), "2.5s");
        assert_eq!(tick(0.25, Unit::Secs), "0.25s");
        assert_eq!(esc("<a&\"b\">"), "&lt;a&amp;&quot;b&quot;&gt;");
    }

    #[test]
    fn a_line_on_its_ceiling_is_drawn_at_the_ceilings_height() {
        let mut c = Chart::new("vol500 <IOPS>", "time", "IOPS");
        c.line("fio", vec![(0.5, 500.0), (1.0, 500.0)], 0);
        c.refs.push(RefLine {
            label: "ceiling 500 IOPS".into(),
            y: 500.0,
            style: CEILING,
        });
        c.marks.push(Mark {
            x: 1.0,
            y: 500.0,
            pass: false,
        });
        let s = render(&c);
        assert!(s.starts_with("<svg class=\"qchart\""), "{s}");
        assert!(s.contains("<title>vol500 &lt;IOPS&gt;</title>"));
        assert!(s.contains(r#"data-points="2""#));
        // The series path and the ceiling line share their y coordinate.
        let path = s.split(r#"class="series" d="M"#).nth(1).unwrap();
        let y = path
            .split(['L', '"'])
            .next()
            .unwrap()
            .split(' ')
            .nth(1)
            .unwrap();
        assert!(s.contains(&format!(r#"y1="{y}""#)), "{y} in {s}");
        assert!(s.contains("class=\"fail\"") && s.contains(">fail</text>"));
        assert!(!Chart::new("e", "x", "y").has_data());
    }

    /// The y coordinates of a chart's series paths, in drawing order.
    fn path_ys(s: &str) -> Vec<Vec<f64>> {
        s.split(r#"class="series" d="M"#)
            .skip(1)
            .map(|p| {
                p.split('"')
                    .next()
                    .unwrap()
                    .split(['M', 'L'])
                    .map(|xy| xy.split(' ').nth(1).unwrap().parse::<f64>().unwrap())
                    .collect()
            })
            .collect()
    }

    #[test]
    fn a_y_title_longer_than_the_plot_is_drawn_on_two_lines() {
        let short = Chart::new("cpu", "time (s)", "IOPS");
        let one = render(&short);
        assert!(one.contains(r#"rotate(-90)" text-anchor="middle" class="al">IOPS</text>"#));
        let long = "% (of one core for processes; of all CPUs for idle and steal)";
        let two = render(&Chart::new("cpu", "time (s)", long));
        assert!(
            two.contains(r#"<tspan x="0" dy="0">% (of one core for processes;</tspan><tspan x="0" dy="12">of all CPUs for idle and steal)</tspan>"#),
            "{two}"
        );
        // Each line fits the plot's height.
        let ph = H - T - B;
        for l in [
            "% (of one core for processes;",
            "of all CPUs for idle and steal)",
        ] {
            assert!(l.len() as f64 * CHAR_W <= ph, "{l}");
        }
    }

    #[test]
    fn a_second_axis_has_its_own_scale_ticks_and_legend() {
        let mut c = Chart::new("burst", "time", "IOPS");
        c.line("fio", vec![(0.5, 3000.0), (1.0, 3000.0), (1.5, 300.0)], 0);
        let without = render(&c);
        c.y2 = Some(Axis2 {
            label: "credit balance (% of bucket)".into(),
            unit: Unit::Percent,
            max: Some(100.0),
            lines: vec![Line {
                label: "balance".into(),
                points: vec![(0.5, 100.0), (1.0, 50.0), (1.5, 0.0)],
                style: 4,
            }],
        });
        let with = render(&c);
        assert!(!without.contains("right axis") && !without.contains("rotate(90)"));
        assert!(with.contains(">balance (right axis)</text>"), "{with}");
        assert!(with.contains(">credit balance (% of bucket)</text>"));
        assert!(with.contains(">100%</text>") && with.contains(">40%</text>"));
        assert!(with.contains(r#"data-points="6""#));
        let ys = path_ys(&with);
        assert_eq!(ys.len(), 2);
        // The right axis: 100% at the plot's top, 0% at its bottom, 50% halfway.
        let (top, bottom) = (T, T + (H - T - B));
        assert_eq!(ys[1], vec![top, (top + bottom) / 2.0, bottom]);
        // The left axis keeps its own scale (3,000 IOPS is below its round top).
        assert!(ys[0][0] > top && ys[0][2] < bottom, "{:?}", ys[0]);
        // The plot narrows for the right axis' labels: the x of the last point moves left.
        let last_x = |s: &str| -> f64 {
            let p = s.split(r#"class="series" d="M"#).nth(1).unwrap();
            let p = p.split('"').next().unwrap();
            p.rsplit('L')
                .next()
                .unwrap()
                .split(' ')
                .next()
                .unwrap()
                .parse()
                .unwrap()
        };
        assert_eq!(last_x(&without), W - R);
        assert_eq!(last_x(&with), W - R2);
        // Without a fixed top the axis is round above its data.
        c.y2.as_mut().unwrap().max = None;
        assert!(render(&c).contains(">125%</text>"));
        assert_eq!(tick(42.5, Unit::Percent), "42.5%");
    }
}

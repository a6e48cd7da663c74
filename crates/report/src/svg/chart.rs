//! The chart model [`super::render`] draws: a [`Chart`] with its lines, reference lines,
//! pass/fail marks and optional right axis ([`Axis2`]), and the helpers that build one.

use super::{RefStyle, Unit};

#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    pub label: String,
    pub points: Vec<(f64, f64)>,
    /// Index into the style cycle (colour, dash, marker).
    pub style: usize,
}

impl Line {
    pub fn new(label: impl Into<String>, points: Vec<(f64, f64)>, style: usize) -> Line {
        Line {
            label: label.into(),
            points,
            style,
        }
    }
}

impl Axis2 {
    /// Add a line on the right axis (see [`Chart::line`]).
    pub fn line(&mut self, label: impl Into<String>, points: Vec<(f64, f64)>, style: usize) {
        self.lines.push(Line::new(label, points, style));
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct RefLine {
    pub label: String,
    pub y: f64,
    pub style: RefStyle,
}

/// A pass/fail mark at a data point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mark {
    pub x: f64,
    pub y: f64,
    pub pass: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub x_unit: Unit,
    pub y_unit: Unit,
    pub lines: Vec<Line>,
    pub refs: Vec<RefLine>,
    pub marks: Vec<Mark>,
    /// Categorical x tick labels (e.g. runs or steps) instead of numeric ticks.
    pub x_categories: Vec<(f64, String)>,
    /// A second y axis on the right (its lines use its scale).
    pub y2: Option<Axis2>,
}

/// A second y axis, on the right: its own label, unit, scale and lines. Its lines join the
/// legend with the words "(right axis)".
#[derive(Debug, Clone, PartialEq)]
pub struct Axis2 {
    pub label: String,
    pub unit: Unit,
    /// The axis' top (100 for a percentage); `None`: a round number above its data.
    pub max: Option<f64>,
    pub lines: Vec<Line>,
}

impl Chart {
    pub fn new(title: impl Into<String>, x_label: &str, y_label: &str) -> Chart {
        Chart {
            title: title.into(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            x_unit: Unit::Secs,
            y_unit: Unit::Count,
            lines: Vec::new(),
            refs: Vec::new(),
            marks: Vec::new(),
            x_categories: Vec::new(),
            y2: None,
        }
    }

    /// A chart over categories (runs, steps, iterations: `categories` from
    /// [`crate::charts::categories`]) instead of time.
    pub fn categorical(
        title: impl Into<String>,
        x_label: &str,
        y_label: &str,
        categories: Vec<(f64, String)>,
    ) -> Chart {
        Chart {
            x_unit: Unit::Count,
            x_categories: categories,
            ..Chart::new(title, x_label, y_label)
        }
    }

    /// Add a line: its legend label, its points and its place in the style cycle.
    pub fn line(&mut self, label: impl Into<String>, points: Vec<(f64, f64)>, style: usize) {
        self.lines.push(Line::new(label, points, style));
    }

    /// Whether there is anything to draw.
    pub fn has_data(&self) -> bool {
        self.lines.iter().any(|l| !l.points.is_empty())
    }

    /// The lines drawn on the right axis (none without one).
    pub(super) fn lines2(&self) -> &[Line] {
        self.y2.as_ref().map_or(&[], |a| a.lines.as_slice())
    }
}

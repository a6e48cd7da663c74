//! Where a run's human output goes. The harness and the families write through [`Ui`]; the
//! CLI's implementation prints to stdout and draws a progress line on a terminal; [`Quiet`]
//! drops everything (tests, `--json`).

/// A run's human output.
pub trait Ui {
    /// Text for the terminal, printed as it comes (a family's step lines, its summary
    /// blocks). A partial line (no trailing newline) is flushed as it is.
    fn print(&mut self, text: &str);

    /// Step `index` of `total` began: a progress line may show `label`, the time elapsed
    /// against `expected_secs`, and `remaining_secs` for the steps after it.
    fn step_started(
        &mut self,
        _index: usize,
        _total: usize,
        _label: &str,
        _expected_secs: f64,
        _remaining_secs: f64,
    ) {
    }

    /// The step ended: any progress line is erased.
    fn step_finished(&mut self) {}
}

/// Prints nothing.
pub struct Quiet;

impl Ui for Quiet {
    fn print(&mut self, _text: &str) {}
}

/// Collects what would be printed (tests).
#[derive(Default)]
pub struct Captured(pub String);

impl Ui for Captured {
    fn print(&mut self, text: &str) {
        self.0.push_str(text);
    }
}

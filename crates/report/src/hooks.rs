//! What a workload family adds to a run's report. The exporters call every registered
//! family's hooks in registry order, at fixed places; `report` itself never names a family.

use harness::store::{RunRecord, SummaryTable};

use crate::svg::Chart;

/// A family's part of the Markdown and HTML reports. Every method has a "nothing" default.
pub trait ReportHooks {
    /// Charts for a summary table of a kind this family writes (`None`: not its kind).
    /// Drawn above the table, in the HTML report's "Summary tables" section.
    fn table_charts(&self, _table: &SummaryTable) -> Option<Vec<Chart>> {
        None
    }

    /// Markdown appended after the summary tables (e.g. dbench's summary blocks).
    fn markdown(&self, _run: &RunRecord) -> String {
        String::new()
    }

    /// HTML sections after the summary tables, before the time series (text escaped with
    /// [`crate::svg::esc`]).
    fn html(&self, _run: &RunRecord) -> String {
        String::new()
    }

    /// Figures drawn right after this family's [`ReportHooks::html`]: (heading, charts)
    /// groups, counted by the page's drawn-charts check like every other chart.
    fn html_charts(&self, _run: &RunRecord) -> Vec<(String, Vec<Chart>)> {
        Vec::new()
    }
}

/// The charts the first hook that knows `table`'s kind draws for it (none when none does).
pub fn table_charts(hooks: &[&dyn ReportHooks], table: &SummaryTable) -> Vec<Chart> {
    hooks
        .iter()
        .find_map(|h| h.table_charts(table))
        .unwrap_or_default()
}

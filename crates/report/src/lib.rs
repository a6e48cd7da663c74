//! Reports of stored runs, pure: the same run always renders to the same bytes (no clock,
//! no I/O; snapshot-tested). Exporters ([`export`]: JSON, CSV, series CSV, Markdown), the
//! self-contained HTML page ([`html`]: inline CSS and SVG, no network), its charts
//! ([`charts`], drawn by [`svg`]: Okabe–Ito colours plus dash patterns and markers), and the
//! comparison of two runs ([`compare`]). Workload families add their sections and the
//! charts of their summary tables through [`ReportHooks`]; this crate never names one.

pub mod charts;
pub mod claims;
pub mod compare;
pub mod export;
pub mod hooks;
pub mod html;
pub mod svg;

pub use export::Format;
pub use hooks::ReportHooks;

use harness::store::RunRecord;

/// `run` in format `f`; `hooks` are the workload families' report hooks, in registry order.
pub fn export(run: &RunRecord, f: Format, hooks: &[&dyn ReportHooks]) -> Vec<u8> {
    match f {
        Format::Json => export::json(run),
        Format::Csv => export::csv(run),
        Format::SeriesCsv => export::series_csv(run),
        Format::TablesCsv => export::tables_csv(run),
        Format::Md => export::markdown(run, hooks),
        Format::Html => html::render(run, hooks),
    }
}

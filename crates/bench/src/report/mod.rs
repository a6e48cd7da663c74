//! Reports: one self-contained HTML page per run (inline CSS, inline SVG charts, one small
//! inline script that counts the charts the browser drew; no network, no CDN), and the
//! chart builders it uses. Pure: a run renders to the same bytes every time.
//!
//! - [`svg`]: the line-chart renderer (Okabe–Ito colours plus dash patterns and markers).
//! - [`charts`]: which charts a run gets — IOPS/bandwidth/latency over time per job with the
//!   volume's ceiling and floor, latency percentiles per job, and the profile tables
//!   (`ramp`: IOPS vs target per run with pass/fail marks, write-cycle times; `isolation`:
//!   protected vs bully per step, floors vs control).
//! - [`html`]: the page.

pub mod charts;
pub mod html;
pub mod svg;

pub use html::render;

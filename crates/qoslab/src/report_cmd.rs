//! `qoslab report RUN`: a stored run as one self-contained HTML page with charts.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use harness::store::Store;
use report::Format;

use crate::bench::db_path;
use crate::results::{open_store, run_id};

#[derive(Args)]
#[command(after_help = "\
EXAMPLES:
  qoslab report last                     # qoslab-report-RUN.html next to the database
  qoslab report 3 -o run3.html
  qoslab report last --db /var/lib/qoslab/results.db -o /tmp/r.html

The page needs no network: CSS and SVG charts are inline. It holds the run's plan, target,
environment, volumes with their effective limits, verdicts (failures spelled out), results,
profile tables with their charts, and per job IOPS/bandwidth/latency over time with the
volume's ceiling and floor drawn as lines. Open it in a browser or print it (docs/REPORTS.md).")]
pub struct ReportArgs {
    /// Run id (see `qoslab results list`), or `last`.
    run: String,
    /// Output file (default: qoslab-report-RUN.html next to the results database).
    #[arg(long, short)]
    output: Option<PathBuf>,
    /// Results database (default $QOSLAB_DB or ./qoslab-results.db).
    #[arg(long)]
    db: Option<PathBuf>,
}

/// `qoslab-report-RUN.html` in the directory of the results database `db`.
pub fn path_next_to(db: &Path, id: i64) -> PathBuf {
    db.parent()
        .unwrap_or(Path::new(""))
        .join(format!("qoslab-report-{id}.html"))
}

/// Render run `id` of `store` to `path`.
pub fn write_report(store: &Store, id: i64, path: &Path) -> anyhow::Result<usize> {
    let html = workloads::export(&store.load_run(id)?, Format::Html);
    std::fs::write(path, &html).with_context(|| format!("writing {}", path.display()))?;
    Ok(html.len())
}

pub fn run(args: ReportArgs) -> anyhow::Result<()> {
    let db = db_path(args.db);
    let store = open_store(&db)?;
    let id = run_id(&store, &args.run, &db)?;
    let path = args.output.unwrap_or_else(|| path_next_to(&db, id));
    let n = write_report(&store, id, &path)?;
    println!(
        "report of run {id}: {} ({} KiB)",
        path.display(),
        n.div_ceil(1024)
    );
    Ok(())
}

//! `qoslab compare A B`: two stored runs side by side, job by job.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use report::compare;

use crate::bench::db_path;
use crate::results::{open_store, run_id};

#[derive(Args)]
#[command(after_help = "\
EXAMPLES:
  qoslab compare 3 last                  # terminal table
  qoslab compare 3 4 --html cmp.html     # also an HTML page
  qoslab compare 3 4 --json > cmp.json   # machine-readable (docs/REPORTS.md)

Jobs match by workload, job name and volume. For IOPS, bandwidth, mean latency and p99 the
table shows each run's mean and standard deviation across iterations (plans with
`iterations = N`, or bench --iterations N), the change B vs A, and the noise threshold: a
change is flagged when it exceeds t(95%) x the standard error of the difference of the
means (a Welch t-test on both runs' iterations; one run's spread for both when the other
ran once), and at least 1%; with one iteration on each side, when it exceeds 5%.
S3 benchmark jobs are compared per operation (GET ops/s, MiB/s, mean and p99 latency, TTFB
p50); the same t-test on each run's 1 s segments raises the threshold when it is larger.
Exit status: 0 (also when changes are flagged); 2 on errors.")]
pub struct CompareArgs {
    /// The baseline run (id or `last`).
    a: String,
    /// The run compared with it (id or `last`).
    b: String,
    /// Print JSON instead of the table.
    #[arg(long)]
    json: bool,
    /// Also write the comparison as an HTML page.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Results database (default $QOSLAB_DB or ./qoslab-results.db).
    #[arg(long)]
    db: Option<PathBuf>,
}

pub fn run(args: CompareArgs) -> anyhow::Result<()> {
    let db = db_path(args.db);
    let store = open_store(&db)?;
    let a = store.load_run(run_id(&store, &args.a, &db)?)?;
    let b = store.load_run(run_id(&store, &args.b, &db)?)?;
    let c = compare::compare(&a, &b);
    if let Some(p) = &args.html {
        std::fs::write(p, compare::html(&c)).with_context(|| format!("writing {}", p.display()))?;
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        out.write_all(&compare::json(&c))?;
    } else {
        out.write_all(compare::text(&c).as_bytes())?;
        if let Some(p) = &args.html {
            writeln!(out, "HTML: {}", p.display())?;
        }
    }
    Ok(())
}

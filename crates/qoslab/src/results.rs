//! `qoslab results`: list, show and export stored bench runs.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Args, Subcommand};
use harness::store::Store;
use report::Format;

use crate::bench::db_path;

#[derive(Args)]
#[command(after_help = "\
EXAMPLES:
  qoslab results list
  qoslab results show last
  qoslab results export 3 --format md > run3.md
  qoslab results export last --format csv --output run.csv
  qoslab results export last --format series-csv --output series.csv
  qoslab results export last --format tables-csv --output tables.csv   # summary tables (suites' matrix, ...)
  qoslab results export 3 --format html --output run3.html     # same page as `qoslab report`
  qoslab results export 3 --format json --db /var/lib/qoslab/results.db
  qoslab results seed000 last          # seed 000 beside the run, cell by cell")]
pub struct ResultsArgs {
    /// Results database (default $QOSLAB_DB or ./qoslab-results.db).
    #[arg(long, global = true)]
    db: Option<PathBuf>,
    #[command(subcommand)]
    command: ResultsCommand,
}

#[derive(Subcommand)]
enum ResultsCommand {
    /// One line per stored run.
    List,
    /// A stored run as a readable report (the Markdown export).
    Show {
        /// Run id, or `last`.
        run: String,
    },
    /// A stored run as JSON, CSV, series CSV, Markdown or HTML (docs/REPORTS.md).
    Export {
        /// Run id, or `last`.
        run: String,
        /// json: everything incl. time series; csv: one row per job, client and direction;
        /// series-csv: one row per time-series sample; tables-csv: one row per summary-table
        /// cell; md: a readable summary; html: the report with charts.
        #[arg(long, value_parser = ["json", "csv", "series-csv", "tables-csv", "md", "html"])]
        format: String,
        /// Write to this file instead of stdout.
        #[arg(long, short)]
        output: Option<PathBuf>,
    },
    /// Seed 000's seven dbench summaries beside a run of its scenario (examples/seed000.toml,
    /// the demo), cell by cell: seed, qoslab, difference, within 10% (latency 15%) or not.
    /// A miss the seed's own figures explain (its figure further than the tolerance from
    /// its baseline row under the volume's ceiling) is marked so, and so is one whose job's
    /// diagnosis says the machine spoiled it. Exit status 1 when a cell misses that neither
    /// explains, 3 when only the machine explains some.
    Seed000 {
        /// Run id, or `last`.
        run: String,
        /// JSON instead of the table.
        #[arg(long)]
        json: bool,
    },
}

/// A run id from `s` (a number or `last`) that exists in `store` (at `db`).
pub(crate) fn run_id(store: &Store, s: &str, db: &Path) -> anyhow::Result<i64> {
    let id = if s == "last" {
        store
            .last_run()?
            .with_context(|| format!("{} holds no runs yet", db.display()))?
    } else {
        s.parse().with_context(|| {
            format!("run {s:?}: expected a run id (see `qoslab results list`) or `last`")
        })?
    };
    if !store.list_runs()?.iter().any(|r| r.id == id) {
        anyhow::bail!(
            "no run {id} in {} (see `qoslab results list --db {}`)",
            db.display(),
            db.display()
        );
    }
    Ok(id)
}

/// Open an existing results database (never create one by mistake).
pub(crate) fn open_store(db: &Path) -> anyhow::Result<Store> {
    if !db.exists() {
        anyhow::bail!(
            "no results database at {} (run `qoslab bench` or `qoslab demo` first, or pass --db)",
            db.display()
        );
    }
    Ok(Store::open(db)?)
}

pub fn run(args: ResultsArgs) -> anyhow::Result<()> {
    let db = db_path(args.db);
    let store = open_store(&db)?;
    let mut out = std::io::stdout().lock();
    match args.command {
        ResultsCommand::List => {
            writeln!(
                out,
                "{:>4}  {:<20}  {:<20}  {:<12}  {:>4}  {:>5}  {:>5}  {:>5}  target",
                "run", "started", "name", "status", "jobs", "pass", "fail", "incon"
            )?;
            for r in store.list_runs()? {
                writeln!(
                    out,
                    "{:>4}  {:<20}  {:<20}  {:<12}  {:>4}  {:>5}  {:>5}  {:>5}  {}",
                    r.id,
                    r.started_at,
                    r.name,
                    r.status,
                    r.jobs,
                    r.passed,
                    r.failed,
                    r.inconclusive,
                    r.target
                )?;
            }
        }
        ResultsCommand::Show { run } => {
            let id = run_id(&store, &run, &db)?;
            out.write_all(&workloads::export(&store.load_run(id)?, Format::Md))?;
        }
        ResultsCommand::Export {
            run,
            format,
            output,
        } => {
            let id = run_id(&store, &run, &db)?;
            let f = Format::parse(&format)
                .context("format: allowed json, csv, series-csv, tables-csv, md, html")?;
            let bytes = workloads::export(&store.load_run(id)?, f);
            match output {
                Some(p) => {
                    std::fs::write(&p, bytes).with_context(|| format!("writing {}", p.display()))?
                }
                None => out.write_all(&bytes)?,
            }
        }
        ResultsCommand::Seed000 { run, json } => {
            let id = run_id(&store, &run, &db)?;
            let code = workloads::dbench::seed000_run::print(&store.load_run(id)?, json, &mut out)?;
            if code != 0 {
                out.flush()?;
                crate::bench::exit_with(code);
            }
        }
    }
    Ok(())
}

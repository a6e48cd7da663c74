//! `qoslab demo`: the command line of seed 000's and seed 001's scenario, which lives in
//! `workloads::demo` (the plan, the re-run of spoiled volumes, the tables). Here: its
//! options, real fio and the terminal, the reports next to the results database, the exit
//! status.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use harness::target::Target;
use harness::{Plan, RunError};
use report::Format;
use workloads::demo::{self, Host, Settings};

use crate::bench::{db_path, duration, run_and_store};
use crate::ui::TerminalUi;

#[derive(Args)]
#[command(after_help = "\
EXAMPLES:
  qoslab demo                          # ~4.5 minutes: 2 s runs (4 s judged) + 0.5 s ramp
  qoslab demo --runtime 15s --ramp 2s  # dbench's own timing (~20 minutes)
  qoslab demo --db /tmp/demo.db

After the ceilings, the demo runs seed 001's noisy-neighbour scenario (`qoslab bench
--profile isolation`, 3 steps of 3 s): two volumes with a 5,000 IOPS floor beside a bully
on an emulated 20,000 IOPS controller, with floors and without.

The volumes live on seed 000's emulated array (docs/CONFIG.md, \"An emulated array\"): a
request counts its 64 KiB NFS transfers against the ceilings, and the array serves 15.9k/11.4k
4 KiB IOPS at 794/689 us (the seed's unthrottled runs). Those latencies are what the seed's
client saw; the demo first measures what fio over NBD adds on this machine (4 KiB at QD4,
2 s per direction: fio's mean less the node's) and the array serves the seed's latency less
that, so fio sees the seed's (--raw-latency: served as declared). After the ceilings table
the seed's seven dbench summaries are printed beside qoslab's, cell by cell (`qoslab results seed000 RUN` prints it again); a
cell the seed's own run-to-run spread puts out of reach is marked so, and so is one whose
job's diagnosis says the machine spoiled it (that volume runs once more first, like a
ceiling verdict the machine spoiled). The cells do not change the exit status.

Exit status 0 when every measured ceiling is within 3% of the expected one and the floors
held; 1 when one is not, or a protected volume got less than 98% of its floor (or the
control showed no harm); 3 when nothing failed but a ceiling verdict is inconclusive (the
job's diagnosis says the machine, not the node, was the limit; docs/DIAGNOSIS.md). The
isolation run's p99 verdicts are printed and stored with their diagnoses; they do not change
the demo's exit status, because fio's p99 on one small machine includes the load
generator's share of the CPU (the node's own latency is printed beside it).

The results database and the reports are written under ./qoslab-results/ (git-ignored)
unless --db or $QOSLAB_DB says otherwise.")]
pub struct DemoArgs {
    /// fio runtime per job (dbench's own: 15s). The default keeps 7 volumes x 9 jobs near
    /// 4 minutes on 2 cores.
    #[arg(long, value_parser = duration, default_value = "2s")]
    runtime: f64,
    /// fio ramp time per job (dbench's own: 2s).
    #[arg(long, value_parser = duration, default_value = "0.5s")]
    ramp: f64,
    /// Count inconclusive verdicts as failures (exit 1 instead of 3).
    #[arg(long)]
    strict: bool,
    /// Results database (default $QOSLAB_DB or ./qoslab-results.db).
    #[arg(long)]
    db: Option<PathBuf>,
    /// Serve the seed's latency as declared, without first measuring this machine's client
    /// path (fio over NBD) and taking it off: fio's latency cells then read the seed's
    /// figures plus that path (35-70 us per 4 KiB request at QD4).
    #[arg(long)]
    raw_latency: bool,
}

/// Real fio on the embedded node, the terminal's progress line, text to stdout.
struct Terminal {
    db: PathBuf,
    raw_latency: bool,
}

impl Host for Terminal {
    fn run(&mut self, plan: &mut Plan) -> Result<harness::Outcome, RunError> {
        let mut ui = TerminalUi::new(false);
        run_and_store(plan, &Target::Embedded, &[], &self.db, &mut ui, true, None)
            .map_err(|e| RunError::Plan(format!("{e:#}")))
    }

    fn print(&mut self, text: &str) {
        let mut so = std::io::stdout().lock();
        let _ = so.write_all(text.as_bytes());
        let _ = so.flush();
    }

    fn client_path(&mut self) -> Result<Option<demo::ClientPath>, RunError> {
        if self.raw_latency {
            return Ok(None);
        }
        let dir = harness::target::temp_dir("demo-path")
            .map_err(|e| RunError::Plan(format!("temp dir: {e}")))?;
        let path = demo::path::measure(&fio::RealFio::new(&dir));
        let _ = std::fs::remove_dir_all(&dir);
        path.map(Some)
    }
}

pub fn run(args: DemoArgs) -> anyhow::Result<()> {
    let db = match (&args.db, std::env::var_os("QOSLAB_DB")) {
        (None, None) => {
            std::fs::create_dir_all(demo::RESULTS_DIR)?;
            demo::default_db()
        }
        _ => db_path(args.db.clone()),
    };
    let settings = Settings {
        runtime: args.runtime,
        ramp: args.ramp,
        db: db.clone(),
    };
    let mut host = Terminal {
        db: db.clone(),
        raw_latency: args.raw_latency,
    };
    let answer = demo::run(&settings, &mut host)?;
    // The reports (every job's charts), next to the results database.
    println!();
    for run in [&answer.ceilings.record, &answer.isolation.record] {
        let report = crate::report_cmd::path_next_to(&db, run.id);
        match std::fs::write(&report, workloads::export(run, Format::Html)) {
            Ok(()) => println!(
                "Report: {} (open it in a browser; `qoslab report {} --db {}` writes it again)",
                report.display(),
                run.id,
                db.display()
            ),
            Err(e) => eprintln!("qoslab demo: writing {}: {e}", report.display()),
        }
    }
    println!("\n{}", answer.closing_line());
    let code = answer.exit_code(args.strict);
    if code != 0 {
        crate::bench::exit_with(code);
    }
    Ok(())
}

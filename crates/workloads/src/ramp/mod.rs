//! The `ramp` family: GenIO's RampRun.pl on qoslab's own generator ([`loadgen::genio`]).
//!
//! Each "system" (one volume) ramps its target IOPS over `runs` runs: run k (0-based)
//! targets `min + (max - min) × k / (runs - 1)`. Every system of a plan runs at once, run k of
//! each starting together; each run is judged (longest write cycle below the limit, effective
//! write latency below the limit, no I/O errors) and stored as it finishes: one job with its
//! verdicts per system and run, and one `kind = "ramp"` summary table per system, rewritten
//! after every run (a crash loses at most the runs in flight).
//!
//! ```toml
//! [ramp]                        # shared by every system; all keys optional
//! runs = 10
//! runtime = "320s"              # per run (before --scale)
//! scale = 0.05                  # shrinks cycle, runtime and the write-cycle limit together
//! cycle = "80s"                 # the write daemon's period
//! max_write_cycle = "45s"       # default 45/80 of the cycle
//! max_write_latency = "1ms"     # not scaled
//! read_pct = 75                 # share of the target rate that is reads (by I/O count)
//! block_size = "8KiB"
//!
//! [[system]]
//! name = "epic-rhel1"
//! volume = "epic1"              # a volume of the embedded node, or:
//! # target = "nbd://10.0.0.5/epic1"   (a URI or path of its own)
//! min_iops = 1000
//! max_iops = 2000
//! ```

mod charts;
mod cli;
mod plan;
mod render;
mod results;
mod run;

use clap::Args;
use harness::plan::{Common, PlanError, PlanSource};
use harness::store::SummaryTable;
use harness::{Family, FamilyPlan, Plan, ProfileRequest, Registry};
use report::svg::Chart;
use report::ReportHooks;

pub use charts::{GENIO_WRITE_CYCLE_S, GENIO_WRITE_LATENCY_MS};
pub use cli::{csv_paths, RampArgs};
pub use plan::{Overrides, RampPlan, Settings, System};
pub use render::{render, run_line};
pub use results::{csv, highest_pass, table, verdicts, Row, COLUMNS, CSV_HEADER, KIND};
pub use run::{workload, RampRun};

/// The family's name (`--profile ramp`).
pub const NAME: &str = "ramp";

/// Where a `--profile ramp` plan says it came from.
const PROFILE_ORIGIN: &str = "--profile ramp";

/// The family: `[ramp]` and `[[system]]` tables, `--profile ramp`.
pub struct Ramp;

impl Family for Ramp {
    /// A directory target holds the generator's own file, not `DIR/fiotest`.
    fn accepts(&self) -> harness::Accepts {
        harness::Accepts {
            dir_file: Some(loadgen::genio::file::DIR_FILE),
            ..Default::default()
        }
    }

    fn name(&self) -> &'static str {
        NAME
    }

    fn about(&self) -> &'static str {
        "GenIO-style ramps on qoslab's own generator: write cycles and latency per target IOPS"
    }

    fn tables(&self) -> &'static [&'static str] {
        &["[ramp]", "[[system]]"]
    }

    fn plan_hint(&self, _registry: &Registry) -> String {
        "[[system]]s for the ramp profile".into()
    }

    fn plan_noun(&self) -> String {
        "[[system]]s (the ramp profile)".into()
    }

    fn parse(
        &self,
        src: &PlanSource,
        common: &Common,
        _registry: &Registry,
    ) -> Result<Box<dyn FamilyPlan>, PlanError> {
        Ok(Box::new(RampRun::new(plan::parse(src, &common.volumes())?)))
    }

    fn offers_profile(&self) -> bool {
        true
    }

    /// One system named "system" on the target (on the embedded node, an unlimited 100 GB
    /// volume named "bench"). min/max come from the command line ([`RampPlan::apply`]).
    fn profile(&self, req: &ProfileRequest, registry: &Registry) -> Result<Plan, PlanError> {
        let text = format!(
            "{}[[system]]\nname = \"system\"\nmin_iops = 1\nmax_iops = 1\n",
            req.bench_volume()
        );
        let mut p = registry.parse(&text, PROFILE_ORIGIN)?;
        p.common.name = NAME.into();
        Ok(p)
    }

    fn cli(&self, cmd: clap::Command) -> clap::Command {
        RampArgs::augment_args(cmd)
    }
}

/// One table per system: IOPS vs target, write cycle and WIJ times, write latency.
impl ReportHooks for Ramp {
    fn table_charts(&self, t: &SummaryTable) -> Option<Vec<Chart>> {
        (t.kind == KIND).then(|| charts::charts(t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn row(run: u32, target: u64, cycle: f64, lat: f64) -> Row {
        let s = Settings {
            scale: 0.05,
            ..Settings::default()
        };
        let mut r = Row {
            run,
            target_iops: target,
            dirty_blocks: 100,
            read_iops: target as f64 * 0.75,
            write_iops: target as f64 * 0.25,
            total_iops: target as f64,
            longest_wij_s: 0.1,
            longest_cycle_s: cycle,
            longest_burst_s: cycle - 0.05,
            longest_flush_s: 0.05,
            write_lat_ms: lat,
            read_lat_ms: 0.2,
            cycles: 4,
            cycles_skipped: 0,
            reads_delayed: 0,
            errors: 0,
            first_error: None,
            pass: false,
            outcome: assess::Outcome::Fail,
            bottleneck: None,
        };
        r.pass = verdicts(&r, &s).iter().all(|v| v.passed);
        r
    }

    #[test]
    fn targets_step_as_rampruns() {
        let s = System {
            name: "a".into(),
            volume: None,
            target: None,
            min_iops: 75000,
            max_iops: 110000,
        };
        let t: Vec<u64> = (0..10).map(|k| s.target_iops(k, 10)).collect();
        assert_eq!(t[0], 75000);
        assert_eq!(t[9], 110000);
        assert_eq!(t[1], 78889);
        assert_eq!(s.target_iops(0, 1), 75000);
    }

    #[test]
    fn scale_shrinks_cycle_runtime_and_the_cycle_limit() {
        let s = Settings {
            scale: 0.05,
            ..Settings::default()
        };
        assert!((s.cycle_s() - 4.0).abs() < 1e-9);
        assert!((s.cycle_limit_s() - 2.25).abs() < 1e-9);
        assert!((s.runtime_s() - 16.0).abs() < 1e-9);
        // 1000 IOPS, 25% writes, 4 s cycles: 1000 dirty blocks.
        assert_eq!(s.dirty_blocks_at(1000), 1000);
        assert_eq!(s.max_write_latency, 0.001);
    }

    #[test]
    fn verdicts_and_pass() {
        assert!(row(1, 1000, 1.0, 0.5).pass);
        assert!(!row(2, 2000, 2.3, 0.5).pass);
        assert!(!row(3, 3000, 1.0, 1.5).pass);
        let v = verdicts(
            &row(2, 2000, 2.3, 0.5),
            &Settings {
                scale: 0.05,
                ..Settings::default()
            },
        );
        assert_eq!(v[0].expectation, "longest write cycle < 2.25 s");
        assert!(!v[0].passed);
        assert!(
            v[0].detail.contains("burst 2.250 s + FLUSH 0.050 s"),
            "{}",
            v[0].detail
        );
        assert!(v[1].passed);
    }

    fn diagnosis(b: assess::Bottleneck) -> assess::Diagnosis {
        assess::Diagnosis {
            bottleneck: b,
            reason: "test".into(),
            figures: vec![],
        }
    }

    #[test]
    fn a_miss_the_bottleneck_explains_is_inconclusive() {
        let s = Settings {
            scale: 0.05,
            ..Settings::default()
        };
        // A write cycle over the limit with a starved generator: inconclusive.
        let mut r = row(2, 2000, 2.3, 0.5);
        let v = r.judge(&s, &diagnosis(assess::Bottleneck::ClientCpuBound));
        assert_eq!(v[0].outcome, assess::Outcome::Inconclusive, "{v:?}");
        assert!(
            v[0].reason.as_deref().unwrap().contains("client-cpu-bound"),
            "{v:?}"
        );
        assert_eq!(v[1].outcome, assess::Outcome::Pass);
        assert_eq!(r.outcome, assess::Outcome::Inconclusive);
        assert_eq!(r.bottleneck.as_deref(), Some("client-cpu-bound"));
        // The same miss held by QoS is the target's doing: a failure.
        let mut r = row(2, 2000, 2.3, 0.5);
        r.judge(&s, &diagnosis(assess::Bottleneck::QosBound));
        assert_eq!(r.outcome, assess::Outcome::Fail);
        // Latency on a noisy host: inconclusive; an I/O error never is.
        let mut r = row(3, 3000, 1.0, 1.5);
        r.judge(&s, &diagnosis(assess::Bottleneck::NoisyHost));
        assert_eq!(r.outcome, assess::Outcome::Inconclusive);
        let mut r = row(3, 3000, 1.0, 0.5);
        r.errors = 1;
        r.first_error = Some("EIO".into());
        let v = r.judge(&s, &diagnosis(assess::Bottleneck::NoisyHost));
        assert_eq!(v.last().unwrap().expectation, "no I/O errors");
        assert_eq!(r.outcome, assess::Outcome::Fail, "{v:?}");
        // A pass stays a pass; the table carries outcome and bottleneck.
        let mut r = row(1, 1000, 1.0, 0.5);
        r.judge(&s, &diagnosis(assess::Bottleneck::NoisyHost));
        assert_eq!(r.outcome, assess::Outcome::Pass);
        let t = table("sys", &[r], &s);
        assert_eq!(t.rows[0][t.column("Outcome").unwrap()], "pass");
        assert_eq!(t.rows[0][t.column("Bottleneck").unwrap()], "noisy-host");
        let line = run_line("sys", 10, &row(2, 2000, 2.3, 0.5));
        assert!(line.contains(": FAIL"), "{line}");
    }

    #[test]
    fn summary_csv_has_rampruns_header_and_parses() {
        let rows = vec![row(1, 1000, 1.0, 0.5), row(2, 2000, 2.3, 0.5)];
        let text = csv(&rows);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], CSV_HEADER);
        assert_eq!(lines.len(), 3);
        for l in &lines {
            assert_eq!(l.split(',').count(), 9, "{l}");
        }
        assert_eq!(lines[1], "1,750,250,1000,0.100,1.000,0.500,0.200,PASS");
        assert!(lines[2].ends_with(",FAIL"));
        assert_eq!(highest_pass(&rows).unwrap().target_iops, 1000);
        let t = table("sys", &rows, &Settings::default());
        assert_eq!(t.columns, COLUMNS);
        assert_eq!(t.rows[1][t.column("Pass").unwrap()], false);
        assert_eq!(t.rows[0][t.column("Target IOPS").unwrap()], 1000);
        let sys = System {
            name: "sys".into(),
            volume: None,
            target: None,
            min_iops: 1000,
            max_iops: 2000,
        };
        let h = render(
            &sys,
            "x",
            &rows,
            &Settings {
                scale: 0.05,
                ..Settings::default()
            },
        );
        assert!(
            h.contains("highest passing target: 1,000 IOPS (run 1)"),
            "{h}"
        );
        assert!(h.contains("longest write cycle < 2.250 s"), "{h}");
    }

    #[test]
    fn layout_puts_the_journal_after_the_span_and_refuses_small_targets() {
        let s = Settings {
            scale: 0.05,
            span: 64 << 20,
            ..Settings::default()
        };
        let sys = System {
            name: "a".into(),
            volume: None,
            target: None,
            min_iops: 1000,
            max_iops: 2000,
        };
        let w = workload(&s, &sys, 1, 2, 9, 1 << 30).unwrap();
        assert_eq!(w.span, 64 << 20);
        assert_eq!(w.journal_offset, 64 << 20);
        assert_eq!(w.dirty_blocks, 2000);
        assert_eq!(w.read_iops, 1500.0);
        assert_eq!(w.cycle_offset, Duration::from_secs(2));
        // 2000 × 8 KiB journal: a 20 MiB target leaves ~4 MiB of span.
        let w = workload(&s, &sys, 0, 1, 0, 20 << 20).unwrap();
        assert!(w.span + w.journal_bytes() <= 20 << 20);
        let e = workload(&s, &sys, 0, 1, 0, 16_384_000 + 8192).unwrap_err();
        assert!(e.contains("too small for a journal"), "{e}");
    }
}

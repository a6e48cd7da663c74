//! Running the workshop: the steps in order, each one fio job (one connection per fio job
//! on NBD); a burst step first waits for its bucket to be full; each step's metrics (fio's,
//! and the burst's from fio's windows), its checks judged against the spec, its row stored.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use fio::{JobFile, JobResult, Section};
use harness::assessment;
use harness::node_spec::NodeSpec;
use harness::plan::{Common, PlanError};
use harness::target::{EmbeddedNode, Target};
use harness::verdict::Verdict;
use harness::{FamilyPlan, Options, Outcome, Prepare, RunContext, RunError, RunHeader, Step};
use storage_node::NodeConfig;

use super::balance::Balances;
use super::check::{Check, Names};
use super::cli::{ProvisionedArgs, Settings};
use super::measure::{median, transition};
use super::results::{measured, render, table, unit_of, Row};
use super::spec::Spec;
use super::steps::{self, StepDef, Unit};

/// The workshop as steps, and what it has measured so far.
#[derive(Debug)]
pub struct ProvisionedPlan {
    pub spec: Spec,
    settings: Settings,
    /// Built by `configure`.
    steps: Vec<StepDef>,
    checks: Vec<Vec<Check>>,
    ramp: f64,
    /// The embedded node emulating the spec (embedded target), and its config.
    node: Option<(EmbeddedNode, NodeConfig)>,
    recorded: bool,
    balances: Option<Balances>,
    pub rows: Vec<Row>,
    /// Each step's metrics, for `step.NAME.METRIC`.
    measured: BTreeMap<String, BTreeMap<String, f64>>,
}

impl ProvisionedPlan {
    pub fn new(spec: Spec, settings: Settings) -> ProvisionedPlan {
        ProvisionedPlan {
            spec,
            settings,
            steps: Vec::new(),
            checks: Vec::new(),
            ramp: 0.0,
            node: None,
            recorded: false,
            balances: None,
            rows: Vec::new(),
            measured: BTreeMap::new(),
        }
    }

    /// The steps (after `configure`).
    pub fn step_defs(&self) -> &[StepDef] {
        &self.steps
    }

    fn is_fs(&self) -> bool {
        matches!(self.spec, Spec::Fs(_))
    }

    /// The fio job file of step `i` on the target.
    fn job_file(&self, i: usize, target: &Target) -> JobFile {
        let step = &self.steps[i];
        let mut f = JobFile::new();
        let opts = match &self.node {
            Some((n, _)) => n.options(self.spec.volume()),
            None => target.options(),
        };
        for (k, v) in opts {
            f.global.set(&k, v);
        }
        if let Some(t) = step.runtime {
            f.global.set("time_based", "1");
            f.global.set("runtime", fio::jobfile::fio_time(t));
            if self.ramp > 0.0 && step.burst.is_none() {
                f.global.set("ramp_time", fio::jobfile::fio_time(self.ramp));
            }
        }
        let mut s = Section::new(step.name.clone());
        for (k, v) in &step.options {
            s.set(k, v.clone());
        }
        f.jobs.push(s);
        f
    }

    /// Step `i`'s metrics. `iops` and `bw`: for a time-based step the median of fio's
    /// 500 ms windows within its runtime (the first, fio's start, left out when there are
    /// three or more), so neither fio's start, nor the queue draining after the runtime (128
    /// MiB in flight takes a second at 125 MB/s), nor a window in which a busy client was
    /// starved is taken for the target's rate; fio's headline figures for a one-pass step
    /// or when fio wrote no logs. For a burst step also the transition.
    fn metrics(
        &self,
        i: usize,
        r: &JobResult,
        series: &harness::series::JobSeries,
    ) -> BTreeMap<String, f64> {
        let step = &self.steps[i];
        let mut m = BTreeMap::new();
        m.insert("iops".into(), r.read.iops + r.write.iops);
        m.insert("bw".into(), (r.read.bw_bytes + r.write.bw_bytes) as f64);
        m.insert("lat_mean_us".into(), r.lat_mean_ns() / 1e3);
        m.insert(
            "lat_p99_us".into(),
            r.read.p99_ns.max(r.write.p99_ns) as f64 / 1e3,
        );
        let Some(runtime) = step.runtime else {
            return m;
        };
        // Windows after the runtime are fio draining its queue: not the rate the target held.
        let end_ms = (runtime * 1000.0).round() as u64;
        let totals: Vec<_> = series
            .fio_totals()
            .into_iter()
            .filter(|w| w.t_ms <= end_ms)
            .collect();
        let steady = if totals.len() >= 3 {
            &totals[1..]
        } else {
            &totals[..]
        };
        if !steady.is_empty() {
            m.insert(
                "iops".into(),
                median(steady.iter().map(|w| w.iops).collect()),
            );
            m.insert(
                "bw".into(),
                median(steady.iter().map(|w| w.bw_bytes).collect()),
            );
        }
        if let (Some(b), Some(rate)) = (step.burst, step.rate) {
            let bw = step.unit == Unit::Bw;
            let windows: Vec<(u64, f64)> = totals
                .iter()
                .map(|w| (w.t_ms, if bw { w.bw_bytes } else { w.iops }))
                .collect();
            if let Some(t) = transition(&windows, rate, b.baseline) {
                let p = if bw { "bw" } else { "iops" };
                m.insert(format!("{p}_burst"), t.burst_rate);
                m.insert(format!("{p}_after_credits"), t.after_rate);
                m.insert("burst_duration".into(), t.duration_s);
            }
        }
        m
    }

    /// Step `i`'s rates on both sides (super::kept) when the node sampled its volume: the
    /// steady rate of each dimension, and the burst and after-credits rates of the one it
    /// bursts in; windows within the step's runtime on each side's clock.
    fn kept(
        &self,
        i: usize,
        series: &harness::series::JobSeries,
        volume: Option<&str>,
    ) -> BTreeMap<String, super::kept::Kept> {
        use harness::kept::{client_rates, node_rates, Dir};
        let step = &self.steps[i];
        let mut out = BTreeMap::new();
        let (Some(runtime), false) = (step.runtime, series.node.is_empty()) else {
            return out;
        };
        let end_ms = (runtime * 1000.0).round() as u64;
        let ops: Vec<(u64, f64, f64)> = node_rates(&series.node, volume, Dir::Both, false);
        let done: f64 = ops.iter().map(|x| x.1 * x.2).sum();
        for bw in [false, true] {
            let client: Vec<(u64, f64)> = client_rates(&series.fio, Dir::Both, bw)
                .into_iter()
                .filter(|w| w.0 <= end_ms)
                .collect();
            let node: Vec<(u64, f64, f64)> = node_rates(&series.node, volume, Dir::Both, bw);
            // One request: the mean request's bytes for a bandwidth.
            let quantum = if bw && done > 0.0 {
                node.iter().map(|x| x.1 * x.2).sum::<f64>() / done
            } else {
                1.0
            };
            let node: Vec<(u64, f64)> = node
                .into_iter()
                .filter(|w| w.0 <= end_ms)
                .map(|w| (w.0, w.1))
                .collect();
            let bursts = step.unit == Unit::Bw;
            let burst = match (step.burst, step.rate) {
                (Some(b), Some(rate)) if bursts == bw => Some((rate, b.baseline)),
                _ => None,
            };
            let p = if bw { "bw" } else { "iops" };
            out.extend(super::kept::kept(p, &client, &node, burst, quantum));
        }
        out
    }

    /// The node's samples of step `i`'s burst bucket (in the step's dimension) within the
    /// step's runtime, as (end of window ms on the node's clock, bucket), and the end of the
    /// node's first window with I/O on the volume (how far the node's clock may run ahead
    /// of fio's: `super::kept::held_after_fall`). Empty when the step does not burst or the
    /// node reported no bucket (then fio's windows alone tell).
    fn buckets(
        &self,
        i: usize,
        series: &harness::series::JobSeries,
        volume: Option<&str>,
    ) -> (Vec<(u64, harness::series::CreditSample)>, u64) {
        let step = &self.steps[i];
        let (Some(_), Some(runtime)) = (step.burst, step.runtime) else {
            return (Vec::new(), 0);
        };
        let end_ms = (runtime * 1000.0).round() as u64;
        let bw = step.unit == Unit::Bw;
        let ours = || {
            series
                .node
                .iter()
                .filter(|n| volume.is_none_or(|v| n.volume == v))
        };
        let lead_ms = ours()
            .find(|n| n.read_iops + n.write_iops + n.other_iops > 0.0)
            .map_or(0, |n| n.t_ms);
        let buckets = ours()
            .filter(|n| n.t_ms <= end_ms)
            .filter_map(|n| Some((n.t_ms, if bw { n.bytes_credits } else { n.iops_credits }?)))
            .collect();
        (buckets, lead_ms)
    }

    /// The volume the steps run on: this plan's own node's, or a `--node` volume.
    fn volume(&self, target: &Target) -> Option<String> {
        match (&self.node, target) {
            (Some(_), _) => Some(self.spec.volume().to_string()),
            (None, Target::NodeVolume { volume, .. }) => Some(volume.clone()),
            _ => None,
        }
    }

    /// One step: wait for its bucket, run fio, measure, judge, store.
    fn step(&mut self, i: usize, ctx: &mut RunContext) -> Result<(), RunError> {
        let step = self.steps[i].clone();
        let volume = self.volume(ctx.target);
        let node = self.node.as_ref().map(|(n, _)| n);
        if let (Some(b), Some(bal)) = (step.burst, self.balances.as_mut()) {
            bal.wait_full(&b, node, ctx.target, volume.as_deref(), &mut *ctx.ui);
        }
        let seq = i as u32 + 1;
        let mut file = self.job_file(i, ctx.target);
        ctx.recorder.add_log_options(seq as usize, &mut file);
        let id = ctx.begin_job(
            seq,
            "provisioned",
            &step.name,
            volume.as_deref(),
            1,
            &file.render(),
        )?;
        let cache_before = super::balance::cache_reads(node, ctx.target);
        let ramp = if step.burst.is_some() || step.runtime.is_none() {
            0.0
        } else {
            self.ramp
        };
        let rec = ctx
            .recorder
            .start(seq as usize, node, ctx.target, ramp, false);
        let started = Instant::now();
        let ran = ctx.exec.run(&file);
        let elapsed = started.elapsed();
        let series = rec.finish(id);
        ctx.add_series(&series)?;
        let (unit, div) = unit_of(&step, self.is_fs());
        let mut row = Row::new(&step, unit);
        row.spec_rate = step.rate.map(|r| r / div);
        let out = match ran {
            Ok(out) => out,
            Err(e) => {
                let msg = e.to_string();
                let verdicts = self.fail_all(i, &format!("the job failed: {msg}"));
                ctx.finish_job(id, Err(&msg), &verdicts)?;
                row.error = Some(msg);
                row.checks = verdicts.len();
                return self.record_row(row, ctx);
            }
        };
        let r = out.job(&step.name).cloned().unwrap_or_default();
        let mut metrics = self.metrics(i, &r, &series);
        // The node's bucket is the word on when credits ran out: a fall in fio's windows
        // while the bucket still held credits (a starved client, not the baseline) is no
        // transition, and nothing was measured "after credits". A bucket that never ran out
        // measured nothing after credits; one that still held them after fio's rate fell
        // makes what fio timed and measured after that fall inconclusive (`Check::check`).
        let (buckets, lead_ms) = self.buckets(i, &series, volume.as_deref());
        if super::kept::never_ran_out(&buckets) {
            metrics.retain(|k, _| !k.ends_with("_after_credits") && k != "burst_duration");
        }
        let early_fall = metrics
            .get("burst_duration")
            .and_then(|&fell| super::kept::clients_fall(&buckets, lead_ms, fell));
        if let Some(bal) = self.balances.as_mut() {
            bal.spent(&r, elapsed);
        }
        let names = |n: &str| -> Option<f64> {
            if let Some(x) = n.strip_prefix("spec.") {
                return step.value(x).or_else(|| self.spec.value(x));
            }
            let (s, m) = n.strip_prefix("step.")?.rsplit_once('.')?;
            self.measured.get(s)?.get(m).copied()
        };
        // What limited the step (the host tool sets, the node's samples), as every family's
        // jobs are assessed: a failure the client machine explains is inconclusive.
        let limits = match (node, ctx.target) {
            (Some(n), _) => n.limits(self.spec.volume()),
            (None, t) => t.limits(),
        };
        let devices = assessment::devices(node, ctx.target);
        let diagnosis = assessment::diagnose(
            &series,
            &r,
            volume.as_deref(),
            limits.as_ref(),
            &devices,
            step.runtime.unwrap_or(elapsed.as_secs_f64()),
        );
        let steady = assessment::steady_state(&series);
        let io_error = r.error != 0;
        let mut kept = self.kept(i, &series, volume.as_deref());
        kept.retain(|k, _| metrics.contains_key(k));
        let mut verdicts: Vec<Verdict> = self.checks[i]
            .iter()
            .map(|c| {
                let fall = early_fall.as_deref();
                c.check(&metrics, &names, Some(&diagnosis), io_error, &kept, fall)
            })
            .collect();
        if io_error {
            row.error = Some(format!("fio reported error {}", r.error));
            fail_on_io_error(&mut verdicts, r.error);
        }
        let count = |o: assess::Outcome| verdicts.iter().filter(|v| v.outcome == o).count();
        row.checks = verdicts.len();
        row.passed = count(assess::Outcome::Pass);
        row.inconclusive = count(assess::Outcome::Inconclusive);
        row.fill(&metrics, step.unit == Unit::Bw, div);
        if step
            .options
            .iter()
            .any(|(k, v)| k == "rw" && v.contains("read"))
        {
            let after = super::balance::cache_reads(node, ctx.target);
            row.from_cache_pct = super::balance::cached_pct(cache_before, after);
        }
        ctx.finish_job(id, Ok(&out), &verdicts)?;
        ctx.store
            .set_assessment(id, Some(&diagnosis), steady.as_ref())?;
        self.measured.insert(step.name.clone(), metrics);
        self.record_row(row, ctx)
    }

    fn fail_all(&self, i: usize, detail: &str) -> Vec<Verdict> {
        self.checks[i]
            .iter()
            .map(|c| {
                Verdict::plain(
                    c.text.clone(),
                    0.0,
                    String::new(),
                    false,
                    detail.to_string(),
                )
            })
            .collect()
    }

    fn record_row(&mut self, row: Row, ctx: &mut RunContext) -> Result<(), RunError> {
        ctx.ui.print(&format!(
            "  {:<12} {}{}\n",
            row.step,
            measured(&row),
            match row.checks {
                0 => String::new(),
                _ => format!(", {}", row.checks_text()),
            }
        ));
        self.rows.push(row);
        ctx.put_table(&table(&self.rows))?;
        Ok(())
    }
}

impl FamilyPlan for ProvisionedPlan {
    fn configure(&mut self, common: &mut Common, opts: &Options) -> Result<(), PlanError> {
        let origin = common.origin.clone();
        if common.iterations > 1 {
            return Err(PlanError(format!(
                "{origin}: iterations {}: the provisioned workshop runs once (each step leaves the \
                 buckets and caches to the next); run it again for another iteration",
                common.iterations
            )));
        }
        if !opts.clients.is_empty() {
            return Err(PlanError(format!(
                "{origin}: --client: the provisioned profile counts connections per fio job on one machine; run it on the client"
            )));
        }
        if let Some(m) = opts.args {
            let a: ProvisionedArgs = crate::family_flags(m)?;
            if a.gives_spec() && origin != super::PROFILE_ORIGIN {
                return Err(PlanError(format!(
                    "{origin}: the plan's [provisioned] gives the spec: leave out --provisioned, --model, --volume-size, --rate-scale and --burst-duration"
                )));
            }
            if a.connections.is_some() {
                self.settings.connections = a.connections;
            }
            self.settings.nas |= a.nas;
        }
        if let Some(s) = opts.scale {
            if origin != super::PROFILE_ORIGIN {
                self.spec = self.spec.rescaled(s, "--scale").map_err(PlanError)?;
            }
        }
        let n = self.settings.connections.unwrap_or(16);
        if !(1..=64).contains(&n) {
            return Err(PlanError(format!("--connections {n}: allowed 1 to 64")));
        }
        let runtime = opts
            .runtime
            .or(self.settings.runtime)
            .unwrap_or_else(|| (60.0 * self.spec.scale()).max(2.0));
        if !(runtime > 0.0 && runtime <= 86_400.0) {
            return Err(PlanError(format!(
                "runtime {runtime} s: allowed above 0 up to 86400 s"
            )));
        }
        self.ramp = opts.ramp.unwrap_or(0.0);
        // fio's nfs engine: a NAS volume of the embedded node, or an `nfs://` target.
        let nfs = self.settings.nas
            || common
                .target
                .as_deref()
                .is_some_and(|t| t.starts_with("nfs://"));
        let mut all = steps::steps(&self.spec, n, runtime, nfs)
            .map_err(|e| PlanError(format!("{origin}: {e}")))?;
        let known: Vec<String> = all.iter().map(|s| s.name.clone()).collect();
        for name in self
            .settings
            .only
            .iter()
            .flatten()
            .chain(self.settings.expect.keys())
        {
            if !known.contains(name) {
                return Err(PlanError(format!(
                    "{origin}: provisioned: no step {name:?}; this spec's steps are {}",
                    known.join(", ")
                )));
            }
        }
        if let Some(only) = &self.settings.only {
            all.retain(|s| only.contains(&s.name));
        }
        let mut checks = Vec::new();
        let mut before: Vec<String> = Vec::new();
        for s in &all {
            let kinds: Vec<(&str, harness::verdict::Kind)> =
                self.spec.names().iter().copied().chain(s.kinds()).collect();
            let names = Names {
                spec: &kinds,
                steps: &before,
            };
            let texts = self.settings.expect.get(&s.name).unwrap_or(&s.expect);
            let parsed = texts
                .iter()
                .map(|t| {
                    Check::parse(t, &names).map_err(|e| {
                        PlanError(format!("{origin}: provisioned step {}: {e}", s.name))
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            checks.push(parsed);
            before.push(s.name.clone());
        }
        self.steps = all;
        self.checks = checks;
        common.runtime = runtime;
        common.ramp = self.ramp;
        Ok(())
    }

    fn banner(&self, _common: &Common, target: &Target, db: &Path) -> String {
        let secs: f64 = self.steps.iter().map(|s| s.expected_secs() + 1.0).sum();
        format!(
            "qoslab bench: provisioned: {}\n  {} step(s), ~{:.0} s plus refills, on {}; results: {}",
            self.spec.describe(),
            self.steps.len(),
            secs,
            match target {
                Target::Embedded => "the embedded node (emulated)".to_string(),
                t => t.describe(),
            },
            db.display()
        )
    }

    fn prepare(&mut self, ctx: &mut Prepare) -> Result<RunHeader, RunError> {
        if self.steps.is_empty() {
            return Err(RunError::Plan("provisioned: no steps to run".into()));
        }
        let nas = self.settings.nas;
        let target = match ctx.target {
            Target::Embedded => {
                let spec = NodeSpec::parse(&self.spec.node_toml_nas(nas), "provisioned profile")
                    .map_err(|e| RunError::Plan(e.to_string()))?;
                let node = EmbeddedNode::start(&spec)?;
                self.node = Some((node, spec.cfg));
                format!(
                    "embedded node emulating {}{}",
                    self.spec.describe(),
                    if nas {
                        ", its volume a NAS volume over NFSv3 (fio's nfs engine)"
                    } else {
                        ""
                    }
                )
            }
            _ if nas => {
                return Err(RunError::Plan(
                    "--nas: the embedded node's volume over NFS; another NFS server is --target nfs://SERVER/PATH"
                        .into(),
                ))
            }
            t => format!("{} ({})", t.describe(), self.spec.describe()),
        };
        self.balances = Some(Balances::new(&self.spec));
        Ok(RunHeader {
            target,
            executor: ctx.exec.describe(),
            runtime_s: self
                .steps
                .iter()
                .filter_map(|s| s.runtime)
                .fold(0.0, f64::max),
            ramp_s: self.ramp,
            fio_version: None,
        })
    }

    fn steps(&self) -> Vec<Step> {
        self.steps
            .iter()
            .map(|s| Step {
                label: format!("{}: {}", s.name, s.test),
                expected_secs: s.expected_secs(),
            })
            .collect()
    }

    fn run_step(&mut self, index: usize, ctx: &mut RunContext) -> Result<(), RunError> {
        if !self.recorded {
            if let Some((n, cfg)) = &self.node {
                ctx.record_node(n, cfg)?;
            }
            self.recorded = true;
        }
        let done = self.step(index, ctx);
        if index + 1 == self.steps.len() {
            if let Some((n, _)) = self.node.take() {
                n.stop();
            }
        }
        done
    }

    fn finish(&mut self, ctx: &mut RunContext) -> Result<(), RunError> {
        ctx.put_table(&table(&self.rows))?;
        Ok(())
    }

    fn summary(&self, _outcome: &Outcome) -> Result<String, RunError> {
        Ok(format!(
            "\n{}\n{}\n",
            self.spec.describe(),
            render(&self.rows)
        ))
    }
}

/// Every check of a job fio reported an error for fails, the error named.
fn fail_on_io_error(verdicts: &mut [Verdict], error: i64) {
    for v in verdicts {
        v.passed = false;
        v.outcome = assess::Outcome::Fail;
        v.detail = format!("fio reported error {error}; {}", v.detail);
    }
}

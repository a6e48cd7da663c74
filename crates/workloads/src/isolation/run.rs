//! Running the scenario: the floors run, then the control, each on its own embedded node;
//! one step per bully load, one fio process per step with one job per volume. Everything
//! is stored as it comes; the control's own verdict goes on its last job at the end.

use std::path::Path;
use std::sync::atomic::Ordering::Relaxed;

use fio::{FioOutput, JobResult};
use harness::node_spec::NodeSpec;
use harness::plan::{Common, PlanError};
use harness::series::JobSeries;
use harness::target::{EmbeddedNode, Target};
use harness::verdict::{Expectation, Verdict};
use harness::{FamilyPlan, Options, Outcome, Prepare, RunContext, RunError, RunHeader, Step};

use super::render::render;
use super::results::{table, Row, P99_METRIC};
use super::spec::{IsolationSpec, Mode, Protocol};

/// The scenario as steps, and what it has measured so far.
#[derive(Debug)]
pub struct IsolationPlan {
    pub spec: IsolationSpec,
    /// (mode, index into the spec's loads), in run order.
    steps: Vec<(Mode, usize)>,
    /// The node of the mode running now.
    node: Option<EmbeddedNode>,
    /// Each protected volume's p99 in its mode's first step, ns.
    first_p99: Vec<Option<u64>>,
    /// The control's worst protected volume: share of its target, and where.
    control_worst: Option<(f64, String)>,
    /// The control's last bully job, finished at the end with the control's verdict.
    last_control_job: Option<(i64, FioOutput)>,
    pub rows: Vec<Row>,
    seq: u32,
}

impl IsolationPlan {
    pub fn new(spec: IsolationSpec) -> IsolationPlan {
        let mut modes = vec![Mode::Floors];
        if spec.control {
            modes.push(Mode::Control);
        }
        let steps = modes
            .into_iter()
            .flat_map(|m| (0..spec.loads().len()).map(move |k| (m, k)))
            .collect();
        IsolationPlan {
            spec,
            steps,
            node: None,
            first_p99: Vec::new(),
            control_worst: None,
            last_control_job: None,
            rows: Vec::new(),
            seq: 0,
        }
    }

    /// Start the node of `mode` (and record the floors node's setup).
    fn start_node(&mut self, mode: Mode, ctx: &mut RunContext) -> Result<(), RunError> {
        let cfg = NodeSpec::parse(&self.spec.node_toml(mode), "isolation profile")
            .map_err(|e| RunError::Plan(e.to_string()))?;
        let node = EmbeddedNode::start(&cfg)?;
        if mode == Mode::Floors {
            ctx.record_node(&node, &cfg)?;
        }
        self.node = Some(node);
        self.first_p99 = vec![None; self.spec.protected];
        Ok(())
    }

    /// One step: the fio run, every volume's row and verdicts, stored.
    fn step(&mut self, mode: Mode, k: usize, ctx: &mut RunContext) -> Result<(), RunError> {
        let spec = &self.spec;
        let loads = spec.loads();
        let at = At {
            mode,
            step: k as u32 + 1,
            load: loads[k],
        };
        let Some(node) = self.node.as_ref() else {
            return Err(RunError::Plan(
                "isolation: the step's node is not running".into(),
            ));
        };
        ctx.ui.print(&format!(
            "  {:<7} step {}/{}: bully at {:.2}x ... ",
            mode.as_str(),
            at.step,
            loads.len(),
            at.load
        ));
        let ran = run_fio(spec, node, &mut self.seq, at, ctx)?;
        let out = match &ran.out {
            Ok(o) => o,
            Err(e) => return fail_jobs(ctx, &ran.ids, &e.to_string()),
        };
        let mut step_rows = Vec::new();
        for (i, name) in ran.names.iter().enumerate() {
            let r = out.job(name).cloned().unwrap_or_default();
            let (row, verdicts) = judge_job(
                spec,
                ctx,
                (at, &ran),
                (i, &r),
                &mut self.first_p99,
                &mut self.control_worst,
            )?;
            let sub = FioOutput {
                fio_version: out.fio_version.clone(),
                jobs: vec![r],
                raw: out.raw.clone(),
                stderr: out.stderr.clone(),
            };
            finish_job(
                ctx,
                &mut self.last_control_job,
                (mode, name),
                ran.ids[i],
                sub,
                &verdicts,
            )?;
            step_rows.push(row);
        }
        ctx.ui.print(&format!("{}\n", step_line(&step_rows)));
        self.rows.extend(step_rows);
        ctx.put_table(&table(&self.rows, spec.protocol))?;
        Ok(())
    }

    /// The control's own verdict: the bully must have mattered.
    fn control_verdict(&self) -> Verdict {
        let expectation =
            "control (no floors): a protected volume falls below 98% of its target".to_string();
        match &self.control_worst {
            Some((ratio, at)) => Verdict::plain(
                expectation,
                ratio * 100.0,
                "< 98% of target".into(),
                *ratio < 0.98,
                if *ratio < 0.98 {
                    format!(
                        "without floors the worst was {at}: {:.1}% of its target",
                        ratio * 100.0
                    )
                } else {
                    format!(
                        "without floors every protected volume still got {:.1}% or more of its target: \
                         the bully never hurt them, so this scenario proves nothing; raise the bully's \
                         iodepth or --max-load",
                        ratio * 100.0
                    )
                },
            ),
            None => Verdict::plain(
                expectation,
                0.0,
                "< 98% of target".into(),
                false,
                "the control produced no results".into(),
            ),
        }
    }
}

impl FamilyPlan for IsolationPlan {
    /// The spec was made and validated from the command line with the plan
    /// ([`super::Isolation`]'s profile); nothing is left to apply.
    fn configure(&mut self, _common: &mut Common, _opts: &Options) -> Result<(), PlanError> {
        Ok(())
    }

    fn banner(&self, _common: &Common, _target: &Target, db: &Path) -> String {
        let spec = &self.spec;
        let per_mode = spec.steps as f64 * (spec.runtime + spec.ramp + 1.0);
        format!(
            "qoslab bench: isolation over {}: {} protected {} at a {} IOPS floor, bully {}x..{}x of the remaining {} IOPS, controller {} IOPS (~{:.0} s); results: {}",
            spec.protocol.shown(),
            spec.protected,
            spec.protocol.units(),
            spec.floor_iops,
            spec.loads()[0],
            spec.max_load,
            spec.remaining(),
            spec.capacity_iops,
            per_mode * if spec.control { 2.0 } else { 1.0 },
            db.display()
        )
    }

    /// Each step prints its own line as it runs.
    fn progress_line(&self) -> bool {
        false
    }

    fn prepare(&mut self, ctx: &mut Prepare) -> Result<RunHeader, RunError> {
        self.spec.validate().map_err(RunError::Plan)?;
        Ok(RunHeader {
            target: format!(
                "embedded node, emulated controller {} IOPS, over {}",
                self.spec.capacity_iops,
                self.spec.protocol.path()
            ),
            executor: ctx.exec.describe(),
            runtime_s: self.spec.runtime,
            ramp_s: self.spec.ramp,
            fio_version: None,
        })
    }

    fn steps(&self) -> Vec<Step> {
        let loads = self.spec.loads();
        self.steps
            .iter()
            .map(|&(mode, k)| Step {
                label: format!(
                    "{} step {}/{}: bully at {:.2}x",
                    mode.as_str(),
                    k + 1,
                    loads.len(),
                    loads[k]
                ),
                expected_secs: self.spec.runtime + self.spec.ramp,
            })
            .collect()
    }

    fn run_step(&mut self, index: usize, ctx: &mut RunContext) -> Result<(), RunError> {
        let (mode, k) = self.steps[index];
        if k == 0 {
            self.start_node(mode, ctx)?;
        }
        let done = self.step(mode, k, ctx);
        if k + 1 == self.spec.loads().len() {
            if let Some(n) = self.node.take() {
                n.stop();
            }
        }
        done
    }

    fn finish(&mut self, ctx: &mut RunContext) -> Result<(), RunError> {
        if let Some((id, sub)) = self.last_control_job.take() {
            let v = self.control_verdict();
            ctx.finish_job(id, Ok(&sub), std::slice::from_ref(&v))?;
        }
        ctx.put_table(&table(&self.rows, self.spec.protocol))?;
        Ok(())
    }

    fn summary(&self, _outcome: &Outcome) -> Result<String, RunError> {
        let mut out = format!("\n{}\n", render(&self.rows, self.spec.protocol));
        if let Some(s) = super::results::generator_capped(&self.rows, self.spec.capacity_iops) {
            out.push_str(&format!("{s}\n"));
        }
        Ok(out)
    }
}

/// A step's place in the scenario: its mode, its number (from 1) and the bully's load.
#[derive(Clone, Copy)]
struct At {
    mode: Mode,
    step: u32,
    load: f64,
}

/// What a step's fio run left: its jobs (names and ids), each volume's counters before and
/// after, the recorded series, the tool sets' samples and devices, and fio's output.
struct Ran {
    names: Vec<String>,
    ids: Vec<i64>,
    before: Vec<Counters>,
    after: Vec<Counters>,
    series: Vec<JobSeries>,
    hosts: Vec<toolsets::HostSeries>,
    devices: Vec<String>,
    out: Result<FioOutput, fio::ExecError>,
}

/// A step's fio run: a job begun per volume, the node's counters read around the run and
/// every job's series recorded and stored.
fn run_fio(
    spec: &IsolationSpec,
    node: &EmbeddedNode,
    seq: &mut u32,
    at: At,
    ctx: &mut RunContext,
) -> Result<Ran, RunError> {
    let first = *seq as usize + 1;
    let file = spec
        .job_file(node, at.load, Some((ctx.recorder, first)))
        .map_err(RunError::Plan)?;
    let text = file.render();
    let names: Vec<String> = file.jobs.iter().map(|s| s.name.clone()).collect();
    let ids = begin_jobs(ctx, seq, (at.mode, at.step), &names, &text)?;
    let before: Vec<Counters> = names.iter().map(|n| counters(node, n)).collect();
    let recordings = recordings(ctx.recorder, node, (first, names.len()), spec.ramp);
    let out = ctx.exec.run(&file);
    let after: Vec<Counters> = names.iter().map(|n| counters(node, n)).collect();
    let mut series = Vec::new();
    for (rec, id) in recordings.into_iter().zip(&ids) {
        series.push(rec.finish(*id));
        ctx.add_series(series.last().expect("just pushed"))?;
    }
    // The tool sets were sampled once for the step (with the node's samples): every
    // job of the step is diagnosed against them.
    let hosts: Vec<toolsets::HostSeries> = series.iter().flat_map(|s| s.hosts.clone()).collect();
    let devices = harness::assessment::devices(Some(node), &Target::Embedded);
    Ok(Ran {
        names,
        ids,
        before,
        after,
        series,
        hosts,
        devices,
        out,
    })
}

/// Job `i` of a step (fio's result `r`): its diagnosis stored, its verdicts (a protected
/// volume's, its first p99 kept in `first_p99[i]`; none for the bully) and its row.
fn judge_job(
    spec: &IsolationSpec,
    ctx: &mut RunContext,
    (at, ran): (At, &Ran),
    (i, r): (usize, &JobResult),
    first_p99: &mut [Option<u64>],
    control_worst: &mut Option<(f64, String)>,
) -> Result<(Row, Vec<Verdict>), RunError> {
    let name = &ran.names[i];
    let step = at.step;
    let protected = name != "bully";
    let target = if protected {
        spec.floor_iops
    } else {
        spec.bully_iops(at.load)
    };
    let (ceiling_ms, floor_ms, node_lat_ms) = waits_ms(&ran.before[i], &ran.after[i]);
    let series = &ran.series;
    let fio_windows = &series[i].fio;
    let diagnosis = assess::diagnose(&assess::Inputs {
        fio: harness::assessment::fio_figures(&series[i], r),
        node: Some(node_figures(ceiling_ms, floor_ms, node_lat_ms)),
        hosts: host_figures(&ran.hosts, spec.runtime, &ran.devices),
    });
    let steady = harness::assessment::steady_state(&series[i]);
    // The node's samples of every volume ride on the step's last recording: a
    // floor is judged on the node's count of this volume (harness::kept).
    let ev = harness::verdict::Evidence {
        fio: fio_windows,
        diagnosis: Some(&diagnosis),
        io_error: r.error != 0,
        node: series.last().map(|s| &s.node[..]).unwrap_or(&[]),
        volume: Some(name),
        span_ms: (spec.runtime * 1000.0) as u64,
    };
    let verdicts = if protected {
        protected_verdicts(
            spec,
            at.mode,
            &mut first_p99[i],
            control_worst,
            &match spec.protocol {
                Protocol::Nbd => format!("{name} at step {step}"),
                Protocol::Iscsi => format!("{name} (a LUN over iSCSI) at step {step}"),
            },
            (r, &ev),
        )?
    } else {
        Vec::new()
    };
    let pass = verdicts.iter().all(|v| v.passed) && r.error == 0;
    ctx.store
        .set_assessment(ran.ids[i], Some(&diagnosis), steady.as_ref())?;
    let row = Row {
        mode: at.mode,
        step,
        bully_load: at.load,
        volume: name.clone(),
        protected,
        target_iops: target,
        iops: r.iops(),
        lat_mean_ms: r.lat_mean_ns() / 1e6,
        lat_p99_ms: p99_ns(r) as f64 / 1e6,
        ceiling_wait_ms: ceiling_ms,
        floor_wait_ms: floor_ms,
        node_lat_ms,
        pass,
    };
    Ok((row, verdicts))
}

/// Queue-time counters of one volume.
#[derive(Clone, Copy, Default)]
struct Counters {
    ops: u64,
    ceiling_ns: u64,
    floor_ns: u64,
    lat_ns: u64,
}

fn counters(node: &EmbeddedNode, vol: &str) -> Counters {
    node.node()
        .volume(vol)
        .map(|v| Counters {
            ops: v.stats.total_ops(),
            ceiling_ns: v.stats.ceiling_wait_ns.load(Relaxed),
            floor_ns: v.stats.floor_wait_ns.load(Relaxed),
            lat_ns: v.stats.latency.iter().map(|h| h.sum_ns()).sum(),
        })
        .unwrap_or_default()
}

fn p99_ns(r: &JobResult) -> u64 {
    r.read.p99_ns.max(r.write.p99_ns)
}

/// The node's mean ceiling wait, floor wait and latency per operation (ms) between two
/// readings of a volume's counters.
fn waits_ms(before: &Counters, after: &Counters) -> (f64, f64, f64) {
    let d_ops = after.ops.saturating_sub(before.ops).max(1) as f64;
    let ceiling_ms = after.ceiling_ns.saturating_sub(before.ceiling_ns) as f64 / d_ops / 1e6;
    let floor_ms = after.floor_ns.saturating_sub(before.floor_ns) as f64 / d_ops / 1e6;
    let node_lat_ms = after.lat_ns.saturating_sub(before.lat_ns) as f64 / d_ops / 1e6;
    (ceiling_ms, floor_ms, node_lat_ms)
}

/// The tool sets' figures over a step of `runtime` seconds.
fn host_figures(
    hosts: &[toolsets::HostSeries],
    runtime: f64,
    devices: &[String],
) -> Vec<assess::figures::HostFigures> {
    hosts
        .iter()
        .filter(|h| !h.samples.is_empty())
        .map(|h| assess::figures::summarize(h, 0, (runtime * 1000.0) as u64, devices))
        .collect()
}

/// A step's progress line: every volume's IOPS and p99, a protected miss marked.
fn step_line(rows: &[Row]) -> String {
    let parts: Vec<String> = rows
        .iter()
        .map(|r| {
            format!(
                "{} {:.0} IOPS p99 {:.2} ms{}",
                r.volume,
                r.iops,
                r.lat_p99_ms,
                if r.protected && !r.pass { " (!)" } else { "" }
            )
        })
        .collect();
    parts.join(", ")
}

/// A protected volume's verdicts at a step: its floor, and its p99 against twice its
/// first step's (kept in `first_p99`); under the control, the worst ratio to the floor
/// so far (`at`: the volume and step).
fn protected_verdicts(
    spec: &IsolationSpec,
    mode: Mode,
    first_p99: &mut Option<u64>,
    control_worst: &mut Option<(f64, String)>,
    at: &str,
    (r, ev): (&JobResult, &harness::verdict::Evidence<'_>),
) -> Result<Vec<Verdict>, RunError> {
    let mut verdicts = Vec::new();
    let mut exp = vec![format!("iops >= {} * 0.98", spec.floor_iops)];
    match *first_p99 {
        None => *first_p99 = Some(p99_ns(r)),
        Some(p) => exp.push(format!("{P99_METRIC} <= {:.1}us", 2.0 * p as f64 / 1000.0)),
    }
    for e in exp {
        let v = Expectation::parse(&e)
            .map(|x| x.check_with(r, None, ev))
            .map_err(|e| RunError::Plan(e.to_string()))?;
        verdicts.push(v);
    }
    if mode == Mode::Control {
        let ratio = r.iops() / spec.floor_iops as f64;
        if control_worst.as_ref().is_none_or(|(w, _)| ratio < *w) {
            *control_worst = Some((ratio, at.to_string()));
        }
    }
    Ok(verdicts)
}

/// Begins a job per name of step `step` of `mode` (numbered on from `seq`); their ids.
fn begin_jobs(
    ctx: &mut RunContext,
    seq: &mut u32,
    (mode, step): (Mode, u32),
    names: &[String],
    text: &str,
) -> Result<Vec<i64>, RunError> {
    let mut ids = Vec::new();
    for name in names {
        *seq += 1;
        let id = ctx.begin_job(
            *seq,
            &format!("isolation-{}", mode.as_str()),
            &format!("{}/step{step}/{name}", mode.as_str()),
            Some(name),
            step,
            text,
        )?;
        ids.push(id);
    }
    Ok(ids)
}

/// The node's figures of a volume for the diagnosis (waits and latency per operation).
fn node_figures(ceiling_ms: f64, floor_ms: f64, node_lat_ms: f64) -> assess::NodeFigures {
    assess::NodeFigures {
        lat_mean_us: node_lat_ms * 1000.0,
        ceiling_wait_us: ceiling_ms * 1000.0,
        floor_wait_us: floor_ms * 1000.0,
        ..Default::default()
    }
}

/// Stores a volume's job at a step. The control's per-step verdicts are what *would* have
/// been judged: they go in the table, not in the run's verdicts (the control is meant to
/// fail); its bully's job is held back (`last_control_job`): the control's last job
/// carries the control's verdict.
fn finish_job(
    ctx: &mut RunContext,
    last_control_job: &mut Option<(i64, FioOutput)>,
    (mode, name): (Mode, &str),
    id: i64,
    sub: FioOutput,
    verdicts: &[Verdict],
) -> Result<(), RunError> {
    let stored: &[Verdict] = if mode == Mode::Floors { verdicts } else { &[] };
    if mode == Mode::Control && name == "bully" {
        if let Some((id, prev)) = last_control_job.replace((id, sub)) {
            ctx.finish_job(id, Ok(&prev), &[])?;
        }
    } else {
        ctx.finish_job(id, Ok(&sub), stored)?;
    }
    Ok(())
}

/// The step's recordings: fio's logs for every job (numbered from `first`); the node's
/// samples (every volume) with the bully's, the last, so its chart shows protected vs
/// bully over time.
fn recordings(
    recorder: &harness::recording::SeriesRecorder,
    node: &EmbeddedNode,
    (first, n): (usize, usize),
    ramp: f64,
) -> Vec<harness::recording::JobRecording> {
    (0..n)
        .map(|i| {
            if i + 1 == n {
                recorder.start(first + i, Some(node), &Target::Embedded, ramp, false)
            } else {
                recorder.start_logs(first + i)
            }
        })
        .collect()
}

/// Every job of a step whose fio run failed: finished with its error.
fn fail_jobs(ctx: &mut RunContext, ids: &[i64], msg: &str) -> Result<(), RunError> {
    for &id in ids {
        ctx.finish_job(id, Err(msg), &[])?;
    }
    Ok(())
}

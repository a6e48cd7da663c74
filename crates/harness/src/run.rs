//! The run loop, the same for every family: start the embedded node the plan declares,
//! let the family prepare, write the run row, run the steps in order (each writes its own
//! jobs, series and tables as it goes), let the family record its run-level verdicts,
//! derive the status from the stored records by the one rule ([`crate::outcome`]), close
//! the run row.

use fio::Executor;

use crate::context::{record_setup, Prepare, RunContext, RunError};
use crate::family::Plan;
use crate::host::Env;
use crate::outcome::Outcome;
use crate::outcome::RunTally;
use crate::recording::{RemoteHosts, SeriesRecorder};
use crate::store::{NewRun, Store};
use crate::target::{EmbeddedNode, Target};
use crate::ui::Ui;

/// Fixed start-up and drain time per step, seconds, for the time-left estimate.
const STEP_OVERHEAD_S: f64 = 0.5;

/// What a run needs besides its plan.
pub struct RunEnv<'a> {
    pub target: &'a Target,
    pub exec: &'a dyn Executor,
    pub store: &'a mut Store,
    /// This machine (fio's version is replaced when the family's header says so).
    pub env: &'a Env,
    pub ui: &'a mut dyn Ui,
    /// Sample the hosts' tool sets while jobs run (`--no-tools` turns it off).
    pub tools: bool,
    /// Remote load generators sampled beside this machine (`--client` with `--hosts`).
    pub remote_tools: Option<RemoteHosts>,
}

/// Run `plan` (configured: [`Plan::configure`]) on `env.target`. Store errors end the run
/// (what was written stays, the run `running`); a step's own failures are the family's to
/// judge.
pub fn run(plan: &mut Plan, env: RunEnv) -> Result<Outcome, RunError> {
    let RunEnv {
        target,
        exec,
        store,
        env,
        ui,
        tools,
        remote_tools,
    } = env;
    let common = &plan.common;
    let node = match (target, &common.node) {
        (Target::Embedded, Some(cfg)) => Some(EmbeddedNode::start(cfg)?),
        _ => None,
    };
    let header = plan.body.prepare(&mut Prepare {
        common,
        target,
        node: node.as_ref(),
        exec,
        ui: &mut *ui,
    })?;
    let mut host = env.clone();
    if let Some(v) = header.fio_version {
        host.fio_version = v;
    }
    let run = store.begin_run(&NewRun {
        name: &common.name,
        plan_origin: &common.origin,
        plan_text: &common.text,
        target: &header.target,
        executor: &header.executor,
        runtime_s: header.runtime_s,
        ramp_s: header.ramp_s,
        env: &host,
    })?;
    // SIGINT, SIGTERM, SIGHUP: the run is stored as interrupted (its own connection: the
    // teardown runs beside this thread). A SIGKILL is seen at the next open (store::owner).
    let _interrupted = store.path().map(|db| {
        lifecycle::register(lifecycle::Phase::Local, move || {
            if let Ok(s) = Store::open(&db) {
                let _ = s.mark_interrupted(run);
            }
        })
    });
    record_setup(
        store,
        run,
        node.as_ref(),
        common.node.as_ref().map(|n| &n.cfg),
        target,
    )?;
    let recorder = SeriesRecorder::with_tools(tools).with_remote(remote_tools);
    let steps = plan.body.steps();
    let progress = plan.body.progress_line();
    let mut ctx = RunContext {
        common,
        target,
        node: node.as_ref(),
        exec,
        ui,
        store,
        run,
        recorder: &recorder,
    };
    for (i, step) in steps.iter().enumerate() {
        if progress {
            let remaining: f64 = steps[i + 1..]
                .iter()
                .map(|s| s.expected_secs + STEP_OVERHEAD_S)
                .sum();
            ctx.ui
                .step_started(i, steps.len(), &step.label, step.expected_secs, remaining);
        }
        let done = plan.body.run_step(i, &mut ctx);
        if progress {
            ctx.ui.step_finished();
        }
        done?;
    }
    plan.body.finish(&mut ctx)?;
    // The one rule (crate::outcome): the status comes from what was stored.
    let mut record = store.load_run(run)?;
    let tally = RunTally::of(&record);
    store.finish_run(run, tally.status.as_str())?;
    record.status = tally.status.as_str().to_string();
    drop(recorder);
    if let Some(n) = node {
        n.stop();
    }
    Ok(Outcome { record, tally })
}

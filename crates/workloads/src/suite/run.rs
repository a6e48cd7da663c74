//! Running a suite through the harness: hosts preflighted and the suite's servers started
//! in `prepare`, then one step per measurement — a network pair, all pairs under load, one
//! fio run (a prefill, or one iteration of one job on a device, a host, every host, or every
//! load generator) — each stored as a job the moment it ends, with its tables rewritten.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fio::FioOutput;
use harness::plan::{Common, PlanError};
use harness::series::JobSeries;
use harness::target::Target;
use harness::verdict::Verdict;
use harness::{FamilyPlan, Options, Outcome, Prepare, RunContext, RunError, RunHeader, Step};
use hosts::SshConfig;
use suites::disks::TargetSizing;
use suites::fiorun::{self, FioRun};
use suites::network::{HostTotal, Mesh, NetworkResult, Pair};
use suites::schedule::{Prepared, UnitKind};
use suites::spread::Spread;
use suites::Session;

use super::cli::SuiteArgs;
use super::render;
use super::results;
use super::spec::{Kind, SuiteSpec};
use super::verdicts::{self, iperf_output, pair_verdicts, total_verdicts};

enum Engine {
    Network {
        mesh: Mesh,
        pairs: Vec<(usize, usize)>,
    },
    Fio {
        prepared: Prepared,
    },
}

/// What lives while the suite runs: the session (its hosts, run directories, ssh masters),
/// the suite's servers, and a local directory for fio's logs. Dropping it stops and
/// removes everything.
struct Running {
    // Field order is drop order: servers first, then the session's clean-up.
    engine: Engine,
    session: Session,
    logs: PathBuf,
    /// On SIGINT/SIGTERM/SIGHUP (which do not unwind): remove `logs` too.
    _logs_cleanup: lifecycle::Guard,
}

/// The network suite's mesh, host pairs (indices into the mesh) and session.
type Network<'a> = (&'a Mesh, &'a [(usize, usize)], &'a Session);

/// The network suite's [`Network`], once prepared.
fn network(state: &Option<Running>) -> Result<Network<'_>, RunError> {
    match state {
        Some(Running {
            engine: Engine::Network { mesh, pairs },
            session,
            ..
        }) => Ok((mesh, pairs, session)),
        _ => Err(plan_err("network suite: not prepared")),
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.logs);
    }
}

/// A suite's plan, and what it has measured so far.
pub struct SuitePlan {
    pub spec: SuiteSpec,
    state: Option<Running>,
    /// The library's progress lines, shown after the preflight.
    lines: Arc<Mutex<Vec<String>>>,
    /// Tables known before the run row exists (sizing), stored with the first step.
    pending: Vec<harness::store::SummaryTable>,
    /// Preflight and target lines for the summary.
    pub notes: Vec<String>,
    pub connectivity: Vec<Pair>,
    pub under_load: Vec<Pair>,
    pub totals: Vec<HostTotal>,
    pub sizing: Vec<TargetSizing>,
    pub runs: Vec<FioRun>,
    seq: u32,
}

impl std::fmt::Debug for SuitePlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SuitePlan")
            .field("spec", &self.spec)
            .field("running", &self.state.is_some())
            .finish()
    }
}

fn plan_err(e: impl std::fmt::Display) -> RunError {
    RunError::Plan(e.to_string())
}

impl SuitePlan {
    pub fn new(spec: SuiteSpec) -> SuitePlan {
        SuitePlan {
            spec,
            state: None,
            lines: Arc::new(Mutex::new(Vec::new())),
            pending: Vec::new(),
            notes: Vec::new(),
            connectivity: Vec::new(),
            under_load: Vec::new(),
            totals: Vec::new(),
            sizing: Vec::new(),
            runs: Vec::new(),
            seq: 0,
        }
    }

    fn take_lines(&self) -> Vec<String> {
        std::mem::take(&mut *self.lines.lock().unwrap_or_else(|e| e.into_inner()))
    }

    fn next_seq(&mut self) -> u32 {
        self.seq += 1;
        self.seq
    }

    fn finish(
        &mut self,
        ctx: &mut RunContext,
        id: i64,
        out: Result<&FioOutput, &str>,
        verdicts: &[Verdict],
    ) -> Result<(), RunError> {
        ctx.finish_job(id, out, verdicts)?;
        Ok(())
    }

    /// The network result so far (the terminal's matrix).
    pub fn network_result(&self) -> NetworkResult {
        NetworkResult {
            plan: self.spec.network_plan(),
            hosts: self.spec.hosts.iter().map(|h| h.name.clone()).collect(),
            connectivity: self.connectivity.clone(),
            under_load: self.under_load.clone(),
            totals: self.totals.clone(),
        }
    }

    fn pair_step(&mut self, k: usize, ctx: &mut RunContext) -> Result<(), RunError> {
        let (mesh, pairs, session) = network(&self.state)?;
        let (i, j) = pairs[k];
        let (from, to) = (&mesh.hosts[i], &mesh.hosts[j]);
        let seq = self.seq + 1;
        let id = ctx.begin_job(
            seq,
            "network/connectivity",
            &format!("{from} -> {to}"),
            Some(&format!("{from}->{to}")),
            1,
            &mesh.command(session, i, j),
        )?;
        // Both ends' tool sets while the pair runs (unless --no-tools).
        let tools = ctx
            .recorder
            .tools()
            .then(|| suites::tools::sample(&[&session.hosts[i], &session.hosts[j]]));
        let measured = mesh.connectivity(session, i, j);
        let omit = Duration::from_secs(u64::from(self.spec.timing().1));
        if let Some(t) = tools {
            ctx.add_series(&JobSeries {
                job_id: id,
                hosts: suites::tools::after_ramp(t.stop(), omit),
                ..JobSeries::default()
            })?;
        }
        self.seq = seq;
        let p = match measured {
            Ok(p) => p,
            Err(e) => {
                self.finish(ctx, id, Err(&e.to_string()), &[])?;
                return Ok(());
            }
        };
        let verdicts = pair_verdicts(&p, &self.spec, true);
        match &p.error {
            Some(e) => self.finish(ctx, id, Err(e), &verdicts)?,
            None => self.finish(ctx, id, Ok(&iperf_output(&p)), &verdicts)?,
        }
        ctx.ui.print(&format!("  {}\n", render::pair_line(&p)));
        self.connectivity.push(p);
        ctx.put_table(&results::pairs(
            results::CONNECTIVITY,
            &self.connectivity,
            self.spec.min_fraction,
        ))?;
        Ok(())
    }

    fn load_step(&mut self, ctx: &mut RunContext) -> Result<(), RunError> {
        let (mesh, pairs, session) = network(&self.state)?;
        // Every pair's job exists before the load starts.
        let mut ids = Vec::new();
        let mut seq = self.seq;
        for &(i, j) in pairs {
            seq += 1;
            let (from, to) = (&mesh.hosts[i], &mesh.hosts[j]);
            ids.push(ctx.begin_job(
                seq,
                "network/under-load",
                &format!("{from} -> {to}"),
                Some(&format!("{from}->{to}")),
                1,
                &mesh.command(session, i, j),
            )?);
        }
        let host_names = mesh.hosts.clone();
        let tools = ctx
            .recorder
            .tools()
            .then(|| suites::tools::sample(&session.hosts.iter().collect::<Vec<_>>()));
        let measured = mesh.under_load(session);
        let omit = Duration::from_secs(u64::from(self.spec.timing().1));
        let mut host_series = tools
            .map(|t| suites::tools::after_ramp(t.stop(), omit))
            .unwrap_or_default();
        self.seq = seq;
        let (load, totals) = match measured {
            Ok(x) => x,
            Err(e) => {
                for id in ids {
                    self.finish(ctx, id, Err(&e.to_string()), &[])?;
                }
                return Ok(());
            }
        };
        for (p, id) in load.iter().zip(ids) {
            let verdicts = pair_verdicts(p, &self.spec, false);
            match &p.error {
                Some(e) => self.finish(ctx, id, Err(e), &verdicts)?,
                None => self.finish(ctx, id, Ok(&iperf_output(p)), &verdicts)?,
            }
        }
        // Each host's cumulative out and in, judged against its rated speed.
        for (t, name) in totals.iter().zip(&host_names) {
            let seq = self.next_seq();
            let id = ctx.begin_job(
                seq,
                "network/under-load",
                &format!("{name} cumulative out and in"),
                Some(name),
                1,
                "sums of the host's pairs under load",
            )?;
            let verdicts = total_verdicts(t, self.spec.min_fraction);
            self.finish(ctx, id, Ok(&FioOutput::default()), &verdicts)?;
            // The host's tool sets while every pair ran.
            if let Some(k) = host_series.iter().position(|h| &h.host == name) {
                ctx.add_series(&JobSeries {
                    job_id: id,
                    hosts: vec![host_series.swap_remove(k)],
                    ..JobSeries::default()
                })?;
            }
        }
        self.under_load = load;
        self.totals = totals;
        ctx.put_table(&results::pairs(
            results::UNDER_LOAD,
            &self.under_load,
            self.spec.min_fraction,
        ))?;
        ctx.put_table(&results::hosts(&self.totals, self.spec.min_fraction))?;
        ctx.put_table(&results::intervals(&self.under_load))?;
        ctx.ui.print(&render::load_lines(&self.totals));
        Ok(())
    }

    fn fio_step(&mut self, k: usize, ctx: &mut RunContext) -> Result<(), RunError> {
        let Some(Running {
            engine: Engine::Fio { prepared },
            session,
            logs,
            ..
        }) = self.state.as_ref()
        else {
            return Err(plan_err("suite: not prepared"));
        };
        let u = &prepared.units[k];
        let kind = self.spec.kind.name();
        let workload = if u.stage == kind {
            kind.to_string()
        } else {
            format!("{kind}/{}", u.stage)
        };
        let jobfile = u
            .parts
            .iter()
            .map(|(i, jf, _)| format!("# {}\n{}", session.hosts[*i].name, jf.render()))
            .collect::<Vec<_>>()
            .join("\n");
        let seq = self.seq + 1;
        let id = ctx.begin_job(
            seq,
            &workload,
            u.job_name(),
            Some(&u.place()),
            u.iteration(),
            &jobfile,
        )?;
        let prefix = format!("job{seq}");
        let measure = u.kind != UnitKind::Prepare;
        let unit_hosts: Vec<&hosts::Host> =
            u.parts.iter().map(|(i, _, _)| &session.hosts[*i]).collect();
        let tools = (measure && ctx.recorder.tools()).then(|| suites::tools::sample(&unit_hosts));
        let ran = prepared.run_unit(
            session,
            k,
            measure.then_some((logs.as_path(), prefix.as_str())),
        );
        let ramp = Duration::from_secs(u64::from(self.spec.timing().1));
        let host_series = tools
            .map(|t| suites::tools::after_ramp(t.stop(), ramp))
            .unwrap_or_default();
        self.seq = seq;
        let label = u.label();
        let last_iteration = matches!(u.kind, UnitKind::Measure { iteration } if iteration == self.spec.iterations());
        let run = match ran {
            Ok(r) => r,
            Err(e) => {
                let msg = e.to_string();
                ctx.ui.print(&format!("  {label}: ERROR {msg}\n"));
                self.finish(ctx, id, Err(&msg), &[])?;
                return Ok(());
            }
        };
        let mut verdicts = Vec::new();
        if measure {
            if let Some(s) = run.steady {
                verdicts.push(verdicts::steady(&s));
            }
        }
        if let (true, Some(max)) = (last_iteration, self.spec.max_cv) {
            let same: Vec<f64> = self
                .runs
                .iter()
                .chain(std::iter::once(&run))
                .filter(|r| {
                    r.stage == run.stage
                        && r.job == run.job
                        && r.hosts == run.hosts
                        && r.targets == run.targets
                })
                .map(|r| r.iops())
                .collect();
            let sp = Spread::of(&same);
            verdicts.push(Verdict::plain(
                format!("iops cv over {} iterations <= {max}%", sp.n),
                sp.cv_pct,
                format!("<= {max}%"),
                sp.cv_pct <= max,
                format!(
                    "IOPS {:.0} mean, {:.0}..{:.0}, cv {:.1}%",
                    sp.mean, sp.min, sp.max, sp.cv_pct
                ),
            ));
        }
        self.finish(ctx, id, Ok(&run.output), &verdicts)?;
        ctx.add_series(&JobSeries {
            job_id: id,
            fio: run.series.clone(),
            hosts: host_series,
            ..JobSeries::default()
        })?;
        ctx.ui.print(&format!(
            "  {label}: {:.0} IOPS, {:.1} MiB/s{}\n",
            run.iops(),
            run.mib_s(),
            if measure {
                format!(", steady {}", fiorun::steady_word(run.steady))
            } else {
                String::new()
            }
        ));
        if measure {
            self.runs.push(run);
            let sums = fiorun::summarize(&self.runs);
            ctx.put_table(&results::fio(
                &format!("{} results", self.spec.kind.name()),
                &sums,
                self.spec.max_cv,
            ))?;
            ctx.put_table(&results::clients(&self.runs))?;
            ctx.put_table(&results::iostat(&self.runs))?;
            ctx.put_table(&results::vmstat(&self.runs))?;
        }
        Ok(())
    }

    /// The hosts preflighted over ssh; the library's progress lines shown and kept as notes.
    fn open_session(&mut self, ctx: &mut Prepare) -> Result<Session, RunError> {
        let cfg = Arc::new(SshConfig {
            options: self.spec.ssh_args(),
            ..SshConfig::default()
        });
        let hosts = hosts::parse_hosts(&self.spec.host_list(), cfg).map_err(plan_err)?;
        let lines = self.lines.clone();
        let progress: suites::session::Progress = Box::new(move |l: &str| {
            lines
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(l.to_string())
        });
        let opened = Session::open(hosts, self.spec.kind.tools(), progress);
        for l in self.take_lines() {
            ctx.ui.print(&format!("{l}\n"));
            self.notes.push(l);
        }
        opened.map_err(plan_err)
    }

    /// The suite's servers started (iperf3's mesh, or the devices or targets prepared for
    /// fio), with a note per host, device or target.
    fn start_engine(&mut self, session: &Session) -> Result<Engine, RunError> {
        Ok(match self.spec.kind {
            Kind::Network => {
                let mesh = Mesh::start(session, &self.spec.network_plan()).map_err(plan_err)?;
                for (h, (r, from)) in mesh.hosts.iter().zip(&mesh.rated) {
                    self.notes.push(format!(
                        "{h}: rated {} ({from})",
                        r.map_or("unknown".into(), |r| format!("{r} Mbit/s"))
                    ));
                }
                let pairs = mesh.pairs();
                Engine::Network { mesh, pairs }
            }
            Kind::Disks => {
                let (states, prepared) =
                    suites::disks::prepare(session, &self.spec.disks_plan()).map_err(plan_err)?;
                for (h, st) in &states {
                    self.notes.push(format!(
                        "{h}: {} ({}, {}){}",
                        st.given,
                        fio::fmt::human(st.size_bytes),
                        if st.rotational { "HDD" } else { "SSD" },
                        match st.reasons() {
                            r if r.is_empty() => String::new(),
                            r => format!(", overwritten although it holds: {}", r.join("; ")),
                        }
                    ));
                }
                self.sizing = prepared.sizing.clone();
                Engine::Fio { prepared }
            }
            Kind::Storage(k) => {
                let (targets, prepared) =
                    suites::storage::prepare(session, &self.spec.storage_plan(k))
                        .map_err(plan_err)?;
                for t in &targets {
                    self.notes.push(format!(
                        "{}: {} on {} ({}){}",
                        t.host,
                        t.path,
                        t.fs_type,
                        t.capacity_bytes
                            .map(|b| format!("{} available", fio::fmt::human(b)))
                            .unwrap_or_else(|| "capacity unknown".into()),
                        t.attached_from
                            .as_ref()
                            .map(|(url, i)| format!(", logged in to {url} as {i}"))
                            .unwrap_or_default()
                    ));
                }
                self.sizing = prepared.sizing.clone();
                Engine::Fio { prepared }
            }
        })
    }

    /// The run's header: the hosts, the executor, the timing.
    fn header(&self, session: &Session) -> RunHeader {
        let (rt, ramp) = self.spec.timing();
        let n = session.hosts.len();
        RunHeader {
            target: format!(
                "{} suite on host(s) {}",
                self.spec.kind.name(),
                session
                    .hosts
                    .iter()
                    .map(|h| if h.addr == h.name {
                        h.name.clone()
                    } else {
                        format!("{} ({})", h.name, h.addr)
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            executor: match self.spec.kind {
                Kind::Network => format!("iperf3 over ssh on {n} host(s)"),
                _ => format!("fio client/server: fio --server on {n} host(s) over ssh"),
            },
            runtime_s: f64::from(rt),
            ramp_s: f64::from(ramp),
            fio_version: match self.spec.kind {
                Kind::Network => Some("none (iperf3)".into()),
                _ => None,
            },
        }
    }
}

impl FamilyPlan for SuitePlan {
    fn configure(&mut self, _common: &mut Common, opts: &Options) -> Result<(), PlanError> {
        if let Some(m) = opts.args {
            let a: SuiteArgs = crate::family_flags(m)?;
            a.apply(&mut self.spec).map_err(PlanError)?;
        }
        // `qoslab bench --iterations N`, the command line's for every family.
        if opts.iterations.is_some() {
            self.spec.iterations = opts.iterations;
        }
        if opts.runtime.is_some() {
            self.spec.runtime = opts.runtime;
        }
        if opts.ramp.is_some() {
            self.spec.ramp = opts.ramp;
        }
        if !opts.clients.is_empty() {
            return Err(PlanError(
                "--client: a suite starts fio --server on its own hosts (--hosts); it takes no --client"
                    .into(),
            ));
        }
        self.spec.validate().map_err(PlanError)
    }

    fn banner(&self, _common: &Common, _target: &Target, db: &Path) -> String {
        let s = &self.spec;
        let (rt, ramp) = s.timing();
        let what = match s.kind {
            Kind::Network => format!(
                "iperf3 between every pair of {} hosts, {rt} s each after {ramp} s omitted, then all at once",
                s.hosts.len()
            ),
            Kind::Disks => format!(
                "{} device(s) on {} host(s), {} iteration(s) of {rt} s (+{ramp} s ramp)",
                s.hosts.iter().map(|h| h.devices.len()).sum::<usize>(),
                s.hosts.iter().filter(|h| !h.devices.is_empty()).count(),
                s.iterations()
            ),
            Kind::Storage(k) => format!(
                "{} load generator(s) on {} target(s) through fio client/server, {} iteration(s) of {rt} s (+{ramp} s ramp)",
                s.hosts.len(),
                k.name(),
                s.iterations()
            ),
        };
        format!(
            "qoslab bench: suite {} on {}: {what}; results: {}",
            s.kind.name(),
            s.host_list(),
            db.display()
        )
    }

    fn prepare(&mut self, ctx: &mut Prepare) -> Result<RunHeader, RunError> {
        self.spec.validate().map_err(plan_err)?;
        let session = self.open_session(ctx)?;
        let engine = self.start_engine(&session)?;
        self.take_lines();
        if !self.sizing.is_empty() {
            ctx.ui.print(&render::sizing(&self.sizing));
            self.pending.push(results::sizing(&self.sizing));
        }
        let header = self.header(&session);
        // Made last, so a suite that cannot start leaves no directory behind.
        let logs = harness::target::temp_dir("suite-logs")
            .map_err(|e| plan_err(format!("a directory for fio's logs: {e}")))?;
        let dir = logs.clone();
        let _logs_cleanup = lifecycle::register(lifecycle::Phase::Local, move || {
            let _ = std::fs::remove_dir_all(&dir);
        });
        self.state = Some(Running {
            engine,
            session,
            logs,
            _logs_cleanup,
        });
        Ok(header)
    }

    fn steps(&self) -> Vec<Step> {
        let Some(st) = &self.state else {
            return Vec::new();
        };
        let (rt, ramp) = self.spec.timing();
        match &st.engine {
            Engine::Network { mesh, pairs } => {
                let secs = f64::from(rt + ramp) + 0.5;
                let mut v: Vec<Step> = pairs
                    .iter()
                    .map(|&(i, j)| Step {
                        label: format!("connectivity {} -> {}", mesh.hosts[i], mesh.hosts[j]),
                        expected_secs: secs,
                    })
                    .collect();
                v.push(Step {
                    label: format!("all {} pairs at once", pairs.len()),
                    expected_secs: secs + 1.0,
                });
                v
            }
            Engine::Fio { prepared } => prepared
                .units
                .iter()
                .map(|u| Step {
                    label: u.label(),
                    expected_secs: if u.kind == UnitKind::Prepare {
                        2.0
                    } else {
                        prepared.unit_secs
                    },
                })
                .collect(),
        }
    }

    fn run_step(&mut self, index: usize, ctx: &mut RunContext) -> Result<(), RunError> {
        for t in std::mem::take(&mut self.pending) {
            ctx.put_table(&t)?;
        }
        let done = match &self.state {
            Some(Running {
                engine: Engine::Network { pairs, .. },
                ..
            }) => {
                if index < pairs.len() {
                    self.pair_step(index, ctx)
                } else {
                    self.load_step(ctx)
                }
            }
            Some(_) => self.fio_step(index, ctx),
            None => Err(plan_err("suite: not prepared")),
        };
        self.take_lines();
        done
    }

    fn finish(&mut self, _ctx: &mut RunContext) -> Result<(), RunError> {
        // Servers stopped, run directories and ssh masters gone.
        self.state = None;
        Ok(())
    }

    fn summary(&self, _outcome: &Outcome) -> Result<String, RunError> {
        let mut out = String::from("\n");
        match self.spec.kind {
            Kind::Network => {
                for n in &self.notes {
                    if n.contains(": rated ") {
                        out.push_str(&format!("{n}\n"));
                    }
                }
                out.push_str(&self.network_result().render());
            }
            _ => out.push_str(&render::fio_summary(
                &self.notes,
                &self.sizing,
                &self.runs,
                self.spec.iterations(),
            )),
        }
        Ok(out)
    }
}

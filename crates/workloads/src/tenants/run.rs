//! The tenants plan as harness steps: one step per scale point, on the embedded node (the
//! plan's `[[policy]]`s and `[capacity]`; started here when the plan declares none), on a
//! running node (`--node URL`: volumes and missing policies created through its API), or
//! in a directory per tenant (`--target DIR`: no QoS qoslab enforces). Per
//! point: a job per class (its verdicts, the fio classes' aggregate result), the summary
//! table (a row per point and class), the tenant table (a row per tenant and iteration)
//! and seed 004's tables, all stored as the point ends.

use std::path::Path;

use fio::{FioOutput, JobResult};
use harness::node_spec::NodeSpec;
use harness::plan::{Common, PlanError};
use harness::series::JobSeries;
use harness::store::SummaryTable;
use harness::target::{EmbeddedNode, Target};
use harness::verdict::Verdict;
use harness::{FamilyPlan, Options, Outcome, Prepare, RunContext, RunError, RunHeader, Step};
use storage_node::NodeConfig;

use super::backend::{check_target, Backend, RunDir, TargetKind, NOT_ENFORCED};
use super::point::PointResult;
use super::remote::RemoteNode;
use super::rows::{summary_rows, tenant_rows, SUMMARY_COLUMNS, TENANT_COLUMNS};
use super::runner::summarize;
use super::spec::TenantsSpec;
use super::sweep::Sweep;
use super::tables::seed_tables;
use super::verdicts::judge;

/// Summary tables' kind (the report charts the `summary` table of this kind).
pub const KIND: &str = "tenants";
/// Seed 004's tables' kind.
pub const SEED_KIND: &str = "tenants-seed";

#[derive(Debug)]
pub struct TenantsPlan {
    pub spec: TenantsSpec,
    /// Job files, fio output, sockets and logs of the run (removed at the end).
    scratch: Option<std::path::PathBuf>,
    sweep: Option<SweepBox>,
    own_node: Option<EmbeddedNode>,
    own_cfg: Option<NodeConfig>,
    /// `--node URL`: the running node the volumes are created on.
    remote: Option<RemoteBox>,
    /// `--target DIR`: the run's directory there (a subdirectory per tenant).
    run_dir: Option<RunDirBox>,
    /// `--target /dev/X,/dev/Y`: a block device per tenant of a point.
    devices: Vec<std::path::PathBuf>,
    /// `--destroy-data DEVICE`: devices that may be overwritten although they hold data.
    destroy: Vec<String>,
    summary: Vec<Vec<serde_json::Value>>,
    tenants: Vec<Vec<serde_json::Value>>,
    points: Vec<PointResult>,
    seq: u32,
    failed_verdicts: usize,
    inconclusive: usize,
    failed_iterations: u64,
    lines: Vec<String>,
}

/// The sweep (not Debug: it holds the mount session).
struct SweepBox(Sweep);

impl std::fmt::Debug for SweepBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sweep")
    }
}

struct RemoteBox(RemoteNode);

impl std::fmt::Debug for RemoteBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RemoteNode({})", self.0.url())
    }
}

struct RunDirBox(RunDir);

impl std::fmt::Debug for RunDirBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RunDir({})", self.0.path.display())
    }
}

impl TenantsPlan {
    pub fn new(spec: TenantsSpec) -> TenantsPlan {
        TenantsPlan {
            spec,
            scratch: None,
            sweep: None,
            own_node: None,
            own_cfg: None,
            remote: None,
            run_dir: None,
            devices: Vec::new(),
            destroy: Vec::new(),
            summary: Vec::new(),
            tenants: Vec::new(),
            points: Vec::new(),
            seq: 0,
            failed_verdicts: 0,
            inconclusive: 0,
            failed_iterations: 0,
            lines: Vec::new(),
        }
    }

    /// Whether the tenants' storage is the embedded node's (no directory, devices or
    /// `--node`).
    fn embedded(&self) -> bool {
        self.run_dir.is_none() && self.devices.is_empty() && self.remote.is_none()
    }

    /// Where the point's tenants get their storage: a directory, devices, a `--node`, or
    /// the embedded node (this plan's own, or the run's: `ctx_node`).
    fn backend<'s>(&'s self, ctx_node: Option<&'s EmbeddedNode>) -> Result<Backend<'s>, RunError> {
        Ok(if let Some(d) = &self.run_dir {
            Backend::Dir(&d.0.path)
        } else if !self.devices.is_empty() {
            Backend::Block(&self.devices)
        } else if let Some(r) = &self.remote {
            Backend::Remote(&r.0)
        } else {
            let node = match (&self.own_node, ctx_node) {
                (Some(n), _) | (None, Some(n)) => n,
                (None, None) => return Err(RunError::Plan("tenants: no embedded node".into())),
            };
            Backend::Embedded {
                node: node.node(),
                socket: node.socket(),
            }
        })
    }

    /// On the embedded node: the plan's policies checked, and a node of this plan's own
    /// when the harness has none or the plan emulates a controller.
    fn prepare_embedded(&mut self, ctx: &mut Prepare) -> Result<String, RunError> {
        check_target(&self.spec, TargetKind::Volumes).map_err(RunError::Plan)?;
        let names: Vec<String> = ctx
            .common
            .node
            .as_ref()
            .map(|n| n.policies.iter().map(|p| p.name.clone()).collect())
            .unwrap_or_default();
        self.spec.check_policies(&names).map_err(|e| {
            RunError::Plan(format!(
                "{e}; the embedded node has the plan's policies only (--node URL uses the node's too)"
            ))
        })?;
        // The node the tenants' volumes go on: the harness's (the plan's
        // policies), or our own when the plan declares none or asks for an
        // emulated controller.
        if ctx.node.is_none() || self.spec.capacity.is_some() {
            let mut cfg = match ctx.common.node.clone() {
                Some(c) => c,
                None => {
                    NodeSpec::parse("", "tenants").map_err(|e| RunError::Plan(e.to_string()))?
                }
            };
            cfg.capacity = self.spec.capacity;
            self.own_node = Some(EmbeddedNode::start(&cfg)?);
            self.own_cfg = Some(cfg.cfg);
        }
        Ok("embedded node (tenants)".to_string())
    }

    fn point(&mut self, index: usize, ctx: &mut RunContext) -> Result<(), RunError> {
        let n = self.spec.points[index];
        let Some(sweep) = &self.sweep else {
            return Err(RunError::Plan("tenants: the sweep was not prepared".into()));
        };
        // The embedded node is recorded with the run before the first point.
        if self.embedded() && index == 0 && ctx.node.is_none() {
            if let (Some(node), Some(cfg)) = (&self.own_node, &self.own_cfg) {
                ctx.record_node(node, cfg)?;
            }
        }
        let backend = self.backend(ctx.node)?;
        ctx.ui.print(&format!("  {n} tenant(s) per class ... "));
        let p = sweep.0.point(n, &backend);
        // A job per class: its verdicts (none where qoslab enforces no policy: a
        // directory's QoS is the target's own), and for fio classes the class's aggregate
        // result.
        let verdicts = if p.enforced {
            judge(&self.spec, &p)
        } else {
            Vec::new()
        };
        let fio_out = p
            .fio_output
            .as_deref()
            .and_then(|t| FioOutput::parse(t).ok());
        let devices = backend.devices();
        let mut first_job = None;
        for c in &self.spec.classes {
            // What limited the class, from the node's counters and the point's tool sets.
            let diagnosis = super::diagnose::class(&p, &c.name, &devices);
            let ceiling = p
                .volumes
                .iter()
                .find(|v| v.class == c.name)
                .map(|v| v.ceiling_iops as f64)
                .unwrap_or(0.0);
            self.seq += 1;
            let jobfile = if c.app.mounts() {
                format!(
                    "# tenants: class {}, app {}, {n} tenant(s)\n",
                    c.name,
                    c.app.name()
                )
            } else {
                p.fio_jobfile.clone().unwrap_or_default()
            };
            let id = ctx.begin_job(
                self.seq,
                KIND,
                &format!("n{n}/{}", c.name),
                None,
                1,
                &jobfile,
            )?;
            let vs = class_verdicts(c, n, &verdicts, ceiling, &diagnosis);
            self.failed_verdicts += vs
                .iter()
                .filter(|v| v.outcome == assess::Outcome::Fail)
                .count();
            self.inconclusive += vs
                .iter()
                .filter(|v| v.outcome == assess::Outcome::Inconclusive)
                .count();
            let sub = class_output(fio_out.as_ref(), &c.name, n);
            ctx.finish_job(id, Ok(&sub), &vs)?;
            ctx.store.set_assessment(id, Some(&diagnosis), None)?;
            first_job.get_or_insert(id);
        }
        // The point's tool sets, with its first job (the report charts them there).
        if let Some(id) = first_job {
            ctx.add_series(&JobSeries {
                job_id: id,
                hosts: p.hosts.clone(),
                node: p.node_samples.clone(),
                ..JobSeries::default()
            })?;
        }
        let summ = summarize(&p.runs);
        let failed: u64 = summ.iter().map(|s| s.failures.failed).sum();
        self.failed_iterations += failed;
        let parts = progress_parts(&self.spec, &summ);
        let line = format!("{n}: {}", parts.join("; "));
        ctx.ui.print(&format!(
            "{}\n    load: {}\n",
            parts.join("; "),
            load_text(&p.load)
        ));
        for e in &p.teardown_errors {
            ctx.ui.print(&format!("    teardown: {e}\n"));
        }
        self.lines.push(line);
        self.summary.extend(summary_rows(&self.spec, &p));
        self.tenants.extend(tenant_rows(&p));
        self.points.push(p);
        self.store_tables(ctx)
    }

    fn store_tables(&self, ctx: &mut RunContext) -> Result<(), RunError> {
        for (name, columns, rows) in [
            ("summary", SUMMARY_COLUMNS, &self.summary),
            ("tenant iterations", TENANT_COLUMNS, &self.tenants),
        ] {
            ctx.put_table(&SummaryTable::new(KIND, name, columns, rows.clone()))?;
        }
        for t in self.seed() {
            ctx.put_table(&SummaryTable {
                kind: SEED_KIND.into(),
                name: t.title.clone(),
                columns: t.columns.clone(),
                rows: t
                    .rows
                    .iter()
                    .map(|r| {
                        r.iter()
                            .map(|c| serde_json::Value::String(c.clone()))
                            .collect()
                    })
                    .collect(),
            })?;
        }
        Ok(())
    }

    /// Seed 004's tables per class over the points run so far, then the load per point.
    fn seed(&self) -> Vec<super::tables::SeedTable> {
        let mut t = self.class_tables();
        if !self.points.is_empty() {
            let load: Vec<(usize, super::load::LoadSample)> =
                self.points.iter().map(|p| (p.tenants, p.load)).collect();
            t.push(super::tables::load_table(&load));
        }
        t
    }

    fn class_tables(&self) -> Vec<super::tables::SeedTable> {
        let summaries: Vec<(usize, Vec<super::runner::ClassSummary>)> = self
            .points
            .iter()
            .map(|p| (p.tenants, summarize(&p.runs)))
            .collect();
        self.spec
            .classes
            .iter()
            .flat_map(|c| {
                let pts: Vec<(usize, &super::runner::ClassSummary)> = summaries
                    .iter()
                    .filter_map(|(n, ss)| ss.iter().find(|s| s.class == c.name).map(|s| (*n, s)))
                    .collect();
                seed_tables(&c.name, &pts)
            })
            .collect()
    }
}

/// A class's verdicts at point `n`: the point's checks of the class, judged against what
/// limited it (`ceiling`: its volumes' ceiling).
fn class_verdicts(
    c: &super::spec::ClassSpec,
    n: usize,
    verdicts: &[super::verdicts::PointVerdict],
    ceiling: f64,
    diagnosis: &assess::Diagnosis,
) -> Vec<Verdict> {
    verdicts
        .iter()
        .filter(|v| v.class == c.name)
        .map(|v| {
            let plain = Verdict::plain(
                format!("{} tenants of {} at {n}: {}", c.name, v.kind, v.expected),
                v.worst,
                v.expected.clone(),
                v.pass,
                format!(
                    "worst tenant {} at {:.2} IOPS{}",
                    v.worst_tenant,
                    v.worst,
                    if v.pass {
                        ""
                    } else {
                        " (or a failed iteration)"
                    }
                ),
            );
            super::diagnose::judged(plain, v, ceiling, diagnosis)
        })
        .collect()
}

/// The fio classes' output for `class` at point `n`: its tenants' jobs merged in one.
fn class_output(fio_out: Option<&FioOutput>, class: &str, n: usize) -> FioOutput {
    let prefix = format!("{class}-n{n}-");
    let parts: Vec<JobResult> = fio_out
        .map(|o| {
            o.jobs
                .iter()
                .filter(|j| j.jobname.starts_with(&prefix))
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    FioOutput {
        fio_version: fio_out
            .as_ref()
            .map(|o| o.fio_version.clone())
            .unwrap_or_default(),
        jobs: if parts.is_empty() {
            vec![]
        } else {
            vec![JobResult::merge(&parts)]
        },
        raw: String::new(),
        stderr: String::new(),
    }
}

/// A point's progress line: each class's main metric (median) and its failed iterations.
fn progress_parts(spec: &TenantsSpec, summ: &[super::runner::ClassSummary]) -> Vec<String> {
    spec.classes
        .iter()
        .filter_map(|c| {
            let s = summ.iter().find(|s| s.class == c.name)?;
            let (metric, unit) = super::rows::main_metric(&c.app);
            let d = if metric == "time_s" {
                s.time
            } else {
                s.metrics.get(metric).copied()
            };
            Some(format!(
                "{} {}{} {unit} median{}",
                c.name,
                d.map(|d| format!("{:.1}", d.median)).unwrap_or("-".into()),
                "",
                if s.failures.failed > 0 {
                    format!(", {} of {} failed", s.failures.failed, s.failures.total)
                } else {
                    String::new()
                }
            ))
        })
        .collect()
}

/// A point's load, in words: the node's CPU, the applications', the host's, qoslab's RSS.
fn load_text(l: &super::load::LoadSample) -> String {
    format!(
        "node {}, apps {:.0}%, host busy {:.0}% (peak {:.0}%), qoslab RSS {:.0} MiB",
        if l.node_cpu_pct.is_finite() {
            format!(
                "{:.0}% of a core (peak {:.0}%)",
                l.node_cpu_pct, l.node_cpu_peak_pct
            )
        } else {
            "- (not on this host)".to_string()
        },
        l.apps_cpu_pct,
        l.host_cpu_pct,
        l.host_cpu_peak_pct,
        l.rss_peak_mib
    )
}

impl FamilyPlan for TenantsPlan {
    /// `--runtime` / `--ramp` replace the fio classes' `[tenants]` runtime and ramp.
    fn configure(&mut self, _common: &mut Common, opts: &Options) -> Result<(), PlanError> {
        if let Some(r) = opts.runtime {
            self.spec.runtime = r;
        }
        if let Some(r) = opts.ramp {
            self.spec.ramp = r;
        }
        // The suites' --destroy-data DEVICE (repeatable) names block devices that may be
        // overwritten although they hold data.
        if let Some(m) = opts.args {
            if let Ok(Some(d)) = m.try_get_many::<String>("destroy_data") {
                self.destroy = d.cloned().collect();
            }
        }
        Ok(())
    }

    fn banner(&self, common: &Common, target: &Target, db: &Path) -> String {
        let classes: Vec<String> = self
            .spec
            .classes
            .iter()
            .map(|c| format!("{} ({})", c.name, c.app.name()))
            .collect();
        let on = match target {
            Target::Embedded => String::new(),
            Target::Node(n) => format!(
                "; volumes created on node {} (through its API, deleted after)",
                n.url()
            ),
            Target::Path(_) | Target::Devices(_) => {
                let judged: Vec<&str> = self
                    .spec
                    .classes
                    .iter()
                    .filter(|c| c.expect_floor.is_some() || c.expect_ceiling.is_some())
                    .map(|c| c.name.as_str())
                    .collect();
                let place = match target {
                    Target::Path(p) => format!("a directory per tenant under {}", p.display()),
                    other => format!("a block device per tenant ({})", other.describe()),
                };
                format!(
                    "; {place}: QoS policies {NOT_ENFORCED}{}",
                    if judged.is_empty() {
                        String::new()
                    } else {
                        format!(
                            " (the floor/ceiling expectations of {} are not judged)",
                            judged.join(", ")
                        )
                    }
                )
            }
            other => format!("; target {}", other.describe()),
        };
        format!(
            "qoslab bench: {}: tenants per class {:?}, {} iteration(s), classes {}{on}; results: {}",
            common.name,
            self.spec.points,
            self.spec.iterations,
            classes.join(", "),
            db.display()
        )
    }

    fn progress_line(&self) -> bool {
        false
    }

    fn prepare(&mut self, ctx: &mut Prepare) -> Result<RunHeader, RunError> {
        let header_target = match ctx.target {
            Target::Embedded => self.prepare_embedded(ctx)?,
            Target::Node(api) => {
                check_target(&self.spec, TargetKind::Volumes).map_err(RunError::Plan)?;
                if self.spec.capacity.is_some() {
                    return Err(RunError::Plan(format!(
                        "[tenants] capacity_iops/capacity_mbps emulate a controller on the embedded node: not with --node {} (the node's own capacity applies)",
                        api.url()
                    )));
                }
                let policies = ctx
                    .common
                    .node
                    .as_ref()
                    .map(|n| n.policies.clone())
                    .unwrap_or_default();
                let r = RemoteNode::open(api.clone(), &self.spec.classes, &policies)
                    .map_err(RunError::Plan)?;
                for v in &r.cleaned {
                    ctx.ui.print(&format!(
                        "qoslab: deleted volume {v} on {} (left by a killed tenants run of this host)\n",
                        r.url()
                    ));
                }
                for p in r.created_policies() {
                    ctx.ui.print(&format!(
                        "qoslab: created policy {p} on {} (deleted at the end)\n",
                        r.url()
                    ));
                }
                let t = format!("node {} (tenants' volumes through its API)", r.url());
                self.remote = Some(RemoteBox(r));
                t
            }
            Target::Path(p) => {
                check_target(&self.spec, TargetKind::Dir).map_err(RunError::Plan)?;
                let d = RunDir::create(p).map_err(RunError::Plan)?;
                let t = format!("directory {} (a subdirectory per tenant; QoS {NOT_ENFORCED})", d.path.display());
                self.run_dir = Some(RunDirBox(d));
                t
            }
            Target::Devices(devs) => {
                check_target(&self.spec, TargetKind::Block).map_err(RunError::Plan)?;
                let host = hosts::Host::local();
                for d in devs {
                    let dev = d.display().to_string();
                    let st = hosts::devices::inspect(&host, &dev)
                        .map_err(|e| RunError::Plan(format!("--target {dev}: {e}")))?;
                    if !st.mounts.is_empty() || st.swap {
                        return Err(RunError::Plan(format!(
                            "--target {dev}: in use ({}): a mounted or swap device is never overwritten, --destroy-data or not",
                            st.reasons().join("; ")
                        )));
                    }
                    hosts::devices::check_writable(&st, "localhost", &self.destroy)
                        .map_err(|e| RunError::Plan(format!("--target: {e}")))?;
                }
                self.devices = devs.clone();
                format!(
                    "{} (a device per tenant; QoS {NOT_ENFORCED})",
                    ctx.target.describe()
                )
            }
            other => {
                return Err(RunError::Plan(format!(
                    "the tenants family needs storage it can give each tenant: --target DIR (a directory per tenant), --target /dev/X,/dev/Y (a block device per tenant), --node URL without --volume (a volume per tenant through the node's API) or the embedded node; {} is not one of them (an NBD URI or a --volume is a single volume)",
                    other.describe()
                )))
            }
        };
        let scratch = harness::target::temp_dir("tenants")
            .map_err(|e| RunError::Plan(format!("tenants scratch directory: {e}")))?;
        let kind = if self.run_dir.is_some() {
            TargetKind::Dir
        } else if !self.devices.is_empty() {
            TargetKind::Block
        } else {
            TargetKind::Volumes
        };
        let sweep = Sweep::prepare(self.spec.clone(), &scratch, kind).map_err(RunError::Plan)?;
        for r in sweep.cleaned.iter().filter(|r| !r.live) {
            ctx.ui.print(&format!(
                "qoslab: cleaned a stale tenants run {} (pid {}): {} unmounted, {} loop device(s) detached\n",
                r.run,
                r.pid.map(|p| p.to_string()).unwrap_or("?".into()),
                r.undone.unmounted.len(),
                r.undone.loops_detached.len()
            ));
        }
        self.sweep = Some(SweepBox(sweep));
        self.scratch = Some(scratch);
        Ok(RunHeader {
            target: header_target,
            executor: "qoslab tenants (git, redis, local fio)".into(),
            runtime_s: self.spec.runtime,
            ramp_s: self.spec.ramp,
            fio_version: None,
        })
    }

    fn steps(&self) -> Vec<Step> {
        self.spec
            .points
            .iter()
            .map(|n| Step {
                label: format!("{n} tenant(s) per class"),
                expected_secs: self.spec.iterations as f64 * (self.spec.runtime + self.spec.ramp),
            })
            .collect()
    }

    fn run_step(&mut self, index: usize, ctx: &mut RunContext) -> Result<(), RunError> {
        self.point(index, ctx)
    }

    fn finish(&mut self, ctx: &mut RunContext) -> Result<(), RunError> {
        if let Some(s) = self.sweep.take() {
            if let Err(e) = s.0.close() {
                ctx.ui.print(&format!("qoslab: tenants teardown: {e}\n"));
            }
        }
        if let Some(n) = self.own_node.take() {
            n.stop();
        }
        if let Some(r) = self.remote.take() {
            for e in r.0.close() {
                ctx.ui.print(&format!("qoslab: tenants teardown: {e}\n"));
            }
        }
        // The run's directory and whatever the tenants left in it.
        self.run_dir.take();
        if let Some(d) = self.scratch.take() {
            let _ = std::fs::remove_dir_all(d);
        }
        Ok(())
    }

    fn summary(&self, _outcome: &Outcome) -> Result<String, RunError> {
        let mut out = String::from("\n");
        for t in self.seed() {
            out.push_str(&t.markdown());
            out.push('\n');
        }
        // Failed iterations are what the sweep measures (seed 004 counts them): they are in
        // the tables and here; they are not jobs in error.
        out.push_str(&format!("{} failed iteration(s)\n", self.failed_iterations));
        Ok(out)
    }
}

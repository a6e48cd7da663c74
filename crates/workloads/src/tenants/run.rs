//! The tenants plan as harness steps: one step per scale point, on the embedded node (the
//! plan's `[[policy]]`s and `[capacity]`; started here when the plan declares none). Per
//! point: a job per class (its verdicts, the fio classes' aggregate result), the summary
//! table (a row per point and class), the tenant table (a row per tenant and iteration)
//! and seed 004's tables, all stored as the point ends.

use std::path::Path;

use fio::{FioOutput, JobResult};
use harness::plan::{Common, PlanError};
use harness::series::JobSeries;
use harness::store::SummaryTable;
use harness::target::{EmbeddedNode, Target};
use harness::verdict::Verdict;
use harness::{
    FamilyPlan, Options, Outcome, Prepare, RunContext, RunError, RunHeader, Status, Step, Tally,
};
use storage_node::NodeConfig;

use super::point::PointResult;
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

impl TenantsPlan {
    pub fn new(spec: TenantsSpec) -> TenantsPlan {
        TenantsPlan {
            spec,
            scratch: None,
            sweep: None,
            own_node: None,
            own_cfg: None,
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

    fn point(&mut self, index: usize, ctx: &mut RunContext) -> Result<(), RunError> {
        let n = self.spec.points[index];
        if index == 0 && ctx.node.is_none() {
            if let (Some(node), Some(cfg)) = (&self.own_node, &self.own_cfg) {
                ctx.record_node(node, cfg)?;
            }
        }
        let node = match (&self.own_node, ctx.node) {
            (Some(n), _) | (None, Some(n)) => n,
            (None, None) => return Err(RunError::Plan("tenants: no embedded node".into())),
        };
        let Some(sweep) = &self.sweep else {
            return Err(RunError::Plan("tenants: the sweep was not prepared".into()));
        };
        ctx.ui.print(&format!("  {n} tenant(s) per class ... "));
        let p = sweep.0.point(n, node.node(), node.socket());
        // A job per class: its verdicts, and for fio classes the class's aggregate result.
        let verdicts = judge(&self.spec, &p);
        let fio_out = p
            .fio_output
            .as_deref()
            .and_then(|t| FioOutput::parse(t).ok());
        let mut first_job = None;
        let devices = toolsets::device::backing_devices(node.node().data_dir());
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
            let vs: Vec<Verdict> = verdicts
                .iter()
                .filter(|v| v.class == c.name)
                .map(|v| {
                    let plain = Verdict {
                        expectation: format!(
                            "{} tenants of {} at {n}: {}",
                            c.name, v.kind, v.expected
                        ),
                        measured: v.worst,
                        bound: v.expected.clone(),
                        passed: v.pass,
                        detail: format!(
                            "worst tenant {} at {:.2} IOPS{}",
                            v.worst_tenant,
                            v.worst,
                            if v.pass {
                                ""
                            } else {
                                " (or a failed iteration)"
                            }
                        ),
                        outcome: assess::Outcome::Fail,
                        reason: None,
                    }
                    .settled();
                    super::diagnose::judged(plain, v, ceiling, &diagnosis)
                })
                .collect();
            self.failed_verdicts += vs
                .iter()
                .filter(|v| v.outcome == assess::Outcome::Fail)
                .count();
            self.inconclusive += vs
                .iter()
                .filter(|v| v.outcome == assess::Outcome::Inconclusive)
                .count();
            let prefix = format!("{}-n{n}-", c.name);
            let parts: Vec<JobResult> = fio_out
                .as_ref()
                .map(|o| {
                    o.jobs
                        .iter()
                        .filter(|j| j.jobname.starts_with(&prefix))
                        .cloned()
                        .collect()
                })
                .unwrap_or_default();
            let sub = FioOutput {
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
            };
            ctx.finish_job(id, Ok(&sub), &vs)?;
            ctx.store.set_assessment(id, Some(&diagnosis), None)?;
            first_job.get_or_insert(id);
        }
        // The point's tool sets, with its first job (the report charts them there).
        if let Some(id) = first_job {
            ctx.add_series(&JobSeries {
                job_id: id,
                hosts: p.hosts.clone(),
                ..JobSeries::default()
            })?;
        }
        let summ = summarize(&p.runs);
        let failed: u64 = summ.iter().map(|s| s.failures.failed).sum();
        self.failed_iterations += failed;
        let parts: Vec<String> = self
            .spec
            .classes
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
            .collect();
        let line = format!("{n}: {}", parts.join("; "));
        let l = &p.load;
        ctx.ui.print(&format!(
            "{}\n    load: node {:.0}% of a core (peak {:.0}%), apps {:.0}%, host busy {:.0}% (peak {:.0}%), qoslab RSS {:.0} MiB\n",
            parts.join("; "),
            l.node_cpu_pct,
            l.node_cpu_peak_pct,
            l.apps_cpu_pct,
            l.host_cpu_pct,
            l.host_cpu_peak_pct,
            l.rss_peak_mib
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
        let cols = |c: &[&str]| c.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        ctx.put_table(&SummaryTable {
            kind: KIND.into(),
            name: "summary".into(),
            columns: cols(SUMMARY_COLUMNS),
            rows: self.summary.clone(),
        })?;
        ctx.put_table(&SummaryTable {
            kind: KIND.into(),
            name: "tenant iterations".into(),
            columns: cols(TENANT_COLUMNS),
            rows: self.tenants.clone(),
        })?;
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

impl FamilyPlan for TenantsPlan {
    /// `--runtime` / `--ramp` replace the fio classes' `[tenants]` runtime and ramp.
    fn configure(&mut self, _common: &mut Common, opts: &Options) -> Result<(), PlanError> {
        if let Some(r) = opts.runtime {
            self.spec.runtime = r;
        }
        if let Some(r) = opts.ramp {
            self.spec.ramp = r;
        }
        Ok(())
    }

    fn banner(&self, common: &Common, _target: &Target, db: &Path) -> String {
        let classes: Vec<String> = self
            .spec
            .classes
            .iter()
            .map(|c| format!("{} ({})", c.name, c.app.name()))
            .collect();
        format!(
            "qoslab bench: {}: tenants per class {:?}, {} iteration(s), classes {}; results: {}",
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
        if *ctx.target != Target::Embedded {
            return Err(RunError::Plan(format!(
                "the tenants family creates its tenants' volumes on the embedded node; target {} is not supported yet",
                ctx.target.describe()
            )));
        }
        // The node the tenants' volumes go on: the harness's (the plan's policies), or our
        // own when the plan declares none or asks for an emulated controller.
        if ctx.node.is_none() || self.spec.capacity.is_some() {
            let mut cfg = match ctx.common.node.clone() {
                Some(c) => c,
                None => {
                    NodeConfig::parse("", "tenants").map_err(|e| RunError::Plan(e.to_string()))?
                }
            };
            cfg.capacity = self.spec.capacity;
            self.own_node = Some(EmbeddedNode::start(&cfg)?);
            self.own_cfg = Some(cfg);
        }
        let scratch = harness::target::temp_dir("tenants")
            .map_err(|e| RunError::Plan(format!("tenants scratch directory: {e}")))?;
        let sweep = Sweep::prepare(self.spec.clone(), &scratch).map_err(RunError::Plan)?;
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
            target: "embedded node (tenants)".into(),
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

    fn finish(&mut self, ctx: &mut RunContext) -> Result<Tally, RunError> {
        if let Some(s) = self.sweep.take() {
            if let Err(e) = s.0.close() {
                ctx.ui.print(&format!("qoslab: tenants teardown: {e}\n"));
            }
        }
        if let Some(n) = self.own_node.take() {
            n.stop();
        }
        if let Some(d) = self.scratch.take() {
            let _ = std::fs::remove_dir_all(d);
        }
        // Failed iterations are what the sweep measures (seed 004 counts them): they are in
        // the tables and the summary, and only the plan's expectations decide the status.
        let status = if self.failed_verdicts > 0 {
            Status::Failed
        } else if self.inconclusive > 0 {
            Status::Inconclusive
        } else {
            Status::Passed
        };
        Ok(Tally {
            status,
            failed_jobs: 0,
            failed_verdicts: self.failed_verdicts,
        })
    }

    fn summary(&self, outcome: &Outcome, db: &Path) -> Result<String, RunError> {
        let rec = &outcome.record;
        let mut out = String::from("\n");
        for t in self.seed() {
            out.push_str(&t.markdown());
            out.push('\n');
        }
        out.push_str(&format!(
            "run {}: {} (verdicts: {}; {} failed iteration(s))\n",
            rec.id,
            rec.status.to_uppercase(),
            rec.tally().summary(),
            self.failed_iterations
        ));
        for j in &rec.jobs {
            for v in j.verdicts.iter().filter(|v| !v.passed) {
                out.push_str(&format!(
                    "  {}: {}: {}: {}{}\n",
                    if v.outcome == assess::Outcome::Inconclusive {
                        "INCONCLUSIVE"
                    } else {
                        "FAILED"
                    },
                    j.name,
                    v.expectation,
                    v.detail,
                    v.reason
                        .as_ref()
                        .map(|r| format!("; {r}"))
                        .unwrap_or_default()
                ));
            }
        }
        out.push_str(&format!(
            "stored in {} as run {}; `qoslab report {} --db {}` draws the degradation curves\n",
            db.display(),
            rec.id,
            rec.id,
            db.display()
        ));
        Ok(out)
    }
}

//! Running an S3 plan: one step per test and iteration. Each step runs the test on every
//! driver ([`super::coord`]), analyses the records warp's way, and stores one job (its
//! per-operation results per host and for all hosts, the segments as its series, its
//! verdicts) and the test's summary table, as it ends.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use harness::ops::{primary, OpResult};
use harness::plan::{Common, PlanError};
use harness::series::JobSeries;
use harness::target::{Target, TargetError};
use harness::verdict::Verdict;
use harness::{FamilyPlan, Options, Prepare, RunContext, RunError, RunHeader, Step};
use hosts::{Host, SshConfig};
use loadgen::s3::analysis::{analyze, HostRecords};
use loadgen::s3::{Endpoint, Stop, TestSpec};

use super::cli::{endpoint_url, process_env, resolve, S3Args};
use super::coord::{self, Handle, Iteration};
use super::embedded::EmbeddedS3;
use super::plan::{Buckets, S3Plan, TestPlan};
use super::remote;
use super::results::{lines, row, store_form, table};

/// The analysis's segment length.
const SEGMENT_NS: u64 = 1_000_000_000;

/// An S3 plan as steps, and what it has measured so far.
pub struct S3Run {
    pub plan: S3Plan,
    endpoint: Option<Endpoint>,
    embedded: Option<EmbeddedS3>,
    hosts: Vec<Host>,
    /// Per host: the binary's path there, and whether this run copied it.
    bins: Vec<(String, bool)>,
    runtime: f64,
    ramp: f64,
    iterations: u32,
    tag: String,
    seq: u32,
    /// Per test: its table's rows so far.
    rows: Vec<Vec<Vec<serde_json::Value>>>,
}

impl std::fmt::Debug for S3Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3Run")
            .field("plan", &self.plan)
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

fn tag() -> String {
    let n = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    format!("{:08x}", (n ^ (u64::from(std::process::id()) << 32)) as u32)
}

/// A stable seed for a test, iteration and driver (identical size sequences run to run).
fn seed(test: &str, k: u32, driver: usize) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in test.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
    }
    h ^ (u64::from(k) << 40) ^ (driver as u64)
}

impl S3Run {
    /// How long a test's drivers may run: its ramp and runtime, two request timeouts and
    /// 30 s; a day for a count of operations.
    fn run_bound(&self, t: &TestPlan) -> Duration {
        if t.ops.is_some() {
            Duration::from_secs(24 * 3600)
        } else {
            Duration::from_secs_f64(
                self.ramp + self.runtime_of(t) + 2.0 * self.plan.conn.timeout_s + 30.0,
            )
        }
    }

    /// The test's `n` drivers: here, or one per load generator (its binary copied on the
    /// first iteration); on an error, those started are closed.
    fn handles(&self, n: usize, it: u32, lease: Duration) -> Result<Vec<Handle>, String> {
        let mut handles = Vec::new();
        for k in 0..n {
            if self.hosts.is_empty() {
                handles.push(Handle::local(if n == 1 {
                    String::new()
                } else {
                    format!("local-{k}")
                }));
            } else {
                let (bin, copied) = &self.bins[k];
                match Handle::remote(&self.hosts[k], bin, *copied && it == 1, lease) {
                    Ok(h) => handles.push(h),
                    Err(e) => {
                        for h in handles {
                            h.close();
                        }
                        return Err(e);
                    }
                }
            }
        }
        Ok(handles)
    }

    pub fn new(plan: S3Plan) -> S3Run {
        let n = plan.tests.len();
        S3Run {
            plan,
            endpoint: None,
            embedded: None,
            hosts: Vec::new(),
            bins: Vec::new(),
            runtime: harness::plan::DEFAULT_RUNTIME,
            ramp: harness::plan::DEFAULT_RAMP,
            iterations: 1,
            tag: tag(),
            seq: 0,
            rows: vec![Vec::new(); n],
        }
    }

    /// The endpoint the run measures (after `prepare`).
    pub fn endpoint(&self) -> Option<&Endpoint> {
        self.endpoint.as_ref()
    }

    fn runtime_of(&self, t: &TestPlan) -> f64 {
        t.runtime.unwrap_or(self.runtime)
    }

    /// How many drivers a test runs on.
    fn workers(&self, t: &TestPlan) -> usize {
        match (t.workers, self.plan.conn.hosts.len()) {
            (Some(w), _) => w as usize,
            (None, 0) => 1,
            (None, h) => h,
        }
    }

    /// The test's buckets for driver `k` of `n` (iteration `it`).
    fn buckets(&self, t: &TestPlan, k: usize, it: u32) -> Vec<String> {
        match &t.buckets {
            Buckets::Named(b) => vec![b.clone()],
            Buckets::Prefixed { prefix, count } => {
                let n = count.draw(seed(&t.name, it, 0xb0c4));
                (0..n)
                    .map(|i| {
                        if t.share_buckets {
                            format!("{prefix}{i}")
                        } else {
                            format!("{prefix}{i}-w{k}")
                        }
                    })
                    .collect()
            }
        }
    }

    /// How the test's buckets are named in job rows (`volume`): the name, or the first
    /// and last of a numbered set.
    fn bucket_label(&self, t: &TestPlan) -> String {
        match &t.buckets {
            Buckets::Named(b) => b.clone(),
            Buckets::Prefixed { prefix, count } => {
                let w = if t.share_buckets { "" } else { "-wK" };
                match count {
                    super::plan::Count::Constant(1) => format!("{prefix}0{w}"),
                    super::plan::Count::Constant(n) => format!("{prefix}{{0..{}}}{w}", n - 1),
                    super::plan::Count::Uniform { min, max } => {
                        format!("{prefix}{{0..{min}-{max}}}{w}")
                    }
                }
            }
        }
    }

    fn spec(&self, t: &TestPlan, k: usize, it: u32) -> TestSpec {
        TestSpec {
            name: t.name.clone(),
            weights: t.weights,
            sizes: t.sizes,
            objects: t.objects.draw(seed(&t.name, it, 0x0b1)),
            buckets: self.buckets(t, k, it),
            prefix: format!("{}/{}-{it}/w{k}/", t.prefix, self.tag),
            clients: t.clients,
            stop: match t.ops {
                Some(n) => Stop::Ops(n),
                None => Stop::Runtime(Duration::from_secs_f64(self.ramp + self.runtime_of(t))),
            },
            list_max_keys: 1000,
            timeout: Duration::from_secs_f64(self.plan.conn.timeout_s),
            seed: seed(&t.name, it, k),
        }
    }
}

impl FamilyPlan for S3Run {
    fn configure(&mut self, common: &mut Common, opts: &Options) -> Result<(), PlanError> {
        if !opts.clients.is_empty() {
            return Err(PlanError(
                "--client is fio's client/server mode; the s3 family runs its own driver on each load generator: --s3-hosts HOST,...".into(),
            ));
        }
        if common.node.is_some() {
            return Err(PlanError(format!(
                "{}: an S3 plan declares no [[volume]], [[policy]] or [capacity] (buckets and their policies live on the S3 node: `qoslab s3 bucket create --qos-policy ...`)",
                common.origin
            )));
        }
        let args = match opts.args {
            Some(m) => <S3Args as clap::FromArgMatches>::from_arg_matches(m)
                .map_err(|e| PlanError(e.to_string()))?,
            None => S3Args::default(),
        };
        if common.origin == super::PROFILE_ORIGIN {
            self.plan.tests = vec![args.profile_test().map_err(PlanError)?];
            self.rows = vec![Vec::new()];
        } else if let Some(o) = args.profile_options() {
            return Err(PlanError(format!(
                "{o} shapes --profile s3's test; a plan sets it in its [[s3.test]] tables"
            )));
        }
        args.apply_conn(&mut self.plan.conn).map_err(PlanError)?;
        if let Some(r) = opts.runtime {
            common.runtime = r;
            for t in &mut self.plan.tests {
                if t.ops.is_none() {
                    t.runtime = None;
                }
            }
        }
        if let Some(r) = opts.ramp {
            common.ramp = r;
        }
        self.runtime = common.runtime;
        self.ramp = common.ramp;
        self.iterations = common.iterations;
        let c = &self.plan.conn;
        for t in &self.plan.tests {
            let w = self.workers(t);
            if !c.hosts.is_empty() && w > c.hosts.len() {
                return Err(PlanError(format!(
                    "{}:{}: [[s3.test]] {:?}: workers = {w} but {} load generator(s) are named ({})",
                    common.origin,
                    t.line,
                    t.name,
                    c.hosts.len(),
                    c.hosts.join(", ")
                )));
            }
        }
        // Keys are checked now, not after the first test.
        if let Some(url) = endpoint_url(c, &process_env) {
            self.endpoint = Some(resolve(c, url, &process_env).map_err(PlanError)?);
        }
        Ok(())
    }

    fn banner(&self, common: &Common, _target: &Target, db: &Path) -> String {
        let secs: f64 = self
            .plan
            .tests
            .iter()
            .map(|t| {
                if t.ops.is_some() {
                    0.0
                } else {
                    self.ramp + self.runtime_of(t)
                }
            })
            .sum::<f64>()
            * f64::from(self.iterations);
        format!(
            "qoslab bench: s3 {} ({} test(s) × {} iteration(s), ~{secs:.0} s) on {} from {}; results: {}",
            common.name,
            self.plan.tests.len(),
            self.iterations,
            self.endpoint
                .as_ref()
                .map(|e| e.url.clone())
                .unwrap_or_else(|| "an embedded qoslab S3 node".into()),
            if self.plan.conn.hosts.is_empty() {
                "this machine".to_string()
            } else {
                self.plan.conn.hosts.join(", ")
            },
            db.display()
        )
    }

    fn prepare(&mut self, ctx: &mut Prepare) -> Result<RunHeader, RunError> {
        if *ctx.target != Target::Embedded {
            return Err(RunError::Plan(format!(
                "--target {}: the s3 family measures an S3 endpoint: give --s3-endpoint URL or [s3] endpoint (--target and --node name NBD and file targets)",
                ctx.target.describe()
            )));
        }
        if self.endpoint.is_none() {
            let e = EmbeddedS3::start().map_err(|e| RunError::Target(TargetError::Node(e)))?;
            self.endpoint = Some(e.endpoint.clone());
            self.embedded = Some(e);
        }
        let c = &self.plan.conn;
        if !c.hosts.is_empty() {
            let cfg = Arc::new(SshConfig {
                options: c.ssh_options.clone(),
                ..SshConfig::default()
            });
            // Held from here on, so that the run's drop closes their master connections
            // and removes the control directory on every path (an error, a signal).
            self.hosts = hosts::parse_hosts(&c.hosts.join(","), cfg)
                .map_err(|e| RunError::Plan(format!("load generators: {e}")))?;
            hosts::preflight(&self.hosts, &["timeout"])
                .map_err(|e| RunError::Plan(format!("load generators: {e}")))?;
            let (exe, digest) = remote::this_binary().map_err(RunError::Plan)?;
            for h in &self.hosts {
                let b = remote::deploy(h, &exe, &digest).map_err(RunError::Plan)?;
                ctx.ui.print(&format!(
                    "load generator {}: {} {}\n",
                    h.name,
                    if b.1 {
                        "copied qoslab to"
                    } else {
                        "qoslab already at"
                    },
                    b.0
                ));
                self.bins.push(b);
            }
        }
        let url = self
            .endpoint
            .as_ref()
            .map(|e| e.url.clone())
            .unwrap_or_default();
        Ok(RunHeader {
            target: match &self.embedded {
                Some(_) => format!("{url} (embedded qoslab S3 node)"),
                None => url,
            },
            executor: if self.hosts.is_empty() {
                "qoslab s3 driver (this process)".into()
            } else {
                format!(
                    "qoslab s3 driver on {} load generator(s): {}",
                    self.hosts.len(),
                    self.plan.conn.hosts.join(", ")
                )
            },
            runtime_s: self.runtime,
            ramp_s: self.ramp,
            fio_version: Some("not used (qoslab s3 driver)".into()),
        })
    }

    fn steps(&self) -> Vec<Step> {
        let mut v = Vec::new();
        for t in &self.plan.tests {
            for k in 1..=self.iterations {
                v.push(Step {
                    label: if self.iterations > 1 {
                        format!("s3 {} (iteration {k})", t.name)
                    } else {
                        format!("s3 {}", t.name)
                    },
                    expected_secs: if t.ops.is_some() {
                        self.ramp
                    } else {
                        self.ramp + self.runtime_of(t)
                    },
                });
            }
        }
        v
    }

    fn run_step(&mut self, index: usize, ctx: &mut RunContext) -> Result<(), RunError> {
        let ti = index / self.iterations as usize;
        let it = (index % self.iterations as usize) as u32 + 1;
        let t = self.plan.tests[ti].clone();
        let endpoint = self
            .endpoint
            .clone()
            .ok_or_else(|| RunError::Plan("s3: the run was not prepared".into()))?;
        let n = self.workers(&t);
        let specs: Vec<TestSpec> = (0..n).map(|k| self.spec(&t, k, it)).collect();
        self.seq += 1;
        let mut described = serde_json::json!({
            "schema": "qoslab.s3.test/1",
            "test": t.name,
            "iteration": it,
            "endpoint": endpoint.url,
            "region": endpoint.region,
            "drivers": specs,
        });
        let job = ctx.begin_job(
            self.seq,
            "s3",
            &t.name,
            Some(&self.bucket_label(&t)),
            it,
            &format!(
                "# qoslab s3 driver, not fio\n{}\n",
                serde_json::to_string_pretty(&described).unwrap_or_default()
            ),
        )?;
        let run_bound = self.run_bound(&t);
        let lease = run_bound + Duration::from_secs(1800);
        let handles = match self.handles(n, it, lease) {
            Ok(h) => h,
            Err(e) => {
                ctx.finish_op_job(job, Err(&e), &[], &[])?;
                ctx.ui.print(&format!("  {} #{it}: ERROR {e}\n", t.name));
                return Ok(());
            }
        };
        // This machine's tool sets while the drivers run: a starved host makes a shortfall
        // inconclusive, as for fio's jobs (docs/DIAGNOSIS.md).
        let sampler = ctx
            .recorder
            .tools()
            .then(|| toolsets::Sampler::local(toolsets::Roles::harness_only(None)));
        let out = coord::run(
            Iteration {
                handles,
                specs,
                shared_buckets: matches!(t.buckets, Buckets::Named(_)) || t.share_buckets,
                clean_after: t.clean_after,
                run_timeout: run_bound,
            },
            &endpoint,
        );
        described["drivers"] = serde_json::to_value(&out.reports).unwrap_or_default();
        described["created_buckets"] = serde_json::json!(out.created);
        described["cleanup_errors"] = serde_json::json!(out.cleanup_errors);
        if let Some(e) = &out.error {
            described["error"] = serde_json::json!(e);
            ctx.finish_op_job(job, Err(e), &[], &[])?;
            ctx.ui.print(&format!("  {} #{it}: ERROR {e}\n", t.name));
            return Ok(());
        }
        let skip = if t.ops.is_some() {
            0
        } else {
            (self.ramp * 1e9) as u64
        };
        let hr: Vec<HostRecords> = out
            .records
            .iter()
            .map(|(h, ops)| HostRecords { host: h, ops })
            .collect();
        let a = analyze(&hr, skip, SEGMENT_NS);
        described["window"] = serde_json::to_value(a.window).unwrap_or_default();
        let (ops, samples) = store_form(&a);
        let main = primary(&ops);
        let hosts = sampler.map(toolsets::Sampler::stop).unwrap_or_default();
        let starved = hosts
            .iter()
            .filter(|h| !h.samples.is_empty())
            .find_map(|h| assess::starvation(&assess::figures::summarize(h, 0, u64::MAX, &[])));
        let verdicts = test_verdicts(&t, &main, starved.as_ref(), &out);
        if !a.window.trimmed {
            ctx.ui.print(&format!(
                "  {} #{it}: note: no moment when every client was running (too few requests); the whole test is measured\n",
                t.name
            ));
        }
        ctx.finish_op_job(job, Ok(&described.to_string()), &ops, &verdicts)?;
        ctx.add_series(&JobSeries {
            job_id: job,
            ops: samples,
            hosts,
            ..JobSeries::default()
        })?;
        if let Some(d) = &starved {
            ctx.store.set_assessment(job, Some(d), None)?;
        }
        for o in &ops {
            self.rows[ti].push(row(it, o));
        }
        ctx.put_table(&table(&t.name, self.rows[ti].clone()))?;
        let text = lines(&t.name, it, &main);
        for v in verdicts.iter().filter(|v| !v.passed) {
            let (label, note) = (v.label(), v.reason_note());
            let (e, d) = (&v.expectation, &v.detail);
            ctx.ui
                .print(&format!("  {} #{it}: {label} {e}: {d}{note}\n", t.name));
        }
        ctx.ui.print(&text);
        Ok(())
    }

    fn finish(&mut self, _ctx: &mut RunContext) -> Result<(), RunError> {
        self.embedded = None;
        Ok(())
    }
}

impl Drop for S3Run {
    fn drop(&mut self) {
        hosts::disconnect_all(&self.hosts);
    }
}

fn error_codes(ops: &[&OpResult]) -> String {
    let mut all: std::collections::BTreeMap<&str, u64> = Default::default();
    for o in ops {
        for (c, n) in &o.error_codes {
            *all.entry(c.as_str()).or_default() += n;
        }
    }
    all.iter()
        .map(|(c, n)| format!("{c} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A test's verdicts: its expectations on the primary operations, then no failed
/// requests, every client to the end, and `clean_after` clean.
fn test_verdicts(
    t: &TestPlan,
    main: &[&OpResult],
    starved: Option<&assess::Diagnosis>,
    out: &coord::Outcome,
) -> Vec<Verdict> {
    let mut verdicts: Vec<Verdict> = t.expect.iter().map(|e| e.check_on(main, starved)).collect();
    let errors: u64 = main.iter().map(|o| o.errors).sum();
    if errors > 0 {
        verdicts.push(Verdict::plain(
            "no failed requests".into(),
            errors as f64,
            "= 0".into(),
            false,
            format!(
                "{errors} request(s) failed: {}; first: {}",
                error_codes(main),
                out.reports
                    .iter()
                    .flat_map(|r| r.outcome.first_errors.first())
                    .next()
                    .map(String::as_str)
                    .unwrap_or("-")
            ),
        ));
    }
    if let Some(why) = out
        .reports
        .iter()
        .find_map(|r| r.outcome.stopped_early.clone())
    {
        verdicts.push(Verdict::plain(
            "every client ran to the end".into(),
            0.0,
            String::new(),
            false,
            why,
        ));
    }
    if !out.cleanup_errors.is_empty() {
        verdicts.push(Verdict::plain(
            "clean_after removed everything the test wrote".into(),
            out.cleanup_errors.len() as f64,
            "= 0".into(),
            false,
            out.cleanup_errors.join("; "),
        ));
    }
    verdicts
}

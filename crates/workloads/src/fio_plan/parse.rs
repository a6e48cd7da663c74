//! A plan's `[[workload]]` tables, validated once.
//!
//! ```toml
//! [[workload]]
//! name = "randread"
//! volume = "vol500"
//! fio = { rw = "randread", bs = "4k", iodepth = 16 }
//! expect = ["iops <= 500 +-3%", "iops >= policy.ceiling * 0.9"]
//!
//! [[workload]]
//! name = "db"
//! profile = "dbench"                 # a job set by name
//! expect = { read_iops = ["iops_mean ~= policy.ceiling +-3%"] }
//! ```

use std::collections::BTreeMap;

use harness::plan::fio_options::{self, FioTable};
use harness::plan::{parse_duration, Common, PlanError, PlanSource};
use harness::verdict::Expectation;
use harness::{JobSet, Registry};
use serde::Deserialize;
use toml::Spanned;

/// What a job's name (a workload's, a ramp system's) may be: it names files and rows.
pub const JOB_NAME_RULE: &str =
    "allowed 1-64 of A-Z a-z 0-9 _ - ., not starting with \"global\" (fio reads such a section as [global])";

/// Whether `name` follows [`JOB_NAME_RULE`].
pub fn valid_job_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && !name.starts_with("global")
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
}

/// What a workload runs.
#[derive(Clone)]
pub enum Workload {
    /// A job set by name (`profile = "dbench"`), resolved through the registry.
    Set {
        name: String,
        set: &'static dyn JobSet,
    },
    /// One fio job from raw options.
    Fio(Vec<(String, String)>),
}

impl std::fmt::Debug for Workload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Workload::Set { name, .. } => f.debug_tuple("Set").field(name).finish(),
            Workload::Fio(o) => f.debug_tuple("Fio").field(o).finish(),
        }
    }
}

/// One workload of a plan.
#[derive(Debug, Clone)]
pub struct WorkloadSpec {
    pub name: String,
    /// Where the plan wrote what it runs (`plan.toml:12`: its `fio` or `profile` key).
    pub at: String,
    /// Why its volume cannot be on the embedded node (not among the plan's [[volume]]s).
    pub undeclared: Option<String>,
    /// Volume of the embedded node (None: the only volume, or a non-embedded target).
    pub volume: Option<String>,
    pub workload: Workload,
    pub runtime: Option<f64>,
    pub ramp: Option<f64>,
    /// Runtimes of single jobs of a job set (`job_runtime = { read_iops = "4s" }`): the jobs
    /// whose windows a verdict judges can run longer than the rest.
    pub job_runtime: Vec<(String, f64)>,
    /// Expectations, keyed by fio job name (`None` = every job of the workload).
    pub expect: Vec<(Option<String>, Expectation)>,
}

#[derive(Deserialize)]
struct View {
    #[serde(default)]
    workload: Vec<Spanned<RawWorkload>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWorkload {
    name: Option<String>,
    volume: Option<String>,
    profile: Option<Spanned<String>>,
    /// Not `Spanned`: toml cannot give a dotted table (`fio.rw = ...`) a span; each value
    /// has its own.
    fio: Option<FioTable>,
    runtime: Option<Spanned<toml::Value>>,
    ramp: Option<Spanned<toml::Value>>,
    job_runtime: Option<Spanned<toml::Table>>,
    expect: Option<Spanned<toml::Value>>,
}

/// Parse and check a plan's `[[workload]]` tables.
pub fn workloads(
    src: &PlanSource,
    common: &Common,
    registry: &Registry,
) -> Result<Vec<WorkloadSpec>, PlanError> {
    let view: View = src.deserialize()?;
    let at = |span: std::ops::Range<usize>| src.at(span.start);
    let volumes = common.volumes();
    let sets = registry.job_set_names().join(", ");
    let mut workloads = Vec::new();
    let mut names = std::collections::BTreeSet::new();
    for (i, w) in view.workload.iter().enumerate() {
        let wat = at(w.span());
        let w = w.get_ref();
        let name = w
            .name
            .clone()
            .unwrap_or_else(|| format!("workload{}", i + 1));
        let ctx = format!("workload {name:?}: ");
        if !valid_job_name(&name) {
            return Err(PlanError(format!(
                "{wat}: workload.name = {name:?}: {JOB_NAME_RULE}"
            )));
        }
        if !names.insert(name.clone()) {
            return Err(PlanError(format!(
                "{wat}: workload.name = {name:?} is used twice"
            )));
        }
        // A volume the plan does not declare may be on a `--node` (looked up there); on
        // the embedded node it is an error (`FioPlan::prepare` says this).
        let undeclared = match &w.volume {
            Some(v) if common.node.is_some() && !volumes.contains(v) => Some(format!(
                "{wat}: {ctx}volume = {v:?} is not declared; declared volumes: {} (a volume \
                 of a running node: --node URL)",
                volumes.join(", ")
            )),
            _ => None,
        };
        let volume = match &w.volume {
            Some(v) => Some(v.clone()),
            None if volumes.len() > 1 => {
                return Err(PlanError(format!(
                    "{wat}: {ctx}volume is required when the plan declares several volumes ({})",
                    volumes.join(", ")
                )));
            }
            None => volumes.first().cloned(),
        };
        let what_at = match (&w.profile, &w.fio) {
            (_, Some(t)) => t
                .values()
                .map(|v| v.span())
                .min_by_key(|s| s.start)
                .map_or_else(|| wat.clone(), at),
            (Some(p), _) => at(p.span()),
            _ => wat.clone(),
        };
        let workload = match (&w.profile, &w.fio) {
            (Some(p), None) => match registry.job_set(p.get_ref()) {
                Some(set) => Workload::Set {
                    name: p.get_ref().clone(),
                    set,
                },
                None => {
                    return Err(PlanError(format!(
                        "{}: {ctx}profile = {:?}: allowed profiles: {sets}",
                        at(p.span()),
                        p.get_ref(),
                    )));
                }
            },
            (None, Some(t)) => Workload::Fio(fio_options::options(src, t, &ctx)?),
            _ => {
                return Err(PlanError(format!(
                    "{wat}: {ctx}set exactly one of profile (allowed: {sets}) or fio (a table of fio job options)"
                )))
            }
        };
        let dur = |v: &Option<Spanned<toml::Value>>, key: &str| -> Result<Option<f64>, PlanError> {
            match v {
                None => Ok(None),
                Some(s) => parse_duration(s.get_ref())
                    .map(Some)
                    .map_err(|m| PlanError(format!("{}: {ctx}{key}: {m}", at(s.span())))),
            }
        };
        let runtime = dur(&w.runtime, "runtime")?;
        let ramp = dur(&w.ramp, "ramp")?;
        let job_names: Vec<String> = match &workload {
            Workload::Set { set, .. } => set.jobs().into_iter().map(|(n, _)| n).collect(),
            Workload::Fio(_) => vec![name.clone()],
        };
        let job_runtime = job_runtime(src, w.job_runtime.as_ref(), &ctx, &job_names)?;
        let expect = match &w.expect {
            None => Vec::new(),
            Some(e) => parse_expect(e.get_ref(), &at(e.span()), &ctx, &job_names)?,
        };
        workloads.push(WorkloadSpec {
            name,
            at: what_at,
            undeclared,
            volume,
            workload,
            runtime,
            ramp,
            job_runtime,
            expect,
        });
    }
    Ok(workloads)
}

/// `job_runtime = { JOB = DURATION }`: a runtime per fio job (one of `job_names`).
fn job_runtime(
    src: &PlanSource,
    t: Option<&Spanned<toml::Table>>,
    ctx: &str,
    job_names: &[String],
) -> Result<Vec<(String, f64)>, PlanError> {
    let mut job_runtime = Vec::new();
    if let Some(t) = t {
        let tat = src.at(t.span().start);
        for (job, v) in t.get_ref() {
            if !job_names.contains(job) {
                return Err(PlanError(format!(
                    "{tat}: {ctx}job_runtime.{job}: no such job; jobs: {}",
                    job_names.join(", ")
                )));
            }
            let d = parse_duration(v)
                .map_err(|m| PlanError(format!("{tat}: {ctx}job_runtime.{job}: {m}")))?;
            job_runtime.push((job.clone(), d));
        }
    }
    Ok(job_runtime)
}

/// `expect = [...]` (every job) or `expect = { JOB = [...] }` (by fio job name, one of
/// `jobs`).
pub fn parse_expect(
    v: &toml::Value,
    at: &str,
    ctx: &str,
    jobs: &[String],
) -> Result<Vec<(Option<String>, Expectation)>, PlanError> {
    let list = |v: &toml::Value, key: &str| -> Result<Vec<Expectation>, PlanError> {
        let arr = v.as_array().ok_or_else(|| {
            PlanError(format!(
                "{at}: {ctx}{key}: expected an array of strings like [\"iops <= 500 +-3%\"]"
            ))
        })?;
        arr.iter()
            .enumerate()
            .map(|(i, e)| {
                let s = e.as_str().ok_or_else(|| {
                    PlanError(format!(
                        "{at}: {ctx}{key}[{i}]: expected a string like \"iops <= 500 +-3%\""
                    ))
                })?;
                Expectation::parse(s).map_err(|m| PlanError(format!("{at}: {ctx}{key}[{i}]: {m}")))
            })
            .collect()
    };
    match v {
        toml::Value::Array(_) => Ok(list(v, "expect")?.into_iter().map(|e| (None, e)).collect()),
        toml::Value::Table(t) => {
            let mut out = Vec::new();
            let by_job: BTreeMap<_, _> = t.iter().collect();
            for (job, v) in by_job {
                if !jobs.contains(job) {
                    return Err(PlanError(format!(
                        "{at}: {ctx}expect.{job}: no such job; allowed: {}",
                        jobs.join(", ")
                    )));
                }
                out.extend(
                    list(v, &format!("expect.{job}"))?
                        .into_iter()
                        .map(|e| (Some(job.clone()), e)),
                );
            }
            Ok(out)
        }
        _ => Err(PlanError(format!(
            "{at}: {ctx}expect: expected an array of expectations or a table of them by job name"
        ))),
    }
}

//! Plans: a TOML file declaring the node setup, workloads, runtime/ramp, iterations and
//! expectations. Validated once, here; errors name the file, the line, the key and what is
//! allowed.
//!
//! ```toml
//! [bench]
//! name = "qos500"
//! runtime = "3s"          # default 15s; integers are seconds
//! ramp = "1s"             # default 2s
//! iterations = 1          # default 1
//! mmap_reads = true       # the embedded node's read path (node.toml's mmap_reads)
//!
//! [[policy]]              # exactly node.toml's [[policy]], [[volume]], [capacity] (docs/CONFIG.md)
//! name = "QoS_500iops"
//! fixed = { max_throughput_iops = 500 }
//!
//! [[volume]]
//! name = "vol500"
//! size = "100GB"
//! policy = "QoS_500iops"
//!
//! [[workload]]
//! name = "randread"
//! volume = "vol500"
//! fio = { rw = "randread", bs = "4k", iodepth = 16 }
//! expect = ["iops <= 500 +-3%", "iops >= policy.ceiling * 0.9"]
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use storage_node::NodeConfig;
use toml::Spanned;

use crate::dbench;
use crate::fio::jobfile::valid_value;
use crate::verdict::Expectation;

/// A plan error, phrased for a human (file:line: what, and what is allowed).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct PlanError(pub String);

/// Default runtime (dbench's) and ramp, seconds.
pub const DEFAULT_RUNTIME: f64 = 15.0;
pub const DEFAULT_RAMP: f64 = 2.0;

/// fio options the harness owns: set by the target.
pub const TARGET_OPTIONS: [&str; 5] = ["filename", "uri", "directory", "ioengine", "direct"];
/// fio options the harness sets from `runtime`/`ramp`.
pub const TIME_OPTIONS: [&str; 3] = ["runtime", "ramp_time", "time_based"];

#[derive(Debug, Clone, PartialEq)]
pub enum Workload {
    /// A built-in profile (only "dbench").
    Profile(String),
    /// One fio job from raw options.
    Fio(Vec<(String, String)>),
}

/// One workload of a plan.
#[derive(Debug, Clone)]
pub struct WorkloadSpec {
    pub name: String,
    /// Volume of the embedded node (None: the only volume, or a non-embedded target).
    pub volume: Option<String>,
    pub workload: Workload,
    pub runtime: Option<f64>,
    pub ramp: Option<f64>,
    /// Expectations, keyed by fio job name (`None` = every job of the workload).
    pub expect: Vec<(Option<String>, Expectation)>,
}

/// One fio run the plan expands to.
#[derive(Debug, Clone)]
pub struct PlannedJob {
    pub workload: String,
    /// fio job name (a dbench job name, or the workload's name).
    pub name: String,
    pub volume: Option<String>,
    pub iteration: u32,
    /// Job-specific options (common and target options are added by the runner).
    pub options: Vec<(String, String)>,
    pub runtime: f64,
    pub ramp: f64,
    pub expect: Vec<Expectation>,
}

/// A validated plan.
#[derive(Debug, Clone)]
pub struct Plan {
    pub origin: String,
    pub text: String,
    pub name: String,
    pub runtime: f64,
    pub ramp: f64,
    pub iterations: u32,
    pub target: Option<String>,
    /// The embedded node's setup (None when the plan declares no volume).
    pub node: Option<NodeConfig>,
    pub workloads: Vec<WorkloadSpec>,
    /// The ramp profile's systems and settings (`[ramp]`, `[[system]]`; see `crate::ramp`).
    pub ramp_plan: Option<crate::ramp::RampPlan>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPlan {
    bench: Option<RawBench>,
    #[serde(default)]
    policy: Vec<toml::Value>,
    #[serde(default)]
    volume: Vec<toml::Value>,
    /// The embedded node's emulated controller (node.toml's `[capacity]`); accepted here
    /// so the plan parses, read by the node's own config parser.
    capacity: Option<toml::Value>,
    #[serde(default)]
    workload: Vec<Spanned<RawWorkload>>,
    ramp: Option<Spanned<crate::ramp::RawRamp>>,
    #[serde(default)]
    system: Vec<Spanned<crate::ramp::RawSystem>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBench {
    name: Option<String>,
    runtime: Option<Spanned<toml::Value>>,
    ramp: Option<Spanned<toml::Value>>,
    iterations: Option<Spanned<i64>>,
    target: Option<String>,
    mmap_reads: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWorkload {
    name: Option<String>,
    volume: Option<String>,
    profile: Option<Spanned<String>>,
    fio: Option<Spanned<toml::Table>>,
    runtime: Option<Spanned<toml::Value>>,
    ramp: Option<Spanned<toml::Value>>,
    expect: Option<Spanned<toml::Value>>,
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// A duration: "500ms", "3s", "2m", or an integer/float number of seconds.
pub fn parse_duration(v: &toml::Value) -> Result<f64, String> {
    let secs = match v {
        toml::Value::Integer(i) => *i as f64,
        toml::Value::Float(f) => *f,
        toml::Value::String(s) => parse_duration_str(s)?,
        _ => return Err("expected a duration like \"3s\", \"500ms\", \"2m\" or seconds".into()),
    };
    if !(secs.is_finite() && (0.0..=86400.0).contains(&secs)) {
        return Err(format!("{secs} s is out of range 0 .. 86400 s"));
    }
    Ok(secs)
}

/// A duration string: "500ms", "3s", "2m", "15" (seconds).
pub fn parse_duration_str(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let (n, mul) = if let Some(n) = t.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else {
        (t, 1.0)
    };
    n.trim()
        .parse::<f64>()
        .ok()
        .filter(|x| x.is_finite() && *x >= 0.0)
        .map(|x| x * mul)
        .ok_or_else(|| {
            format!("invalid duration {s:?}: expected e.g. \"3s\", \"500ms\", \"2m\" or seconds")
        })
}

/// fio's time syntax for a number of seconds ("3s", "500ms").
pub fn fio_time(secs: f64) -> String {
    let ms = (secs * 1000.0).round() as u64;
    let (whole, rest) = (ms / 1000, ms % 1000);
    if rest == 0 {
        format!("{whole}s")
    } else {
        format!("{ms}ms")
    }
}

/// The node-section lines of a plan (`[[policy]]`, `[[volume]]`, `[capacity]`), other lines blanked so node config errors carry the
/// plan's own line numbers. Sections are found by their `[header]` lines.
fn node_section_text(text: &str) -> String {
    let mut keep = false;
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with('[') {
            let name = t.trim_start_matches('[').trim_start();
            let root: String = name
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
                .collect();
            keep = root == "policy" || root == "volume" || root == "capacity";
        }
        if keep {
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

impl Plan {
    pub fn load(path: &Path) -> Result<Plan, PlanError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| PlanError(format!("{}: cannot read plan: {e}", path.display())))?;
        Plan::parse(&text, &path.display().to_string())
    }

    /// A plan with no file: one workload of `profile` on the target (the embedded node
    /// gets one unlimited 100 GB volume named "bench").
    pub fn from_profile(profile: &str, embedded: bool) -> Result<Plan, PlanError> {
        let text = format!(
            "{}[[workload]]\nname = \"{profile}\"\nprofile = \"{profile}\"\n",
            if embedded {
                "[[volume]]\nname = \"bench\"\nsize = \"100GB\"\n\n"
            } else {
                ""
            }
        );
        Plan::parse(&text, &format!("--profile {profile}"))
    }

    pub fn parse(text: &str, origin: &str) -> Result<Plan, PlanError> {
        let raw: RawPlan = toml::from_str(text).map_err(|e| {
            let line = e
                .span()
                .map(|s| format!(":{}", line_of(text, s.start)))
                .unwrap_or_default();
            let msg = e.message().replace(
                "`bench`, `policy`, `volume`, `capacity`, `workload`, `ramp`, `system`",
                "`bench`, `policy`, `volume`, `capacity`, `workload`, `ramp`, `system` (a plan's top-level keys)",
            );
            PlanError(format!("{origin}{line}: {msg}"))
        })?;
        let at = |span: std::ops::Range<usize>| format!("{origin}:{}", line_of(text, span.start));
        let bench = raw.bench.unwrap_or(RawBench {
            name: None,
            runtime: None,
            ramp: None,
            iterations: None,
            target: None,
            mmap_reads: None,
        });
        let dur = |v: &Option<Spanned<toml::Value>>,
                   key: &str,
                   ctx: &str|
         -> Result<Option<f64>, PlanError> {
            match v {
                None => Ok(None),
                Some(s) => parse_duration(s.get_ref())
                    .map(Some)
                    .map_err(|m| PlanError(format!("{}: {ctx}{key}: {m}", at(s.span())))),
            }
        };
        let runtime = dur(&bench.runtime, "runtime", "bench.")?.unwrap_or(DEFAULT_RUNTIME);
        let ramp = dur(&bench.ramp, "ramp", "bench.")?.unwrap_or(DEFAULT_RAMP);
        if runtime <= 0.0 {
            return Err(PlanError(format!(
                "{origin}: bench.runtime must be more than 0 s"
            )));
        }
        let iterations = match &bench.iterations {
            None => 1,
            Some(s) => {
                let n = *s.get_ref();
                if !(1..=1000).contains(&n) {
                    return Err(PlanError(format!(
                        "{}: bench.iterations = {n}: allowed 1 .. 1000",
                        at(s.span())
                    )));
                }
                n as u32
            }
        };
        if raw.capacity.is_some() && raw.volume.is_empty() {
            return Err(PlanError(format!(
                "{origin}: [capacity] sets up the embedded node's emulated controller, which needs at least one [[volume]]"
            )));
        }
        let node = if raw.volume.is_empty() && raw.policy.is_empty() {
            None
        } else {
            let mut cfg = NodeConfig::parse(&node_section_text(text), origin)
                .map_err(|e| PlanError(e.to_string()))?;
            if let Some(m) = bench.mmap_reads {
                cfg.mmap_reads = m;
            }
            Some(cfg)
        };
        let volumes: Vec<String> = node
            .as_ref()
            .map(|n| n.volumes.iter().map(|v| v.name.clone()).collect())
            .unwrap_or_default();
        let ramp_plan = if raw.system.is_empty() && raw.ramp.is_none() {
            None
        } else {
            if let Some(w) = raw.workload.first() {
                return Err(PlanError(format!(
                    "{}: a plan runs [[workload]]s (fio) or [[system]]s (the ramp profile), not both",
                    at(w.span())
                )));
            }
            let at_offset = |o: usize| at(o..o);
            Some(crate::ramp::parse(
                raw.ramp.as_ref(),
                &raw.system,
                &at_offset,
                &volumes,
            )?)
        };
        if raw.workload.is_empty() && ramp_plan.is_none() {
            return Err(PlanError(format!(
                "{origin}: no [[workload]]: a plan needs at least one (profile = \"dbench\" or fio = {{ ... }}), or [[system]]s for the ramp profile"
            )));
        }
        let mut workloads = Vec::new();
        let mut names = std::collections::BTreeSet::new();
        for (i, w) in raw.workload.iter().enumerate() {
            let wat = at(w.span());
            let w = w.get_ref();
            let name = w
                .name
                .clone()
                .unwrap_or_else(|| format!("workload{}", i + 1));
            let ctx = format!("workload {name:?}: ");
            if name.is_empty()
                || name.len() > 64
                || !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
            {
                return Err(PlanError(format!(
                    "{wat}: workload.name = {name:?}: allowed 1-64 of A-Z a-z 0-9 _ - ."
                )));
            }
            if !names.insert(name.clone()) {
                return Err(PlanError(format!(
                    "{wat}: workload.name = {name:?} is used twice"
                )));
            }
            let volume = match &w.volume {
                Some(v) if node.is_some() && !volumes.contains(v) => {
                    return Err(PlanError(format!(
                        "{wat}: {ctx}volume = {v:?} is not declared; declared volumes: {}",
                        volumes.join(", ")
                    )));
                }
                Some(v) => Some(v.clone()),
                None if volumes.len() > 1 => {
                    return Err(PlanError(format!(
                        "{wat}: {ctx}volume is required when the plan declares several volumes ({})",
                        volumes.join(", ")
                    )));
                }
                None => volumes.first().cloned(),
            };
            let workload = match (&w.profile, &w.fio) {
                (Some(p), None) => {
                    if p.get_ref() != dbench::NAME {
                        return Err(PlanError(format!(
                            "{}: {ctx}profile = {:?}: allowed profiles: {}",
                            at(p.span()),
                            p.get_ref(),
                            dbench::NAME
                        )));
                    }
                    Workload::Profile(p.get_ref().clone())
                }
                (None, Some(t)) => Workload::Fio(fio_options(t.get_ref(), &at(t.span()), &ctx)?),
                _ => {
                    return Err(PlanError(format!(
                        "{wat}: {ctx}set exactly one of profile (allowed: {}) or fio (a table of fio job options)",
                        dbench::NAME
                    )))
                }
            };
            let wl_runtime = dur(&w.runtime, "runtime", &ctx)?;
            let wl_ramp = dur(&w.ramp, "ramp", &ctx)?;
            let job_names: Vec<String> = match &workload {
                Workload::Profile(_) => dbench::JOBS.iter().map(|s| s.to_string()).collect(),
                Workload::Fio(_) => vec![name.clone()],
            };
            let expect = match &w.expect {
                None => Vec::new(),
                Some(e) => parse_expect(e.get_ref(), &at(e.span()), &ctx, &job_names)?,
            };
            workloads.push(WorkloadSpec {
                name,
                volume,
                workload,
                runtime: wl_runtime,
                ramp: wl_ramp,
                expect,
            });
        }
        Ok(Plan {
            origin: origin.to_string(),
            text: text.to_string(),
            name: bench.name.unwrap_or_else(|| {
                Path::new(origin)
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_else(|| "bench".into())
            }),
            runtime,
            ramp,
            iterations,
            target: bench.target,
            node,
            workloads,
            ramp_plan,
        })
    }

    /// Override runtime and ramp (command line); workload-level values still win.
    pub fn set_times(&mut self, runtime: Option<f64>, ramp: Option<f64>) {
        if let Some(r) = runtime {
            self.runtime = r;
            for w in &mut self.workloads {
                w.runtime = None;
            }
        }
        if let Some(r) = ramp {
            self.ramp = r;
            for w in &mut self.workloads {
                w.ramp = None;
            }
        }
    }

    /// Every fio run, in order: iterations outermost, then workloads, then profile jobs.
    pub fn jobs(&self) -> Vec<PlannedJob> {
        let mut out = Vec::new();
        for iteration in 1..=self.iterations {
            for w in &self.workloads {
                let runs: Vec<(String, Vec<(String, String)>)> = match &w.workload {
                    Workload::Profile(_) => dbench::JOBS
                        .iter()
                        .map(|j| {
                            let mut o: Vec<(String, String)> = dbench::COMMON
                                .iter()
                                .map(|(k, v)| (k.to_string(), v.to_string()))
                                .collect();
                            o.extend(
                                dbench::job_options(j)
                                    .unwrap_or_default()
                                    .into_iter()
                                    .map(|(k, v)| (k.to_string(), v.to_string())),
                            );
                            (j.to_string(), o)
                        })
                        .collect(),
                    Workload::Fio(opts) => vec![(w.name.clone(), opts.clone())],
                };
                for (name, options) in runs {
                    let expect = w
                        .expect
                        .iter()
                        .filter(|(job, _)| !matches!(job.as_deref(), Some(j) if j != name))
                        .map(|(_, e)| e.clone())
                        .collect();
                    out.push(PlannedJob {
                        workload: w.name.clone(),
                        name,
                        volume: w.volume.clone(),
                        iteration,
                        options,
                        runtime: w.runtime.unwrap_or(self.runtime),
                        ramp: w.ramp.unwrap_or(self.ramp),
                        expect,
                    });
                }
            }
        }
        out
    }
}

fn fio_options(t: &toml::Table, at: &str, ctx: &str) -> Result<Vec<(String, String)>, PlanError> {
    let mut out = Vec::new();
    for (k, v) in t {
        if TARGET_OPTIONS.contains(&k.as_str()) {
            return Err(PlanError(format!(
                "{at}: {ctx}fio.{k}: set by the target (--target or bench.target), not in a workload; options the target owns: {}",
                TARGET_OPTIONS.join(", ")
            )));
        }
        if TIME_OPTIONS.contains(&k.as_str()) {
            return Err(PlanError(format!(
                "{at}: {ctx}fio.{k}: use the workload's or [bench]'s runtime/ramp keys instead"
            )));
        }
        let s = match v {
            toml::Value::String(s) => s.clone(),
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Float(f) => f.to_string(),
            toml::Value::Boolean(b) => u8::from(*b).to_string(),
            _ => {
                return Err(PlanError(format!(
                    "{at}: {ctx}fio.{k}: allowed values: a string, number or boolean"
                )))
            }
        };
        if !valid_value(k) || !valid_value(&s) || k.contains('=') || k.is_empty() {
            return Err(PlanError(format!(
                "{at}: {ctx}fio.{k} = {s:?}: must be one line without ';', '#' or a leading '['"
            )));
        }
        out.push((k.clone(), s));
    }
    if !out.iter().any(|(k, _)| k == "rw" || k == "readwrite") {
        return Err(PlanError(format!(
            "{at}: {ctx}fio: needs rw (read, write, randread, randwrite, rw, randrw, ...)"
        )));
    }
    Ok(out)
}

fn parse_expect(
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

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
[bench]
name = "qos500"
runtime = "3s"
ramp = 1

[[policy]]
name = "QoS_500iops"
fixed = { max_throughput_iops = 500 }

[[volume]]
name = "vol500"
size = "100GB"
policy = "QoS_500iops"

[[volume]]
name = "base"
size = "10GB"

[[workload]]
name = "rr"
volume = "vol500"
fio = { rw = "randread", bs = "4k", iodepth = 16 }
expect = ["iops <= 500 +-3%"]

[[workload]]
name = "db"
volume = "base"
profile = "dbench"
runtime = "2s"
expect = { read_iops = ["iops >= 100"], rw_mix = ["write.iops > 1"] }
"#;

    fn err(text: &str) -> String {
        Plan::parse(text, "p.toml").unwrap_err().0
    }

    #[test]
    fn parses_and_expands() {
        let p = Plan::parse(GOOD, "plans/p.toml").unwrap();
        assert_eq!(p.name, "qos500");
        assert_eq!((p.runtime, p.ramp, p.iterations), (3.0, 1.0, 1));
        let node = p.node.as_ref().unwrap();
        assert_eq!(node.volumes.len(), 2);
        let jobs = p.jobs();
        assert_eq!(jobs.len(), 10);
        assert_eq!(jobs[0].name, "rr");
        assert_eq!(jobs[0].runtime, 3.0);
        assert_eq!(jobs[0].expect.len(), 1);
        assert_eq!(jobs[1].name, "read_iops");
        assert_eq!(jobs[1].runtime, 2.0);
        assert_eq!(jobs[1].volume.as_deref(), Some("base"));
        assert_eq!(jobs[1].expect.len(), 1);
        assert_eq!(jobs[2].expect.len(), 0);
        assert_eq!(jobs[9].name, "rw_mix");
        assert_eq!(jobs[9].expect.len(), 1);
        assert!(jobs[1].options.contains(&("size".into(), "2G".into())));
    }

    #[test]
    fn capacity_reaches_the_embedded_node_with_plan_lines() {
        let p = Plan::parse(
            "[capacity]\niops = 20000\n\n[[volume]]\nname = \"v\"\nsize = \"1GiB\"\n\n[[workload]]\nfio = { rw = \"randread\" }\n",
            "p.toml",
        )
        .unwrap();
        assert_eq!(p.node.unwrap().capacity.unwrap().iops, 20000);
        let e = err("[[volume]]\nname = \"v\"\nsize = \"1GiB\"\n[capacity]\niops = -1\n[[workload]]\nfio = { rw = \"read\" }\n");
        assert!(
            e.contains("p.toml:4") && e.contains("capacity.iops = -1"),
            "{e}"
        );
    }

    #[test]
    fn cli_overrides_times() {
        let mut p = Plan::parse(GOOD, "p.toml").unwrap();
        p.set_times(Some(5.0), None);
        assert!(p.jobs().iter().all(|j| j.runtime == 5.0 && j.ramp == 1.0));
    }

    #[test]
    fn errors_name_file_line_key_and_allowed_values() {
        for (bad, want) in [
            ("[[workload]]\nprofile = \"dbnch\"\n", "p.toml:2: workload \"workload1\": profile = \"dbnch\": allowed profiles: dbench"),
            ("[[workload]]\nprofil = \"dbench\"\n", "p.toml:2: unknown field `profil`, expected one of"),
            ("[bench]\nruntime = \"3x\"\n[[workload]]\nprofile = \"dbench\"\n", "p.toml:2: bench.runtime: invalid duration \"3x\""),
            ("[bench]\niterations = 0\n[[workload]]\nprofile = \"dbench\"\n", "bench.iterations = 0: allowed 1 .. 1000"),
            ("[[workload]]\nfio = { rw = \"read\", filename = \"/x\" }\n", "fio.filename: set by the target"),
            ("[[workload]]\nfio = { bs = \"4k\" }\n", "needs rw"),
            ("[[workload]]\nprofile = \"dbench\"\nexpect = [\"iops <== 5\"]\n", "p.toml:3: workload \"workload1\": expect[0]: expectation \"iops <== 5\""),
            ("[[workload]]\nprofile = \"dbench\"\nexpect = { nope = [\"iops < 5\"] }\n", "expect.nope: no such job; allowed: read_iops, write_iops"),
            ("[[volume]]\nname = \"a\"\nsize = \"10XB\"\n[[workload]]\nprofile = \"dbench\"\n", "p.toml:1: volume \"a\": size"),
            ("[[volume]]\nname = \"a\"\nsize = \"1GB\"\n[[workload]]\nvolume = \"b\"\nprofile = \"dbench\"\n", "volume = \"b\" is not declared; declared volumes: a"),
            ("[[volume]]\nname = \"a\"\nsize = \"1GB\"\n[[volume]]\nname = \"b\"\nsize = \"1GB\"\n[[workload]]\nprofile = \"dbench\"\n", "volume is required"),
            ("[bench]\nname = \"x\"\n", "no [[workload]]"),
            ("[node]\ndata_dir = \"x\"\n", "unknown field `node`"),
            ("[[workload]]\nprofile = \"dbench\"\nfio = { rw = \"read\" }\n", "set exactly one of profile"),
        ] {
            let e = err(bad);
            assert!(e.contains(want), "for:\n{bad}\ngot: {e}\nwant: {want}");
        }
    }

    #[test]
    fn the_example_plan_is_valid() {
        let p = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../examples/bench-qos500.toml"
        );
        let plan = Plan::load(Path::new(p)).unwrap();
        assert_eq!(plan.jobs().len(), 10);
        assert!(!plan.node.unwrap().mmap_reads, "pread is the default");
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration_str("500ms").unwrap(), 0.5);
        assert_eq!(parse_duration_str("2m").unwrap(), 120.0);
        assert_eq!(parse_duration_str("15").unwrap(), 15.0);
        assert!(parse_duration_str("-1s").is_err());
        assert_eq!(fio_time(3.0), "3s");
        assert_eq!(fio_time(0.5), "500ms");
    }

    #[test]
    fn profile_plan() {
        let p = Plan::from_profile("dbench", true).unwrap();
        assert_eq!(p.jobs().len(), 9);
        assert_eq!(p.node.unwrap().volumes[0].name, "bench");
        assert!(Plan::from_profile("nope", false).is_err());
    }
}

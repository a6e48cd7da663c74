//! An S3 plan: the connection (`[s3]`, GOSBench's `s3_config`) and the tests
//! (`[[s3.test]]`, GOSBench's `tests:` with its key names), validated once; errors carry
//! the plan's line, the key, the value and what is allowed.

use std::path::PathBuf;

use harness::plan::{parse_duration, PlanError, PlanSource};
use loadgen::s3::{SizeDist, Weights};
use serde::Deserialize;
use toml::Spanned;

use super::expect::Expect;

/// The largest object a test may PUT (a driver keeps one random buffer this large).
pub const MAX_OBJECT: u64 = 1 << 30;
/// Per-request timeout when the plan gives none.
pub const DEFAULT_TIMEOUT_S: f64 = 60.0;

/// How to reach the store, before the command line and the environment are applied.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Conn {
    pub endpoint: Option<String>,
    pub region: Option<String>,
    pub access_key: Option<String>,
    pub secret_key: Option<String>,
    pub keys_file: Option<PathBuf>,
    /// Load generators (ssh destinations); empty: drivers in this process.
    pub hosts: Vec<String>,
    pub ssh_options: Vec<String>,
    pub timeout_s: f64,
}

/// A count drawn once per test (GOSBench's `number_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Count {
    Constant(u64),
    Uniform { min: u64, max: u64 },
}

impl Count {
    pub fn draw(&self, seed: u64) -> u64 {
        match *self {
            Count::Constant(n) => n,
            Count::Uniform { min, max } => {
                min + loadgen::genio::Rng::new(seed).next_u64() % (max - min + 1)
            }
        }
    }
}

/// Which buckets a test uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Buckets {
    /// One bucket by name (created if missing; deleted after only if the test created it).
    Named(String),
    /// `bucket_prefix` + index, `count` of them (per load generator unless shared).
    Prefixed { prefix: String, count: Count },
}

/// One `[[s3.test]]`.
#[derive(Debug, Clone, PartialEq)]
pub struct TestPlan {
    pub name: String,
    /// The plan line of its table (for messages).
    pub line: usize,
    pub weights: Weights,
    pub sizes: SizeDist,
    /// Objects per bucket prepared before the timed phase.
    pub objects: Count,
    pub buckets: Buckets,
    /// Object key prefix.
    pub prefix: String,
    /// `stop_with_runtime`, seconds (None: `[bench].runtime`, unless stopped by ops).
    pub runtime: Option<f64>,
    pub ops: Option<u64>,
    /// Load generators (None: every host, or one in-process driver).
    pub workers: Option<u32>,
    pub share_buckets: bool,
    pub clients: u32,
    pub clean_after: bool,
    pub expect: Vec<Expect>,
}

impl TestPlan {
    /// A test with the defaults (`--profile s3` starts from it).
    pub fn new(name: &str) -> TestPlan {
        TestPlan {
            name: name.into(),
            line: 0,
            weights: Weights::default(),
            sizes: SizeDist::Constant { size: 4096 },
            objects: Count::Constant(100),
            buckets: Buckets::Prefixed {
                prefix: DEFAULT_BUCKET_PREFIX.into(),
                count: Count::Constant(1),
            },
            prefix: "obj".into(),
            runtime: None,
            ops: None,
            workers: None,
            share_buckets: true,
            clients: 8,
            clean_after: true,
            expect: Vec::new(),
        }
    }
}

pub const DEFAULT_BUCKET_PREFIX: &str = "qoslab-bench-";

/// The validated `[s3]` tables.
#[derive(Debug, Clone, PartialEq)]
pub struct S3Plan {
    pub conn: Conn,
    pub tests: Vec<TestPlan>,
}

#[derive(Deserialize)]
struct View {
    s3: Spanned<RawS3>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawS3 {
    endpoint: Option<String>,
    region: Option<String>,
    access_key: Option<String>,
    secret_key: Option<String>,
    keys_file: Option<String>,
    #[serde(default)]
    hosts: Vec<String>,
    #[serde(default)]
    ssh_options: Vec<String>,
    timeout: Option<Spanned<toml::Value>>,
    #[serde(default)]
    test: Vec<Spanned<RawTest>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTest {
    name: String,
    #[serde(default)]
    read_weight: u32,
    #[serde(default)]
    existing_read_weight: u32,
    #[serde(default)]
    write_weight: u32,
    #[serde(default)]
    delete_weight: u32,
    #[serde(default)]
    list_weight: u32,
    #[serde(default)]
    stat_weight: u32,
    objects: Option<RawObjects>,
    buckets: Option<RawNumbers>,
    bucket_prefix: Option<String>,
    bucket: Option<String>,
    #[serde(alias = "object_prefix")]
    prefix: Option<String>,
    stop_with_runtime: Option<toml::Value>,
    stop_with_ops: Option<u64>,
    workers: Option<u32>,
    workers_share_buckets: Option<bool>,
    parallel_clients: Option<u32>,
    clean_after: Option<bool>,
    #[serde(default)]
    expect: Vec<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawObjects {
    size_min: Option<toml::Value>,
    size_max: Option<toml::Value>,
    size_distribution: Option<String>,
    part_size: Option<toml::Value>,
    unit: Option<String>,
    number_min: Option<u64>,
    number_max: Option<u64>,
    number_distribution: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawNumbers {
    number_min: Option<u64>,
    number_max: Option<u64>,
    number_distribution: Option<String>,
}

/// GOSBench's `unit` (powers of 1024, as GOSBench reads them).
fn unit_bytes(u: &str) -> Result<u64, String> {
    Ok(match u.to_ascii_uppercase().as_str() {
        "B" => 1,
        "KB" | "K" | "KIB" => 1 << 10,
        "MB" | "M" | "MIB" => 1 << 20,
        "GB" | "G" | "GIB" => 1 << 30,
        _ => {
            return Err(format!(
                "unit = {u:?}: allowed B, KB, MB, GB (powers of 1024, as GOSBench reads them)"
            ))
        }
    })
}

fn size(v: &toml::Value, unit: u64, key: &str) -> Result<u64, String> {
    match v {
        toml::Value::Integer(i) if *i >= 0 => (*i as u64)
            .checked_mul(unit)
            .ok_or_else(|| format!("{key} = {i}: too large")),
        toml::Value::String(s) => {
            qos_core::parse_size(s).map_err(|e| format!("{key} = {s:?}: {e}"))
        }
        v => Err(format!(
            "{key} = {v:?}: expected a size like \"4KiB\", \"1MiB\", or a number of `unit`s"
        )),
    }
}

/// A size distribution by name.
pub fn size_dist(name: &str, min: u64, max: u64) -> Result<SizeDist, String> {
    if max < min {
        return Err(format!("size_max ({max} B) is below size_min ({min} B)"));
    }
    if max > MAX_OBJECT {
        return Err(format!(
            "size_max = {max} B: allowed up to {MAX_OBJECT} B (1 GiB; a driver holds a buffer that large)"
        ));
    }
    Ok(match name {
        "constant" => {
            if min != max {
                return Err(format!(
                    "size_distribution = \"constant\" needs size_min = size_max (got {min} and {max}); use \"uniform\" or \"lognormal\" for a range"
                ));
            }
            SizeDist::Constant { size: min }
        }
        "random" | "uniform" => SizeDist::Uniform { min, max },
        "lognormal" | "log-normal" => {
            if min == 0 {
                return Err("size_distribution = \"lognormal\" needs size_min >= 1".into());
            }
            SizeDist::LogNormal { min, max }
        }
        d => {
            return Err(format!(
            "size_distribution = {d:?}: allowed constant, uniform (GOSBench's random), lognormal"
        ))
        }
    })
}

fn count(
    min: Option<u64>,
    max: Option<u64>,
    dist: Option<&str>,
    what: &str,
    default: u64,
) -> Result<Count, String> {
    let min = min.unwrap_or(default);
    let max = max.unwrap_or(min);
    if max < min {
        return Err(format!(
            "{what}.number_max ({max}) is below number_min ({min})"
        ));
    }
    match dist.unwrap_or("constant") {
        "constant" => Ok(Count::Constant(min)),
        "random" | "uniform" => Ok(Count::Uniform { min, max }),
        d => Err(format!(
            "{what}.number_distribution = {d:?}: allowed constant, random"
        )),
    }
}

/// Whether `name` is a valid S3 bucket name (3-63 of a-z 0-9 . -, starting and ending
/// with a letter or digit).
pub fn valid_bucket(name: &str) -> bool {
    let b = name.as_bytes();
    (3..=63).contains(&b.len())
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'.' || *c == b'-')
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
}

/// A test's objects: their sizes (in `objects.unit`) and how many, checked against what
/// its weights need.
fn objects(t: &RawTest, p: &mut TestPlan) -> Result<(), String> {
    let o = t.objects.as_ref();
    let unit = match o.and_then(|o| o.unit.as_deref()) {
        Some(u) => unit_bytes(u)?,
        None => 1,
    };
    let smin = match o.and_then(|o| o.size_min.as_ref()) {
        Some(v) => size(v, unit, "objects.size_min")?,
        None => 4096,
    };
    let smax = match o.and_then(|o| o.size_max.as_ref()) {
        Some(v) => size(v, unit, "objects.size_max")?,
        None => smin,
    };
    let dist = o
        .and_then(|o| o.size_distribution.as_deref())
        .unwrap_or(if smin == smax { "constant" } else { "uniform" });
    p.sizes = size_dist(dist, smin, smax).map_err(|m| format!("objects: {m}"))?;
    if let Some(ps) = o.and_then(|o| o.part_size.as_ref()) {
        if size(ps, unit, "objects.part_size")? > 0 {
            return Err("objects.part_size > 0 (multipart uploads): not supported by the driver yet; use 0 (single PUTs up to 1 GiB)".into());
        }
    }
    p.objects = count(
        o.and_then(|o| o.number_min),
        o.and_then(|o| o.number_max),
        o.and_then(|o| o.number_distribution.as_deref()),
        "objects",
        100,
    )?;
    let (Count::Uniform { min, .. } | Count::Constant(min)) = p.objects;
    if min == 0 && p.weights.needs_pool() && p.weights.write == 0 {
        return Err("read_weight, delete_weight and stat_weight work on the test's own objects: give objects.number_min >= 1 or a write_weight".into());
    }
    let (Count::Uniform { max, .. } | Count::Constant(max)) = p.objects;
    if max > 1_000_000 {
        return Err(format!("objects.number_max = {max}: allowed up to 1000000"));
    }
    Ok(())
}

/// A test's buckets: one named bucket, or a count of prefixed ones.
fn buckets(t: &RawTest) -> Result<Buckets, String> {
    Ok(match (&t.bucket, &t.buckets) {
        (Some(_), Some(_)) => {
            return Err(
                "bucket (one named bucket) and buckets (a count of prefixed ones): give one".into(),
            )
        }
        (Some(b), None) => {
            if !valid_bucket(b) {
                return Err(format!(
                    "bucket = {b:?}: a bucket name is 3-63 characters of a-z, 0-9, '.', '-'"
                ));
            }
            Buckets::Named(b.clone())
        }
        (None, n) => {
            let n = n.as_ref();
            let c = count(
                n.and_then(|n| n.number_min),
                n.and_then(|n| n.number_max),
                n.and_then(|n| n.number_distribution.as_deref()),
                "buckets",
                1,
            )?;
            if let Count::Constant(0) | Count::Uniform { min: 0, .. } = c {
                return Err("buckets.number_min = 0: a test needs at least one bucket".into());
            }
            let (Count::Constant(m) | Count::Uniform { max: m, .. }) = c;
            if m > 1000 {
                return Err(format!("buckets.number_max = {m}: allowed up to 1000"));
            }
            let prefix = t
                .bucket_prefix
                .clone()
                .unwrap_or_else(|| DEFAULT_BUCKET_PREFIX.into());
            if !valid_bucket(&format!("{prefix}999-w99")) || !valid_bucket(&format!("{prefix}0")) {
                return Err(format!(
                    "bucket_prefix = {prefix:?}: bucket names (prefix + number) must be 3-63 characters of a-z, 0-9, '.', '-'"
                ));
            }
            Buckets::Prefixed { prefix, count: c }
        }
    })
}

fn test(t: &RawTest, line: usize) -> Result<TestPlan, String> {
    let mut p = TestPlan::new(&t.name);
    p.line = line;
    if t.name.trim().is_empty() || t.name.len() > 100 || t.name.contains(['\n', '/']) {
        return Err(format!(
            "name = {:?}: 1-100 characters, no '/' or newline",
            t.name
        ));
    }
    p.weights = Weights {
        read: t.read_weight,
        existing_read: t.existing_read_weight,
        write: t.write_weight,
        delete: t.delete_weight,
        list: t.list_weight,
        stat: t.stat_weight,
    };
    if p.weights.total() == 0 {
        return Err("every weight is 0: give at least one of read_weight, existing_read_weight, write_weight, delete_weight, list_weight, stat_weight".into());
    }
    objects(t, &mut p)?;
    p.buckets = buckets(t)?;
    if let Some(pre) = &t.prefix {
        if pre.len() > 200 || pre.contains('\n') {
            return Err(format!(
                "prefix = {pre:?}: at most 200 characters, one line"
            ));
        }
        p.prefix = pre.clone();
    }
    if let Some(v) = &t.stop_with_runtime {
        let s = parse_duration(v).map_err(|m| format!("stop_with_runtime: {m}"))?;
        if s <= 0.0 {
            return Err("stop_with_runtime must be more than 0 s".into());
        }
        p.runtime = Some(s);
    }
    if let Some(n) = t.stop_with_ops {
        if n == 0 {
            return Err("stop_with_ops = 0: give a positive count".into());
        }
        if p.runtime.is_some() {
            return Err(
                "stop_with_runtime and stop_with_ops: give one (GOSBench stops by one of them)"
                    .into(),
            );
        }
        p.ops = Some(n);
    }
    if let Some(w) = t.workers {
        if !(1..=256).contains(&w) {
            return Err(format!("workers = {w}: allowed 1 .. 256"));
        }
        p.workers = Some(w);
    }
    p.share_buckets = t.workers_share_buckets.unwrap_or(true);
    if let Some(c) = t.parallel_clients {
        if !(1..=4096).contains(&c) {
            return Err(format!("parallel_clients = {c}: allowed 1 .. 4096"));
        }
        p.clients = c;
    }
    p.clean_after = t.clean_after.unwrap_or(true);
    for e in &t.expect {
        p.expect.push(Expect::parse(e)?);
    }
    Ok(p)
}

/// Parse and validate the `[s3]` tables of a plan.
pub fn parse(src: &PlanSource) -> Result<S3Plan, PlanError> {
    let v: View = src.deserialize()?;
    let at = |off: usize| src.at(off);
    let raw = v.s3.get_ref();
    hosts::ssh::check_plan_options(&raw.ssh_options)
        .map_err(|e| PlanError(format!("{}: s3.ssh_options: {e}", at(v.s3.span().start))))?;
    let timeout_s = match &raw.timeout {
        None => DEFAULT_TIMEOUT_S,
        Some(t) => {
            let s = parse_duration(t.get_ref())
                .map_err(|m| PlanError(format!("{}: s3.timeout: {m}", at(t.span().start))))?;
            if s < 0.1 {
                return Err(PlanError(format!(
                    "{}: s3.timeout must be at least 100ms",
                    at(t.span().start)
                )));
            }
            s
        }
    };
    let conn = Conn {
        endpoint: raw.endpoint.clone(),
        region: raw.region.clone(),
        access_key: raw.access_key.clone(),
        secret_key: raw.secret_key.clone(),
        keys_file: raw.keys_file.as_ref().map(PathBuf::from),
        hosts: raw.hosts.clone(),
        ssh_options: raw.ssh_options.clone(),
        timeout_s,
    };
    if raw.test.is_empty() {
        return Err(PlanError(format!(
            "{}: [s3] has no [[s3.test]]: a plan needs at least one test",
            at(v.s3.span().start)
        )));
    }
    let mut tests = Vec::new();
    for t in &raw.test {
        let line = src.line(t.span().start);
        let p = test(t.get_ref(), line).map_err(|m| {
            PlanError(format!(
                "{}:{line}: [[s3.test]] {:?}: {m}",
                src.origin,
                t.get_ref().name
            ))
        })?;
        if tests.iter().any(|o: &TestPlan| o.name == p.name) {
            return Err(PlanError(format!(
                "{}:{line}: [[s3.test]] {:?}: another test has this name",
                src.origin, p.name
            )));
        }
        tests.push(p);
    }
    Ok(S3Plan { conn, tests })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str) -> Result<S3Plan, String> {
        parse(&PlanSource::new(text, "p.toml")).map_err(|e| e.0)
    }

    #[test]
    fn gosbench_vocabulary() {
        let s = p(r#"
[s3]
endpoint = "http://127.0.0.1:9000"
hosts = ["h0", "h1"]

[[s3.test]]
name = "write test"
read_weight = 0
existing_read_weight = 0
write_weight = 100
objects = { size_min = 1, size_max = 100000, size_distribution = "random", unit = "KB", number_min = 10, number_max = 10, number_distribution = "constant" }
buckets = { number_min = 1, number_max = 10, number_distribution = "constant" }
bucket_prefix = "1255gosbenchobject-"
prefix = "obj"
stop_with_runtime = "900s"
workers = 2
workers_share_buckets = true
parallel_clients = 3
clean_after = true

[[s3.test]]
name = "mixed"
read_weight = 70
write_weight = 20
delete_weight = 10
objects = { size_min = "1KiB", size_max = "1MiB", size_distribution = "lognormal" }
bucket = "bench"
stop_with_ops = 5000
expect = ["GET.ops_per_s >= 10"]
"#)
        .unwrap();
        assert_eq!(s.conn.hosts, ["h0", "h1"]);
        assert_eq!(s.conn.timeout_s, DEFAULT_TIMEOUT_S);
        let w = &s.tests[0];
        assert_eq!(
            w.sizes,
            SizeDist::Uniform {
                min: 1024,
                max: 100_000 << 10
            }
        );
        assert_eq!(w.objects, Count::Constant(10));
        assert_eq!(
            w.buckets,
            Buckets::Prefixed {
                prefix: "1255gosbenchobject-".into(),
                count: Count::Constant(1)
            }
        );
        assert_eq!((w.runtime, w.workers, w.clients), (Some(900.0), Some(2), 3));
        assert_eq!(w.line, 6);
        let m = &s.tests[1];
        assert_eq!(
            m.sizes,
            SizeDist::LogNormal {
                min: 1024,
                max: 1 << 20
            }
        );
        assert_eq!(m.buckets, Buckets::Named("bench".into()));
        assert_eq!((m.ops, m.runtime), (Some(5000), None));
        assert_eq!(m.expect.len(), 1);
        assert_eq!(m.weights.total(), 100);
    }

    #[test]
    fn bad_input_names_line_key_and_range() {
        let base = "[s3]\n\n[[s3.test]]\nname = \"t\"\n";
        let e = |extra: &str| p(&format!("{base}{extra}")).unwrap_err();
        assert_eq!(
            e(""),
            "p.toml:3: [[s3.test]] \"t\": every weight is 0: give at least one of read_weight, existing_read_weight, write_weight, delete_weight, list_weight, stat_weight"
        );
        let w = "write_weight = 1\n";
        assert!(e(&format!("{w}objects = {{ size_min = \"2GiB\" }}\n"))
            .contains("allowed up to 1073741824 B"));
        assert!(
            e(&format!("{w}objects = {{ size_min = 10, size_max = 5 }}\n"))
                .contains("below size_min")
        );
        assert!(e(&format!(
            "{w}objects = {{ size_min = 1, size_max = 5, size_distribution = \"sequential\" }}\n"
        ))
        .contains("allowed constant, uniform (GOSBench's random), lognormal"));
        assert!(
            e(&format!("{w}objects = {{ size_min = 1, unit = \"XB\" }}\n"))
                .contains("allowed B, KB, MB, GB")
        );
        assert!(e(&format!("{w}objects = {{ part_size = 5 }}\n")).contains("multipart uploads"));
        assert!(e(&format!("{w}bucket = \"Bad_Name\"\n")).contains("3-63 characters"));
        assert!(e(&format!(
            "{w}stop_with_runtime = \"1s\"\nstop_with_ops = 5\n"
        ))
        .contains("give one"));
        assert!(e(&format!("{w}parallel_clients = 0\n")).contains("allowed 1 .. 4096"));
        assert!(e("read_weight = 1\nobjects = { number_min = 0 }\n")
            .contains("objects.number_min >= 1"));
        assert!(e(&format!("{w}expect = [\"GET.iops > 1\"]\n")).contains("unknown metric"));
        assert!(e(&format!("{w}colour = 1\n")).starts_with("p.toml:"));
        assert!(p("[s3]\nendpoint = \"x\"\n")
            .unwrap_err()
            .contains("no [[s3.test]]"));
        assert!(p(&format!("{base}{w}[[s3.test]]\nname = \"t\"\n{w}"))
            .unwrap_err()
            .contains("another test has this name"));
        assert!(valid_bucket("qoslab-bench-0") && !valid_bucket("-x-") && !valid_bucket("ab"));
    }
}

//! The `git`, `redis`, `build` and `broker` tables of a `[[class]]` (the applications'
//! parameters), read over their defaults and checked; every message
//! names the class, the field and the allowed values. Also the size and range readers
//! every class field uses.

use loadgen::apps::broker::{activemq::Destination, BrokerSpec};
use loadgen::apps::build::BuildSpec;
use loadgen::apps::git::RepoSpec;
use loadgen::apps::redis::RedisSpec;
use serde::Deserialize;

/// `git = { ... }` of a class (loadgen::apps::git::RepoSpec's fields).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawGit {
    pub files: Option<i64>,
    pub bytes: Option<toml::Value>,
    pub seed: Option<i64>,
}

/// `redis = { ... }` of a class (loadgen::apps::redis::RedisSpec's fields).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRedis {
    pub records: Option<i64>,
    pub operations: Option<i64>,
    pub fields: Option<i64>,
    pub field_len: Option<i64>,
    pub read_proportion: Option<f64>,
    pub threads: Option<i64>,
    pub appendfsync: Option<String>,
}

/// `build = { ... }` of a class (loadgen::apps::build::BuildSpec's fields).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawBuild {
    pub builds: Option<i64>,
    pub units: Option<i64>,
    pub functions: Option<i64>,
    pub deps: Option<i64>,
    pub dep_bytes: Option<toml::Value>,
    pub seed: Option<i64>,
    pub jobs: Option<i64>,
}

/// `broker = { ... }` of a class (loadgen::apps::broker::BrokerSpec's fields).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawBroker {
    pub secs: Option<i64>,
    pub message_size: Option<toml::Value>,
    pub destination: Option<String>,
    pub heap_mib: Option<i64>,
}

/// A `git = { ... }` table over the defaults, checked.
pub fn git_spec(r: Option<&RawGit>, at: &str) -> Result<RepoSpec, String> {
    let mut spec = RepoSpec::default();
    if let Some(g) = r {
        if let Some(f) = g.files {
            spec.files = in_range(f, 1, 10_000_000, &format!("{at}: git.files"))? as u32;
        }
        if let Some(b) = &g.bytes {
            spec.bytes = parse_size(b, &format!("{at}: git.bytes"))?;
        }
        if let Some(s) = g.seed {
            spec.seed = s as u64;
        }
    }
    Ok(spec)
}

/// A `redis = { ... }` table over the defaults, checked.
pub fn redis_spec(r: Option<&RawRedis>, at: &str) -> Result<RedisSpec, String> {
    let mut spec = RedisSpec::default();
    if let Some(x) = r {
        let big = &format!("{at}: redis.");
        if let Some(v) = x.records {
            spec.records = in_range(v, 1, 100_000_000, &format!("{big}records"))? as u64;
        }
        if let Some(v) = x.operations {
            spec.operations = in_range(v, 0, 1_000_000_000, &format!("{big}operations"))? as u64;
        }
        if let Some(v) = x.fields {
            spec.fields = v.clamp(0, u32::MAX as i64) as u32;
        }
        if let Some(v) = x.field_len {
            spec.field_len = v.clamp(0, u32::MAX as i64) as u32;
        }
        if let Some(v) = x.read_proportion {
            spec.read_proportion = v;
        }
        if let Some(v) = x.threads {
            spec.threads = v.clamp(0, u32::MAX as i64) as u32;
        }
        if let Some(v) = &x.appendfsync {
            spec.appendfsync = v.clone();
        }
    }
    spec.validate().map_err(|e| format!("{at}: {e}"))?;
    spec.validate().map_err(|e| format!("{at}: {e}"))?;
    Ok(spec)
}

/// A `build = { ... }` table over the defaults, checked.
pub fn build_spec(r: Option<&RawBuild>, at: &str) -> Result<BuildSpec, String> {
    let mut b = BuildSpec::default();
    if let Some(x) = r {
        let u32_of = |v: i64, f: &str| in_range(v, 0, u32::MAX as i64, &format!("{at}: build.{f}"));
        if let Some(v) = x.builds {
            b.builds = u32_of(v, "builds")? as u32;
        }
        if let Some(v) = x.units {
            b.units = u32_of(v, "units")? as u32;
        }
        if let Some(v) = x.functions {
            b.functions = u32_of(v, "functions")? as u32;
        }
        if let Some(v) = x.deps {
            b.deps = u32_of(v, "deps")? as u32;
        }
        if let Some(v) = x.jobs {
            b.jobs = u32_of(v, "jobs")? as u32;
        }
        if let Some(v) = &x.dep_bytes {
            b.dep_bytes = parse_size(v, &format!("{at}: build.dep_bytes"))?;
        }
        if let Some(v) = x.seed {
            b.seed = v as u64;
        }
    }
    b.validate().map_err(|e| format!("{at}: {e}"))?;
    Ok(b)
}

/// A `broker = { ... }` table over the defaults, checked.
pub fn broker_spec(r: Option<&RawBroker>, at: &str) -> Result<BrokerSpec, String> {
    let mut b = BrokerSpec::default();
    if let Some(x) = r {
        let u32_of =
            |v: i64, f: &str| in_range(v, 0, u32::MAX as i64, &format!("{at}: broker.{f}"));
        if let Some(v) = x.secs {
            b.secs = u32_of(v, "secs")? as u32;
        }
        if let Some(v) = x.heap_mib {
            b.heap_mib = u32_of(v, "heap_mib")? as u32;
        }
        if let Some(v) = &x.message_size {
            let n = parse_size(v, &format!("{at}: broker.message_size"))?;
            b.message_size = n.min(u32::MAX as u64) as u32;
        }
        if let Some(v) = &x.destination {
            b.destination = Destination::parse(v).map_err(|e| format!("{at}: {e}"))?;
        }
    }
    b.validate().map_err(|e| format!("{at}: {e}"))?;
    Ok(b)
}

pub(super) fn parse_size(v: &toml::Value, what: &str) -> Result<u64, String> {
    match v {
        toml::Value::Integer(i) if *i > 0 => Ok(*i as u64),
        toml::Value::String(s) => {
            qos_core::units::parse_size(s).map_err(|e| format!("{what} = {s:?}: {e}"))
        }
        other => Err(format!(
            "{what} = {other:?}: expected bytes or a size like \"1GiB\""
        )),
    }
}

pub(super) fn in_range(v: i64, lo: i64, hi: i64, what: &str) -> Result<i64, String> {
    if (lo..=hi).contains(&v) {
        Ok(v)
    } else {
        Err(format!("{what} = {v}: allowed {lo} to {hi}"))
    }
}

//! What a tenant sweep runs: scale points, iterations, and storage classes (seed 000's
//! Trident classes: a name, a QoS policy, a default size, a file system) whose tenants run
//! one application each. Read from a plan's `[tenants]` table and `[[class]]` tables and
//! validated once, here; every message names the table, the field and the allowed values.

use std::path::PathBuf;

use super::app_spec::{
    broker_spec, build_spec, git_spec, in_range, parse_size, redis_spec, RawBroker, RawBuild,
};
pub use super::app_spec::{RawGit, RawRedis};
use super::fio_mix::FioMix;
use loadgen::apps::broker::BrokerSpec;
use loadgen::apps::build::BuildSpec;
use loadgen::apps::git::RepoSpec;
use loadgen::apps::redis::RedisSpec;
use mounts::FsType;
use serde::Deserialize;

/// The `[tenants]` table as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTenants {
    pub points: Option<Vec<i64>>,
    pub iterations: Option<i64>,
    pub timeout: Option<toml::Value>,
    pub runtime: Option<toml::Value>,
    pub ramp: Option<toml::Value>,
    pub base_dir: Option<String>,
    pub cache_dir: Option<String>,
    pub capacity_iops: Option<i64>,
    pub capacity_mbps: Option<i64>,
    pub discipline: Option<String>,
}

/// A `[[class]]` table as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawClass {
    pub name: String,
    pub policy: Option<String>,
    pub size: Option<toml::Value>,
    pub snapshot_reserve_percent: Option<i64>,
    pub fs: Option<String>,
    pub app: String,
    pub mix: Option<String>,
    pub iodepth: Option<i64>,
    pub rate_iops: Option<i64>,
    pub fio_size: Option<toml::Value>,
    pub git: Option<RawGit>,
    pub redis: Option<RawRedis>,
    pub build: Option<RawBuild>,
    pub broker: Option<RawBroker>,
    pub expect_floor: Option<f64>,
    pub expect_ceiling: Option<f64>,
}

/// A class's application.
#[derive(Debug, Clone, PartialEq)]
pub enum AppSpec {
    Git(RepoSpec),
    Redis(RedisSpec),
    /// Concurrent C builds (seed 004's Jenkins).
    Build(BuildSpec),
    /// An ActiveMQ broker with a producer and a consumer (seed 004's JBoss AMQ).
    Broker(BrokerSpec),
    /// fio on the volume itself (NBD), no file system.
    Fio {
        mix: FioMix,
        iodepth: u32,
        rate_iops: Option<u32>,
        /// Bytes of the volume each job uses.
        size: u64,
    },
}

impl AppSpec {
    pub fn name(&self) -> &'static str {
        match self {
            AppSpec::Git(_) => "git",
            AppSpec::Redis(_) => "redis",
            AppSpec::Build(_) => "build",
            AppSpec::Broker(_) => "broker",
            AppSpec::Fio { .. } => "fio",
        }
    }

    /// Whether its tenants need a mounted file system.
    pub fn mounts(&self) -> bool {
        !matches!(self, AppSpec::Fio { .. })
    }
}

/// A storage class.
#[derive(Debug, Clone, PartialEq)]
pub struct ClassSpec {
    pub name: String,
    /// A `[[policy]]` of the plan (the node's), or none.
    pub policy: Option<String>,
    pub size: u64,
    pub snapshot_reserve_percent: u8,
    pub fs: FsType,
    pub app: AppSpec,
    /// Verdict: every tenant's IOPS at least this fraction of its volume's floor.
    pub expect_floor: Option<f64>,
    /// Verdict: every tenant's IOPS within this fraction of its volume's ceiling.
    pub expect_ceiling: Option<f64>,
}

/// The whole sweep, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct TenantsSpec {
    /// Tenants per class at each point, in order.
    pub points: Vec<usize>,
    pub iterations: u32,
    /// Time limit of one iteration (seconds).
    pub timeout: f64,
    /// fio classes: measured seconds per iteration, and ramp.
    pub runtime: f64,
    pub ramp: f64,
    pub base_dir: PathBuf,
    pub cache_dir: PathBuf,
    pub classes: Vec<ClassSpec>,
    /// An emulated controller for the node (`capacity_iops`, `capacity_mbps`,
    /// `discipline` in `[tenants]`): floors are enforced only under one.
    pub capacity: Option<storage_node::config::Capacity>,
}

/// The most tenants one point may have per class.
pub const MAX_TENANTS: usize = 10_000;

pub fn parse_duration(v: &toml::Value, what: &str) -> Result<f64, String> {
    let secs = match v {
        toml::Value::Integer(i) => *i as f64,
        toml::Value::Float(f) => *f,
        toml::Value::String(s) => {
            let s = s.trim();
            let (num, mult) = if let Some(n) = s.strip_suffix("ms") {
                (n, 0.001)
            } else if let Some(n) = s.strip_suffix('s') {
                (n, 1.0)
            } else if let Some(n) = s.strip_suffix('m') {
                (n, 60.0)
            } else if let Some(n) = s.strip_suffix('h') {
                (n, 3600.0)
            } else {
                (s, 1.0)
            };
            num.trim()
                .parse::<f64>()
                .map(|n| n * mult)
                .map_err(|_| format!("{what} = {s:?}: expected a duration like \"30s\", \"500ms\", \"10m\" or seconds"))?
        }
        other => {
            return Err(format!(
                "{what} = {other:?}: expected a duration like \"30s\" or seconds"
            ))
        }
    };
    if !(secs.is_finite() && secs > 0.0) {
        return Err(format!("{what}: must be a positive duration"));
    }
    Ok(secs)
}

fn valid_name(n: &str) -> bool {
    !n.is_empty()
        && n.len() <= 32
        && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && n.as_bytes()[0].is_ascii_alphabetic()
}

impl ClassSpec {
    pub fn from_raw(r: &RawClass) -> Result<ClassSpec, String> {
        let at = format!("[[class]] {}", r.name);
        if !valid_name(&r.name) {
            return Err(format!(
                "[[class]] name {:?}: 1-32 of A-Z a-z 0-9 _, starting with a letter (it names volumes and tenants)",
                r.name
            ));
        }
        let size = match &r.size {
            Some(v) => parse_size(v, &format!("{at}: size"))?,
            None => 1 << 30,
        };
        let fs: FsType =
            r.fs.as_deref()
                .unwrap_or("ext4")
                .parse()
                .map_err(|e| format!("{at}: fs: {e}"))?;
        let reserve = in_range(
            r.snapshot_reserve_percent.unwrap_or(0),
            0,
            90,
            &format!("{at}: snapshot_reserve_percent"),
        )? as u8;
        let only = |field: &str, present: bool, app: &str| -> Result<(), String> {
            if present {
                Err(format!("{at}: {field} applies to app = \"{app}\" only"))
            } else {
                Ok(())
            }
        };
        // The tables of other applications than this class's are errors.
        let others = |mine: &[&str]| -> Result<(), String> {
            for (field, present, app) in [
                ("git", r.git.is_some(), "git"),
                ("redis", r.redis.is_some(), "redis"),
                ("build", r.build.is_some(), "build"),
                ("broker", r.broker.is_some(), "broker"),
                ("mix", r.mix.is_some(), "fio"),
            ] {
                if !mine.contains(&app) {
                    only(field, present, app)?;
                }
            }
            Ok(())
        };
        let app = match r.app.as_str() {
            "git" => {
                others(&["git"])?;
                AppSpec::Git(git_spec(r.git.as_ref(), &at)?)
            }
            "redis" => {
                others(&["redis"])?;
                AppSpec::Redis(redis_spec(r.redis.as_ref(), &at)?)
            }
            "build" => {
                others(&["build"])?;
                AppSpec::Build(build_spec(r.build.as_ref(), &at)?)
            }
            "broker" => {
                others(&["broker"])?;
                AppSpec::Broker(broker_spec(r.broker.as_ref(), &at)?)
            }
            "fio" => {
                others(&["fio"])?;
                fio_app(r, size, &at)?
            }
            other => {
                return Err(format!(
                    "{at}: app = {other:?}: allowed git, redis, build, broker, fio"
                ))
            }
        };
        if app.mounts() {
            only("iodepth", r.iodepth.is_some(), "fio")?;
            only("rate_iops", r.rate_iops.is_some(), "fio")?;
            let min = match fs {
                FsType::Ext4 => 16 << 20,
                FsType::Xfs => 300_000_000,
            };
            if size < min {
                return Err(format!(
                    "{at}: size {size} bytes is too small for {fs} (at least {min} bytes)"
                ));
            }
        }
        let frac = |v: Option<f64>, field: &str, lo: f64, hi: f64| -> Result<Option<f64>, String> {
            match v {
                Some(x) if !(x > lo && x <= hi) => Err(format!(
                    "{at}: {field} = {x}: allowed above {lo} up to {hi}"
                )),
                Some(_) if !matches!(app, AppSpec::Fio { .. }) => Err(format!(
                    "{at}: {field} needs app = \"fio\" (it judges IOPS)"
                )),
                _ => Ok(v),
            }
        };
        let expect_floor = frac(r.expect_floor, "expect_floor", 0.0, 1.0)?;
        let expect_ceiling = frac(r.expect_ceiling, "expect_ceiling", 0.0, 0.5)?;
        if (expect_floor.is_some() || expect_ceiling.is_some()) && r.policy.is_none() {
            return Err(format!("{at}: expect_floor / expect_ceiling need a policy (a floor or ceiling to judge against)"));
        }
        Ok(ClassSpec {
            expect_floor,
            expect_ceiling,
            name: r.name.clone(),
            policy: r.policy.clone(),
            size,
            snapshot_reserve_percent: reserve,
            fs,
            app,
        })
    }
}

/// A fio class's application: its mix, queue depth, rate and data set (`size`: the
/// class's volume size, which the data set must fit).
fn fio_app(r: &RawClass, size: u64, at: &str) -> Result<AppSpec, String> {
    let mix = FioMix::parse(r.mix.as_deref().unwrap_or("random"))
        .map_err(|e| format!("{at}: mix: {e}"))?;
    let fio_size = match &r.fio_size {
        Some(v) => parse_size(v, &format!("{at}: fio_size"))?,
        None => size.min(256 << 20),
    };
    if fio_size > size {
        return Err(format!(
            "{at}: fio_size {fio_size} is larger than the class's size {size}"
        ));
    }
    Ok(AppSpec::Fio {
        mix,
        iodepth: in_range(r.iodepth.unwrap_or(4), 1, 1024, &format!("{at}: iodepth"))? as u32,
        rate_iops: r
            .rate_iops
            .map(|v| in_range(v, 1, 10_000_000, &format!("{at}: rate_iops")))
            .transpose()?
            .map(|v| v as u32),
        size: fio_size,
    })
}

#[cfg(test)]
impl TenantsSpec {
    /// The spec of the `[[class]]` tables in `text`, with the default `[tenants]` (unit
    /// tests).
    pub(crate) fn of_classes(text: &str) -> TenantsSpec {
        #[derive(serde::Deserialize)]
        struct V {
            class: Vec<RawClass>,
        }
        let v: V = toml::from_str(text).unwrap();
        TenantsSpec::from_raw(&Default::default(), &v.class).unwrap()
    }
}

impl TenantsSpec {
    /// Validate the tables. The classes' policies are checked where the target is known
    /// ([`TenantsSpec::check_policies`] on the embedded node; a `--node` may hold them).
    pub fn from_raw(t: &RawTenants, classes: &[RawClass]) -> Result<TenantsSpec, String> {
        let points: Vec<usize> = match &t.points {
            None => vec![1, 2, 4, 8, 16],
            Some(p) if p.is_empty() => {
                return Err("[tenants] points: give at least one scale point".into())
            }
            Some(p) => p
                .iter()
                .map(|&n| {
                    in_range(n, 1, MAX_TENANTS as i64, "[tenants] points").map(|n| n as usize)
                })
                .collect::<Result<_, _>>()?,
        };
        let mut seen = std::collections::BTreeSet::new();
        for p in &points {
            if !seen.insert(p) {
                return Err(format!("[tenants] points: {p} is listed twice"));
            }
        }
        let iterations =
            in_range(t.iterations.unwrap_or(3), 1, 1000, "[tenants] iterations")? as u32;
        let timeout = t
            .timeout
            .as_ref()
            .map(|v| parse_duration(v, "[tenants] timeout"))
            .transpose()?
            .unwrap_or(600.0);
        let runtime = t
            .runtime
            .as_ref()
            .map(|v| parse_duration(v, "[tenants] runtime"))
            .transpose()?
            .unwrap_or(20.0);
        let ramp = match &t.ramp {
            Some(toml::Value::Integer(0)) => 0.0,
            Some(v) => parse_duration(v, "[tenants] ramp")?,
            None => 2.0,
        };
        if classes.is_empty() {
            return Err("a tenants plan needs at least one [[class]] (name, app, and optionally policy, size, fs)".into());
        }
        let mut out = Vec::new();
        for c in classes {
            let spec = ClassSpec::from_raw(c)?;
            if out.iter().any(|o: &ClassSpec| o.name == spec.name) {
                return Err(format!("[[class]] {}: defined twice", spec.name));
            }
            out.push(spec);
        }
        let capacity = match (t.capacity_iops, t.capacity_mbps) {
            (None, None) => {
                if t.discipline.is_some() {
                    return Err("[tenants] discipline needs capacity_iops or capacity_mbps (an emulated controller)".into());
                }
                None
            }
            (iops, mbps) => Some(storage_node::config::Capacity {
                iops: in_range(iops.unwrap_or(0), 0, 100_000_000, "[tenants] capacity_iops")?
                    as u64,
                mbps: in_range(mbps.unwrap_or(0), 0, 1_048_576, "[tenants] capacity_mbps")? as u64,
                cost_unit: 32 << 10,
                discipline: match t.discipline.as_deref().unwrap_or("mclock") {
                    "mclock" => storage_node::config::Discipline::Mclock,
                    "fifo" => storage_node::config::Discipline::Fifo,
                    d => {
                        return Err(format!(
                            "[tenants] discipline = {d:?}: allowed mclock, fifo"
                        ))
                    }
                },
            }),
        };
        if capacity
            .as_ref()
            .is_some_and(|c| c.iops == 0 && c.mbps == 0)
        {
            return Err(
                "[tenants] capacity_iops / capacity_mbps: at least one must be above 0".into(),
            );
        }
        let cache_default = std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
            .unwrap_or_else(|| PathBuf::from("/var/cache"))
            .join("qoslab");
        Ok(TenantsSpec {
            points,
            iterations,
            timeout,
            runtime,
            ramp,
            base_dir: t
                .base_dir
                .clone()
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from(mounts::DEFAULT_BASE)),
            cache_dir: t
                .cache_dir
                .clone()
                .map(PathBuf::from)
                .unwrap_or(cache_default),
            classes: out,
            capacity,
        })
    }

    /// Whether any class mounts file systems (needs root, /dev/fuse, loop devices).
    pub fn mounts(&self) -> bool {
        self.classes.iter().any(|c| c.app.mounts())
    }

    /// The volume of tenant `i` (from 0) of `class` at a point of `n` tenants.
    /// Every class's policy must be one of `policies` (the plan's `[[policy]]` names: the
    /// embedded node has no others).
    pub fn check_policies(&self, policies: &[String]) -> Result<(), String> {
        for c in &self.classes {
            if let Some(p) = &c.policy {
                if !policies.contains(p) {
                    return Err(format!(
                        "[[class]] {}: policy {p:?} is not a [[policy]] of this plan (plan policies: {})",
                        c.name,
                        if policies.is_empty() { "none".to_string() } else { policies.join(", ") }
                    ));
                }
            }
        }
        Ok(())
    }

    pub fn volume_name(class: &str, n: usize, i: usize) -> String {
        format!("{class}-n{n}-t{i}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadgen::apps::broker::activemq::Destination;

    fn parse(text: &str, policies: &[&str]) -> Result<TenantsSpec, String> {
        #[derive(Deserialize)]
        struct View {
            #[serde(default)]
            tenants: RawTenants,
            #[serde(default)]
            class: Vec<RawClass>,
        }
        let v: View = toml::from_str(text).map_err(|e| e.to_string())?;
        let p: Vec<String> = policies.iter().map(|s| s.to_string()).collect();
        let s = TenantsSpec::from_raw(&v.tenants, &v.class)?;
        s.check_policies(&p)?;
        Ok(s)
    }

    #[test]
    fn defaults_are_the_issues() {
        let s = parse("[[class]]\nname = \"std\"\napp = \"git\"\n", &[]).unwrap();
        assert_eq!(s.points, [1, 2, 4, 8, 16]);
        assert_eq!(s.iterations, 3);
        assert_eq!(s.classes[0].size, 1 << 30);
        assert_eq!(s.classes[0].fs, FsType::Ext4);
        assert_eq!(s.classes[0].app, AppSpec::Git(RepoSpec::default()));
        assert!(s.mounts());
        assert_eq!(TenantsSpec::volume_name("gold", 8, 3), "gold-n8-t3");
    }

    #[test]
    fn build_and_broker_classes_take_their_tables() {
        let s = parse(
            "[[class]]\nname = \"ci\"\napp = \"build\"\nbuild = { builds = 2, units = 5, dep_bytes = \"1MiB\" }\n\
             [[class]]\nname = \"amq\"\napp = \"broker\"\nbroker = { secs = 30, message_size = \"4KiB\", destination = \"queue\" }\n",
            &[],
        )
        .unwrap();
        assert_eq!(
            s.classes[0].app,
            AppSpec::Build(BuildSpec {
                builds: 2,
                units: 5,
                dep_bytes: 1 << 20,
                ..BuildSpec::default()
            })
        );
        assert_eq!(
            s.classes[1].app,
            AppSpec::Broker(BrokerSpec {
                secs: 30,
                message_size: 4096,
                destination: Destination::Queue,
                ..BrokerSpec::default()
            })
        );
        assert!(s.mounts());
    }

    #[test]
    fn a_full_plan_parses() {
        let s = parse(
            r#"
[tenants]
points = [1, 10, 50]
iterations = 10
timeout = "15m"
runtime = "30s"
ramp = 0

[[class]]
name = "gold"
policy = "gold"
app = "fio"
mix = "oltp"
iodepth = 2
rate_iops = 200
size = "256MiB"

[[class]]
name = "cache"
app = "redis"
fs = "xfs"
size = "3GiB"
redis = { records = 1000, operations = 2000, threads = 2, appendfsync = "always" }
"#,
            &["gold"],
        )
        .unwrap();
        assert_eq!(
            (s.points.clone(), s.iterations, s.timeout, s.runtime, s.ramp),
            (vec![1, 10, 50], 10, 900.0, 30.0, 0.0)
        );
        assert_eq!(
            s.classes[0].app,
            AppSpec::Fio {
                mix: FioMix::Oltp,
                iodepth: 2,
                rate_iops: Some(200),
                size: 256 << 20
            }
        );
        assert!(
            matches!(&s.classes[1].app, AppSpec::Redis(r) if r.records == 1000 && r.appendfsync == "always")
        );
        assert_eq!(s.classes[1].fs, FsType::Xfs);
    }

    #[test]
    fn mistakes_are_named() {
        let cases: &[(&str, &str)] = &[
            (
                "[tenants]\npoints = []\n[[class]]\nname = \"a\"\napp = \"git\"\n",
                "at least one scale point",
            ),
            (
                "[tenants]\npoints = [1, 0]\n[[class]]\nname = \"a\"\napp = \"git\"\n",
                "[tenants] points = 0: allowed 1 to 10000",
            ),
            (
                "[tenants]\npoints = [2, 2]\n[[class]]\nname = \"a\"\napp = \"git\"\n",
                "2 is listed twice",
            ),
            (
                "[tenants]\niterations = 0\n[[class]]\nname = \"a\"\napp = \"git\"\n",
                "[tenants] iterations = 0",
            ),
            (
                "[tenants]\ntimeout = \"soon\"\n[[class]]\nname = \"a\"\napp = \"git\"\n",
                "[tenants] timeout = \"soon\"",
            ),
            ("[tenants]\n", "at least one [[class]]"),
            (
                "[[class]]\nname = \"a b\"\napp = \"git\"\n",
                "[[class]] name \"a b\"",
            ),
            (
                "[[class]]\nname = \"a\"\napp = \"jenkins\"\n",
                "app = \"jenkins\": allowed git, redis, build, broker, fio",
            ),
            (
                "[[class]]\nname = \"a\"\napp = \"build\"\nbuild = { builds = 0 }\n",
                "[[class]] a: build.builds = 0: allowed 1 to 16",
            ),
            (
                "[[class]]\nname = \"a\"\napp = \"build\"\nbroker = { secs = 5 }\n",
                "[[class]] a: broker applies to app = \"broker\" only",
            ),
            (
                "[[class]]\nname = \"a\"\napp = \"broker\"\nbroker = { destination = \"pipe\" }\n",
                "broker.destination = \"pipe\": allowed queue, topic",
            ),
            (
                "[[class]]\nname = \"a\"\napp = \"broker\"\nbroker = { secs = 0 }\n",
                "broker.secs = 0: allowed 1 to 3600",
            ),
            (
                "[[class]]\nname = \"a\"\napp = \"git\"\npolicy = \"nope\"\n",
                "policy \"nope\" is not a [[policy]] of this plan",
            ),
            (
                "[[class]]\nname = \"a\"\napp = \"git\"\nfs = \"btrfs\"\n",
                "[[class]] a: fs: unknown file system \"btrfs\"",
            ),
            (
                "[[class]]\nname = \"a\"\napp = \"git\"\nfs = \"xfs\"\nsize = \"256MiB\"\n",
                "too small for xfs",
            ),
            (
                "[[class]]\nname = \"a\"\napp = \"git\"\nrate_iops = 5\n",
                "rate_iops applies to app = \"fio\" only",
            ),
            (
                "[[class]]\nname = \"a\"\napp = \"redis\"\nredis = { threads = 0 }\n",
                "redis.threads = 0",
            ),
            (
                "[[class]]\nname = \"a\"\napp = \"fio\"\nfio_size = \"2GiB\"\n",
                "larger than the class's size",
            ),
            (
                "[[class]]\nname = \"a\"\napp = \"git\"\n[[class]]\nname = \"a\"\napp = \"git\"\n",
                "[[class]] a: defined twice",
            ),
            (
                "[[class]]\nname = \"a\"\napp = \"git\"\ncolour = 1\n",
                "unknown field `colour`",
            ),
        ];
        for (text, want) in cases {
            let e = parse(text, &[]).unwrap_err();
            assert!(e.contains(want), "{want:?} not in {e:?}");
        }
    }
}

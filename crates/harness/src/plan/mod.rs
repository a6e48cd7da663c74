//! Plans: a TOML file declaring the node setup and the work, validated once, at the edge.
//! Errors name the file, the line, the key and what is allowed.
//!
//! This module parses what every plan shares: `[bench]` (name, runtime, ramp, iterations,
//! target, mmap_reads) and the embedded node's `[[policy]]`, `[[volume]]`, `[capacity]`
//! and `[[iscsi.lun]]` (by the node's own config parser, with the plan's line numbers).
//! Every other top-level table belongs to a workload family (`[[workload]]`, `[ramp]`, `[[system]]`, ...), which
//! parses it itself from the same text ([`PlanSource`]); [`crate::family::Registry::parse`]
//! puts the two together.
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
//! [[iscsi.lun]]           # node.toml's too: the volume is a LUN, fio reaches it over iSCSI
//! volume = "vol500"       # (its libiscsi engine; the embedded node listens on a loopback
//!                         # port; on --node, LUN /vol/vol500/bench at the node's listener)
//! ```

mod duration;
pub mod fio_options;
pub mod iscsi_on_node;

use std::collections::BTreeMap;
use std::path::Path;

use crate::node_spec::NodeSpec;
use serde::de::{DeserializeOwned, IgnoredAny};
use serde::Deserialize;
use toml::Spanned;

pub use duration::{parse_duration, parse_duration_str};
pub use iscsi_on_node::{Written, WrittenIscsi, WrittenLun};

/// A plan error, phrased for a human (file:line: what, and what is allowed).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct PlanError(pub String);

/// Default runtime (dbench's) and ramp, seconds.
pub const DEFAULT_RUNTIME: f64 = 15.0;
pub const DEFAULT_RAMP: f64 = 2.0;

/// The top-level tables every plan may hold, whatever its family.
pub const COMMON_TABLES: [&str; 5] = ["bench", "policy", "volume", "capacity", "iscsi"];

/// A plan's text and where it came from: what a family parses its tables from, and how
/// its errors name a line.
#[derive(Debug, Clone, Copy)]
pub struct PlanSource<'a> {
    pub text: &'a str,
    pub origin: &'a str,
    /// `qoslab bench --allow-any-fio-option`: the plan's fio options may be any fio option
    /// (by default only the workload options of [`fio::options::LISTED`]).
    pub any_fio_option: bool,
}

impl<'a> PlanSource<'a> {
    pub fn new(text: &'a str, origin: &'a str) -> PlanSource<'a> {
        PlanSource {
            text,
            origin,
            any_fio_option: false,
        }
    }

    /// The same plan, its fio options allowed to be any fio option (they may name paths
    /// and run programs: the user trusts the plan's author).
    pub fn allowing_any_fio_option(self, any: bool) -> PlanSource<'a> {
        PlanSource {
            any_fio_option: any,
            ..self
        }
    }

    /// The 1-based line of byte `offset`.
    pub fn line(&self, offset: usize) -> usize {
        line_of(self.text, offset)
    }

    /// "origin:line" of byte `offset` (a `toml::Spanned`'s `span().start`).
    pub fn at(&self, offset: usize) -> String {
        format!("{}:{}", self.origin, self.line(offset))
    }

    /// Deserialize the whole plan into a family's view of it: a struct holding only its own
    /// tables (other tables are ignored; the common parser has checked every top-level key).
    /// Spans in the result are offsets into the plan's text, so errors keep its lines.
    pub fn deserialize<T: DeserializeOwned>(&self) -> Result<T, PlanError> {
        toml::from_str(self.text).map_err(|e| self.toml_error(&e))
    }

    fn toml_error(&self, e: &toml::de::Error) -> PlanError {
        let line = e
            .span()
            .map(|s| format!(":{}", self.line(s.start)))
            .unwrap_or_default();
        PlanError(format!("{}{line}: {}", self.origin, e.message()))
    }
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// What every plan declares, parsed and validated.
#[derive(Debug, Clone)]
pub struct Common {
    pub origin: String,
    pub text: String,
    /// `[bench].name`, else the plan file's stem.
    pub name: String,
    /// Seconds per fio job (`[bench].runtime`, `--runtime`).
    pub runtime: f64,
    /// fio's ramp time per job, seconds.
    pub ramp: f64,
    pub iterations: u32,
    /// `[bench].target` (the command line's `--target` wins).
    pub target: Option<String>,
    /// The embedded node's setup (None when the plan declares no volume or policy).
    pub node: Option<NodeSpec>,
    /// What the plan's `[iscsi]` wrote beyond its LUNs' volumes, with its lines: what a
    /// running node (`--node`) honours or refuses ([`iscsi_on_node`]).
    pub iscsi: WrittenIscsi,
}

impl Common {
    /// The embedded node's volume names, in plan order.
    pub fn volumes(&self) -> Vec<String> {
        self.node
            .as_ref()
            .map(|n| n.volumes.iter().map(|v| v.name.clone()).collect())
            .unwrap_or_default()
    }

    /// A plan's common part made without a file (a `--profile` that builds its own run).
    pub fn without_file(name: &str, origin: &str, text: String) -> Common {
        Common {
            origin: origin.into(),
            text,
            name: name.into(),
            runtime: DEFAULT_RUNTIME,
            ramp: DEFAULT_RAMP,
            iterations: 1,
            target: None,
            node: None,
            iscsi: WrittenIscsi::default(),
        }
    }
}

#[derive(Deserialize)]
struct RawCommon {
    bench: Option<RawBench>,
    #[serde(default)]
    policy: Vec<toml::Value>,
    #[serde(default)]
    volume: Vec<toml::Value>,
    /// The embedded node's emulated controller (node.toml's `[capacity]`); read by the
    /// node's own config parser.
    capacity: Option<toml::Value>,
    /// The embedded node's LUNs (node.toml's `[iscsi]`, `[[iscsi.lun]]`); read by the
    /// node's own config parser, the keys a plan may not set checked here.
    iscsi: Option<RawPlanIscsi>,
}

/// What a plan's `[iscsi]` is checked for beyond node.toml's rules: the embedded node
/// listens on a loopback port of its own and fio logs in as [`crate::iscsi::INITIATOR`]
/// without a secret.
#[derive(Deserialize)]
struct RawPlanIscsi {
    iqn: Option<Spanned<toml::Value>>,
    alias: Option<Spanned<toml::Value>>,
    listen: Option<Spanned<toml::Value>>,
    portal: Option<Spanned<toml::Value>>,
    #[serde(default)]
    credentials: Vec<Spanned<toml::Value>>,
    #[serde(default)]
    lun: Vec<RawPlanLun>,
}

#[derive(Deserialize)]
struct RawPlanLun {
    volume: Option<toml::Value>,
    lun: Option<Spanned<toml::Value>>,
    block_size: Option<Spanned<toml::Value>>,
    initiators: Option<Spanned<toml::Value>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawBench {
    name: Option<String>,
    runtime: Option<Spanned<toml::Value>>,
    ramp: Option<Spanned<toml::Value>>,
    iterations: Option<Spanned<i64>>,
    target: Option<String>,
    mmap_reads: Option<bool>,
}

/// serde's wording for an unknown field, so a plan's top-level keys read like its nested ones.
fn unknown_key(key: &str, allowed: &[&str]) -> String {
    let q: Vec<String> = allowed.iter().map(|k| format!("`{k}`")).collect();
    let expected = match q.len() {
        0 => "there are no fields".to_string(),
        1 => format!("expected {}", q[0]),
        2 => format!("expected {} or {}", q[0], q[1]),
        _ => format!("expected one of {}", q.join(", ")),
    };
    format!("unknown field `{key}`, {expected} (a plan's top-level keys)")
}

/// The node-section lines of a plan (`[[policy]]`, `[[volume]]`, `[capacity]`), other lines
/// blanked so node config errors carry the plan's own line numbers. Sections are found by
/// their `[header]` lines.
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
            keep = matches!(root.as_str(), "policy" | "volume" | "capacity" | "iscsi");
        }
        if keep {
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

/// Parse the common part of a plan. `family_tables` are the top-level tables the registered
/// families own (in registry order); any other key is an error. Returns the common part and
/// the plan's top-level keys with their offsets, in document order.
pub fn parse_common(
    src: &PlanSource,
    family_tables: &[&str],
) -> Result<(Common, Vec<(String, usize)>), PlanError> {
    let origin = src.origin;
    let keys: BTreeMap<Spanned<String>, IgnoredAny> = src.deserialize()?;
    let mut keys: Vec<(String, usize)> = keys
        .into_keys()
        .map(|k| (k.get_ref().clone(), k.span().start))
        .collect();
    keys.sort_by_key(|k| k.1);
    let allowed: Vec<&str> = COMMON_TABLES.iter().chain(family_tables).copied().collect();
    if let Some((k, at)) = keys.iter().find(|(k, _)| !allowed.contains(&k.as_str())) {
        return Err(PlanError(format!(
            "{}: {}",
            src.at(*at),
            unknown_key(k, &allowed)
        )));
    }
    let raw: RawCommon = src.deserialize()?;
    let bench = raw.bench.unwrap_or_default();
    let dur = |v: &Option<Spanned<toml::Value>>, key: &str| -> Result<Option<f64>, PlanError> {
        match v {
            None => Ok(None),
            Some(s) => parse_duration(s.get_ref())
                .map(Some)
                .map_err(|m| PlanError(format!("{}: bench.{key}: {m}", src.at(s.span().start)))),
        }
    };
    let runtime = dur(&bench.runtime, "runtime")?.unwrap_or(DEFAULT_RUNTIME);
    let ramp = dur(&bench.ramp, "ramp")?.unwrap_or(DEFAULT_RAMP);
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
                    src.at(s.span().start)
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
    if let Some(i) = &raw.iscsi {
        check_plan_iscsi(src, i)?;
    }
    let node = if raw.volume.is_empty() && raw.policy.is_empty() && raw.iscsi.is_none() {
        None
    } else {
        let mut cfg = NodeSpec::parse(&node_section_text(src.text), origin)
            .map_err(|e| PlanError(e.to_string()))?;
        if let Some(m) = bench.mmap_reads {
            cfg.mmap_reads = m;
        }
        Some(cfg)
    };
    let common = Common {
        origin: origin.to_string(),
        text: src.text.to_string(),
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
        iscsi: written_iscsi(src, raw.iscsi.as_ref(), node.as_ref()),
        node,
    };
    Ok((common, keys))
}

/// What the plan's `[iscsi]` wrote beyond its LUNs' volumes, at its lines: the values as
/// the node's parser validated them (`node`).
fn written_iscsi(
    src: &PlanSource,
    raw: Option<&RawPlanIscsi>,
    node: Option<&NodeSpec>,
) -> WrittenIscsi {
    let (Some(raw), Some(node)) = (raw, node) else {
        return WrittenIscsi::default();
    };
    let at = |s: &Spanned<toml::Value>| src.at(s.span().start);
    let written = |s: &Option<Spanned<toml::Value>>, value: Option<String>| {
        s.as_ref()
            .zip(value)
            .map(|(s, value)| Written { value, at: at(s) })
    };
    let mut out = WrittenIscsi {
        iqn: written(&raw.iqn, Some(node.iscsi.iqn.clone())),
        alias: written(&raw.alias, node.iscsi.alias.clone()),
        luns: Vec::new(),
    };
    for (index, l) in raw.lun.iter().enumerate() {
        let volume = l
            .volume
            .as_ref()
            .and_then(|v| v.as_str())
            .unwrap_or_default();
        let Some(spec) = node.iscsi.luns.iter().find(|s| s.volume == volume) else {
            continue;
        };
        let w = |s: &Option<Spanned<toml::Value>>| s.as_ref().map(at);
        out.luns.push(WrittenLun {
            index,
            volume: volume.to_string(),
            lun: w(&l.lun).map(|at| Written {
                value: spec.number,
                at,
            }),
            block_size: w(&l.block_size).map(|at| Written {
                value: spec.block_size,
                at,
            }),
            initiators: w(&l.initiators)
                .and_then(|at| spec.initiators.clone().map(|value| Written { value, at })),
        });
    }
    out
}

/// A plan's `[iscsi]`: node.toml's, but the embedded node's target listens on a loopback
/// port of its own (no `listen`, `portal`) and fio logs in without a secret as
/// [`crate::iscsi::INITIATOR`] (no `[[iscsi.credentials]]`; a LUN's `initiators` name it).
fn check_plan_iscsi(src: &PlanSource, i: &RawPlanIscsi) -> Result<(), PlanError> {
    let own_port = "a plan's embedded node serves its LUNs on a loopback port of its own \
                    (a plan's [iscsi] may set iqn, alias and [[iscsi.lun]])";
    for (key, v) in [("listen", &i.listen), ("portal", &i.portal)] {
        if let Some(v) = v {
            return Err(PlanError(format!(
                "{}: iscsi.{key} = {}: {own_port}",
                src.at(v.span().start),
                shown(v.get_ref())
            )));
        }
    }
    if let Some(c) = i.credentials.first() {
        return Err(PlanError(format!(
            "{}: iscsi.credentials: fio logs in to the embedded node as {} without a secret; \
             a plan takes no [[iscsi.credentials]] (CHAP is a running node's: `qoslab serve`)",
            src.at(c.span().start),
            crate::iscsi::INITIATOR
        )));
    }
    for (n, l) in i.lun.iter().enumerate() {
        let Some(list) = &l.initiators else { continue };
        let names = list.get_ref().as_array();
        let sees = names.is_some_and(|a| {
            a.iter().any(|x| {
                x.as_str()
                    .is_some_and(|s| s.eq_ignore_ascii_case(crate::iscsi::INITIATOR))
            })
        });
        // A list of something else is the node's parser's to name.
        if names.is_some() && !sees {
            let vol = l.volume.as_ref().map_or("?".to_string(), shown);
            return Err(PlanError(format!(
                "{}: iscsi.lun[{n}] (volume {vol}): initiators = {}: fio logs in as {}, which \
                 this list leaves out (it would see no LUN); add it, or leave the key out",
                src.at(list.span().start),
                shown(list.get_ref()),
                crate::iscsi::INITIATOR
            )));
        }
    }
    Ok(())
}

/// A TOML value as the plan wrote it (strings quoted, arrays bracketed).
fn shown(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => format!("{s:?}"),
        toml::Value::Integer(i) => i.to_string(),
        toml::Value::Float(f) => f.to_string(),
        toml::Value::Boolean(b) => b.to_string(),
        toml::Value::Array(a) => {
            let items: Vec<String> = a.iter().map(shown).collect();
            format!("[{}]", items.join(", "))
        }
        other => format!("{other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        parse_common(&PlanSource::new(text, "p.toml"), &["workload"])
            .unwrap_err()
            .0
    }

    #[test]
    fn common_tables_and_their_lines() {
        let text = "[bench]\nname = \"x\"\nruntime = \"3s\"\niterations = 2\n\n[[volume]]\nname = \"v\"\nsize = \"1GB\"\n\n[[workload]]\nfio = {}\n";
        let (c, keys) =
            parse_common(&PlanSource::new(text, "plans/p.toml"), &["workload"]).unwrap();
        assert_eq!(
            (c.name.as_str(), c.runtime, c.ramp, c.iterations),
            ("x", 3.0, DEFAULT_RAMP, 2)
        );
        assert_eq!(c.volumes(), ["v"]);
        let names: Vec<&str> = keys.iter().map(|k| k.0.as_str()).collect();
        assert_eq!(names, ["bench", "volume", "workload"]);
        assert_eq!(PlanSource::new(text, "p").line(keys[2].1), 10);
        let (c, _) = parse_common(&PlanSource::new("", "dir/plan.toml"), &[]).unwrap();
        assert_eq!(c.name, "plan");
        assert!(c.node.is_none());
    }

    #[test]
    fn unknown_keys_read_like_serdes() {
        assert_eq!(
            err("[bench]\nname = \"x\"\n\n[node]\ndata_dir = \"x\"\n"),
            "p.toml:4: unknown field `node`, expected one of `bench`, `policy`, `volume`, `capacity`, `iscsi`, `workload` (a plan's top-level keys)"
        );
        assert_eq!(
            unknown_key("x", &["a", "b"]),
            "unknown field `x`, expected `a` or `b` (a plan's top-level keys)"
        );
        assert!(err("[bench]\nrunz = 1\n")
            .contains("p.toml:2: unknown field `runz`, expected one of `name`"));
        assert!(err("[bench\n").starts_with("p.toml:1: "));
        assert!(err("[bench]\nruntime = \"0s\"\n").contains("bench.runtime must be more than 0 s"));
        assert!(err("[capacity]\niops = 5\n").contains("needs at least one [[volume]]"));
    }

    #[test]
    fn a_plans_volume_may_be_a_lun() {
        let text = "[[volume]]\nname = \"db\"\nsize = \"1GiB\"\n\n[[volume]]\nname = \"logs\"\nsize = \"1GiB\"\n\n\
                    [[iscsi.lun]]\nvolume = \"db\"\nblock_size = 4096\n\n[[workload]]\nfio = {}\n";
        let (c, _) = parse_common(&PlanSource::new(text, "p.toml"), &["workload"]).unwrap();
        let node = c.node.unwrap();
        assert_eq!(node.iscsi.luns.len(), 1);
        let l = &node.iscsi.luns[0];
        assert_eq!((l.volume.as_str(), l.number, l.block_size), ("db", 0, 4096));
        assert_eq!(node.iscsi.listen, None);
        // [iscsi] alone (iqn) is the node's too.
        let (c, _) = parse_common(
            &PlanSource::new(
                "[[volume]]\nname = \"db\"\nsize = \"1GiB\"\n[iscsi]\niqn = \"iqn.2026-01.lab.qoslab:plan\"\n[[iscsi.lun]]\nvolume = \"db\"\ninitiators = [\"iqn.2026-01.lab.qoslab:bench\"]\n",
                "p.toml",
            ),
            &[],
        )
        .unwrap();
        assert_eq!(c.node.unwrap().iscsi.iqn, "iqn.2026-01.lab.qoslab:plan");
    }

    #[test]
    fn what_a_plans_iscsi_wrote_is_kept_at_its_lines_for_a_running_node() {
        let text = "[[volume]]\nname = \"db\"\nsize = \"1GiB\"\n[[volume]]\nname = \"logs\"\nsize = \"1GiB\"\n\
                    [iscsi]\niqn = \"iqn.2026-01.lab.qoslab:plan\"\n\
                    [[iscsi.lun]]\nvolume = \"logs\"\n\
                    [[iscsi.lun]]\nvolume = \"db\"\nlun = 3\nblock_size = 4096\n\
                    initiators = [\"iqn.2026-01.lab.qoslab:bench\", \"iqn.1993-08.org.debian:01:h\"]\n";
        let (c, _) = parse_common(&PlanSource::new(text, "p.toml"), &[]).unwrap();
        let w = &c.iscsi;
        let iqn = w.iqn.as_ref().unwrap();
        assert_eq!(
            (iqn.value.as_str(), iqn.at.as_str()),
            ("iqn.2026-01.lab.qoslab:plan", "p.toml:8")
        );
        assert_eq!(w.alias, None);
        // The LUN without keys of its own: none written (its number is the node's choice).
        let logs = w.lun("logs").unwrap();
        assert_eq!(
            (logs.index, &logs.lun, &logs.block_size, &logs.initiators),
            (0, &None, &None, &None)
        );
        let db = w.lun("db").unwrap();
        assert_eq!(db.index, 1);
        let l = db.lun.as_ref().unwrap();
        assert_eq!((l.value, l.at.as_str()), (3, "p.toml:13"));
        let b = db.block_size.as_ref().unwrap();
        assert_eq!((b.value, b.at.as_str()), (4096, "p.toml:14"));
        let i = db.initiators.as_ref().unwrap();
        assert_eq!((i.value.len(), i.at.as_str()), (2, "p.toml:15"));
        // On a running node: the block size is refused at its line first.
        let e = w.check_on_node(&["db".to_string()]).unwrap_err().0;
        assert!(
            e.starts_with(
                "p.toml:14: iscsi.lun[1] (volume \"db\"): block_size = 4096: with --node"
            ),
            "{e}"
        );
        let (c, _) = parse_common(
            &PlanSource::new(&text.replace("block_size = 4096\n", ""), "p.toml"),
            &[],
        )
        .unwrap();
        let e = c.iscsi.check_on_node(&["db".to_string()]).unwrap_err().0;
        assert!(
            e.starts_with("p.toml:14: iscsi.lun[1] (volume \"db\"): initiators = "),
            "{e}"
        );
        // Nothing but volumes: nothing written, nothing to refuse.
        let (c, _) = parse_common(
            &PlanSource::new("[[volume]]\nname = \"db\"\nsize = \"1GiB\"\n", "p.toml"),
            &[],
        )
        .unwrap();
        assert_eq!(c.iscsi, WrittenIscsi::default());
    }

    #[test]
    fn a_plans_luns_are_refused_with_file_line_field_and_value() {
        let vol = "[[volume]]\nname = \"db\"\nsize = \"1GiB\"\n\n";
        // The node's own rules, at the plan's lines.
        let e = err(&format!("{vol}[[iscsi.lun]]\nvolume = \"dbx\"\n"));
        assert!(
            e.starts_with("p.toml:6: iscsi.lun[0] (volume \"dbx\"): volume = \"dbx\": not a [[volume]] of this file (its block volumes: db)"),
            "{e}"
        );
        let e = err(&format!(
            "{vol}[[iscsi.lun]]\nvolume = \"db\"\nblock_size = 1024\n"
        ));
        assert!(
            e.starts_with("p.toml:7: iscsi.lun[0] (volume \"db\"): block_size = 1024: allowed values are 512 and 4096"),
            "{e}"
        );
        let e = err(&format!(
            "{vol}[[iscsi.lun]]\nvolume = \"db\"\nlun_id = 1\n"
        ));
        assert!(e.contains("p.toml:") && e.contains("lun_id"), "{e}");
        let e = err("[[iscsi.lun]]\nvolume = \"db\"\n");
        assert!(
            e.contains("not a [[volume]] of this file (its block volumes: none)"),
            "{e}"
        );
        // What the embedded node decides itself.
        let e = err(&format!("{vol}[iscsi]\nlisten = \"0.0.0.0:3260\"\n"));
        assert_eq!(
            e,
            "p.toml:6: iscsi.listen = \"0.0.0.0:3260\": a plan's embedded node serves its LUNs \
             on a loopback port of its own (a plan's [iscsi] may set iqn, alias and [[iscsi.lun]])"
        );
        let e = err(&format!("{vol}[iscsi]\nportal = \"192.0.2.1\"\n"));
        assert!(
            e.starts_with("p.toml:6: iscsi.portal = \"192.0.2.1\": "),
            "{e}"
        );
        let e = err(&format!(
            "{vol}[[iscsi.credentials]]\ninitiator = \"default\"\nauthentication_type = \"deny\"\n"
        ));
        assert!(
            e.starts_with("p.toml:5: iscsi.credentials: fio logs in to the embedded node as iqn.2026-01.lab.qoslab:bench without a secret"),
            "{e}"
        );
        let e = err(&format!(
            "{vol}[[iscsi.lun]]\nvolume = \"db\"\ninitiators = [\"iqn.1993-08.org.debian:01:host\"]\n"
        ));
        assert_eq!(
            e,
            "p.toml:7: iscsi.lun[0] (volume \"db\"): initiators = [\"iqn.1993-08.org.debian:01:host\"]: \
             fio logs in as iqn.2026-01.lab.qoslab:bench, which this list leaves out (it would see \
             no LUN); add it, or leave the key out"
        );
    }
}

//! [`NodeConfig::parse`](super::NodeConfig::parse), one section at a time: each function
//! checks its section's raw keys (every error names the file, line, field, value and
//! what is allowed) and fills its part of the config.

use std::collections::BTreeSet;
use std::net::SocketAddr;

use qos_core::{default_adaptive_groups, parse_size, Policy};
use toml::Spanned;

use super::values::{adaptive, fixed, volume_size};
use super::{
    array, burst, key_offset, line_of, nfs, table_line, valid_name, Capacity, ConfigError,
    Discipline, NodeConfig, NumOrStr, PolicySpec, RawCapacity, RawNode, RawPolicy, RawVolume, Src,
    VolumeSpec, DEFAULT_COST_UNIT, NAME_RULE,
};

/// `[node]`: listeners, reads, the ceiling mode (NBD's keys are nbd-server's).
pub(super) fn node(src: &Src, node: RawNode, cfg: &mut NodeConfig) -> Result<(), ConfigError> {
    let mut note = |key: &str, offset: usize| {
        cfg.sources.insert(format!("node.{key}"), src.at(offset));
    };
    if let Some(d) = &node.data_dir {
        note("data_dir", d.span().start);
    }
    if let Some(u) = &node.listen_unix {
        note("listen_unix", u.span().start);
    }
    cfg.data_dir = node.data_dir.map(Spanned::into_inner);
    cfg.listen_unix = node.listen_unix.map(Spanned::into_inner);
    if let Some(t) = node.listen_tcp {
        let addr = t.get_ref().parse::<SocketAddr>().map_err(|_| {
            ConfigError(format!(
                "{}: node.listen_tcp = {:?}: expected HOST:PORT with an IP address, e.g. 127.0.0.1:10809",
                src.at(t.span().start),
                t.get_ref()
            ))
        })?;
        cfg.sources
            .insert("node.listen_tcp".into(), src.at(t.span().start));
        cfg.listen_tcp = Some(addr);
    }
    if let Some(t) = node.listen_http {
        let addr = t.get_ref().parse::<SocketAddr>().map_err(|_| {
            ConfigError(format!(
                "{}: node.listen_http = {:?}: expected HOST:PORT with an IP address, e.g. 127.0.0.1:8080",
                src.at(t.span().start),
                t.get_ref()
            ))
        })?;
        cfg.sources
            .insert("node.listen_http".into(), src.at(t.span().start));
        cfg.listen_http = Some(addr);
    }
    cfg.mmap_reads = node.mmap_reads.unwrap_or(false);
    if let Some(m) = &node.ceiling_mode {
        cfg.ceiling_mode = m.get_ref().parse().map_err(|e| {
            ConfigError(format!(
                "{}: node.ceiling_mode = {e}",
                src.at(m.span().start)
            ))
        })?;
    }
    Ok(())
}

/// `[[export_policy]]`; returns the export policies' names (`default` included).
pub(super) fn export_policies(
    src: &Src,
    export_policies: &[Spanned<nfs::RawExportPolicy>],
    cfg: &mut NodeConfig,
) -> Result<BTreeSet<String>, ConfigError> {
    let mut export_names = BTreeSet::from([crate::nas::DEFAULT_EXPORT_POLICY.to_string()]);
    for se in export_policies {
        let e = se.get_ref();
        let what = format!(
            "{}:{}: export_policy {:?}",
            src.origin,
            line_of(src.text, se.span().start),
            e.name
        );
        if !valid_name(&e.name) {
            return Err(ConfigError(format!(
                "{what}: invalid name; names are {NAME_RULE}"
            )));
        }
        let spec = nfs::export_policy(&what, e)?;
        if e.name == crate::nas::DEFAULT_EXPORT_POLICY {
            // Declaring `default` replaces the built-in loopback rule.
            cfg.export_policies.retain(|p| p.name() != e.name);
        } else if !export_names.insert(e.name.clone()) {
            return Err(ConfigError(format!("{what}: duplicate export policy name")));
        }
        cfg.export_policies.push(spec);
    }

    Ok(export_names)
}

/// `[capacity]`: the emulated controller's budget and the array's model.
pub(super) fn capacity(
    src: &Src,
    mut c: RawCapacity,
    cfg: &mut NodeConfig,
) -> Result<(), ConfigError> {
    let what = format!(
        "{}:{}: capacity",
        src.origin,
        table_line(src.text, "capacity")
    );
    cfg.array = array::parse(
        &what,
        array::RawArray {
            io_accounting: c.io_accounting.take(),
            mbps_ceiling_with_floor: c.mbps_ceiling_with_floor.take(),
            read: c.read.take(),
            write: c.write.take(),
            latency: c.latency.take(),
        },
    )?;
    let c = &c;
    let count = |field: &str, v: Option<i64>| match v {
        Some(i) if i < 0 => Err(ConfigError(format!(
            "{what}.{field} = {i}: must be 0 (not limited) or positive"
        ))),
        v => Ok(v.unwrap_or(0) as u64),
    };
    let cap = Capacity {
        iops: count("iops", c.iops)?,
        mbps: count("mbps", c.mbps)?,
        cost_unit: match &c.cost_unit {
            None => DEFAULT_COST_UNIT,
            Some(NumOrStr::Int(i)) if *i >= 0 => *i as u64,
            Some(NumOrStr::Str(s)) => {
                parse_size(s).map_err(|e| ConfigError(format!("{what}.cost_unit: {e}")))?
            }
            Some(v) => {
                return Err(ConfigError(format!(
                    "{what}.cost_unit = {}: give bytes as an integer or a size such as \"32KiB\"",
                    v.as_text()
                )))
            }
        },
        discipline: match &c.discipline {
            None => Discipline::Mclock,
            Some(d) => d
                .parse()
                .map_err(|e| ConfigError(format!("{what}.discipline = {e}")))?,
        },
    };
    cap.validate(&what)?;
    cfg.calibrate = c.calibrate.unwrap_or(false);
    if cap.is_set() && cfg.calibrate {
        return Err(ConfigError(format!(
            "{what}: give either iops/mbps or calibrate = true, not both"
        )));
    }
    if cfg.array.model.is_some() && (cap.is_set() || cfg.calibrate) {
        return Err(ConfigError(format!(
            "{what}: give either iops/mbps (a budget of ops and bytes), read/write (an \
             array's measured points) or calibrate = true, not two of them"
        )));
    }
    if c.cost_unit.is_some() && !cfg.array.accounting.is_whole() {
        return Err(ConfigError(format!(
            "{what}: cost_unit applies to io_accounting = \"whole\" only; with {} the \
             controller counts the same operations as ceilings and floors",
            cfg.array.accounting
        )));
    }
    cfg.capacity = Some(cap);
    Ok(())
}

/// `[[policy]]`; returns every policy name (the built-in adaptive groups included).
pub(super) fn policies(
    src: &Src,
    policies: &[Spanned<RawPolicy>],
    cfg: &mut NodeConfig,
) -> Result<BTreeSet<String>, ConfigError> {
    let mut names: BTreeSet<String> = default_adaptive_groups()
        .into_iter()
        .map(|(n, _)| n.to_string())
        .collect();
    for sp in policies {
        let p = sp.get_ref();
        let name = p.name.get_ref();
        // Errors point at the key that is wrong: the name's line, or the kind's table.
        let ctx_at = |offset: usize| {
            let where_ = src.at(offset);
            move |msg: String| ConfigError(format!("{where_}: policy {name:?}: {msg}"))
        };
        let ctx = ctx_at(p.name.span().start);
        if !valid_name(name) {
            return Err(ctx(format!("invalid name; names are {NAME_RULE}")));
        }
        if !names.insert(name.clone()) {
            return Err(ctx(
                "duplicate policy name (extreme, performance and value are built in)".into(),
            ));
        }
        let (kind, parsed) = match (&p.fixed, &p.adaptive, &p.provisioned) {
            (Some(f), None, None) => ("fixed", fixed(f).map(Policy::Fixed)),
            (None, Some(a), None) => ("adaptive", adaptive(a).map(Policy::Adaptive)),
            (None, None, Some(v)) => (
                "provisioned",
                burst::provisioned(v).map(Policy::Provisioned),
            ),
            _ => {
                return Err(ctx_at(sp.span().start)(
                    "exactly one of `fixed`, `adaptive` or `provisioned` must be given".into(),
                ))
            }
        };
        let ctx = ctx_at(key_offset(src.text, sp.span().start, kind));
        let policy = parsed.map_err(&ctx)?;
        policy.validate().map_err(|e| ctx(e.to_string()))?;
        cfg.policies.push(PolicySpec {
            name: name.clone(),
            policy,
        });
    }

    Ok(names)
}

/// `[[volume]]`, against the policies and export policies declared.
pub(super) fn volumes(
    src: &Src,
    volumes: &[Spanned<RawVolume>],
    names: &BTreeSet<String>,
    export_names: &BTreeSet<String>,
    cfg: &mut NodeConfig,
) -> Result<(), ConfigError> {
    let mut vol_names = BTreeSet::new();
    for sv in volumes {
        let v = sv.get_ref();
        let name = v.name.get_ref();
        let ctx_at = |offset: usize| {
            let where_ = src.at(offset);
            move |msg: String| ConfigError(format!("{where_}: volume {name:?}: {msg}"))
        };
        let ctx = ctx_at(v.name.span().start);
        if !valid_name(name) {
            return Err(ctx(format!("invalid name; names are {NAME_RULE}")));
        }
        if !vol_names.insert(name.clone()) {
            return Err(ctx("duplicate volume name".into()));
        }
        let size = volume_size(v.size.get_ref()).map_err(ctx_at(v.size.span().start))?;
        let reserve = match &v.snapshot_reserve_percent {
            None => 5,
            Some(r) if (0..=90).contains(r.get_ref()) => *r.get_ref() as u8,
            Some(r) => {
                return Err(ctx_at(r.span().start)(format!(
                    "snapshot_reserve_percent = {}: allowed range is 0 to 90",
                    r.get_ref()
                )))
            }
        };
        if let Some(pn) = &v.policy {
            if !names.contains(pn.get_ref()) {
                let known: Vec<&str> = names.iter().map(String::as_str).collect();
                return Err(ctx_at(pn.span().start)(format!(
                    "policy = {:?} is not defined; defined policies: {}",
                    pn.get_ref(),
                    known.join(", ")
                )));
            }
        }
        let nas = match (&v.nas_path, &v.export_policy) {
            (None, None) => None,
            (None, Some(_)) => {
                return Err(ctx(
                    "export_policy applies to NAS volumes only: give nas_path too".into(),
                ))
            }
            (Some(p), e) => {
                crate::nas::valid_junction(p).map_err(|m| ctx(format!("nas_path: {m}")))?;
                if let Some(other) = cfg
                    .volumes
                    .iter()
                    .find(|o| o.nas.as_ref().is_some_and(|n| &n.path == p))
                {
                    return Err(ctx(format!(
                        "nas_path = {p:?} is already volume {:?}'s junction path",
                        other.name
                    )));
                }
                let e = e
                    .clone()
                    .unwrap_or_else(|| crate::nas::DEFAULT_EXPORT_POLICY.to_string());
                if !export_names.contains(&e) {
                    let known: Vec<&str> = export_names.iter().map(String::as_str).collect();
                    return Err(ctx(format!(
                        "export_policy = {e:?} is not defined; defined export policies: {}",
                        known.join(", ")
                    )));
                }
                Some(crate::nas::NasSpec {
                    path: p.clone(),
                    export_policy: e,
                    export_id: None,
                })
            }
        };
        cfg.volumes.push(VolumeSpec {
            name: name.clone(),
            size,
            snapshot_reserve_percent: reserve,
            read_only: v.read_only.unwrap_or(false),
            description: v.description.clone().unwrap_or_default(),
            policy: v.policy.as_ref().map(|p| p.get_ref().clone()),
            nas,
        });
    }
    Ok(())
}

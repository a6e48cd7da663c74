//! Seeding a new state database from the configuration, and applying the
//! configuration's new or changed declarations at every start.

use qos_core::{default_adaptive_groups, Policy};
use serde_json::Value;

use super::model;
use crate::config::{NodeConfig, VolumeSpec};
use crate::state::{new_uuid, PolicyRow, Store, VolumeRow};

/// Apply the config's policy and volume declarations that are new or changed since they
/// were last applied (a fingerprint per declaration is kept in the state database).
/// Unchanged declarations leave the stored state alone, so changes made through the API
/// survive restarts with the same config, while editing node.toml and restarting applies
/// the edit. Objects the config does not declare are never touched.
pub(super) fn apply_changed_declarations(
    store: &mut Store,
    cfg: &NodeConfig,
) -> rusqlite::Result<()> {
    let stored_p = store.policies()?;
    let stored_v = store.volumes()?;
    let mut fps = Vec::new();
    let mut pol_rows: Vec<(PolicyRow, bool)> = Vec::new();
    for p in &cfg.policies {
        let key = format!("config.policy.{}", p.name);
        let fp = format!("{:?}", p.policy);
        if store.applied(&key)?.as_deref() == Some(fp.as_str()) {
            continue;
        }
        let existing = stored_p.iter().find(|r| r.name == p.name);
        let row = policy_row(&p.name, &p.policy, false, existing);
        tracing::info!(policy = %p.name, "applying the configuration's declaration");
        pol_rows.push((row, existing.is_some()));
        fps.push((key, fp));
    }
    let policy_uuid = |name: &str| {
        pol_rows
            .iter()
            .map(|(r, _)| r)
            .chain(stored_p.iter())
            .find(|r| r.name == name)
            .map(|r| r.uuid.clone())
    };
    let mut vol_rows = Vec::new();
    for v in &cfg.volumes {
        let key = format!("config.volume.{}", v.name);
        let fp = format!("{v:?}");
        if store.applied(&key)?.as_deref() == Some(fp.as_str()) {
            continue;
        }
        let existing = stored_v.iter().find(|r| r.name == v.name);
        let row = volume_row(v, v.policy.as_deref().and_then(policy_uuid), existing);
        tracing::info!(volume = %v.name, "applying the configuration's declaration");
        vol_rows.push((row, existing.is_some()));
        fps.push((key, fp));
    }
    if fps.is_empty() {
        return Ok(());
    }
    store.apply_declarations(&pol_rows, &vol_rows, &fps)
}

pub(super) fn seed_rows(cfg: &NodeConfig) -> (Vec<PolicyRow>, Vec<VolumeRow>) {
    let mut policies: Vec<PolicyRow> = default_adaptive_groups()
        .into_iter()
        .map(|(n, a)| policy_row(n, &Policy::Adaptive(a), true, None))
        .collect();
    for p in &cfg.policies {
        policies.push(policy_row(&p.name, &p.policy, false, None));
    }
    let volumes = cfg
        .volumes
        .iter()
        .map(|v| {
            let policy_uuid = v.policy.as_ref().and_then(|n| {
                policies
                    .iter()
                    .find(|p| &p.name == n)
                    .map(|p| p.uuid.clone())
            });
            volume_row(v, policy_uuid, None)
        })
        .collect();
    (policies, volumes)
}

/// The row of a policy the configuration declares: a stored row's uuid and SVM when it
/// exists (a changed declaration), a new uuid and no SVM when not.
fn policy_row(
    name: &str,
    policy: &Policy,
    builtin: bool,
    existing: Option<&PolicyRow>,
) -> PolicyRow {
    PolicyRow {
        uuid: existing.map(|r| r.uuid.clone()).unwrap_or_else(new_uuid),
        name: name.to_string(),
        svm_name: existing.and_then(|r| r.svm_name.clone()),
        svm_uuid: existing.and_then(|r| r.svm_uuid.clone()),
        builtin,
        spec: Value::Object(model::policy_json(policy)).to_string(),
    }
}

/// The row of a volume the configuration declares (under the policy `policy_uuid`), as
/// [`policy_row`] keeps a stored row's uuid and SVM.
fn volume_row(
    v: &VolumeSpec,
    policy_uuid: Option<String>,
    existing: Option<&VolumeRow>,
) -> VolumeRow {
    VolumeRow {
        uuid: existing.map(|r| r.uuid.clone()).unwrap_or_else(new_uuid),
        name: v.name.clone(),
        size: v.size,
        reserve_percent: v.snapshot_reserve_percent,
        read_only: v.read_only,
        comment: v.description.clone(),
        svm_name: existing.and_then(|r| r.svm_name.clone()),
        svm_uuid: existing.and_then(|r| r.svm_uuid.clone()),
        policy_uuid,
        nas_path: v.nas.as_ref().map(|n| n.path.clone()),
        export_policy: v.nas.as_ref().map(|n| n.export_policy.clone()),
    }
}

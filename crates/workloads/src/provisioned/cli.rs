//! The provisioned family's command-line options (added to `qoslab bench`) and its plan
//! tables: `[provisioned]` (the spec), `[provisioned.run]` and `[provisioned.expect]`.

use std::collections::BTreeMap;

use clap::Args;
use harness::plan::{parse_duration, PlanError, PlanSource};
use serde::Deserialize;
use toml::Spanned;

use super::spec::{Spec, DEFAULT_EMBEDDED_SCALE};

/// Options of the provisioned profile (ignored by other profiles).
#[derive(Args, Debug, Clone, Default)]
#[command(
    next_help_heading = "Provisioned profile (--profile provisioned, or a plan with [provisioned]; docs/PROVISIONED.md)"
)]
pub struct ProvisionedArgs {
    /// The target is this file system: an FSx for ONTAP throughput-capacity preset,
    /// fsx-ontap-128 (default), -256, -512, -1024 or -2048 (AWS's table). The embedded node
    /// emulates it; any other target is judged against it.
    #[arg(long, value_name = "PRESET", conflicts_with = "model")]
    pub provisioned: Option<String>,
    /// The target is instead a volume under a vendor's model: ebs-gp2, ebs-st1, ebs-sc1,
    /// azure-premium-ssd.
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
    /// The volume's size for --model (default 100GiB).
    #[arg(
        long = "volume-size",
        id = "volume_size",
        value_name = "SIZE",
        requires = "model"
    )]
    pub size: Option<String>,
    /// Every file-system rate times this (buckets follow, burst durations stay): a slow
    /// machine keeps a fast file system's shape (default 1).
    #[arg(long, value_name = "FACTOR", conflicts_with = "model")]
    pub rate_scale: Option<f64>,
    /// How long a full file-system bucket lasts at the full burst (AWS does not document
    /// FSx's buckets; default 30min).
    #[arg(long, value_name = "DURATION", conflicts_with = "model")]
    pub burst_duration: Option<String>,
    /// Connections of the multi-connection steps (the seed's nconnect=16): fio jobs, each
    /// its own NBD connection (default 16).
    #[arg(long, value_name = "N")]
    pub connections: Option<u32>,
    /// On the embedded node, the emulated file system's volume is a NAS volume served over
    /// NFSv3: fio reaches it with its nfs engine (libnfs), each connection its own TCP
    /// connection, as a client's nconnect (docs/NFS.md).
    #[arg(long)]
    pub nas: bool,
}

impl ProvisionedArgs {
    /// Whether any option that gives a spec was used (a plan gives its own).
    pub fn gives_spec(&self) -> bool {
        self.provisioned.is_some()
            || self.model.is_some()
            || self.size.is_some()
            || self.rate_scale.is_some()
            || self.burst_duration.is_some()
    }

    /// The spec `--profile provisioned` runs against; `scale` is `--scale` (default
    /// [`DEFAULT_EMBEDDED_SCALE`] on the embedded node, 1 on a real target).
    pub fn spec(&self, scale: Option<f64>, embedded: bool) -> Result<Spec, String> {
        let scale = scale.unwrap_or(if embedded {
            DEFAULT_EMBEDDED_SCALE
        } else {
            1.0
        });
        let mut t = toml::Table::new();
        match &self.model {
            Some(m) => {
                t.insert("model".into(), m.clone().into());
                t.insert(
                    "size".into(),
                    self.size.clone().unwrap_or_else(|| "100GiB".into()).into(),
                );
                t.insert("bucket_scale".into(), scale.into());
            }
            None => {
                t.insert(
                    "preset".into(),
                    self.provisioned
                        .clone()
                        .unwrap_or_else(|| "fsx-ontap-128".into())
                        .into(),
                );
                t.insert("scale".into(), scale.into());
                if let Some(r) = self.rate_scale {
                    t.insert("rate_scale".into(), r.into());
                }
                if let Some(d) = &self.burst_duration {
                    t.insert("burst_duration".into(), d.clone().into());
                }
            }
        }
        Spec::from_table(&t, "--profile provisioned").map_err(|e| {
            // Name the options, not the table's keys.
            e.replace("--profile provisioned.preset", "--provisioned")
                .replace("--profile provisioned.model", "--model")
                .replace("--profile provisioned.size", "--volume-size")
                .replace("--profile provisioned.bucket_scale", "--scale")
                .replace("--profile provisioned.scale", "--scale")
                .replace("--profile provisioned.rate_scale", "--rate-scale")
                .replace("--profile provisioned.burst_duration", "--burst-duration")
        })
    }
}

/// What a run does besides its spec: `[provisioned.run]`, `[provisioned.expect]` and the
/// command line's `--connections`, `--runtime`, `--ramp`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Settings {
    pub connections: Option<u32>,
    /// Seconds per time-based step (default: 60 s x the scale, at least 2 s).
    pub runtime: Option<f64>,
    /// Only these steps (default: all).
    pub only: Option<Vec<String>>,
    /// Per step, checks that replace its defaults.
    pub expect: BTreeMap<String, Vec<String>>,
    /// The embedded node's volume is a NAS volume, reached over NFS (`--nas`, `nas = true`).
    pub nas: bool,
}

#[derive(Deserialize)]
struct View {
    provisioned: Spanned<toml::Table>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRun {
    connections: Option<i64>,
    runtime: Option<toml::Value>,
    steps: Option<Vec<String>>,
    nas: Option<bool>,
}

/// Parse a plan's `[provisioned]` (the spec) with its `run` and `expect` sub-tables.
pub fn parse_plan(src: &PlanSource) -> Result<(Spec, Settings), PlanError> {
    let v: View = src.deserialize()?;
    let at = src.at(v.provisioned.span().start);
    let mut table = v.provisioned.into_inner();
    let what = format!("{at}: provisioned");
    let mut settings = Settings::default();
    if let Some(run) = table.remove("run") {
        let r: RawRun = run
            .try_into()
            .map_err(|e: toml::de::Error| PlanError(format!("{what}.run: {}", e.message())))?;
        if let Some(c) = r.connections {
            if !(1..=64).contains(&c) {
                return Err(PlanError(format!(
                    "{what}.run.connections = {c}: allowed 1 to 64"
                )));
            }
            settings.connections = Some(c as u32);
        }
        if let Some(t) = &r.runtime {
            settings.runtime =
                Some(parse_duration(t).map_err(|m| PlanError(format!("{what}.run.runtime: {m}")))?);
        }
        settings.only = r.steps;
        settings.nas = r.nas.unwrap_or(false);
    }
    if let Some(e) = table.remove("expect") {
        let toml::Value::Table(e) = e else {
            return Err(PlanError(format!(
                "{what}.expect: a table of step = [\"check\", ...]"
            )));
        };
        for (step, list) in e {
            let list: Vec<String> = list.try_into().map_err(|_| {
                PlanError(format!(
                    "{what}.expect.{step}: a list of checks, e.g. [\"bw >= spec.disk.baseline\"]"
                ))
            })?;
            settings.expect.insert(step, list);
        }
    }
    let spec = Spec::from_table(&table, &what).map_err(PlanError)?;
    Ok((spec, settings))
}

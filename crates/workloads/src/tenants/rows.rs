//! What a sweep stores, as plain columns and rows of JSON values: one summary row per
//! scale point and class (the degradation curves and the seed's tables are drawn from
//! these), and one row per tenant and iteration (with its failure message).

use super::runner::{summarize, ClassSummary};
use super::stats::{distribution, Distribution};
use serde_json::{json, Value};

use super::point::PointResult;
use super::spec::{AppSpec, TenantsSpec};

/// The class's headline figure: fio IOPS per tenant, redis run-phase ops/s, git seconds
/// per iteration, build seconds per build (lower is better), broker messages/s in.
pub fn main_metric(app: &AppSpec) -> (&'static str, &'static str) {
    match app {
        AppSpec::Fio { .. } => ("iops", "IOPS"),
        AppSpec::Redis(_) => ("run_ops_per_sec", "ops/s"),
        AppSpec::Git(_) => ("time_s", "s"),
        AppSpec::Build(_) => ("build_s", "s"),
        AppSpec::Broker(_) => ("in_msgs_per_sec", "msg/s"),
    }
}

pub const SUMMARY_COLUMNS: &[&str] = &[
    "tenants",
    "class",
    "app",
    "metric",
    "unit",
    "iterations",
    "failed",
    "fail_rate_pct",
    "min",
    "p5",
    "median",
    "max",
    "mean",
    "sum",
    "jain",
    "min_over_max",
    "first_done_s",
    "last_done_s",
    "load_ops_per_sec",
    "run_ops_per_sec",
    "time_s",
    "floor_iops",
    "ceiling_iops",
    "node_iops_per_tenant",
    "qos_ceiling_wait_ms",
    "qos_floor_wait_ms",
    // The tool sets' load over the point (tenants::load): host CPU busy (% of all CPUs),
    // the embedded node's threads and the applications (% of a core), the qoslab
    // process's memory, the busiest disk under the node.
    "host_cpu_pct",
    "host_cpu_peak_pct",
    "node_cpu_pct",
    "node_cpu_peak_pct",
    "apps_cpu_pct",
    "other_cpu_pct",
    "rss_mib",
    "rss_peak_mib",
    "disk_util_pct",
    // Who enforced the classes' QoS: "qoslab" (a qoslab node), or "not enforced by
    // qoslab: the target's own" (a directory target: limits and waits are then null).
    "qos",
];

pub const TENANT_COLUMNS: &[&str] = &[
    "tenants",
    "class",
    "tenant",
    "iteration",
    "ok",
    "failure",
    "step",
    "message",
    "secs",
    "done_at_s",
    "metrics",
];

fn num(v: Option<f64>) -> Value {
    match v {
        Some(x) if x.is_finite() => json!((x * 1000.0).round() / 1000.0),
        _ => Value::Null,
    }
}

/// A volume's limit (IOPS; 0: none), or null where there is no volume qoslab enforces.
fn limit(v: Option<u64>) -> Value {
    v.map(|v| json!(v)).unwrap_or(Value::Null)
}

/// The summary rows of one point (one per class, in the spec's class order).
pub fn summary_rows(spec: &TenantsSpec, p: &PointResult) -> Vec<Vec<Value>> {
    let summaries: Vec<ClassSummary> = summarize(&p.runs);
    spec.classes
        .iter()
        .filter_map(|c| {
            let s = summaries.iter().find(|s| s.class == c.name)?;
            let (metric, unit) = main_metric(&c.app);
            let d: Option<Distribution> = if metric == "time_s" {
                s.time
            } else {
                s.metrics.get(metric).copied()
            };
            let mean_of = |m: &str| s.metrics.get(m).map(|d| d.mean);
            let vols: Vec<_> = p.volumes.iter().filter(|v| v.class == c.name).collect();
            let ops: u64 = vols.iter().map(|v| v.ops).sum();
            let per_op = |ns: u64| {
                if ops > 0 {
                    Some(ns as f64 / ops as f64 / 1e6)
                } else {
                    None
                }
            };
            let node_iops = distribution(
                &vols
                    .iter()
                    .map(|v| v.ops as f64 / p.secs.max(1e-9))
                    .collect::<Vec<_>>(),
            )
            .map(|d| d.mean);
            Some(vec![
                json!(p.tenants),
                json!(c.name),
                json!(c.app.name()),
                json!(metric),
                json!(unit),
                json!(s.failures.total),
                json!(s.failures.failed),
                num(Some(s.failures.rate_percent())),
                num(d.map(|d| d.min)),
                num(d.map(|d| d.p5)),
                num(d.map(|d| d.median)),
                num(d.map(|d| d.max)),
                num(d.map(|d| d.mean)),
                num(d.map(|d| d.sum)),
                num(s.jain),
                num(s.min_over_max),
                num(s.completion.map(|c| c.first_done)),
                num(s.completion.map(|c| c.last_done)),
                num(mean_of("load_ops_per_sec")),
                num(mean_of("run_ops_per_sec")),
                num(s.time.map(|d| d.mean)),
                limit(vols.first().map(|v| v.floor_iops)),
                limit(vols.first().map(|v| v.ceiling_iops)),
                num(node_iops),
                num(per_op(vols.iter().map(|v| v.ceiling_wait_ns).sum())),
                num(per_op(vols.iter().map(|v| v.floor_wait_ns).sum())),
                num(Some(p.load.host_cpu_pct)),
                num(Some(p.load.host_cpu_peak_pct)),
                num(Some(p.load.node_cpu_pct)),
                num(Some(p.load.node_cpu_peak_pct)),
                num(Some(p.load.apps_cpu_pct)),
                num(Some(p.load.other_cpu_pct)),
                num(Some(p.load.rss_mib)),
                num(Some(p.load.rss_peak_mib)),
                num(Some(p.load.disk_util_pct)),
                json!(if p.enforced {
                    "qoslab"
                } else {
                    super::backend::NOT_ENFORCED
                }),
            ])
        })
        .collect()
}

/// One row per tenant and iteration.
pub fn tenant_rows(p: &PointResult) -> Vec<Vec<Value>> {
    let mut out = Vec::new();
    for r in &p.runs {
        for (k, it) in r.iterations.iter().enumerate() {
            let f = it.failure.as_ref();
            let metrics: serde_json::Map<String, Value> = it
                .metrics
                .iter()
                .map(|m| (m.name.clone(), num(Some(m.value))))
                .collect();
            out.push(vec![
                json!(p.tenants),
                json!(r.class),
                json!(r.tenant),
                json!(k + 1),
                json!(it.ok()),
                f.map(|f| json!(f.kind.as_str())).unwrap_or(Value::Null),
                f.map(|f| json!(f.step)).unwrap_or(Value::Null),
                f.map(|f| json!(f.message)).unwrap_or(Value::Null),
                num(Some(it.secs)),
                num(r.done_at.get(k).copied()),
                Value::Object(metrics),
            ]);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tenants::point::VolumeCounters;
    use crate::tenants::runner::TenantRun;
    use loadgen::apps::{Failure, Iteration, Metric};

    fn spec() -> TenantsSpec {
        TenantsSpec::of_classes(
            "[[class]]\nname = \"gold\"\napp = \"fio\"\n[[class]]\nname = \"std\"\napp = \"git\"\n",
        )
    }

    fn it(iops: Option<f64>, secs: f64, fail: bool) -> Iteration {
        Iteration {
            steps: vec![],
            metrics: iops
                .map(|v| {
                    vec![Metric {
                        name: "iops".into(),
                        value: v,
                        unit: "IOPS".into(),
                    }]
                })
                .unwrap_or_default(),
            secs,
            failure: fail
                .then(|| Failure::classify("clone", "fatal: No space left on device".into())),
        }
    }

    #[test]
    fn a_point_becomes_one_summary_row_per_class_and_a_row_per_tenant_iteration() {
        let run = |class: &str, tenant: &str, its: Vec<Iteration>| TenantRun {
            tenant: tenant.into(),
            class: class.into(),
            app: "x".into(),
            done_at: its.iter().map(|i| i.secs).collect(),
            iterations: its,
        };
        let p = PointResult::of(
            2,
            vec![
                run("gold", "gold-n2-t0", vec![it(Some(200.0), 20.0, false)]),
                run("gold", "gold-n2-t1", vec![it(Some(198.0), 20.0, false)]),
                run("std", "std-n2-t0", vec![it(None, 30.0, false)]),
                run("std", "std-n2-t1", vec![it(None, 5.0, true)]),
            ],
            vec![
                VolumeCounters {
                    tenant: "gold-n2-t0".into(),
                    class: "gold".into(),
                    ops: 4000,
                    ceiling_wait_ns: 0,
                    floor_wait_ns: 2_000_000_000,
                    lat_ns: 0,
                    ceiling_iops: 0,
                    floor_iops: 200,
                },
                VolumeCounters {
                    tenant: "gold-n2-t1".into(),
                    class: "gold".into(),
                    ops: 3960,
                    ceiling_wait_ns: 0,
                    floor_wait_ns: 0,
                    lat_ns: 0,
                    ceiling_iops: 0,
                    floor_iops: 200,
                },
            ],
            20.0,
        );
        let s = summary_rows(&spec(), &p);
        assert_eq!(s.len(), 2);
        assert!(s.iter().all(|r| r.len() == SUMMARY_COLUMNS.len()));
        let col = |r: &Vec<Value>, c: &str| {
            r[SUMMARY_COLUMNS.iter().position(|x| *x == c).unwrap()].clone()
        };
        assert_eq!(col(&s[0], "metric"), "iops");
        assert_eq!(col(&s[0], "min"), 198.0);
        assert_eq!(col(&s[0], "sum"), 398.0);
        assert_eq!(col(&s[0], "floor_iops"), 200);
        assert_eq!(col(&s[0], "node_iops_per_tenant"), 199.0);
        // 2 s of floor wait over 7,960 ops.
        assert_eq!(col(&s[0], "qos_floor_wait_ms"), 0.251);
        assert_eq!(col(&s[1], "metric"), "time_s");
        assert_eq!(col(&s[1], "failed"), 1);
        assert_eq!(col(&s[1], "fail_rate_pct"), 50.0);
        assert_eq!(
            col(&s[1], "mean"),
            30.0,
            "only successful iterations count in the time"
        );
        let t = tenant_rows(&p);
        assert_eq!(t.len(), 4);
        assert_eq!(t[3][5], "enospc");
        assert_eq!(t[3][7], "fatal: No space left on device");
        assert_eq!(t[0][10]["iops"], 200.0);
    }
}

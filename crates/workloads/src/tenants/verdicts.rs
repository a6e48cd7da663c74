//! A class's expectations judged at one point: `expect_floor` (every tenant's IOPS at least
//! that fraction of its volume's floor) and `expect_ceiling` (every tenant's IOPS within
//! that fraction of its volume's ceiling), on every iteration; a failed iteration fails
//! the verdict.

use serde::{Deserialize, Serialize};

use super::point::PointResult;
use super::spec::TenantsSpec;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointVerdict {
    pub tenants: usize,
    pub class: String,
    /// "floor" or "ceiling".
    pub kind: String,
    /// What was expected, in words ("each tenant >= 196.0 IOPS").
    pub expected: String,
    /// The worst tenant's IOPS (or NaN when an iteration failed).
    pub worst: f64,
    pub worst_tenant: String,
    pub pass: bool,
}

pub fn judge(spec: &TenantsSpec, p: &PointResult) -> Vec<PointVerdict> {
    let mut out = Vec::new();
    for c in &spec.classes {
        let limits = |tenant: &str| {
            p.volumes
                .iter()
                .find(|v| v.tenant == tenant)
                .map(|v| (v.floor_iops, v.ceiling_iops))
        };
        let runs: Vec<_> = p.runs.iter().filter(|r| r.class == c.name).collect();
        let mut judge_one = |kind: &str, frac: f64| {
            // (how far from the expectation, IOPS or None for a failed iteration, tenant)
            let mut worst: Option<(f64, Option<f64>, String)> = None;
            let mut pass = !runs.is_empty();
            let mut expected = String::new();
            for r in &runs {
                let (floor, ceiling) = limits(&r.tenant).unwrap_or((0, 0));
                let target = if kind == "floor" { floor } else { ceiling } as f64;
                expected = if kind == "floor" {
                    format!(
                        "each tenant >= {:.1} IOPS ({}% of its {floor} IOPS floor)",
                        frac * target,
                        frac * 100.0
                    )
                } else {
                    format!(
                        "each tenant within {}% of its {ceiling} IOPS ceiling",
                        frac * 100.0
                    )
                };
                for it in &r.iterations {
                    let v = it.metric("iops").filter(|_| it.ok());
                    let miss = match v {
                        _ if target <= 0.0 => f64::INFINITY,
                        None => f64::INFINITY,
                        Some(x) if kind == "floor" => target - x,
                        Some(x) => (x - target).abs(),
                    };
                    let ok = miss
                        <= if kind == "floor" {
                            (1.0 - frac) * target
                        } else {
                            frac * target
                        };
                    pass &= ok;
                    if worst.as_ref().is_none_or(|w| miss > w.0) {
                        worst = Some((miss, v, r.tenant.clone()));
                    }
                }
            }
            let (_, v, tenant) = worst.unwrap_or((0.0, None, String::new()));
            out.push(PointVerdict {
                tenants: p.tenants,
                class: c.name.clone(),
                kind: kind.into(),
                expected,
                worst: v.unwrap_or(f64::NAN),
                worst_tenant: tenant,
                pass,
            });
        };
        if let Some(f) = c.expect_floor {
            judge_one("floor", f);
        }
        if let Some(f) = c.expect_ceiling {
            judge_one("ceiling", f);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tenants::point::VolumeCounters;
    use crate::tenants::runner::TenantRun;
    use loadgen::apps::{Iteration, Metric};

    fn spec() -> TenantsSpec {
        TenantsSpec::of_classes(
            "[[class]]\nname = \"gold\"\napp = \"fio\"\npolicy = \"g\"\nexpect_floor = 0.98\n\
             [[class]]\nname = \"cap\"\napp = \"fio\"\npolicy = \"c\"\nexpect_ceiling = 0.01\n",
        )
    }

    fn run(class: &str, tenant: &str, iops: &[f64]) -> TenantRun {
        TenantRun {
            tenant: tenant.into(),
            class: class.into(),
            app: "fio".into(),
            done_at: iops.iter().map(|_| 1.0).collect(),
            iterations: iops
                .iter()
                .map(|v| Iteration {
                    metrics: vec![Metric {
                        name: "iops".into(),
                        value: *v,
                        unit: "IOPS".into(),
                    }],
                    secs: 1.0,
                    ..Default::default()
                })
                .collect(),
        }
    }

    fn vol(class: &str, tenant: &str, floor: u64, ceiling: u64) -> VolumeCounters {
        VolumeCounters {
            tenant: tenant.into(),
            class: class.into(),
            floor_iops: floor,
            ceiling_iops: ceiling,
            ..Default::default()
        }
    }

    #[test]
    fn the_worst_tenant_decides() {
        let p = PointResult::of(
            2,
            vec![
                run("gold", "g0", &[200.0, 199.0]),
                run("gold", "g1", &[197.0, 195.0]),
                run("cap", "c0", &[99.5, 100.4]),
                run("cap", "c1", &[99.2, 100.0]),
            ],
            vec![
                vol("gold", "g0", 200, 0),
                vol("gold", "g1", 200, 0),
                vol("cap", "c0", 0, 100),
                vol("cap", "c1", 0, 100),
            ],
            1.0,
        );
        let v = judge(&spec(), &p);
        assert_eq!(v.len(), 2);
        // 195 < 196 (98% of 200): gold fails, and g1 is named.
        assert!(!v[0].pass);
        assert_eq!((v[0].worst, v[0].worst_tenant.as_str()), (195.0, "g1"));
        assert!(v[0].expected.contains(">= 196.0 IOPS"), "{}", v[0].expected);
        // 99.2..100.4 are all within 1% of 100; the farthest is 99.2.
        assert!(v[1].pass, "{:?}", v[1]);
        assert_eq!((v[1].worst, v[1].worst_tenant.as_str()), (99.2, "c1"));
    }
}

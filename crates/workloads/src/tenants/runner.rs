//! One scale point of a tenant sweep: every tenant's application started, then each
//! iteration begun by all tenants together (a barrier), then stopped; and the point's
//! summary per class: failures and fail rate, the distribution of the per-tenant figures,
//! fairness (Jain's index, slowest/fastest) and first-done / last-done. A failure never
//! stops the others: a tenant whose start failed counts every iteration as failed.

use std::collections::BTreeMap;
use std::sync::Barrier;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::stats::{self, Completion, Distribution, Failures};
use loadgen::apps::{App, Failure, Iteration, TenantEnv};

/// One tenant of a point: its class, the class's application, where it runs.
pub struct TenantSpec<'a> {
    pub class: String,
    pub app: &'a dyn App,
    pub env: TenantEnv,
}

/// What one tenant did at a point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TenantRun {
    pub tenant: String,
    pub class: String,
    pub app: String,
    /// One per iteration (a failed start fills them with its failure).
    pub iterations: Vec<Iteration>,
    /// Seconds from the point's common start of each iteration to this tenant's end of it.
    pub done_at: Vec<f64>,
}

/// Tenants run together by one process (fio's tenants: one job each in one fio).
pub trait GroupApp: Send + Sync {
    fn name(&self) -> &'static str;
    /// (class, tenant) of every member, in the order of [`GroupApp::iteration`]'s results.
    fn members(&self) -> Vec<(String, String)>;
    /// Run iteration `n` (from 1) for every member.
    fn iteration(&self, n: u32) -> Vec<Iteration>;
}

/// Run `iterations` iterations on every tenant at once.
pub fn run_point(tenants: &[TenantSpec<'_>], iterations: u32) -> Vec<TenantRun> {
    run_point_with(tenants, &[], iterations)
}

/// Run `iterations` iterations on every tenant and every group at once (each iteration
/// starts on all of them together).
pub fn run_point_with(
    tenants: &[TenantSpec<'_>],
    groups: &[&dyn GroupApp],
    iterations: u32,
) -> Vec<TenantRun> {
    let barrier = Barrier::new((tenants.len() + groups.len()).max(1));
    std::thread::scope(|s| {
        let group_handles: Vec<_> = groups
            .iter()
            .map(|g| {
                let barrier = &barrier;
                s.spawn(move || {
                    let mut runs: Vec<TenantRun> = g
                        .members()
                        .into_iter()
                        .map(|(class, tenant)| TenantRun {
                            tenant,
                            class,
                            app: g.name().to_string(),
                            iterations: Vec::new(),
                            done_at: Vec::new(),
                        })
                        .collect();
                    for n in 1..=iterations {
                        barrier.wait();
                        let t0 = Instant::now();
                        let its = g.iteration(n);
                        let wall = t0.elapsed().as_secs_f64();
                        for (r, it) in runs.iter_mut().zip(its) {
                            r.done_at.push(if it.secs > 0.0 { it.secs } else { wall });
                            r.iterations.push(it);
                        }
                    }
                    runs
                })
            })
            .collect();
        let hs: Vec<_> = tenants
            .iter()
            .map(|t| {
                let barrier = &barrier;
                s.spawn(move || {
                    let mut run = TenantRun {
                        tenant: t.env.tenant.clone(),
                        class: t.class.clone(),
                        app: t.app.name().to_string(),
                        iterations: Vec::new(),
                        done_at: Vec::new(),
                    };
                    let mut app: Result<_, Failure> = t.app.start(&t.env);
                    for n in 1..=iterations {
                        barrier.wait();
                        let t0 = Instant::now();
                        let it = match &mut app {
                            Ok(a) => a.iteration(n),
                            Err(f) => Iteration {
                                failure: Some(f.clone()),
                                ..Iteration::default()
                            },
                        };
                        run.done_at.push(t0.elapsed().as_secs_f64());
                        run.iterations.push(it);
                    }
                    if let Ok(a) = &mut app {
                        if let Err(f) = a.stop() {
                            // A failed stop fails the last iteration (data may be lost).
                            if let Some(last) = run.iterations.last_mut() {
                                last.failure.get_or_insert(f);
                            }
                        }
                    }
                    run
                })
            })
            .collect();
        let mut out: Vec<TenantRun> = hs
            .into_iter()
            .map(|h| h.join().expect("tenant thread panicked"))
            .collect();
        for h in group_handles {
            out.extend(h.join().expect("group thread panicked"));
        }
        out
    })
}

/// A class's figures at one scale point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassSummary {
    pub class: String,
    pub app: String,
    pub tenants: usize,
    pub failures: Failures,
    /// Per-tenant mean iteration time (successful iterations), over tenants.
    pub time: Option<Distribution>,
    /// Per-tenant mean of each metric (successful iterations), over tenants.
    pub metrics: BTreeMap<String, Distribution>,
    /// Each metric summed over every iteration of every tenant, failed ones too (the
    /// build table's total and failed builds, the broker's lost messages).
    #[serde(default)]
    pub totals: BTreeMap<String, f64>,
    /// Jain's index of per-tenant throughput (the first metric; else 1 / time).
    pub jain: Option<f64>,
    /// Slowest tenant's throughput over the fastest's.
    pub min_over_max: Option<f64>,
    /// First-done / last-done, averaged over iterations.
    pub completion: Option<Completion>,
}

use assess::stats::mean;

/// Each tenant's mean of `figure` over its successful iterations (tenants with none left
/// out).
fn per_tenant_mean(rs: &[&TenantRun], figure: impl Fn(&Iteration) -> Option<f64>) -> Vec<f64> {
    rs.iter()
        .filter_map(|r| {
            let v: Vec<f64> = r
                .iterations
                .iter()
                .filter(|i| i.ok())
                .filter_map(&figure)
                .collect();
            mean(&v)
        })
        .collect()
}

/// Summarise a point's runs per class (classes in name order).
pub fn summarize(runs: &[TenantRun]) -> Vec<ClassSummary> {
    let mut classes: BTreeMap<&str, Vec<&TenantRun>> = BTreeMap::new();
    for r in runs {
        classes.entry(&r.class).or_default().push(r);
    }
    classes
        .into_iter()
        .map(|(class, rs)| {
            let total: u64 = rs.iter().map(|r| r.iterations.len() as u64).sum();
            let failed: u64 = rs
                .iter()
                .map(|r| r.iterations.iter().filter(|i| !i.ok()).count() as u64)
                .sum();
            let per_tenant_time = per_tenant_mean(&rs, |i| Some(i.secs));
            let mut names: Vec<String> = rs
                .iter()
                .flat_map(|r| {
                    r.iterations
                        .iter()
                        .flat_map(|i| i.metrics.iter().map(|m| m.name.clone()))
                })
                .collect();
            names.sort();
            names.dedup();
            let mut totals = BTreeMap::new();
            for m in rs
                .iter()
                .flat_map(|r| r.iterations.iter().flat_map(|i| i.metrics.iter()))
            {
                *totals.entry(m.name.clone()).or_insert(0.0) += m.value;
            }
            let mut metrics = BTreeMap::new();
            let mut first_metric: Option<Vec<f64>> = None;
            for name in &names {
                let per_tenant = per_tenant_mean(&rs, |i| i.metric(name));
                if let Some(d) = stats::distribution(&per_tenant) {
                    metrics.insert(name.clone(), d);
                }
                first_metric.get_or_insert(per_tenant);
            }
            let throughput: Vec<f64> = first_metric.unwrap_or_else(|| {
                per_tenant_time
                    .iter()
                    .filter(|t| **t > 0.0)
                    .map(|t| 1.0 / t)
                    .collect()
            });
            let iters = rs.iter().map(|r| r.done_at.len()).max().unwrap_or(0);
            let per_iter: Vec<Completion> = (0..iters)
                .filter_map(|k| {
                    stats::completion(
                        &rs.iter()
                            .filter_map(|r| r.done_at.get(k).copied())
                            .collect::<Vec<_>>(),
                    )
                })
                .collect();
            let completion = (!per_iter.is_empty()).then(|| {
                let n = per_iter.len() as f64;
                let first = per_iter.iter().map(|c| c.first_done).sum::<f64>() / n;
                let last = per_iter.iter().map(|c| c.last_done).sum::<f64>() / n;
                Completion {
                    first_done: first,
                    last_done: last,
                    last_over_first: if first > 0.0 { last / first } else { f64::NAN },
                }
            });
            ClassSummary {
                class: class.to_string(),
                app: rs[0].app.clone(),
                tenants: rs.len(),
                failures: Failures { total, failed },
                time: stats::distribution(&per_tenant_time),
                metrics,
                totals,
                jain: stats::jain(&throughput),
                min_over_max: stats::min_over_max(&throughput),
                completion,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadgen::apps::{FailureKind, Metric, Step, TenantApp};
    use std::time::Duration;

    /// A fast fake application (unit tests only; the real ones run in integration tests):
    /// tenant "bad" fails every other iteration with ENOSPC, "broken" cannot start, "slow"
    /// finishes each iteration after "a" has, and takes twice as long again (however
    /// loaded the machine: its order and ratio do not depend on sleeping precisely).
    #[derive(Default)]
    struct Fake {
        /// Iterations "a" has finished.
        a_done: std::sync::Arc<std::sync::atomic::AtomicU32>,
    }
    struct FakeTenant(String, std::sync::Arc<std::sync::atomic::AtomicU32>);

    impl App for Fake {
        fn name(&self) -> &'static str {
            "fake"
        }
        fn start(&self, env: &TenantEnv) -> Result<Box<dyn TenantApp>, Failure> {
            if env.tenant == "broken" {
                return Err(Failure::classify("start", "cannot start".into()));
            }
            Ok(Box::new(FakeTenant(
                env.tenant.clone(),
                self.a_done.clone(),
            )))
        }
    }

    impl TenantApp for FakeTenant {
        fn iteration(&mut self, n: u32) -> Iteration {
            use std::sync::atomic::Ordering::SeqCst;
            let slow = self.0 == "slow";
            let t0 = std::time::Instant::now();
            std::thread::sleep(Duration::from_millis(10));
            if slow {
                while self.1.load(SeqCst) < n && t0.elapsed() < Duration::from_secs(5) {
                    std::thread::sleep(Duration::from_millis(1));
                }
                std::thread::sleep(2 * t0.elapsed());
            }
            if self.0 == "a" {
                self.1.fetch_add(1, SeqCst);
            }
            let fail = self.0 == "bad" && n.is_multiple_of(2);
            Iteration {
                steps: vec![Step {
                    name: "work".into(),
                    secs: 0.01,
                }],
                metrics: vec![Metric {
                    name: "ops_per_sec".into(),
                    value: if slow { 50.0 } else { 100.0 },
                    unit: "ops/s".into(),
                }],
                secs: if slow { 0.04 } else { 0.01 },
                failure: fail.then(|| Failure::classify("work", "No space left on device".into())),
            }
        }
        fn stop(&mut self) -> Result<(), Failure> {
            Ok(())
        }
    }

    fn env(t: &str) -> TenantEnv {
        TenantEnv {
            tenant: t.into(),
            data_dir: std::env::temp_dir(),
            scratch_dir: std::env::temp_dir(),
            timeout: Duration::from_secs(5),
        }
    }

    #[test]
    fn a_point_counts_failures_per_class_and_never_stops_the_others() {
        let fake = Fake::default();
        let tenants: Vec<TenantSpec> = [
            ("gold", "a"),
            ("gold", "slow"),
            ("bronze", "bad"),
            ("bronze", "broken"),
        ]
        .iter()
        .map(|(c, t)| TenantSpec {
            class: c.to_string(),
            app: &fake,
            env: env(t),
        })
        .collect();
        let runs = run_point(&tenants, 4);
        assert!(runs
            .iter()
            .all(|r| r.iterations.len() == 4 && r.done_at.len() == 4));
        let s = summarize(&runs);
        let (bronze, gold) = (&s[0], &s[1]);
        assert_eq!(
            (bronze.class.as_str(), gold.class.as_str()),
            ("bronze", "gold")
        );
        // bronze: "bad" fails iterations 2 and 4, "broken" all 4: 6 of 8.
        assert_eq!(
            bronze.failures,
            Failures {
                total: 8,
                failed: 6
            }
        );
        assert_eq!(
            runs[3].iterations[0].failure.as_ref().unwrap().step,
            "start"
        );
        assert_eq!(
            runs[2].iterations[1].failure.as_ref().unwrap().kind,
            FailureKind::NoSpace
        );
        assert_eq!(
            gold.failures,
            Failures {
                total: 8,
                failed: 0
            }
        );
        // gold: 100 and 50 ops/s -> Jain 0.9, slowest/fastest 0.5; the slow tenant is last done.
        let ops = gold.metrics["ops_per_sec"];
        assert_eq!((ops.min, ops.max, ops.sum), (50.0, 100.0, 150.0));
        assert!((gold.jain.unwrap() - 0.9).abs() < 1e-9);
        assert!((gold.min_over_max.unwrap() - 0.5).abs() < 1e-9);
        let c = gold.completion.unwrap();
        assert!(c.last_done > c.first_done * 2.0, "{c:?}");
        // A tenant with no successful iteration has no time: only "bad" counts in bronze.
        assert_eq!(bronze.time.unwrap().n, 1);
    }
}

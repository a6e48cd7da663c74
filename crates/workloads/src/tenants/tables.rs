//! Seed 004's tables in its own layout, one row per scale point, from the points'
//! class summaries: failures (Jenkins: instance -> total / failed / fail rate (%)),
//! throughput (Redis: instance -> load / run ops/s, the mean over tenants and iterations)
//! and time (GitWorkload: project -> mean seconds per iteration); and, per point, the
//! tool sets' node and host load (pbench's view of the storage node under the sweep).

use serde::{Deserialize, Serialize};

use super::load::LoadSample;
use super::runner::ClassSummary;
use super::stats::Distribution;
use crate::thousands;

/// A table: a title, column headers, rows of cells.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeedTable {
    pub title: String,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl SeedTable {
    /// GitHub-flavoured Markdown, as the seed prints it.
    pub fn markdown(&self) -> String {
        let mut s = format!("### {}\n\n| {} |\n|", self.title, self.columns.join(" | "));
        for _ in &self.columns {
            s.push_str("---|");
        }
        s.push('\n');
        for r in &self.rows {
            s.push_str(&format!("| {} |\n", r.join(" | ")));
        }
        s
    }
}

/// A table with one row per scale point (`(tenants, what was measured)` in sweep order):
/// the point's tenant count, then `cells` of what was measured at it.
fn per_point<T>(
    title: String,
    columns: &[&str],
    points: &[(usize, T)],
    cells: impl Fn(&T) -> Vec<String>,
) -> SeedTable {
    SeedTable {
        title,
        columns: columns.iter().map(|c| c.to_string()).collect(),
        rows: points
            .iter()
            .map(|(n, p)| {
                let mut row = vec![n.to_string()];
                row.extend(cells(p));
                row
            })
            .collect(),
    }
}

/// Metric `m` of a class summary as `shown` writes its distribution; `-` where the point
/// did not measure it.
fn metric(s: &ClassSummary, m: &str, shown: impl Fn(&Distribution) -> String) -> String {
    s.metrics.get(m).map(shown).unwrap_or("-".into())
}

/// Metric `m`'s mean over the point's tenants and iterations, in the seed's number style.
fn mean(s: &ClassSummary, m: &str) -> String {
    metric(s, m, |d| thousands(d.mean, 2))
}

/// The node's and the host's load per scale point (`(tenants, load)` in sweep order).
pub fn load_table(points: &[(usize, LoadSample)]) -> SeedTable {
    let pct = |v: f64| {
        if v.is_finite() {
            format!("{v:.1}")
        } else {
            "-".to_string()
        }
    };
    per_point(
        "load (tool sets): node and host".into(),
        &[
            "instance",
            "node CPU (% of a core)",
            "node CPU peak",
            "apps + harness CPU (% of a core)",
            "other CPU (% of a core)",
            "host CPU busy (%)",
            "host CPU peak (%)",
            "qoslab RSS peak (MiB)",
            "disk util (%)",
        ],
        points,
        |l| {
            vec![
                pct(l.node_cpu_pct),
                pct(l.node_cpu_peak_pct),
                pct(l.apps_cpu_pct),
                pct(l.other_cpu_pct),
                pct(l.host_cpu_pct),
                pct(l.host_cpu_peak_pct),
                thousands(l.rss_peak_mib, 1),
                pct(l.disk_util_pct),
            ]
        },
    )
}

/// The tables for one class over its scale points (`(tenants, summary)` in sweep order).
pub fn seed_tables(class: &str, points: &[(usize, &ClassSummary)]) -> Vec<SeedTable> {
    let app = points.first().map(|p| p.1.app.as_str()).unwrap_or("");
    let mut tables = vec![per_point(
        format!("{class} ({app}): failures"),
        &["instance", "total", "failed", "fail rate (%)"],
        points,
        |s| {
            vec![
                s.failures.total.to_string(),
                s.failures.failed.to_string(),
                format!("{:.1}", s.failures.rate_percent()),
            ]
        },
    )];
    let has = |m: &str| points.iter().any(|(_, s)| s.metrics.contains_key(m));
    if has("load_ops_per_sec") || has("run_ops_per_sec") {
        tables.push(per_point(
            format!("{class} ({app}): throughput (ops/s)"),
            &["instance\\throughput", "load", "run"],
            points,
            |s| vec![mean(s, "load_ops_per_sec"), mean(s, "run_ops_per_sec")],
        ));
    }
    if has("iops") {
        tables.push(per_point(
            format!("{class} ({app}): IOPS per tenant"),
            &["instance", "min", "median", "max", "sum"],
            points,
            |s| {
                let cell = |f: fn(&Distribution) -> f64| metric(s, "iops", |d| thousands(f(d), 1));
                vec![
                    cell(|d| d.min),
                    cell(|d| d.median),
                    cell(|d| d.max),
                    cell(|d| d.sum),
                ]
            },
        ));
    }
    if app == "build" {
        tables.push(build_table(class, points));
    }
    if app == "broker" {
        tables.push(broker_table(class, points));
    }
    if app == "git" {
        tables.push(per_point(
            format!("{class} ({app}): time (s)"),
            &["project", "time"],
            points,
            |s| {
                vec![s
                    .time
                    .map(|d| format!("{:.2}", d.mean))
                    .unwrap_or("-".into())]
            },
        ));
    }
    tables
}

/// Seed 004's Jenkins table: every build triggered (failed iterations' too), the failed
/// ones, the fail rate, and the mean duration of a successful build.
fn build_table(class: &str, points: &[(usize, &ClassSummary)]) -> SeedTable {
    per_point(
        format!("{class} (build): builds"),
        &[
            "instance",
            "total build",
            "failed build",
            "fail rate (%)",
            "build time (s)",
        ],
        points,
        |s| {
            let total = s.totals.get("builds").copied().unwrap_or(0.0);
            let failed = s.totals.get("failed_builds").copied().unwrap_or(0.0);
            let rate = if total > 0.0 {
                100.0 * failed / total
            } else {
                f64::NAN
            };
            vec![
                format!("{total:.0}"),
                format!("{failed:.0}"),
                if rate.is_finite() {
                    format!("{rate:04.1}")
                } else {
                    "-".into()
                },
                metric(s, "build_s", |d| format!("{:.2}", d.mean)),
            ]
        },
    )
}

/// Seed 004's JBoss AMQ table: messages/s in and out per tenant (mean over tenants and
/// successful iterations), and the messages sent and lost over the whole point.
fn broker_table(class: &str, points: &[(usize, &ClassSummary)]) -> SeedTable {
    per_point(
        format!("{class} (broker): throughput (msg/s)"),
        &["project", "in", "out", "sent", "lost"],
        points,
        |s| {
            let total = |m: &str| {
                s.totals
                    .get(m)
                    .map(|v| thousands(*v, 0))
                    .unwrap_or("-".into())
            };
            vec![
                mean(s, "in_msgs_per_sec"),
                mean(s, "out_msgs_per_sec"),
                total("sent"),
                total("lost"),
            ]
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tenants::stats::{distribution, Failures};
    use std::collections::BTreeMap;

    fn summary(
        app: &str,
        total: u64,
        failed: u64,
        metrics: &[(&str, f64)],
        time: Option<f64>,
    ) -> ClassSummary {
        ClassSummary {
            class: "c".into(),
            app: app.into(),
            tenants: 1,
            failures: Failures { total, failed },
            time: time.and_then(|t| distribution(&[t])),
            metrics: metrics
                .iter()
                .map(|(k, v)| (k.to_string(), distribution(&[*v]).unwrap()))
                .collect::<BTreeMap<_, _>>(),
            totals: BTreeMap::new(),
            jain: None,
            min_over_max: None,
            completion: None,
        }
    }

    #[test]
    fn numbers_print_as_the_seed_does() {
        assert_eq!(thousands(12113.421, 2), "12,113.42");
        assert_eq!(thousands(999.0, 2), "999.00");
        assert_eq!(thousands(1_000_000.0, 0), "1,000,000");
        assert_eq!(thousands(-1234.5, 1), "-1,234.5");
        assert_eq!(thousands(f64::NAN, 2), "-");
    }

    #[test]
    fn redis_gets_failures_and_throughput_tables_in_the_seeds_layout() {
        let a = summary(
            "redis",
            30,
            1,
            &[
                ("load_ops_per_sec", 13532.56),
                ("run_ops_per_sec", 25577.91),
            ],
            Some(1.0),
        );
        let b = summary(
            "redis",
            300,
            60,
            &[("load_ops_per_sec", 13969.8), ("run_ops_per_sec", 26771.05)],
            Some(1.0),
        );
        let t = seed_tables("bronze", &[(1, &a), (10, &b)]);
        assert_eq!(t.len(), 2);
        let md = t[0].markdown();
        assert!(
            md.contains("| instance | total | failed | fail rate (%) |"),
            "{md}"
        );
        assert!(
            md.contains("| 1 | 30 | 1 | 3.3 |") && md.contains("| 10 | 300 | 60 | 20.0 |"),
            "{md}"
        );
        let md = t[1].markdown();
        assert!(md.contains("| instance\\throughput | load | run |"), "{md}");
        assert!(md.contains("| 1 | 13,532.56 | 25,577.91 |"), "{md}");
    }

    #[test]
    fn builds_are_counted_failed_iterations_included_and_the_broker_gets_its_throughput() {
        let mut a = summary("build", 2, 1, &[("build_s", 1.5)], Some(3.0));
        a.totals = [
            ("builds".to_string(), 6.0),
            ("failed_builds".to_string(), 2.0),
        ]
        .into();
        let t = seed_tables("ci", &[(1, &a)]);
        assert_eq!(t.len(), 2);
        assert_eq!(
            t[1].columns,
            [
                "instance",
                "total build",
                "failed build",
                "fail rate (%)",
                "build time (s)"
            ]
        );
        assert_eq!(t[1].rows, [["1", "6", "2", "33.3", "1.50"]]);
        let mut b = summary(
            "broker",
            1,
            0,
            &[("in_msgs_per_sec", 1234.5), ("out_msgs_per_sec", 1200.0)],
            Some(10.0),
        );
        b.totals = [("sent".to_string(), 12345.0), ("lost".to_string(), 0.0)].into();
        let t = seed_tables("amq", &[(4, &b)]);
        assert_eq!(t[1].title, "amq (broker): throughput (msg/s)");
        assert_eq!(t[1].rows, [["4", "1,234.50", "1,200.00", "12,345", "0"]]);
    }

    #[test]
    fn git_gets_a_time_table() {
        let a = summary("git", 3, 0, &[], Some(23.9));
        let t = seed_tables("std", &[(1, &a)]);
        assert_eq!(t.len(), 2);
        assert_eq!(t[1].columns, ["project", "time"]);
        assert_eq!(t[1].rows, [["1", "23.90"]]);
    }

    #[test]
    fn the_load_table_has_a_row_per_point() {
        let l = LoadSample {
            samples: 5,
            node_cpu_pct: 41.26,
            node_cpu_peak_pct: 60.0,
            apps_cpu_pct: 80.0,
            host_cpu_pct: 55.5,
            host_cpu_peak_pct: 70.0,
            rss_peak_mib: 1234.5,
            disk_util_pct: 12.0,
            ..LoadSample::default()
        };
        let t = load_table(&[(1, l), (250, l)]);
        assert_eq!(t.columns[1], "node CPU (% of a core)");
        assert_eq!(t.rows.len(), 2);
        assert_eq!(
            t.rows[1],
            ["250", "41.3", "60.0", "80.0", "0.0", "55.5", "70.0", "1,234.5", "12.0"]
        );
        assert!(t
            .markdown()
            .starts_with("### load (tool sets): node and host"));
    }
}

//! What the workshop measured: one row per step in the seed's story layout (section, test,
//! connections, data set, result, the spec, the checks), the stored summary table (`kind =
//! "provisioned"`) and its terminal rendering.

use harness::store::SummaryTable;
use serde_json::json;

pub use super::spec::mb;
use super::steps::{StepDef, Unit};

/// The summary table's `kind`.
pub const KIND: &str = "provisioned";

/// Columns of the stored table. Rates are in `unit` (MB/s = 10^6 bytes/s for a file
/// system, AWS's unit; MiB/s for a volume model; or IOPS); empty cells are nulls.
pub const COLUMNS: [&str; 15] = [
    "section",
    "step",
    "test",
    "connections",
    "data_set",
    "unit",
    "result",
    "spec_rate",
    "burst",
    "burst_s",
    "spec_burst_s",
    "after_credits",
    "from_cache_pct",
    "spec",
    "checks",
];

/// One step's outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub section: String,
    pub step: String,
    pub test: String,
    pub connections: u32,
    pub data_set: String,
    /// "MB/s", "MiB/s" or "IOPS".
    pub unit: String,
    /// fio's headline for the step, in `unit`.
    pub result: Option<f64>,
    /// What the spec says it reaches (`spec.rate`), in `unit`.
    pub spec_rate: Option<f64>,
    /// A burst step: the rate while credits lasted, how long (and the spec's time), and
    /// the rate once they ran out.
    pub burst: Option<f64>,
    pub burst_s: Option<f64>,
    pub spec_burst_s: Option<f64>,
    pub after_credits: Option<f64>,
    /// Share of READ bytes served from the caches (a qoslab node only).
    pub from_cache_pct: Option<f64>,
    pub spec: String,
    pub passed: usize,
    /// Failures the job's bottleneck explains (docs/DIAGNOSIS.md).
    pub inconclusive: usize,
    pub checks: usize,
    /// fio failed or reported an error.
    pub error: Option<String>,
}

impl Row {
    /// The step's measured figures (`bw` or IOPS ones), in the row's unit (`div`).
    pub fn fill(&mut self, metrics: &std::collections::BTreeMap<String, f64>, bw: bool, div: f64) {
        let key = if bw { "bw" } else { "iops" };
        self.result = metrics.get(key).map(|v| v / div);
        self.burst = metrics.get(&format!("{key}_burst")).map(|v| v / div);
        self.after_credits = metrics
            .get(&format!("{key}_after_credits"))
            .map(|v| v / div);
        self.burst_s = metrics.get("burst_duration").copied();
    }

    /// A row for `step` before its numbers are in.
    pub fn new(step: &StepDef, unit: &str) -> Row {
        Row {
            section: step.section.into(),
            step: step.name.clone(),
            test: step.test.clone(),
            connections: step.connections,
            data_set: step.data_set.clone(),
            unit: unit.into(),
            result: None,
            spec_rate: None,
            burst: None,
            burst_s: None,
            spec_burst_s: step.burst.map(|b| b.seconds),
            after_credits: None,
            from_cache_pct: None,
            spec: step.spec_text.clone(),
            passed: 0,
            inconclusive: 0,
            checks: 0,
            error: None,
        }
    }

    pub fn pass(&self) -> bool {
        self.error.is_none() && self.passed == self.checks
    }

    /// `PASS 6/6`, `FAIL 4/6` (passed of all), `INCONCLUSIVE 5/6` (no failure, but one
    /// the bottleneck explains), `ERROR`, or `-` without checks.
    pub fn checks_text(&self) -> String {
        match (&self.error, self.checks) {
            (Some(_), _) => "ERROR".into(),
            (None, 0) => "-".into(),
            (None, n) if self.passed == n => format!("PASS {n}/{n}"),
            (None, n) if self.passed + self.inconclusive == n => {
                format!("INCONCLUSIVE {}/{n}", self.passed)
            }
            (None, n) => format!("FAIL {}/{n}", self.passed),
        }
    }
}

/// The unit label and divisor of a step's rates.
pub fn unit_of(step: &StepDef, fs: bool) -> (&'static str, f64) {
    match (step.unit, fs) {
        (Unit::Iops, _) => ("IOPS", 1.0),
        (Unit::Bw, true) => ("MB/s", 1e6),
        (Unit::Bw, false) => ("MiB/s", 1048576.0),
    }
}

/// The stored summary table.
pub fn table(rows: &[Row]) -> SummaryTable {
    let r1 = |x: Option<f64>| x.map(|v| (v * 10.0).round() / 10.0);
    let r3 = |x: Option<f64>| x.map(|v| (v * 1000.0).round() / 1000.0);
    SummaryTable::new(
        KIND,
        "provisioned performance (seed 003)",
        &COLUMNS,
        rows.iter()
            .map(|r| {
                vec![
                    json!(r.section),
                    json!(r.step),
                    json!(r.test),
                    json!(r.connections),
                    json!(r.data_set),
                    json!(r.unit),
                    json!(r1(r.result)),
                    json!(r1(r.spec_rate)),
                    json!(r1(r.burst)),
                    json!(r3(r.burst_s)),
                    json!(r3(r.spec_burst_s)),
                    json!(r1(r.after_credits)),
                    json!(r1(r.from_cache_pct)),
                    json!(r.spec),
                    json!(r.checks_text()),
                ]
            })
            .collect(),
    )
}

fn num(v: f64, unit: &str) -> String {
    if unit == "IOPS" {
        fio::fmt::iops(v.round() as u64)
    } else if v >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// What a row measured, in words: `625 MB/s`, or `burst 1249 MB/s for 9.02 s, then 150
/// MB/s`.
pub fn measured(r: &Row) -> String {
    if let Some(e) = &r.error {
        let short: String = e.chars().take(60).collect();
        return format!(
            "error: {short}{}",
            if e.chars().count() > 60 { "..." } else { "" }
        );
    }
    let u = &r.unit;
    let mut s = match (r.burst, r.burst_s, r.after_credits) {
        (Some(b), Some(t), Some(a)) => {
            format!(
                "burst {} {u} for {t:.2} s, then {} {u}",
                num(b, u),
                num(a, u)
            )
        }
        _ => r
            .result
            .map_or("-".into(), |v| format!("{} {u}", num(v, u))),
    };
    if let Some(p) = r.from_cache_pct {
        s.push_str(&format!(" ({p:.0}% from cache)"));
    }
    s
}

/// The terminal table: the seed's story, section by section.
pub fn render(rows: &[Row]) -> String {
    let head = [
        "Test",
        "Conns",
        "Data set",
        "Measured",
        "Provisioned spec",
        "Checks",
    ];
    let cells: Vec<[String; 6]> = rows
        .iter()
        .map(|r| {
            [
                format!("{} ({})", r.test, r.step),
                r.connections.to_string(),
                r.data_set.clone(),
                measured(r),
                r.spec.clone(),
                r.checks_text(),
            ]
        })
        .collect();
    let mut w: Vec<usize> = head.iter().map(|h| h.len()).collect();
    for c in &cells {
        for (i, x) in c.iter().enumerate() {
            w[i] = w[i].max(x.chars().count());
        }
    }
    let line = |c: &[String]| {
        let mut s = String::new();
        for (i, x) in c.iter().enumerate() {
            let pad = w[i].saturating_sub(x.chars().count());
            if i == 1 {
                s.push_str(&" ".repeat(pad));
                s.push_str(x);
            } else {
                s.push_str(x);
                if i + 1 < c.len() {
                    s.push_str(&" ".repeat(pad));
                }
            }
            if i + 1 < c.len() {
                s.push_str("  ");
            }
        }
        s.trim_end().to_string() + "\n"
    };
    let mut out = line(&head.map(String::from));
    let mut section = "";
    for (r, c) in rows.iter().zip(&cells) {
        if r.section != section {
            section = &r.section;
            out.push_str(&format!("{section}\n"));
        }
        out.push_str(&line(c));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(step: &str, section: &str) -> Row {
        Row {
            section: section.into(),
            step: step.into(),
            test: "1 MiB read".into(),
            connections: 16,
            data_set: "2 x 16MiB".into(),
            unit: "MB/s".into(),
            result: Some(470.2),
            spec_rate: Some(1250.0),
            burst: None,
            burst_s: None,
            spec_burst_s: None,
            after_credits: None,
            from_cache_pct: None,
            spec: "network 1250 MB/s".into(),
            passed: 2,
            inconclusive: 0,
            checks: 2,
            error: None,
        }
    }

    #[test]
    fn story_table_and_stored_rows() {
        let mut a = row("mem-read-1", "In-memory cache (throughput)");
        a.from_cache_pct = Some(100.0);
        let mut b = row("mem-read-16", "In-memory cache (throughput)");
        (b.burst, b.burst_s, b.after_credits, b.passed) =
            (Some(1249.4), Some(9.02), Some(150.1), 3);
        b.checks = 4;
        let mut c = row("iops-read", "IOPS (NVMe cache)");
        (c.unit, c.result) = ("IOPS".into(), Some(59_120.0));
        let text = render(&[a.clone(), b.clone(), c.clone()]);
        assert!(text.starts_with("Test "), "{text}");
        assert!(
            text.contains("\nIn-memory cache (throughput)\n1 MiB read (mem-read-1)"),
            "{text}"
        );
        assert!(text.contains("470 MB/s (100% from cache)"), "{text}");
        assert!(
            text.contains("burst 1249 MB/s for 9.02 s, then 150 MB/s"),
            "{text}"
        );
        assert!(text.contains("59.1k IOPS"), "{text}");
        assert!(
            text.contains("FAIL 3/4") && text.contains("PASS 2/2"),
            "{text}"
        );
        assert!(text.contains("\nIOPS (NVMe cache)\n"), "{text}");
        let t = table(&[a, b]);
        assert_eq!(t.columns.len(), COLUMNS.len());
        let at = |r: usize, c: &str| t.rows[r][t.column(c).unwrap()].clone();
        assert_eq!(at(1, "burst_s"), json!(9.02));
        assert_eq!(at(1, "checks"), json!("FAIL 3/4"));
        assert_eq!(at(0, "burst"), json!(null));
        assert_eq!(mb(1.25e9), "1250");
        assert_eq!(mb(62.5e6), "62.5");
    }
}

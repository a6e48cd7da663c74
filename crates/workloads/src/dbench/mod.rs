//! The dbench profile: the nine fio jobs of LogDNA's dbench (BRIEF section 4) and its summary
//! block, computed from fio's JSON instead of scraped from its text.
//!
//! Every job: `randrepeat=0 verify=0 size=2G time_based ramp_time=2s runtime=15s` plus the
//! target's engine options (libaio + direct=1 + filename, or the nbd engine + uri), then:
//!
//! | job | options |
//! |---|---|
//! | read_iops / write_iops | bs=4K iodepth=64 rw=randread / randwrite |
//! | read_bw / write_bw | bs=128K iodepth=64 rw=randread / randwrite |
//! | read_latency / write_latency | bs=4K iodepth=4 rw=randread / randwrite |
//! | read_seq / write_seq | bs=1M iodepth=16 rw=read / write thread numjobs=4 offset_increment=500M |
//! | rw_mix | bs=4k iodepth=64 rw=randrw rwmixread=75 |
//!
//! Differences from dbench's shell script, none of which changes the I/O issued: the
//! sequential jobs add `group_reporting=1` (dbench read the group's `READ: bw=` line, which
//! is the same total), and no job sets `gtod_reduce` (dbench set it on the non-latency jobs;
//! it disables fio's per-interval samples, which the steady-state ceiling check needs).

pub mod seed000;
pub mod seed000_run;

use std::collections::BTreeMap;

use fio::{fmt, JobResult};
use harness::store::RunRecord;
use harness::{Family, JobSet, Plan, PlanError, ProfileRequest, Registry};
use report::svg::esc;
use report::ReportHooks;

/// The profile's name in plans and on the command line.
pub const NAME: &str = "dbench";

/// The family: a job set for `[[workload]] profile = "dbench"`, `--profile dbench`, and the
/// summary blocks in reports.
pub struct Dbench;

impl Family for Dbench {
    fn name(&self) -> &'static str {
        NAME
    }

    fn about(&self) -> &'static str {
        "LogDNA's dbench: nine fio jobs and its summary block (seed 000)"
    }

    fn offers_profile(&self) -> bool {
        true
    }

    /// One workload of the set on the target (on the embedded node, one unlimited 100 GB
    /// volume named "bench").
    fn profile(&self, req: &ProfileRequest, registry: &Registry) -> Result<Plan, PlanError> {
        let text = format!(
            "{}[[workload]]\nname = \"{NAME}\"\nprofile = \"{NAME}\"\n",
            req.bench_volume()
        );
        registry.parse(&text, &format!("--profile {NAME}"))
    }

    fn job_set(&self) -> Option<&dyn JobSet> {
        Some(self)
    }
}

impl JobSet for Dbench {
    fn jobs(&self) -> Vec<(String, Vec<(String, String)>)> {
        JOBS.iter()
            .map(|j| {
                let mut o: Vec<(String, String)> = COMMON
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect();
                o.extend(
                    job_options(j)
                        .unwrap_or_default()
                        .into_iter()
                        .map(|(k, v)| (k.to_string(), v.to_string())),
                );
                (j.to_string(), o)
            })
            .collect()
    }

    fn summary(&self, results: &BTreeMap<String, JobResult>) -> String {
        Summary::from_results(results).render()
    }
}

/// The dbench blocks of every run that ran dbench's jobs, in Markdown and HTML.
/// The demo's headline table (kind `ceilings`): each volume's measured ceiling as a share
/// of the expected one, read and write, with the ±3% band and pass/fail marks.
fn ceiling_charts(t: &harness::store::SummaryTable) -> Vec<report::svg::Chart> {
    use report::charts::num;
    use report::svg::{Chart, Line, Mark, RefLine, CEILING};
    let (Some(vol), Some(r), Some(w), Some(verdict)) = (
        t.column("volume"),
        t.column("read % of ceiling"),
        t.column("write % of ceiling"),
        t.column("verdict (within 3%)"),
    ) else {
        return Vec::new();
    };
    let mut c = Chart::new(
        "Measured ceiling as % of the expected one (within 3% passes)",
        "volume",
        "% of the expected ceiling",
    );
    let mut lines = [
        Line {
            label: "read".into(),
            points: Vec::new(),
            style: 0,
        },
        Line {
            label: "write".into(),
            points: Vec::new(),
            style: 1,
        },
    ];
    let mut x = 0.0;
    for row in &t.rows {
        let (Some(a), Some(b)) = (row.get(r).and_then(num), row.get(w).and_then(num)) else {
            continue;
        };
        x += 1.0;
        let name = row
            .get(vol)
            .and_then(|v| v.as_str())
            .unwrap_or("?")
            .to_string();
        let pass = row
            .get(verdict)
            .and_then(|v| v.as_str())
            .is_some_and(|v| v.starts_with("PASS"));
        lines[0].points.push((x, a));
        lines[1].points.push((x, b));
        c.marks.push(Mark { x, y: a, pass });
        c.marks.push(Mark { x, y: b, pass });
        c.x_categories.push((x, name));
    }
    c.lines = lines.to_vec();
    for (label, y) in [("+3%", 103.0), ("-3%", 97.0)] {
        c.refs.push(RefLine {
            label: label.into(),
            y,
            style: CEILING,
        });
    }
    if c.has_data() {
        vec![c]
    } else {
        Vec::new()
    }
}

impl ReportHooks for Dbench {
    fn table_charts(&self, t: &harness::store::SummaryTable) -> Option<Vec<report::svg::Chart>> {
        (t.kind == "ceilings").then(|| ceiling_charts(t))
    }

    fn markdown(&self, run: &RunRecord) -> String {
        summaries(run)
            .into_iter()
            .map(|(title, s)| format!("## dbench: {title}\n\n```\n{}```\n\n", s.render()))
            .collect()
    }

    fn html(&self, run: &RunRecord) -> String {
        let summaries = summaries(run);
        if summaries.is_empty() {
            return String::new();
        }
        let mut o = String::from("<h2 id=\"dbench\">dbench summaries</h2>");
        for (title, s) in summaries {
            o.push_str(&format!(
                "<h3>{}</h3><pre>{}</pre>",
                esc(&title),
                esc(&s.render())
            ));
        }
        o
    }
}

/// dbench summary blocks for every (workload, volume, iteration) whose jobs are dbench's.
pub fn summaries(run: &RunRecord) -> Vec<(String, Summary)> {
    let mut groups: BTreeMap<(u32, String, String), BTreeMap<String, JobResult>> = BTreeMap::new();
    let mut order: Vec<(u32, String, String)> = Vec::new();
    for j in &run.jobs {
        if !JOBS.contains(&j.name.as_str()) {
            continue;
        }
        let key = (
            j.iteration,
            j.workload.clone(),
            j.volume.clone().unwrap_or_default(),
        );
        if !groups.contains_key(&key) {
            order.push(key.clone());
        }
        let g = groups.entry(key).or_default();
        if let Some(r) = j.primary() {
            g.insert(j.name.clone(), r.clone());
        }
    }
    order
        .into_iter()
        .map(|k| {
            let title = if k.2.is_empty() {
                format!("{} (iteration {})", k.1, k.0)
            } else {
                format!("{} on {} (iteration {})", k.1, k.2, k.0)
            };
            let s = Summary::from_results(&groups[&k]);
            (title, s)
        })
        .collect()
}

/// Job names in dbench's order.
pub const JOBS: [&str; 9] = [
    "read_iops",
    "write_iops",
    "read_bw",
    "write_bw",
    "read_latency",
    "write_latency",
    "read_seq",
    "write_seq",
    "rw_mix",
];

/// Options common to every dbench job (besides runtime/ramp and the target's options).
pub const COMMON: [(&str, &str); 4] = [
    ("randrepeat", "0"),
    ("verify", "0"),
    ("size", "2G"),
    ("time_based", "1"),
];

/// The job-specific options of dbench job `name`.
pub fn job_options(name: &str) -> Option<Vec<(&'static str, &'static str)>> {
    let o = match name {
        "read_iops" => vec![("bs", "4K"), ("iodepth", "64"), ("rw", "randread")],
        "write_iops" => vec![("bs", "4K"), ("iodepth", "64"), ("rw", "randwrite")],
        "read_bw" => vec![("bs", "128K"), ("iodepth", "64"), ("rw", "randread")],
        "write_bw" => vec![("bs", "128K"), ("iodepth", "64"), ("rw", "randwrite")],
        "read_latency" => vec![("bs", "4K"), ("iodepth", "4"), ("rw", "randread")],
        "write_latency" => vec![("bs", "4K"), ("iodepth", "4"), ("rw", "randwrite")],
        "read_seq" | "write_seq" => vec![
            ("bs", "1M"),
            ("iodepth", "16"),
            ("rw", if name == "read_seq" { "read" } else { "write" }),
            ("thread", "1"),
            ("numjobs", "4"),
            ("offset_increment", "500M"),
            ("group_reporting", "1"),
        ],
        "rw_mix" => vec![
            ("bs", "4k"),
            ("iodepth", "64"),
            ("rw", "randrw"),
            ("rwmixread", "75"),
        ],
        _ => return None,
    };
    Some(o)
}

/// The numbers of a dbench summary, taken from fio's JSON the way fio's text shows them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summary {
    pub read_iops: Option<u64>,
    pub write_iops: Option<u64>,
    pub read_bw: Option<u64>,
    pub write_bw: Option<u64>,
    /// Mean total latency, ns.
    pub read_lat_ns: Option<f64>,
    pub write_lat_ns: Option<f64>,
    pub read_seq_bw: Option<u64>,
    pub write_seq_bw: Option<u64>,
    pub mix_read_iops: Option<u64>,
    pub mix_write_iops: Option<u64>,
}

impl Summary {
    /// From results keyed by dbench job name (missing jobs print as `-`).
    pub fn from_results(r: &BTreeMap<String, JobResult>) -> Summary {
        let g = |n: &str| r.get(n);
        Summary {
            read_iops: g("read_iops").map(|j| j.read.iops_text()),
            write_iops: g("write_iops").map(|j| j.write.iops_text()),
            read_bw: g("read_bw").map(|j| j.read.bw_text()),
            write_bw: g("write_bw").map(|j| j.write.bw_text()),
            read_lat_ns: g("read_latency").map(|j| j.read.lat_mean_ns),
            write_lat_ns: g("write_latency").map(|j| j.write.lat_mean_ns),
            read_seq_bw: g("read_seq").map(|j| j.read.bw_text()),
            write_seq_bw: g("write_seq").map(|j| j.write.bw_text()),
            mix_read_iops: g("rw_mix").map(|j| j.read.iops_text()),
            mix_write_iops: g("rw_mix").map(|j| j.write.iops_text()),
        }
    }

    /// dbench's summary block, byte for byte in seed 000's format.
    pub fn render(&self) -> String {
        let i = |v: Option<u64>| v.map(fmt::iops).unwrap_or_else(|| "-".into());
        let b = |v: Option<u64>| v.map(fmt::bw).unwrap_or_else(|| "-".into());
        let l = |v: Option<f64>| v.map(fmt::usec).unwrap_or_else(|| "-".into());
        format!(
            "==================\n\
             = Dbench Summary =\n\
             ==================\n\
             Random Read/Write IOPS: {}/{}. BW: {} / {}\n\
             Average Latency (usec) Read/Write: {}/{}\n\
             Sequential Read/Write: {} / {}\n\
             Mixed Random Read/Write IOPS: {}/{}\n",
            i(self.read_iops),
            i(self.write_iops),
            b(self.read_bw),
            b(self.write_bw),
            l(self.read_lat_ns),
            l(self.write_lat_ns),
            b(self.read_seq_bw),
            b(self.write_seq_bw),
            i(self.mix_read_iops),
            i(self.mix_write_iops),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fio::DirStats;

    fn dir(total_ios: u64, io_bytes: u64, runtime_ms: u64, lat_ns: f64) -> DirStats {
        DirStats {
            total_ios,
            io_bytes,
            runtime_ms,
            lat_mean_ns: lat_ns,
            ..Default::default()
        }
    }

    #[test]
    fn nine_jobs_all_defined() {
        assert_eq!(JOBS.len(), 9);
        for j in JOBS {
            assert!(job_options(j).is_some(), "{j}");
        }
        assert!(job_options("nope").is_none());
    }

    #[test]
    fn renders_seed_000_block() {
        // Seed 000, QoS_500iops on 100 GB: the numbers fio would have had behind the text.
        let mut r = BTreeMap::new();
        let mut put = |name: &str, read: DirStats, write: DirStats| {
            r.insert(
                name.to_string(),
                JobResult {
                    jobname: name.into(),
                    read,
                    write,
                    ..Default::default()
                },
            );
        };
        let z = DirStats::default;
        put("read_iops", dir(7425, 7425 * 4096, 15000, 0.0), z());
        put("write_iops", z(), dir(7425, 7425 * 4096, 15000, 0.0));
        put("read_bw", dir(0, 32_925_696 * 15, 15000, 0.0), z());
        put("write_bw", z(), dir(0, 32_925_696 * 15, 15000, 0.0));
        put("read_latency", dir(1, 1, 1, 8_002_640.0), z());
        put("write_latency", z(), dir(1, 1, 1, 8_008_700.0));
        put("read_seq", dir(0, 31_562_138 * 15, 15000, 0.0), z());
        put("write_seq", z(), dir(0, 33_135_002 * 15, 15000, 0.0));
        put("rw_mix", dir(5610, 0, 15000, 0.0), dir(1800, 0, 15000, 0.0));
        let s = Summary::from_results(&r);
        assert_eq!(
            s.render(),
            "==================\n= Dbench Summary =\n==================\n\
             Random Read/Write IOPS: 495/495. BW: 31.4MiB/s / 31.4MiB/s\n\
             Average Latency (usec) Read/Write: 8002.64/8008.70\n\
             Sequential Read/Write: 30.1MiB/s / 31.6MiB/s\n\
             Mixed Random Read/Write IOPS: 374/120\n"
        );
    }

    #[test]
    fn missing_jobs_print_dashes() {
        let s = Summary::default().render();
        assert!(s.contains("Random Read/Write IOPS: -/-. BW: - / -"));
    }
}

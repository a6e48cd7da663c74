//! fio's per-window logs, parsed into typed series.
//!
//! The harness asks fio for `write_iops_log`, `write_bw_log`, `write_lat_log` and
//! `write_hist_log` with `log_avg_msec = log_hist_msec = 500` ([`log_options`]). fio then
//! writes, per job process N (`numjobs`), `PREFIX_iops.N.log`, `PREFIX_bw.N.log`,
//! `PREFIX_lat.N.log` (also `_clat`/`_slat`, unused) and `PREFIX_clat_hist.N.log`.
//!
//! Format (fio 3.x, "log file formats" in fio's HOWTO): one line per window and direction,
//! `time_ms, value, direction, block_size, offset[, priority]`, direction 0 read, 1 write,
//! 2 trim; IOPS as I/Os per second, bandwidth in KiB/s, latency in ns (averaged over the
//! window). Histogram lines are `time_ms, direction, block_size, bin0, bin1, ...`: the
//! completion-latency histogram of that window only (fio writes differences), 1856 bins of
//! fio's log-linear `io_u_plat` scale (fewer with `log_hist_coarseness`), decoded with fio's
//! own `plat_idx_to_val`.
//!
//! In client/server mode fio's client writes each server's logs on this machine with the
//! server appended (`PREFIX_iops.1.log.10.0.0.2`); [`collect`] adds them up like fio's
//! "All clients" entry.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("fio log {file}: line {line}: {what}")]
    Line {
        file: String,
        line: usize,
        what: String,
    },
    #[error("fio log {0}: {1}")]
    Io(String, std::io::Error),
}

/// The window fio is asked to average its logs over (`log_avg_msec`, `log_hist_msec`), ms.
pub const WINDOW_MS: u64 = 500;

/// One fio log window of one direction, summed over the job's processes (`numjobs`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FioSample {
    /// End of the window, ms since fio started measuring.
    pub t_ms: u64,
    /// "read", "write" or "trim".
    pub direction: String,
    pub iops: f64,
    /// Bytes/s (fio logs KiB/s).
    pub bw_bytes: f64,
    /// Mean total latency in the window, ns (0 when fio logged none).
    pub lat_mean_ns: f64,
    /// Completion-latency percentiles in the window from fio's histogram log, ns (0 when
    /// the window had no histogram).
    pub p50_ns: u64,
    pub p99_ns: u64,
}

/// fio options that make it write the logs [`collect`] reads, all files starting with
/// `prefix` (an absolute path without extension).
pub fn log_options(prefix: &str) -> Vec<(String, String)> {
    let ms = WINDOW_MS.to_string();
    vec![
        ("write_iops_log".into(), prefix.into()),
        ("write_bw_log".into(), prefix.into()),
        ("write_lat_log".into(), prefix.into()),
        ("write_hist_log".into(), prefix.into()),
        ("log_avg_msec".into(), ms.clone()),
        ("log_hist_msec".into(), ms),
    ]
}

/// One line of an IOPS, bandwidth or latency log.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LogLine {
    pub t_ms: u64,
    pub value: f64,
    /// 0 read, 1 write, 2 trim.
    pub ddir: u8,
    pub bs: u64,
}

fn num<T: std::str::FromStr>(s: Option<&str>, what: &str) -> Result<T, String> {
    let s = s.ok_or_else(|| format!("missing {what}"))?.trim();
    s.parse()
        .map_err(|_| format!("{what} {s:?} is not a number"))
}

/// Parse an IOPS, bandwidth or latency log (`time, value, direction, bs, offset[, prio]`).
pub fn parse_log(text: &str, file: &str) -> Result<Vec<LogLine>, LogError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let mut f = line.split(',');
        let parsed = (|| {
            let t_ms = num(f.next(), "time")?;
            let value = num(f.next(), "value")?;
            let ddir: u8 = num(f.next(), "direction")?;
            let bs = num(f.next(), "block size")?;
            if ddir > 2 {
                return Err(format!(
                    "direction {ddir}: allowed 0 (read), 1 (write), 2 (trim)"
                ));
            }
            Ok(LogLine {
                t_ms,
                value,
                ddir,
                bs,
            })
        })();
        out.push(parsed.map_err(|what| LogError::Line {
            file: file.into(),
            line: i + 1,
            what,
        })?);
    }
    Ok(out)
}

/// fio's `FIO_IO_U_PLAT_NR` (bins of the completion-latency histogram, fio >= 3.0).
pub const PLAT_NR: usize = 1856;
const PLAT_BITS: u32 = 6;
const PLAT_VAL: u64 = 1 << PLAT_BITS;

/// fio's `plat_idx_to_val`: the representative latency (ns) of histogram bin `idx`.
pub fn plat_idx_to_val(idx: usize) -> u64 {
    let idx = idx as u64;
    if idx < (PLAT_VAL << 1) {
        return idx;
    }
    let error_bits = (idx >> PLAT_BITS) - 1;
    let base = 1u64 << (error_bits + PLAT_BITS as u64);
    let k = idx % PLAT_VAL;
    base + ((k as f64 + 0.5) * (1u64 << error_bits) as f64) as u64
}

/// One window of a histogram log: the percentiles it holds.
#[derive(Debug, Clone, PartialEq)]
pub struct HistLine {
    pub t_ms: u64,
    pub ddir: u8,
    /// Number of I/Os the window's histogram counts.
    pub count: u64,
    /// Bins as (latency ns, count), only non-empty ones.
    pub bins: Vec<(u64, u64)>,
}

/// The `q`-quantile (0..1) of (value, count) bins sorted by value; 0 when empty.
pub fn quantile(bins: &[(u64, u64)], q: f64) -> u64 {
    let total: u64 = bins.iter().map(|b| b.1).sum();
    if total == 0 {
        return 0;
    }
    let want = (q * total as f64).ceil().max(1.0) as u64;
    let mut acc = 0;
    for &(v, c) in bins {
        acc += c;
        if acc >= want {
            return v;
        }
    }
    bins.last().map(|b| b.0).unwrap_or(0)
}

/// Parse a histogram log (`time, direction, bs, bin0..binN`).
pub fn parse_hist(text: &str, file: &str) -> Result<Vec<HistLine>, LogError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let err = |what: String| LogError::Line {
            file: file.into(),
            line: i + 1,
            what,
        };
        let mut f = line.split(',');
        let t_ms: u64 = num(f.next(), "time").map_err(err)?;
        let ddir: u8 = num(f.next(), "direction").map_err(err)?;
        let _bs: u64 = num(f.next(), "block size").map_err(err)?;
        let counts: Vec<u64> = f
            .map(|c| num(Some(c), "bin count"))
            .collect::<Result<_, _>>()
            .map_err(err)?;
        if PLAT_NR.checked_rem(counts.len()) != Some(0) {
            return Err(err(format!(
                "{} bins: expected {PLAT_NR} or a power-of-two fraction of it (log_hist_coarseness)",
                counts.len()
            )));
        }
        let stride = PLAT_NR / counts.len();
        let bins: Vec<(u64, u64)> = counts
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(j, &c)| (plat_idx_to_val(j * stride + stride / 2), c))
            .collect();
        out.push(HistLine {
            t_ms,
            ddir,
            count: counts.iter().sum(),
            bins,
        });
    }
    Ok(out)
}

fn window(t_ms: u64) -> u64 {
    // fio stamps a window a millisecond or a few early or late; snap to the grid.
    ((t_ms + WINDOW_MS / 2) / WINDOW_MS).max(1) * WINDOW_MS
}

fn dir_name(d: u8) -> &'static str {
    match d {
        0 => "read",
        1 => "write",
        _ => "trim",
    }
}

#[derive(Default)]
struct Acc {
    iops: f64,
    kib: f64,
    lat_weighted: f64,
    lat_weight: f64,
    bins: BTreeMap<u64, u64>,
}

/// Read every log fio wrote under `dir` for `prefix` (the file name part of the prefix
/// given to [`log_options`]) and merge them into one sample per window and direction:
/// IOPS and bandwidth add over processes, latency is IOPS-weighted, percentiles come from
/// the summed histograms. No logs (fio ran elsewhere, or failed early) is an empty series.
pub fn collect(dir: &Path, prefix: &str) -> Result<Vec<FioSample>, LogError> {
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(LogError::Io(dir.display().to_string(), e)),
    };
    let mut names: Vec<String> = rd
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| {
            n.starts_with(&format!("{prefix}_")) && (n.ends_with(".log") || n.contains(".log."))
        })
        .collect();
    names.sort();
    let mut acc: BTreeMap<(u64, u8), Acc> = BTreeMap::new();
    for name in names {
        let kind = name[prefix.len() + 1..]
            .split('.')
            .next()
            .unwrap_or_default()
            .to_string();
        if !matches!(kind.as_str(), "iops" | "bw" | "lat" | "clat_hist") {
            continue;
        }
        let path = dir.join(&name);
        let text = std::fs::read_to_string(&path)
            .map_err(|e| LogError::Io(path.display().to_string(), e))?;
        if kind == "clat_hist" {
            for h in parse_hist(&text, &name)? {
                let a = acc.entry((window(h.t_ms), h.ddir)).or_default();
                for (v, c) in h.bins {
                    *a.bins.entry(v).or_default() += c;
                }
            }
            continue;
        }
        let lines = parse_log(&text, &name)?;
        if kind == "lat" {
            // Weight each process's window mean by that process's IOPS in the window.
            let iops_file = dir.join(name.replacen("_lat.", "_iops.", 1));
            let iops = std::fs::read_to_string(&iops_file)
                .ok()
                .and_then(|t| parse_log(&t, &name).ok())
                .unwrap_or_default();
            for l in lines {
                let w = iops
                    .iter()
                    .find(|i| i.ddir == l.ddir && window(i.t_ms) == window(l.t_ms))
                    .map(|i| i.value)
                    .filter(|&w| w > 0.0)
                    .unwrap_or(1.0);
                let a = acc.entry((window(l.t_ms), l.ddir)).or_default();
                a.lat_weighted += l.value * w;
                a.lat_weight += w;
            }
            continue;
        }
        for l in lines {
            let a = acc.entry((window(l.t_ms), l.ddir)).or_default();
            if kind == "iops" {
                a.iops += l.value;
            } else {
                a.kib += l.value;
            }
        }
    }
    Ok(acc
        .into_iter()
        .map(|((t_ms, d), a)| {
            let bins: Vec<(u64, u64)> = a.bins.into_iter().collect();
            FioSample {
                t_ms,
                direction: dir_name(d).into(),
                iops: a.iops,
                bw_bytes: a.kib * 1024.0,
                lat_mean_ns: if a.lat_weight > 0.0 {
                    a.lat_weighted / a.lat_weight
                } else {
                    0.0
                },
                p50_ns: quantile(&bins, 0.50),
                p99_ns: quantile(&bins, 0.99),
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixtures() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fiologs")
    }

    #[test]
    fn parses_iops_log_lines() {
        let text = std::fs::read_to_string(fixtures().join("mix_iops.1.log")).unwrap();
        let l = parse_log(&text, "mix_iops.1.log").unwrap();
        assert_eq!(l.len(), 8);
        assert_eq!(
            l[0],
            LogLine {
                t_ms: 499,
                value: 302.0,
                ddir: 0,
                bs: 0
            }
        );
        assert_eq!(l[1].ddir, 1);
        assert_eq!(l[1].value, 100.0);
    }

    #[test]
    fn bad_lines_name_file_line_and_field() {
        let e = parse_log("500, 10, 0, 0, 0\n1000, x, 0, 0, 0\n", "a_iops.1.log").unwrap_err();
        assert_eq!(
            e.to_string(),
            "fio log a_iops.1.log: line 2: value \"x\" is not a number"
        );
        let e = parse_log("500, 10, 7, 0, 0\n", "f").unwrap_err();
        assert!(e.to_string().contains("direction 7"), "{e}");
        let e = parse_hist("500, 0, 4096, 1, 2, 3\n", "h").unwrap_err();
        assert!(e.to_string().contains("3 bins"), "{e}");
    }

    #[test]
    fn plat_values_match_fio() {
        // Values below 128 are exact; then 64 bins per power of two, bin centre.
        assert_eq!(plat_idx_to_val(0), 0);
        assert_eq!(plat_idx_to_val(127), 127);
        assert_eq!(plat_idx_to_val(128), 129); // [128, 130) -> 129
        assert_eq!(plat_idx_to_val(192), 258); // [256, 260) -> 258
        assert_eq!(plat_idx_to_val(PLAT_NR - 1), 17_112_760_320);
    }

    #[test]
    fn histogram_windows_count_the_windows_ios() {
        let text = std::fs::read_to_string(fixtures().join("mix_clat_hist.1.log")).unwrap();
        let h = parse_hist(&text, "mix_clat_hist.1.log").unwrap();
        assert_eq!(h.len(), 6);
        // 300 reads/s and 100 writes/s (rate_iops=300,100) in 500 ms windows.
        assert_eq!((h[0].ddir, h[0].count), (0, 153));
        assert_eq!((h[1].ddir, h[1].count), (1, 52));
        assert!(h[2..].iter().all(|w| w.count == 150 || w.count == 50));
    }

    #[test]
    fn collect_merges_processes_and_directions_per_window() {
        // mix.fio: numjobs=2, each 300 read + 100 write IOPS of 4 KiB.
        let s = collect(&fixtures(), "mix").unwrap();
        let reads: Vec<&FioSample> = s.iter().filter(|x| x.direction == "read").collect();
        let writes: Vec<&FioSample> = s.iter().filter(|x| x.direction == "write").collect();
        assert_eq!(
            reads.iter().map(|r| r.t_ms).collect::<Vec<_>>(),
            vec![500, 1000, 1500, 2000]
        );
        assert_eq!(reads[0].iops, 604.0);
        assert_eq!(writes[0].iops, 200.0);
        assert_eq!(reads[1].bw_bytes, (1200.0 + 1200.0) * 1024.0);
        for r in &reads {
            assert!((595.0..=605.0).contains(&r.iops), "{r:?}");
            assert!(r.lat_mean_ns > 1000.0 && r.lat_mean_ns < 100_000.0, "{r:?}");
        }
        // Percentiles from the windows' histograms (the last window has none: fio wrote
        // its last histogram before the last IOPS sample).
        assert!(
            reads[0].p99_ns >= reads[0].p50_ns && reads[0].p50_ns > 0,
            "{:?}",
            reads[0]
        );
        assert!(reads[0].p99_ns < 1_000_000, "{:?}", reads[0]);
        assert_eq!(reads[3].p99_ns, 0);
        assert!(collect(&fixtures(), "nosuchprefix").unwrap().is_empty());
        // Client/server: the client stores each server's logs with the server appended.
        let dir = crate::test_dir("cslogs");
        for host in ["10.0.0.2", "10.0.0.3"] {
            std::fs::copy(
                fixtures().join("mix_iops.1.log"),
                dir.join(format!("cs_iops.1.log.{host}")),
            )
            .unwrap();
        }
        let cs = collect(&dir, "cs").unwrap();
        assert_eq!(cs[0].iops, 604.0, "{cs:?}");
        assert!(collect(Path::new("/no/such/dir"), "x").unwrap().is_empty());
    }

    #[test]
    fn quantiles() {
        let b = [(10, 50), (20, 49), (1000, 1)];
        assert_eq!(quantile(&b, 0.5), 10);
        assert_eq!(quantile(&b, 0.99), 20);
        assert_eq!(quantile(&b, 0.999), 1000);
        assert_eq!(quantile(&[], 0.99), 0);
    }
}

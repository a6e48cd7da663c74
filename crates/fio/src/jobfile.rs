//! fio job files: a `[global]` section and one section per job. Options live here, never on
//! fio's command line (client/server mode ships the job file to each server as it is).

use std::fmt::Write as _;

/// One `[name]` section: ordered `key=value` options (a value of `None` writes a bare key).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Section {
    pub name: String,
    pub options: Vec<(String, Option<String>)>,
}

impl Section {
    pub fn new(name: impl Into<String>) -> Section {
        Section {
            name: name.into(),
            options: Vec::new(),
        }
    }

    /// Set `key` (replacing an earlier value of the same key).
    pub fn set(&mut self, key: &str, value: impl Into<String>) -> &mut Section {
        let value = Some(value.into());
        match self.options.iter_mut().find(|(k, _)| k == key) {
            Some(slot) => slot.1 = value,
            None => self.options.push((key.to_string(), value)),
        }
        self
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.options
            .iter()
            .find(|(k, _)| k == key)
            .and_then(|(_, v)| v.as_deref())
    }
}

/// A complete fio job file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobFile {
    pub global: Section,
    pub jobs: Vec<Section>,
}

impl JobFile {
    pub fn new() -> JobFile {
        JobFile {
            global: Section::new("global"),
            jobs: Vec::new(),
        }
    }

    /// The option as the job `job` sees it: its own value, else the global one.
    pub fn effective(&self, job: usize, key: &str) -> Option<&str> {
        self.jobs
            .get(job)
            .and_then(|j| j.get(key))
            .or_else(|| self.global.get(key))
    }

    /// The job file text, as fio reads it.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for s in std::iter::once(&self.global).chain(&self.jobs) {
            let _ = writeln!(out, "[{}]", s.name);
            for (k, v) in &s.options {
                match v {
                    Some(v) => {
                        let _ = writeln!(out, "{k}={v}");
                    }
                    None => {
                        let _ = writeln!(out, "{k}");
                    }
                }
            }
            out.push('\n');
        }
        out
    }
}

/// fio's time syntax for a number of seconds ("3s", "500ms").
pub fn fio_time(secs: f64) -> String {
    let ms = (secs * 1000.0).round() as u64;
    let (whole, rest) = (ms / 1000, ms % 1000);
    if rest == 0 {
        format!("{whole}s")
    } else {
        format!("{ms}ms")
    }
}

/// The queue depth a sized job (one that must move its whole `size`, not `time_based`)
/// can use: `depth`, or 1 with fio's `nfs` engine. fio 3.33's nfs engine ends such a job
/// early at a deeper queue: its event loop answers "no events" while fewer than `iodepth`
/// requests are in flight, so a job whose whole size fits in its queue moves nothing (0 of
/// 2 x 9 MiB at QD64). At depth 1 libnfs still sends each request's NFS operations at once
/// (a 1 MiB write is 16 WRITEs of a 64 KiB wtmax).
pub fn sized_job_depth(nfs_engine: bool, depth: u32) -> u32 {
    if nfs_engine {
        1
    } else {
        depth
    }
}

/// Whether `s` is safe as a fio job-file value or key: one line, no section brackets at
/// the start, no comment characters that fio would strip.
pub fn valid_value(s: &str) -> bool {
    !s.contains(['\n', '\r', ';', '#']) && !s.trim_start().starts_with('[')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_global_then_jobs() {
        let mut f = JobFile::new();
        f.global.set("ioengine", "nbd").set("time_based", "1");
        let mut j = Section::new("read_iops");
        j.set("bs", "4k").set("rw", "randread").set("bs", "8k");
        f.jobs.push(j);
        assert_eq!(
            f.render(),
            "[global]\nioengine=nbd\ntime_based=1\n\n[read_iops]\nbs=8k\nrw=randread\n\n"
        );
        assert_eq!(f.effective(0, "ioengine"), Some("nbd"));
        assert_eq!(f.effective(0, "bs"), Some("8k"));
    }

    #[test]
    fn values_are_single_lines() {
        assert!(valid_value("nbd+unix:///v?socket=/tmp/x.sock"));
        assert!(!valid_value("a\nb"));
        assert!(!valid_value("[evil]"));
        assert!(!valid_value("x;y"));
    }
}

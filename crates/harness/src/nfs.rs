//! fio over NFS: `--target nfs://HOST/PATH` (any NFSv3 server: qoslab's, ganesha, ONTAP,
//! FSx) and NAS volumes of the embedded node, both through fio's `nfs` ioengine (libnfs:
//! its own TCP connection per job, no kernel mount).
//!
//! fio's nfs engine creates a file only by writing it sequentially (fio 3.33: a read or a
//! random write of a file that is not there yet fails with NFS3ERR_NOENT, and fio says
//! so on stderr but reports no error: `fio::executor` makes that the job's error), so
//! [`prefill`] writes the file once,
//! at queue depth 1 ([`fio::sized_job_depth`]), before the first job of
//! the run that reads it. A kernel-mounted directory stays `--target DIR` (libaio).

use std::collections::HashMap;
use std::sync::Mutex;

use fio::{JobFile, Section};

/// The file fio's jobs use in an export (dbench's name).
pub const FILE: &str = "fiotest";

/// Check an NFS target URL: `nfs://HOST/PATH[?nfsport=P&mountport=P...]` as libnfs takes
/// it (`HOST` an address or name, `PATH` the export, absolute).
pub fn check_url(url: &str) -> Result<(), String> {
    let rest = url
        .strip_prefix("nfs://")
        .ok_or("an NFS target is nfs://HOST/PATH[?nfsport=P&mountport=P]")?;
    let (host_path, _query) = rest.split_once('?').unwrap_or((rest, ""));
    let (host, path) = host_path
        .split_once('/')
        .ok_or("nfs://HOST/PATH: the export path is missing")?;
    if host.is_empty() {
        return Err("nfs://HOST/PATH: the host is missing".into());
    }
    if path.is_empty() {
        return Err("nfs://HOST/PATH: the export path is missing".into());
    }
    if !fio::jobfile::valid_value(url) {
        return Err("must be one line without ';' or '#'".into());
    }
    Ok(())
}

/// fio options reaching file [`FILE`] of the export at `url`.
pub fn options(url: &str) -> Vec<(String, String)> {
    vec![
        ("ioengine".into(), "nfs".into()),
        ("nfs_url".into(), url.to_string()),
        ("filename".into(), FILE.into()),
    ]
}

/// Files laid out in this process: (URL, file) → bytes.
static LAID_OUT: Mutex<Option<HashMap<(String, String), u64>>> = Mutex::new(None);

fn opt<'a>(o: &'a [(String, String)], k: &str) -> Option<&'a str> {
    o.iter()
        .rev()
        .find(|(x, _)| x == k)
        .map(|(_, v)| v.as_str())
}

/// The job file that lays out what a job reads over NFS, when the target is fio's nfs
/// engine, the job reads, and the file was not laid out this large yet in this process;
/// `None` otherwise. Its length covers every job of the section (`size` +
/// (`numjobs` − 1) × `offset_increment`).
pub fn prefill(target: &[(String, String)], job: &[(String, String)]) -> Option<JobFile> {
    if opt(target, "ioengine") != Some("nfs") {
        return None;
    }
    let rw = opt(job, "rw")
        .or_else(|| opt(job, "readwrite"))
        .unwrap_or("read");
    // Only a sequential write creates its file (fio 3.33's nfs engine: any other job of a
    // file that is not there fails with NFS3ERR_NOENT; fio lays out a file before random
    // writes on every other engine too).
    if rw.split(':').next() == Some("write") {
        return None;
    }
    let url = opt(target, "nfs_url")?.to_string();
    let file = opt(job, "filename")
        .or_else(|| opt(target, "filename"))
        .unwrap_or(FILE)
        .to_string();
    let size = opt(job, "size").and_then(fio_bytes)?;
    let jobs = opt(job, "numjobs")
        .and_then(|n| n.parse::<u64>().ok())
        .unwrap_or(1);
    let inc = opt(job, "offset_increment")
        .and_then(fio_bytes)
        .unwrap_or(0);
    let len = size + jobs.saturating_sub(1) * inc;
    let mut g = LAID_OUT.lock().unwrap_or_else(|p| p.into_inner());
    let seen = g.get_or_insert_with(HashMap::new);
    if seen
        .get(&(url.clone(), file.clone()))
        .is_some_and(|l| *l >= len)
    {
        return None;
    }
    seen.insert((url.clone(), file.clone()), len);
    let mut f = JobFile::new();
    f.global.set("ioengine", "nfs");
    f.global.set("nfs_url", url);
    f.global.set("filename", file);
    let mut s = Section::new("prefill".to_string());
    s.set("rw", "write".to_string());
    s.set("bs", "1M".to_string());
    s.set("iodepth", fio::sized_job_depth(true, 16).to_string());
    s.set("size", len.to_string());
    f.jobs.push(s);
    Some(f)
}

/// A size as fio reads it (qoslab's strict parse: `fio::options::size_bytes`).
fn fio_bytes(s: &str) -> Option<u64> {
    fio::options::size_bytes(s).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kv(p: &[(&str, &str)]) -> Vec<(String, String)> {
        p.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn urls() {
        assert!(check_url("nfs://127.0.0.1/vol1?nfsport=2049&mountport=2049").is_ok());
        assert!(check_url("nfs://srv/a/b").is_ok());
        for bad in [
            "nbd://x/y",
            "nfs:///vol",
            "nfs://host",
            "nfs://host/",
            "nfs://h/v;x",
        ] {
            assert!(check_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_read_job_over_nfs_is_prefilled_once() {
        let t = options("nfs://127.0.0.1/pre?nfsport=1&mountport=1");
        let seq = kv(&[
            ("rw", "read"),
            ("size", "2G"),
            ("numjobs", "4"),
            ("offset_increment", "500M"),
        ]);
        let f = prefill(&t, &seq).expect("a prefill");
        let text = f.render();
        assert!(
            text.contains("size=3720347648"),
            "2 GiB + 3 x 500 MiB: {text}"
        );
        assert!(
            text.contains("iodepth=1") && text.contains("rw=write"),
            "{text}"
        );
        // Laid out: a smaller read needs nothing; a sequential write makes its own file;
        // random writes need it laid out (fio 3.33's nfs engine cannot create it); nor
        // other engines.
        assert!(prefill(&t, &kv(&[("rw", "randread"), ("size", "2G")])).is_none());
        assert!(prefill(&t, &kv(&[("rw", "write"), ("size", "8G")])).is_none());
        let f = prefill(&t, &kv(&[("rw", "randwrite"), ("size", "8G")])).unwrap();
        assert!(f.render().contains("size=8589934592"), "{}", f.render());
        assert!(prefill(&t, &kv(&[("rw", "randwrite"), ("size", "8G")])).is_none());
        let nbd = kv(&[("ioengine", "nbd"), ("uri", "nbd://x/y")]);
        assert!(prefill(&nbd, &seq).is_none());
        assert_eq!(fio_bytes("4k"), Some(4096));
        assert_eq!(fio_bytes("128k"), Some(131072));
        assert_eq!(fio_bytes("lots"), None);
    }
}

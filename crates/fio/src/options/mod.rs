//! The fio job options a benchmark plan may set: an allow-list of workload options, each
//! with the value it takes ([`values::Value`]), checked by name after normalising the name
//! exactly as fio does.
//!
//! How fio reads an option line of a job file (fio 3.33, `init.c` and `parse.c`): it drops
//! leading white space (`isspace`), cuts the line at the first `;` or `#`, drops trailing
//! white space and control characters, splits the name from the value at the first `=` and
//! drops trailing white space and control characters from the name again; a C string ends
//! at a NUL. The name then matches an option's name or its one alias exactly. So
//! `" exec_prerun"`, `"exec_prerun\t"` and `"exec_prerun\u000b"` are all `exec_prerun` to
//! fio: a check that compares the name as written misses them, so [`fio_name`] gives the
//! name fio will match and [`check`] refuses a name not written that way.
//!
//! Values are where fio reads more than a value: it replaces `${VAR}` with the
//! environment, replaces `$pagesize`, `$mb_memory` and `$ncpus` and then hands the value to
//! `bc` through `popen(3)` (a shell), and reads numbers by their prefix. Every value of an
//! option on the list is checked against its grammar here, which has no `$`, quote or
//! space in it.
//!
//! What is not on the list is refused: options that name a path or run a program (with
//! why: [`dangerous`]) and every option not named here. `qoslab bench
//! --allow-any-fio-option` lets a plan's author pass any option as written.

pub mod values;

pub use values::{size as size_bytes, Value};

/// An option a plan may set: its name, fio's other name for it, what its value is.
#[derive(Debug, Clone, Copy)]
pub struct Listed {
    pub name: &'static str,
    pub alias: Option<&'static str>,
    pub value: Value,
}

const fn opt(name: &'static str, value: Value) -> Listed {
    Listed {
        name,
        alias: None,
        value,
    }
}

const fn aka(name: &'static str, alias: &'static str, value: Value) -> Listed {
    Listed {
        name,
        alias: Some(alias),
        value,
    }
}

/// Engines a plan may pick on a file, directory or block-device target: each does its I/O
/// on the target's file and runs nothing else.
pub const ENGINES: &[&str] = &[
    "libaio", "io_uring", "psync", "pvsync", "pvsync2", "sync", "vsync", "posixaio", "mmap", "null",
];

const VERIFY: &[&str] = &[
    "0",
    "1",
    "md5",
    "crc64",
    "crc32c",
    "crc32c-intel",
    "crc32",
    "crc16",
    "crc7",
    "xxhash",
    "sha512",
    "sha256",
    "sha1",
    "sha3-224",
    "sha3-256",
    "sha3-384",
    "sha3-512",
    "meta",
    "pattern",
    "null",
];

/// The workload options a plan may set (fio's names and aliases, from fio 3.33's
/// `options.c`).
pub const LISTED: &[Listed] = &[
    aka("rw", "readwrite", Value::RwMode),
    opt("rw_sequencer", Value::OneOf(&["sequential", "identical"])),
    aka("bs", "blocksize", Value::SizeList),
    aka("bsrange", "blocksize_range", Value::SizeRanges),
    opt("bssplit", Value::SizeSplit),
    aka("ba", "blockalign", Value::SizeList),
    aka("bs_unaligned", "blocksize_unaligned", Value::Bool),
    opt("bs_is_seq_rand", Value::Bool),
    opt("iodepth", Value::Int(1, 65535)),
    aka(
        "iodepth_batch",
        "iodepth_batch_submit",
        Value::Int(0, 65535),
    ),
    aka(
        "iodepth_batch_complete_min",
        "iodepth_batch_complete",
        Value::Int(0, 65535),
    ),
    opt("iodepth_batch_complete_max", Value::Int(0, 65535)),
    opt("iodepth_low", Value::Int(0, 65535)),
    opt("io_submit_mode", Value::OneOf(&["inline", "offload"])),
    opt("numjobs", Value::Int(1, 256)),
    opt("thread", Value::Bool),
    opt("group_reporting", Value::Bool),
    aka("stonewall", "wait_for_previous", Value::Bool),
    opt("new_group", Value::Bool),
    opt("size", Value::SizeOrPercent),
    aka("io_size", "io_limit", Value::SizeOrPercent),
    aka("offset", "fileoffset", Value::SizeOrPercent),
    opt("offset_align", Value::Size),
    opt("offset_increment", Value::SizeOrPercent),
    opt("number_ios", Value::Int(0, u64::MAX >> 1)),
    opt("loops", Value::Int(1, 1_000_000)),
    opt("startdelay", Value::Time),
    opt("rate", Value::RateList),
    aka("rate_min", "ratemin", Value::RateList),
    opt("rate_iops", Value::IntList),
    opt("rate_iops_min", Value::IntList),
    opt("rate_process", Value::OneOf(&["linear", "poisson"])),
    aka("rate_cycle", "ratecycle", Value::Int(1, 1_000_000)),
    opt("rate_ignore_thinktime", Value::Bool),
    opt("rwmixread", Value::Percent),
    opt("rwmixwrite", Value::Percent),
    opt("direct", Value::Bool),
    opt("buffered", Value::Bool),
    opt("sync", Value::OneOf(&["0", "1", "none", "sync", "dsync"])),
    opt("fsync", Value::Int(0, u64::MAX >> 1)),
    opt("fdatasync", Value::Int(0, u64::MAX >> 1)),
    opt("end_fsync", Value::Bool),
    opt("fsync_on_close", Value::Bool),
    opt("invalidate", Value::Bool),
    opt("overwrite", Value::Bool),
    opt(
        "fallocate",
        Value::OneOf(&["none", "native", "posix", "keep", "truncate", "0", "1"]),
    ),
    opt("verify", Value::OneOf(VERIFY)),
    opt("do_verify", Value::Bool),
    opt("verify_only", Value::Bool),
    opt("verify_interval", Value::Size),
    opt("verify_offset", Value::Size),
    opt("verify_pattern", Value::Pattern),
    opt("verify_fatal", Value::Bool),
    opt("verify_backlog", Value::Int(0, u64::MAX >> 1)),
    opt("verify_backlog_batch", Value::Int(0, u64::MAX >> 1)),
    aka("randrepeat", "allrandrepeat", Value::Bool),
    opt("randseed", Value::Int(0, u64::MAX >> 1)),
    opt("norandommap", Value::Bool),
    opt(
        "random_generator",
        Value::OneOf(&["tausworthe", "lfsr", "tausworthe64"]),
    ),
    opt("random_distribution", Value::Distribution),
    opt("percentage_random", Value::IntList),
    opt("thinktime", Value::Time),
    opt("thinktime_spin", Value::Time),
    opt("thinktime_blocks", Value::Int(1, u64::MAX >> 1)),
    opt("zero_buffers", Value::Bool),
    opt("refill_buffers", Value::Bool),
    opt("scramble_buffers", Value::Bool),
    opt("buffer_pattern", Value::Pattern),
    opt("buffer_compress_percentage", Value::Percent),
    opt("buffer_compress_chunk", Value::Size),
    opt("dedupe_percentage", Value::Percent),
    opt(
        "unified_rw_reporting",
        Value::OneOf(&["none", "mixed", "both", "0", "1", "2"]),
    ),
    opt("lat_percentiles", Value::Bool),
    opt("clat_percentiles", Value::Bool),
    opt("max_latency", Value::Time),
    opt("latency_target", Value::Time),
    opt("latency_window", Value::Time),
    opt("latency_percentile", Value::PercentFloat),
    opt("cpus_allowed", Value::CpuList),
    opt("cpus_allowed_policy", Value::OneOf(&["shared", "split"])),
    opt("ioengine", Value::OneOf(ENGINES)),
];

/// Options the harness sets itself (the target's, the plan's times): what to write instead.
pub const HARNESS_OWNED: &[(&str, &str)] = &[
    ("runtime", "the workload's or [bench]'s runtime key"),
    (
        "timeout",
        "the workload's or [bench]'s runtime key (timeout is fio's runtime)",
    ),
    (
        "time_based",
        "the workload's or [bench]'s runtime key (jobs are time based)",
    ),
    ("ramp_time", "the workload's or [bench]'s ramp key"),
];

/// Options that name a path or run a program, and why (a plan sets them only with
/// `--allow-any-fio-option`). Not a deny-list: everything not in [`LISTED`] is refused;
/// this only says why for the ones that matter most.
pub fn dangerous(name: &str) -> Option<&'static str> {
    Some(match name {
        "exec_prerun" | "exec_postrun" => "fio runs its value as a shell command",
        "program" | "arg" => "the exec engine runs it",
        "ioengine" => engine(""),
        "filename" | "directory" | "opendir" | "filename_format" | "uri" | "nfs_url"
        | "lockfile" | "unique_filename" => {
            "it names what fio reads and writes: the target does (--target)"
        }
        "write_iolog" | "write_bw_log" | "write_lat_log" | "write_iops_log" | "write_hist_log"
        | "verify_dump" | "verify_state_save" | "error_dump" => {
            "fio writes a file at a path it names (the harness records fio's logs itself)"
        }
        "read_iolog"
        | "read_iolog_chunked"
        | "merge_blktrace_file"
        | "verify_state_load"
        | "replay_redirect" => "fio reads a file (or a device) at a path it names",
        "cgroup" | "cgroup_weight" | "cgroup_nodelete" => {
            "fio creates and joins a cgroup at a path it names"
        }
        "ioscheduler" => "fio writes the device's scheduler in sysfs",
        "mem" | "iomem" => "mmapshared:FILE and mmaphuge:FILE name a path",
        "uid" | "gid" => "fio switches the job to another user",
        "fill_device" | "fill_fs" => "fio fills the whole file system",
        "unlink" | "unlink_each_loop" => "fio deletes the file (the harness removes what it wrote)",
        "allow_mounted_write" => "fio writes a device that holds a mounted file system",
        "profile" => "fio's built-in profiles make their own files",
        n if n.starts_with("replay_") || n.starts_with("trigger") => {
            "it replays or triggers I/O from a path or a program"
        }
        n if n.starts_with("include") => "fio reads another job file",
        _ => return None,
    })
}

/// Why a plan may not pick engine `v`.
fn engine(v: &str) -> &'static str {
    if v == "exec" {
        "the exec engine runs a program (the `program` option)"
    } else if v.starts_with("external") || v.contains('/') {
        "fio loads the named shared object and runs its code"
    } else {
        "a plan picks one of the engines that do I/O on the target's file only: libaio, \
         io_uring, psync, pvsync, pvsync2, sync, vsync, posixaio, mmap, null"
    }
}

/// The name fio matches for an option written as `key` in a job file: leading white space
/// dropped, cut at a NUL, `;`, `#` or `=`, trailing white space and control characters
/// dropped.
pub fn fio_name(key: &str) -> String {
    let k = key.trim_start_matches(|c: char| c.is_ascii() && is_space(c as u8));
    let end = k.find(['\0', ';', '#', '=']).unwrap_or(k.len());
    k[..end]
        .trim_end_matches(|c: char| c.is_ascii() && (is_space(c as u8) || c.is_ascii_control()))
        .to_string()
}

/// C's `isspace` in the C locale.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r')
}

/// The listed option `name` names (its own name or its alias).
pub fn listed(name: &str) -> Option<&'static Listed> {
    LISTED
        .iter()
        .find(|o| o.name == name || o.alias == Some(name))
}

/// Why a plan may not set an option as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The name is not written as fio reads it (`" exec_prerun"`).
    Spelling { fio_reads: String },
    /// The harness sets it; write `instead`.
    Owned { instead: &'static str },
    /// It names a path or runs a program.
    Dangerous { why: &'static str },
    /// Not an option the harness lets a plan set.
    Unlisted,
    /// Listed, but the value is not one of its values.
    Value { expected: String },
}

impl Refusal {
    /// Whether `--allow-any-fio-option` lets it through.
    pub fn waivable(&self) -> bool {
        matches!(self, Refusal::Dangerous { .. } | Refusal::Unlisted)
    }
}

/// Whether a plan may set option `key` to `value` (the value as it goes in the job file).
/// `any`: `--allow-any-fio-option` (options off the list pass as written; a name must
/// still be written as fio reads it, a listed option's value still parse).
pub fn check(key: &str, value: &str, any: bool) -> Result<(), Refusal> {
    let name = fio_name(key);
    if name != key || name.is_empty() || !name.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(Refusal::Spelling { fio_reads: name });
    }
    if let Some((_, instead)) = HARNESS_OWNED.iter().find(|(n, _)| *n == name) {
        return Err(Refusal::Owned { instead });
    }
    let refused = match listed(&name) {
        Some(o) => match o.value.check(value) {
            Ok(()) => return Ok(()),
            Err(_) if o.name == "ioengine" => Refusal::Dangerous { why: engine(value) },
            Err(expected) => return Err(Refusal::Value { expected }),
        },
        None => match dangerous(&name) {
            Some(why) => Refusal::Dangerous { why },
            None => Refusal::Unlisted,
        },
    };
    if any {
        Ok(())
    } else {
        Err(refused)
    }
}

/// The listed names, for messages.
pub fn listed_names() -> String {
    LISTED.iter().map(|o| o.name).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_normalised_as_fio_does() {
        for k in [
            " exec_prerun",
            "exec_prerun ",
            "exec_prerun\t",
            "\texec_prerun",
            "exec_prerun\u{b}",
            "\u{b}exec_prerun",
            "exec_prerun\u{c}",
            "exec_prerun\r",
            "exec_prerun\u{1}",
            "exec_prerun\0junk",
            "exec_prerun;x",
            "exec_prerun#x",
            "exec_prerun=x",
            "  exec_prerun \t ",
        ] {
            assert_eq!(fio_name(k), "exec_prerun", "{k:?}");
            assert_eq!(
                check(k, "touch /tmp/x", false),
                Err(Refusal::Spelling {
                    fio_reads: "exec_prerun".into()
                }),
                "{k:?}"
            );
            // The flag never passes a disguised name.
            assert!(check(k, "touch /tmp/x", true).is_err(), "{k:?}");
        }
        // A leading control character that is not white space is kept by fio: no match.
        assert_eq!(fio_name("\u{1}exec_prerun"), "\u{1}exec_prerun");
        assert!(check("\u{1}exec_prerun", "x", false).is_err());
    }

    #[test]
    fn paths_and_programs_need_the_flag_and_unknown_options_too() {
        for (k, v) in [
            ("exec_prerun", "touch /tmp/x"),
            ("exec_postrun", "touch /tmp/x"),
            ("ioengine", "exec"),
            ("ioengine", "external:/tmp/e.so"),
            ("ioengine", "/tmp/e.so"),
            ("ioengine", "nbd"),
            ("program", "/usr/bin/touch"),
            ("filename", "/some/other/file"),
            ("directory", "/etc"),
            ("write_iolog", "/any/path"),
            ("read_iolog", "/any/path"),
            ("write_bw_log", "/any/path"),
            ("replay_redirect", "/dev/sda"),
            ("cgroup", "x"),
            ("include", "x"),
            ("mem", "mmapshared:/tmp/x"),
        ] {
            let r = check(k, v, false).unwrap_err();
            assert!(matches!(r, Refusal::Dangerous { .. }), "{k} {r:?}");
            assert!(r.waivable());
            assert_eq!(check(k, v, true), Ok(()), "{k}");
        }
        assert_eq!(check("nice", "5", false), Err(Refusal::Unlisted));
        assert_eq!(check("nice", "5", true), Ok(()));
        // Harness-owned options stay refused, and so do bad values, flag or not.
        assert!(matches!(
            check("timeout", "5", true),
            Err(Refusal::Owned { .. })
        ));
        let r = check("bs", "4kk", true).unwrap_err();
        assert!(matches!(r, Refusal::Value { .. }) && !r.waivable());
        assert!(check("size", "${HOME}", true).is_err());
        assert!(check("bs", "$pagesize", false).is_err());
    }

    #[test]
    fn workload_options_and_their_aliases_pass() {
        for (k, v) in [
            ("rw", "randread"),
            ("readwrite", "randrw"),
            ("blocksize", "4k"),
            ("bs", "4k,64k"),
            ("bssplit", "4k/50:64k/50"),
            ("iodepth", "64"),
            ("numjobs", "4"),
            ("size", "2G"),
            ("offset_increment", "500M"),
            ("rate_iops", "500"),
            ("rate", "10M"),
            ("rwmixread", "75"),
            ("direct", "1"),
            ("fsync", "32"),
            ("end_fsync", "1"),
            ("verify", "crc32c"),
            ("random_distribution", "zipf:1.2"),
            ("norandommap", "1"),
            ("ioengine", "io_uring"),
        ] {
            assert_eq!(check(k, v, false), Ok(()), "{k} = {v}");
        }
        // Every listed name is what fio itself would match.
        for o in LISTED {
            assert_eq!(fio_name(o.name), o.name);
            assert!(
                dangerous(o.name).is_none() || o.name == "ioengine",
                "{}",
                o.name
            );
        }
    }
}

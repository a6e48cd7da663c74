//! May this block device be written? A disk benchmark destroys what is on the device, so a
//! device that holds anything recognisable is refused unless the user names it in
//! `--destroy-data`.
//!
//! "Anything recognisable": a partition table or file-system/RAID/LVM signature (libblkid's
//! probe, through `wipefs --no-act --json`, which only reads), partitions, a mount of the
//! device or of a partition (the host's /proc/self/mountinfo by `maj:min`), holders (dm, md
//! stacked on it) or swap. A probe that cannot run is a refusal too: no proof, no write.

use procfs_core::FromBufRead;
use serde::Serialize;

use crate::error::{ErrorKind, HostError};
use crate::facts::{kv, sections, MARK};
use crate::ssh::Host;

/// One signature libblkid found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Signature {
    pub offset: String,
    /// `ext4`, `xfs`, `gpt`, `dos`, `LVM2_member`, ...
    pub kind: String,
    pub label: Option<String>,
    pub uuid: Option<String>,
}

/// What is on a device, as the host sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeviceState {
    /// As given by the user.
    pub given: String,
    /// The canonical path (symlinks resolved).
    pub path: String,
    pub size_bytes: u64,
    pub rotational: bool,
    pub signatures: Vec<Signature>,
    pub partitions: Vec<String>,
    pub holders: Vec<String>,
    pub mounts: Vec<String>,
    pub swap: bool,
    /// Set when the signature probe itself failed (its error).
    pub probe_error: Option<String>,
}

impl DeviceState {
    /// Why writing to this device would destroy something (empty: it looks blank).
    pub fn reasons(&self) -> Vec<String> {
        let mut r = Vec::new();
        for s in &self.signatures {
            let mut t = format!("{} signature at offset {}", s.kind, s.offset);
            if let Some(l) = s.label.as_deref().filter(|l| !l.is_empty()) {
                t.push_str(&format!(" (label {l})"));
            }
            r.push(t);
        }
        if !self.partitions.is_empty() {
            r.push(format!("partitions {}", self.partitions.join(", ")));
        }
        if !self.mounts.is_empty() {
            r.push(format!("mounted on {}", self.mounts.join(", ")));
        }
        if !self.holders.is_empty() {
            r.push(format!("in use by {}", self.holders.join(", ")));
        }
        if self.swap {
            r.push("in use as swap".into());
        }
        if let Some(e) = &self.probe_error {
            r.push(format!("could not probe for signatures: {e}"));
        }
        r
    }

    /// Whether the user's `--destroy-data` list names this device (as given or canonical).
    pub fn named_in(&self, destroy: &[String]) -> bool {
        destroy.iter().any(|d| d == &self.given || d == &self.path)
    }
}

/// A device that may not be written, and why.
#[derive(Debug, thiserror::Error)]
#[error("host {host}: refusing to write {device}: {} (name it in --destroy-data {device} to overwrite it)", reasons.join("; "))]
pub struct Refused {
    pub host: String,
    pub device: String,
    pub reasons: Vec<String>,
}

/// Check a device before writing: Ok if it is blank, or if `destroy` names it.
pub fn check_writable(state: &DeviceState, host: &str, destroy: &[String]) -> Result<(), Refused> {
    let reasons = state.reasons();
    if reasons.is_empty() || (state.named_in(destroy) && state.probe_error.is_none()) {
        Ok(())
    } else {
        Err(Refused {
            host: host.to_string(),
            device: state.given.clone(),
            reasons,
        })
    }
}

fn script(dev: &str) -> String {
    let dev = crate::quote(dev);
    format!(
        r#"m() {{ printf '{MARK}%s\n' "$1"; }}
d=$(readlink -f -- {dev}) || exit 3
[ -b "$d" ] || {{ echo "not a block device: {dev} ($d)" >&2; exit 3; }}
n=${{d##*/}}; s=/sys/class/block/$n
m sys; echo "path $d"; echo "dev $(cat $s/dev)"; echo "size $(cat $s/size)"
echo "rotational $(cat $s/queue/rotational 2>/dev/null || cat $s/../queue/rotational 2>/dev/null)"
for p in $s/$n*; do [ -e "$p/partition" ] && echo "part ${{p##*/}} $(cat $p/dev)"; done
for h in $s/holders/*; do [ -e "$h" ] && echo "holder ${{h##*/}}"; done
m wipefs; wipefs --no-act --json "$d" 2>&1 || echo "wipefs-failed $?"
m mountinfo; cat /proc/self/mountinfo
m swaps; cat /proc/swaps
"#
    )
}

/// Probe `dev` on `host` (reads only).
pub fn inspect(host: &Host, dev: &str) -> Result<DeviceState, HostError> {
    let o = host.run(&script(dev))?;
    if o.code != 0 {
        return Err(host.err(ErrorKind::Other(format!(
            "device {dev}: {}",
            crate::ssh::tail(&o.stderr, 3)
        ))));
    }
    parse(dev, &o.stdout).map_err(|detail| {
        host.err(ErrorKind::Parse {
            what: format!("device probe of {dev}"),
            detail,
        })
    })
}

fn parse(given: &str, out: &str) -> Result<DeviceState, String> {
    let s = sections(out);
    let get = |k: &str| s.get(k).map(String::as_str).unwrap_or("");
    let mut st = DeviceState {
        given: given.to_string(),
        path: String::new(),
        size_bytes: 0,
        rotational: false,
        signatures: Vec::new(),
        partitions: Vec::new(),
        holders: Vec::new(),
        mounts: Vec::new(),
        swap: false,
        probe_error: None,
    };
    let mut devs = Vec::new();
    for (k, v) in kv(get("sys")) {
        match k {
            "path" => st.path = v.to_string(),
            "dev" => devs.push(v.to_string()),
            "size" => st.size_bytes = v.parse::<u64>().unwrap_or(0) * 512,
            "rotational" => st.rotational = v == "1",
            "part" => {
                let mut it = v.split_whitespace();
                st.partitions.extend(it.next().map(String::from));
                devs.extend(it.next().map(String::from));
            }
            "holder" => st.holders.push(v.to_string()),
            _ => {}
        }
    }
    if st.path.is_empty() || devs.is_empty() {
        return Err("no device information".into());
    }
    let w = get("wipefs").trim();
    if let Some(code) = w
        .lines()
        .last()
        .and_then(|l| l.strip_prefix("wipefs-failed "))
    {
        st.probe_error = Some(format!(
            "wipefs exited with {code}: {}",
            w.lines().next().unwrap_or("")
        ));
    } else if !w.is_empty() {
        let v: serde_json::Value =
            serde_json::from_str(w).map_err(|e| format!("wipefs --json output: {e}"))?;
        for sig in v["signatures"].as_array().into_iter().flatten() {
            let text = |k: &str| sig[k].as_str().map(String::from);
            st.signatures.push(Signature {
                offset: text("offset").unwrap_or_default(),
                kind: text("type").unwrap_or_else(|| "unknown".into()),
                label: text("label"),
                uuid: text("uuid"),
            });
        }
    }
    let mounts = procfs_core::process::MountInfos::from_buf_read(get("mountinfo").as_bytes())
        .map_err(|e| format!("/proc/self/mountinfo: {e}"))?;
    st.mounts = mounts
        .0
        .iter()
        .filter(|m| devs.contains(&m.majmin))
        .map(|m| m.mount_point.display().to_string())
        .collect();
    let names: Vec<String> = std::iter::once(st.path.clone())
        .chain(st.partitions.iter().map(|p| format!("/dev/{p}")))
        .collect();
    st.swap = get("swaps")
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .any(|f| names.iter().any(|n| n == f));
    Ok(st)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(wipefs: &str, mountinfo: &str) -> String {
        format!(
            "{MARK}sys\npath /dev/loop7\ndev 7:7\nsize 131072\nrotational 1\n{MARK}wipefs\n{wipefs}\n{MARK}mountinfo\n{mountinfo}{MARK}swaps\nFilename Type\n"
        )
    }

    #[test]
    fn blank_device_is_writable() {
        let st = parse("/dev/loop7", &out("", "")).unwrap();
        assert!(st.reasons().is_empty());
        assert_eq!(st.size_bytes, 64 << 20);
        assert!(check_writable(&st, "h", &[]).is_ok());
    }

    #[test]
    fn ext4_is_refused_unless_named() {
        let w = r#"{"signatures": [{"device":"loop7","offset":"0x438","type":"ext4","uuid":"u","label":null}]}"#;
        let st = parse("/dev/loop7", &out(w, "")).unwrap();
        let e = check_writable(&st, "h1", &[]).unwrap_err().to_string();
        assert!(e.contains("ext4 signature at offset 0x438"), "{e}");
        assert!(e.contains("--destroy-data /dev/loop7"), "{e}");
        assert!(check_writable(&st, "h1", &["/dev/loop6".into()]).is_err());
        assert!(check_writable(&st, "h1", &["/dev/loop7".into()]).is_ok());
    }

    #[test]
    fn mounted_and_failed_probe_are_refused() {
        let st = parse(
            "/dev/loop7",
            &out("", "30 1 7:7 / /mnt/x rw - ext4 /dev/loop7 rw\n"),
        )
        .unwrap();
        assert_eq!(st.mounts, vec!["/mnt/x"]);
        let st = parse(
            "/dev/loop7",
            &out("wipefs: error: Permission denied\nwipefs-failed 1", ""),
        )
        .unwrap();
        let e = check_writable(&st, "h", &["/dev/loop7".into()]).unwrap_err();
        assert!(e.to_string().contains("could not probe"), "{e}");
    }
}

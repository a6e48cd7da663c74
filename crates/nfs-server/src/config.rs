//! node.toml's `[nfs]`, parsed and checked here: where the NFS front end listens, its
//! transfer sizes and ONTAP's reserved-port options. The node's own sections are
//! [`NodeConfig`](storage_node::NodeConfig)'s; messages are made as its are ([`Src`]).
//! (`[[export_policy]]` stays the node's: it holds the export policies, which the REST
//! API edits, and a NAS volume names one.)

use std::net::SocketAddr;

use serde::Deserialize;
use storage_node::config::{ConfigError, NumOrStr, Src};
use toml::Spanned;

use crate::{DEFAULT_XFER, MAX_XFER};

/// The NFS front end's settings (`[nfs]`, `serve --listen-nfs`, `--nfs-rtmax/--nfs-wtmax`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NfsSettings {
    /// Where NFSv3, MOUNT and the portmapper listen (`None`: NFS is off).
    pub listen: Option<SocketAddr>,
    /// FSINFO's rtmax/wtmax: clients split larger requests themselves.
    pub rtmax: u32,
    pub wtmax: u32,
    /// ONTAP's `-mount-rootonly` (default enabled): MOUNT only from a reserved source port
    /// (below 1024, which only root can bind).
    pub mount_rootonly: bool,
    /// ONTAP's `-nfs-rootonly` (default disabled): every NFS call only from a reserved port.
    pub nfs_rootonly: bool,
}

impl Default for NfsSettings {
    fn default() -> Self {
        NfsSettings {
            listen: None,
            rtmax: DEFAULT_XFER,
            wtmax: DEFAULT_XFER,
            mount_rootonly: true,
            nfs_rootonly: false,
        }
    }
}

/// Check a transfer size: 4 KiB..1 MiB, a multiple of 4 KiB. `what` names it.
pub fn check_xfer(what: &str, v: u64) -> Result<u32, String> {
    if (4096..=MAX_XFER as u64).contains(&v) && v.is_multiple_of(4096) {
        Ok(v as u32)
    } else {
        Err(format!(
            "{what} = {v}: allowed values are multiples of 4096 from 4096 to {MAX_XFER} (4KiB..1MiB)"
        ))
    }
}

/// The file as NFS reads it: its `[nfs]`, the rest ignored (the node's parser refuses
/// unknown keys).
#[derive(Deserialize)]
struct RawFile {
    nfs: Option<Spanned<RawNfs>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNfs {
    listen: Option<String>,
    rtmax: Option<NumOrStr>,
    wtmax: Option<NumOrStr>,
    mount_rootonly: Option<bool>,
    nfs_rootonly: Option<bool>,
}

/// The settings of config text `src`'s `[nfs]` (the defaults without one).
pub fn parse(src: &Src) -> Result<NfsSettings, ConfigError> {
    let raw: RawFile = src.deserialize()?;
    match &raw.nfs {
        None => Ok(NfsSettings::default()),
        Some(sn) => {
            let what = format!("{}:{}: nfs", src.origin, src.line(sn.span().start));
            settings(&what, sn.get_ref())
        }
    }
}

/// Validate `[nfs]`; `what` names the table (`node.toml:12: nfs`).
fn settings(what: &str, raw: &RawNfs) -> Result<NfsSettings, ConfigError> {
    let mut s = NfsSettings::default();
    if let Some(l) = &raw.listen {
        s.listen = Some(l.parse().map_err(|_| {
            ConfigError(format!(
                "{what}.listen = {l:?}: expected HOST:PORT with an IP address, e.g. 127.0.0.1:2049"
            ))
        })?);
    }
    let size = |field: &str, v: &Option<NumOrStr>, default: u32| -> Result<u32, ConfigError> {
        let Some(v) = v else { return Ok(default) };
        let bytes = match v {
            NumOrStr::Int(i) if *i >= 0 => *i as u64,
            NumOrStr::Str(t) => {
                qos_core::parse_size(t).map_err(|e| ConfigError(format!("{what}.{field}: {e}")))?
            }
            other => {
                return Err(ConfigError(format!(
                    "{what}.{field} = {}: give bytes or a size such as \"64KiB\"",
                    other.as_text()
                )))
            }
        };
        check_xfer(&format!("{what}.{field}"), bytes).map_err(ConfigError)
    };
    s.rtmax = size("rtmax", &raw.rtmax, DEFAULT_XFER)?;
    s.wtmax = size("wtmax", &raw.wtmax, DEFAULT_XFER)?;
    s.mount_rootonly = raw.mount_rootonly.unwrap_or(s.mount_rootonly);
    s.nfs_rootonly = raw.nfs_rootonly.unwrap_or(s.nfs_rootonly);
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Result<NfsSettings, String> {
        // The node's parser reads the same file first (and refuses keys no one owns).
        storage_node::NodeConfig::parse(text, "node.toml").map_err(|e| e.to_string())?;
        parse(&Src::new(text, "node.toml")).map_err(|e| e.to_string())
    }

    #[test]
    fn nfs_table_sets_address_sizes_and_rootonly_options() {
        let s = parsed(
            "[node]\nmmap_reads = true\n[nfs]\nlisten = \"127.0.0.1:2049\"\nrtmax = \"1MiB\"\nwtmax = 32768\nmount_rootonly = false\nnfs_rootonly = true\n",
        )
        .unwrap();
        assert_eq!(
            s,
            NfsSettings {
                listen: Some("127.0.0.1:2049".parse().unwrap()),
                rtmax: 1 << 20,
                wtmax: 32768,
                mount_rootonly: false,
                nfs_rootonly: true,
            }
        );
        assert_eq!(parsed("").unwrap(), NfsSettings::default());
    }

    #[test]
    fn bad_values_are_refused_naming_line_field_and_value() {
        let refused = |text: &str, want: &str| {
            assert_eq!(parsed(text).unwrap_err(), want, "\n{text}");
        };
        refused(
            "\n[nfs]\nlisten = \"nfs01\"\n",
            "node.toml:2: nfs.listen = \"nfs01\": expected HOST:PORT with an IP address, e.g. 127.0.0.1:2049",
        );
        refused(
            "[nfs]\nrtmax = 5000\n",
            "node.toml:1: nfs.rtmax = 5000: allowed values are multiples of 4096 from 4096 to 1048576 (4KiB..1MiB)",
        );
        refused(
            "[nfs]\nwtmax = -1\n",
            "node.toml:1: nfs.wtmax = -1: give bytes or a size such as \"64KiB\"",
        );
        let e = parsed("[nfs]\nrtmax = \"2MiB\"\n").unwrap_err();
        assert!(
            e.starts_with("node.toml:1: nfs.rtmax = 2097152: allowed values"),
            "{e}"
        );
        // Unknown keys: toml's own message, with the key's line.
        let e = parsed("[nfs]\n\nrsize = 4096\n").unwrap_err();
        assert!(e.starts_with("node.toml:3: unknown field `rsize`"), "{e}");
    }
}

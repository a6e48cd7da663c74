//! `mount+nfs://SERVER/PATH[?nfsport=P&mountport=P&options=O,...]`: an NFS export the
//! `nfs` suite kernel-mounts on every load generator, the seed's way (`mount -t nfs` on each
//! load generator, fio on the mounted directory with `libaio direct=1`). It is the export
//! URL of fio's nfs engine (`nfs://...`, same host, path and ports) with `mount+` in front;
//! `options=` adds mount options (`nconnect=4,rsize=65536`).
//!
//! Each load generator runs, before any load,
//! `mount -t nfs -o vers=3,proto=tcp,nolock[,port=P,mountport=P,mountproto=tcp][,addr=SERVER,mountaddr=SERVER][,OPTIONS] SERVER:/PATH DIR`
//! with `DIR` = `/tmp/qoslab-run-<id>.nfs` (beside the run directory, never inside it:
//! removing the run directory never reaches into the export). The mount is undone
//! (`umount`, lazily if busy, then `rmdir`) when the suite ends, fails, or the coordinator
//! gets SIGINT/SIGTERM/SIGHUP.

use crate::SuiteError;

/// The scheme of a kernel-mounted export.
pub const SCHEME: &str = "mount+nfs://";

/// A target meaning "kernel-mount this export on the load generator".
pub fn is_mount_url(t: &str) -> bool {
    t.starts_with(SCHEME)
}

/// A parsed `mount+nfs://` target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountUrl {
    pub server: String,
    /// The export path, absolute.
    pub path: String,
    pub nfsport: Option<u16>,
    pub mountport: Option<u16>,
    /// Extra mount options, comma-separated.
    pub options: String,
}

fn shell_safe(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-/:=,[]".contains(c))
}

impl MountUrl {
    pub fn parse(url: &str) -> Result<MountUrl, String> {
        const FORM: &str = "mount+nfs://SERVER/PATH[?nfsport=P&mountport=P&options=O,...]";
        let rest = url
            .strip_prefix(SCHEME)
            .ok_or_else(|| format!("a kernel-mounted export is {FORM}"))?;
        let (host_path, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (server, path) = host_path
            .split_once('/')
            .ok_or_else(|| format!("the export path is missing ({FORM})"))?;
        if server.is_empty() || !shell_safe(server) {
            return Err(format!(
                "server {server:?}: want an address or host name ({FORM})"
            ));
        }
        let path = format!("/{path}");
        if path == "/" || !shell_safe(&path) || path.contains("..") {
            return Err(format!(
                "export path {path:?}: want /NAME[/NAME...] ({FORM})"
            ));
        }
        let mut m = MountUrl {
            server: server.to_string(),
            path,
            nfsport: None,
            mountport: None,
            options: String::new(),
        };
        for kv in query.split('&').filter(|s| !s.is_empty()) {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            let port = |v: &str| -> Result<Option<u16>, String> {
                v.parse::<u16>()
                    .ok()
                    .filter(|p| *p > 0)
                    .map(Some)
                    .ok_or_else(|| format!("{k}={v:?}: want a port 1..65535"))
            };
            match k {
                "nfsport" => m.nfsport = port(v)?,
                "mountport" => m.mountport = port(v)?,
                "options" => {
                    if !shell_safe(v) {
                        return Err(format!(
                            "options={v:?}: want mount options such as nconnect=4,rsize=65536"
                        ));
                    }
                    m.options = v.to_string();
                }
                _ => {
                    return Err(format!(
                        "{k:?}: unknown (allowed: nfsport, mountport, options) in {FORM}"
                    ))
                }
            }
        }
        Ok(m)
    }

    /// `mount -t nfs ...` of this export on `dir`.
    pub fn command(&self, dir: &str) -> String {
        let mut o = vec!["vers=3".to_string(), "proto=tcp".into(), "nolock".into()];
        if let Some(p) = self.nfsport {
            o.push(format!("port={p}"));
        }
        if let Some(p) = self.mountport {
            o.push(format!("mountport={p}"));
            o.push("mountproto=tcp".into());
        }
        // mount.nfs resolves the server itself; busybox's mount (a small load generator)
        // hands the options to the kernel as they are, and the kernel wants the address.
        if self.server.parse::<std::net::IpAddr>().is_ok() {
            o.push(format!("addr={0},mountaddr={0}", self.server));
        }
        if !self.options.is_empty() {
            o.push(self.options.clone());
        }
        format!(
            "mount -t nfs -o {} {}:{} {}",
            o.join(","),
            self.server,
            self.path,
            hosts::quote(dir)
        )
    }
}

/// An export mounted on one load generator; unmounted on drop and on signals.
#[derive(Debug)]
pub struct Mounted {
    host: hosts::Host,
    pub dir: String,
    _guard: lifecycle::Guard,
}

fn unmount_script(dir: &str) -> String {
    let q = hosts::quote(dir);
    format!("umount {q} 2>/dev/null || umount -l {q} 2>/dev/null; rmdir {q} 2>/dev/null; true")
}

impl Mounted {
    /// Mount `url` on `h` (named `host`) at `dir`.
    pub fn mount(h: &hosts::Host, host: &str, url: &str, dir: &str) -> Result<Mounted, SuiteError> {
        let m = MountUrl::parse(url).map_err(|e| SuiteError::Invalid(format!("{host}: {e}")))?;
        let cmd = m.command(dir);
        let q = hosts::quote(dir);
        // Registered before the mount, so a signal during it still unmounts.
        let (h2, d2) = (h.clone(), dir.to_string());
        let guard = lifecycle::register(lifecycle::Phase::Remote, move || {
            let _ = h2.run(&unmount_script(&d2));
        });
        let out = h.run(&format!("mkdir -p {q} && timeout 60 {cmd} 2>&1"))?;
        if out.code != 0 {
            let _ = h.run(&format!("rmdir {q} 2>/dev/null; true"));
            return Err(SuiteError::Invalid(format!(
                "{host}: {url}: the kernel mount failed ({cmd}): {}",
                format!("{}{}", out.stdout, out.stderr).trim()
            )));
        }
        Ok(Mounted {
            host: h.clone(),
            dir: dir.to_string(),
            _guard: guard,
        })
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = self.host.run(&unmount_script(&self.dir));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mount_url_becomes_the_seeds_mount_command() {
        let m = MountUrl::parse(
            "mount+nfs://10.0.0.5/suite?nfsport=2049&mountport=2049&options=nconnect=4",
        )
        .unwrap();
        assert_eq!(
            m.command("/tmp/qoslab-run-1.nfs"),
            "mount -t nfs -o vers=3,proto=tcp,nolock,port=2049,mountport=2049,mountproto=tcp,\
             addr=10.0.0.5,mountaddr=10.0.0.5,nconnect=4 10.0.0.5:/suite /tmp/qoslab-run-1.nfs"
        );
        let m = MountUrl::parse("mount+nfs://filer/vol/a").unwrap();
        assert_eq!(
            m.command("/m"),
            "mount -t nfs -o vers=3,proto=tcp,nolock filer:/vol/a /m"
        );
    }

    #[test]
    fn bad_mount_urls_say_what_is_wrong() {
        for (url, want) in [
            ("nfs://10.0.0.5/suite", "mount+nfs://SERVER/PATH"),
            ("mount+nfs://10.0.0.5", "export path is missing"),
            ("mount+nfs://10.0.0.5/", "export path \"/\""),
            ("mount+nfs:///suite", "server \"\""),
            ("mount+nfs://a;b/suite", "server \"a;b\""),
            ("mount+nfs://h/s?nfsport=0", "nfsport=\"0\""),
            ("mount+nfs://h/s?port=1", "\"port\": unknown"),
            ("mount+nfs://h/s?options=a$(x)", "options="),
        ] {
            let e = MountUrl::parse(url).unwrap_err();
            assert!(e.contains(want), "{url}: {e}");
        }
    }
}

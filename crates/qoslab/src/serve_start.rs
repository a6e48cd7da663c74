//! Where `qoslab serve` starts, decided before anything touches the disk:
//!
//! - **One rule for relative paths** (docs/CONFIG.md): `--data-dir` and the config's
//!   `node.data_dir` are relative to the directory qoslab runs in; every other path in the
//!   config file (`node.listen_unix`) is relative to the data directory, so a config follows
//!   `--data-dir` wherever it points. Paths given as flags are relative to the current
//!   directory, as in any command.
//! - **Every setting knows its source** (a flag, the config's `file:line`, or the default),
//!   so an error names the setting, where it came from and what to do.
//! - **A failed start changes nothing on disk**: [`StartGuard`] removes what this start
//!   created in the data directory (the whole directory when it did not exist) unless the
//!   node reached the point of serving.

use std::ffi::OsString;
use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use storage_node::NodeConfig;

/// A value and where it came from ("--listen-unix", "node.listen_unix at node.toml:5",
/// "the default").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting<T> {
    pub value: T,
    pub source: String,
}

impl<T> Setting<T> {
    fn flag(value: T, flag: &str) -> Setting<T> {
        Setting {
            value,
            source: flag.to_string(),
        }
    }

    fn config(value: T, cfg: &NodeConfig, key: &str) -> Setting<T> {
        let source = match cfg.sources.get(key) {
            Some(at) => format!("{key} at {at}"),
            None => key.to_string(),
        };
        Setting { value, source }
    }

    fn default(value: T, what: &str) -> Setting<T> {
        Setting {
            value,
            source: format!("the default ({what})"),
        }
    }
}

/// The data directory: `--data-dir`, else `$QOSLAB_DATA_DIR`, else the config's
/// `node.data_dir`, else ./qoslab-data (all relative to the current directory).
pub fn data_dir(flag: Option<&Path>, cfg: &NodeConfig) -> Setting<PathBuf> {
    let env = std::env::var_os("QOSLAB_DATA_DIR").filter(|v| !v.is_empty());
    match (flag, &cfg.data_dir) {
        (Some(d), _) => Setting::flag(d.to_path_buf(), "--data-dir"),
        (None, _) if env.is_some() => {
            Setting::flag(PathBuf::from(env.unwrap_or_default()), "$QOSLAB_DATA_DIR")
        }
        (None, Some(d)) => Setting::config(d.clone(), cfg, "node.data_dir"),
        (None, None) => Setting::default(PathBuf::from("qoslab-data"), "./qoslab-data"),
    }
}

/// The NBD listeners: `--listen-unix`/`--listen-tcp`, else the config's (a relative
/// `node.listen_unix` is inside the data directory), else both defaults
/// (DATA_DIR/nbd.sock and 127.0.0.1:10809) when neither is set anywhere.
pub fn nbd_listeners(
    unix_flag: Option<&Path>,
    tcp_flag: Option<SocketAddr>,
    cfg: &NodeConfig,
    data_dir: &Path,
) -> (Option<Setting<PathBuf>>, Option<Setting<SocketAddr>>) {
    let unix = match (unix_flag, &cfg.listen_unix) {
        (Some(p), _) => Some(Setting::flag(p.to_path_buf(), "--listen-unix")),
        (None, Some(p)) => Some(Setting::config(data_dir.join(p), cfg, "node.listen_unix")),
        (None, None) => None,
    };
    let tcp = match (tcp_flag, cfg.listen_tcp) {
        (Some(a), _) => Some(Setting::flag(a, "--listen-tcp")),
        (None, Some(a)) => Some(Setting::config(a, cfg, "node.listen_tcp")),
        (None, None) => None,
    };
    if unix.is_none() && tcp.is_none() {
        return (
            Some(Setting::default(
                data_dir.join("nbd.sock"),
                "DATA_DIR/nbd.sock",
            )),
            Some(Setting::default(
                SocketAddr::from(([127, 0, 0, 1], 10809)),
                "127.0.0.1:10809",
            )),
        );
    }
    (unix, tcp)
}

/// The REST API's address: `--listen-http` (`off`: none), else the config's
/// `node.listen_http`, else 127.0.0.1:8080.
pub fn http_listener(
    flag: Option<&str>,
    cfg: &NodeConfig,
) -> anyhow::Result<Option<Setting<SocketAddr>>> {
    Ok(match flag {
        Some("off") => None,
        Some(a) => Some(Setting::flag(
            a.parse().map_err(|_| {
                anyhow::anyhow!(
                    "--listen-http {a:?}: expected IP:PORT (e.g. 127.0.0.1:8080) or `off`"
                )
            })?,
            "--listen-http",
        )),
        None => Some(match cfg.listen_http {
            Some(a) => Setting::config(a, cfg, "node.listen_http"),
            None => Setting::default(SocketAddr::from(([127, 0, 0, 1], 8080)), "127.0.0.1:8080"),
        }),
    })
}

/// The longest unix socket path the kernel takes (`sun_path` holds 108 bytes with its NUL).
const MAX_SOCKET_PATH: usize = 107;

/// Check a unix socket's path before anything is created: its directory exists (or is the
/// data directory, which the start creates) and it fits in `sun_path`.
pub fn check_unix_socket(s: &Setting<PathBuf>, data_dir: &Path) -> anyhow::Result<()> {
    let p = &s.value;
    let len = p.as_os_str().len();
    if len > MAX_SOCKET_PATH {
        anyhow::bail!(
            "{} = {}: a unix socket path is at most {MAX_SOCKET_PATH} bytes, this one is {len}; \
             give a shorter one with --listen-unix PATH",
            s.source,
            p.display()
        );
    }
    let dir = match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => return Ok(()),
    };
    if dir == data_dir || dir.is_dir() {
        return Ok(());
    }
    anyhow::bail!(
        "{} = {}: its directory {} does not exist; create it, or give --listen-unix PATH \
         (a relative node.listen_unix is inside the data directory, e.g. listen_unix = \"nbd.sock\")",
        s.source,
        p.display(),
        dir.display()
    )
}

/// A listener that could not be bound, as a message naming the setting, its source and
/// the fix (`flag` is the option that overrides it).
pub fn listen_error(
    what: &str,
    setting: &str,
    source: &str,
    flag: &str,
    e: &io::Error,
) -> anyhow::Error {
    let fix = match e.kind() {
        io::ErrorKind::AddrInUse => format!(
            "something else listens there (another qoslab serve?): stop it, or give {flag} with a free address"
        ),
        io::ErrorKind::PermissionDenied => {
            format!("permission denied: give {flag} with a place this user may use")
        }
        io::ErrorKind::NotFound => format!("the directory does not exist: create it, or give {flag}"),
        io::ErrorKind::AddrNotAvailable => {
            format!("no interface of this machine has that address: give {flag} with one of its addresses")
        }
        _ => format!("give {flag} with another address"),
    };
    anyhow::anyhow!("{what} on {setting} ({source}): {}; {fix}", io_text(e))
}

/// An io::Error without its debug noise ("Address already in use (os error 98)").
fn io_text(e: &io::Error) -> String {
    e.to_string()
}

/// Undoes a start that fails: removes what the start created in the data directory (all of
/// it when the directory itself is new), unless [`StartGuard::started`] was called.
pub struct StartGuard {
    dir: PathBuf,
    existed: bool,
    before: Vec<OsString>,
    /// Files this start made outside the data directory (a unix socket elsewhere).
    outside: Vec<PathBuf>,
    armed: bool,
}

impl StartGuard {
    /// Note the data directory's state; call before anything is created in it.
    pub fn before_start(dir: &Path) -> StartGuard {
        let existed = dir.exists();
        let before = entries(dir);
        StartGuard {
            dir: dir.to_path_buf(),
            existed,
            before,
            outside: Vec::new(),
            armed: false,
        }
    }

    /// A file this start created (removed too if the start fails).
    pub fn created(&mut self, path: &Path) {
        self.outside.push(path.to_path_buf());
    }

    /// From now on a failure undoes the start (call once this start owns the directory:
    /// after taking its lock, so another node's files are never touched).
    pub fn arm(&mut self) {
        self.armed = true;
    }

    /// The node is serving: keep everything.
    pub fn started(&mut self) {
        self.armed = false;
    }
}

fn entries(dir: &Path) -> Vec<OsString> {
    let mut v: Vec<OsString> = std::fs::read_dir(dir)
        .map(|r| r.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

impl Drop for StartGuard {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        for p in &self.outside {
            let _ = std::fs::remove_file(p);
        }
        if !self.existed {
            let _ = std::fs::remove_dir_all(&self.dir);
            return;
        }
        for name in entries(&self.dir) {
            if self.before.binary_search(&name).is_err() {
                let p = self.dir.join(&name);
                let _ = if p.is_dir() {
                    std::fs::remove_dir_all(&p)
                } else {
                    std::fs::remove_file(&p)
                };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(text: &str) -> NodeConfig {
        NodeConfig::parse(text, "node.toml").unwrap()
    }

    #[test]
    fn relative_config_paths_follow_the_data_directory() {
        let c = cfg("[node]\ndata_dir = \"d\"\nlisten_unix = \"nbd.sock\"\n");
        let d = data_dir(Some(Path::new("/tmp/x")), &c);
        assert_eq!(d.value, Path::new("/tmp/x"));
        assert_eq!(d.source, "--data-dir");
        let (u, t) = nbd_listeners(None, None, &c, &d.value);
        let u = u.unwrap();
        assert_eq!(u.value, Path::new("/tmp/x/nbd.sock"));
        assert_eq!(u.source, "node.listen_unix at node.toml:3");
        assert!(t.is_none());
        let d = data_dir(None, &c);
        assert_eq!(
            (d.value.as_path(), d.source.as_str()),
            (Path::new("d"), "node.data_dir at node.toml:2")
        );
        // Absolute paths stay; flags are relative to the current directory.
        let c = cfg("[node]\nlisten_unix = \"/run/q.sock\"\n");
        assert_eq!(
            nbd_listeners(None, None, &c, Path::new("d"))
                .0
                .unwrap()
                .value,
            Path::new("/run/q.sock")
        );
        let (u, _) = nbd_listeners(Some(Path::new("s.sock")), None, &c, Path::new("d"));
        assert_eq!(u.unwrap().value, Path::new("s.sock"));
        // Nothing set: both defaults.
        let (u, t) = nbd_listeners(None, None, &NodeConfig::default(), Path::new("d"));
        assert_eq!(u.unwrap().value, Path::new("d/nbd.sock"));
        assert_eq!(t.unwrap().source, "the default (127.0.0.1:10809)");
    }

    #[test]
    fn socket_checks_name_the_setting_and_the_fix() {
        let s = Setting {
            value: PathBuf::from("/no/such/dir/nbd.sock"),
            source: "node.listen_unix at node.toml:5".into(),
        };
        let e = check_unix_socket(&s, Path::new("/tmp"))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("node.listen_unix at node.toml:5 = /no/such/dir/nbd.sock: its directory /no/such/dir does not exist"), "{e}");
        assert!(e.contains("--listen-unix"), "{e}");
        // The data directory itself is created by the start.
        let s = Setting {
            value: PathBuf::from("/new/data/nbd.sock"),
            source: "x".into(),
        };
        check_unix_socket(&s, Path::new("/new/data")).unwrap();
        let s = Setting {
            value: PathBuf::from(format!("/tmp/{}", "x".repeat(120))),
            source: "--listen-unix".into(),
        };
        assert!(check_unix_socket(&s, Path::new("/tmp"))
            .unwrap_err()
            .to_string()
            .contains("at most 107 bytes"));
        let e = listen_error(
            "the REST API",
            "127.0.0.1:8080",
            "the default (127.0.0.1:8080)",
            "--listen-http",
            &io::Error::from(io::ErrorKind::AddrInUse),
        )
        .to_string();
        assert!(
            e.contains("the REST API on 127.0.0.1:8080 (the default (127.0.0.1:8080))")
                && e.contains("--listen-http"),
            "{e}"
        );
    }

    #[test]
    fn a_failed_start_removes_only_what_it_created() {
        let t = test_support::TestDir::new("start-guard");
        // A new directory goes entirely.
        let d = t.path().join("new");
        let mut g = StartGuard::before_start(&d);
        std::fs::create_dir_all(d.join("tls")).unwrap();
        std::fs::write(d.join("state.db"), b"x").unwrap();
        g.arm();
        drop(g);
        assert!(!d.exists());
        // An existing one keeps what it held.
        let d = t.path().join("old");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("keep"), b"x").unwrap();
        let mut g = StartGuard::before_start(&d);
        std::fs::write(d.join("state.db"), b"x").unwrap();
        std::fs::create_dir_all(d.join("volumes")).unwrap();
        g.arm();
        drop(g);
        assert_eq!(entries(&d), vec![OsString::from("keep")]);
        // A start that got going keeps everything; an unarmed guard touches nothing.
        let mut g = StartGuard::before_start(&d);
        std::fs::write(d.join("state.db"), b"x").unwrap();
        g.arm();
        g.started();
        drop(g);
        let g = StartGuard::before_start(&d);
        std::fs::write(d.join("other"), b"x").unwrap();
        drop(g);
        assert_eq!(entries(&d).len(), 3);
    }
}

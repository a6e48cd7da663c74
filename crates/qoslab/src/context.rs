//! The client context: which node a client command talks to, how it trusts the node's
//! certificate and who it is, decided once for every client command (`policy`, `volume`,
//! `stats`, `ontap`, `s3`, `bench --node`) in one order:
//!
//! 1. the command's flags (`--url`, `--data-dir`, `--cacert`, `-k`, `-u`, `--token-file`);
//! 2. the environment: `QOSLAB_URL`, `QOSLAB_DATA_DIR` (the node's data directory: its CA
//!    certificate, and local commands), `QOSLAB_USER` (`USER` or `USER:PASSWORD`),
//!    `QOSLAB_PASSWORD`, `QOSLAB_TOKEN_FILE`;
//! 3. the context `qoslab login` saved (`$XDG_CONFIG_HOME/qoslab/context.json`, else
//!    `~/.config/qoslab/context.json`, or `$QOSLAB_CONTEXT`; mode 0600, refused when
//!    others can read it), used only for the node it names;
//! 4. the defaults: https://127.0.0.1:8080, the CA in ./qoslab-data, no credentials.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context as _};
use api_client::{data_dir_ca, Auth, ClientOptions, Trust};
use serde_json::{json, Value};

/// The node's URL when nothing names one.
pub const DEFAULT_URL: &str = "https://127.0.0.1:8080";

/// The data directory when nothing names one (serve's default).
pub const DEFAULT_DATA_DIR: &str = "qoslab-data";

/// What `qoslab login` saved.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Saved {
    pub url: String,
    pub user: Option<String>,
    pub password: Option<String>,
    pub token_file: Option<PathBuf>,
    pub cacert: Option<PathBuf>,
    pub insecure: bool,
}

impl Saved {
    fn to_json(&self) -> Value {
        json!({
            "url": self.url,
            "user": self.user,
            "password": self.password,
            "token_file": self.token_file,
            "cacert": self.cacert,
            "insecure": self.insecure,
        })
    }

    fn from_json(v: &Value) -> Option<Saved> {
        let s = |k: &str| v[k].as_str().map(str::to_string);
        Some(Saved {
            url: s("url")?,
            user: s("user"),
            password: s("password"),
            token_file: s("token_file").map(PathBuf::from),
            cacert: s("cacert").map(PathBuf::from),
            insecure: v["insecure"].as_bool().unwrap_or(false),
        })
    }
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// Where the saved context lives.
pub fn path() -> Option<PathBuf> {
    if let Some(p) = env("QOSLAB_CONTEXT") {
        return Some(PathBuf::from(p));
    }
    let base = env("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| env("HOME").map(|h| Path::new(&h).join(".config")))?;
    Some(base.join("qoslab").join("context.json"))
}

/// The saved context, if any (an error when it cannot be trusted or read).
pub fn load() -> anyhow::Result<Option<Saved>> {
    let Some(p) = path() else { return Ok(None) };
    load_from(&p)
}

fn load_from(p: &Path) -> anyhow::Result<Option<Saved>> {
    use std::os::unix::fs::PermissionsExt;
    let meta = match std::fs::metadata(p) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("the saved context {}", p.display())),
    };
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        bail!(
            "the saved context {} has mode {mode:04o}: it holds credentials, so it must be \
             readable by you only; chmod 600 {} (or `qoslab login` again)",
            p.display(),
            p.display()
        );
    }
    let text = std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
    let v: Value = serde_json::from_str(&text).with_context(|| {
        format!(
            "{}: not a qoslab context (run `qoslab login` again)",
            p.display()
        )
    })?;
    Saved::from_json(&v)
        .map(Some)
        .ok_or_else(|| anyhow!("{}: no `url` (run `qoslab login` again)", p.display()))
}

/// Save `s` (created 0600, its directory 0700); the file's path.
pub fn save(s: &Saved) -> anyhow::Result<PathBuf> {
    let p = path().ok_or_else(|| {
        anyhow!("no place for the saved context: set HOME, XDG_CONFIG_HOME or QOSLAB_CONTEXT")
    })?;
    save_to(&p, s)?;
    Ok(p)
}

fn save_to(p: &Path, s: &Saved) -> anyhow::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
    if let Some(dir) = p.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .with_context(|| format!("creating {}", dir.display()))?;
    }
    let tmp = p.with_extension("json.tmp");
    let _ = std::fs::remove_file(&tmp);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .with_context(|| format!("creating {}", tmp.display()))?;
    f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    writeln!(f, "{}", serde_json::to_string_pretty(&s.to_json())?)?;
    f.sync_all()?;
    std::fs::rename(&tmp, p).with_context(|| format!("writing {}", p.display()))?;
    Ok(())
}

/// Remove the saved context; whether there was one.
pub fn forget() -> anyhow::Result<Option<PathBuf>> {
    let Some(p) = path() else { return Ok(None) };
    match std::fs::remove_file(&p) {
        Ok(()) => Ok(Some(p)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("removing {}", p.display())),
    }
}

/// The data directory of local commands (`user`, `serve`): the flag, else
/// `QOSLAB_DATA_DIR`, else `None` (the command's own default).
pub fn data_dir(flag: Option<&Path>) -> Option<PathBuf> {
    flag.map(Path::to_path_buf)
        .or_else(|| env("QOSLAB_DATA_DIR").map(PathBuf::from))
}

/// What a client command was given on its command line.
#[derive(Debug, Clone, Default)]
pub struct Flags<'a> {
    pub url: Option<&'a str>,
    pub data_dir: Option<&'a Path>,
    pub cacert: Option<&'a Path>,
    pub insecure: bool,
    pub user: Option<&'a str>,
    pub token_file: Option<&'a Path>,
}

/// The node a client talks to, resolved (module docs), plus where each part came from.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub url: String,
    pub trust: Trust,
    /// `USER[:PASSWORD]` (the password may still be missing).
    pub user: Option<(String, Option<String>)>,
    pub token_file: Option<PathBuf>,
}

/// Resolve the flags against the environment and the saved context (`saved`: what
/// [`load`] returned).
pub fn resolve(f: &Flags, saved: Option<&Saved>) -> Resolved {
    let url = f
        .url
        .map(str::to_string)
        .or_else(|| env("QOSLAB_URL"))
        .or_else(|| saved.map(|s| s.url.clone()))
        .unwrap_or_else(|| DEFAULT_URL.to_string());
    // The saved context speaks for its own node only.
    let saved = saved.filter(|s| same_node(&s.url, &url));
    let data_dir = data_dir(f.data_dir);
    let trust = if f.insecure {
        Trust::Insecure
    } else if let Some(c) = f.cacert {
        Trust::CaFile(c.to_path_buf())
    } else if let Some(d) = &data_dir {
        Trust::CaFile(data_dir_ca(d))
    } else if let Some(s) = saved.filter(|s| s.insecure || s.cacert.is_some()) {
        match &s.cacert {
            Some(c) if !s.insecure => Trust::CaFile(c.clone()),
            _ => Trust::Insecure,
        }
    } else {
        let local = data_dir_ca(Path::new(DEFAULT_DATA_DIR));
        if local.exists() {
            Trust::CaFile(local)
        } else {
            Trust::PublicRoots
        }
    };
    let split = |u: &str| match u.split_once(':') {
        Some((a, b)) => (a.to_string(), Some(b.to_string())),
        None => (u.to_string(), None),
    };
    let mut user = f
        .user
        .map(split)
        .or_else(|| env("QOSLAB_USER").map(|u| split(&u)))
        .or_else(|| saved.and_then(|s| s.user.as_ref().map(|u| (u.clone(), None))));
    if let Some((name, pw @ None)) = &mut user {
        *pw = env("QOSLAB_PASSWORD").or_else(|| {
            saved
                .filter(|s| s.user.as_deref() == Some(name.as_str()))
                .and_then(|s| s.password.clone())
        });
    }
    let token_file = f
        .token_file
        .map(Path::to_path_buf)
        .or_else(|| env("QOSLAB_TOKEN_FILE").map(PathBuf::from))
        .or_else(|| saved.and_then(|s| s.token_file.clone()));
    Resolved {
        url,
        trust,
        user,
        token_file,
    }
}

/// Whether two URLs name the same node (trailing slashes aside).
fn same_node(a: &str, b: &str) -> bool {
    a.trim_end_matches('/') == b.trim_end_matches('/')
}

impl Resolved {
    /// The `api-client` options; a user without a password is asked for it on a
    /// terminal (`ask`), else refused with the ways to give it.
    pub fn options(
        &self,
        ask: &dyn Fn(&str) -> anyhow::Result<String>,
    ) -> anyhow::Result<ClientOptions> {
        Ok(ClientOptions {
            url: self.url.clone(),
            auth: self.auth(ask)?,
            trust: self.trust.clone(),
            timeout: None,
        })
    }

    fn auth(&self, ask: &dyn Fn(&str) -> anyhow::Result<String>) -> anyhow::Result<Auth> {
        if let Some((user, password)) = &self.user {
            let password = match password {
                Some(p) => p.clone(),
                None => ask(user)?,
            };
            return Ok(Auth::Basic {
                user: user.clone(),
                password,
            });
        }
        match &self.token_file {
            None => Ok(Auth::None),
            Some(p) => Ok(Auth::Bearer(
                std::fs::read_to_string(p)
                    .with_context(|| format!("reading the token file {}", p.display()))?
                    .trim()
                    .to_string(),
            )),
        }
    }

    /// What `qoslab login` saves: this context, with the CA file made absolute.
    pub fn to_saved(&self, password: Option<String>) -> Saved {
        let abs = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
        Saved {
            url: self.url.trim_end_matches('/').to_string(),
            user: self.user.as_ref().map(|(u, _)| u.clone()),
            password,
            token_file: self.token_file.as_deref().map(abs),
            cacert: match &self.trust {
                Trust::CaFile(p) => Some(abs(p)),
                _ => None,
            },
            insecure: matches!(self.trust, Trust::Insecure),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn saved() -> Saved {
        Saved {
            url: "https://10.0.0.5:8080".into(),
            user: Some("admin".into()),
            password: Some("pw".into()),
            token_file: None,
            cacert: Some("/etc/ca.pem".into()),
            insecure: false,
        }
    }

    /// Flags win over the saved context, which speaks only for its own node. (The
    /// environment's part is tested end to end, on the real binary: tests/integration,
    /// `first_hour`, where each process has its own environment.)
    #[test]
    fn flags_then_the_saved_context_for_its_node_only() {
        if [
            "QOSLAB_URL",
            "QOSLAB_USER",
            "QOSLAB_PASSWORD",
            "QOSLAB_DATA_DIR",
            "QOSLAB_TOKEN_FILE",
        ]
        .iter()
        .any(|v| std::env::var_os(v).is_some())
        {
            return; // the environment decides (its own test covers it)
        }
        let s = saved();
        let r = resolve(&Flags::default(), Some(&s));
        assert_eq!(r.url, "https://10.0.0.5:8080");
        assert_eq!(r.trust, Trust::CaFile("/etc/ca.pem".into()));
        assert_eq!(r.user, Some(("admin".into(), Some("pw".into()))));
        // Another node: the saved credentials stay home.
        let r = resolve(
            &Flags {
                url: Some("https://10.0.0.6:8080"),
                ..Default::default()
            },
            Some(&s),
        );
        assert_eq!(r.user, None);
        assert_ne!(r.trust, Trust::CaFile("/etc/ca.pem".into()));
        // A user given on the command line with its password; another user gets no
        // saved password.
        let r = resolve(
            &Flags {
                user: Some("ops:x"),
                insecure: true,
                ..Default::default()
            },
            Some(&s),
        );
        assert_eq!(r.user, Some(("ops".into(), Some("x".into()))));
        assert_eq!(r.trust, Trust::Insecure);
        let r = resolve(
            &Flags {
                user: Some("ops"),
                ..Default::default()
            },
            Some(&s),
        );
        assert_eq!(r.user, Some(("ops".into(), None)));
        // Nothing anywhere: the defaults.
        let r = resolve(&Flags::default(), None);
        assert_eq!(r.url, DEFAULT_URL);
        assert_eq!(r.user, None);
    }

    #[test]
    fn saved_contexts_are_private_and_round_trip() {
        use std::os::unix::fs::PermissionsExt;
        let d = test_support::TestDir::new("context");
        let p = d.path().join("qoslab").join("context.json");
        assert_eq!(load_from(&p).unwrap(), None);
        save_to(&p, &saved()).unwrap();
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let dmode = std::fs::metadata(p.parent().unwrap())
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(dmode, 0o700);
        assert_eq!(load_from(&p).unwrap(), Some(saved()));
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = load_from(&p).unwrap_err().to_string();
        assert!(e.contains("mode 0644") && e.contains("chmod 600"), "{e}");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::write(&p, "{}").unwrap();
        assert!(load_from(&p).unwrap_err().to_string().contains("no `url`"));
    }
}

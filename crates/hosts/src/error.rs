//! One error type per host: which host, and what went wrong in words a user can act on.

/// Something failed on (or on the way to) one host.
#[derive(Debug, thiserror::Error)]
#[error("host {host}: {kind}")]
pub struct HostError {
    pub host: String,
    pub kind: ErrorKind,
}

#[derive(Debug, thiserror::Error)]
pub enum ErrorKind {
    #[error("unreachable: {0}")]
    Unreachable(String),
    #[error("ssh authentication failed: {0} (is the key in ssh-agent or named by IdentityFile in ~/.ssh/config?)")]
    Auth(String),
    #[error("ssh host key verification failed: {0} (check known_hosts)")]
    HostKey(String),
    #[error("ssh failed: {0}")]
    Ssh(String),
    #[error("missing tools: {0} (install them on this host)")]
    MissingTools(String),
    #[error("`{cmd}` exited with {code}: {stderr}")]
    Command {
        cmd: String,
        code: i32,
        stderr: String,
    },
    #[error("starting {0}: {1}")]
    Spawn(String, std::io::Error),
    #[error("parsing {what}: {detail}")]
    Parse { what: String, detail: String },
    #[error("{0}")]
    Other(String),
}

impl HostError {
    pub fn new(host: impl Into<String>, kind: ErrorKind) -> HostError {
        HostError {
            host: host.into(),
            kind,
        }
    }
}

/// Classify ssh's own failure (exit status 255) from its stderr.
pub(crate) fn classify_ssh(stderr: &str) -> Option<ErrorKind> {
    let last = stderr
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
        .to_string();
    let has = |s: &str| stderr.contains(s);
    if has("Permission denied") || has("Too many authentication failures") {
        Some(ErrorKind::Auth(last))
    } else if has("Host key verification failed") || has("REMOTE HOST IDENTIFICATION HAS CHANGED") {
        Some(ErrorKind::HostKey(last))
    } else if has("Could not resolve hostname")
        || has("Connection refused")
        || has("Connection timed out")
        || has("timed out")
        || has("No route to host")
        || has("Network is unreachable")
        || has("Connection closed by")
        || has("Connection reset")
    {
        Some(ErrorKind::Unreachable(last))
    } else if stderr.starts_with("ssh:") || has("ssh_exchange_identification") || has("kex_") {
        Some(ErrorKind::Ssh(last))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ssh_failures_are_named() {
        let k = classify_ssh("root@10.9.9.9: Permission denied (publickey).\r\n").unwrap();
        assert!(matches!(k, ErrorKind::Auth(_)), "{k}");
        let k = classify_ssh("ssh: connect to host 10.9.9.9 port 22: Connection refused\n");
        assert!(matches!(k, Some(ErrorKind::Unreachable(_))));
        let k = classify_ssh("ssh: Could not resolve hostname nohost: Name or service not known");
        assert!(matches!(k, Some(ErrorKind::Unreachable(_))));
        let k = classify_ssh("Host key verification failed.\n");
        assert!(matches!(k, Some(ErrorKind::HostKey(_))));
        assert!(classify_ssh("some remote program's own message").is_none());
    }
}

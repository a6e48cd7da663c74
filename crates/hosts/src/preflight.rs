//! Before any load: reach every host at once, read its facts, check its tools. Every failing
//! host is reported, each with its own reason, in one error.

use crate::error::{ErrorKind, HostError};
use crate::facts::{gather, HostFacts};
use crate::ssh::Host;

/// One or more hosts cannot run the suite.
#[derive(Debug)]
pub struct PreflightError(pub Vec<HostError>);

impl std::fmt::Display for PreflightError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} host(s) not ready:", self.0.len())?;
        for e in &self.0 {
            write!(f, "\n  {e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for PreflightError {}

/// Facts of every host (in order), or every host's error.
pub fn preflight(hosts: &[Host], tools: &[&str]) -> Result<Vec<HostFacts>, PreflightError> {
    let results: Vec<Result<HostFacts, HostError>> = std::thread::scope(|s| {
        let handles: Vec<_> = hosts
            .iter()
            .map(|h| s.spawn(move || check(h, tools)))
            .collect();
        handles
            .into_iter()
            .zip(hosts)
            .map(|(j, h)| {
                j.join()
                    .unwrap_or_else(|_| Err(h.err(ErrorKind::Other("preflight panicked".into()))))
            })
            .collect()
    });
    let mut facts = Vec::new();
    let mut errors = Vec::new();
    for r in results {
        match r {
            Ok(f) => facts.push(f),
            Err(e) => errors.push(e),
        }
    }
    if errors.is_empty() {
        Ok(facts)
    } else {
        Err(PreflightError(errors))
    }
}

fn check(h: &Host, tools: &[&str]) -> Result<HostFacts, HostError> {
    let f = gather(h, tools)?;
    if !f.missing_tools.is_empty() {
        return Err(h.err(ErrorKind::MissingTools(f.missing_tools.join(", "))));
    }
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn every_failing_host_is_named() {
        let cfg = Arc::new(crate::SshConfig {
            control_dir: None,
            // Nothing listens on port 1 of loopback: ssh fails fast with "refused".
            options: vec!["-o".into(), "Port=1".into()],
            connect_timeout: std::time::Duration::from_secs(2),
            ..Default::default()
        });
        let hosts = vec![
            Host::local(),
            Host::ssh("127.0.0.1", Some("127.0.0.1"), cfg).unwrap(),
        ];
        let e = preflight(&hosts, &["sh"]).unwrap_err();
        assert_eq!(e.0.len(), 1, "{e}");
        assert!(matches!(e.0[0].kind, ErrorKind::Unreachable(_)), "{e}");
        assert!(e.to_string().contains("host 127.0.0.1: unreachable"), "{e}");
        let e = preflight(&hosts[..1], &["qoslab-no-such-tool"]).unwrap_err();
        assert!(
            e.to_string()
                .contains("host localhost: missing tools: qoslab-no-such-tool"),
            "{e}"
        );
    }
}

//! NBD's keys of node.toml, parsed and checked here: `[node] default_export` (the export
//! a client asking for the empty name gets, a declared volume) and `busy_poll_us` (how
//! long a connection spins for its next request). The node's own sections are
//! [`NodeConfig`]'s; messages are made as its are ([`Src`]).

use std::time::Duration;

use serde::Deserialize;
use storage_node::config::{ConfigError, Src};
use storage_node::NodeConfig;
use toml::Spanned;

use crate::NbdSettings;

/// Default busy-poll budget per connection, microseconds.
pub const DEFAULT_BUSY_POLL_US: u64 = 50;
/// The largest busy-poll budget, microseconds.
pub const MAX_BUSY_POLL_US: u64 = 10_000;

/// The file as NBD reads it: its keys of `[node]`, the rest ignored (the node's parser
/// refuses unknown keys).
#[derive(Deserialize)]
struct RawFile {
    node: Option<RawNode>,
}

#[derive(Deserialize)]
struct RawNode {
    default_export: Option<Spanned<String>>,
    busy_poll_us: Option<Spanned<u64>>,
}

/// NBD's settings from config text `src`, whose node sections are `node` (already
/// parsed: `default_export` must name one of its volumes).
pub fn parse(src: &Src, node: &NodeConfig) -> Result<NbdSettings, ConfigError> {
    let raw: RawFile = src.deserialize()?;
    let mut s = NbdSettings::default();
    let Some(raw) = raw.node else {
        return Ok(s);
    };
    if let Some(v) = &raw.busy_poll_us {
        let us = *v.get_ref();
        if us > MAX_BUSY_POLL_US {
            return Err(ConfigError(format!(
                "{}: node.busy_poll_us = {us}: allowed range is 0 (off) to {MAX_BUSY_POLL_US}",
                src.at(v.span().start)
            )));
        }
        s.busy_poll = Duration::from_micros(us);
    }
    if let Some(d) = &raw.default_export {
        let name = d.get_ref();
        if !node.volumes.iter().any(|v| &v.name == name) {
            return Err(ConfigError(format!(
                "{}: node.default_export = {name:?} is not a declared volume",
                src.at(d.span().start)
            )));
        }
        s.default_export = Some(name.clone());
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(text: &str) -> Result<NbdSettings, String> {
        let src = Src::new(text, "node.toml");
        let node = NodeConfig::parse(text, "node.toml").map_err(|e| e.to_string())?;
        parse(&src, &node).map_err(|e| e.to_string())
    }

    #[track_caller]
    fn refused(text: &str) -> String {
        match settings(text) {
            Ok(_) => panic!("should be refused:\n{text}"),
            Err(e) => e,
        }
    }

    const VOLUMES: &str =
        "[[volume]]\nname = \"a\"\nsize = \"1MiB\"\n[[volume]]\nname = \"b\"\nsize = \"1MiB\"\n";

    #[test]
    fn keys_of_node_set_the_default_export_and_busy_poll() {
        let s = settings(&format!(
            "[node]\nmmap_reads = true\ndefault_export = \"b\"\nbusy_poll_us = 0\n{VOLUMES}"
        ))
        .unwrap();
        assert_eq!(s.default_export.as_deref(), Some("b"));
        assert_eq!(s.busy_poll, Duration::ZERO);
        let s = settings(VOLUMES).unwrap();
        assert_eq!(s.default_export, None);
        assert_eq!(s.busy_poll, Duration::from_micros(DEFAULT_BUSY_POLL_US));
        let s = settings(&format!("[node]\nbusy_poll_us = 10000\n{VOLUMES}")).unwrap();
        assert_eq!(s.busy_poll, Duration::from_millis(10));
    }

    #[test]
    fn bad_keys_are_refused_naming_line_field_and_value() {
        assert_eq!(
            refused(&format!("[node]\n\nbusy_poll_us = 10001\n{VOLUMES}")),
            "node.toml:3: node.busy_poll_us = 10001: allowed range is 0 (off) to 10000"
        );
        assert_eq!(
            refused(&format!("[node]\ndefault_export = \"c\"\n{VOLUMES}")),
            "node.toml:2: node.default_export = \"c\" is not a declared volume"
        );
        let e = refused("[node]\nbusy_poll_us = -1\n");
        assert!(e.starts_with("node.toml:2: invalid value"), "{e}");
        // The node's parser still refuses a key no one owns, naming every allowed one.
        let e = refused("[node]\nbusy_pol_us = 1\n");
        assert_eq!(
            e,
            "node.toml:2: unknown field `busy_pol_us`, expected one of `data_dir`, \
             `listen_unix`, `listen_tcp`, `listen_http`, `default_export`, `mmap_reads`, \
             `busy_poll_us`, `ceiling_mode`"
        );
    }
}

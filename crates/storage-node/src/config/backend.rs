//! `[backend]`: layers over every volume's file (`backend::layers`), validated here.

use std::time::Duration;

use serde::Deserialize;

use super::ConfigError;
use crate::backend::layers::LayerSpec;

/// The longest delay a layer may add: a second is already a broken disk.
const MAX_DELAY_NS: u64 = 1_000_000_000;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawBackend {
    delay: Option<RawDelay>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDelay {
    read: Option<String>,
    write: Option<String>,
}

/// Validate `[backend]`; `what` names the table in messages (`node.toml:12: backend`).
pub(super) fn parse(what: &str, raw: &RawBackend) -> Result<LayerSpec, ConfigError> {
    let mut spec = LayerSpec::default();
    if let Some(d) = &raw.delay {
        let one = |field: &str, v: &Option<String>| -> Result<Duration, ConfigError> {
            let Some(s) = v else {
                return Ok(Duration::ZERO);
            };
            let ns = qos_core::array::parse_duration(s)
                .map_err(|e| ConfigError(format!("{what}.delay.{field} = {}", e.0)))?;
            if ns > MAX_DELAY_NS {
                return Err(ConfigError(format!(
                    "{what}.delay.{field} = {s:?}: allowed range is 0 to 1s"
                )));
            }
            Ok(Duration::from_nanos(ns))
        };
        spec.delay_read = one("read", &d.read)?;
        spec.delay_write = one("write", &d.write)?;
    }
    Ok(spec)
}

//! node.toml: any text is a config or an error naming file:line, never a panic; a config
//! that parses has sizes and limits inside their documented ranges.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(cfg) = storage_node::NodeConfig::parse(text, "fuzz.toml") {
        for v in &cfg.volumes {
            assert!(v.size > 0 && v.size <= storage_node::config::MAX_VOLUME_SIZE);
            assert!(v.snapshot_reserve_percent <= 90);
        }
    }
});

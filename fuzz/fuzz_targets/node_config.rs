//! node.toml: any text is a config or an error naming file:line, never a panic, in the
//! node's parser and in each front end's (NBD's `[node]` keys, `[nfs]`, `[iscsi]`), which
//! read the same text as `qoslab serve` does; a config that parses has sizes and limits
//! inside their documented ranges.
#![no_main]
use libfuzzer_sys::fuzz_target;
use storage_node::config::Src;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(cfg) = storage_node::NodeConfig::parse(text, "fuzz.toml") else {
        return;
    };
    for v in &cfg.volumes {
        assert!(v.size > 0 && v.size <= storage_node::config::MAX_VOLUME_SIZE);
        assert!(v.snapshot_reserve_percent <= 90);
    }
    let src = Src::new(text, "fuzz.toml");
    if let Ok(nbd) = nbd_server::config::parse(&src, &cfg) {
        let max = std::time::Duration::from_micros(nbd_server::config::MAX_BUSY_POLL_US);
        assert!(nbd.busy_poll <= max);
        if let Some(name) = &nbd.default_export {
            assert!(cfg.volumes.iter().any(|v| &v.name == name));
        }
    }
    if let Ok(nfs) = nfs_server::config::parse(&src) {
        for x in [nfs.rtmax, nfs.wtmax] {
            assert!((4096..=nfs_server::MAX_XFER).contains(&x) && x % 4096 == 0);
        }
    }
    if let Ok(iscsi) = iscsi_server::config::parse(&src, &cfg) {
        for lun in &iscsi.luns {
            assert!(lun.number <= iscsi_server::config::MAX_LUN);
            assert!(matches!(lun.block_size, 512 | 4096));
            assert!(cfg.volumes.iter().any(|v| v.name == lun.volume));
        }
    }
});

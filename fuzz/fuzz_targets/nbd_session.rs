//! A whole NBD session over arbitrary client bytes: the server's greeting, the options
//! phase (every option, with its payload decoders and checks) and the transmission phase
//! (request decoding, validation at the edge, execution on a 1 MiB volume), exactly as
//! `qoslab serve` runs a connection. The node must answer or close, never panic.
#![no_main]
use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use storage_node::{Node, NodeConfig};

struct Env {
    rt: tokio::runtime::Runtime,
    node: Arc<Node>,
}

fn env() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(|| {
        let base = if std::path::Path::new("/dev/shm").is_dir() {
            std::path::PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        // Directories of fuzzer processes that are gone (they exit without clean-up).
        if let Ok(entries) = std::fs::read_dir(&base) {
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if let Some(pid) = name.strip_prefix("qoslab-fuzz-nbd-") {
                    if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
                        let _ = std::fs::remove_dir_all(e.path());
                    }
                }
            }
        }
        let dir = base.join(format!("qoslab-fuzz-nbd-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let cfg = NodeConfig::parse(
            "[[volume]]\nname = \"v\"\nsize = \"1MiB\"\n\n[[volume]]\nname = \"ro\"\nsize = \"64KiB\"\nread_only = true\n",
            "fuzz.toml",
        )
        .expect("config");
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("runtime");
        let node = rt.block_on(async { Node::open(&cfg, &dir).expect("node") });
        Env { rt, node }
    })
}

fuzz_target!(|data: &[u8]| {
    let e = env();
    let stream = tokio::io::join(data, tokio::io::sink());
    let _ = e
        .rt
        .block_on(nbd_server::connection(stream, e.node.clone(), None));
});

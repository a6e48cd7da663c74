//! What `qoslab serve` says at start about its data directory: the file system and the
//! largest volume it holds, and every volume that came up offline (docs/SECURITY.md).

use anyhow::Context;
use control_plane::api::ControlPlane;
use control_plane::datadir::describe_size;

/// Print the data directory's facts and the offline volumes (before the ready line).
pub fn print_data_dir(cp: &ControlPlane, data_dir: &std::path::Path) {
    let fs = cp.fs_facts();
    let largest = match fs.max_file_size {
        Some(m) => format!("largest volume {m} bytes ({})", describe_size(m)),
        None => "largest volume not measured".to_string(),
    };
    println!(
        "qoslab: data directory {}: {}, {largest}",
        data_dir.display(),
        fs.fs_type
    );
    for (name, why) in cp.offline_volumes() {
        println!("qoslab: volume {name:?} is OFFLINE: {why}");
    }
}

/// Make the data directory private: umask 077 for everything this process creates, the
/// directory created 0700, a warning when other users can reach an existing one, and the
/// node's files inside tightened to 0600 (directories 0700).
pub fn private_data_dir(data_dir: &std::path::Path) -> anyhow::Result<()> {
    // SAFETY: umask only sets the process's file-mode creation mask.
    unsafe { libc::umask(0o077) };
    storage_node::private::create_dir_all(data_dir)
        .with_context(|| format!("creating the data directory {}", data_dir.display()))?;
    let p = storage_node::private::check(data_dir)
        .with_context(|| format!("checking the data directory {}", data_dir.display()))?;
    if let Some(mode) = p.open_mode {
        tracing::warn!(
            "the data directory {} has mode {mode:04o}: other users can reach it (it holds \
             state.db with S3 secret keys, the TLS key and volume data); chmod 700 {}",
            data_dir.display(),
            data_dir.display()
        );
    }
    if p.tightened > 0 {
        tracing::warn!(
            "made {} file(s) and directories in {} private (0600/0700)",
            p.tightened,
            data_dir.display()
        );
    }
    Ok(())
}

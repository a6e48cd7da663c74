//! What `qoslab serve` says at start about its data directory: the file system and the
//! largest volume it holds, and every volume that came up offline (docs/SECURITY.md).

use storage_node::api::ControlPlane;
use storage_node::datadir::describe_size;

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

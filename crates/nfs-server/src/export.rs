//! Exports: a NAS volume's tree at a junction path. Their policies (client matches,
//! read-only or read-write) are the node's (`storage_node::nas::export_policy`), re-exported
//! here.

use std::path::PathBuf;

pub use storage_node::nas::export_policy::{ClientMatch, Flavours, Policy, Rule};

/// One NAS volume exported at a junction path.
#[derive(Debug, Clone)]
pub struct ExportSpec {
    /// The number file handles carry: assigned once and kept (the control plane stores
    /// it; `qoslab nfs serve` takes it from the command line), never derived from the
    /// junction path, never given to another export (a handle whose export id is unknown
    /// is STALE).
    pub id: u32,
    /// The junction path clients mount (`/vol500`).
    pub path: String,
    /// The directory holding the volume's tree.
    pub root: PathBuf,
    /// The volume's size: writes that would allocate beyond it get NFS3ERR_NOSPC.
    pub quota: Option<u64>,
    pub policy: Policy,
}

pub use storage_node::nas::valid_junction;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn junction_paths() {
        assert!(valid_junction("/vol1").is_ok());
        for bad in ["vol", "/", "/a/", "/a/../b", "/a b", "/a//b"] {
            assert!(valid_junction(bad).is_err(), "{bad}");
        }
    }
}

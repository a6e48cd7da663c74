//! The cgroup (v2) a process is in and where the hierarchy is mounted: where its pressure
//! files are (`crate::pressure` reads them).

/// Where the cgroup v2 hierarchy is mounted, from `/proc/self/mountinfo` (None without one).
pub fn cgroup2_mount(mountinfo: &[u8]) -> Option<std::path::PathBuf> {
    use procfs_core::FromRead;
    procfs_core::process::MountInfos::from_read(mountinfo)
        .ok()?
        .0
        .into_iter()
        .find(|m| m.fs_type == "cgroup2")
        .map(|m| m.mount_point)
}

/// A process's cgroup v2 path from its `/proc/PID/cgroup` (the `0::PATH` line; None on a
/// machine with cgroup v1 alone).
pub fn cgroup2_path(cgroup: &[u8]) -> Option<String> {
    use procfs_core::FromRead;
    procfs_core::ProcessCGroups::from_read(cgroup)
        .ok()?
        .0
        .into_iter()
        .find(|c| c.hierarchy == 0 && c.controllers.is_empty())
        .map(|c| c.pathname)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cgroup2_mount_and_a_process_s_path() {
        let mountinfo = "24 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n\
            30 24 0:26 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n\
            41 30 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
        assert_eq!(
            cgroup2_mount(mountinfo.as_bytes()),
            Some("/sys/fs/cgroup/unified".into())
        );
        assert_eq!(
            cgroup2_mount(b"24 1 254:0 / / rw - ext4 /dev/vda rw\n"),
            None
        );
        let hybrid = "4:memory:/process_api/02b9\n1:cpu:/\n0::/user.slice/session-3.scope\n";
        assert_eq!(
            cgroup2_path(hybrid.as_bytes()).as_deref(),
            Some("/user.slice/session-3.scope")
        );
        assert_eq!(cgroup2_path(b"4:memory:/x\n"), None);
        // This process's own, read as the local source reads it.
        if std::path::Path::new("/proc/pressure/cpu").exists() {
            let own = std::fs::read("/proc/self/cgroup").unwrap();
            let path = cgroup2_path(&own);
            let mount = cgroup2_mount(&std::fs::read("/proc/self/mountinfo").unwrap());
            assert_eq!(path.is_some(), mount.is_some(), "{path:?} {mount:?}");
        }
    }
}

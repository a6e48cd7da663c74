//! Application processes running on tenant file systems (git, tar, redis-server, fio), each
//! in its own process group: registered while they run so a signal's teardown kills them
//! (the lifecycle's child phase) before it unmounts (its local phase): a busy file system
//! cannot be unmounted.

/// Registration of one process group; unregisters on drop.
pub struct Registered(#[allow(dead_code)] lifecycle::Guard);

/// Register the process group `pgid` (a child spawned with `process_group(0)`: its pid).
pub fn register(pgid: u32) -> Registered {
    Registered(lifecycle::register(lifecycle::Phase::Children, move || {
        // SAFETY: killpg on a registered, still-unreaped group (its leader is our child).
        unsafe {
            libc::killpg(pgid as i32, libc::SIGKILL);
        }
    }))
}

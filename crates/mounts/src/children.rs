//! Application processes running on tenant file systems (git, tar, redis-server, fio), each
//! in its own process group: registered while they run so a signal teardown kills them
//! before unmounting (a busy file system cannot be unmounted).

use std::sync::Mutex;

static GROUPS: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// Registration of one process group; unregisters on drop.
pub struct Registered(u32);

/// Register the process group `pgid` (a child spawned with `process_group(0)`: its pid).
pub fn register(pgid: u32) -> Registered {
    GROUPS.lock().unwrap_or_else(|p| p.into_inner()).push(pgid);
    Registered(pgid)
}

impl Drop for Registered {
    fn drop(&mut self) {
        let mut g = GROUPS.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(i) = g.iter().position(|p| *p == self.0) {
            g.swap_remove(i);
        }
    }
}

/// SIGKILL every registered process group.
pub fn kill_all() {
    let g = GROUPS.lock().unwrap_or_else(|p| p.into_inner());
    for pgid in g.iter() {
        // SAFETY: killpg on a registered, still-unreaped group (its leader is our child).
        unsafe {
            libc::killpg(*pgid as i32, libc::SIGKILL);
        }
    }
}

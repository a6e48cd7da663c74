//! The attributes of an open object, remembered from its last `fstat` so the hot calls
//! (READ, WRITE's pre-operation attributes) skip a `statx` per call.
//!
//! **The consistency rule.** Every `fstat` the server makes of an object is remembered with
//! the time it began, the object's [`version`](AttrCache::changed) and the process-wide
//! [metadata epoch](bump_epoch) it began at. A remembered value is served only while all
//! three still hold:
//! - it is at most [`ATTR_TTL`] old: a change made behind the server's back (another
//!   process writing, truncating or chmodding the export's files) shows in every reply
//!   after at most that long (plus one tick of the coarse clock it is timed by, 4 ms at
//!   the kernel's HZ=250: [`now`]);
//! - no change was made to the object through this server since: a WRITE bumps the
//!   object's version after its data is written (then takes a fresh `fstat`, which is
//!   remembered);
//! - no procedure that changes attributes or names (SETATTR, CREATE, MKDIR, SYMLINK,
//!   MKNOD, REMOVE, RMDIR, RENAME, LINK, COMMIT) ended since: each bumps the epoch when it
//!   ends, whatever its result, and every remembered value of every export is then stale.
//!
//! Only READ and WRITE's pre-operation attributes use remembered values; every other
//! procedure (GETATTR and ACCESS included) takes a fresh `fstat`, and WRITE's
//! post-operation attributes are always fresh. READ checks what it served against the
//! bytes it read: data always comes from the file, and when the read ends past the
//! remembered size, or short of it, the attributes are taken again before the reply.

use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::Mutex;
use std::time::Duration;

use crate::sys::Stat;

/// The longest a remembered `fstat` is served (a change behind the server's back is seen
/// by then). Linux clients keep attributes for at least 3 s (`acregmin`) themselves.
pub const ATTR_TTL: Duration = Duration::from_millis(100);

/// Bumped when a procedure that may change attributes or names ends (all exports).
static EPOCH: AtomicU64 = AtomicU64::new(0);

/// Marks every remembered attribute of every object stale (a procedure that may have
/// changed attributes or names ended).
pub fn bump_epoch() {
    EPOCH.fetch_add(1, SeqCst);
}

fn epoch() -> u64 {
    EPOCH.load(SeqCst)
}

/// Nanoseconds on `CLOCK_MONOTONIC_COARSE`: what a remembered value's age is timed by. It
/// moves once a kernel tick (1/HZ), and reading it costs ~6 ns against ~36 ns for
/// `Instant::now()` (`CLOCK_MONOTONIC`), read once or twice per READ and WRITE (1.4% of
/// a 4 KiB READ's CPU in a profile). A tick more or less on a 100 ms bound.
pub fn now() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec for the call to fill; this clock cannot fail on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64)
}

const TTL_NS: u64 = ATTR_TTL.as_nanos() as u64;

#[derive(Debug, Clone, Copy)]
struct Remembered {
    st: Stat,
    version: u64,
    epoch: u64,
    /// [`now`] when its `fstat` began.
    at: u64,
}

/// One object's remembered attributes.
#[derive(Debug, Default)]
pub struct AttrCache {
    version: AtomicU64,
    last: Mutex<Option<Remembered>>,
}

/// What must hold for an `fstat` begun now to be remembered ([`AttrCache::begin`]).
#[derive(Debug, Clone, Copy)]
pub struct Stamp {
    version: u64,
    epoch: u64,
    /// [`now`] when taken.
    at: u64,
}

impl AttrCache {
    /// Taken before an `fstat`: its result is remembered with this stamp.
    pub fn begin(&self) -> Stamp {
        Stamp {
            version: self.version.load(SeqCst),
            epoch: epoch(),
            at: now(),
        }
    }

    /// Remember `st`, from an `fstat` begun at `stamp` (never over a newer value).
    pub fn put(&self, st: Stat, stamp: Stamp) {
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        if last.is_some_and(|r| r.version > stamp.version || r.at > stamp.at) {
            return;
        }
        *last = Some(Remembered {
            st,
            version: stamp.version,
            epoch: stamp.epoch,
            at: stamp.at,
        });
    }

    /// The remembered attributes, when the rule above still holds at `now` ([`now`]'s
    /// clock).
    pub fn get(&self, now: u64) -> Option<Stat> {
        let r = (*self.last.lock().unwrap_or_else(|p| p.into_inner()))?;
        let fresh = r.version == self.version.load(SeqCst)
            && r.epoch == epoch()
            && now.saturating_sub(r.at) <= TTL_NS;
        fresh.then_some(r.st)
    }

    /// The object was changed through this server: nothing remembered before is served.
    pub fn changed(&self) {
        self.version.fetch_add(1, SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(size: u64) -> Stat {
        Stat {
            mode: libc::S_IFREG | 0o644,
            nlink: 1,
            size,
            ino: 1,
            ..Stat::default()
        }
    }

    #[test]
    fn served_within_the_bound_and_not_after() {
        let c = AttrCache::default();
        let s = c.begin();
        c.put(st(1), s);
        assert_eq!(c.get(s.at).map(|s| s.size), Some(1));
        assert_eq!(c.get(s.at + TTL_NS).map(|s| s.size), Some(1));
        assert_eq!(c.get(s.at + TTL_NS + 1_000_000), None);
        // the clock moves (a tick at a time)
        let t0 = now();
        std::thread::sleep(Duration::from_millis(30));
        assert!(now() >= t0 + 20_000_000, "{t0} -> {}", now());
    }

    #[test]
    fn a_change_through_the_server_or_a_metadata_call_makes_it_stale() {
        let c = AttrCache::default();
        let s = c.begin();
        c.put(st(1), s);
        c.changed();
        assert_eq!(c.get(s.at), None, "a WRITE since");
        // An fstat begun before the change is not remembered over it.
        c.put(st(1), s);
        assert_eq!(c.get(s.at), None);
        let s2 = c.begin();
        c.put(st(2), s2);
        assert_eq!(c.get(s2.at).map(|s| s.size), Some(2));
        bump_epoch();
        assert_eq!(
            c.get(s2.at),
            None,
            "a SETATTR (or any metadata change) since"
        );
    }
}

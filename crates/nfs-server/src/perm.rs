//! Who a call acts as, and what POSIX lets them do: the checks a file server makes for its
//! clients (the node opens everything itself, as root or as its own user, so the kernel
//! checks nothing on their behalf).
//!
//! The caller is the identity the export policy mapped ([`Grant`]: root squashed to the
//! anonymous user unless `superuser` grants it, AUTH_NONE always anonymous). Against an
//! object's owner, group and mode: uid 0 may read and write anything and execute what
//! someone may execute; everyone else gets the owner's, the group's (primary or
//! supplementary) or the others' bits, as the first that applies. On top, as Linux's NFS
//! server and nfs-ganesha do: the owner may always READ and WRITE an open file (a client
//! that `fchmod`s its open file keeps using it), and READ is allowed with execute alone
//! (a client executes what it reads).

use nfs_proto::nfs3::access;
use storage_node::nas::export_policy::{Grant, Identity};

use crate::sys::Stat;

pub const R: u32 = 4;
pub const W: u32 = 2;
pub const X: u32 = 1;

const SUID: u32 = libc::S_ISUID;
const SGID: u32 = libc::S_ISGID;
const STICKY: u32 = libc::S_ISVTX;

/// The caller of one NFS call, as its export's policy mapped it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub who: Identity,
    /// Mapped to the anonymous user (AUTH_NONE, squashed root, a `none` rule).
    pub anonymous: bool,
    /// The export grants writes (`rw_rule`).
    pub write: bool,
    /// Honour setuid/setgid bits in modes the client sets (`allow_suid`).
    pub allow_suid: bool,
    /// A file's owner may give it away (`chown_mode` unrestricted).
    pub chown_unrestricted: bool,
}

impl Caller {
    pub fn from_grant(g: Grant) -> Caller {
        Caller {
            who: g.who,
            anonymous: g.anonymous,
            write: g.write,
            allow_suid: g.allow_suid,
            chown_unrestricted: g.chown_unrestricted,
        }
    }

    /// A caller with every right (tests and tools).
    pub fn root() -> Caller {
        Caller {
            who: Identity {
                uid: 0,
                gid: 0,
                gids: Vec::new(),
            },
            anonymous: false,
            write: true,
            allow_suid: true,
            chown_unrestricted: false,
        }
    }

    pub fn uid(&self) -> u32 {
        self.who.uid
    }

    pub fn is_root(&self) -> bool {
        self.who.uid == 0
    }

    pub fn owns(&self, st: &Stat) -> bool {
        self.who.uid == st.uid
    }

    pub fn in_group(&self, gid: u32) -> bool {
        self.who.in_group(gid)
    }

    /// The rwx bits of `st` that apply to the caller (root: all, execute only where
    /// someone may execute or on a directory).
    pub fn bits(&self, st: &Stat) -> u32 {
        if self.is_root() {
            let x = st.is_dir() || st.mode & 0o111 != 0;
            return R | W | if x { X } else { 0 };
        }
        if self.owns(st) {
            (st.mode >> 6) & 7
        } else if self.in_group(st.gid) {
            (st.mode >> 3) & 7
        } else {
            st.mode & 7
        }
    }

    /// Whether the caller has every bit of `want` on `st`.
    pub fn may(&self, st: &Stat, want: u32) -> bool {
        self.bits(st) & want == want
    }

    /// READ of a file: read permission, or execute, or ownership.
    pub fn may_read_file(&self, st: &Stat) -> bool {
        self.owns(st) || self.bits(st) & (R | X) != 0
    }

    /// WRITE (and truncation) of a file: write permission or ownership.
    pub fn may_write_file(&self, st: &Stat) -> bool {
        self.owns(st) || self.may(st, W)
    }

    /// Adding or removing names in directory `dir`: write and search permission.
    pub fn may_change_dir(&self, dir: &Stat) -> bool {
        self.may(dir, W | X)
    }

    /// Removing (or renaming away, or replacing) `victim` from a directory the caller
    /// may change ([`may_change_dir`](Self::may_change_dir)): a sticky directory lets only
    /// root, its owner and the victim's owner (else EPERM, as Linux answers).
    pub fn sticky_allows(&self, dir: &Stat, victim: &Stat) -> bool {
        dir.mode & STICKY == 0 || self.is_root() || self.owns(dir) || self.owns(victim)
    }

    /// A hard link to `src` (Linux's `protected_hardlinks`): root, the owner, or a regular
    /// file that is not setuid (nor setgid-executable) and that the caller may read and write.
    pub fn may_link(&self, src: &Stat) -> bool {
        if self.is_root() || self.owns(src) {
            return true;
        }
        src.is_reg()
            && src.mode & SUID == 0
            && src.mode & (SGID | 0o010) != (SGID | 0o010)
            && self.may(src, R | W)
    }

    /// The mode a change by this caller really sets on `st` (`mode` as asked): setuid and
    /// setgid go when the rule does not honour them (`allow_suid`), setgid on a non-directory
    /// when the caller is not root and not in the file's group (as chmod(2) on Linux).
    pub fn settable_mode(&self, st: &Stat, mode: u32) -> u32 {
        let mut m = mode & 0o7777;
        if !self.allow_suid && !st.is_dir() {
            m &= !(SUID | SGID);
        }
        if !self.allow_suid && st.is_dir() {
            m &= !SUID;
        }
        if !self.is_root() && !st.is_dir() && m & SGID != 0 && !self.in_group(st.gid) {
            m &= !SGID;
        }
        m
    }

    /// The mode a file has after this caller wrote to it or truncated it: a write by
    /// anyone but root clears setuid, and setgid where group-execute is set (Linux's
    /// `file_remove_privs`). `None`: unchanged.
    pub fn mode_after_write(&self, st: &Stat) -> Option<u32> {
        if self.is_root() || !st.is_reg() {
            return None;
        }
        let mut m = st.mode & 0o7777;
        m &= !SUID;
        if m & 0o010 != 0 {
            m &= !SGID;
        }
        (m != st.mode & 0o7777).then_some(m)
    }

    /// ACCESS: the requested bits the caller really has on `st` (none of the modifying
    /// ones on a read-only export).
    pub fn access_bits(&self, st: &Stat, want: u32) -> u32 {
        let bits = self.bits(st);
        let mut got = 0;
        if bits & R != 0 {
            got |= access::READ;
        }
        if bits & W != 0 && self.write {
            got |= access::MODIFY | access::EXTEND;
            if st.is_dir() {
                got |= access::DELETE; // as nfs-ganesha answers: write permission
            }
        }
        if bits & X != 0 {
            got |= if st.is_dir() {
                access::LOOKUP
            } else {
                access::EXECUTE
            };
        }
        got & want
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(mode: u32, uid: u32, gid: u32) -> Stat {
        Stat {
            mode,
            nlink: 1,
            uid,
            gid,
            ino: 1,
            ..Stat::default()
        }
    }

    fn who(uid: u32, gid: u32, gids: &[u32]) -> Caller {
        Caller {
            who: Identity {
                uid,
                gid,
                gids: gids.to_vec(),
            },
            ..Caller::root()
        }
    }

    const F: u32 = libc::S_IFREG;
    const D: u32 = libc::S_IFDIR;

    #[test]
    fn classes_root_and_overrides() {
        let f = st(F | 0o640, 1000, 2000);
        assert_eq!(who(1000, 1, &[]).bits(&f), R | W);
        assert_eq!(who(1002, 1, &[2000]).bits(&f), R);
        assert_eq!(who(65534, 65534, &[]).bits(&f), 0);
        assert_eq!(
            Caller::root().bits(&f),
            R | W,
            "root executes only executables"
        );
        assert!(Caller::root().may(&st(D, 5, 5), R | W | X));
        // The owner's class decides even when others have more.
        assert!(!who(1000, 1, &[]).may(&st(F | 0o007, 1000, 2000), R));
        // Owners always read and write an open file; execute allows READ.
        assert!(who(1000, 1, &[]).may_read_file(&st(F, 1000, 2000)));
        assert!(who(7, 7, &[]).may_read_file(&st(F | 0o711, 1000, 2000)));
        assert!(!who(7, 7, &[]).may_write_file(&st(F | 0o644, 1000, 2000)));
    }

    #[test]
    fn sticky_directories_and_links() {
        let tmp = st(D | 0o1777, 0, 0);
        let mine = st(F | 0o644, 1000, 1000);
        assert!(who(1000, 1000, &[]).sticky_allows(&tmp, &mine));
        assert!(!who(1001, 1001, &[]).sticky_allows(&tmp, &mine));
        assert!(Caller::root().sticky_allows(&tmp, &mine));
        assert!(who(1001, 1001, &[]).sticky_allows(&st(D | 0o777, 0, 0), &mine));
        assert!(!who(1001, 1001, &[]).may_link(&st(F | 0o4755, 0, 0)));
        assert!(who(1001, 1001, &[]).may_link(&st(F | 0o666, 0, 0)));
        assert!(!who(1001, 1001, &[]).may_link(&st(F | 0o644, 0, 0)));
    }

    #[test]
    fn modes_a_caller_may_set_and_writes_that_clear_setuid() {
        let f = st(F | 0o755, 1000, 2000);
        assert_eq!(who(1000, 1, &[]).settable_mode(&f, 0o2755), 0o755);
        assert_eq!(who(1000, 1, &[2000]).settable_mode(&f, 0o6755), 0o6755);
        let no_suid = Caller {
            allow_suid: false,
            ..Caller::root()
        };
        assert_eq!(no_suid.settable_mode(&f, 0o6755), 0o755);
        assert_eq!(no_suid.settable_mode(&st(D | 0o755, 0, 0), 0o2775), 0o2775);
        assert_eq!(
            who(1002, 1, &[]).mode_after_write(&st(F | 0o6755, 1000, 2000)),
            Some(0o755)
        );
        assert_eq!(
            who(1002, 1, &[]).mode_after_write(&st(F | 0o2644, 1000, 2000)),
            None,
            "setgid without group execute is a lock mark"
        );
        assert_eq!(Caller::root().mode_after_write(&st(F | 0o4755, 1, 1)), None);
    }

    #[test]
    fn access_answers_truthfully() {
        use access::*;
        let all = READ | LOOKUP | MODIFY | EXTEND | DELETE | EXECUTE;
        let root_file = st(F | 0o600, 0, 0);
        assert_eq!(who(1000, 1000, &[]).access_bits(&root_file, all), 0);
        assert_eq!(
            Caller::root().access_bits(&root_file, all),
            READ | MODIFY | EXTEND
        );
        let dir = st(D | 0o755, 1000, 1000);
        assert_eq!(
            who(1000, 1000, &[]).access_bits(&dir, all),
            READ | LOOKUP | MODIFY | EXTEND | DELETE
        );
        assert_eq!(
            who(1000, 1000, &[]).access_bits(&st(D | 0o600, 1000, 1000), all),
            READ | MODIFY | EXTEND | DELETE,
            "DELETE with write permission, as ganesha"
        );
        let ro = Caller {
            write: false,
            ..who(1000, 1000, &[])
        };
        assert_eq!(ro.access_bits(&dir, all), READ | LOOKUP);
    }
}

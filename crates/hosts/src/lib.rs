//! qoslab's hosts: the machines a system suite runs on, reached over OpenSSH.
//!
//! - [`ssh`]: a [`Host`] is an ssh destination (an alias from `~/.ssh/config`, `user@host`)
//!   plus the address its peers use for data (iperf3, fio's client/server). Commands run
//!   through the `ssh` binary, so the user's keys, agent and config apply; extra options pass
//!   through; connections are multiplexed (ControlMaster/ControlPersist) so hundreds of
//!   commands cost one handshake per host. `localhost` runs locally without ssh.
//! - [`facts`]: cores, RAM, disks (size, rotational, partitions, holders, mounts, swap) and
//!   NICs (speed, state, counters), read from the host's /proc and /sys in one ssh round
//!   trip and parsed here with `procfs-core`; the tools a suite needs are checked at the
//!   same time.
//! - [`preflight`]: every host at once, one clear error per host (unreachable, auth failure,
//!   missing tool) before any load starts.
//! - [`devices`]: whether a block device may be written (no partition table, no file-system
//!   signature, no mount, no holder, not swap), from `wipefs --no-act --json` and /sys.
//! - [`remote`]: long-lived remote processes (iperf3 servers, `fio --server`) under a lease
//!   (`timeout`), in their own session, stopped by process group on drop and on signals.
//!
//! Invariants: nothing here writes to a device; every remote process started is registered
//! for cleanup before its start command returns to the caller, and carries a lease so a
//! coordinator killed with SIGKILL still leaves nothing running past it.

pub mod devices;
pub mod error;
pub mod facts;
pub mod preflight;
pub mod remote;
pub mod ssh;

pub use error::{ErrorKind, HostError};
pub use facts::{Disk, HostFacts, Nic, Route};
pub use preflight::{preflight, PreflightError};
pub use remote::RemoteProc;
pub use ssh::{disconnect_all, parse_hosts, Host, Output, SshConfig};

/// Quote one word for a POSIX shell.
pub fn quote(word: &str) -> String {
    shlex::try_quote(word)
        .map(|c| c.into_owned())
        // try_quote refuses only NUL bytes, which no argument may contain.
        .unwrap_or_else(|_| "''".into())
}

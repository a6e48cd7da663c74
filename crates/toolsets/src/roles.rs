//! Which process is whose: fio, the node, the harness, a kernel thread, or someone else.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::counters::ProcTimes;
use crate::sample::Role;

/// How a host's processes are told apart.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Roles {
    /// The harness's own process (`qoslab bench`). Its descendants are fio (when named
    /// `fio`) or the harness (anything else it started). On a load generator that runs
    /// `fio --server`, leave it empty: then every process named `fio` is fio.
    pub harness_pid: Option<i32>,
    /// The storage node's process: the harness's own pid when the node is embedded, a
    /// `qoslab serve` started by the harness, or none (the node is elsewhere).
    pub node_pid: Option<i32>,
}

impl Roles {
    /// This process is the harness and the embedded node.
    pub fn embedded() -> Roles {
        let me = std::process::id() as i32;
        Roles {
            harness_pid: Some(me),
            node_pid: Some(me),
        }
    }

    /// This process is the harness; the node is another process (or another host).
    pub fn harness_only(node_pid: Option<i32>) -> Roles {
        Roles {
            harness_pid: Some(std::process::id() as i32),
            node_pid,
        }
    }

    /// A remote load generator: fio is whatever is named fio.
    pub fn load_generator() -> Roles {
        Roles::default()
    }

    /// Classifies every process of one snapshot.
    pub fn classify(&self, procs: &[ProcTimes]) -> HashMap<i32, Role> {
        let parent: HashMap<i32, i32> = procs.iter().map(|p| (p.pid, p.ppid)).collect();
        let descends = |mut pid: i32, root: i32| {
            // Bounded walk: a pid table with a cycle (a snapshot taken while pids were
            // reused) must not hang the sampler.
            for _ in 0..64 {
                if pid == root {
                    return true;
                }
                match parent.get(&pid) {
                    Some(&pp) if pp > 0 && pp != pid => pid = pp,
                    _ => return false,
                }
            }
            false
        };
        procs
            .iter()
            .map(|p| {
                let role = if Some(p.pid) == self.node_pid {
                    Role::Node
                } else if Some(p.pid) == self.harness_pid {
                    Role::Harness
                } else if p.pid == 2 || p.ppid == 2 {
                    Role::Kernel
                } else if self
                    .node_pid
                    .is_some_and(|n| Some(n) != self.harness_pid && descends(p.pid, n))
                {
                    Role::Node
                } else if let Some(h) = self.harness_pid {
                    if descends(p.pid, h) {
                        if p.comm == "fio" {
                            Role::Fio
                        } else {
                            Role::Harness
                        }
                    } else {
                        Role::Other
                    }
                } else if p.comm == "fio" {
                    Role::Fio
                } else {
                    Role::Other
                };
                (p.pid, role)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(pid: i32, ppid: i32, comm: &str) -> ProcTimes {
        ProcTimes {
            pid,
            ppid,
            comm: comm.into(),
            own: 0,
            children: 0,
            starttime: 0,
            processor: None,
        }
    }

    #[test]
    fn fio_is_the_harness_s_fio_and_other_fio_is_someone_else_s() {
        let procs = [
            p(1, 0, "init"),
            p(2, 0, "kthreadd"),
            p(30, 2, "kworker/0:1"),
            p(100, 1, "qoslab"),
            p(101, 100, "fio"),
            p(102, 101, "fio"),
            p(103, 100, "sh"),
            p(200, 1, "fio"),
            p(300, 1, "cargo"),
            p(301, 300, "rustc"),
        ];
        let roles = Roles {
            harness_pid: Some(100),
            node_pid: Some(100),
        }
        .classify(&procs);
        assert_eq!(roles[&100], Role::Node);
        assert_eq!(roles[&101], Role::Fio);
        assert_eq!(roles[&102], Role::Fio);
        assert_eq!(roles[&103], Role::Harness);
        assert_eq!(roles[&200], Role::Other, "another harness's fio is noise");
        assert_eq!(roles[&301], Role::Other);
        assert_eq!(roles[&30], Role::Kernel);
        assert_eq!(roles[&2], Role::Kernel);

        // A separate node process the harness started, with its own children.
        let procs = [
            p(100, 1, "qoslab"),
            p(110, 100, "qoslab"),
            p(111, 110, "helper"),
            p(101, 100, "fio"),
        ];
        let roles = Roles {
            harness_pid: Some(100),
            node_pid: Some(110),
        }
        .classify(&procs);
        assert_eq!(roles[&100], Role::Harness);
        assert_eq!(roles[&110], Role::Node);
        assert_eq!(roles[&111], Role::Node);
        assert_eq!(roles[&101], Role::Fio);

        // A load generator running fio --server: any fio.
        let roles = Roles::load_generator().classify(&[p(5, 1, "fio"), p(6, 1, "sshd")]);
        assert_eq!(roles[&5], Role::Fio);
        assert_eq!(roles[&6], Role::Other);
    }

    #[test]
    fn a_parent_cycle_does_not_hang() {
        let roles = Roles {
            harness_pid: Some(100),
            node_pid: None,
        }
        .classify(&[p(5, 6, "fio"), p(6, 5, "x")]);
        assert_eq!(roles[&5], Role::Other);
    }
}

//! Which process is whose: fio, the node, the harness, a kernel thread, or someone else —
//! and, inside the harness's own process, which threads are whose (an embedded node's
//! threads are the node; qoslab's own load generators' threads are the load generator).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::counters::ProcTimes;

/// Whose CPU a process's time is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// The load generator: fio.
    Fio,
    /// The storage node (the harness's own process when the node is embedded).
    Node,
    /// The harness (qoslab bench) and its other children.
    Harness,
    /// Kernel threads (block and loop workers, writeback, softirq threads): work the I/O
    /// itself causes, never counted as noise.
    Kernel,
    /// Everything else: the processes that make a host noisy.
    Other,
}

/// The name every thread of an embedded node starts with (its runtime's workers and
/// blocking threads, and the thread that runs it): the harness names them so.
pub const NODE_THREADS: &str = "qoslab-node";
/// The name the threads of qoslab's own load generators (the ramp's genio, the tenants'
/// application clients) start with.
pub const GENERATOR_THREADS: &str = "qoslab-gen";

/// Threads of the harness's process whose name starts with `prefix` count as `role`
/// (thread names are at most 15 bytes in /proc: keep prefixes shorter).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadRule {
    pub prefix: String,
    pub role: Role,
}

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
    /// Threads of the harness's process that are not the harness (first match wins). With
    /// any rule, the harness's process is the harness and only the matching threads' CPU
    /// moves to their role; without, a harness that is also the node is all node.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub threads: Vec<ThreadRule>,
}

impl Roles {
    /// This process is the harness and runs the embedded node: the node's threads
    /// ([`NODE_THREADS`]) are the node, the rest of the process is the harness.
    pub fn embedded() -> Roles {
        let me = std::process::id() as i32;
        Roles {
            harness_pid: Some(me),
            node_pid: Some(me),
            threads: vec![ThreadRule {
                prefix: NODE_THREADS.into(),
                role: Role::Node,
            }],
        }
    }

    /// This process is the harness; the node is another process (or another host).
    pub fn harness_only(node_pid: Option<i32>) -> Roles {
        Roles {
            harness_pid: Some(std::process::id() as i32),
            node_pid,
            threads: Vec::new(),
        }
    }

    /// The harness generates load itself: its [`GENERATOR_THREADS`] are the load generator
    /// (the role fio has when fio generates it).
    pub fn with_generator(mut self) -> Roles {
        self.threads.push(ThreadRule {
            prefix: GENERATOR_THREADS.into(),
            role: Role::Fio,
        });
        self
    }

    /// The pid whose threads are split by [`Roles::threads`] (None: no split).
    pub fn split_pid(&self) -> Option<i32> {
        self.harness_pid.filter(|_| !self.threads.is_empty())
    }

    /// The role of a thread of the harness's process named `comm` (None: the process's).
    pub fn thread_role(&self, comm: &str) -> Option<Role> {
        self.threads
            .iter()
            .find(|r| comm.starts_with(&r.prefix))
            .map(|r| r.role)
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
                let role = if self.split_pid() == Some(p.pid) {
                    // The node's and generators' threads are split off in the rates.
                    Role::Harness
                } else if Some(p.pid) == self.node_pid {
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
            rss_bytes: 0,
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
            threads: vec![],
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
            threads: vec![],
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
            threads: vec![],
        }
        .classify(&[p(5, 6, "fio"), p(6, 5, "x")]);
        assert_eq!(roles[&5], Role::Other);
    }

    #[test]
    fn an_embedded_node_splits_the_harness_by_thread() {
        let r = Roles::embedded().with_generator();
        let me = std::process::id() as i32;
        assert_eq!(r.split_pid(), Some(me));
        assert_eq!(r.thread_role("qoslab-node"), Some(Role::Node));
        assert_eq!(r.thread_role("qoslab-gen-ramp"), Some(Role::Fio));
        assert_eq!(r.thread_role("toolsets-local"), None);
        let procs = [p(me, 1, "qoslab"), p(me + 1, me, "fio")];
        let roles = r.classify(&procs);
        assert_eq!(roles[&me], Role::Harness, "the rest of the process");
        assert_eq!(roles[&(me + 1)], Role::Fio);
        assert_eq!(Roles::harness_only(None).split_pid(), None);
    }
}

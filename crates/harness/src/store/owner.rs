//! Interrupted runs. A run row names the process that writes it (schema 7: its pid, that
//! process's start time and the machine's boot id). A run stopped by SIGINT, SIGTERM or
//! SIGHUP is marked `interrupted` by the signal teardown ([`Store::mark_interrupted`]); a
//! run whose process died without a chance to say so (SIGKILL, OOM, a crash, a power cut)
//! is marked `interrupted` the next time a store is opened on the same machine, once its
//! owner is seen gone. Its unfinished jobs become `interrupted` too.

use rusqlite::{params, Connection};

use super::{now_rfc3339, Result, Store};

/// The process writing a run, as the kernel tells it apart from every other.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Owner {
    pub pid: u32,
    /// Its start time, in clock ticks since boot (`/proc/PID/stat`'s 22nd field): a pid
    /// used again by a later process has another.
    pub start: u64,
    pub boot: String,
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// The start time of process `pid`, if it is running.
fn start_of(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.rsplit_once(')')?.1;
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// This machine's hostname, as `Env::detect` records it in `runs.host`.
fn host() -> String {
    read("/proc/sys/kernel/hostname")
}

impl Owner {
    /// This process.
    pub fn me() -> Owner {
        let pid = std::process::id();
        Owner {
            pid,
            start: start_of(pid).unwrap_or(0),
            boot: read("/proc/sys/kernel/random/boot_id"),
        }
    }

    /// Whether this owner (of a run on this machine) is still running.
    fn alive(&self) -> bool {
        self.boot == read("/proc/sys/kernel/random/boot_id")
            && start_of(self.pid) == Some(self.start)
    }
}

/// Mark run `run` and its unfinished jobs interrupted.
fn mark(conn: &Connection, run: i64) -> Result<()> {
    conn.execute(
        "UPDATE runs SET status = 'interrupted', finished_at = COALESCE(finished_at, ?2)
         WHERE id = ?1",
        params![run, now_rfc3339()],
    )?;
    conn.execute(
        "UPDATE jobs SET status = 'interrupted', finished_at = COALESCE(finished_at, ?2)
         WHERE run_id = ?1 AND status = 'running'",
        params![run, now_rfc3339()],
    )?;
    Ok(())
}

/// A `running` run's row: id, host, owner pid, start and boot.
type RunningRow = (i64, String, Option<i64>, Option<i64>, Option<String>);

/// Mark interrupted every `running` run of this machine whose owner is gone (a row from
/// before schema 7 names no owner: its process is gone too, or it would have closed it).
pub(crate) fn mark_abandoned(conn: &Connection) -> Result<Vec<i64>> {
    let me = host();
    let rows: Vec<RunningRow> = conn
        .prepare(
            "SELECT id, host, owner_pid, owner_start, owner_boot FROM runs WHERE status = 'running'",
        )?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))?
        .collect::<std::result::Result<_, _>>()?;
    let mut marked = Vec::new();
    for (id, run_host, pid, start, boot) in rows {
        if run_host != me {
            continue;
        }
        let gone = match (pid, start, boot) {
            (Some(pid), Some(start), Some(boot)) => !Owner {
                pid: pid as u32,
                start: start as u64,
                boot,
            }
            .alive(),
            _ => true,
        };
        if gone {
            mark(conn, id)?;
            marked.push(id);
        }
    }
    Ok(marked)
}

impl Store {
    /// Mark run `run` interrupted (the signal teardown's step, on its own connection).
    pub fn mark_interrupted(&self, run: i64) -> Result<()> {
        mark(&self.conn, run)
    }

    /// The database file, if the store is one (not in memory).
    pub fn path(&self) -> Option<std::path::PathBuf> {
        self.conn
            .path()
            .filter(|p| !p.is_empty())
            .map(std::path::PathBuf::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_whose_process_is_gone_is_interrupted_at_the_next_open() {
        let dir = test_support::TestDir::new("owner");
        let db = dir.path().join("r.db");
        let s = Store::open(&db).unwrap();
        let run = crate::store::tests::new_run(&s);
        let job = s.begin_job(run, 1, "w", "j", None, 1, "").unwrap();
        let live = crate::store::tests::new_run(&s);
        // Runs of this machine; the first one's owner a pid above the kernel's maximum
        // (never running).
        s.conn
            .execute("UPDATE runs SET host = ?1", [host()])
            .unwrap();
        s.conn
            .execute("UPDATE runs SET owner_pid = 4194305 WHERE id = ?1", [run])
            .unwrap();
        // A row from before schema 7 (no owner) on another machine: left alone.
        let elsewhere = crate::store::tests::new_run(&s);
        s.conn
            .execute(
                "UPDATE runs SET owner_pid = NULL, host = 'other-host' WHERE id = ?1",
                [elsewhere],
            )
            .unwrap();
        drop(s);
        let s = Store::open(&db).unwrap();
        let r = s.load_run(run).unwrap();
        assert_eq!(r.status, "interrupted");
        assert!(r.finished_at.is_some());
        assert_eq!(r.jobs[0].id, job);
        assert_eq!(r.jobs[0].status, "interrupted");
        assert_eq!(
            s.load_run(live).unwrap().status,
            "running",
            "its owner is this test"
        );
        assert_eq!(s.load_run(elsewhere).unwrap().status, "running");
        // The signal teardown's mark, and a finish after it does not overwrite it.
        s.mark_interrupted(live).unwrap();
        s.finish_run(live, "passed").unwrap();
        assert_eq!(s.load_run(live).unwrap().status, "interrupted");
        assert_eq!(s.path(), Some(db.clone()));
        assert_eq!(Store::in_memory().unwrap().path(), None);
    }
}

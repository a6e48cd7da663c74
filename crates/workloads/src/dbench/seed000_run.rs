//! A stored run of seed 000's scenario (examples/seed000.toml or the demo) beside the
//! seed's own summaries, cell by cell ([`super::seed000`]): `qoslab results seed000 RUN`
//! and the demo's table.

use harness::store::{JobRecord, RunRecord, SUPERSEDED};

use super::seed000::{self, Cells, Unit};

/// The ten dbench cells of `volume` in a stored run, the way dbench's summary computes
/// them (fio's text: IOPS = ios / runtime, bandwidth = bytes / runtime in MiB/s, mean
/// total latency in usec). `None` when the run has no dbench job on that volume. A job a
/// re-run superseded (the demo's) is not read: its replacement is.
pub fn measured(run: &RunRecord, volume: &str) -> Option<Cells> {
    let cells: Cells = std::array::from_fn(|i| {
        let r = job(run, volume, job_of(i))?.primary()?;
        let d = if is_read(i) { &r.read } else { &r.write };
        Some(match seed000::CELLS[i].1 {
            Unit::Iops => d.iops_text() as f64,
            Unit::MibS => d.bw_text() as f64 / 1048576.0,
            Unit::Usec => d.lat_mean_ns / 1e3,
        })
    });
    cells.iter().any(Option::is_some).then_some(cells)
}

/// The dbench job behind cell `i`: a job per cell in dbench's order, but the mixed job
/// gives the last two (its read and its write side).
fn job_of(i: usize) -> &'static str {
    super::JOBS[i.min(super::JOBS.len() - 1)]
}

/// Whether cell `i` is its job's read side (the cells alternate read, write).
fn is_read(i: usize) -> bool {
    i.is_multiple_of(2)
}

/// The current (not superseded) job `name` on `volume`.
fn job<'a>(run: &'a RunRecord, volume: &str, name: &str) -> Option<&'a JobRecord> {
    run.jobs
        .iter()
        .find(|j| j.volume.as_deref() == Some(volume) && j.name == name && j.status != SUPERSEDED)
}

/// Per cell of `volume`, its job's diagnosis when that discredits the measurement (a
/// starved load generator or a busy host: `Bottleneck::discredits_measurement`).
pub fn machine(run: &RunRecord, volume: &str) -> [Option<String>; 10] {
    std::array::from_fn(|i| {
        let d = job(run, volume, job_of(i))?.diagnosis.as_ref()?;
        d.bottleneck
            .discredits_measurement()
            .then(|| d.bottleneck.to_string())
    })
}

/// The comparison of a stored run with the seed, each miss attributed where the seed or
/// the machine explains it.
pub fn compare(run: &RunRecord) -> Vec<seed000::VolumeCmp> {
    let mut rows = seed000::compare(|v| measured(run, v));
    seed000::attribute(&mut rows, |v| machine(run, v));
    rows
}

/// The volumes with a miss that only the machine explains (worth one more run).
pub fn spoiled_volumes(run: &RunRecord) -> Vec<String> {
    compare(run)
        .iter()
        .filter(|r| {
            r.cells
                .iter()
                .any(|c| !c.pass && c.seed_inconsistent.is_none() && c.machine.is_some())
        })
        .map(|r| r.volume.to_string())
        .collect()
}

/// The comparison of a stored run with the seed; the exit status it calls for: 1 when a
/// cell misses that neither the seed's own figures (`seed000::seed_inconsistency`) nor the
/// job's diagnosis explain, 3 when only the machine explains some, else 0.
pub fn print(run: &RunRecord, json: bool, out: &mut impl std::io::Write) -> std::io::Result<i32> {
    let rows = compare(run);
    if json {
        writeln!(out, "{:#}", seed000::json(&rows))?;
    } else {
        writeln!(
            out,
            "Seed 000 beside qoslab, cell by cell: run {} ({}, {} s runs)\n",
            run.id, run.name, run.runtime_s
        )?;
        out.write_all(seed000::table(&rows).as_bytes())?;
    }
    let (ok, n) = seed000::score(&rows);
    let (own, machine) = (
        seed000::explained_misses(&rows),
        seed000::machine_misses(&rows),
    );
    Ok(if ok + own + machine < n {
        1
    } else if machine > 0 {
        3
    } else {
        0
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_cell_reads_its_dbench_job_and_side() {
        let want = "read_iops write_iops read_bw write_bw read_latency write_latency \
                    read_seq write_seq rw_mix rw_mix";
        let jobs: Vec<&str> = (0..seed000::CELLS.len()).map(job_of).collect();
        assert_eq!(jobs, want.split_whitespace().collect::<Vec<_>>());
        for (i, (name, _)) in seed000::CELLS.iter().enumerate() {
            assert_eq!(
                is_read(i),
                name.to_lowercase().contains("read"),
                "cell {i}: {name}"
            );
        }
    }
}

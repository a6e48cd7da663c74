//! `qoslab results seed000 RUN`: a stored run of seed 000's scenario (examples/seed000.toml
//! or the demo) beside the seed's own summaries, cell by cell (`crate::seed000`).

use harness::store::{RunRecord, SUPERSEDED};

use crate::seed000::{self, Cells};

/// The ten dbench cells of `volume` in a stored run, the way dbench's summary computes
/// them (fio's text: IOPS = ios / runtime, bandwidth = bytes / runtime in MiB/s, mean
/// total latency in usec). `None` when the run has no dbench job on that volume. A job a
/// re-run superseded (the demo's) is not read: its replacement is.
pub fn measured(run: &RunRecord, volume: &str) -> Option<Cells> {
    let job = |name: &str| {
        run.jobs
            .iter()
            .find(|j| {
                j.volume.as_deref() == Some(volume) && j.name == name && j.status != SUPERSEDED
            })
            .and_then(|j| j.primary())
    };
    let iops = |name: &str, read: bool| {
        job(name).map(|r| (if read { &r.read } else { &r.write }).iops_text() as f64)
    };
    let mibs = |name: &str, read: bool| {
        job(name).map(|r| (if read { &r.read } else { &r.write }).bw_text() as f64 / 1048576.0)
    };
    let usec = |name: &str, read: bool| {
        job(name).map(|r| (if read { &r.read } else { &r.write }).lat_mean_ns / 1e3)
    };
    let cells = [
        iops("read_iops", true),
        iops("write_iops", false),
        mibs("read_bw", true),
        mibs("write_bw", false),
        usec("read_latency", true),
        usec("write_latency", false),
        mibs("read_seq", true),
        mibs("write_seq", false),
        iops("rw_mix", true),
        iops("rw_mix", false),
    ];
    cells.iter().any(Option::is_some).then_some(cells)
}

/// The comparison of a stored run with the seed; `Ok(false)` when a cell misses that the
/// seed's own figures do not explain (`seed000::seed_inconsistency`).
pub fn print(run: &RunRecord, json: bool, out: &mut impl std::io::Write) -> anyhow::Result<bool> {
    let rows = seed000::compare(|v| measured(run, v));
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
    Ok(ok + seed000::explained_misses(&rows) == n)
}

#[cfg(test)]
mod tests {
    use storage_node::NodeConfig;

    const PLAN: &str = include_str!("../../../examples/seed000.toml");
    const ARRAY: &str = include_str!("../../../examples/seed000-array.toml");

    /// The plan runs dbench on the seed's seven volumes, on the same array, policies and
    /// volumes as examples/seed000-array.toml declares for `qoslab serve`.
    #[test]
    fn the_plan_and_the_node_config_declare_the_same_array() {
        let plan = workloads::registry()
            .parse(PLAN, "examples/seed000.toml")
            .unwrap();
        assert_eq!(plan.steps().len(), 63);
        let p = plan.common.node.unwrap();
        let n = NodeConfig::parse(ARRAY, "examples/seed000-array.toml").unwrap();
        assert_eq!(p.array, n.array);
        assert_eq!(p.capacity, n.capacity);
        assert_eq!(p.policies, n.policies);
        assert_eq!(p.volumes, n.volumes);
        // Every seed volume is in the plan, under the name the comparison looks up.
        for sv in &crate::seed000::SEED {
            assert!(
                p.volumes.iter().any(|v| v.name == sv.volume),
                "{}",
                sv.volume
            );
        }
        // And the demo's (crate::seed000::ARRAY).
        let d = NodeConfig::parse(crate::seed000::ARRAY, "seed000::ARRAY").unwrap();
        assert_eq!((d.array, d.capacity), (n.array.clone(), n.capacity));
        assert_eq!(n.array.accounting.to_string(), "transfer:64KiB");
        assert_eq!(n.array.model.as_ref().unwrap().capacity_iops(), 15_300);
    }
}

//! The seed's sizing rules, computed from host facts, shown, and overridable.
//!
//! Disks: `size = 2 x RAM / cores` per job, `numjobs = cores` for an SSD or `cores / 2` for
//! an HDD, `iodepth = 32` for an SSD (the job file's own) or 4 for an HDD (the seed: "2 or
//! 4"). NFS/iSCSI: `size = 2 x RAM / cores`, `numjobs = cores` (hardware threads), and the
//! target should hold at least 3 x RAM. A size never exceeds what the target holds.

use fio::fmt::human;
use hosts::HostFacts;
use serde::Serialize;

/// The sizing a host's target got, shown with the results.
#[derive(Debug, Clone, Serialize)]
pub struct TargetSizing {
    pub host: String,
    pub targets: Vec<String>,
    pub sizing: Sizing,
}

const MIB: u64 = 1 << 20;

/// What the user fixed by hand.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Overrides {
    pub size_bytes: Option<u64>,
    pub numjobs: Option<u32>,
    pub iodepth: Option<u32>,
}

/// The figures a job file gets, and how each was reached.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sizing {
    /// Bytes per job (the region each job addresses).
    pub size_bytes: u64,
    pub numjobs: u32,
    /// `None`: the job file's own depth (32, or 16 for the sequential read/write files).
    pub iodepth: Option<u32>,
    pub ssd: bool,
    pub notes: Vec<String>,
}

fn round_mib(b: u64) -> u64 {
    (b / MIB).max(1) * MIB
}

/// The disk rule for devices of one host (`rotational`: any of them spins; `capacity`: the
/// smallest device).
pub fn disk_rule(f: &HostFacts, rotational: bool, capacity: u64, ov: &Overrides) -> Sizing {
    let cores = f.cores.max(1);
    let ssd = !rotational;
    let mut notes = Vec::new();
    let rule_size = round_mib(2 * f.mem_total_bytes / cores as u64);
    let mut size = rule_size;
    let mut note = format!(
        "size = 2 x RAM {} / {cores} cores = {}",
        human(f.mem_total_bytes),
        human(rule_size)
    );
    if let Some(s) = ov.size_bytes {
        size = round_mib(s);
        note = format!(
            "size = {} (given; the rule says {})",
            human(size),
            human(rule_size)
        );
    }
    if size > capacity && capacity >= MIB {
        size = capacity / MIB * MIB;
        note.push_str(&format!(", capped to the device's {}", human(size)));
    }
    notes.push(note);
    let rule_jobs = if ssd { cores } else { (cores / 2).max(1) };
    let numjobs = ov.numjobs.unwrap_or(rule_jobs);
    notes.push(match ov.numjobs {
        Some(n) => format!("numjobs = {n} (given; the rule says {rule_jobs})"),
        None if ssd => format!("numjobs = {cores} cores (SSD)"),
        None => format!("numjobs = {cores} cores / 2 = {rule_jobs} (HDD)"),
    });
    let iodepth = ov.iodepth.or(if ssd { None } else { Some(4) });
    notes.push(match (ov.iodepth, ssd) {
        (Some(d), _) => format!("iodepth = {d} (given)"),
        (None, true) => {
            "iodepth = the job file's (32; 16 for fio.read.seq/fio.write.seq) (SSD)".into()
        }
        (None, false) => "iodepth = 4 (HDD: the seed says 2 or 4)".into(),
    });
    Sizing {
        size_bytes: size,
        numjobs,
        iodepth,
        ssd,
        notes,
    }
}

/// The NFS/iSCSI rule for one load generator: `capacity` is what its target holds (free
/// space of a directory, size of a device; `None` for an nfs:// export); `target_ram` the storage side's RAM when known.
pub fn storage_rule(
    f: &HostFacts,
    capacity: Option<u64>,
    target_ram: Option<u64>,
    ov: &Overrides,
) -> Sizing {
    let cores = f.cores.max(1);
    let ram = target_ram.unwrap_or(f.mem_total_bytes);
    let whose = if target_ram.is_some() {
        "the target's"
    } else {
        "this load generator's"
    };
    let mut notes = Vec::new();
    let numjobs = ov.numjobs.unwrap_or(cores);
    notes.push(match ov.numjobs {
        Some(n) => format!("numjobs = {n} (given; the rule says {cores} threads)"),
        None => format!("numjobs = {cores} hardware threads"),
    });
    let rule_size = round_mib(2 * ram / cores as u64);
    let mut size = ov.size_bytes.map(round_mib).unwrap_or(rule_size);
    let mut note = match ov.size_bytes {
        Some(_) => format!(
            "size = {} (given; the rule says {})",
            human(size),
            human(rule_size)
        ),
        None => format!(
            "size = 2 x {whose} RAM {} / {cores} cores = {} per job",
            human(ram),
            human(rule_size)
        ),
    };
    match capacity {
        None => {
            notes.push(note);
            notes.push(format!(
                "target capacity unknown (an nfs:// export: fio's nfs engine has no df): \
                 {numjobs} job file(s) of {} must fit, and the export should hold 3 x {whose} \
                 RAM ({}) so caches cannot hold the data set",
                human(size),
                human(3 * ram)
            ));
        }
        Some(capacity) => {
            let room = capacity / 10 * 9 / numjobs.max(1) as u64;
            if size * numjobs as u64 > capacity / 10 * 9 && room >= MIB {
                size = room / MIB * MIB;
                note.push_str(&format!(
                    ", capped to {} so {numjobs} job file(s) fit in 90% of {}",
                    human(size),
                    human(capacity)
                ));
            }
            notes.push(note);
            let ok = capacity >= 3 * ram;
            notes.push(format!(
                "target holds {} {} 3 x {whose} RAM ({}){}",
                human(capacity),
                if ok { ">=" } else { "<" },
                human(3 * ram),
                if ok {
                    ""
                } else {
                    ": caches may hold the data set; results can be too good"
                }
            ));
        }
    }
    if let Some(d) = ov.iodepth {
        notes.push(format!("iodepth = {d} (given)"));
    }
    Sizing {
        size_bytes: size,
        numjobs,
        iodepth: ov.iodepth,
        ssd: true,
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(cores: u32, ram_gib: u64) -> HostFacts {
        HostFacts {
            host: "h".into(),
            hostname: "h".into(),
            kernel: String::new(),
            cores,
            mem_total_bytes: ram_gib << 30,
            disks: Vec::new(),
            nics: Vec::new(),
            routes: Vec::new(),
            missing_tools: Vec::new(),
        }
    }

    #[test]
    fn the_seeds_examples() {
        // "a quad-core node with 16 GiB RAM: 4g"; numjobs = cores (SSD), /2 (HDD).
        let s = disk_rule(&facts(4, 16), false, 1 << 40, &Overrides::default());
        assert_eq!((s.size_bytes, s.numjobs, s.iodepth), (8 << 30, 4, None));
        let h = disk_rule(&facts(4, 16), true, 1 << 40, &Overrides::default());
        assert_eq!((h.numjobs, h.iodepth), (2, Some(4)));
        assert!(h.notes[1].contains("HDD"), "{:?}", h.notes);
        let n = storage_rule(
            &facts(4, 8),
            Some(1 << 40),
            Some(16 << 30),
            &Overrides::default(),
        );
        assert_eq!((n.size_bytes, n.numjobs), (8 << 30, 4));
        assert!(n.notes[2].contains(">="), "{:?}", n.notes);
    }

    #[test]
    fn overrides_and_caps_are_shown() {
        let ov = Overrides {
            size_bytes: Some(48 << 20),
            numjobs: Some(1),
            iodepth: Some(8),
        };
        let s = disk_rule(&facts(2, 8), true, 32 << 20, &ov);
        assert_eq!((s.size_bytes, s.numjobs, s.iodepth), (32 << 20, 1, Some(8)));
        assert!(
            s.notes[0].contains("given") && s.notes[0].contains("capped"),
            "{:?}",
            s.notes
        );
        let n = storage_rule(&facts(2, 8), Some(100 << 20), None, &Overrides::default());
        assert!(n.size_bytes * 2 <= 90 << 20, "{}", n.size_bytes);
        assert!(
            n.notes.iter().any(|t| t.contains("caches may hold")),
            "{:?}",
            n.notes
        );
        // An nfs:// export: nothing to cap to, and said so.
        let u = storage_rule(&facts(2, 8), None, None, &ov);
        assert_eq!((u.size_bytes, u.numjobs), (48 << 20, 1));
        assert!(u.notes[2].contains("capacity unknown"), "{:?}", u.notes);
    }
}

//! Rule 6 of the diagnosis, `starved-host`: the kernel's pressure stall information (PSI)
//! over the job's window says the job's tasks waited on a resource that work not the job's
//! held; and the pressure figures every diagnosis that discredits the measurement carries.
//!
//! PSI counts the time some runnable task waited; it does not say whose work made it wait.
//! A job can starve itself (fio and the node together wanting more CPU than the host has,
//! fio saturating a device): that is `client-cpu-bound`, `node-cpu-bound` or
//! `device-bound`, a limit of the target or the load generator, never an excuse. So each
//! resource's pressure counts only beside evidence that the contention was not the job's:
//! CPU the job did not use, a device whose bytes the job's processes did not move. Memory
//! stalls (reclaim, swap-in) count alone: neither fio nor the node holds enough memory to
//! cause them. Thresholds: [`crate::diagnosis::limits`], derived in docs/DIAGNOSIS.md.

use crate::diagnosis::limits::*;
use crate::diagnosis::{core, decided, jobs_device, Bottleneck, Diagnosis, Figure, Inputs};
use crate::figures::HostFigures;

/// "run queue 5.2 (at most 9)".
fn run_queue(h: &HostFigures) -> String {
    format!(
        "run queue {:.1} (at most {})",
        h.run_queue_mean, h.run_queue_max
    )
}

pub(crate) fn starved(i: &Inputs) -> Option<Diagnosis> {
    for h in &i.hosts {
        let Some((p, whose)) = h.job_pressure() else {
            continue;
        };
        let not_job = h.not_the_jobs_pct();
        let busiest = h
            .busiest_other
            .as_ref()
            .map(|(n, c)| format!(", the busiest {n} at {c:.0}%"))
            .unwrap_or_default();
        let pressure = |name: &str, v: f64, limit: f64| {
            Figure::new(
                &format!("{name} pressure (some)"),
                &whose,
                v,
                "% of the window",
                &format!(">= {limit:.0}"),
            )
        };
        let context = |figs: &mut Vec<Figure>| {
            figs.push(Figure::new(
                "run queue",
                &h.host,
                h.run_queue_mean,
                "tasks",
                "",
            ));
            figs.push(Figure::new(
                "run queue peak",
                &h.host,
                h.run_queue_max as f64,
                "tasks",
                "",
            ));
        };
        if p.cpu_some >= PSI_CPU_SOME_PCT && not_job >= STARVED_NOT_JOB_PCT {
            let mut figs = vec![
                pressure("cpu", p.cpu_some, PSI_CPU_SOME_PCT),
                core(
                    "cpu not the job's",
                    h,
                    not_job,
                    &format!(">= {STARVED_NOT_JOB_PCT:.0}"),
                ),
            ];
            context(&mut figs);
            return decided(
                Bottleneck::StarvedHost,
                format!(
                    "runnable tasks on {whose} waited for a CPU {:.0}% of the window while work not the job's took {not_job:.0}% of a core{busiest}; {}: the host was starved",
                    p.cpu_some,
                    run_queue(h)
                ),
                figs,
            );
        }
        if p.memory_some >= PSI_MEMORY_SOME_PCT {
            let mut figs = vec![pressure("memory", p.memory_some, PSI_MEMORY_SOME_PCT)];
            context(&mut figs);
            return decided(
                Bottleneck::StarvedHost,
                format!(
                    "tasks on {whose} stalled on memory {:.0}% of the window (full {:.0}%): the host was starved of memory",
                    p.memory_some, p.memory_full
                ),
                figs,
            );
        }
        let others_device = h.disks.iter().find(|d| {
            d.util_pct >= DEVICE_AWAIT_MIN_UTIL_PCT
                && h.job_io_bytes_s.is_some()
                && !jobs_device(h, d)
        });
        if let (true, Some(d)) = (p.io_some >= PSI_IO_SOME_PCT, others_device) {
            let subject = format!("{} on {}", d.name, h.host);
            let job = h.job_io_bytes_s.unwrap_or(0.0) / 1048576.0;
            let share = if d.mb_s > 0.0 {
                job / d.mb_s * 100.0
            } else {
                0.0
            };
            return decided(
                Bottleneck::StarvedHost,
                format!(
                    "tasks on {whose} waited on I/O {:.0}% of the window while {subject} was {:.0}% busy, {share:.0}% of its {:.1} MiB/s the job's: other work's I/O starved it",
                    p.io_some, d.util_pct, d.mb_s
                ),
                vec![
                    pressure("io", p.io_some, PSI_IO_SOME_PCT),
                    Figure::new(
                        "job's share of the device's bytes",
                        &subject,
                        share,
                        "%",
                        &format!("< {:.0}", DEVICE_JOB_SHARE * 100.0),
                    ),
                    Figure::new("disk util", &subject, d.util_pct, "%", ""),
                ],
            );
        }
    }
    None
}

/// The `starved-host` rule on one host's figures alone, with its pressure: for a
/// real-time test that measured this machine outside the harness (its assertion's failure
/// is inconclusive when this says the machine was starved).
pub fn starvation(h: &HostFigures) -> Option<Diagnosis> {
    let i = Inputs {
        hosts: vec![h.clone()],
        ..Inputs::default()
    };
    starved(&i).map(|d| with_pressure(d, &i))
}

/// Every diagnosis carries each host's pressure over the window in its figures; one that
/// discredits the measurement also in its reason (so an inconclusive verdict shows them).
pub(crate) fn with_pressure(mut d: Diagnosis, i: &Inputs) -> Diagnosis {
    let mut notes = Vec::new();
    for h in &i.hosts {
        let Some((p, whose)) = h.job_pressure() else {
            continue;
        };
        for (name, v) in [
            ("cpu", p.cpu_some),
            ("io", p.io_some),
            ("memory", p.memory_some),
        ] {
            let name = format!("{name} pressure (some)");
            if !d
                .figures
                .iter()
                .any(|f| f.name == name && f.subject == whose)
            {
                d.figures
                    .push(Figure::new(&name, &whose, v, "% of the window", ""));
            }
        }
        notes.push(format!("{whose}: {}; {}", p.describe(), run_queue(h)));
    }
    if !notes.is_empty() && d.bottleneck.discredits_measurement() {
        d.reason = format!(
            "{} (pressure over the window, share of time some task waited: {})",
            d.reason,
            notes.join("; ")
        );
    }
    d
}

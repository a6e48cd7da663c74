//! What limited a job: one [`Bottleneck`] per result, the figures that decided it and a
//! one-line reason, from the host tool sets ([`HostFigures`]), the node's own counters
//! ([`NodeFigures`]) and fio's result ([`FioFigures`]).
//!
//! The rules, tried in this order (the first that holds wins):
//!
//! | # | bottleneck | holds when |
//! |---|---|---|
//! | 1 | `qos-bound` | the volume's rate within 97%..103% of a ceiling that applied: the effective ceiling, or its burst ceiling while its bucket had credits (IOPS or bytes/s; the node's own count when it has one, else fio's `iops_mean`/`bw_mean`); but a rate below 99% of it (short by more than the pacer's own 1% error) is the first of rules 2–7 that holds when that one is 3, 6 or 7, carrying the ceiling's figures |
//! | 2 | `device-bound` | a device behind the target at ≥ 95% mean %util, or its await rising ≥ 50% across the window while ≥ 50% utilised (≥ 4 samples); in both, the job's processes moved at least half its bytes (when their I/O counters are known) |
//! | 3 | `client-cpu-bound` | on a load generator: one fio process at ≥ 90% of a core; or the CPUs fio ran on < 5% idle (host idle when unknown) with fio using more than the node |
//! | 4 | `node-cpu-bound` | on the node's host: the node at ≥ 90% of all its CPUs, or host idle < 5% with the node the biggest consumer |
//! | 5 | `network-bound` | a NIC at ≥ 90% of its link speed |
//! | 6 | `starved-host` | the kernel's pressure stall information over the window (of the job's own cgroups, else the host's): runnable tasks waited for a CPU ≥ 25% of the time while work not the job's took ≥ 20% of a core; or tasks stalled on memory ≥ 10%; or on I/O ≥ 25% while a device was ≥ 50% busy with less than half its bytes the job's |
//! | 7 | `noisy-host` | steal ≥ 5%; or other processes at ≥ 20% of a core on average; or, in one sample, others at ≥ 50% of a core while the host was < 10% idle |
//! | 8 | `qos-bound` | the node held requests: ceiling and floor waits ≥ 50% of its mean latency (never for a figure above every ceiling) |
//! | 9 | `unconstrained` | none of the above (the figures closest to a limit are shown) |
//!
//! No rule calls a figure above the ceiling "held by the ceiling": past 103% of every
//! ceiling that applied (a burst volume's burst ceiling included), the QoS policy did not
//! hold it. A diagnosis that discredits the measurement (`starved-host`, `client-cpu-bound`,
//! `noisy-host`) carries each host's pressure over the window in its reason and figures.
//!
//! Without tool sets (`--no-tools`) only rules 1 and 8 can hold; otherwise the job is
//! `not-measured`, never `unconstrained`: nothing was looked at.
//!
//! Why this order: reaching the ceiling is the strongest evidence there is (the job got all
//! the node allowed; falling short of it on a busy host, the host held the rest back); a saturated device explains a busy CPU, not the other way round; the
//! specific limits (the job's device, the load generator's or the node's CPU, the network)
//! come before the kernel's general word that the job waited on what others held
//! (`starved-host`), and that before the process list's (`noisy-host`); CPU and noise come
//! before the node's waits because a starved client still queues a full iodepth at the
//! ceiling whenever it runs, so waits dominate even when the client was the limit.

use serde::{Deserialize, Serialize};

use crate::figures::HostFigures;

pub mod starved;

/// Rule thresholds (see the module table).
pub mod limits {
    /// Measured ≥ this fraction of an effective ceiling: qos-bound.
    pub const QOS_NEAR_LIMIT: f64 = 0.97;
    /// … and at most this fraction of it: past it the ceiling did not hold the figure (the
    /// +3% the project's ceiling expectations allow).
    pub const QOS_ABOVE_LIMIT: f64 = 1.03;
    /// Below this fraction of the ceiling the figure fell short of it by more than the
    /// pacer's own error (qos-core's `pacer_accuracy`: every ceiling within 1% over 10 s):
    /// something besides the policy held the rest back, and a host rule that discredits the
    /// measurement wins over rule 1.
    pub const QOS_SHORT_OF_LIMIT: f64 = 0.99;
    /// Starved host: some runnable task waited for a CPU this share of the window (percent;
    /// the job's cgroups', else the host's PSI) …
    pub const PSI_CPU_SOME_PCT: f64 = 25.0;
    /// … while CPU the job did not use took at least this much of a core.
    pub const STARVED_NOT_JOB_PCT: f64 = 20.0;
    /// Or some task stalled on memory this share of the window.
    pub const PSI_MEMORY_SOME_PCT: f64 = 10.0;
    /// Or some task waited on I/O this share of the window while a device was at least
    /// `DEVICE_AWAIT_MIN_UTIL_PCT` busy, less than `DEVICE_JOB_SHARE` of its bytes the job's.
    pub const PSI_IO_SOME_PCT: f64 = 25.0;
    /// The share of a device's bytes the job's processes must have moved for the device to
    /// be the job's limit (when their I/O counters are known).
    pub const DEVICE_JOB_SHARE: f64 = 0.5;
    /// Ceiling + floor wait ≥ this fraction of the node's mean latency: qos-bound.
    pub const QOS_WAIT_SHARE: f64 = 0.50;
    /// Mean %util of a device behind the target.
    pub const DEVICE_UTIL_PCT: f64 = 95.0;
    /// Await rising by this much across the window (percent of its mean) …
    pub const DEVICE_AWAIT_RISE_PCT: f64 = 50.0;
    /// … while the device is at least this busy, over at least this many samples.
    pub const DEVICE_AWAIT_MIN_UTIL_PCT: f64 = 50.0;
    pub const DEVICE_AWAIT_MIN_SAMPLES: usize = 4;
    /// One fio process at this share of a core.
    pub const CLIENT_PROC_PCT: f64 = 90.0;
    /// Host idle below this (percent of all CPUs) makes the biggest consumer the limit.
    pub const HOST_IDLE_PCT: f64 = 5.0;
    /// The node at this share of all its host's CPUs.
    pub const NODE_ALL_CPUS_SHARE: f64 = 0.90;
    /// A NIC's busier direction at this share of its link speed.
    pub const NIC_UTIL_PCT: f64 = 90.0;
    /// Steal, percent of all CPUs.
    pub const STEAL_PCT: f64 = 5.0;
    /// Others' mean CPU, percent of one core.
    pub const OTHER_MEAN_PCT: f64 = 20.0;
    /// Others' CPU in one sample (percent of one core) while the host's idle was below …
    pub const OTHER_PEAK_PCT: f64 = 50.0;
    pub const OTHER_PEAK_IDLE_PCT: f64 = 10.0;
}

use limits::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Bottleneck {
    QosBound,
    DeviceBound,
    NodeCpuBound,
    ClientCpuBound,
    NetworkBound,
    /// The kernel's pressure stall information says the job's tasks waited on a CPU, I/O
    /// or memory that work not the job's held.
    StarvedHost,
    NoisyHost,
    Unconstrained,
    /// Tool sets were off and the node's counters did not decide it.
    NotMeasured,
}

impl Bottleneck {
    pub const ALL: [Bottleneck; 9] = [
        Bottleneck::QosBound,
        Bottleneck::DeviceBound,
        Bottleneck::NodeCpuBound,
        Bottleneck::ClientCpuBound,
        Bottleneck::NetworkBound,
        Bottleneck::StarvedHost,
        Bottleneck::NoisyHost,
        Bottleneck::Unconstrained,
        Bottleneck::NotMeasured,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Bottleneck::QosBound => "qos-bound",
            Bottleneck::DeviceBound => "device-bound",
            Bottleneck::NodeCpuBound => "node-cpu-bound",
            Bottleneck::ClientCpuBound => "client-cpu-bound",
            Bottleneck::NetworkBound => "network-bound",
            Bottleneck::StarvedHost => "starved-host",
            Bottleneck::NoisyHost => "noisy-host",
            Bottleneck::Unconstrained => "unconstrained",
            Bottleneck::NotMeasured => "not-measured",
        }
    }

    pub fn parse(s: &str) -> Option<Bottleneck> {
        Bottleneck::ALL.into_iter().find(|b| b.as_str() == s)
    }

    /// The bottlenecks that say the measurement, not the target, was the limit.
    pub fn discredits_measurement(self) -> bool {
        matches!(
            self,
            Bottleneck::ClientCpuBound | Bottleneck::NoisyHost | Bottleneck::StarvedHost
        )
    }
}

impl std::fmt::Display for Bottleneck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One figure that decided (or nearly decided) a diagnosis.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Figure {
    /// What was measured: "fio process cpu", "disk util", "other cpu".
    pub name: String,
    /// Whose: a host, a device, a process; "" when it is the job's own figure.
    pub subject: String,
    pub value: f64,
    /// "% of a core", "% of all CPUs", "%", "IOPS", "B/s", "us".
    pub unit: String,
    /// The rule's limit as text (">= 90"), empty for context figures.
    pub limit: String,
}

impl Figure {
    pub(crate) fn new(name: &str, subject: &str, value: f64, unit: &str, limit: &str) -> Figure {
        Figure {
            name: name.into(),
            subject: subject.into(),
            value,
            unit: unit.into(),
            limit: limit.into(),
        }
    }

    /// "fio process cpu fio (1234) = 97.0 % of a core (>= 90)".
    pub fn describe(&self) -> String {
        let subject = if self.subject.is_empty() {
            String::new()
        } else {
            format!(" {}", self.subject)
        };
        let limit = if self.limit.is_empty() {
            String::new()
        } else {
            format!(" ({})", self.limit)
        };
        format!(
            "{}{subject} = {:.1} {}{limit}",
            self.name, self.value, self.unit
        )
    }
}

/// The verdict on what limited a job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Diagnosis {
    pub bottleneck: Bottleneck,
    /// One line a person reads next to the result.
    pub reason: String,
    pub figures: Vec<Figure>,
}

impl Diagnosis {
    /// The pressure figures it carries, as one phrase ("cpu pressure (some) local = 63.2 %
    /// of the window, ..."); None without them (no PSI, or no host samples).
    pub fn pressure_note(&self) -> Option<String> {
        let v: Vec<String> = self
            .figures
            .iter()
            .filter(|f| f.name.ends_with("pressure (some)"))
            .map(Figure::describe)
            .collect();
        (!v.is_empty()).then(|| v.join(", "))
    }
}

/// The node's view of the job's volume over its window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct NodeFigures {
    /// Effective ceiling (0 = none).
    pub ceiling_iops: u64,
    pub ceiling_bps: u64,
    /// Mean latency per operation at the node, and the parts of it spent held by the
    /// ceiling and behind floors (the emulated controller), µs.
    pub lat_mean_us: f64,
    pub ceiling_wait_us: f64,
    pub floor_wait_us: f64,
    /// The ceiling while credits last, for a volume with a burst bucket that had credits in
    /// the window (0 = none): also a ceiling that applied.
    #[serde(default)]
    pub burst_iops: u64,
    #[serde(default)]
    pub burst_bps: u64,
    /// The node's own count over the window: reads and writes per second, and bytes per
    /// second (0: not counted; fio's figures then stand for the volume's rate).
    #[serde(default)]
    pub iops: f64,
    #[serde(default)]
    pub bps: f64,
}

/// What fio measured: the figures the job's verdicts judge.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct FioFigures {
    pub iops: f64,
    pub bw_bytes: f64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Inputs {
    pub fio: FioFigures,
    pub node: Option<NodeFigures>,
    /// The hosts sampled (load generators and the node's host; one entry when they are
    /// the same machine). Empty when tool sets were off.
    pub hosts: Vec<HostFigures>,
}

pub(crate) fn decided(b: Bottleneck, reason: String, figures: Vec<Figure>) -> Option<Diagnosis> {
    Some(Diagnosis {
        bottleneck: b,
        reason,
        figures,
    })
}

/// Each dimension's measured figure and the ceilings that applied to it (the effective
/// ceiling, and the burst ceiling while credits lasted), non-zero ones only.
/// One dimension's ceilings that applied (value, which), the rate measured, its unit and
/// what it is.
type Dimension = (Vec<(f64, &'static str)>, f64, &'static str, &'static str);

fn ceilings(i: &Inputs) -> Vec<Dimension> {
    let Some(n) = i.node else { return Vec::new() };
    let pick = |c: u64, b: u64| {
        [(c as f64, "ceiling"), (b as f64, "burst ceiling")]
            .into_iter()
            .filter(|(v, _)| *v > 0.0)
            .collect::<Vec<_>>()
    };
    // The volume's rate where the promise is kept: the node's count when it has one.
    let rate = |node: f64, fio: f64| if node > 0.0 { node } else { fio };
    vec![
        (
            pick(n.ceiling_iops, n.burst_iops),
            rate(n.iops, i.fio.iops),
            "IOPS",
            "iops",
        ),
        (
            pick(n.ceiling_bps, n.burst_bps),
            rate(n.bps, i.fio.bw_bytes),
            "B/s",
            "bandwidth",
        ),
    ]
}

/// The figure was above every ceiling that applied (by more than the 3% a ceiling allows):
/// whatever limited it, the QoS policy did not.
fn above_every_ceiling(i: &Inputs) -> bool {
    ceilings(i).iter().any(|(limits, got, _, _)| {
        let top = limits.iter().map(|l| l.0).fold(0.0, f64::max);
        top > 0.0 && *got > QOS_ABOVE_LIMIT * top
    })
}

/// Rule 1's diagnosis, and, when the figure was short of the ceiling that held it (below
/// [`QOS_SHORT_OF_LIMIT`] of it, within the 3% rule 1 allows), what it measured ("measured
/// 485 IOPS is 97.1% of the 500 IOPS ceiling").
fn near_limit(i: &Inputs) -> Option<(Diagnosis, Option<String>)> {
    for (limits, got, unit, what) in ceilings(i) {
        let held = limits
            .iter()
            .find(|(l, _)| got >= QOS_NEAR_LIMIT * l && got <= QOS_ABOVE_LIMIT * l);
        if let Some(&(limit, which)) = held {
            let pct = got / limit * 100.0;
            let shown = |v: f64| {
                if unit == "B/s" {
                    format!("{:.1} MiB/s", v / 1048576.0)
                } else {
                    format!("{v:.0} IOPS")
                }
            };
            let measured = format!(
                "measured {} is {pct:.1}% of the {} {which}",
                shown(got),
                shown(limit)
            );
            let d = Diagnosis {
                bottleneck: Bottleneck::QosBound,
                reason: format!("{measured}: the QoS policy held it"),
                figures: vec![
                    Figure::new(&format!("measured {what}"), "", got, unit, ""),
                    Figure::new(
                        &format!("share of the effective {which}"),
                        "",
                        pct,
                        "%",
                        &format!(
                            "{:.0}..{:.0}",
                            QOS_NEAR_LIMIT * 100.0,
                            QOS_ABOVE_LIMIT * 100.0
                        ),
                    ),
                ],
            };
            return Some((d, (got < QOS_SHORT_OF_LIMIT * limit).then_some(measured)));
        }
    }
    None
}

/// Whether the job's processes moved at least [`DEVICE_JOB_SHARE`] of a device's bytes
/// (true when their I/O counters are unknown: the device is then taken to be the job's).
pub(crate) fn jobs_device(h: &HostFigures, d: &crate::figures::DiskFigures) -> bool {
    match h.job_io_bytes_s {
        Some(job) => job >= DEVICE_JOB_SHARE * d.mb_s * 1048576.0,
        None => true,
    }
}

fn device(i: &Inputs) -> Option<Diagnosis> {
    for h in &i.hosts {
        for d in h.disks.iter().filter(|d| jobs_device(h, d)) {
            let subject = format!("{} on {}", d.name, h.host);
            if d.util_pct >= DEVICE_UTIL_PCT {
                return decided(
                    Bottleneck::DeviceBound,
                    format!(
                        "{subject} was busy {:.0}% of the time (await {:.1} ms): the device was the limit",
                        d.util_pct, d.await_ms
                    ),
                    vec![
                        Figure::new("disk util", &subject, d.util_pct, "%", &format!(">= {DEVICE_UTIL_PCT:.0}")),
                        Figure::new("disk await", &subject, d.await_ms, "ms", ""),
                        Figure::new("disk iops", &subject, d.iops, "IOPS", ""),
                    ],
                );
            }
            if h.samples >= DEVICE_AWAIT_MIN_SAMPLES
                && d.util_pct >= DEVICE_AWAIT_MIN_UTIL_PCT
                && d.await_change_pct >= DEVICE_AWAIT_RISE_PCT
            {
                return decided(
                    Bottleneck::DeviceBound,
                    format!(
                        "{subject}: await rose {:.0}% across the job at {:.0}% util: requests queued at the device",
                        d.await_change_pct, d.util_pct
                    ),
                    vec![
                        Figure::new("disk await rise", &subject, d.await_change_pct, "%", &format!(">= {DEVICE_AWAIT_RISE_PCT:.0}")),
                        Figure::new("disk util", &subject, d.util_pct, "%", &format!(">= {DEVICE_AWAIT_MIN_UTIL_PCT:.0}")),
                    ],
                );
            }
        }
    }
    None
}

/// A host's CPU use in % of a core (fio's, the node's, others'), with the rule's limit
/// ("" for a context figure).
pub(crate) fn core(name: &str, h: &HostFigures, pct: f64, limit: &str) -> Figure {
    Figure::new(name, &h.host, pct, "% of a core", limit)
}

/// A host's CPU time share in % of all its CPUs (idle, steal), with the rule's limit.
fn all_cpus(name: &str, h: &HostFigures, pct: f64, limit: &str) -> Figure {
    Figure::new(name, &h.host, pct, "% of all CPUs", limit)
}

fn idle_figure(h: &HostFigures) -> Figure {
    all_cpus("host idle", h, h.idle_pct, &format!("< {HOST_IDLE_PCT:.0}"))
}

fn client_cpu(i: &Inputs) -> Option<Diagnosis> {
    for h in i.hosts.iter().filter(|h| h.fio_pct > 0.0) {
        if h.fio_max_proc_pct >= CLIENT_PROC_PCT {
            return decided(
                Bottleneck::ClientCpuBound,
                format!(
                    "a fio process on {} used {:.0}% of a core: the load generator, not the target, was the limit",
                    h.host, h.fio_max_proc_pct
                ),
                vec![
                    core("busiest fio process cpu", h, h.fio_max_proc_pct, &format!(">= {CLIENT_PROC_PCT:.0}")),
                    all_cpus("host idle", h, h.idle_pct, ""),
                ],
            );
        }
        let (idle, of) = match h.fio_cpus_idle_pct {
            Some(v) => (v, "the CPUs fio ran on"),
            None => (h.idle_pct, "the host"),
        };
        if idle < HOST_IDLE_PCT && h.fio_pct >= h.node_pct {
            return decided(
                Bottleneck::ClientCpuBound,
                format!(
                    "{of} ({}) had {idle:.1}% idle while fio used {:.0}% of a core (others {:.0}%): the load generator was short of CPU",
                    h.host, h.fio_pct, h.other_pct
                ),
                vec![
                    Figure::new(
                        &format!("idle of {of}"),
                        &h.host,
                        idle,
                        "%",
                        &format!("< {HOST_IDLE_PCT:.0}"),
                    ),
                    core("fio cpu", h, h.fio_pct, ">= node cpu"),
                    core("node cpu", h, h.node_pct, ""),
                    core("other cpu", h, h.other_pct, ""),
                ],
            );
        }
    }
    None
}

fn node_cpu(i: &Inputs) -> Option<Diagnosis> {
    for h in i.hosts.iter().filter(|h| h.node_pct > 0.0) {
        let all = h.ncpus.max(1) as f64 * 100.0;
        if h.node_pct >= NODE_ALL_CPUS_SHARE * all {
            return decided(
                Bottleneck::NodeCpuBound,
                format!(
                    "the node used {:.0}% of a core on {} ({} CPUs): it was short of CPU",
                    h.node_pct, h.host, h.ncpus
                ),
                vec![core(
                    "node cpu",
                    h,
                    h.node_pct,
                    &format!(">= {:.0}", NODE_ALL_CPUS_SHARE * all),
                )],
            );
        }
        if h.idle_pct < HOST_IDLE_PCT && h.node_pct > h.fio_pct && h.node_pct >= h.other_pct {
            return decided(
                Bottleneck::NodeCpuBound,
                format!(
                    "{} had {:.1}% idle and the node used the most ({:.0}% of a core): the node was short of CPU",
                    h.host, h.idle_pct, h.node_pct
                ),
                vec![
                    idle_figure(h),
                    core("node cpu", h, h.node_pct, "largest"),
                    core("fio cpu", h, h.fio_pct, ""),
                    core("other cpu", h, h.other_pct, ""),
                ],
            );
        }
    }
    None
}

fn network(i: &Inputs) -> Option<Diagnosis> {
    for h in &i.hosts {
        for n in &h.nics {
            if let (Some(u), Some(speed)) = (n.util_pct, n.speed_mbit) {
                if u >= NIC_UTIL_PCT {
                    let subject = format!("{} on {}", n.name, h.host);
                    return decided(
                        Bottleneck::NetworkBound,
                        format!("{subject} ran at {u:.0}% of its {speed} Mb/s link"),
                        vec![
                            Figure::new(
                                "nic util",
                                &subject,
                                u,
                                "%",
                                &format!(">= {NIC_UTIL_PCT:.0}"),
                            ),
                            Figure::new("nic drops", &subject, n.drops_s, "/s", ""),
                        ],
                    );
                }
            }
        }
    }
    None
}

fn noisy(i: &Inputs) -> Option<Diagnosis> {
    for h in &i.hosts {
        let who = h
            .busiest_other
            .as_ref()
            .map(|(n, p)| format!(" (busiest: {n} at {p:.0}%)"))
            .unwrap_or_default();
        if h.steal_pct >= STEAL_PCT {
            return decided(
                Bottleneck::NoisyHost,
                format!(
                    "{}'s hypervisor took {:.1}% of its CPU time (steal): the measurement shared the machine",
                    h.host, h.steal_pct
                ),
                vec![all_cpus("steal", h, h.steal_pct, &format!(">= {STEAL_PCT:.0}"))],
            );
        }
        if h.other_pct >= OTHER_MEAN_PCT {
            return decided(
                Bottleneck::NoisyHost,
                format!(
                    "other processes on {} used {:.0}% of a core on average{who}: the measurement shared the machine",
                    h.host, h.other_pct
                ),
                vec![
                    core("other cpu", h, h.other_pct, &format!(">= {OTHER_MEAN_PCT:.0}")),
                    all_cpus("host idle", h, h.idle_pct, ""),
                ],
            );
        }
        if h.other_peak_pct >= OTHER_PEAK_PCT && h.other_peak_idle_pct < OTHER_PEAK_IDLE_PCT {
            return decided(
                Bottleneck::NoisyHost,
                format!(
                    "for a second, other processes on {} took {:.0}% of a core while it had {:.0}% idle{who}",
                    h.host, h.other_peak_pct, h.other_peak_idle_pct
                ),
                vec![
                    core("other cpu peak", h, h.other_peak_pct, &format!(">= {OTHER_PEAK_PCT:.0}")),
                    all_cpus("host idle then", h, h.other_peak_idle_pct, &format!("< {OTHER_PEAK_IDLE_PCT:.0}")),
                ],
            );
        }
    }
    None
}

fn node_waits(i: &Inputs) -> Option<Diagnosis> {
    let n = i.node?;
    if above_every_ceiling(i) {
        return None;
    }
    let held = n.ceiling_wait_us + n.floor_wait_us;
    if n.lat_mean_us > 0.0 && held >= QOS_WAIT_SHARE * n.lat_mean_us {
        let share = held / n.lat_mean_us * 100.0;
        let by = if n.ceiling_wait_us >= n.floor_wait_us {
            "its ceiling"
        } else {
            "the controller (floors of others)"
        };
        return decided(
            Bottleneck::QosBound,
            format!(
                "requests spent {share:.0}% of their {:.0} us at the node held by {by}",
                n.lat_mean_us
            ),
            vec![
                Figure::new(
                    "qos wait share of node latency",
                    "",
                    share,
                    "%",
                    &format!(">= {:.0}", QOS_WAIT_SHARE * 100.0),
                ),
                Figure::new("ceiling wait", "", n.ceiling_wait_us, "us", ""),
                Figure::new("floor wait", "", n.floor_wait_us, "us", ""),
                Figure::new("node latency", "", n.lat_mean_us, "us", ""),
            ],
        );
    }
    None
}

fn unconstrained(i: &Inputs) -> Diagnosis {
    let mut figures = Vec::new();
    let mut parts = Vec::new();
    for h in &i.hosts {
        figures.extend([
            core("busiest fio process cpu", h, h.fio_max_proc_pct, ""),
            core("node cpu", h, h.node_pct, ""),
            all_cpus("host idle", h, h.idle_pct, ""),
            core("other cpu", h, h.other_pct, ""),
        ]);
        parts.push(format!(
            "{}: fio {:.0}%, node {:.0}%, others {:.0}% of a core, {:.0}% idle",
            h.host, h.fio_pct, h.node_pct, h.other_pct, h.idle_pct
        ));
        if let Some(d) = h.disks.first() {
            figures.push(Figure::new(
                "disk util",
                &format!("{} on {}", d.name, h.host),
                d.util_pct,
                "%",
                "",
            ));
            parts.push(format!("{} {:.0}% util", d.name, d.util_pct));
        }
    }
    Diagnosis {
        bottleneck: Bottleneck::Unconstrained,
        reason: format!("no limit reached ({})", parts.join("; ")),
        figures,
    }
}

/// The diagnosis of one job.
pub fn diagnose(i: &Inputs) -> Diagnosis {
    if let Some((d, short)) = near_limit(i) {
        // The hosts are looked at only for a figure short of the ceiling.
        let host = short.as_ref().and_then(|_| host_rules(i));
        return match (short, host) {
            (Some(measured), Some(host)) if host.bottleneck.discredits_measurement() => {
                short_of_ceiling(host, d, &measured, i)
            }
            _ => d,
        };
    }
    if i.hosts.is_empty() {
        return node_waits(i).unwrap_or_else(|| Diagnosis {
            bottleneck: Bottleneck::NotMeasured,
            reason: "no host samples over the job (tool sets off, or the job ended before the first 1 s sample): the hosts were not examined".into(),
            figures: Vec::new(),
        });
    }
    let d = host_rules(i)
        .or_else(|| node_waits(i))
        .unwrap_or_else(|| unconstrained(i));
    starved::with_pressure(d, i)
}

/// Rules 2 to 7, on the hosts' figures: the first that holds.
fn host_rules(i: &Inputs) -> Option<Diagnosis> {
    let rules: [fn(&Inputs) -> Option<Diagnosis>; 6] = [
        device,
        client_cpu,
        node_cpu,
        network,
        starved::starved,
        noisy,
    ];
    rules.iter().find_map(|rule| rule(i))
}

/// A figure short of its ceiling (rule 1 holds, below [`QOS_SHORT_OF_LIMIT`]) on a host whose figures
/// discredit the measurement: the host's rule is the diagnosis, carrying the ceiling's
/// figures. The ceiling explains a figure at it, not one below it; what held the rest back
/// was the host, so a check that misses the ceiling low proves nothing.
fn short_of_ceiling(host: Diagnosis, qos: Diagnosis, measured: &str, i: &Inputs) -> Diagnosis {
    let mut d = starved::with_pressure(host, i);
    d.reason = format!("{}; {measured}, short of it", d.reason);
    d.figures.extend(qos.figures);
    d
}

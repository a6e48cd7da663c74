#!/usr/bin/env bash
# bench/pressure.sh -- the kernel's pressure stall information (PSI) under the loads a shared
# load generator sees, beside the measurements they spoil: where docs/DIAGNOSIS.md's
# `starved-host` thresholds come from.
#
# For each load it runs two measurements on the embedded node through `qoslab bench` and
# reads back, from the stored tool sets, the share of the job's window in which some task
# waited for a CPU, for I/O and for memory (PSI `some`, exact from the cumulative totals),
# the CPU the job did not use (percent of a core), the run queue, and the verdicts and
# diagnosis qoslab gave:
#   ceiling: a 500 IOPS ceiling, 4k randread QD16 (`iops ~= policy.ceiling +-3%`), 20 s;
#   gp2:     `--profile provisioned --model ebs-gp2` at 100 GiB, bucket x1/400 (a computed
#            5 s burst at 3,000 IOPS, then 300): its three burst checks.
# Loads (LOADS, comma-separated; default all):
#   quiet    nothing added
#   hog      one shell busy loop
#   hogs-dd  two busy loops and a `dd bs=1M count=64 conv=fsync` loop
#   qemu     a qemu TCG guest (Debian's kernel, a busybox init spinning) from QOSLAB_CACHE
#   niced    two busy loops at nice -10 (above the node and fio) and the dd loop
#   dd       the dd loop alone
#   hostile  scripts/stress-tests.sh --hostile's load: two busy loops, the dd loop and the
#            TCG guest
#
# Pure measurement (the verdicts are reported, never asserted). Needs root for nice -10.
# KEEP=DIR keeps each run's results database there (N-LOAD-ceiling.db, N-LOAD-gp2.db): the
# recorded samples of crates/assess/tests/recorded.rs come from such runs.
#   flock /work/wt/heavy.lock env QOSLAB=target/debug/qoslab bench/pressure.sh
set -euo pipefail

BENCH_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "$BENCH_DIR/lib.sh"

LOADS="${LOADS:-quiet,hog,hogs-dd,qemu,niced}"
RUNTIME="${RUNTIME:-20s}"
QOSLAB_CACHE="${QOSLAB_CACHE:-/var/cache/qoslab}"

require_cmds fio python3 busybox cpio
check_fio_nbd
qoslab_available || exit 1
setup_workdir

LOAD_PIDS=()
stop_load() {
    local p
    for p in "${LOAD_PIDS[@]}"; do kill -KILL -- "-$p" 2>/dev/null || true; done
    for p in "${LOAD_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    LOAD_PIDS=()
}
trap 'stop_load; cleanup' EXIT

# Each load runs in a process group of its own (timeout's), killed with it, but in this
# script's session: Linux's autogroups share the CPUs fairly between sessions, so a hog
# niced in a session of its own would not be above the node and fio.
spawn() { timeout 3600 "$@" >/dev/null 2>&1 & LOAD_PIDS+=($!); }
hog() { spawn nice -n "${1:-0}" sh -c 'while :; do :; done'; }
writer() {
    spawn sh -c "while :; do dd if=/dev/zero of='$WORKDIR/fsync.dat' bs=1M count=64 conv=fsync 2>/dev/null; done"
}
guest() {
    local q="$QOSLAB_CACHE/qemu" root="$WORKDIR/guest"
    mkdir -p "$root/bin"
    cp "$(command -v busybox)" "$root/bin/busybox"
    printf '#!/bin/busybox sh\nwhile :; do :; done\n' >"$root/init"
    chmod +x "$root/init"
    (cd "$root" && find . | cpio -o -H newc --quiet) >"$WORKDIR/guest.cpio"
    spawn "$q/usr/bin/qemu-system-x86_64" -L "$q/usr/share/seabios" -L "$q/usr/share/qemu" \
        -accel tcg -m 256 -nographic -no-reboot -nic none \
        -kernel "$(ls "$QOSLAB_CACHE"/kernel/boot/vmlinuz-*)" -initrd "$WORKDIR/guest.cpio" \
        -append "console=ttyS0 panic=-1 quiet"
}

start_load() {
    case "$1" in
        quiet) ;;
        hog) hog ;;
        hogs-dd) hog; hog; writer ;;
        qemu) guest ;;
        niced) hog -10; hog -10; writer ;;
        dd) writer ;;
        hostile) hog; hog; writer; guest ;;
        *) die "unknown load $1 (quiet, hog, hogs-dd, qemu, niced, dd, hostile)" ;;
    esac
    sleep 5
}

cat >"$WORKDIR/ceiling.toml" <<EOF
[bench]
name = "pressure-ceiling"
runtime = "$RUNTIME"
ramp = "2s"

[[policy]]
name = "p500"
fixed = { max_throughput_iops = 500 }

[[volume]]
name = "vol"
size = "1GiB"
policy = "p500"

[[workload]]
name = "randread"
volume = "vol"
fio = { rw = "randread", bs = "4k", iodepth = 16 }
expect = ["iops ~= policy.ceiling +-3%"]
EOF

# The run's jobs as one line each: PSI shares over the window, the CPU not the job's,
# the run queue, the verdicts and the diagnosis.
report() {
    local load=$1 what=$2 db=$3
    "$QOSLAB" results export 1 --db "$db" --format json | python3 -c '
import json, sys
load, what = sys.argv[1], sys.argv[2]
run = json.load(sys.stdin)
series = {s["job_id"]: s for s in run.get("series", [])}
for j in run["jobs"]:
    for h in series.get(j["id"], {}).get("hosts", []):
        smp = [x for x in h["samples"] if x.get("pressure")]
        t = sum(x["interval_ms"] for x in smp) or 1
        p = lambda k: sum(x["pressure"][k] * x["interval_ms"] for x in smp) / t
        n = max(h["ncpus"], 1)
        job = lambda x: x["roles"]["fio"] + x["roles"]["node"] + x["roles"]["harness"]
        busy = lambda x: (100 - x["cpu"]["idle"] - x["cpu"]["iowait"]) * n
        notjob = sum(max(busy(x) - job(x), 0) * x["interval_ms"] for x in smp) / t
        rq = sum(x["run_queue"] for x in smp) / max(len(smp), 1)
        v = " ".join(x["outcome"] for x in j["verdicts"]) or "-"
        d = (j.get("diagnosis") or {}).get("bottleneck", "-")
        m = "; ".join("%s = %.2f" % (x["expectation"].split()[0], x["measured"]) for x in j["verdicts"])
        print("pressure: %-8s %-8s %-10s cpu %5.1f%%  io %5.1f%%  memory %4.1f%%  not-job %5.1f%% of a core  run queue %4.1f  [%s] %s  %s" % (
            load, what, j["name"][:10], p("cpu_some"), p("io_some"), p("memory_some"), notjob, rq, v, d, m))
' "$load" "$what"
}

log "machine: $(nproc) CPUs, kernel $(uname -r), $(git -C "$REPO_ROOT" rev-parse --short HEAD), load average $LOADAVG_START"
IFS=, read -ra loads <<<"$LOADS"
n=0
for load in "${loads[@]}"; do
    n=$((n + 1))
    log "load: $load"
    start_load "$load"
    rm -f "$WORKDIR"/c.db* "$WORKDIR"/g.db*
    "$QOSLAB" bench "$WORKDIR/ceiling.toml" --db "$WORKDIR/c.db" >"$WORKDIR/$load-ceiling.out" 2>&1 || true
    report "$load" ceiling "$WORKDIR/c.db"
    "$QOSLAB" bench --profile provisioned --model ebs-gp2 --volume-size 100GiB --scale 0.0025 \
        --db "$WORKDIR/g.db" >"$WORKDIR/$load-gp2.out" 2>&1 || true
    report "$load" gp2 "$WORKDIR/g.db"
    if [[ -n "${KEEP:-}" ]]; then
        mkdir -p "$KEEP"
        cp "$WORKDIR/c.db" "$KEEP/$n-$load-ceiling.db"
        cp "$WORKDIR/g.db" "$KEEP/$n-$load-gp2.db"
    fi
    stop_load
    sleep 3
done

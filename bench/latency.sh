#!/usr/bin/env bash
# bench/latency.sh -- the emulated array's service latency as fio sees it: a qoslab node
# whose [capacity] declares a service latency, one unlimited volume, fio at QD1 and QD4
# (random reads and writes), and per run the configured time beside fio's median and
# mean latency and its IOPS (QD / latency when the latency is what bounds them).
set -euo pipefail

BENCH_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

usage() {
    cat <<USAGE
Usage: bench/latency.sh [options]

Measure an emulated service latency end to end with fio (nbd engine): QD1 and QD4, 4 KiB
random reads and random writes of --bs-write, on one unlimited volume. Prints a Markdown
table: configured us, fio p50 and mean us, the mean's difference, IOPS.

Options (each also settable via the environment variable shown):
  --read DUR        read service time, fixed part      (READ, default 785us: seed 000)
  --write DUR       write service time, fixed part     (WRITE, default 704us: seed 000)
  --per-kib DUR     per-KiB part, both directions      (PER_KIB, default 0us)
  --bs-write SIZE   write request size (KiB multiple)  (BS_WRITE, default 4k)
  --runtime SEC     measured seconds per run           (RUNTIME, default 10)
  --ramp SEC        unmeasured seconds first           (RAMP, default 2)
  -h, --help        this text

QOSLAB selects the binary (default target/release/qoslab). Needs a quiet machine: run it
under flock /work/wt/bench.lock and read the load average it prints.
USAGE
}

READ="${READ:-785us}"
WRITE="${WRITE:-704us}"
PER_KIB="${PER_KIB:-0us}"
BS_WRITE="${BS_WRITE:-4k}"
RUNTIME="${RUNTIME:-10}"
RAMP="${RAMP:-2}"
while (($#)); do
    case "$1" in
        --read) READ=$2; shift 2 ;;
        --write) WRITE=$2; shift 2 ;;
        --per-kib) PER_KIB=$2; shift 2 ;;
        --bs-write) BS_WRITE=$2; shift 2 ;;
        --runtime) RUNTIME=$2; shift 2 ;;
        --ramp) RAMP=$2; shift 2 ;;
        -h | --help) usage; exit 0 ;;
        *) echo "unknown argument: $1 (see --help)" >&2; exit 1 ;;
    esac
done
export PIN="${PIN:-0}" KEEP_WORKDIR="${KEEP_WORKDIR:-0}"

# shellcheck source=bench/lib.sh
source "$BENCH_DIR/lib.sh"    # cd's to the repo root
require_cmds fio python3
check_fio_nbd
qoslab_available || exit 1
setup_pinning
setup_workdir

DATA_DIR="$WORKDIR/data"
SOCK="$WORKDIR/nbd.sock"
CFG="$WORKDIR/node.toml"
cat >"$CFG" <<TOML
[capacity]
latency = { read = { fixed = "$READ", per_kib = "$PER_KIB" }, write = { fixed = "$WRITE", per_kib = "$PER_KIB" } }

[[volume]]
name = "$EXPORT_NAME"
size = "1GiB"
TOML
start_qoslab "$CFG" "$DATA_DIR" "$SOCK" "$WORKDIR/qoslab.log" || die "qoslab did not start: $(cat "$WORKDIR/qoslab.log")"
log "load before: $(uptime)"
echo "| job | configured us | fio p50 us | fio mean us | mean vs configured | IOPS |"
echo "|---|---|---|---|---|---|"
for spec in "randread 4k 1" "randread 4k 4" "randwrite $BS_WRITE 1" "randwrite $BS_WRITE 4"; do
    read -r rw bs qd <<<"$spec"
    job="$WORKDIR/$rw-$bs-$qd.fio"
    cat >"$job" <<JOB
[job]
ioengine=nbd
uri=$(nbd_uri "$SOCK")
rw=$rw
bs=$bs
iodepth=$qd
size=1G
time_based=1
runtime=$RUNTIME
ramp_time=$RAMP
JOB
    log "$rw $bs QD$qd"
    run_fio "$job" "$job.json" || die "fio failed"
    python3 - "$job.json" "$rw" "$bs" "$qd" "$READ" "$WRITE" "$PER_KIB" <<'PY'
import json, re, sys
path, rw, bs, qd, read, write, per_kib = sys.argv[1:]
def us(d):
    m = re.fullmatch(r"([0-9.]+)\s*(ns|us|µs|ms|s)", d.strip())
    return float(m.group(1)) * {"ns": 1e-3, "us": 1, "µs": 1, "ms": 1e3, "s": 1e6}[m.group(2)]
kib = float(re.fullmatch(r"([0-9]+)k", bs).group(1))
want = us(read if rw == "randread" else write) + us(per_kib) * kib
d = json.load(open(path))["jobs"][0]["read" if rw == "randread" else "write"]
p50 = d["clat_ns"]["percentile"]["50.000000"] / 1e3
mean = d["lat_ns"]["mean"] / 1e3
print(f"| {rw} {bs} QD{qd} | {want:.0f} | {p50:.0f} | {mean:.0f} | {100 * (mean / want - 1):+.1f}% | {d['iops']:.0f} |")
PY
done
log "load after: $(uptime)"

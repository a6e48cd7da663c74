#!/usr/bin/env bash
# bench/accuracy.sh -- ceiling accuracy: configured vs achieved, qoslab vs
# qemu-storage-daemon's throttle group, at the same limits.
#
#   IOPS ceilings (default 100 500 5000 50000): 4k randread, QD16
#   bandwidth ceilings in MiB/s (default 10 100 1000): sequential read, bs 1M, QD8
#
# Each limit gets a fresh server (qoslab: a volume with a fixed policy at that
# ceiling; qsd: a throttle-group object + throttle filter node over the file node).
# One unthrottled run per server and workload is measured too: when a server cannot
# reach a ceiling even unthrottled, the error column measures the machine, not the
# limiter, and is flagged with a dagger.
#
# The shared file is prefilled with random data: qemu's NBD server answers reads of
# holes in a sparse file from block-status without issuing a read through the
# throttle node, so a sparse file lets qsd exceed its ceiling by orders of magnitude.
#
# Pinning: unpinned by default (2 shared cores; see peers.sh); PIN=1 to pin.
set -euo pipefail

BENCH_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

usage() {
    cat <<EOF
Usage: bench/accuracy.sh [options]

Measure configured vs achieved ceilings for qoslab and qemu-storage-daemon (throttle
group) with fio's nbd ioengine; prints a Markdown table (limit, achieved, error %)
and writes JSON results.

Options (each also settable via the environment variable shown):
  --runtime SEC      measured seconds per run                 (RUNTIME, default 10)
  --ramp SEC         ramp seconds per run, not measured       (RAMP, default 2)
  --iops LIST        IOPS ceilings, comma separated   (IOPS_LIMITS, default 100,500,5000,50000)
  --bw LIST          MiB/s ceilings, comma separated  (BW_LIMITS, default 10,100,1000)
  --bw-bs SIZE       block size of the bandwidth runs         (BW_BS, default 1M)
  --size-mib N       size of the shared file in MiB           (SIZE_MIB, default 1024)
  --servers LIST     comma list from qoslab,qsd               (SERVERS, default qoslab,qsd)
  --no-baseline      skip the unthrottled capacity runs       (BASELINE=0)
  --qoslab-capacity TOML  body of a [capacity] table for every qoslab node (QOSLAB_CAPACITY),
                     e.g. 'latency = { read = { fixed = "785us" } }': ceilings with the
                     emulated array on (docs/CONFIG.md); default none
  --out PATH         JSON results path (OUT, default bench/results/accuracy-<date>.json)
  --pin              server on CPU 0, fio on CPU 1            (PIN=1; default unpinned)
  --keep             keep the temp work dir (fio JSON, logs)  (KEEP_WORKDIR=1)
  -h, --help         this text

Other environment: QOSLAB (binary, default target/release/qoslab relative to the repo
root), QSD_AIO, START_TIMEOUT (s, default 30), TMPDIR.

qoslab bandwidth ceilings use max_throughput_mbps (MB = 2^20 bytes); qsd uses
limits.bps-total = MiB * 1048576 and limits.iops-total = N.

Exit status: 0 all requested measurements done; 3 something was skipped or failed
(e.g. qoslab binary missing); 1 setup error.
EOF
}

RUNTIME="${RUNTIME:-10}"
RAMP="${RAMP:-2}"
SIZE_MIB="${SIZE_MIB:-1024}"
IOPS_LIMITS="${IOPS_LIMITS:-100,500,5000,50000}"
BW_LIMITS="${BW_LIMITS:-10,100,1000}"
BW_BS="${BW_BS:-1M}"
SERVERS="${SERVERS:-qoslab,qsd}"
BASELINE="${BASELINE:-1}"
QOSLAB_CAPACITY="${QOSLAB_CAPACITY:-}"
OUT="${OUT:-}"
IOPS_BS=4k
IOPS_QD=16
BW_QD=8

while (($#)); do
    case "$1" in
        --runtime) RUNTIME=$2; shift 2 ;;
        --ramp) RAMP=$2; shift 2 ;;
        --iops) IOPS_LIMITS=$2; shift 2 ;;
        --bw) BW_LIMITS=$2; shift 2 ;;
        --bw-bs) BW_BS=$2; shift 2 ;;
        --size-mib) SIZE_MIB=$2; shift 2 ;;
        --servers) SERVERS=$2; shift 2 ;;
        --no-baseline) BASELINE=0; shift ;;
        --qoslab-capacity) QOSLAB_CAPACITY=$2; shift 2 ;;
        --out) OUT=$2; shift 2 ;;
        --pin) PIN=1; shift ;;
        --keep) KEEP_WORKDIR=1; shift ;;
        -h | --help) usage; exit 0 ;;
        *) echo "unknown argument: $1 (see --help)" >&2; exit 1 ;;
    esac
done
export PIN="${PIN:-0}" KEEP_WORKDIR="${KEEP_WORKDIR:-0}"

# shellcheck source=bench/lib.sh
source "$BENCH_DIR/lib.sh"    # cd's to the repo root

[[ "$RUNTIME" =~ ^[0-9]+$ && "$RAMP" =~ ^[0-9]+$ && "$SIZE_MIB" =~ ^[0-9]+$ ]] ||
    die "RUNTIME, RAMP and SIZE_MIB must be non-negative integers"
((RUNTIME > 0 && SIZE_MIB > 0)) || die "RUNTIME and SIZE_MIB must be > 0"
IFS=, read -r -a IOPS_LIST <<<"$IOPS_LIMITS"
IFS=, read -r -a BW_LIST <<<"$BW_LIMITS"
IFS=, read -r -a SERVER_LIST <<<"$SERVERS"
for v in "${IOPS_LIST[@]}" "${BW_LIST[@]}"; do
    [[ "$v" =~ ^[1-9][0-9]*$ ]] || die "limits must be positive integers, got '$v'"
done
for s in "${SERVER_LIST[@]}"; do
    case "$s" in qoslab | qsd) ;; *) die "unknown server '$s' in --servers" ;; esac
done
OUT="${OUT:-bench/results/accuracy-$(date +%Y%m%d-%H%M%S).json}"

require_cmds fio nbdinfo qemu-storage-daemon python3 awk sed getconf
check_fio_nbd
setup_pinning
setup_workdir
mkdir -p "$(dirname "$OUT")"

DATA_DIR="$WORKDIR/data"
VOL_FILE="$DATA_DIR/volumes/$EXPORT_NAME.img"   # qoslab's backing file; qsd uses it too
SOCK="$WORKDIR/nbd.sock"
RESULTS="$WORKDIR/results.jsonl"
: >"$RESULTS"
STATUS=0
QOSLAB_OK=1

# write_qoslab_config FILE KIND LIMIT  (LIMIT 0 = no policy)
write_qoslab_config() {
    local f=$1 kind=$2 limit=$3 key
    [[ "$kind" == iops ]] && key=max_throughput_iops || key=max_throughput_mbps
    {
        printf '[node]\ndata_dir = "%s"\nlisten_unix = "%s"\n\n' "$DATA_DIR" "$SOCK"
        if [[ -n "$QOSLAB_CAPACITY" ]]; then
            printf '[capacity]\n%s\n\n' "$QOSLAB_CAPACITY"
        fi
        if ((limit > 0)); then
            printf '[[policy]]\nname = "ceiling"\nfixed = { %s = %s }\n\n' "$key" "$limit"
        fi
        printf '[[volume]]\nname = "%s"\nsize = "%s"\n' "$EXPORT_NAME" "$(size_string "$SIZE_MIB")"
        if ((limit > 0)); then printf 'policy = "ceiling"\n'; fi
    } >"$f"
}

# start_limited SERVER KIND LIMIT -- start SERVER with that ceiling (0 = none).
start_limited() {
    local s=$1 kind=$2 limit=$3 tag="$1-$2-$3" throttle=""
    case "$s" in
        qoslab)
            write_qoslab_config "$WORKDIR/$tag.toml" "$kind" "$limit"
            start_qoslab "$WORKDIR/$tag.toml" "$DATA_DIR" "$SOCK" "$WORKDIR/$tag.log"
            ;;
        qsd)
            if ((limit > 0)); then
                if [[ "$kind" == iops ]]; then
                    throttle="limits.iops-total=$limit"
                else
                    throttle="limits.bps-total=$((limit * 1048576))"
                fi
            fi
            start_qsd "$VOL_FILE" "$SOCK" "$WORKDIR/$tag.log" "$throttle"
            ;;
    esac
}

# measure SERVER KIND LIMIT -- one server start, one fio run, one record.
measure() {
    local s=$1 kind=$2 limit=$3 tag="$1-$2-$3" jobf out rec_args
    rec_args=(--server "$s" --job "$kind" --limit-kind "$kind" --limit "$limit")
    if [[ "$s" == qoslab && "$QOSLAB_OK" != 1 ]]; then
        python3 "$PY_HELPER" failed "${rec_args[@]}" --skipped \
            --reason "qoslab binary not found at $QOSLAB" >>"$RESULTS"
        return 0
    fi
    jobf="$WORKDIR/$tag.fio"
    out="$WORKDIR/$tag.json"
    if [[ "$kind" == iops ]]; then
        write_job "$jobf" "$(nbd_uri "$SOCK")" randread "$IOPS_BS" "$IOPS_QD"
    else
        write_job "$jobf" "$(nbd_uri "$SOCK")" read "$BW_BS" "$BW_QD"
    fi
    log "$s: $kind ceiling ${limit/#0/none}"
    if ! start_limited "$s" "$kind" "$limit"; then
        python3 "$PY_HELPER" failed "${rec_args[@]}" --reason "server failed to start" >>"$RESULTS"
        STATUS=3
        return 0
    fi
    if run_fio "$jobf" "$out"; then
        python3 "$PY_HELPER" summarize "$out" "${rec_args[@]}" \
            --server-cpu-s "$LAST_SERVER_CPU_S" --ramp "$RAMP" >>"$RESULTS"
    else
        python3 "$PY_HELPER" failed "${rec_args[@]}" --reason "fio failed" >>"$RESULTS"
        STATUS=3
    fi
    stop_server
}

# ------------------------------------------------------------------ main ---
for s in "${SERVER_LIST[@]}"; do
    if [[ "$s" == qoslab ]] && ! qoslab_available; then
        QOSLAB_OK=0
        STATUS=3
    fi
done

prefill "$VOL_FILE" "$SIZE_MIB"
warm_cache "$VOL_FILE"

for kind in iops bw; do
    if [[ "$kind" == iops ]]; then limits=("${IOPS_LIST[@]}"); else limits=("${BW_LIST[@]}"); fi
    if [[ "$BASELINE" == 1 ]]; then limits=(0 "${limits[@]}"); fi
    for limit in "${limits[@]}"; do
        for s in "${SERVER_LIST[@]}"; do
            measure "$s" "$kind" "$limit"
        done
    done
done

META="$WORKDIR/meta.json"
machine_meta "$META"
python3 "$PY_HELPER" accuracy-report --results "$RESULTS" --meta "$META" --out "$OUT" \
    --iops-workload "${IOPS_BS} randread QD${IOPS_QD}" \
    --bw-workload "seq read bs=${BW_BS} QD${BW_QD}"
log "JSON results: $OUT"
if [[ "$QOSLAB_OK" != 1 ]]; then
    err "qoslab rows are missing: qoslab binary not found at $QOSLAB; build with: cargo build --release"
fi
if ((STATUS != 0)); then
    err "some measurements are missing; exit status $STATUS"
fi
exit "$STATUS"

#!/usr/bin/env bash
# bench/peers.sh -- qoslab vs nbdkit vs qemu-storage-daemon, one run, same file.
#
# Servers (one at a time, all exporting the same prefilled file over a Unix socket):
#   qoslab        qoslab serve, volume without a policy
#   qoslab-far    qoslab serve, volume with a fixed 10,000,000 IOPS ceiling (far above
#                 anything reachable) -> measures the cost of the policy machinery
#   nbdkit        nbdkit file plugin (default --threads, i.e. 16; NBDKIT_THREADS= to change)
#   qsd           qemu-storage-daemon, file node cache.direct=off aio=threads (QSD_AIO= to change)
#   qoslab-base, qoslab-base-far
#                 the same two qoslab setups with another build (QOSLAB_BASE=/path/to/qoslab,
#                 e.g. main's): before/after in one run, interleaved, on the same file
#
# Pinning: UNPINNED by default. The box has 2 cores shared with other work; pinning the
# server to one core and fio to the other would cap every multi-threaded server at one
# core, whereas unpinned the scheduler balances and all servers get the same treatment.
# PIN=1 (or --pin) puts the server on CPU 0 and fio on CPU 1 via taskset; the choice is
# recorded in the output ("pinned").
set -euo pipefail

BENCH_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

usage() {
    cat <<EOF
Usage: bench/peers.sh [options]

Compare qoslab (no policy / far-ceiling policy) with nbdkit and qemu-storage-daemon on
one prefilled file, using fio's nbd ioengine. Prints Markdown tables (absolute figures,
ratios qoslab/nbdkit and qoslab/qsd, server CPU per request, policy overhead) and writes
JSON results. CPU per request (server CPU time / requests served) is the figure to trust
on a shared machine: load steals wall-clock time from client and server alike.

Workloads: 4k randread QD32, 4k randwrite QD32, 1M seq read QD8, 4k randread QD1 (p50).

Options (each also settable via the environment variable shown):
  --runtime SEC      measured seconds per job                 (RUNTIME, default 10)
  --ramp SEC         ramp seconds per job, not measured       (RAMP, default 2)
  --size-mib N       size of the shared file in MiB           (SIZE_MIB, default 1024)
  --servers LIST     comma list from qoslab,qoslab-far,nbdkit,qsd,qoslab-base,qoslab-base-far
                                                              (SERVERS, default the first four;
                                                              the base ones run QOSLAB_BASE)
  --jobs LIST        comma list of workloads to run, from randread4k_qd32,randwrite4k_qd32,
                     seqread1m_qd8,randread4k_qd1 (JOBS, default all four; the tables
                     show n/a for the others), e.g. --jobs randread4k_qd1 for QD1 only
  --repeat N         rounds; each round restarts every server in turn (interleaved,
                     so drift hits all alike); tables show medians  (REPEAT, default 1)
                     Use 3+ before drawing conclusions about a few-% overhead: on a
                     shared 2-core box run-to-run noise is easily 5-10%.
  --out PATH         JSON results path     (OUT, default bench/results/peers-<date>.json)
  --pin              server on CPU 0, fio on CPU 1            (PIN=1; default unpinned)
  --keep             keep the temp work dir (fio JSON, logs)  (KEEP_WORKDIR=1)
  -h, --help         this text

Other environment: QOSLAB (binary, default target/release/qoslab relative to the repo
root), NBDKIT_THREADS, QSD_AIO, START_TIMEOUT (s, default 30), TMPDIR (where the
work dir and the ${SIZE_MIB:-1024} MiB file go).

Exit status: 0 all requested measurements done; 3 some server was skipped or failed
(e.g. qoslab binary missing) -- the tables still show everything that was measured;
1 setup error.
EOF
}

RUNTIME="${RUNTIME:-10}"
RAMP="${RAMP:-2}"
SIZE_MIB="${SIZE_MIB:-1024}"
SERVERS="${SERVERS:-qoslab,qoslab-far,nbdkit,qsd}"
REPEAT="${REPEAT:-1}"
# The workloads, in table order (their fio parameters: JOB_SPEC below).
ALL_JOBS=randread4k_qd32,randwrite4k_qd32,seqread1m_qd8,randread4k_qd1
JOBS="${JOBS:-$ALL_JOBS}"
OUT="${OUT:-}"

while (($#)); do
    case "$1" in
        --runtime) RUNTIME=$2; shift 2 ;;
        --ramp) RAMP=$2; shift 2 ;;
        --size-mib) SIZE_MIB=$2; shift 2 ;;
        --servers) SERVERS=$2; shift 2 ;;
        --repeat) REPEAT=$2; shift 2 ;;
        --jobs) JOBS=$2; shift 2 ;;
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

[[ "$RUNTIME" =~ ^[0-9]+$ && "$RAMP" =~ ^[0-9]+$ && "$SIZE_MIB" =~ ^[0-9]+$ && "$REPEAT" =~ ^[0-9]+$ ]] ||
    die "RUNTIME, RAMP, SIZE_MIB and REPEAT must be non-negative integers"
((RUNTIME > 0 && SIZE_MIB > 0 && REPEAT > 0)) || die "RUNTIME, SIZE_MIB and REPEAT must be > 0"
IFS=, read -r -a SERVER_LIST <<<"$SERVERS"
for s in "${SERVER_LIST[@]}"; do
    case "$s" in qoslab | qoslab-far | nbdkit | qsd) ;;
        qoslab-base | qoslab-base-far) [[ -x "${QOSLAB_BASE:-}" ]] || die "$s needs QOSLAB_BASE=/path/to/qoslab" ;;
        *) die "unknown server '$s' in --servers" ;;
    esac
done
# job key -> "rw bs iodepth"
declare -A JOB_SPEC=(
    [randread4k_qd32]="randread 4k 32"
    [randwrite4k_qd32]="randwrite 4k 32"
    [seqread1m_qd8]="read 1M 8"
    [randread4k_qd1]="randread 4k 1"
)
IFS=, read -r -a JOB_KEYS <<<"$JOBS"
((${#JOB_KEYS[@]} > 0)) || die "--jobs is empty (allowed: $ALL_JOBS)"
for j in "${JOB_KEYS[@]}"; do
    [[ -n "${JOB_SPEC[$j]:-}" ]] || die "unknown job '$j' in --jobs (allowed: $ALL_JOBS)"
done
OUT="${OUT:-bench/results/peers-$(date +%Y%m%d-%H%M%S).json}"

require_cmds fio nbdkit nbdinfo qemu-storage-daemon python3 awk sed getconf
check_fio_nbd
setup_pinning
setup_workdir
mkdir -p "$(dirname "$OUT")"

DATA_DIR="$WORKDIR/data"
VOL_FILE="$DATA_DIR/volumes/$EXPORT_NAME.img"   # qoslab's backing file; shared by all
SOCK="$WORKDIR/nbd.sock"
RESULTS="$WORKDIR/results.jsonl"
: >"$RESULTS"
STATUS=0
NOTES=()


write_qoslab_config() {   # FILE POLICY_TOML_OR_EMPTY
    local f=$1 policy=$2
    {
        printf '[node]\ndata_dir = "%s"\nlisten_unix = "%s"\n\n' "$DATA_DIR" "$SOCK"
        if [[ -n "$policy" ]]; then
            printf '[[policy]]\nname = "bench"\nfixed = { %s }\n\n' "$policy"
        fi
        printf '[[volume]]\nname = "%s"\nsize = "%s"\n' "$EXPORT_NAME" "$(size_string "$SIZE_MIB")"
        if [[ -n "$policy" ]]; then printf 'policy = "bench"\n'; fi
    } >"$f"
}

start_named() {   # SERVER -> starts it (sets SERVER_PID); non-zero on failure
    local s=$1 logf="$WORKDIR/$1-r$ROUND.log"
    case "$s" in
        qoslab) start_qoslab "$WORKDIR/qoslab-nopolicy.toml" "$DATA_DIR" "$SOCK" "$logf" ;;
        qoslab-far) start_qoslab "$WORKDIR/qoslab-far.toml" "$DATA_DIR" "$SOCK" "$logf" ;;
        qoslab-base) start_qoslab "$WORKDIR/qoslab-nopolicy.toml" "$DATA_DIR" "$SOCK" "$logf" "$QOSLAB_BASE" ;;
        qoslab-base-far) start_qoslab "$WORKDIR/qoslab-far.toml" "$DATA_DIR" "$SOCK" "$logf" "$QOSLAB_BASE" ;;
        nbdkit) start_nbdkit "$VOL_FILE" "$SOCK" "$logf" ;;
        qsd) start_qsd "$VOL_FILE" "$SOCK" "$logf" ;;
    esac
}

record_failed_all() {   # SERVER REASON [--skipped]
    local j
    for j in "${JOB_KEYS[@]}"; do
        python3 "$PY_HELPER" failed --server "$1" --job "$j" --round "$ROUND" --reason "$2" "${@:3}" >>"$RESULTS"
    done
}

# run_job SERVER JOBKEY -- run one workload against the running server, append a record.
run_job() {
    local s=$1 j=$2 rw bs qd jobf out
    read -r rw bs qd <<<"${JOB_SPEC[$j]}"
    jobf="$WORKDIR/$j.fio"
    out="$WORKDIR/$s-$j-r$ROUND.json"
    write_job "$jobf" "$(nbd_uri "$SOCK")" "$rw" "$bs" "$qd"
    log "  [round $ROUND/$REPEAT] $s: $j ($rw bs=$bs QD$qd, ${RAMP}s ramp + ${RUNTIME}s)"
    if run_fio "$jobf" "$out"; then
        python3 "$PY_HELPER" summarize "$out" --server "$s" --job "$j" --round "$ROUND" \
            --server-cpu-s "$LAST_SERVER_CPU_S" --ramp "$RAMP" >>"$RESULTS"
    else
        python3 "$PY_HELPER" failed --server "$s" --job "$j" --round "$ROUND" --reason "fio failed" >>"$RESULTS"
        STATUS=3
    fi
}

# ------------------------------------------------------------------ main ---
prefill "$VOL_FILE" "$SIZE_MIB"
write_qoslab_config "$WORKDIR/qoslab-nopolicy.toml" ""
write_qoslab_config "$WORKDIR/qoslab-far.toml" "max_throughput_iops = 10000000"

QOSLAB_OK=1
for s in "${SERVER_LIST[@]}"; do
    if [[ "$s" == qoslab* ]] && ((QOSLAB_OK)) && ! qoslab_available; then
        QOSLAB_OK=0
        NOTES+=("qoslab rows skipped: qoslab binary not found at $QOSLAB (cargo build --release)")
        STATUS=3
    fi
done

for ((ROUND = 1; ROUND <= REPEAT; ROUND++)); do
    for s in "${SERVER_LIST[@]}"; do
        if [[ "$s" == qoslab* ]] && ((!QOSLAB_OK)); then
            record_failed_all "$s" "qoslab binary not found at $QOSLAB" --skipped
            continue
        fi
        warm_cache "$VOL_FILE"
        log "[round $ROUND/$REPEAT] starting $s"
        if ! start_named "$s"; then
            record_failed_all "$s" "server failed to start (see log)"
            NOTES+=("$s failed to start in round $ROUND")
            STATUS=3
            continue
        fi
        for j in "${JOB_KEYS[@]}"; do
            run_job "$s" "$j"
            if ! kill -0 "$SERVER_PID" 2>/dev/null; then
                err "$s died during $j; log:"
                tail -n 20 "$WORKDIR/$s-r$ROUND.log" >&2 || true
                NOTES+=("$s died during $j in round $ROUND")
                STATUS=3
                break
            fi
        done
        stop_server
    done
done

META="$WORKDIR/meta.json"
machine_meta "$META"
note_args=()
for n in "${NOTES[@]}"; do note_args+=(--note "$n"); done
python3 "$PY_HELPER" peers-report --results "$RESULTS" --meta "$META" --out "$OUT" \
    --size-mib "$SIZE_MIB" "${note_args[@]}"
log "JSON results: $OUT"
if ((STATUS != 0)); then
    err "some measurements are missing (see notes above); exit status $STATUS"
fi
exit "$STATUS"

# shellcheck shell=bash
# Shared helpers for bench/peers.sh and bench/accuracy.sh. Source it; do not run it.
#
# Provides: logging, prerequisite checks, a temp work dir + EXIT trap that stops
# every server this script started, start/stop functions for qoslab, nbdkit and
# qemu-storage-daemon, a fio job writer/runner, and server CPU-time sampling.
#
# Callers must set BENCH_DIR (directory of this file) before sourcing.

BENCH_DIR="${BENCH_DIR:?BENCH_DIR must be set before sourcing lib.sh}"
REPO_ROOT="$(cd "$BENCH_DIR/.." && pwd)"
cd "$REPO_ROOT"

QOSLAB="${QOSLAB:-target/release/qoslab}"
PY_HELPER="$BENCH_DIR/benchlib.py"
EXPORT_NAME="${EXPORT_NAME:-vol}"
# Seconds to wait for a server to become ready (socket + NBD handshake).
START_TIMEOUT="${START_TIMEOUT:-30}"

# PIN=1: server on CPU 0, fio on CPU 1 (taskset). Default is unpinned; see the
# comment in the calling script for why.
PIN="${PIN:-0}"
SERVER_PIN=()
FIO_PIN=()

SERVER_PIDS=()      # every server we started and have not yet reaped
FIO_PID=""          # the fio run in progress, if any
WORKDIR=""

log()  { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
warn() { printf '[%s] WARNING: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
err()  { printf '[%s] ERROR: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die()  { err "$*"; exit 1; }

# require_cmds CMD... -- fail with one clear message listing everything missing.
require_cmds() {
    local missing=() c
    for c in "$@"; do
        command -v "$c" >/dev/null 2>&1 || missing+=("$c")
    done
    if ((${#missing[@]})); then
        err "missing prerequisites: ${missing[*]}"
        err "install them first (Debian packages: fio nbdkit libnbd-bin qemu-utils [qemu-storage-daemon] python3);"
        err "this script does not install anything."
        exit 1
    fi
}

# check_fio_nbd -- fio must have been built with the nbd ioengine.
check_fio_nbd() {
    if ! fio --enghelp=nbd >/dev/null 2>&1; then
        die "fio ($(fio --version)) has no 'nbd' ioengine; install a fio built with libnbd"
    fi
}

# qoslab_available -- 0 if the qoslab binary is executable, else prints why.
qoslab_available() {
    if [[ ! -x "$QOSLAB" ]]; then
        err "qoslab binary not found at $QOSLAB (repo root $REPO_ROOT); build with: cargo build --release  (or set QOSLAB=/path/to/qoslab)"
        return 1
    fi
    return 0
}

setup_pinning() {
    if [[ "$PIN" == 1 ]]; then
        require_cmds taskset
        if (($(nproc) < 2)); then
            warn "PIN=1 needs >= 2 CPUs; running unpinned"
            return
        fi
        SERVER_PIN=(taskset -c 0)
        FIO_PIN=(taskset -c 1)
    fi
}

setup_workdir() {
    WORKDIR="$(mktemp -d "${TMPDIR:-/tmp}/qoslab-bench.XXXXXX")"
    trap cleanup EXIT
    set -E
    trap 'err "unexpected failure at ${BASH_SOURCE[0]##*/}:$LINENO: $BASH_COMMAND"' ERR
    trap 'err "interrupted"; exit 130' INT
    trap 'err "terminated"; exit 143' TERM
    LOADAVG_START=$(cut -d' ' -f1-3 /proc/loadavg)
    log "work dir: $WORKDIR (load average $LOADAVG_START)"
}

cleanup() {
    local rc=$? pid
    trap - ERR
    if ((rc != 0)) && ((${#SERVER_PIDS[@]})); then
        log "exiting with status $rc; stopping servers we started"
    fi
    if [[ -n "$FIO_PID" ]]; then stop_pid "$FIO_PID"; fi
    for pid in "${SERVER_PIDS[@]}"; do
        if [[ -n "$pid" ]]; then stop_pid "$pid"; fi
    done
    SERVER_PIDS=()
    if [[ -n "$WORKDIR" && -d "$WORKDIR" ]]; then
        if [[ "${KEEP_WORKDIR:-0}" == 1 ]]; then
            log "KEEP_WORKDIR=1: leaving $WORKDIR"
        else
            rm -rf -- "$WORKDIR"
        fi
    fi
    exit "$rc"
}

# prefill FILE SIZE_MIB -- create FILE filled with random data (no holes: qsd's
# NBD server answers reads of holes from block-status without a real read, which
# would bypass its throttle and flatter its IOPS).
prefill() {
    local file=$1 mib=$2
    mkdir -p "$(dirname "$file")"
    log "prefilling $file with ${mib} MiB of random data"
    head -c "$((mib * 1048576))" /dev/urandom >"$file"
    sync "$file" 2>/dev/null || true
}

# warm_cache FILE -- read the file once so every server starts with it in page cache.
warm_cache() { cat -- "$1" >/dev/null; }

# size_string MIB -- size in the form qoslab's config expects ("1GiB" / "512MiB").
size_string() {
    local mib=$1
    if ((mib % 1024 == 0)); then echo "$((mib / 1024))GiB"; else echo "${mib}MiB"; fi
}

# ---------------------------------------------------------------- servers ---

# _remove_pid PID -- drop PID from SERVER_PIDS.
_remove_pid() {
    local keep=() p
    for p in "${SERVER_PIDS[@]}"; do
        if [[ "$p" != "$1" ]]; then keep+=("$p"); fi
    done
    SERVER_PIDS=("${keep[@]}")
}

# stop_pid PID -- SIGTERM, wait up to 10 s, then SIGKILL. Only ever our own pids.
stop_pid() {
    local pid=$1 i
    kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 0; }
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        warn "pid $pid did not exit on SIGTERM within 10 s; sending SIGKILL"
        kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
}

# wait_ready PID SOCK LOG [READY_REGEX] -- wait until the process is alive, the
# socket exists, (optionally) LOG matches READY_REGEX, and an NBD handshake for
# EXPORT_NAME succeeds. Returns 1 (after printing the log tail) on failure.
wait_ready() {
    local pid=$1 sock=$2 logf=$3 ready_re=${4:-} deadline
    deadline=$((SECONDS + START_TIMEOUT))
    while ((SECONDS < deadline)); do
        if ! kill -0 "$pid" 2>/dev/null; then
            err "server (pid $pid) exited during startup; log $logf:"
            tail -n 20 "$logf" >&2 || true
            return 1
        fi
        if [[ -S "$sock" ]] && { [[ -z "$ready_re" ]] || grep -qE "$ready_re" "$logf"; } &&
            nbdinfo --size "$(nbd_uri "$sock")" >/dev/null 2>&1; then
            return 0
        fi
        sleep 0.1
    done
    err "server (pid $pid) not ready after ${START_TIMEOUT}s (socket $sock); log $logf:"
    tail -n 20 "$logf" >&2 || true
    return 1
}

nbd_uri() { printf 'nbd+unix:///%s?socket=%s' "$EXPORT_NAME" "$1"; }

# All start_* functions set SERVER_PID and SERVER_SOCK, and return non-zero if
# the server failed to come up (the process is stopped in that case).

# start_qoslab CONFIG_TOML DATA_DIR SOCK LOG [BINARY]  (BINARY: default $QOSLAB)
start_qoslab() {
    local cfg=$1 data=$2 sock=$3 logf=$4 bin=${5:-$QOSLAB}
    rm -f "$sock"
    # No REST API: the scripts do not use it, and 8080 may belong to another node.
    "${SERVER_PIN[@]}" "$bin" serve --config "$cfg" --data-dir "$data" --listen-unix "$sock" \
        --listen-http off >"$logf" 2>&1 &
    SERVER_PID=$!
    SERVER_SOCK=$sock
    SERVER_PIDS+=("$SERVER_PID")
    if ! wait_ready "$SERVER_PID" "$sock" "$logf" '^qoslab: ready'; then
        stop_server
        return 1
    fi
}

# start_nbdkit FILE SOCK LOG  (threads: NBDKIT_THREADS, default nbdkit's own = 16)
start_nbdkit() {
    local file=$1 sock=$2 logf=$3 extra=()
    if [[ -n "${NBDKIT_THREADS:-}" ]]; then extra+=(--threads "$NBDKIT_THREADS"); fi
    rm -f "$sock"
    "${SERVER_PIN[@]}" nbdkit --foreground --exit-with-parent "${extra[@]}" \
        -U "$sock" file "$file" >"$logf" 2>&1 &
    SERVER_PID=$!
    SERVER_SOCK=$sock
    SERVER_PIDS+=("$SERVER_PID")
    if ! wait_ready "$SERVER_PID" "$sock" "$logf"; then
        stop_server
        return 1
    fi
}

# start_qsd FILE SOCK LOG [THROTTLE_GROUP_LIMITS]
#   THROTTLE_GROUP_LIMITS e.g. "limits.iops-total=500" or "limits.bps-total=104857600";
#   when given, a throttle filter node over the file node is exported instead.
start_qsd() {
    local file=$1 sock=$2 logf=$3 limits=${4:-} args node=f
    args=(--blockdev "driver=file,node-name=f,filename=$file,cache.direct=off,aio=${QSD_AIO:-threads}")
    if [[ -n "$limits" ]]; then
        args+=(--object "throttle-group,id=tg0,$limits"
            --blockdev "driver=throttle,node-name=t,throttle-group=tg0,file=f")
        node=t
    fi
    args+=(--nbd-server "addr.type=unix,addr.path=$sock"
        --export "type=nbd,id=e,node-name=$node,name=$EXPORT_NAME,writable=on")
    rm -f "$sock"
    "${SERVER_PIN[@]}" qemu-storage-daemon "${args[@]}" >"$logf" 2>&1 &
    SERVER_PID=$!
    SERVER_SOCK=$sock
    SERVER_PIDS+=("$SERVER_PID")
    if ! wait_ready "$SERVER_PID" "$sock" "$logf"; then
        stop_server
        return 1
    fi
}

# stop_server -- stop the current server (SERVER_PID) and remove its socket.
stop_server() {
    [[ -n "${SERVER_PID:-}" ]] || return 0
    stop_pid "$SERVER_PID"
    _remove_pid "$SERVER_PID"
    if [[ -n "${SERVER_SOCK:-}" ]]; then rm -f "$SERVER_SOCK"; fi
    SERVER_PID=""
    SERVER_SOCK=""
}

# proc_cpu_ticks PID -- utime+stime (all threads) of PID in clock ticks.
proc_cpu_ticks() {
    local stat rest
    stat=$(<"/proc/$1/stat") || { echo 0; return; }
    rest=${stat##*) }           # fields after "(comm) "
    # shellcheck disable=SC2086
    set -- $rest                # $1 = state (field 3) ... $12 = utime (14), $13 = stime (15)
    echo $((${12} + ${13}))
}
CLK_TCK=$(getconf CLK_TCK)

# ------------------------------------------------------------------- fio ----

# write_job FILE URI RW BS IODEPTH
write_job() {
    local f=$1 uri=$2 rw=$3 bs=$4 qd=$5
    cat >"$f" <<EOF
; generated by bench/$(basename "$0")
[global]
ioengine=nbd
uri=$uri
rw=$rw
bs=$bs
iodepth=$qd
numjobs=1
time_based=1
runtime=$RUNTIME
ramp_time=$RAMP
randrepeat=0
group_reporting=1

[$(basename "$f" .fio)]
EOF
}

# run_fio JOBFILE OUT_JSON -- run fio; OUT_JSON gets pure JSON (fio's nbd
# engine prints "fio: connected to NBD server" before the JSON document).
# Also sets LAST_SERVER_CPU_S to the server's CPU seconds during the run.
run_fio() {
    local job=$1 out=$2 raw=$2.raw t0 t1
    t0=$(proc_cpu_ticks "$SERVER_PID")
    # fio runs in the background + wait, so a signal to this script is acted on at
    # once (bash defers traps while a foreground child runs); cleanup() stops it.
    local rc=0
    "${FIO_PIN[@]}" fio --output-format=json "$job" >"$raw" 2>"$out.stderr" &
    FIO_PID=$!
    wait "$FIO_PID" || rc=$?
    FIO_PID=""
    if ((rc != 0)); then
        err "fio failed for $job:"
        cat "$out.stderr" >&2
        return 1
    fi
    t1=$(proc_cpu_ticks "$SERVER_PID")
    LAST_SERVER_CPU_S=$(awk -v a="$t0" -v b="$t1" -v hz="$CLK_TCK" 'BEGIN{printf "%.3f", (b-a)/hz}')
    if ! sed -n '/^{/,$p' "$raw" >"$out" || [[ ! -s "$out" ]]; then
        err "no JSON in fio output for $job:"
        cat "$raw" "$out.stderr" >&2
        return 1
    fi
}

# machine_meta OUT_JSON -- record the environment the numbers came from.
machine_meta() {
    local qv="n/a"
    if [[ -x "$QOSLAB" ]]; then
        qv=$("$QOSLAB" --version 2>/dev/null | head -n1 || true)
        [[ -n "$qv" ]] || qv="(no --version) $(stat -c '%y' "$QOSLAB")"
    fi
    python3 "$PY_HELPER" meta \
        --fio "$(fio --version)" \
        --kernel "$(uname -r)" \
        --nproc "$(nproc)" \
        --cpu "$(awk -F': ' '/^model name/{print $2; exit}' /proc/cpuinfo)" \
        --nbdkit "$(nbdkit --version 2>/dev/null | head -n1)" \
        --qsd "$(qemu-storage-daemon --version 2>/dev/null | head -n1)" \
        --qoslab "$qv" \
        --qoslab-path "$QOSLAB" \
        --git "$(git -C "$REPO_ROOT" rev-parse --short HEAD 2>/dev/null || echo none)" \
        --pin "$PIN" \
        --loadavg-start "${LOADAVG_START:-}" --loadavg-end "$(cut -d' ' -f1-3 /proc/loadavg)" \
        --runtime "$RUNTIME" --ramp "$RAMP" >"$1"
}

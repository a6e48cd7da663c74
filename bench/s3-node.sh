#!/usr/bin/env bash
# bench/s3-node.sh -- the node's S3 path: 4 KiB GETs (ops/s and server CPU per request)
# and 64 MiB PUTs (MiB/s), driven by curl's SigV4 client (C, --parallel).
#
# Usage: bench/s3-node.sh [--gets N] [--get-conns C] [--puts N] [--put-conns C]
#   --gets N       4 KiB GETs (default 40000), split over 2 curl processes
#   --get-conns C  connections per curl process for GETs (default 16)
#   --puts N       64 MiB PUTs (default 16)
#   --put-conns C  parallel PUTs (default 2)
# Env: QOSLAB (default target/release/qoslab), KEEP_WORKDIR=1 keeps the temp dir.
#
# Prints Markdown rows. Server CPU comes from /proc/PID/stat (utime+stime), so it is the
# node's own work, whatever else the machine runs; wall-clock rates are not (2 shared
# cores, curl on the same machine): record `uptime` with them.
set -euo pipefail
gets=40000 get_conns=16 puts=16 put_conns=2
while [ $# -gt 0 ]; do
    case "$1" in
        --gets) gets=$2; shift 2 ;;
        --get-conns) get_conns=$2; shift 2 ;;
        --puts) puts=$2; shift 2 ;;
        --put-conns) put_conns=$2; shift 2 ;;
        -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
cd "$(dirname "$0")/.."
QOSLAB=${QOSLAB:-target/release/qoslab}
[ -x "$QOSLAB" ] || { echo "no $QOSLAB: cargo build --release -p qoslab" >&2; exit 1; }
command -v curl >/dev/null || { echo "curl is required" >&2; exit 1; }
work=$(mktemp -d /tmp/qoslab-s3bench.XXXXXX)
pid=""
cleanup() {
    local rc=$?
    set +e   # a failing `wait` (the server's TERM status) must not skip the rest
    [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    if [ "${KEEP_WORKDIR:-0}" = 1 ]; then echo "kept $work" >&2; else rm -rf "$work"; fi
    exit "$rc"
}
trap cleanup EXIT
AK=AKIAQOSLABBENCH00001 SK=qoslabbenchsecret00000000000000000000000
echo "root $AK $SK" > "$work/keys"
"$QOSLAB" serve --data-dir "$work/data" --listen-http off --listen-tcp 127.0.0.1:0 \
    --listen-unix "$work/nbd.sock" --listen-s3 127.0.0.1:0 --s3-keys-file "$work/keys" \
    > "$work/serve.log" 2>&1 &
pid=$!
for _ in $(seq 100); do grep -qs "qoslab: ready" "$work/serve.log" && break; sleep 0.1; done
ep=$(sed -n 's/^qoslab: s3: \(http:[^ ]*\).*/\1/p' "$work/serve.log")
[ -n "$ep" ] || { cat "$work/serve.log" >&2; exit 1; }
s3() { curl -sS --no-progress-meter --aws-sigv4 aws:amz:us-east-1:s3 --user "$AK:$SK" \
    -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" "$@"; }
ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
hz=$(getconf CLK_TCK)
s3 -f -X PUT "$ep/bench" >/dev/null
head -c 4096 /dev/urandom > "$work/4k"
s3 -f -T "$work/4k" "$ep/bench/obj4k" >/dev/null
head -c $((64 << 20)) /dev/urandom > "$work/64m"
echo "load before: $(uptime)" >&2

# 4 KiB GETs: two curl processes (one curl thread saturates before the node does).
half=$((gets / 2))
t0=$(ticks); s0=$(date +%s.%N)
for c in 1 2; do
    s3 --parallel --parallel-max "$get_conns" -o /dev/null -w '%{http_code}\n' \
        "$ep/bench/obj4k?c=$c&i=[1-$half]" > "$work/get$c.codes" &
done
wait %2 %3 2>/dev/null || wait
s1=$(date +%s.%N); t1=$(ticks)
ok=$(cat "$work"/get*.codes | grep -c '^200$' || true)
python3 - "$ok" "$gets" "$s0" "$s1" "$t0" "$t1" "$hz" <<'PY'
import sys
ok, n, s0, s1, t0, t1, hz = int(sys.argv[1]), int(sys.argv[2]), *map(float, sys.argv[3:])
secs = s1 - s0
cpu = (t1 - t0) / hz
print(f"| 4 KiB GET | {ok:,} of {n:,} ok | {ok / secs:,.0f} ops/s | server CPU {cpu * 1e6 / ok:.0f} µs/request |")
PY

# 64 MiB PUTs.
t0=$(ticks); s0=$(date +%s.%N)
s3 --parallel --parallel-max "$put_conns" -T "$work/64m" -o /dev/null -w '%{http_code}\n' \
    "$ep/bench/big[1-$puts]" > "$work/put.codes"
s1=$(date +%s.%N); t1=$(ticks)
ok=$(grep -c '^200$' "$work/put.codes" || true)
python3 - "$ok" "$puts" "$s0" "$s1" "$t0" "$t1" "$hz" <<'PY'
import sys
ok, n, s0, s1, t0, t1, hz = int(sys.argv[1]), int(sys.argv[2]), *map(float, sys.argv[3:])
secs = s1 - s0
mib = ok * 64
cpu = (t1 - t0) / hz
print(f"| 64 MiB PUT | {ok} of {n} ok | {mib / secs:,.0f} MiB/s | server CPU {cpu * 1e3 / mib:.1f} ms/MiB |")
PY
echo "load after: $(uptime)" >&2

#!/usr/bin/env bash
# bench/cpu-per-request.sh -- server CPU time per request for a fixed number of I/Os.
#
# Usage: bench/cpu-per-request.sh PID URI [RW BS QD N]
#   PID  the NBD server process (its utime+stime from /proc/PID/stat is sampled)
#   URI  an NBD URI fio's nbd engine accepts, e.g. 'nbd+unix:///vol?socket=/tmp/q.sock'
#   RW BS QD N  fio rw, block size, iodepth, number of I/Os (default: randread 4k 32 200000)
#
# Prints: server CPU µs per request, fio's IOPS and MiB/s, and p50 completion latency.
# Wall-clock rates on a shared 2-core machine swing by ±30% run to run; CPU per request
# does not (load steals wall time, not the work a request costs). Use it for A/B
# comparisons of one server under two settings, e.g.
#   qoslab serve --busy-poll-us 0 ...   vs   qoslab serve ...
#   qoslab serve --mmap-reads ...       vs   qoslab serve ...
set -euo pipefail
if [ $# -lt 2 ] || [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then
    sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
fi
pid=$1 uri=$2 rw=${3:-randread} bs=${4:-4k} qd=${5:-32} n=${6:-200000}
[ -r "/proc/$pid/stat" ] || { echo "no such process: $pid" >&2; exit 1; }
ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT
t0=$(ticks)
fio --name=cpu --ioengine=nbd --uri="$uri" --rw="$rw" --bs="$bs" --iodepth="$qd" \
    --number_ios="$n" --size=1G --output-format=json >"$out" 2>/dev/null
t1=$(ticks)
python3 - "$out" "$t0" "$t1" "$(getconf CLK_TCK)" <<'PY'
import json, sys
text = open(sys.argv[1]).read()
job = json.loads(text[text.index("{"):])["jobs"][0]
d = job["read"] if job["read"]["total_ios"] > 0 else job["write"]
t0, t1, hz = float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
p50 = d["clat_ns"]["percentile"]["50.000000"] / 1000
print(f"server CPU {((t1 - t0) / hz) * 1e6 / d['total_ios']:.1f} us/req  "
      f"IOPS {d['iops']:.0f}  MiB/s {d['bw'] / 1024:.0f}  p50 {p50:.1f} us  ({d['total_ios']} I/Os)")
PY

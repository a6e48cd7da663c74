#!/usr/bin/env bash
# qoslab's iSCSI target (`qoslab iscsi serve`, no QoS) against tgt (tgtd, the Linux SCSI
# target framework's userspace daemon, rdwr backing store), with the same client: fio's
# libiscsi ioengine over loopback TCP. Jobs: 4 KiB random reads and 4 KiB random writes at
# QD32, on one prefilled LUN file per target (same size, same bytes), each target and job
# in turn, ROUNDS times interleaved. Reports ops/s and each target's CPU time per operation
# (utime+stime of the whole process from /proc/PID/stat around each run), and
# qoslab/tgt ratios.
#
# Usage: bench/iscsi-tgt.sh                 (RUNTIME=10 RAMP=2 SIZE=1G ROUNDS=3 QD=32)
#        QOSLAB=target/release/qoslab RUNTIME=5 bench/iscsi-tgt.sh
# Needs: cargo build --release; scripts/install-deps.sh (fio with libiscsi, tgt).
# Run it alone: flock /work/wt/heavy.lock bench/iscsi-tgt.sh
set -euo pipefail
cd "$(dirname "$0")/.."
RUNTIME=${RUNTIME:-10}; RAMP=${RAMP:-2}; SIZE=${SIZE:-1G}; ROUNDS=${ROUNDS:-3}; QD=${QD:-32}
QOSLAB=${QOSLAB:-target/release/qoslab}
[ -x "$QOSLAB" ] || { echo "iscsi-tgt.sh: $QOSLAB missing: cargo build --release" >&2; exit 2; }
fio --enghelp=libiscsi >/dev/null 2>&1 || { echo "iscsi-tgt.sh: fio lacks the libiscsi ioengine: scripts/install-deps.sh" >&2; exit 2; }
command -v tgtd >/dev/null && command -v tgtadm >/dev/null || { echo "iscsi-tgt.sh: tgt missing: scripts/install-deps.sh" >&2; exit 2; }

work=$(mktemp -d /tmp/qoslab-iscsibench.XXXXXX)
pids=()
cleanup() {
  # tgtd does not exit on SIGTERM while it has targets: it gets SIGKILL (it holds nothing
  # that needs flushing here).
  [ -n "${tpid:-}" ] && kill -9 "$tpid" 2>/dev/null || true
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
cpu_ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }

echo "prefilling two ${SIZE} LUN files" >&2
head -c "$SIZE" /dev/urandom > "$work/q.img"
cp "$work/q.img" "$work/t.img"

# tgt on a control port of its own (its management socket is per port).
control=$(( 30000 + $$ % 2700 )); tport=$(free_port)
tgtd -f -C "$control" --iscsi "portal=127.0.0.1:$tport" > "$work/tgtd.log" 2>&1 & tpid=$!; pids+=($tpid)
for _ in $(seq 100); do tgtadm -C "$control" --lld iscsi --op show --mode target >/dev/null 2>&1 && break; sleep 0.1; done
tiqn=iqn.2026-01.lab.qoslab:bench-tgt
tgtadm -C "$control" --lld iscsi --op new --mode target --tid 1 -T "$tiqn"
tgtadm -C "$control" --lld iscsi --op new --mode logicalunit --tid 1 --lun 1 -b "$work/t.img"
tgtadm -C "$control" --lld iscsi --op bind --mode target --tid 1 -I ALL

qiqn=iqn.2026-01.lab.qoslab:bench
"$QOSLAB" iscsi serve --iqn "$qiqn" --listen 127.0.0.1:0 --lun "$work/q.img" 2> "$work/qoslab.log" & qpid=$!; pids+=($qpid)
for _ in $(seq 100); do
  qport=$(sed -n 's/.*serving .* on [^:]*:\([0-9]*\) .*/\1/p' "$work/qoslab.log")
  [ -n "$qport" ] && break
  sleep 0.1
done
[ -n "${qport:-}" ] || { cat "$work/qoslab.log" >&2; exit 1; }

esc() { printf '%s' "$1" | sed 's/:/\\:/g'; }
declare -A url=([qoslab]="iscsi\\://127.0.0.1\\:$qport/$(esc "$qiqn")/0" [tgt]="iscsi\\://127.0.0.1\\:$tport/$(esc "$tiqn")/1")
declare -A pid=([qoslab]=$qpid [tgt]=$tpid)
declare -A job=([randread4k]="--rw=randread" [randwrite4k]="--rw=randwrite")
hz=$(getconf CLK_TCK)
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
results="$work/results.tsv"
for round in $(seq "$ROUNDS"); do
  for j in randread4k randwrite4k; do
    for s in qoslab tgt; do
      # the CPU window covers the whole fio run (ramp included), so ops include the ramp's
      t0=$(cpu_ticks "${pid[$s]}")
      # shellcheck disable=SC2086
      fio --name="$s-$j" --ioengine=libiscsi --filename="${url[$s]}" --size="$SIZE" ${job[$j]} \
          --bs=4k --iodepth="$QD" --time_based --runtime="$RUNTIME" --ramp_time="$RAMP" \
          --output-format=json > "$work/$s-$j-$round.json"
      t1=$(cpu_ticks "${pid[$s]}")
      python3 - "$work/$s-$j-$round.json" "$s" "$j" "$((t1 - t0))" "$hz" "$RUNTIME" "$RAMP" >> "$results" <<'PY'
import json, sys
path, server, job, ticks, hz, runtime, ramp = sys.argv[1:]
t = open(path).read(); j = json.loads(t[t.index("{"):])["jobs"][0]
d = j["read"] if "read" in job else j["write"]
iops = d["iops"]
p50 = d["clat_ns"]["percentile"]["50.000000"] / 1000
cpu_s = int(ticks) / int(hz)
ops_all = iops * (int(runtime) + int(ramp))  # ops over the CPU window, at the measured rate
print(f"{server}\t{job}\t{iops:.0f}\t{p50:.0f}\t{cpu_s:.2f}\t{cpu_s / ops_all * 1e6:.2f}")
PY
    done
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
python3 - "$results" "$ROUNDS" "$QD" <<'PY'
import sys, statistics
rows = [l.split("\t") for l in open(sys.argv[1]).read().split("\n") if l]
med = {}
for s, j, iops, p50, cpu, us in rows:
    med.setdefault((s, j), []).append((float(iops), float(p50), float(us)))
rounds, qd = sys.argv[2], sys.argv[3]
print(f"| job (QD{qd}) | target | ops/s | p50 latency µs | target CPU µs/op | (median of {rounds} rounds; ops/s spread) |")
print("|---|---|---|---|---|---|")
for j in ["randread4k", "randwrite4k"]:
    for s in ["qoslab", "tgt"]:
        v = med[(s, j)]
        spread = f"{min(x[0] for x in v):,.0f}–{max(x[0] for x in v):,.0f}"
        print(f"| {j} | {s} | {statistics.median(x[0] for x in v):,.0f} | {statistics.median(x[1] for x in v):,.0f} | {statistics.median(x[2] for x in v):.1f} | {spread} |")
    q, t = med[("qoslab", j)], med[("tgt", j)]
    r_ops = statistics.median(x[0] for x in q) / statistics.median(x[0] for x in t)
    r_cpu = statistics.median(x[2] for x in q) / statistics.median(x[2] for x in t)
    print(f"| {j} | **qoslab/tgt** | **{r_ops:.2f}x** | | **{r_cpu:.2f}x** | |")
PY

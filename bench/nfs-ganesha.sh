#!/usr/bin/env bash
# qoslab's NFS front end (`qoslab nfs serve`, no QoS) against nfs-ganesha 4.3 (VFS FSAL), the
# open userspace NFS server, with the same client: fio's nfs ioengine (libnfs), NFSv3 over
# loopback TCP. Jobs: 4 KiB random reads (QD16) and 64 KiB sequential writes (QD8, UNSTABLE,
# as libnfs sends them) on one prefilled file per server (same size, same bytes), each server
# and job in turn, ROUNDS times interleaved. Reports ops/s, MiB/s and the server's CPU time
# per operation (utime+stime from /proc/PID/stat around each run), and qoslab/ganesha ratios.
# With QOSLAB_BASE (an earlier build's qoslab), that build serves a third copy of the file
# in the same rounds ("qoslab-base"), and the table adds this build / that build.
#
# Usage: bench/nfs-ganesha.sh            (RUNTIME=10 RAMP=2 SIZE=512M ROUNDS=2)
#        QOSLAB=target/release/qoslab RUNTIME=5 bench/nfs-ganesha.sh
#        QOSLAB=... QOSLAB_BASE=/path/to/old/qoslab ROUNDS=3 bench/nfs-ganesha.sh
# Needs: cargo build --release; scripts/install-deps.sh (fio with nfs, nfs-ganesha, rpcbind).
# Starts rpcbind only if none runs (ganesha needs it), and stops what it started on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNTIME=${RUNTIME:-10}; RAMP=${RAMP:-2}; SIZE=${SIZE:-512M}; ROUNDS=${ROUNDS:-2}
QOSLAB=${QOSLAB:-target/release/qoslab}
QOSLAB_BASE=${QOSLAB_BASE:-}
[ -x "$QOSLAB" ] || { echo "nfs-ganesha.sh: $QOSLAB missing: cargo build --release" >&2; exit 2; }
[ -z "$QOSLAB_BASE" ] || [ -x "$QOSLAB_BASE" ] || { echo "nfs-ganesha.sh: QOSLAB_BASE=$QOSLAB_BASE missing" >&2; exit 2; }
fio --enghelp=nfs >/dev/null 2>&1 || { echo "nfs-ganesha.sh: fio lacks the nfs ioengine: scripts/install-deps.sh" >&2; exit 2; }
command -v ganesha.nfsd >/dev/null || { echo "nfs-ganesha.sh: nfs-ganesha missing: scripts/install-deps.sh" >&2; exit 2; }

# shellcheck source=bench/nfs-lib.sh
. bench/nfs-lib.sh
cpu_ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }

mkdir -p "$work/q" "$work/g" "$work/b"
echo "prefilling the ${SIZE} files" >&2
# Every server's file is made the same way, a copy of one source: a file written by `head`
# cost ~1.3x the CPU per 64 KiB overwrite of its copies (the same binary serving both read
# 30.9-37.1 against 23.6-27.6 µs/op, docs/BENCHMARKS.md), whichever build served it.
head -c "$SIZE" /dev/urandom > "$work/src"
for d in q g ${QOSLAB_BASE:+b}; do cp "$work/src" "$work/$d/f"; done
rm "$work/src"

start_rpcbind
start_pair "EXPORT { Export_Id = 1; Path = $work/g; Pseudo = /g; Protocols = 3; Transports = TCP;
         Access_Type = RW; Squash = No_Root_Squash; FSAL { Name = VFS; } }" "/q=$work/q" "$work/g"

declare -A url=([qoslab]="nfs://127.0.0.1/q?nfsport=$qport&mountport=$qport" [ganesha]="nfs://127.0.0.1$work/g?nfsport=$gport&mountport=$gmnt")
declare -A pid=([qoslab]=$qpid [ganesha]=$gpid)
servers="qoslab ganesha"
if [ -n "$QOSLAB_BASE" ]; then
  "$QOSLAB_BASE" nfs serve --listen 127.0.0.1:0 --export "/b=$work/b" 2> "$work/base.log" & bpid=$!; pids+=($bpid)
  bport=""
  for _ in $(seq 100); do
    bport=$(sed -n 's/.*serving NFSv3 on [^:]*:\([0-9]*\).*/\1/p' "$work/base.log")
    [ -n "$bport" ] && break
    sleep 0.2
  done
  [ -n "$bport" ] || { cat "$work/base.log" >&2; exit 1; }
  url[qoslab-base]="nfs://127.0.0.1/b?nfsport=$bport&mountport=$bport"
  pid[qoslab-base]=$bpid
  servers="qoslab qoslab-base ganesha"
fi
declare -A job=([read4k]="--rw=randread --bs=4k --iodepth=16" [write64k]="--rw=write --bs=64k --iodepth=8")
hz=$(getconf CLK_TCK)
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
results="$work/results.tsv"
for round in $(seq "$ROUNDS"); do
  for j in read4k write64k; do
    # The order turns each round: the first server to write after the read jobs pays for
    # the writeback of the earlier jobs' dirty pages (measured: +40% CPU per 64 KiB write),
    # so with ROUNDS a multiple of the servers each server writes first as often.
    read -r -a order <<< "$servers"
    k=$(( (round - 1) % ${#order[@]} ))
    for s in "${order[@]:k}" "${order[@]:0:k}"; do
      # the CPU window covers the whole fio run (ramp included), so ops include the ramp's
      t0=$(cpu_ticks "${pid[$s]}")
      # shellcheck disable=SC2086
      fio --name="$s-$j" --ioengine=nfs --nfs_url="${url[$s]}" --filename=f --size="$SIZE" ${job[$j]} \
          --time_based --runtime="$RUNTIME" --ramp_time="$RAMP" --output-format=json > "$work/$s-$j-$round.json"
      t1=$(cpu_ticks "${pid[$s]}")
      python3 - "$work/$s-$j-$round.json" "$s" "$j" "$((t1 - t0))" "$hz" "$RUNTIME" "$RAMP" >> "$results" <<'PY'
import json, sys
path, server, job, ticks, hz, runtime, ramp = sys.argv[1:]
t = open(path).read(); j = json.loads(t[t.index("{"):])["jobs"][0]
d = j["read"] if job.startswith("read") else j["write"]
iops, mib = d["iops"], d["bw"] / 1024
cpu_s = int(ticks) / int(hz)
ops_all = iops * (int(runtime) + int(ramp))  # ops over the CPU window, at the measured rate
print(f"{server}\t{job}\t{iops:.0f}\t{mib:.1f}\t{cpu_s:.2f}\t{cpu_s / ops_all * 1e6:.2f}")
PY
      echo "round $round: $s $j: $(tail -1 "$results" | cut -f3) ops/s, $(tail -1 "$results" | cut -f6) µs CPU/op" >&2
    done
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
python3 - "$results" "$ROUNDS" <<'PY'
import sys, statistics
rows = [l.split("\t") for l in open(sys.argv[1]).read().split("\n") if l]
med = {}
for s, j, iops, mib, cpu, us in rows:
    med.setdefault((s, j), []).append((float(iops), float(mib), float(us)))
print(f"| job | server | ops/s | MiB/s | server CPU µs/op | CPU µs/op, all rounds | (median of {sys.argv[2]} rounds) |")
print("|---|---|---|---|---|---|---|")
servers = [s for s in ["qoslab", "qoslab-base", "ganesha"] if (s, "read4k") in med]
for j in ["read4k", "write64k"]:
    for s in servers:
        v = med[(s, j)]
        spread = " ".join(f"{x[2]:.2f}" for x in v)
        print(f"| {j} | {s} | {statistics.median(x[0] for x in v):,.0f} | {statistics.median(x[1] for x in v):,.1f} | {statistics.median(x[2] for x in v):.2f} | {spread} | |")
    q = med[("qoslab", j)]
    for other in servers[1:]:
        g = med[(other, j)]
        r_ops = statistics.median(x[0] for x in q) / statistics.median(x[0] for x in g)
        r_cpu = statistics.median(x[2] for x in q) / statistics.median(x[2] for x in g)
        print(f"| {j} | **qoslab/{other}** | **{r_ops:.2f}x** | | **{r_cpu:.3f}x** | | |")
PY

#!/usr/bin/env bash
# The node's NFS path, this build against an earlier one: `qoslab serve --listen-nfs` with one
# NAS volume (no policy, and under a fixed 10,000,000-IOPS ceiling that never holds a call:
# the admission core's own cost), the same client for both: fio's nfs ioengine (libnfs),
# NFSv3 over loopback TCP. Jobs as bench/nfs-ganesha.sh's: 4 KiB random reads (QD16) and
# 64 KiB sequential writes (QD8, UNSTABLE) on one file the run lays out over NFS first.
# Each build, policy and job in turn, ROUNDS times interleaved. Reports ops/s and the node's
# CPU time per operation (utime+stime of the node's process from /proc/PID/stat around each
# fio run, its ramp included), and after/before ratios.
#
# Usage: QOSLAB_BASE=/path/to/old/qoslab bench/nfs-node.sh   (RUNTIME=5 RAMP=1 SIZE=256M ROUNDS=3)
#        QOSLAB=target/release/qoslab (the build under test; default)
# Needs: cargo build --release; scripts/install-deps.sh (fio with the nfs ioengine).
# Everything lives in one temp dir, removed on exit with the nodes it started.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNTIME=${RUNTIME:-5}; RAMP=${RAMP:-1}; SIZE=${SIZE:-256M}; ROUNDS=${ROUNDS:-3}
QOSLAB=${QOSLAB:-target/release/qoslab}
QOSLAB_BASE=${QOSLAB_BASE:-}
die() { echo "nfs-node.sh: $*" >&2; exit 2; }
[ -x "$QOSLAB" ] || die "QOSLAB=$QOSLAB missing: cargo build --release"
[ -x "$QOSLAB_BASE" ] || die "QOSLAB_BASE=/path/to/the earlier build's qoslab is required"
fio --enghelp=nfs >/dev/null 2>&1 || die "fio lacks the nfs ioengine: scripts/install-deps.sh"

work=$(mktemp -d /tmp/qoslab-nfsnode.XXXXXX)
node_pid=""
cleanup() {
  [ -n "$node_pid" ] && { kill "$node_pid" 2>/dev/null || true; wait "$node_pid" 2>/dev/null || true; }
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# config POLICY_LINE NAME: a node.toml with one NAS volume /v under the default export
# policy (loopback clients; the same in both builds), under policy "far" when POLICY_LINE is
# not empty.
config() {
  local f="$work/node-$2.toml"
  {
    if [ -n "$1" ]; then
      echo '[[policy]]'
      echo 'name = "far"'
      echo "fixed = { $1 }"
    fi
    echo '[[volume]]'
    echo 'name = "v"'
    echo 'size = "4GiB"'
    echo 'nas_path = "/v"'
    [ -n "$1" ] && echo 'policy = "far"'
  } > "$f"
  echo "$f"
}

# start BINARY CONFIG: a node on a fresh data dir; sets node_pid and nfs_port.
start() {
  local d="$work/data-$RANDOM$RANDOM" out="$work/node.out"
  "$1" serve --config "$2" --data-dir "$d" --listen-unix "$d.sock" --listen-http 127.0.0.1:0 \
    --insecure-http --listen-nfs 127.0.0.1:0 > "$out" 2> "$work/node.err" &
  node_pid=$!
  nfs_port=""
  for _ in $(seq 150); do
    nfs_port=$(sed -n 's/^qoslab: nfs: [^ ]*:\([0-9]*\).*/\1/p' "$out" | head -1)
    [ -n "$nfs_port" ] && grep -q '^qoslab: ready' "$out" && return 0
    sleep 0.2
  done
  cat "$out" "$work/node.err" >&2
  die "the node ($1) did not come up"
}

stop() { kill "$node_pid"; wait "$node_pid" 2>/dev/null || true; node_pid=""; }
cpu_ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }

declare -A bin=([after]="$QOSLAB" [before]="$QOSLAB_BASE")
declare -A cfg=([none]="$(config "" none)" [far]="$(config "max_throughput_iops = 10000000" far)")
declare -A job=([read4k]="--rw=randread --bs=4k --iodepth=16" [write64k]="--rw=write --bs=64k --iodepth=8")
hz=$(getconf CLK_TCK)
results="$work/results.tsv"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for round in $(seq "$ROUNDS"); do
  for p in none far; do
    for b in after before; do
      start "${bin[$b]}" "${cfg[$p]}"
      url="nfs://127.0.0.1/v?nfsport=$nfs_port&mountport=$nfs_port"
      # Lay the file out (not measured). QD1: fio's nfs engine closes the file with calls
      # still in flight at a job's end (libnfs fails them, "Failed NFS operation"), so a
      # deeper layout would leave its last blocks unwritten.
      fio --name=layout --ioengine=nfs --nfs_url="$url" --filename=f --size="$SIZE" --rw=write \
        --bs=64k --iodepth=1 --output-format=terse > /dev/null
      for j in read4k write64k; do
        t0=$(cpu_ticks "$node_pid")
        # shellcheck disable=SC2086
        # (Its calls still in flight when a timed job ends fail the same way: not counted.)
        fio --name="$b-$p-$j" --ioengine=nfs --nfs_url="$url" --filename=f --size="$SIZE" ${job[$j]} \
          --time_based --runtime="$RUNTIME" --ramp_time="$RAMP" --output-format=json \
          > "$work/$b-$p-$j-$round.json" 2> "$work/fio.err"
        t1=$(cpu_ticks "$node_pid")
        python3 - "$work/$b-$p-$j-$round.json" "$b" "$p" "$j" "$((t1 - t0))" "$hz" "$RUNTIME" "$RAMP" >> "$results" <<'PY'
import json, sys
path, build, policy, job, ticks, hz, runtime, ramp = sys.argv[1:]
t = open(path).read(); j = json.loads(t[t.index("{"):])["jobs"][0]
d = j["read"] if job.startswith("read") else j["write"]
cpu_s = int(ticks) / int(hz)
ops_all = d["iops"] * (int(runtime) + int(ramp))  # ops over the CPU window, at the measured rate
print(f"{build}\t{policy}\t{job}\t{d['iops']:.0f}\t{cpu_s / ops_all * 1e6:.2f}")
PY
        echo "round $round: $b $p $j: $(tail -1 "$results" | cut -f4) ops/s, $(tail -1 "$results" | cut -f5) µs CPU/op" >&2
      done
      stop
    done
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
python3 - "$results" "$ROUNDS" <<'PY'
import sys, statistics as st
rows = [l.split("\t") for l in open(sys.argv[1]).read().split("\n") if l]
v = {}
for b, p, j, iops, us in rows:
    v.setdefault((b, p, j), []).append((float(iops), float(us)))
med = lambda k, i: st.median(x[i] for x in v[k])
print(f"| job | policy | ops/s after / before | node CPU µs/op after / before | CPU ratio | (medians of {sys.argv[2]} rounds) |")
print("|---|---|---:|---:|---:|---|")
for j in ["read4k", "write64k"]:
    for p in ["none", "far"]:
        a, b = (("after", p, j), ("before", p, j))
        print(f"| {j} | {p} | {med(a,0):,.0f} / {med(b,0):,.0f} | {med(a,1):.2f} / {med(b,1):.2f} | **{med(a,1)/med(b,1):.3f}** | |")
PY

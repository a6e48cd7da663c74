#!/usr/bin/env bash
# bench/burst.sh -- burst credits and the emulated provisioned file system, measured by fio.
#
#   gp2:   an EBS gp2 100 GiB volume (300 IOPS, bursting to 3,000) with its 5.4 M-credit
#          bucket scaled by GP2_SCALE (default 0.01: 54,000 credits, a computed 20 s burst);
#          4k randread QD16 for GP2_RUNTIME s; burst duration and the rates before and after,
#          from fio's per-I/O completion log.
#   ontap: a 1,000 IOPS fixed ceiling under `--ceiling-mode ontap` vs strict, 10 s each;
#          IOPS per second.
#   fsx:   `--provisioned fsx-ontap-128` (AWS's figures, FSX_SCALE for caches and buckets,
#          FSX_RATE_SCALE for rates); the seed's in-memory test: write 2 x 16 MiB, then read it
#          with 1 MiB blocks at QD64 over 1 connection and over 16 (nconnect=16); MB/s per second.
#   profile: `qoslab bench --profile provisioned` (seed 003's workshop on the embedded
#          emulation of PROFILE_PRESET at PROFILE_SCALE, AWS's rates): its story table and
#          verdicts, the report written next to the results database (kept, path printed).
#
# Prints one summary line per measurement and a per-second series; pure measurement, no
# pass/fail (the integration tests assert). Run on a quiet machine:
#   flock /work/wt/bench.lock bench/burst.sh
set -euo pipefail

BENCH_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "$BENCH_DIR/lib.sh"

GP2_SCALE="${GP2_SCALE:-0.01}"
GP2_RUNTIME="${GP2_RUNTIME:-40}"
FSX_SCALE="${FSX_SCALE:-0.01}"
FSX_RATE_SCALE="${FSX_RATE_SCALE:-1}"
FSX_RUNTIME="${FSX_RUNTIME:-30}"
PROFILE_PRESET="${PROFILE_PRESET:-fsx-ontap-128}"
PROFILE_SCALE="${PROFILE_SCALE:-0.005}"
WHAT="${1:-gp2,ontap,fsx,profile}"

require_cmds fio python3
check_fio_nbd
qoslab_available || exit 1
setup_workdir

# per_second LOGFILE KIND -- completions (KIND=ops) or MB (KIND=mb, 10^6 bytes) per second.
per_second() {
    python3 - "$1" "$2" <<'EOF'
import sys, collections
path, kind = sys.argv[1], sys.argv[2]
bins = collections.Counter()
for line in open(path):
    f = line.split(',')
    if len(f) < 4:
        continue
    t = int(f[0]) // 1000
    bins[t] += 1 if kind == 'ops' else int(f[3]) / 1e6
print(' '.join(f'{bins[s]:.0f}' for s in range(max(bins) + 1)))
EOF
}

# burst_summary LOGFILE BURST BASE -- the burst's end (the start of the first full second
# of 100 ms bins all below the midpoint of the two rates), the rate during it, the credits it
# spent (I/Os above the baseline: what the bucket held), and the rate from 1 s after it.
burst_summary() {
    python3 - "$1" "$2" "$3" <<'EOF'
import sys
path, burst, base = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
t = sorted(int(l.split(',')[0]) for l in open(path) if l.strip())
bins = [0] * (t[-1] // 100 + 1)
for ms in t:
    bins[ms // 100] += 1
mid = (burst + base) / 2 / 10
end = next(i for i in range(1, len(bins) - 10) if all(b < mid for b in bins[i:i + 10])) / 10
count = lambda a, b: sum(1 for x in t if a <= x < b)
n = count(0, int(end * 1000))
start = int((end + 1) * 1000)
after = count(start, t[-1]) / ((t[-1] - start) / 1000)
print(f'burst {end:.2f} s at {n / end:.1f} IOPS on average ({n} I/Os: {n - base * end:.0f} credits above the baseline), '
      f'then {after:.2f} IOPS over {(t[-1]-start)/1000:.0f} s')
EOF
}

job() { # FILE URI RW BS QD NUMJOBS SIZE RUNTIME LOGPREFIX
    cat >"$1" <<EOF
[global]
ioengine=nbd
uri=$2
rw=$3
bs=$4
iodepth=$5
numjobs=$6
size=$7
offset_increment=$7
group_reporting=1
randrepeat=0
EOF
    if [[ -n "$8" ]]; then printf 'time_based=1\nruntime=%s\n' "$8" >>"$1"; fi
    if [[ -n "$9" ]]; then printf 'write_lat_log=%s\n' "$9" >>"$1"; fi
    printf '[job]\n' >>"$1"
}

if [[ ,$WHAT, == *,gp2,* ]]; then
    cat >"$WORKDIR/gp2.toml" <<EOF
[[policy]]
name = "gp2"
provisioned = { model = "ebs-gp2", bucket_scale = $GP2_SCALE }
[[volume]]
name = "vol"
size = "100GiB"
snapshot_reserve_percent = 0
policy = "gp2"
EOF
    start_qoslab "$WORKDIR/gp2.toml" "$WORKDIR/gp2-data" "$WORKDIR/gp2.sock" "$WORKDIR/gp2.log"
    grep ' vol ' "$WORKDIR/gp2.log" >&2 || true
    job "$WORKDIR/gp2.fio" "$(nbd_uri "$WORKDIR/gp2.sock")" randread 4k 16 1 256MiB "$GP2_RUNTIME" "$WORKDIR/gp2"
    run_fio "$WORKDIR/gp2.fio" "$WORKDIR/gp2.json"
    echo "gp2 100 GiB, bucket x$GP2_SCALE: $(burst_summary "$WORKDIR/gp2_lat.1.log" 3000 300)"
    echo "  IOPS per second: $(per_second "$WORKDIR/gp2_lat.1.log" ops)"
    stop_server
fi

if [[ ,$WHAT, == *,ontap,* ]]; then
    cat >"$WORKDIR/ontap.toml" <<EOF
[[policy]]
name = "p"
fixed = { max_throughput_iops = 1000 }
[[volume]]
name = "vol"
size = "256MiB"
policy = "p"
EOF
    for mode in ontap strict; do
        "$QOSLAB" serve --config "$WORKDIR/ontap.toml" --data-dir "$WORKDIR/ontap-$mode" \
            --listen-unix "$WORKDIR/ontap.sock" --listen-http off --ceiling-mode "$mode" \
            >"$WORKDIR/ontap-$mode.log" 2>&1 &
        SERVER_PID=$!; SERVER_SOCK="$WORKDIR/ontap.sock"; SERVER_PIDS+=("$SERVER_PID")
        wait_ready "$SERVER_PID" "$SERVER_SOCK" "$WORKDIR/ontap-$mode.log" '^qoslab: ready'
        job "$WORKDIR/ontap.fio" "$(nbd_uri "$SERVER_SOCK")" randread 4k 16 1 128MiB 10 "$WORKDIR/ontap-$mode"
        run_fio "$WORKDIR/ontap.fio" "$WORKDIR/ontap-$mode.json"
        echo "1,000 IOPS ceiling, --ceiling-mode $mode: IOPS per second: $(per_second "$WORKDIR/ontap-${mode}_lat.1.log" ops)"
        stop_server
    done
fi

if [[ ,$WHAT, == *,fsx,* ]]; then
    printf '[[volume]]\nname = "vol"\nsize = "1GiB"\n' >"$WORKDIR/fsx.toml"
    "$QOSLAB" serve --config "$WORKDIR/fsx.toml" --data-dir "$WORKDIR/fsx-data" \
        --listen-unix "$WORKDIR/fsx.sock" --listen-http off --provisioned fsx-ontap-128 \
        --provisioned-scale "$FSX_SCALE" --provisioned-rate-scale "$FSX_RATE_SCALE" \
        >"$WORKDIR/fsx.log" 2>&1 &
    SERVER_PID=$!; SERVER_SOCK="$WORKDIR/fsx.sock"; SERVER_PIDS+=("$SERVER_PID")
    wait_ready "$SERVER_PID" "$SERVER_SOCK" "$WORKDIR/fsx.log" '^qoslab: ready'
    grep 'provisioned file system' "$WORKDIR/fsx.log" >&2 || true
    uri=$(nbd_uri "$SERVER_SOCK")
    # The seed's in-memory cache test: two 16 MiB files, 1 MiB blocks, QD64.
    job "$WORKDIR/w.fio" "$uri" write 1M 64 2 16MiB "" ""
    run_fio "$WORKDIR/w.fio" "$WORKDIR/w.json"
    for conns in 1 16; do
        # 32 MiB over CONNS connections (fio's nbd engine opens one per job).
        size=$((32 / conns))MiB
        job "$WORKDIR/r$conns.fio" "$uri" read 1M $((64 * 2 / conns > 0 ? 64 * 2 / conns : 1)) "$conns" "$size" "$FSX_RUNTIME" "$WORKDIR/r$conns"
        run_fio "$WORKDIR/r$conns.fio" "$WORKDIR/r$conns.json"
        cat "$WORKDIR"/r${conns}_lat.*.log >"$WORKDIR/r$conns.all"
        mbs=$(python3 -c "import json;j=json.load(open('$WORKDIR/r$conns.json'));print(f\"{j['jobs'][0]['read']['bw_bytes']/1e6:.1f}\")")
        echo "fsx-ontap-128 (scale $FSX_SCALE, rates x$FSX_RATE_SCALE) cached 1 MiB reads, $conns connection(s): $mbs MB/s mean"
        echo "  MB/s per second: $(per_second "$WORKDIR/r$conns.all" mb)"
        # Let the network bucket refill before the next run (its refill time at baseline).
        sleep "$(python3 -c "print(round(1100*1800*$FSX_SCALE/150 + 1))")"
    done
    stop_server
fi
if [[ ,$WHAT, == *,profile,* ]]; then
    out="${PROFILE_OUT:-${TMPDIR:-/tmp}/qoslab-burst-profile}"
    mkdir -p "$out"
    rm -f "$out/results.db"
    # The profile's own verdicts decide its exit status; the figures are what matter here.
    "$QOSLAB" bench --profile provisioned --provisioned "$PROFILE_PRESET" --scale "$PROFILE_SCALE" \
        --db "$out/results.db" || warn "the profile's verdicts did not all pass (see above)"
    "$QOSLAB" report last --db "$out/results.db" -o "$out/report.html" >&2
    log "profile: results in $out/results.db, report $out/report.html"
fi

log "done (load average at start $LOADAVG_START, now $(cut -d' ' -f1-3 /proc/loadavg))"

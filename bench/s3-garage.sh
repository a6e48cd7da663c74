#!/usr/bin/env bash
# bench/s3-garage.sh -- qoslab's S3 benchmark against Garage (a real object store nobody
# here wrote), and the same figures for the qoslab node's S3 path beside it.
#
# Usage: bench/s3-garage.sh [interop|figures|all] [--runtime S] [--iterations N]
#   interop   two runs of a mixed 70/20/10 GET/PUT/DELETE test with log-normal sizes
#             (1 KiB .. 1 MiB) against Garage; checks that per-operation percentiles and
#             TTFB are stored, then `qoslab compare` of the two runs must flag nothing
#             (exit 1 if it does)
#   figures   4 KiB GETs (128 clients, or $GET_CLIENTS: ops/s, server CPU per request) and 64 MiB PUTs
#             (2 clients: MiB/s, CPU per MiB) with the same driver against Garage and
#             against the qoslab node (no policy)
#   all       both (default)
#   --runtime S     seconds per test (default 20; ramp 2 s before it)
#   --iterations N  iterations per interop run (default 3)
# Env: QOSLAB (default target/release/qoslab), GARAGE (default: the garage that
# `scripts/install-deps.sh --garage` installs, pinned, when it is missing; timed),
# GET_CLIENTS (default 128), KEEP_WORKDIR=1 keeps the temp dir (databases, server logs).
#
# Prints Markdown; progress and `uptime` go to stderr. Servers listen on 127.0.0.1 only.
set -euo pipefail
mode=all runtime=20 iterations=3 get_clients=${GET_CLIENTS:-128}
while [ $# -gt 0 ]; do
    case "$1" in
        interop|figures|all) mode=$1; shift ;;
        --runtime) runtime=$2; shift 2 ;;
        --iterations) iterations=$2; shift 2 ;;
        -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
cd "$(dirname "$0")/.."
QOSLAB=${QOSLAB:-target/release/qoslab}
QOSLAB=$(realpath "$QOSLAB" 2>/dev/null || echo "$QOSLAB")
[ -x "$QOSLAB" ] || { echo "no $QOSLAB: cargo build --release -p qoslab" >&2; exit 1; }
if [ -z "${GARAGE:-}" ]; then
    # Installs the pinned Garage when it is missing (timed), like every other tool here.
    scripts/install-deps.sh --garage
    GARAGE=$(command -v garage || echo "$HOME/.cargo/bin/garage")
fi
work=$(mktemp -d /tmp/qoslab-garage.XXXXXX)
gpid="" qpid=""
# Stop both servers whatever happened (errexit off here: a failing `wait` must not skip
# the rest), then the work dir. Both servers are this script's own children.
cleanup() {
    local rc=$?
    set +e
    for p in $gpid $qpid; do kill "$p" 2>/dev/null; done
    for p in $gpid $qpid; do wait "$p" 2>/dev/null; done
    if [ "${KEEP_WORKDIR:-0}" = 1 ]; then echo "kept $work" >&2; else rm -rf "$work"; fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# Garage, single node (docs: "quick start"): sqlite metadata, replication 1, one zone.
gport=$(free_port) rport=$(free_port) aport=$(free_port)
mkdir -p "$work/garage"
cat > "$work/garage/garage.toml" <<EOF
metadata_dir = "$work/garage/meta"
data_dir = "$work/garage/data"
db_engine = "sqlite"
replication_factor = 1
rpc_bind_addr = "127.0.0.1:$rport"
rpc_public_addr = "127.0.0.1:$rport"
rpc_secret = "$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"
[s3_api]
s3_region = "garage"
api_bind_addr = "127.0.0.1:$gport"
root_domain = ".s3.garage.localhost"
[admin]
api_bind_addr = "127.0.0.1:$aport"
admin_token = "$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
EOF
chmod 600 "$work/garage/garage.toml"
G() { "$GARAGE" -c "$work/garage/garage.toml" "$@"; }
"$GARAGE" -c "$work/garage/garage.toml" server > "$work/garage/server.log" 2>&1 &
gpid=$!   # garage itself (its CPU is read from /proc/PID/stat)
for _ in $(seq 100); do G status >/dev/null 2>&1 && break; sleep 0.1; done
node=$(G status 2>/dev/null | awk '/NO ROLE ASSIGNED/{print $1; exit}')
[ -n "$node" ] || { cat "$work/garage/server.log" >&2; exit 1; }
G layout assign -z dc1 -c 10G "$node" >/dev/null
G layout apply --version 1 >/dev/null
GK=GK$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
GS=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
G key import --yes -n qoslab-bench "$GK" "$GS" >/dev/null
G key allow --create-bucket qoslab-bench >/dev/null
echo "$GK $GS" > "$work/garage.keys"
garage_ep="http://127.0.0.1:$gport"
echo "garage $("$GARAGE" --version | head -1) on $garage_ep" >&2

# The qoslab node (no policy on its buckets).
AK=AKIAQOSLABBENCH00001 SK=qoslabbenchsecret00000000000000000000000
echo "root $AK $SK" > "$work/qoslab.keys"
"$QOSLAB" serve --data-dir "$work/qdata" --listen-http off --listen-tcp 127.0.0.1:0 \
    --listen-unix "$work/nbd.sock" --listen-s3 127.0.0.1:0 --s3-keys-file "$work/qoslab.keys" \
    > "$work/serve.log" 2>&1 &
qpid=$!
for _ in $(seq 100); do grep -qs "qoslab: ready" "$work/serve.log" && break; sleep 0.1; done
qoslab_ep=$(sed -n 's/^qoslab: s3: \(http:[^ ]*\).*/\1/p' "$work/serve.log")
[ -n "$qoslab_ep" ] || { cat "$work/serve.log" >&2; exit 1; }

# bench NAME ENDPOINT KEYS REGION DB ARGS... : one `qoslab bench --profile s3` run.
bench() {
    local name=$1 ep=$2 keys=$3 region=$4 db=$5; shift 5
    "$QOSLAB" bench --profile s3 --s3-endpoint "$ep" --s3-keys-file "$keys" --s3-region "$region" \
        --runtime "$runtime" --ramp 2 --db "$db" "$@" > "$work/$name.out" 2> "$work/$name.err" \
        || { cat "$work/$name.out" "$work/$name.err" >&2; return 1; }
}
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
echo "load before: $(uptime)" >&2

if [ "$mode" = interop ] || [ "$mode" = all ]; then
    cat > "$work/mixed.toml" <<EOF
# GOSBench's vocabulary: a mixed test with log-normal sizes against Garage.
[bench]
name = "garage-mixed"
runtime = "${runtime}s"
ramp = "2s"
iterations = $iterations

[s3]
endpoint = "$garage_ep"
region = "garage"
keys_file = "$work/garage.keys"

[[s3.test]]
name = "mixed"
read_weight = 70
write_weight = 20
delete_weight = 10
objects = { size_min = "1KiB", size_max = "1MiB", size_distribution = "lognormal", number_min = 200 }
bucket_prefix = "qoslab-mixed-"
parallel_clients = 8
clean_after = true
expect = ["ALL.errors <= 0"]
EOF
    for run in A B; do
        echo "interop run $run: mixed 70/20/10, log-normal 1 KiB..1 MiB, $iterations x ${runtime}s" >&2
        "$QOSLAB" bench "$work/mixed.toml" --db "$work/interop.db" --json \
            > "$work/interop$run.out" 2> "$work/interop$run.err" \
            || { cat "$work/interop$run.out" "$work/interop$run.err" >&2; exit 1; }
    done
    "$QOSLAB" results export 1 --db "$work/interop.db" --format json > "$work/a.json"
    python3 - "$work/a.json" <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))
ops = {o["op"]: o for o in run["jobs"][0]["ops"]}
assert set(ops) == {"GET", "PUT", "DELETE"}, ops.keys()
for name, o in ops.items():
    l = o["lat"]
    assert 0 < l["p50_ns"] <= l["p90_ns"] <= l["p99_ns"] <= l["max_ns"], (name, l)
assert ops["GET"]["ttfb"]["n"] == ops["GET"]["ops"], ops["GET"]["ttfb"]
print("| op | ops/s | MiB/s | mean | p50 | p90 | p99 | max | TTFB p50 | TTFB p99 | errors |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
ms = lambda ns: f"{ns / 1e6:.2f} ms"
for name in ("GET", "PUT", "DELETE"):
    o = ops[name]; l = o["lat"]; t = o.get("ttfb")
    print(f"| {name} | {o['ops_per_s']:.1f} | {o['bytes_per_s'] / 1048576:.2f} | {ms(l['mean_ns'])} | {ms(l['p50_ns'])} | {ms(l['p90_ns'])} | {ms(l['p99_ns'])} | {ms(l['max_ns'])} | {ms(t['p50_ns']) if t else '-'} | {ms(t['p99_ns']) if t else '-'} | {o['errors']} |")
PY
    echo
    "$QOSLAB" compare 1 2 --db "$work/interop.db" | tee "$work/compare.txt"
    flagged=$("$QOSLAB" compare 1 2 --db "$work/interop.db" --json | python3 -c 'import json,sys; c=json.load(sys.stdin); print(sum(m["flagged"] for j in c["jobs"] for m in j["metrics"]))')
    echo
    echo "compare A B: $flagged change(s) beyond the noise"
    [ "$flagged" = 0 ] || { echo "FAIL: two identical runs differ beyond their noise" >&2; exit 1; }
fi

if [ "$mode" = figures ] || [ "$mode" = all ]; then
    echo
    echo "| server | 4 KiB GET ops/s ($get_clients clients) | server CPU per GET | 64 MiB PUT MiB/s | server CPU per MiB PUT |"
    echo "|---|---:|---:|---:|---:|"
    for srv in garage qoslab; do
        if [ $srv = garage ]; then ep=$garage_ep keys=$work/garage.keys region=garage pid=$gpid
        else ep=$qoslab_ep keys=$work/qoslab.keys region=us-east-1 pid=$qpid; fi
        echo "figures: $srv 4 KiB GETs, $get_clients clients, ${runtime}s" >&2
        t0=$(ticks "$pid")
        bench "$srv-get" "$ep" "$keys" "$region" "$work/fig-$srv.db" \
            --s3-mix get=1 --s3-size 4KiB --s3-objects "$get_clients" --s3-clients "$get_clients" --json
        t1=$(ticks "$pid")
        echo "figures: $srv 64 MiB PUTs, 2 clients, ${runtime}s" >&2
        bench "$srv-put" "$ep" "$keys" "$region" "$work/fig-$srv.db" \
            --s3-mix put=1 --s3-size 64MiB --s3-clients 2 --json
        t2=$(ticks "$pid")
        python3 - "$srv" "$work/$srv-get.out" "$work/$srv-put.out" "$t0" "$t1" "$t2" "$hz" "$get_clients" <<'PY'
import json, sys
srv, get, put = sys.argv[1:4]
t0, t1, t2, hz, objects = map(float, sys.argv[4:9])
g = json.load(open(get))["jobs"][0]["ops"][0]
p = json.load(open(put))["jobs"][0]["ops"][0]
# Requests the server saw in the GET run: the test's + one prepared PUT per object (one per
# client) + clean-up.
reqs = g["total"] + objects + 2
mib = p["total"] * 64
print(f"| {srv} | {g['ops_per_s']:,.0f} (p99 {g['lat']['p99_ns'] / 1e6:.1f} ms) | "
      f"{(t1 - t0) / hz * 1e6 / reqs:.0f} µs | {p['bytes_per_s'] / 1048576:,.0f} | {(t2 - t1) / hz * 1e3 / mib:.1f} ms |")
PY
    done
fi
echo "load after: $(uptime)" >&2

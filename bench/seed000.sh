#!/usr/bin/env bash
# bench/seed000.sh -- seed 000 cell by cell: dbench on the seed's seven volumes on the
# emulated array of examples/seed000.toml (qoslab bench), then the seed's summaries
# beside qoslab's from the stored run (qoslab results seed000): per cell the seed's
# figure, qoslab's, the difference and whether it is within 10% (latency 15%).
set -euo pipefail

usage() {
    cat <<USAGE
Usage: bench/seed000.sh [options]

Run examples/seed000.toml (dbench x 7 volumes on seed 000's emulated array) and print
the seed's dbench summaries beside qoslab's, cell by cell.

Options (each also settable via the environment variable shown):
  --runtime DUR   fio runtime per job   (RUNTIME, default 15s: dbench's own)
  --ramp DUR      fio ramp per job      (RAMP, default 2s: dbench's own)
  --db PATH       results database      (DB, default bench/results/seed000.db)
  --json          print the comparison as JSON
  --no-space-check  run even with less free space than the run may write
  -h, --help      this text

QOSLAB selects the binary (default target/release/qoslab; build it with
cargo build --release). With dbench's timing the run takes about 20 minutes (63 fio
jobs of 17 s); --runtime 2s --ramp 1s takes about 4. Benchmarks need a quiet machine:
run it under flock /work/wt/bench.lock when others share the box.

Disk: the embedded node's volumes are sparse files in \$TMPDIR (default /tmp), removed
after the run, but dbench's write jobs fill up to 3.5 GB of each of the seven volumes
while it runs (size=2G, four sequential writers 500 MB apart). The script refuses to start
with less than 25 GB free there (--no-space-check to override).

Exit status: 0 every cell within tolerance or its miss the seed's own (its figure further
than the tolerance from its baseline row under the volume's ceiling; marked in the table),
1 another cell missed or a fio job failed, 2 usage, 3 a miss only the machine explains
(the job's diagnosis: a starved load generator or a busy host; rerun when it is quiet).
USAGE
}

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
QOSLAB="${QOSLAB:-$REPO_ROOT/target/release/qoslab}"
RUNTIME="${RUNTIME:-15s}"
RAMP="${RAMP:-2s}"
DB="${DB:-$REPO_ROOT/bench/results/seed000.db}"
JSON=""
SPACE_CHECK=1
while (($#)); do
    case "$1" in
        --runtime) RUNTIME="${2:?--runtime needs a value}"; shift 2 ;;
        --ramp) RAMP="${2:?--ramp needs a value}"; shift 2 ;;
        --db) DB="${2:?--db needs a value}"; shift 2 ;;
        --json) JSON="--json"; shift ;;
        --no-space-check) SPACE_CHECK=0; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "bench/seed000.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
if [[ ! -x "$QOSLAB" ]]; then
    echo "bench/seed000.sh: no qoslab binary at $QOSLAB: build it with cargo build --release (or set QOSLAB=)" >&2
    exit 2
fi
command -v fio >/dev/null || { echo "bench/seed000.sh: fio is missing (scripts/install-deps.sh installs it)" >&2; exit 2; }
mkdir -p "$(dirname "$DB")"
if ((SPACE_CHECK)); then
    free_kb=$(df -Pk "${TMPDIR:-/tmp}" | awk 'NR == 2 {print $4}')
    if ((free_kb < 25 * 1024 * 1024)); then
        echo "bench/seed000.sh: only $((free_kb / 1024 / 1024)) GB free in ${TMPDIR:-/tmp}; the run may write up to 25 GB (see --help; --no-space-check to run anyway)" >&2
        exit 2
    fi
fi

echo "load before: $(uptime)" >&2
bench_status=0
"$QOSLAB" bench "$REPO_ROOT/examples/seed000.toml" --runtime "$RUNTIME" --ramp "$RAMP" --db "$DB" >&2 || bench_status=$?
echo "load after: $(uptime)" >&2
if ((bench_status > 1)); then
    echo "bench/seed000.sh: qoslab bench failed (status $bench_status)" >&2
    exit "$bench_status"
fi
cmp_status=0
"$QOSLAB" results seed000 last --db "$DB" $JSON || cmp_status=$?
if ((bench_status == 1 || cmp_status == 1)); then
    exit 1
fi
if ((bench_status == 3 || cmp_status == 3)); then
    exit 3
fi

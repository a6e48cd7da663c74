#!/usr/bin/env bash
# Run every fuzz target for RUNS executions (default 10 million), one after another,
# with libFuzzer's final statistics; logs in fuzz/logs/TARGET.log. A crash stops that
# target (its input lands in fuzz/artifacts/TARGET/) and the script exits 1 at the end.
# Usage: fuzz/run-all.sh [RUNS] [MAX_SECONDS_PER_TARGET] [TARGET...]
# On a shared machine: flock /work/wt/heavy.lock fuzz/run-all.sh   (docs/FUZZING.md)
set -uo pipefail
cd "$(dirname "$0")"
runs=${1:-10000000}
max=${2:-3600}
shift 2 2>/dev/null || shift $#
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(nbd_decoders node_config api_body nbd_session s3_request)
mkdir -p logs
failed=0
for t in "${targets[@]}"; do
  mkdir -p "corpus/$t"
  start=$(date +%s)
  cargo fuzz run --sanitizer none "$t" "corpus/$t" "seeds/$t" -- \
    -runs="$runs" -max_total_time="$max" -max_len=4096 -print_final_stats=1 \
    > "logs/$t.log" 2>&1
  rc=$?
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "logs/$t.log" | grep -o '[0-9]*$')
  rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "logs/$t.log" | grep -o '[0-9]*$')
  echo "$t: exit $rc, ${execs:-?} executions, ${rate:-?} exec/s, $(( $(date +%s) - start )) s, corpus $(ls "corpus/$t" | wc -l) inputs"
  [ $rc -ne 0 ] && failed=1
done
exit $failed

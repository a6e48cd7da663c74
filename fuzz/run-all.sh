#!/usr/bin/env bash
# Run every fuzz target for RUNS executions (default 10 million), one target after another,
# with libFuzzer's final statistics; logs in fuzz/logs/. A crash stops that target (its
# input lands in fuzz/artifacts/TARGET/) and the script exits 1 at the end.
# Usage: [JOBS=N] fuzz/run-all.sh [RUNS] [MAX_SECONDS_PER_TARGET] [TARGET...]
# JOBS=N splits each target's runs over N libFuzzer processes (-jobs/-workers) sharing
# one corpus; the executions reported are their sum.
# On a shared machine: flock /work/wt/heavy.lock fuzz/run-all.sh   (docs/FUZZING.md)
set -uo pipefail
cd "$(dirname "$0")"
runs=${1:-10000000}
max=${2:-3600}
shift 2 2>/dev/null || shift $#
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(nbd_decoders node_config api_body nbd_session s3_request nfs_rpc nfs_session iscsi_pdu)
jobs=${JOBS:-1}
mkdir -p logs
cargo fuzz build --sanitizer none >logs/build.log 2>&1 || { echo "build failed: fuzz/logs/build.log"; exit 1; }
failed=0
for t in "${targets[@]}"; do
  mkdir -p "corpus/$t" "artifacts/$t"
  rm -f fuzz-*.log "logs/$t".*log
  start=$(date +%s)
  if [ "$jobs" -gt 1 ]; then
    cargo fuzz run --sanitizer none "$t" "corpus/$t" "seeds/$t" -- \
      -runs=$((runs / jobs)) -jobs="$jobs" -workers="$jobs" -max_total_time="$max" \
      -artifact_prefix="artifacts/$t/" \
      -max_len=4096 -print_final_stats=1 > "logs/$t.log" 2>&1
    rc=$?
    for f in fuzz-*.log; do [ -e "$f" ] && mv "$f" "logs/$t.${f#fuzz-}"; done
    # A job that found a crash exits non-zero and says so in its own log.
    grep -lE "ERROR: libFuzzer|panicked" logs/"$t".*.log >/dev/null 2>&1 && rc=1
    files=(logs/"$t".*.log)
  else
    cargo fuzz run --sanitizer none "$t" "corpus/$t" "seeds/$t" -- \
      -runs="$runs" -max_total_time="$max" -max_len=4096 -print_final_stats=1 \
      > "logs/$t.log" 2>&1
    rc=$?
    files=("logs/$t.log")
  fi
  execs=$(cat "${files[@]}" | grep -o 'stat::number_of_executed_units: *[0-9]*' | grep -o '[0-9]*$' | paste -sd+ | bc)
  rate=$(cat "${files[@]}" | grep -o 'stat::average_exec_per_sec: *[0-9]*' | grep -o '[0-9]*$' | paste -sd+ | bc)
  echo "$t: exit $rc, ${execs:-?} executions, ${rate:-?} exec/s, $(( $(date +%s) - start )) s, $jobs job(s), corpus $(ls "corpus/$t" | wc -l) inputs"
  [ $rc -ne 0 ] && failed=1
done
# The targets' scratch directories (a node's data on /dev/shm), now that no fuzzer runs.
rm -rf /dev/shm/qoslab-fuzz-* 2>/dev/null
exit $failed

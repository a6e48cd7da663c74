#!/usr/bin/env bash
# bench/demo-10x.sh -- run `qoslab demo` N times in a row (default 10) and check, for every
# run, that it exits 0 and that its terminal, its report and `qoslab results` agree on the
# verdicts (counts of pass / fail / inconclusive). Prints one line per run and a summary;
# exits 1 when any run disagrees or fails. Each run gets its own directory under $OUT
# (default a temp dir, kept with KEEP=1).
#
#   cargo build --release && flock /work/wt/bench.lock bench/demo-10x.sh [N]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
QOSLAB="$(pwd)/${QOSLAB:-target/release/qoslab}"
N="${1:-10}"
OUT="${OUT:-$(mktemp -d /tmp/qoslab-demo10x.XXXXXX)}"
[[ -x "$QOSLAB" ]] || { echo "no qoslab binary at $QOSLAB: cargo build --release" >&2; exit 2; }
echo "qoslab demo x$N, $(nproc) CPUs, load before: $(cut -d' ' -f1-3 /proc/loadavg); output in $OUT"
ok=0; bad=0
for i in $(seq 1 "$N"); do
  d="$OUT/run$i"; mkdir -p "$d"; cd "$d"
  start=$(date +%s)
  set +e; "$QOSLAB" demo > out.txt 2> err.txt; code=$?; set -e
  secs=$(( $(date +%s) - start ))
  # The terminal's answer: "qoslab demo: ceilings PASS (12 pass, 0 fail, 0 inconclusive); floors HELD"
  term=$(grep -o 'ceilings [A-Z]* ([0-9]* pass, [0-9]* fail, [0-9]* inconclusive)' out.txt | sed 's/ceilings [A-Z]* //; s/[()]//g' || true)
  # The report's header: "verdicts: 12 pass, 0 fail, 0 inconclusive;"
  report=$(grep -o 'verdicts: [0-9]* pass, [0-9]* fail, [0-9]* inconclusive' qoslab-results/qoslab-report-1.html | head -1 | sed 's/verdicts: //' || true)
  # results list: run 1's pass / fail / inconclusive columns.
  listed=$("$QOSLAB" results list --db qoslab-results/qoslab-results.db | awk '$1 == 1 { printf "%s pass, %s fail, %s inconclusive", $6, $7, $8 }')
  floors=$(grep -o 'floors [A-Z ]*$' out.txt | tail -1 || true)
  agree=yes
  [[ -n "$term" && "$term" == "$report" && "$term" == "$listed" ]] || agree=no
  cd - > /dev/null
  if [[ $code -eq 0 && $agree == yes ]]; then ok=$((ok + 1)); else bad=$((bad + 1)); fi
  echo "run $i: exit $code, ${secs}s; terminal [$term] report [$report] results [$listed] agree=$agree; $floors"
done
echo "qoslab demo x$N: $ok exited 0 with terminal, report and results agreeing; $bad did not. Load after: $(cut -d' ' -f1-3 /proc/loadavg)"
[[ -n "${KEEP:-}" ]] || [[ $bad -gt 0 ]] || rm -rf "$OUT"
[[ $bad -eq 0 ]]

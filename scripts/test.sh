#!/usr/bin/env bash
# The project's test command: installs prerequisites, builds from scratch, then runs every
# tier and every gate (docs/TESTING.md):
#   unit     `cargo test`'s tests: unit, virtual-time and in-process (cargo-nextest, profile `unit`)
#   doc      doc tests (nextest does not run them)
#   e2e      the end-to-end tier: the real binary, fio, namespaces, Chromium, redis, S3
#            clients, mounts (profile `e2e`, compiled with `--features e2e`)
#   fmt, clippy, cycles, tiers (the e2e files declare their tier)
# Every step runs even when an earlier one failed; the script then exits non-zero naming
# what failed. Per-test times are printed by nextest; each step's time at the end.
# Never retries a test: one that fails once is a bug.
set -uo pipefail
cd "$(dirname "$0")/.."
command -v cargo >/dev/null 2>&1 || export PATH="$HOME/.cargo/bin:$PATH"
export CARGO_TERM_COLOR=${CARGO_TERM_COLOR:-never}
export NEXTEST_HIDE_PROGRESS_BAR=1

failed=()
times=()
step() { # step NAME COMMAND...: run, time, remember a failure, go on
  local name=$1
  shift
  echo "==> scripts/test.sh: $name: $*"
  local start=$SECONDS
  "$@"
  local rc=$?
  local took=$((SECONDS - start))
  times+=("$(printf '%-8s %5d s  %s' "$name" "$took" "$([ $rc -eq 0 ] && echo ok || echo "FAILED (exit $rc)")")")
  [ $rc -eq 0 ] || failed+=("$name")
  return 0
}

# Every crates/*/tests/e2e_*.rs starts with the tier's cfg line, and every file that
# carries it is named so (else a tier would silently run the other's tests).
check_tiers() {
  local bad=0 f
  for f in crates/*/tests/e2e_*.rs crates/qoslab/tests/integration/main.rs; do
    head -1 "$f" | grep -qx '#!\[cfg(feature = "e2e")\]' || {
      echo "$f: first line must be #![cfg(feature = \"e2e\")] (docs/TESTING.md)"
      bad=1
    }
  done
  for f in $(grep -l '^#!\[cfg(feature = "e2e")\]' crates/*/tests/*.rs 2>/dev/null); do
    case "$(basename "$f")" in e2e_*) ;; *)
      echo "$f: an e2e test file is named tests/e2e_*.rs (docs/TESTING.md)"
      bad=1
      ;;
    esac
  done
  return $bad
}

total_start=$SECONDS
step deps scripts/install-deps.sh
# One build for both tiers and clippy: `--features e2e` only adds the e2e test targets.
step build cargo build --workspace --all-targets --features e2e --locked
step unit cargo nextest run --workspace --features e2e --locked --profile unit
step doc cargo test --workspace --doc --features e2e --locked
step e2e cargo nextest run --workspace --features e2e --locked --profile e2e
step fmt cargo fmt --all -- --check
step clippy cargo clippy --workspace --all-targets --features e2e --locked -- -D warnings
# No import cycles between crates or between the modules of any crate (with its self-test).
step cycles python3 scripts/check-module-cycles.py --self-test
step tiers check_tiers

echo
echo "scripts/test.sh: step times (wall $((SECONDS - total_start)) s)"
printf '  %s\n' "${times[@]}"
if [ ${#failed[@]} -gt 0 ]; then
  echo "scripts/test.sh: FAILED: ${failed[*]}"
  exit 1
fi
echo "scripts/test.sh: all green"

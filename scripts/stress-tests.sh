#!/usr/bin/env bash
# scripts/stress-tests.sh [N] [--all]: run the real-time tests N times (default 10) while a
# CPU hog (one busy loop, a whole core of this 2-core machine) runs beside them, and print
# how often each failed. A test that fails once here is a bug to fix, never to retry
# (docs/TESTING.md). Needs what scripts/test.sh installs; wrap it in
# `flock /work/wt/heavy.lock` on a shared machine.
#
# scripts/stress-tests.sh --hostile N: the same set N times beside a hostile host: two CPU
# hogs, a `dd bs=1M count=64 conv=fsync` writer loop and a qemu TCG guest (Debian's kernel
# from QOSLAB_CACHE, a busybox init that spins). Every test must pass or be inconclusive
# with a named cause (a real-time test whose bound a starved host broke says so and passes:
# docs/TESTING.md, "Real-time assertions"); the causes are printed per round.
#
# The real-time tests are the ones whose assertions measure rates, latencies or durations
# on the wall clock (REALTIME below; a new one joins the list). --all adds the long
# scenario tests (ramp, provisioned, tenant sweeps, isolation profile, suites: ~6 min more
# per round).
set -uo pipefail
cd "$(dirname "$0")/.."
command -v cargo >/dev/null 2>&1 || export PATH="$HOME/.cargo/bin:$PATH"
export CARGO_TERM_COLOR=never NEXTEST_HIDE_PROGRESS_BAR=1

N=10
ALL=0
HOSTILE=0
for a in "$@"; do
  case "$a" in
    --all) ALL=1 ;;
    --hostile) HOSTILE=1 ;;
    ''|*[!0-9]*) echo "usage: scripts/stress-tests.sh [N] [--all] [--hostile]" >&2; exit 2 ;;
    *) N=$a ;;
  esac
done

# The integration binary's real-time modules and tests, the e2e targets that measure this
# machine, and the unit tier's few wall-clock tests.
REALTIME='(binary_id(qoslab::integration) & (test(/^(qos|array|api_live|diagnosis|hostile)::/) | test(=isolation::floors_hold_against_a_qd64_bully_and_fall_without_them) | test(=report::a_volume_on_a_running_node_gets_the_nodes_samples_over_rest) | test(=report::the_report_of_a_real_500_iops_run_draws_its_charts_in_chromium) | test(=tenants::fsyncd_writes_are_held_to_the_policy_and_pages_are_cached_once) | test(=s3_qos::bucket_policies_hold_while_an_unlimited_bucket_runs_free) | test(=nfs_node::seed000_qos_rows_hold_over_nfs) | test(=nfs_node::nconnect_16_beats_one_connection_on_the_emulated_fsx) | test(=nfs_kernel::linux_kernel_client_is_held_to_a_nas_volumes_ceiling) | test(=suites_nfs_kernel::seed002_nfs_suite_kernel_mounted_on_qemu_guest_hosts) | test(=iscsi_node::a_luns_ceiling_holds_for_fio_over_libiscsi) | test(=iscsi_kernel::the_linux_initiator_discovers_logs_in_makes_ext4_and_is_held_to_the_luns_ceiling) | test(=bench_iscsi::a_lun_is_benched_under_its_ceiling_and_written_only_with_overwrite) | test(=auth_closed::unknown_users_cost_a_hash_and_repeated_failures_back_off) | test(=api_contract::api_lists_1000_volumes_in_under_a_second)))
 | binary(e2e_live) | binary(e2e_real_hosts)
 | test(=tenants::load::tests::a_busy_node_thread_is_the_node_and_the_process_memory_is_measured)
 | test(=calibrate::tests::measures_something_plausible_and_cleans_up)
 | test(=remote::tests::a_local_server_listens_and_is_stopped_on_drop)
 | test(=tests::a_per_request_timeout_applies)'
if [ "$ALL" = 1 ]; then
  REALTIME="$REALTIME | (binary_id(qoslab::integration) & test(/^(ramp|provisioned|tenants_sweep|isolation|suites)::/))"
fi

# Built first; the rounds rebuild nothing as long as the tree is left alone while they run
# (an edit would rebuild mid-run: a round that runs no test stops the script).
cargo build --workspace --all-targets --features e2e --locked --quiet || exit 1
cargo nextest list --workspace --features e2e --locked -E "$REALTIME" 2>/dev/null \
  | grep -c . | sed 's/^/stress: real-time tests: /'
log=$(mktemp -d)/stress

# The load, each part in a process group of its own (timeout's) but in this script's
# session, so the tests share an autogroup with it; ended with this script.
LOAD=()
spawn() { timeout 86400 "$@" >/dev/null 2>&1 & LOAD+=($!); }
stop_load() { for p in "${LOAD[@]}"; do kill -KILL -- "-$p" 2>/dev/null; done; }
trap stop_load EXIT
trap 'stop_load; exit 130' INT TERM
spawn sh -c 'while :; do :; done'
if [ "$HOSTILE" = 1 ]; then
  spawn sh -c 'while :; do :; done'
  spawn sh -c "while :; do dd if=/dev/zero of='$log.fsync' bs=1M count=64 conv=fsync 2>/dev/null; done"
  cache=${QOSLAB_CACHE:-/var/cache/qoslab}
  guest=$(dirname "$log")/guest
  mkdir -p "$guest/bin"
  cp "$(command -v busybox)" "$guest/bin/busybox" || exit 1
  printf '#!/bin/busybox sh\nwhile :; do :; done\n' >"$guest/init"
  chmod +x "$guest/init"
  (cd "$guest" && find . | cpio -o -H newc --quiet) >"$guest.cpio" || exit 1
  spawn "$cache/qemu/usr/bin/qemu-system-x86_64" -L "$cache/qemu/usr/share/seabios" \
    -L "$cache/qemu/usr/share/qemu" -accel tcg -m 256 -nographic -no-reboot -nic none \
    -kernel "$(ls "$cache"/kernel/boot/vmlinuz-* | head -1)" -initrd "$guest.cpio" \
    -append "console=ttyS0 panic=-1 quiet"
  echo "stress: hostile: two CPU hogs, a dd conv=fsync writer, a qemu TCG guest (pids ${LOAD[*]})"
fi

passed=0
failed=0
start=$SECONDS
inconclusive=0
for i in $(seq 1 "$N"); do
  round=$SECONDS
  export QOSLAB_TEST_INCONCLUSIVE_DIR="$log.inconclusive.$i"
  cargo nextest run --workspace --features e2e --locked --no-fail-fast -E "$REALTIME" \
    >"$log.$i" 2>&1
  p=$(grep -cE '^\s+PASS \[' "$log.$i")
  f=$(grep -E '^\s+(FAIL|TIMEOUT|SIGSEGV|SIGABRT) \[' "$log.$i" | awk '{print $NF}' | sort -u | wc -l)
  n=$(ls "$QOSLAB_TEST_INCONCLUSIVE_DIR" 2>/dev/null | wc -l)
  if [ "$p" -eq 0 ] && [ "$f" -eq 0 ]; then
    echo "stress: round $i ran no test:"; tail -5 "$log.$i"; exit 1
  fi
  passed=$((passed + p))
  failed=$((failed + f))
  inconclusive=$((inconclusive + n))
  echo "stress: round $i/$N: $p passed ($n of them inconclusive), $f failed ($((SECONDS - round)) s, $((SECONDS - start)) s in all)"
  grep -E '^\s+(FAIL|TIMEOUT|SIGSEGV|SIGABRT) \[' "$log.$i" | awk '{print $NF}' | sort -u \
    | sed 's/^/  failed: /'
  for x in "$QOSLAB_TEST_INCONCLUSIVE_DIR"/*; do
    [ -f "$x" ] && echo "  inconclusive: $(basename "$x" | sed 's/__/::/g'): $(cut -c1-300 "$x")"
  done
done
what="a CPU hog"
[ "$HOSTILE" = 1 ] && what="two CPU hogs, an fsync writer and a TCG guest"
echo "stress: $N rounds beside $what in $((SECONDS - start)) s; logs in $log.*"
# (nextest prints each failure twice, as it happens and in its summary: once per round.)
for f in "$log".[0-9]*; do
  grep -E '^\s+(FAIL|TIMEOUT|SIGSEGV|SIGABRT) \[' "$f" | awk '{print $NF}' | sort -u
done | sort | uniq -c | sort -rn | sed 's/^/  failures: /'
echo "stress: $passed passed ($inconclusive of them inconclusive), $failed failed"
[ "$failed" -eq 0 ]

#!/usr/bin/env bash
# Directory listings: `qoslab nfs serve` against nfs-ganesha 4.3 (VFS FSAL) exporting the
# same tree, one directory of N empty files per size in SIZES, listed with libnfs's nfs-ls
# (READDIRPLUS pages, NFSv3 over loopback TCP). Each listing is timed end to end (mount,
# all pages, unmount); per server and size: the first listing after the server started
# (cold: ganesha fills its directory cache) and the median of the next ROUNDS (warm), and
# qoslab/ganesha ratios. Issue 32 measured 9.6 s for 30,000 entries (every READDIR re-listed
# the whole directory) against ganesha's 0.27 s.
#
# Usage: bench/nfs-readdir.sh            (SIZES="10000 30000" ROUNDS=3)
#        QOSLAB=target/release/qoslab SIZES=30000 bench/nfs-readdir.sh
# Needs: cargo build --release; scripts/install-deps.sh (libnfs-utils, nfs-ganesha, rpcbind).
# Starts rpcbind only if none runs (ganesha needs it), and stops what it started on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
SIZES=${SIZES:-"10000 30000"}; ROUNDS=${ROUNDS:-3}
QOSLAB=${QOSLAB:-target/release/qoslab}
[ -x "$QOSLAB" ] || { echo "nfs-readdir.sh: $QOSLAB missing: cargo build --release" >&2; exit 2; }
command -v nfs-ls >/dev/null || { echo "nfs-readdir.sh: nfs-ls missing: scripts/install-deps.sh" >&2; exit 2; }
command -v ganesha.nfsd >/dev/null || { echo "nfs-readdir.sh: nfs-ganesha missing: scripts/install-deps.sh" >&2; exit 2; }

# shellcheck source=bench/nfs-lib.sh
. bench/nfs-lib.sh

mkdir -p "$work/t"
for n in $SIZES; do
  echo "making a directory of $n files" >&2
  mkdir "$work/t/d$n"
  python3 - "$work/t/d$n" "$n" <<'PY'
import os, sys
d, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    open(os.path.join(d, f"file-{i:06d}"), "w").close()
PY
done

start_rpcbind
start_servers() {
  start_pair "EXPORT { Export_Id = 1; Path = $work/t; Pseudo = /t; Protocols = 3; Transports = TCP;
         Access_Type = RO; Squash = No_Root_Squash; FSAL { Name = VFS; } }" "/t=$work/t,ro" "$work/t"
}
stop_servers() {
  kill "$gpid" "$qpid" 2>/dev/null || true
  wait "$gpid" "$qpid" 2>/dev/null || true
}
# One listing: seconds, and the entries nfs-ls printed.
list() {
  local url=$1 t0 t1 n
  t0=$(date +%s.%N)
  n=$(nfs-ls "$url" | wc -l)
  t1=$(date +%s.%N)
  echo "$(python3 -c "print(f'{$t1 - $t0:.3f}')") $n"
}

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
results="$work/results.tsv"
for n in $SIZES; do
  start_servers   # fresh servers per size: the first listing is cold
  declare -A url=([qoslab]="nfs://127.0.0.1/t/d$n?nfsport=$qport&mountport=$qport"
                  [ganesha]="nfs://127.0.0.1$work/t/d$n?nfsport=$gport&mountport=$gmnt")
  for round in $(seq 0 "$ROUNDS"); do
    for s in qoslab ganesha; do
      read -r secs entries < <(list "${url[$s]}")
      [ "$entries" -eq "$n" ] || { echo "$s listed $entries of $n entries" >&2; exit 1; }
      printf '%s\t%s\t%s\t%s\n' "$s" "$n" "$round" "$secs" >> "$results"
    done
  done
  stop_servers
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
python3 - "$results" "$ROUNDS" <<'PY'
import sys, statistics
rows = [l.split("\t") for l in open(sys.argv[1]).read().split("\n") if l]
t = {}
for s, n, r, secs in rows:
    t.setdefault((s, int(n)), []).append((int(r), float(secs)))
print(f"| entries | server | first listing (s) | median of next {sys.argv[2]} (s) | entries/s (warm) |")
print("|---|---|---|---|---|")
for n in sorted({k[1] for k in t}):
    warm = {}
    for s in ["qoslab", "ganesha"]:
        v = dict(t[(s, n)])
        warm[s] = statistics.median(x for r, x in v.items() if r > 0)
        print(f"| {n:,} | {s} | {v[0]:.3f} | {warm[s]:.3f} | {n / warm[s]:,.0f} |")
    print(f"| {n:,} | **qoslab/ganesha** | | **{warm['qoslab'] / warm['ganesha']:.2f}x** | |")
PY

#!/usr/bin/env bash
# bench/tls.sh -- NBD over TLS vs plaintext on one qoslab node, in one run.
#
# Usage: bench/tls.sh [ROUNDS]   (default 2; needs target/release/qoslab, fio, nbdcopy)
#
# Starts `qoslab serve --nbd-tls on` on loopback TCP with a 1 GiB volume filled with
# random data, then alternates plaintext (nbd://) and TLS (nbds://) for:
#   - fio 4k randread QD32, 200,000 I/Os: IOPS, p50, and server CPU µs per request
#     (bench/cpu-per-request.sh; CPU per request is stable on a loaded machine);
#   - nbdcopy of the whole volume to /dev/null (multi-conn): seconds and MiB/s.
# fio's nbd engine cannot name a certificate directory in its URI, so its TLS runs use
# libnbd's default one: HOME points at a directory holding .pki/libnbd/ca-cert.pem.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-2}
QOSLAB=${QOSLAB:-target/release/qoslab}
[ -x "$QOSLAB" ] || { echo "build first: cargo build --release -p qoslab" >&2; exit 1; }
work=$(mktemp -d /tmp/qoslab-tls-bench.XXXXXX)
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT INT TERM
printf '[[volume]]\nname = "vol"\nsize = "1GiB"\n' > "$work/node.toml"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$QOSLAB" serve --config "$work/node.toml" --data-dir "$work/data" --listen-tcp "127.0.0.1:$port" \
    --listen-unix "$work/nbd.sock" --listen-http off --nbd-tls on > "$work/serve.log" 2>&1 &
pid=$!
for _ in $(seq 100); do grep -q "qoslab: ready" "$work/serve.log" && break; sleep 0.1; done
certs="$work/data/tls"
mkdir -p "$work/home/.pki/libnbd" && cp "$certs/ca-cert.pem" "$work/home/.pki/libnbd/"
head -c 1G /dev/urandom > "$work/fill.bin"
nbdcopy "$work/fill.bin" "nbd://127.0.0.1:$port/vol"
rm -f "$work/fill.bin"
plain="nbd://localhost:$port/vol"
tls="nbds://localhost:$port/vol"
echo "uptime before: $(uptime)"
for r in $(seq "$rounds"); do
    for kind in plain tls; do
        uri=$plain; [ "$kind" = tls ] && uri=$tls
        printf 'round %d %-5s fio 4k randread QD32: ' "$r" "$kind"
        HOME="$work/home" bench/cpu-per-request.sh "$pid" "$uri" randread 4k 32 200000 | tr '\n' ' '
        echo
        copy="$uri"; [ "$kind" = tls ] && copy="$tls?tls-certificates=$certs"
        t0=$(date +%s.%N); nbdcopy "$copy" null: ; t1=$(date +%s.%N)
        python3 -c "import sys; s=float(sys.argv[2])-float(sys.argv[1]); print(f'round $r $kind nbdcopy 1 GiB -> null: {s:.2f} s, {1024/s:.0f} MiB/s')" "$t0" "$t1"
    done
done
echo "uptime after: $(uptime)"

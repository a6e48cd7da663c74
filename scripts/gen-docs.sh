#!/usr/bin/env bash
# Shell completions and man pages from the built binary (the same command tree as --help):
# target/completions/{qoslab.bash,_qoslab,qoslab.fish} and target/man/*.1. For packaging;
# the binary also prints them on demand (`qoslab completions SHELL`, `qoslab man DIR`).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p qoslab
Q=target/release/qoslab
mkdir -p target/completions target/man
"$Q" completions bash > target/completions/qoslab.bash
"$Q" completions zsh > target/completions/_qoslab
"$Q" completions fish > target/completions/qoslab.fish
"$Q" man target/man

#!/usr/bin/env bash
# The project's test command: installs prerequisites, builds from scratch, runs every test
# (unit, virtual-time QoS accuracy, and the integration suite against the real binary with
# real fio / nbdinfo / nbdcopy / qemu-img), then the lint gates and the module-cycle check.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cargo >/dev/null 2>&1 || export PATH="$HOME/.cargo/bin:$PATH"
scripts/install-deps.sh
export CARGO_TERM_COLOR=${CARGO_TERM_COLOR:-never}
cargo build --workspace --all-targets --locked 2>&1 | tail -n 3
cargo test --workspace --locked -- --test-threads=2
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
# No import cycles between crates or between the modules of any crate (with its self-test).
python3 scripts/check-module-cycles.py --self-test
echo "scripts/test.sh: all green"

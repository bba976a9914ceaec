#!/bin/sh
# Benchmarks of `mm -acp`: cold start, peak RSS, relay overhead, session/load, session/list of
# 1 000 sessions, mm's CPU while a command reports its progress (docs/acp-reference.md,
# "Benchmarks").
# Usage: bench/acp.sh [path/to/mm]   (default: builds and uses target/release/mm, under $CARGO_TARGET_DIR when set)
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
mm=${1:-}
if [ -z "$mm" ]; then
    cargo build --release --manifest-path "$here/Cargo.toml" --bin mm >&2
    mm="${CARGO_TARGET_DIR:-$here/target}/release/mm"
fi
exec python3 "$here/bench/acp_bench.py" "$mm"

#!/bin/sh
# Benchmarks of mm as an ACP client: the whole `mm --ask "mm -acp"` exchange, and the relay
# overhead of a follow-up question through `ask_agent` (docs/agents.md).
# Usage: bench/ask.sh [path/to/mm]   (default: builds and uses target/release/mm, under $CARGO_TARGET_DIR when set)
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
mm=${1:-}
if [ -z "$mm" ]; then
    cargo build --release --manifest-path "$here/Cargo.toml" --bin mm >&2
    mm="${CARGO_TARGET_DIR:-$here/target}/release/mm"
fi
exec python3 "$here/bench/ask_bench.py" "$mm"

#!/bin/sh
# Load and memory of `mm -acp` against the fake model: turns/s with 20 prompts queued, RSS per
# idle session over 1 000 sessions, RSS growth over 10 000 turns (a new session every 50, after a
# 1 000-turn warm-up), a 300 MB line over the cap and a valid line at the cap. Exits 1 when a limit
# is broken (bench/load_bench.py). Figures: docs/acp.md, "Load and memory".
# Usage: bench/load.sh [path/to/mm path/to/mm-fake-server]   (default: a release build)
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
mm=${1:-}
fake=${2:-}
if [ -z "$mm" ]; then
    target=${CARGO_TARGET_DIR:-$here/target}
    cargo build --release --manifest-path "$here/Cargo.toml" --bin mm --bin mm-fake-server >&2
    mm="$target/release/mm"
    fake="$target/release/mm-fake-server"
fi
exec python3 "$here/bench/load_bench.py" "$mm" "$fake"

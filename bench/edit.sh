#!/bin/sh
# Benchmark of edit_file on a 10 MB file (crates/mm-tools/examples/edit_bench.rs), release build:
# an exact edit, a loose one, and calls whose old_text matches nothing so that every strategy and
# reading runs before the closest lines are searched. Each median, reading and writing the file
# included, must stay under 50 ms (exit 1 otherwise).
# Usage: bench/edit.sh
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
cargo build --release --quiet --manifest-path "$here/Cargo.toml" -p mm-tools --example edit_bench >&2
"${CARGO_TARGET_DIR:-$here/target}/release/examples/edit_bench"

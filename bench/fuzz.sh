#!/bin/sh
# The fuzz driver (crates/mm-testkit/examples/fuzz.rs): the parsers of outside input on random and mutated inputs
# for a given time; prints the inputs tried per target, the crashes and the peak RSS of a worker,
# and exits 1 if anything crashed or hung (no progress for 10 s). Crashing and hanging inputs are
# written to target/fuzz-crashes/.
# Usage: bench/fuzz.sh [SECONDS [WORKERS [SEED [TARGET]]]]   (default: 60 s, 2 workers, seed from
# the clock, every target; TARGET runs one, e.g. text-calls)
# Figures: docs/fuzzing.md.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-60}
workers=${2:-2}
seed=${3:-}
only=${4:-}
target=${CARGO_TARGET_DIR:-$here/target}
cargo build --release --manifest-path "$here/Cargo.toml" --example fuzz >&2
set -- --seconds "$seconds" --workers "$workers" --out "$target/fuzz-crashes"
if [ -n "$seed" ]; then set -- "$@" --seed "$seed"; fi
if [ -n "$only" ]; then set -- "$@" --only "$only"; fi
exec "$target/release/examples/fuzz" "$@"

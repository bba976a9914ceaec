#!/bin/sh
# Benchmarks of the fetch_content and lsp tools (crates/mm-tools/examples/toolbox_bench.rs), release build:
#   fetch_content of a 10 MB HTML page from a local server: converted and cut in < 1 s, with the
#     growth of the process's peak RSS under 3x the page (three runs, one process each);
#   lsp definition on a warm pylsp: median < 100 ms from the call to its result, of which mm's
#     own share (framing, file sync, formatting) < 2 ms. Needs pylsp on PATH.
# Usage: bench/toolbox.sh
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
cargo build --release --quiet --manifest-path "$here/Cargo.toml" --example toolbox_bench >&2
bin="${CARGO_TARGET_DIR:-$here/target}/release/examples/toolbox_bench"
for _ in 1 2 3; do "$bin" fetch; done
if command -v pylsp >/dev/null 2>&1; then
    "$bin" lsp
else
    echo "lsp: skipped (pylsp is not installed: pip install 'python-lsp-server[pyflakes]')"
fi

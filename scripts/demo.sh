#!/usr/bin/env bash
# Builds mm and runs it against the bundled demo model server (mm-fake-server), so mm can be
# tried without a real model. Arguments go to mm: `scripts/demo.sh` for the interactive
# session, `scripts/demo.sh -p "list the files"` for one turn.
#
# With a real local server instead (llama.cpp, Ollama, LM Studio, vLLM…), skip this script:
#   MM_MODEL_URL=http://127.0.0.1:8080/v1 target/release/mm
#
# The first run builds mm in release mode: cargo's own progress shows on stderr (about seven
# minutes on two busy cores, measured; seconds once built).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -x target/release/mm ] && [ -x target/release/mm-fake-server ]; then
    echo "demo: checking the release build of mm (seconds when nothing changed)" >&2
else
    echo "demo: building mm in release mode, once: about seven minutes on two busy cores (cargo's progress below)" >&2
fi
started=$SECONDS
if ! cargo build --release --bin mm --bin mm-fake-server; then
    echo "demo: the build failed after $((SECONDS - started)) s: cargo's messages are above (cargo build --release --bin mm shows them again)" >&2
    exit 1
fi
out=$(mktemp)
target/release/mm-fake-server --port 0 >"$out" 2>/dev/null &
server=$!
trap 'kill $server 2>/dev/null || true; rm -f "$out"' EXIT
for _ in $(seq 1 50); do
    [ -s "$out" ] && break
    sleep 0.1
done
url=$(head -n 1 "$out")
[ -n "$url" ] || { echo "demo: the demo server did not start" >&2; exit 1; }
echo "demo: the bundled demo model answers at $url (ask it to \"list the files\")" >&2
MM_MODEL_URL=$url target/release/mm "$@"

#!/usr/bin/env bash
# Checks what the README promises: `cargo install --locked --path crates/mm` installs an mm
# whose `mm --version` runs. Into a folder of target/ (the user's ~/.cargo stays as it was).
#
#   scripts/install-check.sh [--debug]
#
# --debug installs the dev profile (reusing the dev build: about a minute on two busy cores);
# without it, the release profile in its own target folder, as a user gets it (fat LTO: many
# minutes). The release workflow runs it without --debug.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)/target/install-check
rm -rf "$root"
args=(install --locked --path crates/mm --root "$root" --bin mm)
if [ "${1:-}" = "--debug" ]; then
    args+=(--debug --target-dir target)
else
    args+=(--target-dir target/install)
fi
start=$(date +%s)
cargo "${args[@]}"
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
said=$("$root/bin/mm" --version)
[ "$said" = "v$version" ] || { echo "install-check: mm --version says '$said', not v$version" >&2; exit 1; }
echo "install-check: cargo ${args[*]} → $said in $(( $(date +%s) - start )) s" >&2

#!/usr/bin/env bash
# Builds the release archive of mm for one target, named as the ACP registry entry names it
# (dist/acp-registry/mm/agent.json): mm-<version>-<target>.tar.gz (.zip for Windows), the binary
# at the archive's root, and beside it <archive>.sha256 ("<hash>  <archive>", as sha256sum -c
# reads it). On the target's own machine the archive is then extracted and its `mm --version`
# run, which must print v<version>.
#
#   scripts/release.sh [TARGET] [--profile PROFILE] [--out DIR]
#
# TARGET: a Rust target triple, the host's by default (.github/workflows/release.yml builds the
# six of the registry on their own runners). PROFILE: `release` by default; `dev` makes the same
# archive from the debug build in a few seconds, to check this script. DIR: where the archive
# goes, target/dist by default.
set -euo pipefail
cd "$(dirname "$0")/.."

target="" profile=release out=target/dist
while [ $# -gt 0 ]; do
    case "$1" in
        --profile) profile=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        -*) echo "release: unknown option $1" >&2; exit 2 ;;
        *) target=$1; shift ;;
    esac
done
host=$(rustc -vV | sed -n 's/^host: //p')
target=${target:-$host}
# The workspace's version, the one `mm --version` prints (with a `v`).
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
[ -n "$version" ] || { echo "release: no version in Cargo.toml" >&2; exit 1; }

# The host's own target is built without --target: the same target folder as every other build.
args=(build --locked --profile "$profile" -p mm --bin mm)
dir=target
if [ "$target" != "$host" ]; then
    args+=(--target "$target")
    dir=target/$target
fi
case "$profile" in dev) dir=$dir/debug ;; *) dir=$dir/$profile ;; esac
cargo "${args[@]}"

exe=mm
case "$target" in *windows*) exe=mm.exe ;; esac
name=mm-$version-$target
mkdir -p "$out"
out=$(cd "$out" && pwd)
stage=$(mktemp -d target/mm-release.XXXXXX)
stage=$(cd "$stage" && pwd)
trap 'rm -rf "$stage"' EXIT
cp "$dir/$exe" "$stage/$exe"
case "$target" in
    *windows*)
        archive=$name.zip
        rm -f "$out/$archive"
        if command -v 7z >/dev/null; then
            (cd "$stage" && 7z a -tzip -bso0 "$out/$archive" "$exe")
        else
            (cd "$stage" && zip -q "$out/$archive" "$exe")
        fi
        ;;
    *)
        archive=$name.tar.gz
        tar -czf "$out/$archive" -C "$stage" "$exe"
        ;;
esac
if command -v sha256sum >/dev/null; then
    (cd "$out" && sha256sum "$archive" >"$archive.sha256")
else
    (cd "$out" && shasum -a 256 "$archive" >"$archive.sha256")
fi

# On the target's machine: the archive as a user gets it runs.
if [ "$target" = "$host" ]; then
    check=$stage/check
    mkdir -p "$check"
    case "$archive" in
        *.zip) (cd "$check" && unzip -q "$out/$archive") ;;
        *) tar -xzf "$out/$archive" -C "$check" ;;
    esac
    said=$("$check/$exe" --version)
    [ "$said" = "v$version" ] || { echo "release: $archive's mm --version says '$said', not v$version" >&2; exit 1; }
    echo "release: $out/$archive (mm --version: $said)" >&2
else
    echo "release: $out/$archive (not run: built for $target on $host)" >&2
fi

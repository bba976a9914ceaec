#!/usr/bin/env bash
# Checks that mm compiles for macOS and Windows from this Linux machine (docs/platforms.md):
# `cargo check -Zbuild-std` with Debian's rustc-web toolchain (1.96, which ships the standard
# library's source), for the lib and binaries of every crate. Nothing is linked, so no macOS SDK or
# Windows linker is needed; only the C code of -sys crates (ring) must compile: with clang and three
# stand-in SDK headers for macOS, with mingw for Windows.
#
#   scripts/cross-check.sh [TARGET ...]     default: macOS and Windows below, then Linux
#   MM_ROOT=<checkout> MM_CROSS_PACKAGES="-p mm-term" bash cross-check.sh   (one crate, any checkout)
#
# One line per target; exit 1 on any error, or on any warning from mm's own code (dependencies'
# warnings are capped by cargo). The targets' std and dependencies are cached in
# $MM_CROSS_DIR (default ~/.cache/mm-cross): the first run builds std per target (2–4 minutes each
# on two cores), later runs only mm.
set -euo pipefail

cd "${MM_ROOT:-$(dirname "$0")/..}"
# The packages checked: the whole workspace unless MM_CROSS_PACKAGES names some ("-p mm-term").
read -r -a packages <<<"${MM_CROSS_PACKAGES:---workspace}"
targets=("$@")
# x86_64-apple-darwin is left out: mm's code has no cfg on the architecture, so its cfgs are
# aarch64-apple-darwin's (docs/platforms.md); name it to check it too.
[ ${#targets[@]} -gt 0 ] || targets=(aarch64-apple-darwin x86_64-pc-windows-gnu x86_64-unknown-linux-gnu)
cache=${MM_CROSS_DIR:-$HOME/.cache/mm-cross}
mkdir -p "$cache"

need=()
[ -d /usr/lib/rustlib/src/rust/library ] || need+=(rustc-web cargo-web rust-web-src)
command -v clang >/dev/null 2>&1 || need+=(clang)
command -v x86_64-w64-mingw32-gcc >/dev/null 2>&1 || need+=(gcc-mingw-w64-x86-64)
if [ ${#need[@]} -gt 0 ]; then
    echo "installing ${need[*]} (Debian packages, once per machine)"
    export DEBIAN_FRONTEND=noninteractive
    { apt-get update -qq && apt-get install -y -qq "${need[@]}"; } >"$cache/apt.log" 2>&1 \
        || { tail -n 20 "$cache/apt.log" >&2; echo "cross-check: cannot install ${need[*]}" >&2; exit 1; }
fi

# Stand-ins for the three macOS SDK headers ring's C code includes (checking only: nothing links).
sdk=$cache/sdk-stub
mkdir -p "$sdk"
cat >"$sdk/TargetConditionals.h" <<'H'
#pragma once
#define TARGET_OS_MAC 1
#define TARGET_OS_OSX 1
#define TARGET_OS_IPHONE 0
#define TARGET_OS_IOS 0
#define TARGET_OS_TV 0
#define TARGET_OS_WATCH 0
#define TARGET_OS_SIMULATOR 0
#define TARGET_OS_EMBEDDED 0
H
cat >"$sdk/assert.h" <<'H'
#pragma once
#define assert(x) ((void)0)
#define static_assert _Static_assert
H
cat >"$sdk/string.h" <<'H'
#pragma once
#include <stddef.h>
void *memcpy(void *, const void *, size_t);
void *memset(void *, int, size_t);
int memcmp(const void *, const void *, size_t);
void *memmove(void *, const void *, size_t);
size_t strlen(const char *);
H
rd=$(clang -print-resource-dir)

failed=0
for t in "${targets[@]}"; do
    log=$cache/$t.log
    env=(RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc RUSTC_BOOTSTRAP=1 CARGO_TARGET_DIR="$cache/target"
         CARGO_TERM_COLOR=never)
    build_std=(-Zbuild-std=std,panic_abort)
    case $t in
        *-apple-darwin)
            arch=${t%%-*}; [ "$arch" = aarch64 ] && arch=arm64
            v=${t//-/_}
            env+=("CC_$v=clang" "CFLAGS_$v=-target $arch-apple-macos11 -ffreestanding -nostdinc -isystem $rd/include -isystem $sdk")
            ;;
        # The linker as scripts/windows-test.sh sets it, so that both share one std for Windows.
        x86_64-pc-windows-gnu) env+=(CC_x86_64_pc_windows_gnu=x86_64-w64-mingw32-gcc
                                     CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER=x86_64-w64-mingw32-gcc) ;;
        x86_64-unknown-linux-gnu) build_std=() ;;   # Debian's toolchain has Linux's std
    esac
    start=$SECONDS
    rc=0
    env "${env[@]}" /usr/bin/cargo check "${build_std[@]}" --target "$t" "${packages[@]}" --lib --bins \
        --message-format=short >"$log" 2>&1 || rc=$?
    errors=$(grep -ac ': error' "$log" || true)
    warnings=$(grep -ac ': warning' "$log" || true)
    took=$((SECONDS - start))
    if [ "$rc" -ne 0 ] || [ "$errors" -gt 0 ] || [ "$warnings" -gt 0 ]; then
        printf '%-26s FAILED: %s errors, %s warnings (%d s)\n' "$t" "$errors" "$warnings" "$took"
        grep -aE ': (error|warning)' "$log" | head -n 40 | sed 's/^/    /'
        [ "$rc" -ne 0 ] && [ "$errors" -eq 0 ] && tail -n 20 "$log" | sed 's/^/    /'
        failed=1
    else
        printf '%-26s ok (%d s)\n' "$t" "$took"
    fi
done
exit "$failed"

#!/usr/bin/env bash
# Runs mm's tests on Windows from this Linux machine (docs/platforms.md): builds the workspace's
# test executables for x86_64-pc-windows-gnu with Debian's rustc-web toolchain (-Zbuild-std, as
# scripts/cross-check.sh does) and runs each under Wine.
#
#   scripts/windows-test.sh                  # every test of the workspace
#   scripts/windows-test.sh -- <filter>      # after --, to the test executables (faults::)
#
# The whole workspace is always built (a -p would build the dependencies again with other
# features); arguments go to cargo test, those after -- to every test executable.
#
# Installs what it needs with apt once per machine (rustc-web, cargo-web, rust-web-src,
# gcc-mingw-w64-x86-64, wine64). The Wine prefix and the target folder live outside the checkout,
# in $MM_CROSS_DIR (default ~/.cache/mm-cross, shared with the cross-check: the same std for
# Windows is built once). Without arguments it then drives mm's interactive terminal under Wine
# through a pseudo-terminal (one more test). The last line is
# `windows: N passed, M failed, K skipped`; the exit code is non-zero on any failure (an
# executable that died without its summary included) and on any error or warning of the build.
#
# Wine 8.0 (Debian 12's) lacks bcryptprimitives.dll, whose ProcessPrng Rust's std and getrandom
# call for random bytes: every exe would exit 53 without a word. A stand-in built here with
# mingw fills the buffer with advapi32's RtlGenRandom.
#
# The tests run without CI=true: the programs the Windows job must have (Git for Windows' bash,
# sh and git, python3, ConPTY) do not exist under Wine, and the tests that need them skip with
# the reason, listed at the end. On a real Windows runner under CI=true they must run.
set -uo pipefail

cd "${MM_ROOT:-$(dirname "$0")/..}"
root=$PWD
target=x86_64-pc-windows-gnu
cache=${MM_CROSS_DIR:-$HOME/.cache/mm-cross}
prefix=$cache/wine
mkdir -p "$cache"

fail() { printf 'windows-test: %s\n' "$*" >&2; exit 1; }

need=()
[ -d /usr/lib/rustlib/src/rust/library ] || need+=(rustc-web cargo-web rust-web-src)
command -v x86_64-w64-mingw32-gcc >/dev/null 2>&1 || need+=(gcc-mingw-w64-x86-64)
command -v wine >/dev/null 2>&1 || need+=(wine64)
if [ ${#need[@]} -gt 0 ]; then
    echo "installing ${need[*]} (Debian packages, once per machine)"
    export DEBIAN_FRONTEND=noninteractive
    { apt-get update -qq && apt-get install -y -qq "${need[@]}"; } >"$cache/apt-wine.log" 2>&1 \
        || { tail -n 20 "$cache/apt-wine.log" >&2; fail "cannot install ${need[*]}"; }
fi

export WINEPREFIX=$prefix WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
if [ ! -f "$prefix/system.reg" ]; then
    echo "making the Wine prefix $prefix (once per machine)"
    wine wineboot -i >"$cache/wineboot.log" 2>&1 || { tail -n 20 "$cache/wineboot.log" >&2; fail "wineboot failed"; }
    wineserver -w
fi
dll=$prefix/drive_c/windows/system32/bcryptprimitives.dll
if [ ! -f "$dll" ]; then
    src=$cache/bcryptprimitives.c
    cat >"$src" <<'C'
/* A stand-in for Windows' bcryptprimitives.dll, which Wine 8.0 lacks: ProcessPrng as Windows
   documents it (always TRUE), from RtlGenRandom. */
#include <windows.h>
BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);
__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length) {
    while (length > 0) {
        ULONG chunk = length > 0x40000000 ? 0x40000000 : (ULONG)length;
        if (!SystemFunction036(data, chunk))
            return FALSE;
        data += chunk;
        length -= chunk;
    }
    return TRUE;
}
C
    x86_64-w64-mingw32-gcc -shared -O2 -o "$dll" "$src" -ladvapi32 || fail "cannot build the stand-in bcryptprimitives.dll"
fi

log=$cache/windows-test.log
build_log=$cache/windows-build.log
cargo_env=(RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc RUSTC_BOOTSTRAP=1 CARGO_TARGET_DIR="$cache/target"
           CARGO_TERM_COLOR=never
           CC_x86_64_pc_windows_gnu=x86_64-w64-mingw32-gcc
           CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER=x86_64-w64-mingw32-gcc
           CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER=wine
           INSTA_WORKSPACE_ROOT="$root")
# The whole workspace, always: a -p would build the dependencies again with other features
# (--workspace makes cargo ignore it); arguments after -- choose the tests.
test_args=(-Zbuild-std=std,panic_abort --target "$target" --workspace --all-targets)

# The build first, on its own: like the cross-check it fails on any error or any warning from
# mm's own code, tests included (dependencies' warnings are capped by cargo).
start=$SECONDS
rc=0
env "${cargo_env[@]}" /usr/bin/cargo test "${test_args[@]}" --no-run --message-format=short "$@" \
    >"$build_log" 2>&1 || rc=$?
errors=$(grep -ac ': error' "$build_log" || true)
warnings=$(grep -ac ': warning' "$build_log" || true)
if [ "$rc" -ne 0 ] || [ "$errors" -gt 0 ] || [ "$warnings" -gt 0 ]; then
    grep -aE ': (error|warning)' "$build_log" | head -n 40
    [ "$rc" -ne 0 ] && [ "$errors" -eq 0 ] && tail -n 20 "$build_log"
    printf 'windows: the build FAILED: %s errors, %s warnings (%d s; %s)\n' "$errors" "$warnings" \
        "$((SECONDS - start))" "$build_log"
    exit 1
fi
built=$((SECONDS - start))

# One wineserver for the whole run: started on demand, it exits a few seconds after its last
# process, and a test executable starting at that moment dies ("wine client error"). Its
# services are started here, away from the pipe below, which they would otherwise hold open.
wineserver -p
trap 'wineserver -k 2>/dev/null || true' EXIT
wine wineboot </dev/null >/dev/null 2>&1 || fail "wine wineboot failed"

# Without CI=true: under Wine the programs the Windows job must have (Git for Windows' bash, sh
# and git, python3, a pseudo-console) are missing, and the tests that need them skip, each with
# its reason (listed below).
env -u CI "${cargo_env[@]}" /usr/bin/cargo test "${test_args[@]}" --no-fail-fast "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}

# The interactive terminal (crossterm's Windows path) in a pseudo-terminal of this machine, as
# far as Wine's console shows it: the banner, keys typed and Enter, /help, /mcp (the user's
# config file in Windows' form), Ctrl-D leaving with 0. Counted as one test.
mm_exe=$cache/target/$target/debug/mm.exe
term_dir=$(mktemp -d "${TMPDIR:-/tmp}/mm-win-term.XXXXXX")
term_rc=0
if [ $# -gt 0 ]; then
    term_rc=skipped   # a run of some tests only: not this one
else
python3 - "$mm_exe" "$term_dir" >"$cache/windows-terminal.log" 2>&1 <<'PY' || term_rc=$?
import fcntl, os, pty, select, struct, sys, termios, time
exe, cwd = sys.argv[1], sys.argv[2]
pid, fd = pty.fork()
if pid == 0:
    # 200 columns: no line of /help or /mcp is wrapped.
    fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 200, 0, 0))
    os.chdir(cwd)
    os.environ.update(TERM="xterm", NO_COLOR="1")
    # Windows' own folders (%APPDATA%), whatever this machine's XDG variables say.
    for name in ("XDG_CONFIG_HOME", "XDG_STATE_HOME"):
        os.environ.pop(name, None)
    os.execvp("wine", ["wine", exe, "--url", "http://127.0.0.1:9/v1"])
out = b""
def until(what, seconds=60):
    global out
    end = time.time() + seconds
    while what.encode() not in out and time.time() < end:
        if select.select([fd], [], [], 0.5)[0]:
            try:
                data = os.read(fd, 65536)
            except OSError:
                break
            if not data:
                break
            out += data
    if what.encode() not in out:
        sys.exit(f"not seen: {what!r}\nthe terminal showed:\n{out.decode(errors='replace')}")
def typed(text):
    for c in text:
        os.write(fd, c.encode())
until("/help for commands · Ctrl-D to leave")
until("(mm doctor checks)")
typed("/help\r")
until("/quit         Leave mm (also Ctrl-D)")
until("Ctrl-D                   leave (on an empty line)")
typed("/mcp\r")
until(r"no MCP servers (add one under [mcp.servers.NAME] in ~\AppData\Roaming\mm\config.toml)")
os.write(fd, b"\x04")
end = time.time() + 60
while time.time() < end:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        sys.exit(0 if os.waitstatus_to_exitcode(status) == 0 else f"exit status {status}")
    if select.select([fd], [], [], 0.5)[0]:
        try:
            os.read(fd, 65536)
        except OSError:
            pass
sys.exit("Ctrl-D did not end mm")
PY
fi
rm -rf "$term_dir"
if [ "$term_rc" = skipped ]; then
    :
elif [ "$term_rc" -eq 0 ]; then
    echo "the terminal under Wine: banner, keys, Enter, /help, /mcp and Ctrl-D work"
else
    echo "the terminal under Wine FAILED ($cache/windows-terminal.log):"
    tail -n 20 "$cache/windows-terminal.log" | sed 's/^/    /'
fi

# Per executable of a log: its summary line; one that failed without it died first (a
# failure). With retry=1, one that died before it began (it printed nothing at all, not even
# `running N tests`) is not counted but its package and path are written to $reruns: now and
# then a Windows program starting under Wine dies so, whatever it is (seen once in six full
# runs, never with the executable run alone), and it is run once more below.
count() {
    awk -v retry="$2" -v reruns="$reruns" '
        function close_one() {
            if (open && failed_exe) {
                if (started || !retry) died++
                else { print package, exe > reruns; again++ }
            }
            open = 0; failed_exe = 0; started = 0
        }
        /^ +Running / { close_one(); open = 1; exe = $NF; sub(/^\(/, "", exe); sub(/\)$/, "", exe) }
        /^running [0-9]+ tests?$/ { started = 1 }
        /^test result: / {
            open = 0
            for (i = 1; i <= NF; i++) {
                if ($(i) ~ /^passed;?$/) p += $(i - 1)
                if ($(i) ~ /^failed;?$/) f += $(i - 1)
                if ($(i) ~ /^ignored;?$/) g += $(i - 1)
            }
        }
        /^error: test failed, to rerun pass / {
            errors++; failed_exe = 1
            package = $0; sub(/^[^`]*`-p /, "", package); sub(/[ `].*$/, "", package)
            close_one()
        }
        END { close_one(); print p + 0, f + 0, g + 0, died + 0, errors + 0, again + 0 }' "$1"
}
reruns=$cache/windows-reruns
: >"$reruns"
read -r passed failed ignored died errors again < <(count "$log" 1)
# cargo's failure is the dead executables' alone: what decides is their second run.
[ "$rc" -ne 0 ] && [ "$errors" -eq "$again" ] && rc=0
filter=()
after=0
for a in "$@"; do
    if [ "$after" -eq 1 ]; then filter+=("$a"); elif [ "$a" = -- ]; then after=1; fi
done
: >"$log.again"
# As cargo runs it: under Wine, in its package's folder.
while read -r package exe; do
    echo "     Running $exe again: it died under Wine before it began" | tee -a "$log.again"
    exe_rc=0
    (cd "$root/crates/$package" && env -u CI "${cargo_env[@]}" wine "$exe" ${filter[@]+"${filter[@]}"}) \
        2>&1 </dev/null | tee -a "$log.again" || exe_rc=1
    if [ "$exe_rc" -ne 0 ]; then
        rc=1
        echo "error: test failed, to rerun pass \`-p $package\`" >>"$log.again"
    fi
done <"$reruns"
if [ "$again" -gt 0 ]; then
    read -r p2 f2 g2 d2 _ _ < <(count "$log.again" 0)
    passed=$((passed + p2)) failed=$((failed + f2)) ignored=$((ignored + g2)) died=$((died + d2))
fi
failed=$((failed + died))
case $term_rc in
    0) passed=$((passed + 1)) ;;
    skipped) ;;
    *) failed=$((failed + 1)) ;;
esac

echo
echo "skipped (ignored) under Wine, with the reason:"
grep -ahE '^test .* \.\.\. ignored' "$log" "$log.again" | sed -E 's/^test /    /; s/ +\.\.\. ignored/ ... ignored/' | sort
[ "$again" -gt 0 ] && echo "$again test executable(s) died under Wine before they began, and were run again ($log.again)"
[ "$died" -gt 0 ] && echo "$died test executable(s) died before their summary (see $log and $log.again)"
printf 'built in %d s, ran in %d s\n' "$built" "$((SECONDS - start - built))"
if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
    echo "cargo test exited $rc, yet no test failed (see $log)"
    failed=1
fi
echo "windows: $passed passed, $failed failed, $ignored skipped"
[ "$rc" -eq 0 ] && [ "$failed" -eq 0 ]

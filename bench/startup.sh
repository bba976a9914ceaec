#!/usr/bin/env bash
# Startup to the prompt: the time from starting `mm` in a pseudo-terminal to its prompt `> `
# appearing, with a configured server URL (so nothing waits on detection). Median of N runs after
# one warm-up. Target: under 50 ms.
#
#   bench/startup.sh [path/to/mm] [runs]      (default: target/release/mm, else target/debug/mm; 9)
#
# The URL points at a closed port: detection runs in the background and must not delay the prompt.
set -euo pipefail
cd "$(dirname "$0")/.."
MM="${1:-}"
if [ -z "$MM" ]; then
  if [ -x target/release/mm ]; then MM=target/release/mm; else MM=target/debug/mm; fi
fi
RUNS="${2:-9}"
[ -x "$MM" ] || { echo "no mm binary at $MM (cargo build first)" >&2; exit 1; }

python3 - "$MM" "$RUNS" <<'PY'
import os, pty, select, signal, statistics, sys, tempfile, time

mm, runs = os.path.abspath(sys.argv[1]), int(sys.argv[2])

def once():
    home = tempfile.mkdtemp(prefix="mm-bench-")
    env = {
        "HOME": home,
        "XDG_STATE_HOME": os.path.join(home, "state"),
        "XDG_CONFIG_HOME": os.path.join(home, "config"),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "TERM": "xterm",
        "NO_COLOR": "1",
        "MM_MODEL_URL": "http://127.0.0.1:9/v1",
    }
    start = time.perf_counter()
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(home)
        os.execve(mm, [mm], env)
    seen = b""
    elapsed = None
    deadline = start + 10
    while time.perf_counter() < deadline:
        r, _, _ = select.select([fd], [], [], 0.5)
        if not r:
            continue
        try:
            data = os.read(fd, 4096)
        except OSError:
            break
        if not data:
            break
        seen += data
        if b"> " in seen:
            elapsed = time.perf_counter() - start
            break
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    os.close(fd)
    if elapsed is None:
        sys.exit(f"no prompt within 10 s; output: {seen[-400:]!r}")
    return elapsed * 1000

once()  # warm-up
times = sorted(once() for _ in range(runs))
median = statistics.median(times)
print(f"startup to prompt: median {median:.1f} ms over {runs} runs "
      f"(min {times[0]:.1f}, max {times[-1]:.1f}) — target < 50 ms")
# A missed target is a failed run.
if median >= 50:
    sys.exit("missed the target of 50 ms")
PY

#!/usr/bin/env bash
# What the sandbox costs a `bash` call (docs/sandbox.md): `echo hi`, from the end of the model's
# answer that asks for it to the next request (which carries its result), median over many
# calls, with tools.sandbox = off and = workspace-write (and read-only), runs of each mode
# alternating so that the machine's load falls on both alike. The difference of the medians is
# the fence's cost: building the Landlock ruleset in mm, and in the child the private mount
# namespace (a private devpts in both modes, .mm/ read-only in workspace-write), root's
# capability cut, restrict_self and the seccomp filter. On a loaded machine the end-to-end medians
# move by more than the fence costs, so the fence alone is measured first (crates/mm-tools/examples/fence_cost.rs:
# spawning /bin/true in it, the modes in turn spawn by spawn, when cargo is there), with and
# without the fence's network namespace and mm's proxy (budget: under 2 ms a call), then a
# 200 MB download from a local server through the proxy and directly (budget: within 2×); the
# example fails when a budget is missed.
#
#   bench/sandbox.sh [path/to/mm] [calls per run] [runs per mode]
#        (default: target/release/mm, else target/debug/mm; 100; 5)
set -euo pipefail
cd "$(dirname "$0")/.."
MM="${1:-}"
if [ -z "$MM" ]; then
  if [ -x target/release/mm ]; then MM=target/release/mm; else MM=target/debug/mm; fi
fi
CALLS="${2:-100}"
RUNS="${3:-5}"
[ -x "$MM" ] || { echo "no mm binary at $MM (cargo build first)" >&2; exit 1; }
if command -v cargo > /dev/null; then
  cargo run -q --release --example fence_cost
  echo
fi

python3 - "$MM" "$CALLS" "$RUNS" <<'PY'
import json, os, statistics, subprocess, sys, tempfile, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

mm, calls, runs = os.path.abspath(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])


class Script:
    left = 0            # bash calls still to ask for in this run
    arrived = []        # perf_counter of each chat request
    answered = []       # perf_counter of the last byte of each answer
    lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_GET(self):
        body = json.dumps({"object": "list", "data": [{"id": "bench", "object": "model"}]}).encode()
        self.send_response(200 if self.path.startswith("/v1/models") else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def event(self, obj):
        self.wfile.write(b"data: " + json.dumps(obj).encode() + b"\n\n")

    def do_POST(self):
        t = time.perf_counter()
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with Script.lock:
            Script.arrived.append(t)
            n = Script.left
            Script.left -= 1
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        delta = lambda d, finish=None: {"choices": [{"index": 0, "delta": d, "finish_reason": finish}]}
        if n > 0:
            # A different comment each time: the loop detector stops identical calls.
            args = json.dumps({"command": f"echo hi # {n}"})
            call = {"index": 0, "id": f"c{n}", "type": "function",
                    "function": {"name": "bash", "arguments": args}}
            self.event(delta({"tool_calls": [call]}))
            self.event(delta({}, "tool_calls"))
        else:
            self.event(delta({"content": "done"}))
            self.event(delta({}, "stop"))
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        with Script.lock:
            Script.answered.append(time.perf_counter())
        self.close_connection = True


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
URL = f"http://127.0.0.1:{server.server_address[1]}/v1"
# The project and home lie outside /tmp, as they would for a user.
os.makedirs("target", exist_ok=True)
base = tempfile.mkdtemp(prefix="mm-bench-sandbox-", dir=os.path.join(os.getcwd(), "target"))


def one_run(mode):
    Script.left, Script.arrived, Script.answered = calls, [], []
    home = tempfile.mkdtemp(dir=base)
    env = {"HOME": home, "XDG_STATE_HOME": os.path.join(home, "state"),
           "XDG_CONFIG_HOME": os.path.join(home, "config"), "PATH": os.environ.get("PATH", ""),
           "NO_COLOR": "1", "MM_MODEL_URL": URL}
    args = [mm, "--sandbox", mode, "-c", "contextWindow=1000000", "-c", f"maxSteps={calls + 5}",
            "-c", "tools.maxOutput=200", "-p", "go"]
    code = subprocess.run(args, cwd=home, env=env, stdin=subprocess.DEVNULL,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600).returncode
    if code != 0:
        sys.exit(f"mm --sandbox {mode} exited {code}")
    # Call k: from the last byte of answer k to the arrival of request k + 1.
    return [(Script.arrived[k + 1] - Script.answered[k]) * 1000 for k in range(calls)]


modes = ["off", "workspace-write", "read-only"]
samples = {m: [] for m in modes}
for m in modes:
    one_run(m)  # warm-up
for _ in range(runs):
    for m in modes:
        samples[m].extend(one_run(m))
subprocess.run(["rm", "-rf", base])

off = statistics.median(samples["off"])
print(f"bash `echo hi`, call → next request, median of {calls * runs} calls per mode")
print(f"{'tools.sandbox':<18} {'median':>9} {'p10':>9} {'p90':>9} {'fence cost':>11}  target")
for m in modes:
    s = sorted(samples[m])
    med = statistics.median(s)
    p10, p90 = s[len(s) // 10], s[(len(s) * 9) // 10]
    cost = "" if m == "off" else f"{med - off:+8.2f} ms"
    ok = "" if m == "off" else ("< 1 ms  " + ("yes" if med - off < 1 else "NO"))
    print(f"{m:<18} {med:>6.2f} ms {p10:>6.2f} ms {p90:>6.2f} ms {cost:>11}  {ok}")
# A missed target is a failed run.
missed = [m for m in modes if m != "off" and statistics.median(samples[m]) - off >= 1]
if missed:
    sys.exit("the fence costs 1 ms or more in: " + ", ".join(missed))
PY

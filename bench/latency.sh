#!/usr/bin/env bash
# How fast mm answers what the tests only guard against hanging (their bounds are generous so a
# busy machine cannot miss them; the speed is measured here):
#
#   - Ctrl-C during a streamed answer → mm has exited (130);
#   - Ctrl-C while a bash command runs (`sleep 300`) → mm has exited, the command's group killed;
#   - a bash call that leaves a background job holding its output pipe → the next request: the
#     call returns once bash exits plus a short read of what the job still writes (200 ms), not
#     when the job ends; a plain `true` is the baseline.
#
# Median of N runs after one warm-up, against a scripted stand-in server in this process.
#
#   bench/latency.sh [path/to/mm] [runs]      (default: target/release/mm, else target/debug/mm; 9)
set -euo pipefail
cd "$(dirname "$0")/.."
MM="${1:-}"
if [ -z "$MM" ]; then
  if [ -x target/release/mm ]; then MM=target/release/mm; else MM=target/debug/mm; fi
fi
RUNS="${2:-9}"
[ -x "$MM" ] || { echo "no mm binary at $MM (cargo build first)" >&2; exit 1; }

python3 - "$MM" "$RUNS" <<'PY'
import json, os, signal, statistics, subprocess, sys, tempfile, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

mm, runs = os.path.abspath(sys.argv[1]), int(sys.argv[2])


class Script:
    """What the next chat requests are answered with, and when they came."""
    replies = []        # ("stream", n) | ("call", command) | ("text", text)
    arrived = []        # perf_counter of each chat request
    answered = []       # perf_counter of the last byte of each answer
    bodies = []
    lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_GET(self):
        body = json.dumps({"object": "list", "data": [{"id": "bench", "object": "model"}]}).encode()
        code = 200 if self.path.startswith("/v1/models") else 404
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def event(self, obj):
        self.wfile.write(b"data: " + json.dumps(obj).encode() + b"\n\n")
        self.wfile.flush()

    def do_POST(self):
        t = time.perf_counter()
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with Script.lock:
            Script.arrived.append(t)
            Script.bodies.append(json.loads(body))
            kind, arg = Script.replies.pop(0) if Script.replies else ("text", "done")
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        delta = lambda d, finish=None: {"choices": [{"index": 0, "delta": d, "finish_reason": finish}]}
        try:
            if kind == "stream":
                for i in range(arg):
                    self.event(delta({"content": f"w{i} "}))
                    time.sleep(0.02)
                self.event(delta({}, "stop"))
            elif kind == "call":
                call = {"index": 0, "id": "c1", "type": "function",
                        "function": {"name": "bash", "arguments": json.dumps({"command": arg})}}
                self.event(delta({"tool_calls": [call]}))
                self.event(delta({}, "tool_calls"))
            else:
                self.event(delta({"content": arg}))
                self.event(delta({}, "stop"))
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            return
        with Script.lock:
            Script.answered.append(time.perf_counter())
        self.close_connection = True


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
URL = f"http://127.0.0.1:{server.server_address[1]}/v1"


def start(replies, prompt="go"):
    Script.replies, Script.arrived, Script.answered, Script.bodies = list(replies), [], [], []
    home = tempfile.mkdtemp(prefix="mm-bench-")
    env = {"HOME": home, "XDG_STATE_HOME": os.path.join(home, "state"),
           "XDG_CONFIG_HOME": os.path.join(home, "config"), "PATH": os.environ.get("PATH", ""),
           "NO_COLOR": "1", "MM_MODEL_URL": URL}
    p = subprocess.Popen([mm, "-c", "contextWindow=32768", "-p", prompt], cwd=home, env=env,
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    return p, home


def wait_for(cond, what, limit=30):
    deadline = time.perf_counter() + limit
    while not cond():
        if time.perf_counter() > deadline:
            sys.exit(f"gave up waiting for {what}")
        time.sleep(0.001)


def interrupt(p):
    t = time.perf_counter()
    p.send_signal(signal.SIGINT)
    code = p.wait(timeout=60)
    took = (time.perf_counter() - t) * 1000
    if code != 130:
        sys.exit(f"mm exited {code} after Ctrl-C, not 130")
    return took


def ctrl_c_stream():
    p, _ = start([("stream", 100000)])
    os.read(p.stdout.fileno(), 1)  # the answer has begun
    return interrupt(p)


def ctrl_c_command():
    p, home = start([("call", "touch started; exec sleep 300")])
    wait_for(lambda: os.path.exists(os.path.join(home, "started")), "the command to start")
    return interrupt(p)


def round_trip(command):
    p, _ = start([("call", command), ("text", "done")])
    p.wait(timeout=60)
    took = (Script.arrived[1] - Script.answered[0]) * 1000
    # The job the call left behind: its pid is the tool's output.
    for m in Script.bodies[1]["messages"]:
        if m.get("role") == "tool" and m["content"].strip().isdigit():
            try:
                os.kill(int(m["content"].strip()), signal.SIGKILL)
            except ProcessLookupError:
                pass
    return took


def median(f, *args):
    f(*args)  # warm-up
    return statistics.median(f(*args) for _ in range(runs))


rows = [
    ("Ctrl-C during a streamed answer → exit 130", median(ctrl_c_stream), 100),
    ("Ctrl-C while `sleep 300` runs → exit 130", median(ctrl_c_command), 100),
    ("bash call `true` → next request", median(round_trip, "true"), None),
    ("bash call `sleep 300 & echo $!` → next request", median(round_trip, "sleep 300 & echo $!"), 400),
]
print(f"{'measure (median of ' + str(runs) + ')':<52} {'value':>10}  {'target':>9}  ok")
missed = []
for label, value, target in rows:
    tgt = f"< {target} ms" if target is not None else "—"
    good = "" if target is None else ("yes" if value < target else "NO")
    if good == "NO":
        missed.append(label)
    print(f"{label:<52} {value:>7.1f} ms  {tgt:>9}  {good}")
# A missed target is a failed run.
if missed:
    sys.exit("missed: " + "; ".join(missed))
PY

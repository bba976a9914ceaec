#!/usr/bin/env python3
"""Benchmarks of mm as an ACP client (docs/agents.md). Usage: ask_bench.py MM_BINARY

1. `mm --ask "mm -acp" "<prompt>"` against a scripted model server: the wall time of the whole
   exchange (two process starts, initialize, session/new, one turn, both processes gone),
   median of 11 after one warm-up. Target: < 50 ms.
2. The relay overhead of a follow-up question through `ask_agent`: an outer `mm -acp` whose model
   calls `ask_agent` on a configured second mm, measured from the call's `in_progress` update to
   its `completed` update at the client, minus the same question asked of a second mm directly
   (prompt → response at the client), medians of 20 follow-ups each. Target: < 5 ms.

The model server runs in this process: every answer is immediate, so what is measured is mm.
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MM = os.path.abspath(sys.argv[1])
ROUNDS = 11
FOLLOW_UPS = 20
INNER = "Inner"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes: with Nagle on, the second waits for the client's
    # delayed ACK (40 ms on Linux), which would be measured as mm's time.
    disable_nagle_algorithm = True

    def log_message(self, *a):
        pass

    def do_GET(self):
        body = json.dumps({"data": [{"id": "bench", "object": "model"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def event(self, obj):
        self.wfile.write(b"data: " + json.dumps(obj).encode() + b"\n\n")

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        req = json.loads(self.rfile.read(n))
        messages = req["messages"]
        inner = INNER in messages[0]["content"]
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        usage = {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
        if not inner and messages[-1]["role"] == "user" and any(
            t["function"]["name"] == "ask_agent" for t in req.get("tools", [])
        ):
            args = json.dumps({"agent": "second", "question": messages[-1]["content"]})
            self.event({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "a1", "type": "function",
                        "function": {"name": "ask_agent", "arguments": args}}]}}]})
            self.event({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}], "usage": usage})
        else:
            self.event({"choices": [{"index": 0, "delta": {"content": "an answer"}}]})
            self.event({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": usage})
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
URL = f"http://127.0.0.1:{server.server_address[1]}/v1"

home = tempfile.mkdtemp()
cwd = tempfile.mkdtemp()
bindir = os.path.dirname(MM)
ENV = {k: v for k, v in os.environ.items() if not k.startswith("MM_")}
ENV.update({"HOME": home, "XDG_CONFIG_HOME": os.path.join(home, ".config"), "MM_MODEL_URL": URL,
            "NO_COLOR": "1", "PATH": bindir + os.pathsep + os.environ.get("PATH", "")})


def exchange():
    start = time.perf_counter()
    r = subprocess.run([MM, "--ask", "mm -acp -c acp.title=" + INNER, "hello"], cwd=cwd, env=ENV,
                       stdin=subprocess.DEVNULL, capture_output=True, text=True)
    took = time.perf_counter() - start
    if r.returncode != 0 or r.stdout != "an answer\n":
        sys.exit(f"mm --ask failed ({r.returncode}): {r.stdout!r} {r.stderr}")
    return took


class Peer:
    """`mm ARGS` with raw JSON-RPC lines on its stdio."""

    def __init__(self, args):
        self.p = subprocess.Popen([MM, *args], cwd=cwd, env=ENV, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)
        self.next_id = 1

    def send(self, msg):
        self.p.stdin.write(json.dumps(msg) + "\n")
        self.p.stdin.flush()

    def request(self, method, params):
        i = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": i, "method": method, "params": params})
        return i

    def read(self):
        line = self.p.stdout.readline()
        if not line:
            sys.exit("mm closed its stdout")
        return json.loads(line), time.perf_counter()

    def until(self, pred):
        while True:
            msg, at = self.read()
            if pred(msg):
                return msg, at

    def call(self, method, params):
        i = self.request(method, params)
        return self.until(lambda m: m.get("id") == i and "method" not in m)

    def session(self):
        self.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        msg, _ = self.call("session/new", {"cwd": cwd, "mcpServers": []})
        return msg["result"]["sessionId"]

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=10)


def direct_turns():
    peer = Peer(["-acp", "-c", "acp.title=" + INNER])
    sid = peer.session()
    times = []
    for i in range(FOLLOW_UPS + 1):
        start = time.perf_counter()
        msg, at = peer.call("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": f"q{i}"}]})
        assert msg["result"]["stopReason"] == "end_turn", msg
        times.append(at - start)
    peer.close()
    return times[1:]


def relayed_turns():
    config = os.path.join(home, ".config", "mm", "config.toml")
    os.makedirs(os.path.dirname(config), exist_ok=True)
    with open(config, "w") as f:
        f.write(f'[agents.second]\ncommand = "mm"\nargs = ["-acp", "-c", "acp.title={INNER}"]\n')
    peer = Peer(["-acp"])
    sid = peer.session()
    times = []
    for i in range(FOLLOW_UPS + 1):
        i_prompt = peer.request("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": f"q{i}"}]})
        running = done = None
        while True:
            msg, at = peer.read()
            update = msg.get("params", {}).get("update", {})
            if update.get("sessionUpdate") == "tool_call_update" and update.get("status") == "in_progress":
                running = at
            elif update.get("sessionUpdate") == "tool_call_update" and update.get("status") == "completed":
                done = at
                if update["rawOutput"]["output"] != "an answer":
                    sys.exit(f"unexpected answer: {update}")
            elif msg.get("id") == i_prompt and "method" not in msg:
                break
        times.append(done - running)
    peer.close()
    os.remove(config)
    return times[1:]


ms = lambda s: f"{s * 1000:.1f} ms"
exchange()
runs = [exchange() for _ in range(ROUNDS)]
direct = direct_turns()
relayed = relayed_turns()
overhead = statistics.median(relayed) - statistics.median(direct)
ex = statistics.median(runs)
print(f"{'measure':<58} {'result':>10} {'target':>8}")
label = 'mm --ask "mm -acp" (whole exchange, median of 11)'
print(f"{label:<58} {ms(ex):>10} {'< 50 ms':>8}")
print(f"{'  min / max':<58} {ms(min(runs)) + ' / ' + ms(max(runs)):>10}")
print(f"{'asked agent turn, direct (median of 20)':<58} {ms(statistics.median(direct)):>10}")
print(f"{'same turn through ask_agent, follow-up (median of 20)':<58} {ms(statistics.median(relayed)):>10}")
print(f"{'relay overhead of a follow-up':<58} {ms(overhead):>10} {'< 5 ms':>8}")
server.shutdown()
# A missed target is a failed run.
missed = [what for what, value, target in (("the whole exchange", ex, 0.050), ("the relay overhead", overhead, 0.005)) if value >= target]
if missed:
    sys.exit("missed the target: " + ", ".join(missed))

#!/usr/bin/env python3
"""Benchmarks of `mm -acp` (docs/acp-reference.md, "Benchmarks"): the standing budgets, and
session/list and live progress (docs/acp.md, "Beyond the reference"). Usage: acp_bench.py MM_BINARY

A scripted OpenAI-compatible SSE server runs in this process (so its last-byte time and the
client's receive times share one clock); mm is driven with raw JSON-RPC lines.
"""

import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MM = os.path.abspath(sys.argv[1])

# ---------------------------------------------------------------- fake model server

class Script:
    mode = "turn"          # "turn": one tool call then text; "stream": N chunks at R/s
    chunks = 20000
    rate = 2000.0
    calls = 0
    last_byte = 0.0


# One-token chunks of varied text (a fixed pseudo-random pick of words), not one character again
# and again: mm stops a stream that repeats itself (loop.detectRepetition), and the relay is
# measured on what a model sends.
WORDS = [" the", " file", " is", " a", " function", " that", " returns", " value", "\n", " and",
         " we", " call", " it", " with", " `main`", ".", ",", " test", " build", " error", " fix",
         " line", " 42", " in", " src", "/lib", ".rs", " because", " of", " type", "::", "()"]
_rng = random.Random(7)
TOKENS = [_rng.choice(WORDS) for _ in range(20000)]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

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
        self.rfile.read(n)
        Script.calls += 1
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        usage = {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
        if Script.mode == "build" and Script.calls % 2 == 1:
            build = "for i in $(seq 1 250); do seq -f 'compiling unit %g' 1 20; sleep 0.02; done"
            self.event({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "b1", "type": "function",
                        "function": {"name": "bash", "arguments": json.dumps({"command": build})}}]}}]})
            self.event({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}], "usage": usage})
        elif Script.mode == "turn" and Script.calls % 2 == 1:
            self.event({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "t1", "type": "function",
                        "function": {"name": "bash", "arguments": json.dumps({"command": "echo hi"})}}]}}]})
            self.event({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}], "usage": usage})
        elif Script.mode == "stream":
            interval = 1.0 / Script.rate if Script.rate > 0 else 0.0
            start = time.perf_counter()
            for i in range(Script.chunks):
                if interval:
                    target = start + i * interval
                    while time.perf_counter() < target:
                        time.sleep(max(0.0, min(0.0005, target - time.perf_counter())))
                self.event({"choices": [{"index": 0, "delta": {"content": TOKENS[i % len(TOKENS)]}}]})
                self.wfile.flush()
            self.event({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": usage})
        else:
            self.event({"choices": [{"index": 0, "delta": {"content": "done"}}]})
            self.event({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": usage})
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        Script.last_byte = time.perf_counter()
        self.close_connection = True


class Server(ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        # Each benchmark ends its mm at once: a connection it leaves (a model list on its way, a
        # kept-alive connection) is no error of the benchmark.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


server = Server(("127.0.0.1", 0), Handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
URL = f"http://127.0.0.1:{server.server_address[1]}/v1"

# ---------------------------------------------------------------- client

class Mm:
    def __init__(self, cwd, home, extra_env=None):
        env = {"HOME": home, "PATH": os.environ.get("PATH", ""), "MM_MODEL_URL": URL}
        env.update(extra_env or {})
        self.t0 = time.perf_counter()
        self.p = subprocess.Popen([MM, "-acp"], cwd=cwd, env=env, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, bufsize=0)
        self.next_id = 1
        self.buf = b""

    def send(self, method, params):
        i = self.next_id
        self.next_id += 1
        self.p.stdin.write((json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n").encode())
        return i

    def reply(self, id_, result):
        self.p.stdin.write((json.dumps({"jsonrpc": "2.0", "id": id_, "result": result}) + "\n").encode())

    def read_raw(self):
        while b"\n" not in self.buf:
            chunk = os.read(self.p.stdout.fileno(), 1 << 16)
            if not chunk:
                raise EOFError("mm closed stdout")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line, time.perf_counter()

    def read(self):
        line, t = self.read_raw()
        return json.loads(line), t

    def wait(self, id_, on_message=None):
        while True:
            line, t = self.read_raw()
            # Notifications nobody looks at are not parsed: the client's own JSON decoding must
            # not be counted as mm's time.
            if on_message is None and line.startswith(b'{"jsonrpc":"2.0","method"'):
                continue
            m = json.loads(line)
            if "method" not in m and m.get("id") == id_:
                return m, t
            if on_message:
                on_message(m, t)

    def call(self, method, params, on_message=None):
        return self.wait(self.send(method, params), on_message)

    def hwm_kb(self):
        with open(f"/proc/{self.p.pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
        return 0

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=30)


INIT = {"protocolVersion": 1, "clientCapabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}


def cold_start(cwd, home):
    m = Mm(cwd, home)
    _, t_init = m.call("initialize", INIT)
    _, t_new = m.call("session/new", {"cwd": cwd, "mcpServers": []})
    m.close()
    return (t_init - m.t0) * 1000, (t_new - m.t0) * 1000


def main():
    home = tempfile.mkdtemp()
    cwd = tempfile.mkdtemp()
    rows = []

    cold_start(cwd, home)  # warm-up
    runs = [cold_start(cwd, home) for _ in range(9)]
    rows.append(("start → initialize response (median of 9)", statistics.median(r[0] for r in runs), "ms", 5))
    rows.append(("start → session/new response (median of 9)", statistics.median(r[1] for r in runs), "ms", 10))

    # session/new on a warm process with two configured MCP servers: they start in the
    # background once the answer is out, so it does not wait for them. Each session in a new
    # folder starts two servers of its own; sessions are 0.3 s apart (an editor's pace), so the
    # measure is mm's and not two cores busy starting the previous session's interpreters. In
    # one folder, the sessions share the servers already running.
    mcp_home = tempfile.mkdtemp()
    os.makedirs(os.path.join(mcp_home, ".config", "mm"))
    fixture = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "mcp", "fake_mcp.py")
    with open(os.path.join(mcp_home, ".config", "mm", "config.toml"), "w") as f:
        for name in ("one", "two"):
            f.write(f'[mcp.servers.{name}]\ncommand = "python3"\nargs = [{json.dumps(fixture)}, "ok"]\n')
    m = Mm(cwd, mcp_home)
    m.call("initialize", INIT)
    m.call("session/new", {"cwd": tempfile.mkdtemp(), "mcpServers": []})  # warm-up
    times, shared = [], []
    same = tempfile.mkdtemp()
    for _ in range(9):
        time.sleep(0.3)
        folder = tempfile.mkdtemp()
        t0 = time.perf_counter()
        _, t1 = m.call("session/new", {"cwd": folder, "mcpServers": []})
        times.append((t1 - t0) * 1000)
    m.call("session/new", {"cwd": same, "mcpServers": []})
    time.sleep(0.5)
    for _ in range(9):
        t0 = time.perf_counter()
        _, t1 = m.call("session/new", {"cwd": same, "mcpServers": []})
        shared.append((t1 - t0) * 1000)
    rows.append(("session/new, 2 MCP servers, warm, new folder (median of 9)", statistics.median(times), "ms", 10))
    rows.append(("session/new, 2 MCP servers, warm, shared (median of 9)", statistics.median(shared), "ms", 10))
    m.close()

    Script.mode, Script.calls = "turn", 0
    m = Mm(cwd, home)
    m.call("initialize", INIT)
    r, _ = m.call("session/new", {"cwd": cwd, "mcpServers": []})
    sid = r["result"]["sessionId"]

    def approve(msg, _t):
        if msg.get("method") == "session/request_permission":
            m.reply(msg["id"], {"outcome": {"outcome": "selected", "optionId": "allow"}})

    m.call("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "run it"}]}, approve)
    rows.append(("peak RSS (VmHWM) after one turn with a tool call", m.hwm_kb() / 1024, "MB", 15))
    m.close()

    # The same burst with the repetition detector off: the difference is its cost.
    home_off = tempfile.mkdtemp()
    os.makedirs(os.path.join(home_off, ".config", "mm"))
    with open(os.path.join(home_off, ".config", "mm", "config.toml"), "w") as f:
        f.write("[loop]\ndetectRepetition = false\n")
    for label, rate, target, h in (("relay overhead, 20 000 chunks at 2 000/s", 2000.0, 20, home),
                                   ("relay overhead, 20 000 chunks burst (info)", 0.0, None, home),
                                   ("  the same burst, repetition detection off (info)", 0.0, None, home_off)):
        Script.mode, Script.chunks, Script.rate = "stream", 20000, rate
        m = Mm(cwd, h)
        m.call("initialize", INIT)
        r, _ = m.call("session/new", {"cwd": cwd, "mcpServers": []})
        sid = r["result"]["sessionId"]
        last = [0.0]

        def chunk(msg, t):
            if msg.get("method") == "session/update" and msg["params"]["update"].get("sessionUpdate") == "agent_message_chunk":
                last[0] = t

        m.call("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "stream"}]}, chunk)
        rows.append((label, (last[0] - Script.last_byte) * 1000, "ms", target))
        m.close()

    # A saved session of 10 000 messages.
    sessions = os.path.join(cwd, ".mm", "sessions")
    os.makedirs(sessions, exist_ok=True)
    # Sessions on in the user's own config: a project's file may not turn them on (docs/config.md,
    # "Trust").
    user_cfg = os.path.join(home, ".config", "mm")
    os.makedirs(user_cfg, exist_ok=True)
    with open(os.path.join(user_cfg, "config.toml"), "a") as f:
        f.write("\n[sessions]\nenabled = true\n")
    sid = "20260101-000000-0badcafe"
    messages = [{"role": "system", "content": "s"}]
    for i in range(2500):
        messages.append({"role": "user", "content": f"question {i}"})
        messages.append({"role": "assistant", "content": "", "toolCalls": [{"id": f"x{i}", "ref": f"call_{i + 1}", "name": "bash", "arguments": json.dumps({"command": f"echo {i}"})}]})
        messages.append({"role": "tool", "toolCallId": f"x{i}", "content": f"{i}\n"})
        messages.append({"role": "assistant", "content": f"answer {i}"})
    doc = {"version": 1, "id": sid, "cwd": cwd, "createdAt": "2026-01-01T00:00:00+00:00",
           "updatedAt": "2026-01-01T00:00:00+00:00", "model": "bench",
           "usage": {"inputTokens": 0, "outputTokens": 0, "totalTokens": 0}, "plan": None, "messages": messages}
    with open(os.path.join(sessions, sid + ".json"), "w") as f:
        json.dump(doc, f)
    m = Mm(cwd, home)
    m.call("initialize", INIT)
    t0 = time.perf_counter()
    r, t1 = m.call("session/load", {"sessionId": sid, "cwd": cwd, "mcpServers": []})
    ok = "result" in r
    rows.append(("session/load of 10 000 messages" + ("" if ok else " (FAILED: " + json.dumps(r.get("error")) + ")"), (t1 - t0) * 1000, "ms", 100))
    m.close()

    # session/list over 1 000 saved sessions of 400 messages each (about 30 kB a file): a list
    # reads each file up to its messages, not the histories. Files just written are in the page
    # cache, as an editor's second look at its history would find them.
    listed = tempfile.mkdtemp()
    sessions = os.path.join(listed, ".mm", "sessions")
    os.makedirs(sessions)
    history = [{"role": "system", "content": "s"}]
    for i in range(100):
        history.append({"role": "user", "content": f"question {i} " + "x" * 40})
        history.append({"role": "assistant", "content": "", "toolCalls": [{"id": f"x{i}", "ref": f"call_{i + 1}", "name": "bash", "arguments": json.dumps({"command": f"echo {i}"})}]})
        history.append({"role": "tool", "toolCallId": f"x{i}", "content": f"{i}\n" * 5})
        history.append({"role": "assistant", "content": f"answer {i} " + "y" * 40})
    for n in range(1000):
        sid = f"20260101-{n // 60:04d}{n % 60:02d}-{n:08x}"
        doc = {"version": 1, "id": sid, "cwd": listed, "createdAt": "2026-01-01T00:00:00+00:00",
               "updatedAt": f"2026-01-01T{n // 3600:02d}:{n // 60 % 60:02d}:{n % 60:02d}+00:00",
               "title": f"session number {n}", "mode": "yolo", "model": "bench",
               "usage": {"inputTokens": 0, "outputTokens": 0, "totalTokens": 0}, "plan": None,
               "messages": history}
        with open(os.path.join(sessions, sid + ".json"), "w") as f:
            json.dump(doc, f, indent=2)
    m = Mm(listed, home)
    m.call("initialize", INIT)
    m.call("session/list", {"cwd": listed})  # warm-up
    times = []
    for _ in range(9):
        t0 = time.perf_counter()
        r, t1 = m.call("session/list", {"cwd": listed})
        times.append((t1 - t0) * 1000)
    ok = len(r.get("result", {}).get("sessions", [])) == 50
    rows.append(("session/list of 1 000 saved sessions (median of 9)" + ("" if ok else " (FAILED)"), statistics.median(times), "ms", 50))
    m.close()

    # Live progress: mm's own CPU time (not its children's) while a command prints steadily for
    # 5 s, 20 lines every 20 ms, its output reported every 250 ms.
    Script.mode, Script.calls = "build", 0
    m = Mm(cwd, home)
    m.call("initialize", INIT)
    r, _ = m.call("session/new", {"cwd": cwd, "mcpServers": []})
    sid = r["result"]["sessionId"]
    reports = [0]

    def progress(msg, _t):
        u = msg.get("params", {}).get("update", {})
        if u.get("sessionUpdate") == "tool_call_update" and "status" not in u:
            reports[0] += 1

    def cpu_seconds(pid):
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    c0, w0 = cpu_seconds(m.p.pid), time.perf_counter()
    m.call("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "build"}]}, progress)
    c1, w1 = cpu_seconds(m.p.pid), time.perf_counter()
    rows.append((f"mm CPU while a command prints 5 s ({reports[0]} progress updates)", (c1 - c0) / (w1 - w0) * 100, "%", 1))
    m.close()

    print(f"{'measure':<58} {'value':>10}  {'target':>8}  ok")
    missed = []
    for label, value, unit, target in rows:
        tgt = f"< {target} {unit}" if target is not None else "—"
        good = "" if target is None else ("yes" if value < target else "NO")
        if good == "NO" or "FAILED" in label:
            missed.append(label)
        print(f"{label:<58} {value:>7.2f} {unit:<2}  {tgt:>8}  {good}")
    # A missed target (or a failed request) is a failed run.
    if missed:
        sys.exit("missed: " + "; ".join(missed))


main()

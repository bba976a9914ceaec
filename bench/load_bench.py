#!/usr/bin/env python3
"""Load and memory benchmarks of `mm -acp` (issue 13; figures in docs/acp.md, "Load and memory").

Usage: load_bench.py MM_BINARY FAKE_SERVER_BINARY

mm is driven with raw JSON-RPC lines against `mm-fake-server` (one-chunk answers, unpaced). Measures:

  throughput      turns per second with 20 prompts queued at all times (20 sessions, a new prompt
                  sent in a session as soon as its previous one is answered)
  idle sessions   RSS per idle session over 1 000 `session/new`
  10 000 turns    RSS growth from turn 1 000 to turn 10 000, a new session every 50 turns
  over-cap line   peak RSS while a 300 MB line without a newline streams in
  line at the cap a valid prompt of exactly acp.maxLineBytes (8 MB): time to its answer, peak RSS

Exits 1 when a limit is broken: RSS growth >= 5 MB, >= 20 kB per idle session, a peak >= 40 MB
for the over-cap line, or a request not answered in order.
"""

import json
import os
import subprocess
import sys
import tempfile
import time

MM = os.path.abspath(sys.argv[1])
FAKE = os.path.abspath(sys.argv[2])

GROWTH_LIMIT_KB = 5 * 1024
IDLE_SESSION_LIMIT_KB = 20
OVER_CAP_PEAK_LIMIT_KB = 40 * 1024
CAP = 8 * 1024 * 1024

INIT = {"protocolVersion": 1, "clientCapabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}


def start_fake():
    # One short chunk per answer, unpaced: the demo answers are paced like a real model's.
    p = subprocess.Popen([FAKE, "--stream-bench", "1", "--rate", "0"], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL)
    url = p.stdout.readline().decode().strip()
    return p, url


class Mm:
    def __init__(self, url):
        self.home = tempfile.mkdtemp()
        self.cwd = tempfile.mkdtemp()
        env = {"HOME": self.home, "PATH": os.environ.get("PATH", ""), "MM_MODEL_URL": url}
        self.p = subprocess.Popen([MM, "-acp"], cwd=self.cwd, env=env, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, bufsize=0)
        self.next_id = 1
        self.buf = b""

    def send(self, method, params):
        i = self.next_id
        self.next_id += 1
        self.write((json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n").encode())
        return i

    def write(self, data):
        self.p.stdin.write(data)

    def line(self):
        while b"\n" not in self.buf:
            chunk = os.read(self.p.stdout.fileno(), 1 << 16)
            if not chunk:
                raise EOFError("mm closed stdout")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line

    def response(self):
        """The next response (notifications skipped unparsed)."""
        while True:
            line = self.line()
            if line.startswith(b'{"jsonrpc":"2.0","method"'):
                continue
            return json.loads(line)

    def call(self, method, params):
        i = self.send(method, params)
        m = self.response()
        if m.get("id") != i or "error" in m:
            raise RuntimeError(f"{method}: {m}")
        return m["result"]

    def new_session(self):
        return self.call("session/new", {"cwd": self.cwd, "mcpServers": []})["sessionId"]

    def prompt(self, session, text="hello"):
        return self.send("session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": text}]})

    def status_kb(self, key):
        with open(f"/proc/{self.p.pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
        raise RuntimeError(key)

    def rss_kb(self):
        return self.status_kb("VmRSS")

    def hwm_kb(self):
        return self.status_kb("VmHWM")

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=30)


def answered(m, pending):
    """Checks that response `m` answers the oldest prompt of its session."""
    i = m.get("id")
    if "error" in m or m.get("result", {}).get("stopReason") != "end_turn":
        raise RuntimeError(f"prompt {i} not answered: {m}")
    for session, queue in pending.items():
        if queue and i in queue:
            if queue[0] != i:
                raise RuntimeError(f"session {session}: prompt {i} answered before {queue[0]}")
            queue.pop(0)
            return session
    raise RuntimeError(f"an answer to nothing asked: {m}")


def throughput(url, turns=2000, queued=20):
    mm = Mm(url)
    mm.call("initialize", INIT)
    sessions = [mm.new_session() for _ in range(queued)]
    pending = {s: [] for s in sessions}
    # Warm-up: one turn per session.
    for s in sessions:
        pending[s].append(mm.prompt(s))
    for _ in sessions:
        answered(mm.response(), pending)
    start = time.perf_counter()
    sent = 0
    for s in sessions:
        pending[s].append(mm.prompt(s))
        sent += 1
    done = 0
    while done < turns:
        s = answered(mm.response(), pending)
        done += 1
        if sent < turns:
            pending[s].append(mm.prompt(s))
            sent += 1
    elapsed = time.perf_counter() - start
    mm.close()
    return turns / elapsed, elapsed


def idle_sessions(url, n=1000):
    mm = Mm(url)
    mm.call("initialize", INIT)
    # The first session starts what every session shares (the model's detection, the tools).
    mm.new_session()
    before = mm.rss_kb()
    start = time.perf_counter()
    for _ in range(n):
        mm.new_session()
    elapsed = time.perf_counter() - start
    after = mm.rss_kb()
    mm.close()
    return (after - before) / n, before, after, elapsed / n * 1000


def long_run(url, turns=10_000, warm_up=1000, per_session=50):
    mm = Mm(url)
    mm.call("initialize", INIT)
    start = time.perf_counter()
    session = None
    at_warm_up = None
    samples = []
    for t in range(turns):
        if t % per_session == 0:
            session = mm.new_session()
        i = mm.prompt(session)
        m = mm.response()
        if m.get("id") != i or m.get("result", {}).get("stopReason") != "end_turn":
            raise RuntimeError(f"turn {t}: {m}")
        if t + 1 == warm_up:
            at_warm_up = mm.rss_kb()
        if (t + 1) % 1000 == 0:
            samples.append(mm.rss_kb())
    elapsed = time.perf_counter() - start
    end = mm.rss_kb()
    mm.close()
    return at_warm_up, end, samples, elapsed


def over_cap_line(url, total=300 * 1024 * 1024):
    mm = Mm(url)
    mm.call("initialize", INIT)
    before = mm.hwm_kb()
    piece = b"a" * (1 << 20)
    start = time.perf_counter()
    for _ in range(total // len(piece)):
        mm.write(piece)
    mm.write(b"\n")
    m = json.loads(mm.line())
    elapsed = time.perf_counter() - start
    if m.get("error", {}).get("code") != -32700 or len(json.dumps(m)) > 400:
        raise RuntimeError(f"over-cap line: {str(m)[:400]}")
    # The next line is served as usual.
    session = mm.new_session()
    peak = mm.hwm_kb()
    mm.close()
    return before, peak, elapsed, session


def line_at_cap(url):
    mm = Mm(url)
    mm.call("initialize", INIT)
    session = mm.new_session()
    head = json.dumps({"jsonrpc": "2.0", "id": 99, "method": "session/prompt",
                       "params": {"sessionId": session, "prompt": [{"type": "text", "text": ""}]}})
    # The text goes between the last two quotes of `"text":""}]}}`.
    cut = head.rindex('""') + 1
    fill = CAP - len(head)
    line = (head[:cut] + "x" * fill + head[cut:]).encode()
    assert len(line) == CAP
    before = mm.hwm_kb()
    start = time.perf_counter()
    mm.write(line + b"\n")
    m = mm.response()
    elapsed = time.perf_counter() - start
    peak = mm.hwm_kb()
    mm.close()
    return before, peak, elapsed, m


def main():
    fake, url = start_fake()
    failures = []
    try:
        rate, elapsed = throughput(url)
        print(f"throughput, 20 prompts queued across 20 sessions: {rate:.0f} turns/s "
              f"(2 000 turns in {elapsed:.2f} s)")

        per, before, after, ms = idle_sessions(url)
        print(f"idle sessions: {per:.1f} kB each over 1 000 (RSS {before} → {after} kB; "
              f"session/new {ms:.2f} ms each)")
        if per >= IDLE_SESSION_LIMIT_KB:
            failures.append(f"{per:.1f} kB per idle session (limit {IDLE_SESSION_LIMIT_KB} kB)")

        warm, end, samples, elapsed = long_run(url)
        growth = end - warm
        print(f"10 000 turns, a new session every 50: RSS {warm} kB after 1 000, {end} kB after "
              f"10 000: growth {growth / 1024:.2f} MB ({elapsed:.1f} s; every 1 000 turns: "
              f"{', '.join(str(s) for s in samples)} kB)")
        if growth >= GROWTH_LIMIT_KB:
            failures.append(f"RSS grew {growth} kB over 9 000 turns (limit {GROWTH_LIMIT_KB} kB)")

        before, peak, elapsed, _ = over_cap_line(url)
        print(f"a 300 MB line over the cap: peak RSS {peak / 1024:.1f} MB (after initialize "
              f"{before / 1024:.1f} MB; answered {elapsed:.2f} s after its first byte)")
        if peak >= OVER_CAP_PEAK_LIMIT_KB:
            failures.append(f"peak RSS {peak} kB for the over-cap line (limit {OVER_CAP_PEAK_LIMIT_KB} kB)")

        before, peak, elapsed, answer = line_at_cap(url)
        error = answer.get("error", {})
        outcome = answer.get("result", {}).get("stopReason") or \
            f"{error.get('message')}: {error.get('data', {}).get('error', '')[:160]}"
        print(f"a valid prompt line of exactly 8 MB: answered ({outcome}) in {elapsed:.2f} s, "
              f"peak RSS {peak / 1024:.1f} MB (before {before / 1024:.1f} MB)")
    finally:
        fake.terminate()
        fake.wait()
    for f in failures:
        print(f"FAIL: {f}")
    sys.exit(1 if failures else 0)


main()

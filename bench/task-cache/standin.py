"""bench/task-cache (docs/engine.md, "Subagents"): run `mm -p` in a folder holding a 9 kB
notes.txt against this stand-in (python3 standin.py REC_DIR prints its URL), then replay.py the
recorded requests against llama-server(s). Scripted stand-in: records every chat request body to DIR/req-N.json and answers from a script.
With UPSTREAM (`standin.py REC_DIR http://127.0.0.1:PORT`, a llama-server) it passes mm's GETs
through, so mm detects that server (its kind, its `total_slots`) and sends the `id_slot` it
chooses, and sends each chat request on to it as it came (non-streamed, max_tokens 1): one line
per request on stderr says its id_slot and the prompt tokens the server evaluated and took from
its cache."""
import http.server, json, sys, os, threading, urllib.request
DIR = sys.argv[1]
UPSTREAM = sys.argv[2].rstrip("/") if len(sys.argv) > 2 else None
SCRIPT = [
    {"tool": ("bash", {"command": "cat notes.txt"})},
    {"tool": ("task", {"description": "find the largest file", "prompt": "List the files of the current folder with their sizes and say which one is the largest."})},
    {"tool": ("bash", {"command": "ls -la"})},
    {"text": "The largest file is notes.txt."},
    {"text": "notes.txt is the largest; it describes the engine."},
]
n = 0
lock = threading.Lock()
def upstream(i, body):
    body["stream"] = False; body["max_tokens"] = 1; body["temperature"] = 0
    body.pop("stream_options", None)
    req = urllib.request.Request(UPSTREAM + "/v1/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"})
    r = json.load(urllib.request.urlopen(req, timeout=600))
    t = r.get("timings", {})
    print(f"r{i} id_slot={body.get('id_slot')} prompt_n={t.get('prompt_n')} cache_n={t.get('cache_n')} prompt_tokens={r.get('usage', {}).get('prompt_tokens')}", file=sys.stderr, flush=True)
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def send_json(self, code, body):
        d = json.dumps(body).encode()
        self.send_response(code); self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(d))); self.end_headers(); self.wfile.write(d)
    def do_GET(self):
        if UPSTREAM:
            try:
                r = urllib.request.urlopen(UPSTREAM + self.path, timeout=60)
                return self.send_json(r.status, json.load(r))
            except urllib.error.HTTPError as e:
                return self.send_json(e.code, {"error": {"code": e.code, "message": "upstream"}})
        self.send_json(200, {"object": "list", "data": [{"id": "stand-in", "object": "model", "meta": {"n_ctx": 8192}}]})
    def do_POST(self):
        global n
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with lock:
            i = n; n += 1
        open(os.path.join(DIR, f"req-{i}.json"), "wb").write(body)
        if UPSTREAM:
            upstream(i, json.loads(body))
        step = SCRIPT[min(i, len(SCRIPT) - 1)]
        if "tool" in step:
            name, args = step["tool"]
            delta = {"role": "assistant", "tool_calls": [{"index": 0, "id": f"c{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]}
            fin = "tool_calls"
        else:
            delta = {"role": "assistant", "content": step["text"]}; fin = "stop"
        ev = [{"choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
              {"choices": [{"index": 0, "delta": {}, "finish_reason": fin}], "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11}}]
        d = ("".join(f"data: {json.dumps(e)}\n\n" for e in ev) + "data: [DONE]\n\n").encode()
        self.send_response(200); self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(d))); self.end_headers(); self.wfile.write(d)
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print(f"http://127.0.0.1:{s.server_address[1]}/v1", flush=True)
s.serve_forever()

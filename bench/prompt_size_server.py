"""A stand-in OpenAI-compatible server for bench/prompt-size.sh: it saves the body of the first
chat request to the file given as its argument, answers every chat request with a short streamed
text, and prints its base URL (http://127.0.0.1:PORT/v1) on stdout once it listens."""

import http.server
import json
import sys

OUT = sys.argv[1]


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send_json(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path.startswith("/v1/models"):
            self.send_json(200, {"object": "list", "data": [{"id": "stand-in", "object": "model"}]})
        else:
            self.send_json(404, {"error": {"message": f"no route for GET {self.path}"}})

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        if not self.path.startswith("/v1/chat/completions"):
            self.send_json(404, {"error": {"message": f"no route for POST {self.path}"}})
            return
        try:
            with open(OUT, "xb") as f:
                f.write(body)
        except FileExistsError:
            pass
        events = [
            {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "hi"}, "finish_reason": None}]},
            {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        ]
        payload = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
        data = payload.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(f"http://127.0.0.1:{server.server_address[1]}/v1", flush=True)
server.serve_forever()

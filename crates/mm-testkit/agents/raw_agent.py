"""A misbehaving ACP agent for mm's failure tests, on raw JSON-RPC (no SDK: it must be able to
break the protocol).

Usage: raw_agent.py MODE PIDFILE
Writes its own pid and the pid of a background `sleep` it leaves in its process group to
PIDFILE (one per line), so that the test can check that nothing survives. Answers `initialize`
and `session/new`, then at `session/prompt` does what MODE says:

  answer       answers "pong" (every mode writes each method it sees to PIDFILE.log)
  limit        answers "partial" with stopReason max_tokens
  crash        exits with code 7 without answering
  error        answers a JSON-RPC error with mm's own shape (data.error)
  stray        writes a line that is not JSON-RPC on stdout
  silent       never answers
  wait_cancel  waits for session/cancel, records it in PIDFILE.log, answers stopReason cancelled
  start_crash  exits with code 3 before reading anything
"""

import json
import os
import subprocess
import sys

mode, pidfile = sys.argv[1], sys.argv[2]
sleeper = subprocess.Popen(["sleep", "300"])
with open(pidfile, "w") as f:
    f.write(f"{os.getpid()}\n{sleeper.pid}\n")
if mode == "start_crash":
    sys.exit(3)


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def log(line):
    with open(pidfile + ".log", "a") as f:
        f.write(line + "\n")


prompt_id = None
for line in sys.stdin:
    msg = json.loads(line)
    method = msg.get("method")
    log(method or "response")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}})
    elif method == "session/new":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"sessionId": "raw-1"}})
    elif method == "session/prompt":
        prompt_id = msg["id"]
        if mode == "answer":
            send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "raw-1", "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "pong"}}}})
            send({"jsonrpc": "2.0", "id": prompt_id, "result": {"stopReason": "end_turn"}})
        elif mode == "limit":
            send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "raw-1", "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "partial"}}}})
            send({"jsonrpc": "2.0", "id": prompt_id, "result": {"stopReason": "max_tokens"}})
        elif mode == "crash":
            sys.exit(7)
        elif mode == "error":
            send({"jsonrpc": "2.0", "id": prompt_id, "error": {"code": -32603, "message": "Internal error", "data": {"error": "the model is down"}}})
        elif mode == "stray":
            sys.stdout.write("Traceback: something printed on stdout\n")
            sys.stdout.flush()
    elif method == "session/cancel":
        if mode == "wait_cancel" and prompt_id is not None:
            send({"jsonrpc": "2.0", "id": prompt_id, "result": {"stopReason": "cancelled"}})

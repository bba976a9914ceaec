"""A recording ACP agent for mm's tests of the asking session's mode, on raw JSON-RPC (no SDK).

Usage: mode_agent.py LOG MODES
Appends every message it receives to LOG, one JSON object a line. MODES is the comma-separated
list of mode ids its sessions offer (`session/new`'s `modes`), or `none` for no `modes` at all;
`session/set_mode` with an offered id switches, any other id is an error.

At `session/prompt` it answers `mode=<its current mode>`; a prompt `write PATH` first asks
permission for `write PATH` (options `rec-yes` allow_once, `rec-no` reject_once), writes PATH when
allowed, and adds `; permission=<optionId or cancelled>`. It never refuses anything itself: it
stands for a third-party agent whose only guard is what mm asks of it.
"""

import json
import sys

log_path, offered = sys.argv[1], sys.argv[2]
modes = [] if offered == "none" else offered.split(",")
current = modes[0] if modes else "default"
next_id = 0


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def log(msg):
    with open(log_path, "a") as f:
        f.write(json.dumps(msg) + "\n")


def answer(req_id, result):
    send({"jsonrpc": "2.0", "id": req_id, "result": result})


def receive():
    line = sys.stdin.readline()
    if not line:
        sys.exit(0)
    msg = json.loads(line)
    log(msg)
    return msg


def ask_permission(session, title):
    global next_id
    next_id += 1
    req_id = f"perm-{next_id}"
    send({"jsonrpc": "2.0", "id": req_id, "method": "session/request_permission", "params": {
        "sessionId": session,
        "toolCall": {"toolCallId": "w1", "title": title},
        "options": [
            {"optionId": "rec-yes", "name": "Yes", "kind": "allow_once"},
            {"optionId": "rec-no", "name": "No", "kind": "reject_once"},
        ],
    }})
    while True:
        msg = receive()
        if msg.get("id") == req_id and "method" not in msg:
            outcome = msg.get("result", {}).get("outcome", {})
            return outcome.get("optionId") or outcome.get("outcome") or "error"


while True:
    msg = receive()
    method, params, req_id = msg.get("method"), msg.get("params", {}), msg.get("id")
    if method == "initialize":
        answer(req_id, {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []})
    elif method == "session/new":
        result = {"sessionId": "rec-1"}
        if modes:
            result["modes"] = {
                "currentModeId": current,
                "availableModes": [{"id": m, "name": m} for m in modes],
            }
        answer(req_id, result)
    elif method == "session/set_mode":
        if params.get("modeId") in modes:
            current = params["modeId"]
            answer(req_id, {})
        else:
            send({"jsonrpc": "2.0", "id": req_id, "error": {"code": -32602, "message": "no such mode"}})
    elif method == "session/prompt":
        text = "".join(b.get("text", "") for b in params.get("prompt", []))
        reply = f"mode={current}"
        if text.startswith("write "):
            path = text[len("write "):].strip()
            chosen = ask_permission(params["sessionId"], f"write {path}")
            if chosen == "rec-yes":
                with open(path, "w") as f:
                    f.write("written by the agent\n")
            reply += f"; permission={chosen}"
        send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": params["sessionId"], "update": {
            "sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": reply}}}})
        answer(req_id, {"stopReason": "end_turn"})
    elif req_id is not None and method is not None:
        send({"jsonrpc": "2.0", "id": req_id, "error": {"code": -32601, "message": "Method not found"}})

"""Drives `mm -acp` with the official Python SDK (agent-client-protocol 0.12.1).

Usage: python_client.py MM_BINARY CWD [tool|beyond]
Prints one JSON object summarising what the SDK parsed; exits non-zero on any SDK error.
Without an argument no model is needed: only initialize, session/new, the commands update and
`/compact`. With `tool`, MM_MODEL_URL is the demo server (mm-fake-server) and mm runs with
yolo off: the prompt "list the files" makes a bash call that asks for permission, which this
client allows once. With `beyond`, the demo server lists a second model and mm saves its
sessions: what an editor user does beyond the reference (docs/acp.md) — switch models and
modes, watch a build, find the session in the list, close it, resume it, delete it (with a raw
request: this SDK has no `session/delete`).
"""

import asyncio
import json
import os
import sys

from acp import PROTOCOL_VERSION, text_block
from acp.schema import AllowedOutcome, ClientCapabilities, Implementation, RequestPermissionResponse
from acp.stdio import spawn_agent_process


class Recorder:
    def __init__(self, allow):
        self.updates = []
        self.allow = allow
        self.permissions = []
        # Set once a config_option_update carries the model option.
        self.models_known = asyncio.Event()
        # The SDK runs each notification's handler as a task of its own: the commands update
        # may still be on its way when the requests are done.
        self.commands_seen = asyncio.Event()

    async def request_permission(self, session_id, tool_call, options, **kwargs):
        if not self.allow:
            raise RuntimeError("no permission request expected")
        self.permissions.append({
            "title": tool_call.title,
            "options": [o.model_dump(by_alias=True, exclude_none=True) for o in options],
        })
        return RequestPermissionResponse(outcome=AllowedOutcome(optionId="allow", outcome="selected"))

    async def session_update(self, session_id, update, **kwargs):
        dumped = update.model_dump(by_alias=True, exclude_none=True)
        self.updates.append(dumped)
        if dumped.get("sessionUpdate") == "config_option_update" and any(
            o.get("id") == "model" for o in dumped.get("configOptions", [])
        ):
            self.models_known.set()
        if dumped.get("sessionUpdate") == "available_commands_update":
            self.commands_seen.set()

    def on_connect(self, conn):
        pass


async def main(binary, cwd, tool):
    rec = Recorder(allow=tool)
    env = {k: v for k, v in os.environ.items() if k in ("HOME", "PATH", "MM_MODEL_URL")}
    args = ["-acp", "--no-yolo"] if tool else ["-acp"]
    async with spawn_agent_process(rec, binary, *args, env=env, cwd=cwd) as (conn, _proc):
        init = await conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(),
            client_info=Implementation(name="python-sdk", version="0.12.1"),
        )
        session = await conn.new_session(cwd=cwd, mcp_servers=[])
        text = "list the files" if tool else "/compact"
        result = await conn.prompt(session_id=session.session_id, prompt=[text_block(text)])
        try:
            await conn.set_session_mode(session_id=session.session_id, mode_id="x")
            set_mode = "accepted"
        except Exception as e:  # the SDK raises RequestError for error responses
            set_mode = getattr(e, "code", str(e))
        await asyncio.wait_for(rec.commands_seen.wait(), timeout=10)
    print(json.dumps({
        "agentName": init.agent_info.name,
        "protocolVersion": init.protocol_version,
        "sessionId": session.session_id,
        "stopReason": result.stop_reason,
        "setMode": set_mode,
        "updates": rec.updates,
        "permissions": rec.permissions,
    }))


def dump(value):
    return value.model_dump(by_alias=True, exclude_none=True)


async def prompt(conn, rec, session_id, text):
    """One prompt: its stop reason, the agent's text and the updates it brought."""
    start = len(rec.updates)
    result = await conn.prompt(session_id=session_id, prompt=[text_block(text)])
    updates = rec.updates[start:]
    said = "".join(
        u["content"]["text"] for u in updates if u.get("sessionUpdate") == "agent_message_chunk"
    )
    return {"stopReason": result.stop_reason, "text": said, "updates": updates}


def tool_ends(updates):
    return [
        u for u in updates
        if u.get("sessionUpdate") == "tool_call_update" and u.get("status") in ("completed", "failed")
    ]


async def error_code(call):
    try:
        await call
        return "accepted"
    except Exception as e:  # the SDK raises RequestError for error responses
        return getattr(e, "code", str(e))


async def beyond(binary, cwd):
    rec = Recorder(allow=True)
    env = {k: v for k, v in os.environ.items() if k in ("HOME", "PATH", "MM_MODEL_URL")}
    out = {}
    args = ["-acp", "-c", "sessions.enabled=true"]
    async with spawn_agent_process(rec, binary, *args, env=env, cwd=cwd) as (conn, _proc):
        init = await conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(),
            client_info=Implementation(name="python-sdk", version="0.12.1"),
        )
        out["sessionCapabilities"] = dump(init.agent_capabilities.session_capabilities)
        new = await conn.new_session(cwd=cwd, mcp_servers=[])
        sid = new.session_id
        out["modes"] = dump(new.modes)
        options = [dump(o) for o in new.config_options or []]
        if not any(o.get("id") == "model" for o in options):
            # Detection was still running when the session was answered.
            await asyncio.wait_for(rec.models_known.wait(), 20)
            last = [u for u in rec.updates if u.get("sessionUpdate") == "config_option_update"][-1]
            options = last["configOptions"]
        out["options"] = options

        first = await prompt(conn, rec, sid, "hello there")
        out["hello"] = first["text"]
        out["title"] = [
            u.get("title") for u in rec.updates if u.get("sessionUpdate") == "session_info_update"
        ]
        switched = await conn.set_config_option(config_id="model", session_id=sid, value="demo-large")
        out["modelAfterSwitch"] = [dump(o) for o in switched.config_options][1]["currentValue"]
        out["helloAgain"] = (await prompt(conn, rec, sid, "hello again"))["text"]

        await conn.set_session_mode(session_id=sid, mode_id="ask")
        asked = await prompt(conn, rec, sid, "list the files")
        out["askMode"] = {"permissions": len(rec.permissions), "ends": tool_ends(asked["updates"])}
        await conn.set_config_option(config_id="mode", session_id=sid, value="read-only")
        refused = await prompt(conn, rec, sid, "list the files")
        out["readOnly"] = {"permissions": len(rec.permissions), "ends": tool_ends(refused["updates"])}
        out["modeUpdates"] = [
            u["currentModeId"] for u in rec.updates if u.get("sessionUpdate") == "current_mode_update"
        ]

        await conn.set_session_mode(session_id=sid, mode_id="yolo")
        build = await prompt(conn, rec, sid, "build the project")
        out["progress"] = [
            u["content"][0]["content"]["text"]
            for u in build["updates"]
            if u.get("sessionUpdate") == "tool_call_update" and "status" not in u and u.get("content")
        ]
        out["build"] = tool_ends(build["updates"])

        listed = await conn.list_sessions(cwd=cwd)
        out["listed"] = [dump(s) for s in listed.sessions]
        await conn.close_session(session_id=sid)
        out["promptAfterClose"] = await error_code(
            conn.prompt(session_id=sid, prompt=[text_block("still there?")])
        )
        resumed = await conn.resume_session(session_id=sid, cwd=cwd, mcp_servers=[])
        out["resumedMode"] = resumed.modes.current_mode_id
        out["afterResume"] = (await prompt(conn, rec, sid, "hello once more"))["text"]
        out["deleted"] = await conn._conn.send_request("session/delete", {"sessionId": sid})
        out["listedAfterDelete"] = [dump(s) for s in (await conn.list_sessions(cwd=cwd)).sessions]
    print(json.dumps(out))


if __name__ == "__main__":
    scenario = sys.argv[3] if len(sys.argv) > 3 else ""
    if scenario == "beyond":
        asyncio.run(beyond(sys.argv[1], sys.argv[2]))
    else:
        asyncio.run(main(sys.argv[1], sys.argv[2], scenario == "tool"))

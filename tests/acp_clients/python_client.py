"""Drives `mm -acp` with the official Python SDK (agent-client-protocol 0.12.1).

Usage: python_client.py MM_BINARY CWD [tool]
Prints one JSON object summarising what the SDK parsed; exits non-zero on any SDK error.
Without `tool` no model is needed: only initialize, session/new, the commands update and
`/compact`. With `tool`, MM_MODEL_URL is the demo server (mm-fake-server) and mm runs with
yolo off: the prompt "list the files" makes a bash call that asks for permission, which this
client allows once.
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


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], len(sys.argv) > 3 and sys.argv[3] == "tool"))

"""An ACP agent written with the official Python SDK (agent-client-protocol 0.12.1), for mm's
relay tests: code mm's authors did not write asks mm's user through mm.

At each prompt it announces a tool call, asks permission for it (its own option ids), sends a
form elicitation, then answers one line saying what came back:

  permission=<optionId or cancelled>; form=<accept {content} | decline | cancel | error: <message>>
"""

import asyncio
import json

from acp import PROTOCOL_VERSION, run_agent, start_tool_call, text_block, update_agent_message
from acp.schema import (
    AgentCapabilities,
    Implementation,
    InitializeResponse,
    NewSessionResponse,
    PermissionOption,
    PromptResponse,
    ToolCallUpdate,
)

SCHEMA = {
    "type": "object",
    "properties": {
        "zeta": {"type": "string", "title": "Pick a colour", "enum": ["red", "blue"]},
        "alpha": {"type": "boolean", "title": "Sure?"},
    },
    "required": ["zeta"],
}


class PyAgent:
    def __init__(self):
        self.conn = None

    def on_connect(self, conn):
        self.conn = conn

    async def initialize(self, protocol_version, client_capabilities=None, client_info=None, **kwargs):
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(),
            agent_info=Implementation(name="py-agent", version="1.0"),
        )

    async def new_session(self, cwd, mcp_servers=None, **kwargs):
        return NewSessionResponse(session_id="py-1")

    async def prompt(self, prompt, session_id, **kwargs):
        await self.conn.session_update(session_id, start_tool_call("t1", "rm -rf build", kind="execute"))
        options = [
            PermissionOption(option_id="py-yes", name="Yes, once", kind="allow_once"),
            PermissionOption(option_id="py-no", name="No", kind="reject_once"),
        ]
        answer = await self.conn.request_permission(
            session_id=session_id,
            tool_call=ToolCallUpdate(tool_call_id="t1", title="rm -rf build"),
            options=options,
        )
        outcome = answer.outcome
        permission = getattr(outcome, "option_id", None) or outcome.outcome
        try:
            # Raw, so that the schema goes exactly as written here.
            form = await self.conn._conn.send_request(
                "elicitation/create",
                {"sessionId": session_id, "mode": "form", "message": "A few details", "requestedSchema": SCHEMA},
            )
            action = form.get("action")
            form_text = action if action != "accept" else "accept " + json.dumps(form.get("content"), sort_keys=True)
        except Exception as e:  # the SDK raises RequestError for error responses
            form_text = "error: " + (getattr(e, "data", None) and json.dumps(e.data) or str(e))
        text = f"permission={permission}; form={form_text}"
        await self.conn.session_update(session_id, update_agent_message(text_block(text)))
        return PromptResponse(stop_reason="end_turn")

    async def cancel(self, session_id, **kwargs):
        pass


if __name__ == "__main__":
    asyncio.run(run_agent(PyAgent()))

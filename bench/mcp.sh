#!/bin/sh
# The overhead of an MCP tool call through mm over a direct rmcp client call to the same server
# (docs/tools.md, "MCP tools"; target: median under 2 ms).
# Usage: bench/mcp.sh [CALLS [COMMAND ARGS…]]
#   default server: crates/mm/tests/fixtures/mcp/fake_mcp.py; e.g. bench/mcp.sh 300 mcp-server-everything stdio
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
exec cargo run --quiet --release --example mcp_overhead -- "$@"

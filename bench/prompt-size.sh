#!/usr/bin/env bash
# The size of mm's first request: the system prompt plus the built-in tool schemas, for the
# prompt `hello` in an empty folder (no AGENTS.md, no skills). Target: under 1 500 tokens, since
# small local models answer slowly when every request starts with thousands of tokens.
#
#   bench/prompt-size.sh [URL]      URL, else $MM_E2E_URL: a real OpenAI-compatible server
#   MM=path/to/mm bench/prompt-size.sh    (default: target/release/mm, else target/debug/mm)
#
# With a real server, the count is the server's own: `prompt_tokens` of that request, read from
# the saved session's usage (chat template included). Without one, a recording stand-in server
# (bench/prompt_size_server.py) captures the request and the count is an estimate: the
# characters of the system message and the serialised `tools` divided by 4.
set -euo pipefail
cd "$(dirname "$0")/.."
MM="${MM:-}"
if [ -z "$MM" ]; then
  if [ -x target/release/mm ]; then MM=target/release/mm; else MM=target/debug/mm; fi
fi
[ -x "$MM" ] || { echo "no mm binary at $MM (cargo build first)" >&2; exit 1; }
MM="$(cd "$(dirname "$MM")" && pwd)/$(basename "$MM")"
URL="${1:-${MM_E2E_URL:-}}"
TARGET=1500

work="$(mktemp -d)"
trap 'rm -rf "$work"; [ -n "${server_pid:-}" ] && kill "$server_pid" 2>/dev/null || true' EXIT
mkdir -p "$work/home" "$work/project"

run_mm() { # URL
  (cd "$work/project" && env -u MM_MODEL -u MM_API_KEY -u MM_YOLO -u MM_CONTEXT_WINDOW \
    HOME="$work/home" XDG_CONFIG_HOME="$work/home/.config" NO_COLOR=1 MM_MODEL_URL="$1" \
    "$MM" -c sessions.enabled=true -c model.maxTokens=1 -p hello </dev/null >/dev/null 2>"$work/stderr") || true
}

if [ -n "$URL" ]; then
  run_mm "$URL"
  source="$URL (prompt_tokens)"
  tokens="$(python3 - "$work/project/.mm/sessions" <<'PY'
import glob, json, sys
files = glob.glob(sys.argv[1] + "/*.json")
if not files:
    sys.exit("no session file was saved")
print(json.load(open(files[0]))["usage"].get("inputTokens", 0))
PY
)" || { cat "$work/stderr" >&2; exit 1; }
  detail="-"
else
  python3 bench/prompt_size_server.py "$work/request.json" >"$work/url" &
  server_pid=$!
  for _ in $(seq 50); do [ -s "$work/url" ] && break; sleep 0.1; done
  [ -s "$work/url" ] || { echo "the stand-in server did not start" >&2; exit 1; }
  run_mm "$(cat "$work/url")"
  [ -s "$work/request.json" ] || { echo "mm sent no request:" >&2; cat "$work/stderr" >&2; exit 1; }
  source="estimate (characters / 4)"
  read -r tokens detail < <(python3 - "$work/request.json" <<'PY'
import json, sys
req = json.load(open(sys.argv[1]))
system = req["messages"][0]["content"]
tools = json.dumps(req.get("tools", []), separators=(",", ":"), ensure_ascii=False)
chars = len(system) + len(tools)
print(chars // 4, f"system={len(system)}+tools={len(tools)}={chars}chars")
PY
)
fi

if [ "$tokens" -gt 0 ] && [ "$tokens" -lt "$TARGET" ]; then verdict="yes"; else verdict="NO"; fi
printf '%-40s %8s %8s  %-6s %s\n' "source" "tokens" "target" "under" "detail"
printf '%-40s %8s %8s  %-6s %s\n' "$source" "$tokens" "$TARGET" "$verdict" "$detail"
[ "$verdict" = yes ]

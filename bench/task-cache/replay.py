"""Usage: replay.py URL SLOTS_JSON REC_DIR. Replays mm's recorded requests (parent r0 r1, child r2 r3, parent r4) against a llama-server,
each with max_tokens 1, non-streamed; SLOTS maps request index -> id_slot (or none). Prints the
prompt tokens the server evaluated (timings.prompt_n) and took from its cache (timings.cache_n)."""
import json, sys, urllib.request
url, slots, rec = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
for i in range(5):
    body = json.load(open(f"{rec}/req-{i}.json"))
    body["stream"] = False; body["max_tokens"] = 1; body.pop("stream_options", None)
    body["temperature"] = 0
    s = slots.get(str(i))
    if s is not None: body["id_slot"] = s
    req = urllib.request.Request(url + "/v1/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"})
    r = json.load(urllib.request.urlopen(req, timeout=600))
    t = r.get("timings", {})
    who = "parent" if i in (0, 1, 4) else "child"
    print(f"r{i} {who:6} slot={s} prompt_n={t.get('prompt_n')} cache_n={t.get('cache_n')} prompt_tokens={r.get('usage',{}).get('prompt_tokens')}")

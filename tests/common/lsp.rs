//! Stand-in language servers: Python scripts that speak the protocol's framing over stdio and
//! answer as each test needs.

/// What every stand-in starts with: `read()` one message (exiting at the end of stdin) and
/// `send(msg)`.
const FRAMING: &str = r#"
import json, sys
def read():
    length = None
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            sys.exit(0)
        line = line.strip()
        if not line:
            break
        k, v = line.split(b":", 1)
        if k.lower() == b"content-length":
            length = int(v)
    return json.loads(sys.stdin.buffer.read(length))
def send(msg):
    body = json.dumps(msg).encode()
    sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    sys.stdout.buffer.flush()
"#;

/// A stand-in server's script: the framing, then `main` (its loop, in Python).
pub fn stand_in(main: &str) -> String {
    format!("{FRAMING}{main}")
}

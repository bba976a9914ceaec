//! The demo model's canned answers and the streaming benchmark's (`mm-fake-server`), and the
//! demo server run in process for the suites that drive a third-party client against `mm -acp`
//! (crates/mm/tests/suite/acp_clients.rs).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::fake_server::{FakeServer, Options};
use super::script::{Chunk, Reply};

/// The demo server on a runtime of its own, answering while the test blocks on a client; it
/// stops when dropped.
pub struct DemoServer {
    server: FakeServer,
    // Dropped after the server: its tasks run on this runtime's thread.
    _runtime: tokio::runtime::Runtime,
}

impl DemoServer {
    /// `mm-fake-server --also-model M…`: the demo answers, `/v1/models` listing `fake-model`
    /// then `also_models`.
    pub fn start(also_models: &[&str]) -> DemoServer {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a runtime for the demo server");
        let options = Options {
            more_models: also_models.iter().map(|m| m.to_string()).collect(),
            responder: Some(Arc::new(demo_reply)),
            ..Options::default()
        };
        let server = runtime
            .block_on(FakeServer::start_with(options, Vec::new()))
            .expect("the demo server binds 127.0.0.1");
        DemoServer {
            server,
            _runtime: runtime,
        }
    }

    pub fn url(&self) -> String {
        self.server.url()
    }
}

/// `tok0 `, `tok1 `, … then finish, usage and `[DONE]`.
pub fn bench_reply(n: usize, interval: Duration) -> Reply {
    let mut chunks: Vec<Chunk> = (0..n).map(|i| Chunk::Text(format!("t{i} "))).collect();
    chunks.push(Chunk::finish("stop"));
    chunks.push(Chunk::Usage {
        prompt: 10,
        completion: n as u64,
    });
    chunks.push(Chunk::Done);
    Reply::chunks(chunks, interval)
}

/// What the demo's "build" runs: a line every quarter of a second for two seconds.
const DEMO_BUILD: &str =
    "for i in 1 2 3 4 5 6 7 8; do echo \"compiling unit $i/8\"; sleep 0.25; done; echo built";

/// The canned demo model: `ls` when asked to list, a build that prints for two seconds when
/// asked to build, a short report after a tool result, a friendly hint otherwise (which names
/// the model it was asked of).
pub fn demo_reply(request: &Value) -> Reply {
    let messages: &[Value] = request
        .get("messages")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let prompt_tokens = (request.to_string().len() / 4) as u64;
    let content = |m: &Value| {
        m.get("content")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let last = messages.last();
    let reply = match last.and_then(|m| m.get("role")).and_then(Value::as_str) {
        Some("tool") => {
            let output = last.map(content).unwrap_or_default();
            let lines = output.lines().filter(|l| !l.trim().is_empty()).count();
            Reply::text(&format!(
                "The command printed {lines} line{}. I am a demo model, so that is all I can \
                 say about it.",
                if lines == 1 { "" } else { "s" }
            ))
        }
        _ => {
            let asked = messages
                .iter()
                .rev()
                .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
                .map(content)
                .unwrap_or_default()
                .to_lowercase();
            let words: Vec<&str> = asked.split(|c: char| !c.is_alphanumeric()).collect();
            let model = request.get("model").and_then(Value::as_str).unwrap_or("");
            if words.iter().any(|w| *w == "ls" || *w == "list") {
                Reply::tool_call("bash", json!({"command": "ls"}))
                    .with_text_before("Let me list the files.")
            } else if words.contains(&"build") {
                Reply::tool_call("bash", json!({"command": DEMO_BUILD}))
                    .with_text_before("Building.")
            } else {
                Reply::text(&format!(
                    "Hello from {model}! I am mm-fake-server, a canned demo model. Ask me to \
                     \"list the files\" or to \"build\" and I will call the bash tool."
                ))
            }
        }
    };
    reply.with_usage(prompt_tokens, 20).with_delay(15)
}

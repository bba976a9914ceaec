//! `mm-fake-server`: the test suite's fake model server, for trying `mm` without a real model and
//! for the ACP relay benchmark.
//!
//!     mm-fake-server [--port P] [--also-model NAME]…  canned demo answers; prints the URL
//!     mm-fake-server --stream-bench N [--rate R]      every chat request: N one-token chunks at
//!                                                     R chunks/s (0 = as fast as possible)
//!
//! In bench mode, each time a response is complete it prints `last_byte_unix_ns=<nanoseconds>`
//! on stderr: the wall-clock time the server wrote its last byte.

// The fake server is test code: it lives in tests/common, and these four files are all of it.
#[path = "../../tests/common/fake_server.rs"]
mod fake_server;
#[path = "../../tests/common/http.rs"]
mod http;
#[path = "../../tests/common/invariants.rs"]
mod invariants;
#[path = "../../tests/common/script.rs"]
mod script;

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use fake_server::{FakeServer, Options};
use script::{Chunk, Reply};
use serde_json::{Value, json};

#[derive(Parser)]
#[command(about = "A fake OpenAI-compatible model server (demo answers, or a streaming benchmark)")]
struct Args {
    /// Port on 127.0.0.1 (0: any free port).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Context window reported by /props and /v1/models.
    #[arg(long, default_value_t = 32768)]
    n_ctx: u64,
    /// Another model /v1/models lists after `fake-model` (repeat for more): a session can
    /// switch to it, and the demo answers name the model they were asked of.
    #[arg(long = "also-model", value_name = "NAME")]
    also_models: Vec<String>,
    /// Answer every chat request with N one-token chunks.
    #[arg(long, value_name = "N")]
    stream_bench: Option<usize>,
    /// Chunks per second in --stream-bench mode (0: no pacing).
    #[arg(long, value_name = "R", default_value_t = 2000.0)]
    rate: f64,
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let args = Args::parse();
    let responder: fake_server::Responder = match args.stream_bench {
        Some(n) => {
            let interval = if args.rate > 0.0 {
                Duration::from_secs_f64(1.0 / args.rate)
            } else {
                Duration::ZERO
            };
            Arc::new(move |_: &Value| bench_reply(n, interval))
        }
        None => Arc::new(demo_reply),
    };
    let options = Options {
        port: args.port,
        n_ctx: Some(args.n_ctx),
        more_models: args.also_models,
        responder: Some(responder),
        ..Options::default()
    };
    let server = FakeServer::start_with(options, Vec::new()).await?;
    let mut out = std::io::stdout();
    writeln!(out, "{}", server.url())?;
    out.flush()?;
    if args.stream_bench.is_some() {
        let mut reported = 0;
        loop {
            tokio::select! {
                _ = server.until_responses(reported + 1) => {}
                _ = tokio::signal::ctrl_c() => return Ok(()),
            }
            for last in &server.last_bytes()[reported..] {
                eprintln!("last_byte_unix_ns={}", last.unix_nanos);
            }
            reported = server.last_bytes().len();
        }
    }
    let _ = tokio::signal::ctrl_c().await;
    Ok(())
}

/// `tok0 `, `tok1 `, … then finish, usage and `[DONE]`.
fn bench_reply(n: usize, interval: Duration) -> Reply {
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
fn demo_reply(request: &Value) -> Reply {
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

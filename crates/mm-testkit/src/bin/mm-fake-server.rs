//! `mm-fake-server`: the test suite's fake model server, for trying `mm` without a real model and
//! for the ACP relay benchmark.
//!
//!     mm-fake-server [--port P] [--also-model NAME]…  canned demo answers; prints the URL
//!     mm-fake-server --stream-bench N [--rate R]      every chat request: N one-token chunks at
//!                                                     R chunks/s (0 = as fast as possible)
//!
//! In bench mode, each time a response is complete it prints `last_byte_unix_ns=<nanoseconds>`
//! on stderr: the wall-clock time the server wrote its last byte.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use mm_testkit::demo::{bench_reply, demo_reply};
use mm_testkit::fake_server::{self, FakeServer, Options};
use serde_json::Value;

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

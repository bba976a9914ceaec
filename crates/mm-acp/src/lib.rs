//! The ACP front end (`mm -acp`): JSON-RPC 2.0 on stdio, through `agent-client-protocol`.
//!
//! A thin translation: the router (router.rs) hands each method to its handler (handlers/, one
//! file per group of methods), which calls the [`Engine`] through the `Server`; the engine's
//! events come back through an [`AcpFrontend`] per session, and `convert` holds every wire
//! shape. Answers and turns run in tasks mm owns (the SDK drops its own spawned tasks at EOF),
//! so that at EOF or on a signal they can be cancelled and awaited. This file: the entry points
//! and the way out.
#![forbid(unsafe_code)]

mod auth;
mod convert;
mod frontend;
mod handlers;
mod logger;
mod prompt;
mod router;
mod server;
mod sessions;
mod slot;
mod stdout;
pub mod transport;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::sync::CancellationToken;

// The layers below under the names the modules of this crate use (`crate::config::…`).
use mm_core::{VERSION, config, event, history, relay, session, skills, tasks};
use mm_engine as engine;

use crate::config::Config;
use crate::engine::Engine;
pub use frontend::{AcpFrontend, Peer};
pub use logger::Logger;
use server::Server;
use slot::Slot;
pub use transport::ClientHello;

/// How long running turns get to finish once stdin closed or a signal arrived.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

#[derive(Debug, thiserror::Error)]
pub enum AcpError {
    #[error("ACP connection failed: {0}")]
    Connection(String),
}

/// Serves ACP on stdin/stdout until stdin closes or `stop` fires (main.rs fires it on SIGINT,
/// SIGTERM and SIGHUP).
pub async fn serve(
    engine: Arc<Engine>,
    config: Arc<Config>,
    stop: CancellationToken,
) -> Result<(), AcpError> {
    if let Ok(filter) = std::env::var("MM_LOG") {
        // An editor shows the raw log: colour codes only on a terminal.
        let _ = tracing_subscriber::fmt()
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .with_writer(std::io::stderr)
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
            .try_init();
    }
    let out = stdout::QueuedWriter::stdout();
    let result = serve_with(
        engine,
        config,
        tokio::io::stdin(),
        out.clone(),
        Logger::stderr(),
        stop.cancelled_owned(),
    )
    .await;
    // Every answer queued before the end reaches the client before the process exits.
    out.drain(Duration::from_secs(2));
    result
}

/// Serves ACP over any byte pipe pair (in-process tests use `tokio::io::duplex`), until `input`
/// reaches its end. `output` is written by a task of the current runtime, as stdout is by its
/// thread, so both transports carry pre-serialised lines the same way.
pub async fn serve_io<R, W>(
    engine: Arc<Engine>,
    config: Arc<Config>,
    input: R,
    output: W,
    log: Logger,
) -> Result<(), AcpError>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let out = stdout::QueuedWriter::task(engine.processes.tasks(), output);
    serve_with(engine, config, input, out, log, std::future::pending()).await
}

async fn serve_with<R>(
    engine: Arc<Engine>,
    config: Arc<Config>,
    input: R,
    out: stdout::QueuedWriter,
    log: Logger,
    stop: impl std::future::Future<Output = ()>,
) -> Result<(), AcpError>
where
    R: AsyncRead + Unpin + Send + 'static,
{
    let hello = Arc::new(Mutex::new(None));
    // The front end's answers and turns: a group of the process's tasks, awaited below.
    let tasks = engine.processes.tasks().group();
    let max_line = config.acp.max_line_bytes;
    let transport = transport::lines(input, out.clone(), hello.clone(), max_line, log.clone());
    let server = Arc::new(Server {
        engine,
        config,
        log,
        forms: Mutex::new(false),
        compaction: Mutex::new(false),
        subagents: Mutex::new(false),
        notices: Mutex::new(false),
        auth: auth::Auth::default(),
        process_cwd: std::env::current_dir().ok(),
        listed_cwds: Mutex::new(Vec::new()),
        hello,
        sessions: Mutex::new(HashMap::new()),
        shutdown: CancellationToken::new(),
        tasks,
        out,
    });
    let connection = router::serve(&server, transport);
    let result = tokio::select! {
        r = connection => r.map_err(|e| AcpError::Connection(e.to_string())),
        () = stop => Ok(()),
    };
    // The output ends with the connection (the reader sees EOF now, not once the last turn
    // lets go of the server); what the SDK wrote before is still written.
    server.out.close();
    // The SDK does not join what was spawned: cancel the turns and give them time to save.
    server.shutdown.cancel();
    server.tasks.wait(SHUTDOWN_GRACE).await;
    result
}

//! The ACP front end (`mm -acp`): JSON-RPC 2.0 on stdio, through `agent-client-protocol`.
//!
//! A thin translation: requests call the [`Engine`], the engine's events come back through an
//! [`AcpFrontend`] per session, and `convert` holds every wire shape. Turns run in tasks mm owns
//! (the SDK drops its own spawned tasks at EOF), so that at EOF or on a signal they can be
//! cancelled and awaited.

mod auth;
mod convert;
mod frontend;
mod logger;
mod prompt;
mod server;
mod sessions;
mod slot;
mod stdout;
pub mod transport;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::v1::schema::{
    AuthenticateRequest, AuthenticateResponse, CancelNotification, CloseSessionRequest,
    CloseSessionResponse, DeleteSessionRequest, DeleteSessionResponse, InitializeRequest,
    InitializeResponse, ListSessionsRequest, ListSessionsResponse, LoadSessionRequest,
    LoadSessionResponse, NewSessionRequest, NewSessionResponse, PromptRequest, PromptResponse,
    ResumeSessionRequest, ResumeSessionResponse, SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse, SetSessionModeRequest, SetSessionModeResponse,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, Client, Error};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::sync::CancellationToken;

// The layers below under the names the modules of this crate use (`crate::config::…`).
use mm_core::{VERSION, config, event, history, relay, session, skills, tasks};
use mm_engine as engine;
use mm_model as model;

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
    let engine_tasks = engine.processes.tasks().clone();
    let max_line = config.acp.max_line_bytes;
    let transport = transport::lines(input, out.clone(), hello.clone(), max_line, log.clone());
    let server = Arc::new(Server {
        engine,
        config,
        log,
        forms: Mutex::new(false),
        compaction: Mutex::new(false),
        auth: auth::Auth::default(),
        process_cwd: std::env::current_dir().ok(),
        listed_cwds: Mutex::new(Vec::new()),
        hello,
        sessions: Mutex::new(HashMap::new()),
        shutdown: CancellationToken::new(),
        tasks: engine_tasks.group(),
        out,
    });
    let (s1, s2, s3, s4, s5, s6) = (
        server.clone(),
        server.clone(),
        server.clone(),
        server.clone(),
        server.clone(),
        server.clone(),
    );
    let connection = Agent
        .v1()
        .name("mm")
        .on_receive_request(
            async move |req: InitializeRequest, responder: Responder<InitializeResponse>, _cx| {
                let answered = responder.respond(s1.initialize(req));
                // Detection (HTTP client, probes) starts once the answer is out, never before.
                s1.engine.model.warm_up(s1.engine.processes.tasks());
                s1.engine.probe_window_later();
                answered
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |_req: AuthenticateRequest,
                        responder: Responder<AuthenticateResponse>,
                        _cx| { responder.respond(AuthenticateResponse::new()) },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: NewSessionRequest,
                        responder: Responder<NewSessionResponse>,
                        cx: ConnectionTo<Client>| {
                let server = s2.clone();
                s2.spawn(&cx, server.new_session(req, responder, cx.clone()));
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: LoadSessionRequest,
                        responder: Responder<LoadSessionResponse>,
                        cx: ConnectionTo<Client>| {
                if !s3.config.sessions.enabled {
                    return responder
                        .respond_with_error(Error::method_not_found().data("session/load"));
                }
                let server = s3.clone();
                s3.spawn(&cx, server.load_session(req, responder, cx.clone()));
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: PromptRequest,
                        responder: Responder<PromptResponse>,
                        cx: ConnectionTo<Client>| {
                let id = req.session_id.0.to_string();
                let Some(slot) = s4.slot(&id) else {
                    let e = convert::RequestError::UnknownSession(id.clone());
                    return responder.respond_with_error(convert::request_error(Some(&id), &e));
                };
                let token = s4.shutdown.child_token();
                let key = slot.track(&token);
                let (before, done) = slot.queue();
                let server = s4.clone();
                s4.spawn(&cx, async move {
                    // A second prompt on the session waits for the first to be answered.
                    if let Some(before) = before {
                        let _ = before.await;
                    }
                    let result = server.clone().prompt(slot.clone(), req, token, key).await;
                    let _ = responder.respond_with_result(result);
                    // A model list that came during the turn (a server started late).
                    server.show_models_now(&slot);
                    drop(done);
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let server = server.clone();
                async move |req: SetSessionModeRequest,
                            responder: Responder<SetSessionModeResponse>,
                            _cx| server.set_mode(req, responder)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let server = server.clone();
                async move |req: SetSessionConfigOptionRequest,
                            responder: Responder<SetSessionConfigOptionResponse>,
                            _cx| server.set_config_option(req, responder)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let server = server.clone();
                async move |req: CloseSessionRequest,
                            responder: Responder<CloseSessionResponse>,
                            cx: ConnectionTo<Client>| {
                    let s = server.clone();
                    server.spawn(&cx, s.close_session(req, responder));
                    Ok(())
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        // Saved sessions' methods: without `sessions.enabled`, "method not found" as for an
        // agent that has none.
        .on_receive_request(
            {
                let server = server.clone();
                async move |req: ListSessionsRequest,
                            responder: Responder<ListSessionsResponse>,
                            cx: ConnectionTo<Client>| {
                    if !server.config.sessions.enabled {
                        return responder
                            .respond_with_error(Error::method_not_found().data("session/list"));
                    }
                    let s = server.clone();
                    server.spawn(&cx, s.list_sessions(req, responder));
                    Ok(())
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let server = server.clone();
                async move |req: ResumeSessionRequest,
                            responder: Responder<ResumeSessionResponse>,
                            cx: ConnectionTo<Client>| {
                    if !server.config.sessions.enabled {
                        return responder
                            .respond_with_error(Error::method_not_found().data("session/resume"));
                    }
                    let s = server.clone();
                    server.spawn(&cx, s.resume_session(req, responder, cx.clone()));
                    Ok(())
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let server = server.clone();
                async move |req: DeleteSessionRequest,
                            responder: Responder<DeleteSessionResponse>,
                            cx: ConnectionTo<Client>| {
                    if !server.config.sessions.enabled {
                        return responder
                            .respond_with_error(Error::method_not_found().data("session/delete"));
                    }
                    let s = server.clone();
                    server.spawn(&cx, s.delete_session(req, responder));
                    Ok(())
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |n: CancelNotification, _cx| {
                if let Some(slot) = s5.slot(&n.session_id.0) {
                    slot.cancel_all();
                }
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(transport);
    let result = tokio::select! {
        r = connection => r.map_err(|e| AcpError::Connection(e.to_string())),
        () = stop => Ok(()),
    };
    // The output ends with the connection (the reader sees EOF now, not once the last turn
    // lets go of the server); what the SDK wrote before is still written.
    s6.out.close();
    // The SDK does not join what was spawned: cancel the turns and give them time to save.
    s6.shutdown.cancel();
    s6.tasks.wait(SHUTDOWN_GRACE).await;
    result
}

//! One running agent with one ACP session: its process, the SDK's client connection over its
//! pipes, and the exchange loop that waits for an answer while it relays what the agent sends
//! meanwhile (updates, permission requests, forms) and watches for every way it can fail.

use std::process::Stdio;
use std::time::Duration;

use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, Client, UntypedMessage};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::messages::{
    chunk_text, error_text, mode_ids, permission_of, refuse, started_tool_call, update_text,
};
use super::transport::{self, End};
use super::{
    AgentCommand, AgentError, AgentStop, Answer, CANCEL_GRACE, DEPTH_VAR, MAX_DEPTH, StartOptions,
};
use crate::event::{ChildStep, Event, PermissionMode};
use crate::process::{Child, Group};
use crate::tasks::Tasks;
use crate::tools::CallContext;
use mm_core::relay::{RelayedAnswer, refusal_of};

/// How long a closed connection's process gets to exit on its own before it is stopped.
const CLOSE_GRACE: Duration = Duration::from_millis(300);
/// How long a failed agent gets to report its exit status.
const EXIT_WAIT: Duration = Duration::from_millis(500);
/// How long what an exited agent wrote gets to arrive.
const EXIT_DRAIN: Duration = Duration::from_millis(200);

/// One thing that happened while a request waits for its answer.
enum Step {
    Response(Result<Value, agent_client_protocol::Error>),
    Incoming(Option<Incoming>),
    /// The agent's stdout ended (or carried a line that is not JSON-RPC).
    Ended,
    /// The agent's process exited: how.
    Exited(String),
    Cancel,
    Timeout,
}

/// What the SDK's handlers pass to the exchange in progress.
enum Incoming {
    Notification(UntypedMessage),
    /// Boxed: a responder is several times the size of a notification.
    Request(Box<(UntypedMessage, Responder<Value>)>),
}

/// A running agent with one ACP session, ready for questions.
pub struct Connection {
    name: String,
    cx: ConnectionTo<Agent>,
    session_id: String,
    /// The ids of the modes its session offers (`session/new`'s `modes.availableModes`).
    modes: Vec<String>,
    incoming: mpsc::UnboundedReceiver<Incoming>,
    end: watch::Receiver<Option<End>>,
    child: Option<Child>,
    /// Ends the SDK's connection (and so closes the agent's stdin).
    shutdown: CancellationToken,
    silence: Duration,
    /// A failure or an abandoned cancel left it in an unknown state: never reused.
    broken: bool,
    /// The process's tasks: the SDK's loop, and the last wait for the agent's exit.
    tasks: Tasks,
}

impl Connection {
    /// Starts the agent, `initialize`, `session/new` in `opts.cwd`.
    pub async fn start(
        cmd: &AgentCommand,
        opts: &StartOptions<'_>,
        call: &CallContext<'_>,
    ) -> Result<Connection, AgentError> {
        if opts.depth >= MAX_DEPTH {
            return Err(AgentError::TooDeep);
        }
        // The asking session's fence: what the agent runs may write no more than our own
        // commands may (plus the agent's own state folders).
        let fencing = opts
            .sandbox
            .fence_for(opts.cwd, &cmd.sandbox)
            .map_err(|e| AgentError::Start {
                program: cmd.program.clone(),
                error: format!("the sandbox: {e}"),
            })?;
        let mut command = fencing.command(mm_tools::program::resolve(cmd.program.as_ref()));
        command
            .args(&cmd.args)
            .envs(&cmd.env)
            .env(DEPTH_VAR, (opts.depth + 1).to_string())
            .current_dir(opts.cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let python = mm_tools::program::python::cwd_first(&cmd.program, &cmd.args);
        mm_tools::program::python::protect(&mut command, python, &cmd.env);
        // The fence hides the user's config file: an mm asked reads it from a descriptor held
        // for this one child, closed here once it is started (docs/agents.md).
        // An mm that was handed it (asked itself) hands on the text it read.
        let handed = match (opts.sandbox.user_config_text(), opts.sandbox.user_config()) {
            (Some(text), _) => mm_tools::process::hand_config_text(&mut command, text)
                .map_err(|e| format!("cannot hand on the user config: {e}")),
            (None, Some(file)) => mm_tools::process::hand_config(&mut command, file)
                .map_err(|e| format!("cannot open {}: {e}", file.display())),
            (None, None) => Ok(mm_tools::process::Handed::default()),
        };
        let _handed = handed.map_err(|error| AgentError::Start {
            program: cmd.program.clone(),
            error,
        })?;
        let mut child = opts
            .processes
            .spawn(&mut command, Group::Own, fencing)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => AgentError::NotFound(cmd.program.clone()),
                _ => AgentError::Start {
                    program: cmd.program.clone(),
                    error: e.to_string(),
                },
            })?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.take_stdin(), child.take_stdout(), child.take_stderr())
        else {
            return Err(AgentError::Start {
                program: cmd.program.clone(),
                error: "its pipes are missing".into(),
            });
        };
        let tasks = opts.processes.tasks().clone();
        transport::relay_stderr(&tasks, stderr, format!("[{}] ", cmd.name));
        let (lines, end) = transport::lines(stdin, stdout);

        let (cx_tx, cx_rx) = oneshot::channel();
        let (in_tx, incoming) = mpsc::unbounded_channel();
        let shutdown = CancellationToken::new();
        let until = shutdown.clone();
        let requests = in_tx.clone();
        // The SDK's loop runs until the connection is dropped: cut at shutdown (the agent is
        // stopped by then).
        tasks.spawn_until_shutdown(async move {
            // Handlers run inside the SDK's dispatch loop: they only hand over (a request's
            // responder with it); the exchange answers. A responder dropped unanswered tells the
            // agent `-32603`.
            let _ = Client
                .v1()
                .name("mm")
                .on_receive_request(
                    async move |req: UntypedMessage,
                                responder: Responder<Value>,
                                _cx: ConnectionTo<Agent>| {
                        let _ = requests.send(Incoming::Request(Box::new((req, responder))));
                        Ok(())
                    },
                    agent_client_protocol::on_receive_request!(),
                )
                .on_receive_notification(
                    async move |n: UntypedMessage, _cx: ConnectionTo<Agent>| {
                        let _ = in_tx.send(Incoming::Notification(n));
                        Ok(())
                    },
                    agent_client_protocol::on_receive_notification!(),
                )
                .connect_with(lines, async move |cx: ConnectionTo<Agent>| {
                    let _ = cx_tx.send(cx);
                    until.cancelled().await;
                    Ok(())
                })
                .await;
        });
        let Ok(cx) = cx_rx.await else {
            return Err(AgentError::Closed);
        };
        let mut conn = Connection {
            name: cmd.name.clone(),
            cx,
            session_id: String::new(),
            modes: Vec::new(),
            incoming,
            end,
            child: Some(child),
            shutdown,
            silence: opts.silence,
            broken: false,
            tasks,
        };
        let init = json!({
            "protocolVersion": 1,
            "clientCapabilities": {"elicitation": {"form": {}}},
            "clientInfo": {"name": "mm", "version": crate::VERSION},
        });
        conn.exchange("initialize", init, call, None).await?;
        let new = json!({"cwd": opts.cwd, "mcpServers": []});
        let r = conn.exchange("session/new", new, call, None).await?;
        conn.modes = mode_ids(&r);
        match r.get("sessionId").and_then(Value::as_str) {
            Some(id) => conn.session_id = id.to_string(),
            None => {
                conn.broken = true;
                return Err(AgentError::NotAcp {
                    method: "session/new".into(),
                    detail: "no sessionId".into(),
                });
            }
        }
        Ok(conn)
    }

    /// Whether it can take another question (its process still runs, nothing went wrong).
    pub fn usable(&mut self) -> bool {
        let running = self
            .child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)));
        running && !self.broken && self.end.borrow().is_none()
    }

    /// Asks one question in the connection's session, in our session's mode (`call.mode`): its
    /// answer, or why there is none.
    pub async fn ask(
        &mut self,
        question: &str,
        call: &CallContext<'_>,
    ) -> Result<Answer, AgentError> {
        self.put_in_mode(call).await?;
        let params = json!({
            "sessionId": self.session_id,
            "prompt": [{"type": "text", "text": question}],
        });
        let mut text = String::new();
        let r = self
            .exchange("session/prompt", params, call, Some(&mut text))
            .await?;
        let stop = r
            .get("stopReason")
            .and_then(Value::as_str)
            .and_then(AgentStop::from_name);
        match stop {
            Some(stop) => Ok(Answer { text, stop }),
            None => {
                self.broken = true;
                Err(AgentError::NotAcp {
                    method: "session/prompt".into(),
                    detail: "no known stopReason".into(),
                })
            }
        }
    }

    /// Puts the agent's session in our session's mode, before every question: a kept agent
    /// outlives `/mode` switches (and may have switched itself). An agent that does not offer
    /// the mode keeps its own for `ask` and `yolo` (its permission requests still come to our
    /// user), and is not asked at all in `read-only`.
    async fn put_in_mode(&mut self, call: &CallContext<'_>) -> Result<(), AgentError> {
        let mode = call.mode;
        if self.modes.iter().any(|m| m == mode.id()) {
            let params = json!({"sessionId": self.session_id, "modeId": mode.id()});
            self.exchange("session/set_mode", params, call, None)
                .await?;
            return Ok(());
        }
        match mode {
            PermissionMode::ReadOnly => Err(AgentError::NoReadOnlyMode),
            PermissionMode::Ask | PermissionMode::Yolo => Ok(()),
        }
    }

    /// Closes the connection: the agent's stdin ends, it gets a moment to exit, then its group
    /// is stopped (whatever it left behind goes too).
    pub async fn close(mut self) {
        self.shutdown.cancel();
        if let Some(mut child) = self.child.take() {
            let _ = tokio::time::timeout(CLOSE_GRACE, child.wait()).await;
            child.stop();
        }
    }

    /// Sends one request and waits for its answer, handling what the agent sends meanwhile:
    /// updates (`collect` gathers the answer's text; tool calls become progress), permission
    /// requests and forms (put to our user through `call`). Cancellable only for a prompt:
    /// `session/cancel` goes out and the agent gets [`CANCEL_GRACE`] to answer.
    async fn exchange(
        &mut self,
        method: &str,
        params: Value,
        call: &CallContext<'_>,
        mut collect: Option<&mut String>,
    ) -> Result<Value, AgentError> {
        let request = match UntypedMessage::new(method, params) {
            Ok(m) => m,
            Err(e) => {
                return Err(AgentError::NotAcp {
                    method: method.into(),
                    detail: e.message,
                });
            }
        };
        let response = self.cx.send_request(request).block_task();
        tokio::pin!(response);
        let prompt = collect.is_some();
        let mut deadline = Instant::now() + self.silence;
        let mut cancelled: Option<Instant> = None;
        // The agent's process exited: what it wrote before still gets a moment to arrive (a
        // process it left behind may hold its stdout open, so no end of input is waited for).
        let mut exited: Option<(Instant, String)> = None;
        loop {
            let wait_until = match (&exited, cancelled) {
                (Some((at, _)), _) => *at + EXIT_DRAIN,
                (None, Some(at)) => at + CANCEL_GRACE,
                (None, None) => deadline,
            };
            let step = tokio::select! {
                biased;
                r = &mut response => Step::Response(r),
                m = self.incoming.recv() => Step::Incoming(m),
                r = self.end.wait_for(Option::is_some) => {
                    drop(r);
                    Step::Ended
                }
                status = exit_of(self.child.as_mut()), if exited.is_none() => Step::Exited(status),
                () = call.cancel.cancelled(), if cancelled.is_none() => Step::Cancel,
                () = tokio::time::sleep_until(wait_until) => Step::Timeout,
            };
            match step {
                Step::Response(r) => {
                    self.drain(call, &mut collect);
                    return match (r, cancelled) {
                        (Ok(_), Some(_)) => Err(AgentError::Cancelled),
                        (Ok(v), None) => Ok(v),
                        (Err(e), _) => Err(self.failure(method, &e).await),
                    };
                }
                Step::Incoming(Some(Incoming::Notification(n))) => {
                    self.on_notification(&n, call, &mut collect);
                    deadline = Instant::now() + self.silence;
                }
                Step::Incoming(Some(Incoming::Request(request))) => {
                    let (req, responder) = *request;
                    self.on_request(req, responder, call, cancelled.is_some())
                        .await;
                    deadline = Instant::now() + self.silence;
                }
                Step::Incoming(None) | Step::Ended => {
                    return Err(self.failure(method, &closed()).await);
                }
                Step::Cancel => {
                    if !prompt {
                        self.broken = true;
                        return Err(AgentError::Cancelled);
                    }
                    let note = json!({"sessionId": self.session_id});
                    if let Ok(m) = UntypedMessage::new("session/cancel", note) {
                        let _ = self.cx.send_notification(m);
                    }
                    cancelled = Some(Instant::now());
                }
                Step::Exited(status) => exited = Some((Instant::now(), status)),
                Step::Timeout => {
                    self.broken = true;
                    return Err(match (exited, cancelled) {
                        (Some((_, status)), _) => AgentError::Exited(status),
                        (None, Some(_)) => AgentError::Cancelled,
                        (None, None) => AgentError::Silent(self.silence.as_secs()),
                    });
                }
            }
        }
    }

    /// What arrived before the response but was not read yet (the select prefers the response):
    /// updates are read as usual, a tool call among them still becomes progress (the call is
    /// not finished until this returns), requests are refused (too late).
    fn drain(&mut self, call: &CallContext<'_>, collect: &mut Option<&mut String>) {
        while let Ok(m) = self.incoming.try_recv() {
            match m {
                Incoming::Notification(n) => self.on_notification(&n, call, collect),
                Incoming::Request(request) => refuse(&request.0, request.1),
            }
        }
    }

    fn on_notification(
        &self,
        n: &UntypedMessage,
        call: &CallContext<'_>,
        collect: &mut Option<&mut String>,
    ) {
        // The answer's text is the child's too (a question's, not a mode switch's).
        if let (Some(t), Some(_)) = (chunk_text(n), collect.as_ref()) {
            call.show_child(
                &self.name,
                ChildStep::Event(Box::new(Event::Text(t.to_string()))),
            );
        }
        update_text(n, collect);
        if let Some(title) = started_tool_call(n) {
            call.progress(title);
        }
    }

    async fn on_request(
        &self,
        req: UntypedMessage,
        responder: Responder<Value>,
        call: &CallContext<'_>,
        cancelling: bool,
    ) {
        let params = req.params();
        match req.method() {
            "session/request_permission" => {
                let (title, options) = permission_of(params);
                let chosen = match call.mode {
                    _ if cancelling => None,
                    // Nothing runs in read-only mode, whoever asks: refused as our own gate
                    // refuses, without asking our user (an agent that ignored set_mode).
                    PermissionMode::ReadOnly => refusal_of(&options),
                    PermissionMode::Ask | PermissionMode::Yolo => {
                        call.ask_relayed_permission(format!("{}: {title}", self.name), options)
                            .await
                    }
                };
                let outcome = match chosen {
                    Some(id) => json!({"outcome": {"outcome": "selected", "optionId": id}}),
                    None => json!({"outcome": {"outcome": "cancelled"}}),
                };
                let _ = responder.respond(outcome);
            }
            "elicitation/create" => {
                if params.get("mode").and_then(Value::as_str) != Some("form") {
                    let _ = responder.respond_with_error(agent_client_protocol::Error::new(
                        -32602,
                        "only form elicitations can be relayed",
                    ));
                    return;
                }
                let answer = if cancelling {
                    RelayedAnswer::Cancelled
                } else {
                    let message = params
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string();
                    let schema = params
                        .get("requestedSchema")
                        .cloned()
                        .unwrap_or(Value::Null);
                    call.ask_relayed_form(&self.name, message, schema).await
                };
                let _ = match answer {
                    RelayedAnswer::Accepted(content) => {
                        responder.respond(json!({"action": "accept", "content": content}))
                    }
                    RelayedAnswer::Declined => responder.respond(json!({"action": "decline"})),
                    RelayedAnswer::Cancelled => responder.respond(json!({"action": "cancel"})),
                    RelayedAnswer::Unavailable(why) => {
                        responder.respond_with_error(agent_client_protocol::Error::new(-32603, why))
                    }
                };
            }
            _ => refuse(&req, responder),
        }
    }

    /// Why the exchange failed: a stray stdout line, the process gone, or an error answer.
    async fn failure(&mut self, method: &str, e: &agent_client_protocol::Error) -> AgentError {
        self.broken = true;
        let end = self.end.borrow().clone();
        match end {
            Some(End::NotJsonRpc(line)) => AgentError::NotJsonRpc(line),
            Some(End::Eof | End::Read(_)) | None if self.transport_gone(e) => {
                match self.exit_status().await {
                    Some(status) => AgentError::Exited(status),
                    None => AgentError::Closed,
                }
            }
            Some(End::Eof | End::Read(_)) | None => AgentError::ErrorResponse {
                method: method.to_string(),
                message: error_text(e),
            },
        }
    }

    /// Whether an error means the connection is gone rather than an answer from the agent.
    fn transport_gone(&self, e: &agent_client_protocol::Error) -> bool {
        self.end.borrow().is_some() || self.cx.is_incoming_closed() || e.code.value() == CLOSED
    }

    async fn exit_status(&mut self) -> Option<String> {
        tokio::time::timeout(EXIT_WAIT, exit_of(self.child.as_mut()))
            .await
            .ok()
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.shutdown.cancel();
        // Stopped now when no runtime is left; else it gets a moment to exit on its own.
        if let (Some(mut child), Ok(handle)) =
            (self.child.take(), tokio::runtime::Handle::try_current())
        {
            self.tasks.spawn_on(
                async move {
                    let _ = tokio::time::timeout(CLOSE_GRACE, child.wait()).await;
                    child.stop();
                },
                &handle,
            );
        }
    }
}

/// Waits for the agent's process to exit: how it ended, as the failure line says it. Never
/// returns when there is no process (or its status cannot be read).
async fn exit_of(child: Option<&mut Child>) -> String {
    let Some(child) = child else {
        return std::future::pending().await;
    };
    match child.wait().await {
        Ok(status) => match (status.code(), mm_tools::process::signal_of(&status)) {
            (Some(code), _) => format!("exit code {code}"),
            (None, Some(signal)) => format!("killed by signal {signal}"),
            (None, None) => "no exit status".to_string(),
        },
        Err(_) => std::future::pending().await,
    }
}

/// The code of the error mm makes up for "the connection is gone".
const CLOSED: i32 = -32099;

fn closed() -> agent_client_protocol::Error {
    agent_client_protocol::Error::new(CLOSED, "the connection closed")
}

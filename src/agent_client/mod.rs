//! mm as an ACP **client** (agents.md): starts another agent, asks it a question, relays what it
//! asks our user, and collects its answer. One module for the three doors: the `ask_agent`
//! tool, `/ask` in the terminal and `mm --ask`.
//!
//! Built on the client side of the same `agent-client-protocol` crate the ACP front end serves
//! with: the SDK frames, correlates and dispatches JSON-RPC; mm spawns the child itself through
//! the [`Supervisor`] and hands its pipes to the SDK (transport.rs, which also fails the
//! exchange at the first line that is not JSON-RPC). Messages are read and written as JSON
//! values, not the SDK's typed structs: an asked agent's form schema must go through unchanged
//! (the typed schema sorts its properties), and an agent on a newer schema must not fail
//! parsing over an update mm ignores anyway.
//!
//! Every wait is bounded: a request unanswered with no message for the silence limit
//! (`model.requestTimeout`) fails, a cancelled prompt gets [`CANCEL_GRACE`] to answer, and a
//! failed connection is never reused; dropping a [`Connection`] stops the process group.

mod transport;
mod words;

pub use words::{split_command_line, split_first_word};

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, Client, UntypedMessage};
use serde_json::{Value, json};
use tokio::process::Command;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::config::AgentConfig;
use crate::process::{Child, Group, Supervisor};
use crate::relay::{OptionKind, RelayedAnswer, RelayedOption};
use crate::tools::Call;
use transport::End;

/// The environment variable that carries the asking depth to an asked agent.
pub const DEPTH_VAR: &str = "MM_ASK_DEPTH";
/// How deep asking nests: a process at this depth cannot ask (agents.md).
pub const MAX_DEPTH: u32 = 2;
/// How long a cancelled prompt gets to answer before the agent is stopped.
pub const CANCEL_GRACE: Duration = Duration::from_secs(2);
/// How long a closed connection's process gets to exit on its own before it is stopped.
const CLOSE_GRACE: Duration = Duration::from_millis(300);
/// How long a failed agent gets to report its exit status.
const EXIT_WAIT: Duration = Duration::from_millis(500);
/// How long what an exited agent wrote gets to arrive.
const EXIT_DRAIN: Duration = Duration::from_millis(200);
/// Bytes of an answer kept; the rest is dropped, and [`CUT`] says so.
const MAX_ANSWER: usize = 8 << 20;
const CUT: &str = "\n[… the rest of the answer was dropped: over 8 MB …]";
/// Characters of a stray stdout line quoted in the failure line.
const STRAY_LINE_CHARS: usize = 80;

/// Why asking an agent failed. Each explanation is a fixed string (docs/agents.md lists them);
/// the whole line the user and the model see is [`AgentError::line`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AgentError {
    #[error("no agent of that name is configured ({0})")]
    Unknown(String),
    #[error("the command line is empty")]
    EmptyCommand,
    #[error("the command line has an unterminated quote")]
    Unterminated,
    #[error("asking nests at most {MAX_DEPTH} deep")]
    TooDeep,
    #[error("command not found: {0}")]
    NotFound(String),
    #[error("cannot start {program}: {error}")]
    Start { program: String, error: String },
    #[error("it exited ({0})")]
    Exited(String),
    #[error("it closed its output")]
    Closed,
    #[error("it answered {method} with an error: {message}")]
    ErrorResponse { method: String, message: String },
    #[error("it wrote a line that is not JSON-RPC: {0}")]
    NotJsonRpc(String),
    #[error("it answered {method} with something that is not ACP: {detail}")]
    NotAcp { method: String, detail: String },
    #[error("it sent nothing for {0} s (model.requestTimeout)")]
    Silent(u64),
    /// Our user cancelled: not a failure line, each door says it its own way.
    #[error("cancelled")]
    Cancelled,
}

impl AgentError {
    /// `[agent <name> failed: <explanation>]`.
    pub fn line(&self, agent: &str) -> String {
        format!("[agent {agent} failed: {self}]")
    }
}

/// An agent to start: a configured one, or a command line (`/ask`, `mm --ask`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentCommand {
    /// How it is named in failure lines and stderr prefixes.
    pub name: String,
    pub program: String,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
}

impl AgentCommand {
    pub fn configured(name: &str, agent: &AgentConfig) -> Self {
        AgentCommand {
            name: name.to_string(),
            program: agent.command.clone(),
            args: agent.args.clone(),
            env: agent.env.clone(),
        }
    }

    /// A configured agent by name.
    pub fn named(agents: &BTreeMap<String, AgentConfig>, name: &str) -> Result<Self, AgentError> {
        match agents.get(name) {
            Some(a) => Ok(AgentCommand::configured(name, a)),
            None if agents.is_empty() => Err(AgentError::Unknown("none is".into())),
            None => {
                let names: Vec<&str> = agents.keys().map(String::as_str).collect();
                Err(AgentError::Unknown(format!(
                    "configured: {}",
                    names.join(", ")
                )))
            }
        }
    }

    /// A configured name, else a command line (`mm --ask "mm -acp" …`).
    pub fn resolve(
        agents: &BTreeMap<String, AgentConfig>,
        agent: &str,
    ) -> Result<Self, AgentError> {
        if let Some(a) = agents.get(agent) {
            return Ok(AgentCommand::configured(agent, a));
        }
        let mut words = split_command_line(agent)?.into_iter();
        let program = words.next().ok_or(AgentError::EmptyCommand)?;
        Ok(AgentCommand {
            name: agent.trim().to_string(),
            program,
            args: words.collect(),
            env: BTreeMap::new(),
        })
    }
}

/// Where and how an agent is started.
pub struct StartOptions<'a> {
    /// The asked agent's session cwd (ours).
    pub cwd: &'a Path,
    pub processes: &'a Arc<Supervisor>,
    /// Our own asking depth (0: nobody asked us).
    pub depth: u32,
    /// How long the agent may send nothing while we wait for an answer.
    pub silence: Duration,
}

/// How the asked agent's turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentStop {
    EndTurn,
    MaxTokens,
    MaxTurnRequests,
    Refusal,
    /// It cancelled the turn itself (ours is [`AgentError::Cancelled`]).
    Cancelled,
}

impl AgentStop {
    fn from_name(name: &str) -> Option<AgentStop> {
        match name {
            "end_turn" => Some(AgentStop::EndTurn),
            "max_tokens" => Some(AgentStop::MaxTokens),
            "max_turn_requests" => Some(AgentStop::MaxTurnRequests),
            "refusal" => Some(AgentStop::Refusal),
            "cancelled" => Some(AgentStop::Cancelled),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            AgentStop::EndTurn => "end_turn",
            AgentStop::MaxTokens => "max_tokens",
            AgentStop::MaxTurnRequests => "max_turn_requests",
            AgentStop::Refusal => "refusal",
            AgentStop::Cancelled => "cancelled",
        }
    }
}

/// The asked agent's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// Its `agent_message_chunk` text, concatenated.
    pub text: String,
    pub stop: AgentStop,
}

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
    incoming: mpsc::UnboundedReceiver<Incoming>,
    end: watch::Receiver<Option<End>>,
    child: Option<Child>,
    /// Ends the SDK's connection (and so closes the agent's stdin).
    shutdown: CancellationToken,
    silence: Duration,
    /// A failure or an abandoned cancel left it in an unknown state: never reused.
    broken: bool,
}

impl Connection {
    /// Starts the agent, `initialize`, `session/new` in `opts.cwd`.
    pub async fn start(
        cmd: &AgentCommand,
        opts: &StartOptions<'_>,
        call: &Call<'_>,
    ) -> Result<Connection, AgentError> {
        if opts.depth >= MAX_DEPTH {
            return Err(AgentError::TooDeep);
        }
        let mut command = Command::new(&cmd.program);
        command
            .args(&cmd.args)
            .envs(&cmd.env)
            .env(DEPTH_VAR, (opts.depth + 1).to_string())
            .current_dir(opts.cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = opts
            .processes
            .spawn(&mut command, Group::Own)
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
        transport::relay_stderr(stderr, format!("[{}] ", cmd.name));
        let (lines, end) = transport::lines(stdin, stdout);

        let (cx_tx, cx_rx) = oneshot::channel();
        let (in_tx, incoming) = mpsc::unbounded_channel();
        let shutdown = CancellationToken::new();
        let until = shutdown.clone();
        let requests = in_tx.clone();
        tokio::spawn(async move {
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
            incoming,
            end,
            child: Some(child),
            shutdown,
            silence: opts.silence,
            broken: false,
        };
        let init = json!({
            "protocolVersion": 1,
            "clientCapabilities": {"elicitation": {"form": {}}},
            "clientInfo": {"name": "mm", "version": crate::VERSION},
        });
        conn.exchange("initialize", init, call, None).await?;
        let new = json!({"cwd": opts.cwd, "mcpServers": []});
        let r = conn.exchange("session/new", new, call, None).await?;
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

    /// Asks one question in the connection's session: its answer, or why there is none.
    pub async fn ask(&mut self, question: &str, call: &Call<'_>) -> Result<Answer, AgentError> {
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
        call: &Call<'_>,
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
                    self.drain(&mut collect);
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

    /// What arrived before the response: updates are read, requests refused (too late).
    fn drain(&mut self, collect: &mut Option<&mut String>) {
        while let Ok(m) = self.incoming.try_recv() {
            match m {
                Incoming::Notification(n) => update_text(&n, collect),
                Incoming::Request(request) => refuse(&request.0, request.1),
            }
        }
    }

    fn on_notification(
        &self,
        n: &UntypedMessage,
        call: &Call<'_>,
        collect: &mut Option<&mut String>,
    ) {
        update_text(n, collect);
        if let Some(title) = started_tool_call(n) {
            call.progress(title);
        }
    }

    async fn on_request(
        &self,
        req: UntypedMessage,
        responder: Responder<Value>,
        call: &Call<'_>,
        cancelling: bool,
    ) {
        let params = req.params();
        match req.method() {
            "session/request_permission" => {
                let chosen = if cancelling {
                    None
                } else {
                    let (title, options) = permission_of(params);
                    call.ask_relayed_permission(format!("{}: {title}", self.name), options)
                        .await
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
            handle.spawn(async move {
                let _ = tokio::time::timeout(CLOSE_GRACE, child.wait()).await;
                child.stop();
            });
        }
    }
}

/// Waits for the agent's process to exit: how it ended, as the failure line says it. Never
/// returns when there is no process (or its status cannot be read).
async fn exit_of(child: Option<&mut Child>) -> String {
    use std::os::unix::process::ExitStatusExt;
    let Some(child) = child else {
        return std::future::pending().await;
    };
    match child.wait().await {
        Ok(status) => match (status.code(), status.signal()) {
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

/// The explanation an error response carries: mm's own `data.error`, a string `data`, else the
/// message.
fn error_text(e: &agent_client_protocol::Error) -> String {
    match &e.data {
        Some(Value::Object(d)) if d.get("error").is_some_and(Value::is_string) => d
            .get("error")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        Some(Value::String(s)) => format!("{}: {s}", e.message),
        Some(_) | None => e.message.clone(),
    }
}

fn refuse(req: &UntypedMessage, responder: Responder<Value>) {
    let _ = responder.respond_with_error(
        agent_client_protocol::Error::method_not_found().data(req.method().to_string()),
    );
}

fn update_of(n: &UntypedMessage) -> Option<&Value> {
    (n.method() == "session/update")
        .then(|| n.params().get("update"))
        .flatten()
}

/// Adds an `agent_message_chunk`'s text to the answer.
fn update_text(n: &UntypedMessage, collect: &mut Option<&mut String>) {
    let (Some(update), Some(text)) = (update_of(n), collect.as_deref_mut()) else {
        return;
    };
    if update.get("sessionUpdate").and_then(Value::as_str) == Some("agent_message_chunk")
        && let Some(t) = update.pointer("/content/text").and_then(Value::as_str)
    {
        // An agent that never stops talking must not exhaust our memory.
        if text.len() + t.len() <= MAX_ANSWER {
            text.push_str(t);
        } else if !text.ends_with(CUT) {
            text.push_str(CUT);
        }
    }
}

/// The title of a tool call the agent announced.
fn started_tool_call(n: &UntypedMessage) -> Option<String> {
    let update = update_of(n)?;
    if update.get("sessionUpdate").and_then(Value::as_str) != Some("tool_call") {
        return None;
    }
    ["title", "toolCallId"]
        .iter()
        .find_map(|k| update.get(*k).and_then(Value::as_str))
        .map(|t| t.lines().next().unwrap_or_default().to_string())
}

/// A permission request's title and options (options of unknown kinds are left out).
fn permission_of(params: &Value) -> (String, Vec<RelayedOption>) {
    let call = params.get("toolCall");
    let title = ["title", "toolCallId"]
        .iter()
        .find_map(|k| call.and_then(|c| c.get(*k)).and_then(Value::as_str))
        .unwrap_or("a tool call")
        .to_string();
    let options = params
        .get("options")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|o| {
                    Some(RelayedOption {
                        id: o.get("optionId")?.as_str()?.to_string(),
                        name: o.get("name")?.as_str()?.to_string(),
                        kind: OptionKind::from_name(o.get("kind")?.as_str()?)?,
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    (title, options)
}

/// Starts an agent, asks one question, closes it (`/ask`, `mm --ask`).
pub async fn ask_once(
    cmd: &AgentCommand,
    question: &str,
    opts: &StartOptions<'_>,
    call: &Call<'_>,
) -> Result<Answer, AgentError> {
    let mut conn = Connection::start(cmd, opts, call).await?;
    let answer = conn.ask(question, call).await;
    conn.close().await;
    answer
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use pretty_assertions::assert_eq;

    fn note(update: Value) -> UntypedMessage {
        UntypedMessage::new(
            "session/update",
            json!({"sessionId": "S", "update": update}),
        )
        .unwrap()
    }

    #[test]
    fn the_failure_lines_are_exact() {
        let cases = [
            (
                AgentError::Unknown("configured: a, b".into()),
                "no agent of that name is configured (configured: a, b)",
            ),
            (AgentError::TooDeep, "asking nests at most 2 deep"),
            (
                AgentError::NotFound("nope".into()),
                "command not found: nope",
            ),
            (
                AgentError::Exited("exit code 3".into()),
                "it exited (exit code 3)",
            ),
            (AgentError::Closed, "it closed its output"),
            (
                AgentError::ErrorResponse {
                    method: "session/prompt".into(),
                    message: "boom".into(),
                },
                "it answered session/prompt with an error: boom",
            ),
            (
                AgentError::NotJsonRpc("hello".into()),
                "it wrote a line that is not JSON-RPC: hello",
            ),
            (
                AgentError::Silent(1),
                "it sent nothing for 1 s (model.requestTimeout)",
            ),
        ];
        for (e, text) in cases {
            assert_eq!(e.line("rev"), format!("[agent rev failed: {text}]"));
        }
    }

    #[test]
    fn a_name_is_configured_or_a_command_line() {
        let mut agents = BTreeMap::new();
        agents.insert(
            "rev".to_string(),
            AgentConfig {
                command: "mm".into(),
                args: vec!["-acp".into()],
                env: BTreeMap::new(),
            },
        );
        assert_eq!(
            AgentCommand::resolve(&agents, "rev").unwrap().args,
            ["-acp"]
        );
        let line = AgentCommand::resolve(&agents, "mm -acp -c 'acp.name=x y'").unwrap();
        assert_eq!(
            (line.name.as_str(), line.program.as_str(), line.args),
            (
                "mm -acp -c 'acp.name=x y'",
                "mm",
                vec!["-acp".to_string(), "-c".into(), "acp.name=x y".into()]
            )
        );
        assert_eq!(
            AgentCommand::resolve(&agents, "  "),
            Err(AgentError::EmptyCommand)
        );
        assert_eq!(
            AgentCommand::named(&agents, "other"),
            Err(AgentError::Unknown("configured: rev".into()))
        );
        assert_eq!(
            AgentCommand::named(&BTreeMap::new(), "other"),
            Err(AgentError::Unknown("none is".into()))
        );
    }

    #[test]
    fn updates_give_the_answer_and_the_tool_calls() {
        let mut text = String::new();
        update_text(
            &note(
                json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi "}}),
            ),
            &mut Some(&mut text),
        );
        update_text(
            &note(
                json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "no"}}),
            ),
            &mut Some(&mut text),
        );
        assert_eq!(text, "hi ");
        assert_eq!(
            started_tool_call(&note(
                json!({"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "bash: ls\nmore"})
            )),
            Some("bash: ls".into())
        );
        assert_eq!(
            started_tool_call(&note(
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "c1"})
            )),
            None
        );
    }

    #[test]
    fn permission_requests_keep_their_options() {
        let (title, options) = permission_of(&json!({"sessionId": "S",
        "toolCall": {"toolCallId": "c1", "title": "bash: rm x"},
        "options": [
            {"optionId": "ok", "name": "Allow", "kind": "allow_once"},
            {"optionId": "odd", "name": "Odd", "kind": "sometimes"},
            {"optionId": "no", "name": "Reject", "kind": "reject_once"},
        ]}));
        assert_eq!(title, "bash: rm x");
        assert_eq!(
            options,
            vec![
                RelayedOption {
                    id: "ok".into(),
                    name: "Allow".into(),
                    kind: OptionKind::AllowOnce
                },
                RelayedOption {
                    id: "no".into(),
                    name: "Reject".into(),
                    kind: OptionKind::RejectOnce
                },
            ]
        );
    }

    #[test]
    fn error_answers_are_explained_by_their_data() {
        let e = agent_client_protocol::Error::internal_error().data(json!({"error": "model down"}));
        assert_eq!(error_text(&e), "model down");
        let e = agent_client_protocol::Error::method_not_found().data(json!("session/x"));
        assert_eq!(error_text(&e), "Method not found: session/x");
    }
}

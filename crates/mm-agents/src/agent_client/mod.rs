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
//! The asked agent inherits the asking session: it starts inside the session's fence (with its
//! own `sandboxWritable` folders), and before each question it is put in the session's mode by
//! `session/set_mode` with the same id (agents.md, "The asking session's fence and mode").
//!
//! Every wait is bounded: a request unanswered with no message for the silence limit
//! (`model.requestTimeout`) fails, a cancelled prompt gets [`CANCEL_GRACE`] to answer, and a
//! failed connection is never reused; dropping a [`Connection`] stops the process group.

mod connection;
mod messages;
mod transport;
mod words;

pub use connection::Connection;
pub use words::{split_command_line, split_first_word};

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::config::{AgentConfig, EntrySandbox};
use crate::process::Supervisor;
use crate::sandbox::Sandbox;
use crate::tools::CallContext;

/// The environment variable that carries the asking depth to an asked agent.
pub const DEPTH_VAR: &str = "MM_ASK_DEPTH";
/// How deep asking nests: a process at this depth cannot ask (agents.md).
pub const MAX_DEPTH: u32 = 2;
/// How long a cancelled prompt gets to answer before the agent is stopped.
pub const CANCEL_GRACE: Duration = Duration::from_secs(2);

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
    /// Our session is in read-only mode and the agent cannot be put in one: it is not asked
    /// (`ask_agent` answers the model `[ask_agent refused: read-only mode]`).
    #[error("the session is in read-only mode and it offers no read-only mode")]
    NoReadOnlyMode,
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
    /// How it meets the fence (`agents.<name>.sandbox`, `sandboxWritable`).
    pub sandbox: EntrySandbox,
}

impl AgentCommand {
    pub fn configured(name: &str, agent: &AgentConfig) -> Self {
        AgentCommand {
            name: name.to_string(),
            program: agent.command.clone(),
            args: agent.args.clone(),
            env: agent.env.clone(),
            sandbox: agent.sandbox.clone(),
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
            sandbox: EntrySandbox::default(),
        })
    }
}

/// Where and how an agent is started.
pub struct StartOptions<'a> {
    /// The asked agent's session cwd (ours).
    pub cwd: &'a Path,
    pub processes: &'a Arc<Supervisor>,
    /// The asking session's sandbox: the agent runs inside its fence for `cwd`.
    pub sandbox: &'a Sandbox,
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

/// Starts an agent, asks one question, closes it (`/ask`, `mm --ask`).
pub async fn ask_once(
    cmd: &AgentCommand,
    question: &str,
    opts: &StartOptions<'_>,
    call: &CallContext<'_>,
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
            (
                AgentError::NoReadOnlyMode,
                "the session is in read-only mode and it offers no read-only mode",
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
                sandbox: Default::default(),
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
}

//! The terminal's two doors to another agent (agents.md): `mm --ask AGENT "question"` (a script
//! asks: the answer on stdout) and `/ask AGENT question` in the interactive session (repl.rs).
//! AGENT is a configured name or a command line. Both go through `Engine::ask_agent`, which
//! starts the agent, asks once and stops it.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::Mutex;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::render::{Layout, Renderer};
use super::start::StartError;
use crate::agent_client::{AgentError, AgentStop};
use crate::engine::Engine;
use crate::event::{Event, Form, FormAnswer, Frontend, PermissionDecision, PermissionRequest};
use crate::relay::CANNOT_ASK;
use crate::sanitize::visible;

/// The question of `mm --ask AGENT`: `given` (the words after AGENT, else `-p`), else what is
/// piped on stdin (at most `cap` characters; `quiet` keeps the wait for it unsaid).
pub fn question(
    agent: &str,
    given: Option<String>,
    stdin_terminal: bool,
    cap: usize,
    quiet: bool,
) -> Result<String, StartError> {
    let question = match given {
        Some(q) => q,
        None if !stdin_terminal => {
            super::one_shot::read_stdin(cap, quiet)
                .map_err(|source| StartError::Stdin {
                    what: "cannot read the question from stdin",
                    source,
                })?
                .text
        }
        None => String::new(),
    };
    if question.trim().is_empty() {
        return Err(StartError::Refused(format!(
            "--ask {agent}: no question (mm --ask AGENT \"question\")"
        )));
    }
    Ok(question)
}

/// The name a failure line gives an agent: as the user wrote it.
pub fn shown_name(agent: &str) -> &str {
    agent.trim()
}

/// `mm --ask AGENT "question"` in `cwd`: the answer on stdout and exit 0; the failure line on
/// stderr and exit 1; cancelled 130; stopped at a limit 2 (as `mm -p`). No session: the agent is
/// put in the configuration's mode (`yolo`); `mm --ask` cannot ask, so in `ask` the agent's
/// permission requests get its own refusal.
pub async fn run_ask(
    engine: &Engine,
    cwd: &Path,
    agent: &str,
    question: &str,
    color: bool,
    cancel: &CancellationToken,
) -> i32 {
    let frontend = AskFrontend::new(color);
    let mode = engine.configured_mode();
    let outcome = engine
        .ask_agent(cwd, mode, agent, question, &frontend, cancel)
        .await;
    let mut err = std::io::stderr();
    match outcome {
        Ok(answer) => {
            // Byte for byte to a script; shown visibly on a terminal.
            let text = match std::io::stdout().is_terminal() {
                true => visible(&answer.text),
                false => std::borrow::Cow::Borrowed(answer.text.as_str()),
            };
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(text.as_bytes());
            if !answer.text.is_empty() && !answer.text.ends_with('\n') {
                let _ = out.write_all(b"\n");
            }
            let _ = out.flush();
            match answer.stop {
                AgentStop::EndTurn => 0,
                AgentStop::MaxTokens | AgentStop::MaxTurnRequests => {
                    let _ = writeln!(err, "[the agent stopped: {}]", answer.stop.name());
                    2
                }
                AgentStop::Refusal => {
                    let _ = writeln!(err, "[the agent stopped: {}]", answer.stop.name());
                    1
                }
                AgentStop::Cancelled => 130,
            }
        }
        Err(AgentError::Cancelled) => 130,
        Err(e) => {
            let _ = writeln!(err, "{}", visible(&e.line(shown_name(agent))));
            1
        }
    }
}

/// `mm --ask`'s front end: the asked agent's tool calls as dim lines on stderr; it cannot ask,
/// so permission requests get the agent's `reject_once` option and forms an error (acp.md).
struct AskFrontend {
    renderer: Mutex<Renderer>,
}

impl AskFrontend {
    fn new(color: bool) -> Self {
        AskFrontend {
            renderer: Mutex::new(Renderer::new(Layout::OneShot, color)),
        }
    }
}

#[async_trait]
impl Frontend for AskFrontend {
    fn emit(&self, event: Event) {
        // Only the asked agent's progress reaches this front end; it goes to stderr.
        if let Event::ToolCallProgress { .. } = &event {
            let pieces = self
                .renderer
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .event(&event);
            super::frontend::write_out(&pieces);
        }
    }

    async fn ask_permission(
        &self,
        _request: PermissionRequest,
        _cancel: &CancellationToken,
    ) -> PermissionDecision {
        PermissionDecision::RejectOnce
    }

    async fn ask_user(&self, _form: Form, _cancel: &CancellationToken) -> FormAnswer {
        FormAnswer::Unavailable(CANNOT_ASK.to_string())
    }
}

//! The prompt pipeline (docs/engine.md, "The prompt pipeline"): a prompt is one of the
//! engine's commands, or goes through `/skill`, `@path`, `$skill` and the `userPromptSubmit`
//! hooks into the history, then the turn loop (turn.rs), `/undo`'s records and the `turnEnd`
//! hooks; the session is saved after it.

use std::path::PathBuf;

use tokio_util::sync::CancellationToken;

use super::{Engine, EngineCommand, Recap, Session, TurnError, title_of, undo};
use crate::event::{CompactOutcome, Event, Frontend, PermissionMode};
use crate::history::Message;
use crate::hooks::{HookDecision, HookEvent, HookResult};

/// Why a turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    EndTurn,
    MaxTokens,
    MaxTurnRequests,
    Cancelled,
}

/// Which slash command a prompt was, and what it did.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// `/new`; `archived_as` is the id the previous conversation was saved under.
    New {
        forgotten: usize,
        archived_as: Option<String>,
    },
    /// `/compact` and what it did.
    Compact(CompactOutcome),
    /// `/undo` and what it put back.
    Undo(undo::Undone),
}

/// The outcome of one prompt.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptOutcome {
    /// `Err` says why the turn failed.
    pub stop: Result<StopReason, TurnError>,
    /// `Some` when the prompt was a slash command (no model call, no hook).
    pub command: Option<Command>,
    /// The engine turn's recap; `None` for a slash command.
    pub recap: Option<Recap>,
}

impl Engine {
    /// Runs a session's hooks of `event` (none of them for a tool) with `input`, and reports
    /// what they said to the front end.
    pub(crate) async fn session_hooks(
        &self,
        event: HookEvent,
        input: serde_json::Value,
        s: &Session,
        frontend: &dyn Frontend,
        cancel: &CancellationToken,
    ) -> HookResult {
        let r = self
            .hooks
            .run(event, input, None, &s.id, &s.cwd, cancel)
            .await;
        r.report(frontend);
        r
    }

    /// Runs one prompt: the text after the front end's own flattening (docs/engine.md, "The prompt
    /// pipeline", step 1). `attached` are the paths step 1 already attached (for deduplication).
    /// Slash commands, `/skill`, `@path`, `$skill` and `userPromptSubmit` hooks are handled here;
    /// the session file is rewritten afterwards when sessions are enabled.
    pub async fn prompt(
        &self,
        session: &mut Session,
        text: &str,
        attached: &[PathBuf],
        frontend: &dyn Frontend,
        cancel: &CancellationToken,
    ) -> PromptOutcome {
        let command = EngineCommand::of_prompt(text);
        // Turns are serialised process-wide; a prompt cancelled while it waits never runs.
        let _turn = tokio::select! {
            guard = self.turn_lock.lock() => guard,
            () = cancel.cancelled() => {
                // Answered like any cancelled turn (the usage, then the answer), but a slash
                // command that never ran is no engine turn: no recap for it.
                frontend.emit(Event::ContextUsage(self.context_usage(session)));
                return PromptOutcome {
                    stop: Ok(StopReason::Cancelled),
                    command: None,
                    recap: command.is_none().then(Recap::default),
                };
            }
        };
        self.await_session_hooks(session, frontend).await;
        self.take_model_choice(session);
        let outcome = match command {
            Some(command) => self.run_command(command, session, frontend, cancel).await,
            None => {
                self.prompt_locked(session, text, attached, frontend, cancel)
                    .await
            }
        };
        self.save(session, frontend);
        outcome
    }

    /// What `/skill`, `@path`, `$skill` and the `userPromptSubmit` hooks make of a prompt, or of
    /// a message sent into a running turn: its text after `/skill` (for the title) and the text
    /// the history gets; `Err` with a hook's reason when one blocked it.
    pub(crate) async fn compose(
        &self,
        s: &Session,
        text: &str,
        attached: &[PathBuf],
        frontend: &dyn Frontend,
        cancel: &CancellationToken,
    ) -> Result<(String, String), String> {
        let commands: Vec<&str> = Self::commands().iter().map(|(n, _)| *n).collect();
        let text = crate::skills::rewrite_slash(text, &s.skills, &commands)
            .unwrap_or_else(|| text.to_string());
        let mut full = text.clone();
        for (path, is_dir) in crate::prompt::at_paths(&text, &s.cwd) {
            if attached.contains(&path) {
                continue;
            }
            if let Err(refused) = self.sandbox.check_read(&path) {
                frontend.emit(Event::Notice(refused));
                continue;
            }
            full.push_str(&crate::prompt::attachment_line(&path, is_dir));
            frontend.emit(Event::Attached(path));
        }
        let mut full = crate::skills::resolve_notation(&full, &s.skills);
        if self.hooks.any(HookEvent::UserPromptSubmit, None) {
            let input = serde_json::json!({"prompt": full});
            let r = self
                .session_hooks(HookEvent::UserPromptSubmit, input, s, frontend, cancel)
                .await;
            if let HookDecision::Deny(reason) = r.decision {
                return Err(reason);
            }
            for ctx in r.context {
                full.push('\n');
                full.push_str(&ctx);
            }
        }
        Ok((text, full))
    }

    async fn prompt_locked(
        &self,
        s: &mut Session,
        text: &str,
        attached: &[PathBuf],
        frontend: &dyn Frontend,
        cancel: &CancellationToken,
    ) -> PromptOutcome {
        let (text, full) = match self.compose(s, text, attached, frontend, cancel).await {
            Ok(composed) => composed,
            Err(reason) => {
                let stop = if cancel.is_cancelled() {
                    StopReason::Cancelled
                } else {
                    frontend.emit(Event::Notice(format!(
                        "[prompt blocked by a hook: {reason}]"
                    )));
                    StopReason::EndTurn
                };
                frontend.emit(Event::ContextUsage(self.context_usage(s)));
                return PromptOutcome {
                    stop: Ok(stop),
                    command: None,
                    recap: Some(Recap::default()),
                };
            }
        };
        if s.title.is_none()
            && let Some(title) = title_of(&text)
        {
            s.title = Some(title.clone());
            frontend.emit(Event::Titled(title));
        }
        let mut message = Message::user(full);
        message.note = s.undo.take_note();
        s.history.push(message);
        let excluded: Vec<PathBuf> = s.sessions_dir.iter().cloned().collect();
        let read_only = s.controls.mode() == PermissionMode::ReadOnly;
        let before = s
            .undo
            .before_turn(&self.processes, &s.cwd, &s.id, &excluded, read_only)
            .await;
        let end = self.run_turn(s, frontend, cancel).await;
        let commands = end.recap.get(crate::event::Tally::Command);
        let read_only = s.controls.mode() == PermissionMode::ReadOnly;
        s.undo
            .after_turn(&self.processes, before, commands, read_only)
            .await;
        if self.hooks.any(HookEvent::TurnEnd, None) {
            let reason = match &end.stop {
                Ok(r) => stop_reason_name(*r),
                Err(_) => "error",
            };
            let input = serde_json::json!({"stopReason": reason});
            let never = CancellationToken::new();
            self.session_hooks(HookEvent::TurnEnd, input, s, frontend, &never)
                .await;
        }
        PromptOutcome {
            stop: end.stop,
            command: None,
            recap: Some(end.recap),
        }
    }
}

/// The `stopReason` name hooks receive.
pub fn stop_reason_name(r: StopReason) -> &'static str {
    match r {
        StopReason::EndTurn => "end_turn",
        StopReason::MaxTokens => "max_tokens",
        StopReason::MaxTurnRequests => "max_turn_requests",
        StopReason::Cancelled => "cancelled",
    }
}

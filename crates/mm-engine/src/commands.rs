//! The slash commands the engine runs itself (`/new`, `/compact`, `/undo`: [`EngineCommand`],
//! the one place their names are read) and the compression `/compact` shares with automatic
//! compression.

use std::time::Instant;

use tokio_util::sync::CancellationToken;

use super::compact::{self, CompactResult};
use super::{Command, Engine, PromptOutcome, Session, StopReason};
use crate::event::{CompactOutcome, CompactionEnd, Event, Frontend, Plan};
use crate::hooks::{HookDecision, HookEvent};

/// A slash command the engine runs itself; a prompt that is one runs no model turn and no hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineCommand {
    /// `/new`: the history forgotten (archived when sessions are on).
    New,
    /// `/compact`: the history compressed now, keeping the last turns.
    Compact,
    /// `/undo`: the files the last turn changed put back.
    Undo,
}

impl EngineCommand {
    /// Every command, in the order front ends list them.
    pub const ALL: [EngineCommand; 3] = [
        EngineCommand::New,
        EngineCommand::Compact,
        EngineCommand::Undo,
    ];

    /// Its name, without the slash.
    pub const fn name(self) -> &'static str {
        match self {
            EngineCommand::New => "new",
            EngineCommand::Compact => "compact",
            EngineCommand::Undo => "undo",
        }
    }

    /// What it does, as front ends advertise it.
    pub const fn description(self) -> &'static str {
        match self {
            EngineCommand::New => "Clear the history and start a new session",
            EngineCommand::Compact => "Compress the history now, keeping the last turns",
            EngineCommand::Undo => {
                "Restore the files the last turn changed (again: the turn before)"
            }
        }
    }

    /// The command a word names (`new`, without its slash).
    pub fn named(word: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.name() == word)
    }

    /// The command a prompt is: `/new`, `/compact` or `/undo` and nothing else (white space
    /// around it aside); anything more is a prompt for the model.
    pub fn of_prompt(text: &str) -> Option<Self> {
        text.trim().strip_prefix('/').and_then(Self::named)
    }
}

/// What triggered a compression (hooks see it as `trigger`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Trigger {
    Manual,
    Auto,
}

impl Engine {
    /// The engine's commands as `(name, description)`, in the order front ends list them.
    pub fn commands() -> &'static [(&'static str, &'static str)] {
        const fn row(c: EngineCommand) -> (&'static str, &'static str) {
            (c.name(), c.description())
        }
        const ROWS: [(&str, &str); 3] = [
            row(EngineCommand::ALL[0]),
            row(EngineCommand::ALL[1]),
            row(EngineCommand::ALL[2]),
        ];
        &ROWS
    }

    /// Runs one of the engine's commands on the session.
    pub(crate) async fn run_command(
        &self,
        command: EngineCommand,
        s: &mut Session,
        frontend: &dyn Frontend,
        cancel: &CancellationToken,
    ) -> PromptOutcome {
        match command {
            EngineCommand::New => self.command_new(s, frontend),
            EngineCommand::Compact => self.command_compact(s, frontend, cancel).await,
            EngineCommand::Undo => self.command_undo(s, frontend).await,
        }
    }

    fn command_new(&self, s: &mut Session, frontend: &dyn Frontend) -> PromptOutcome {
        let forgotten = crate::history::count_without_system(&s.history);
        let archived_as = self.archive(s, frontend);
        s.history.truncate(1);
        // Its tasks' children went to the archive with it.
        s.children.clear();
        // A new conversation gets its own title from its first prompt.
        s.title = None;
        // What the tools kept for follow-ups (asked agents' processes) goes with the history.
        s.tools.reset();
        s.last_measure = None;
        s.last_input = None;
        let had_plan = s
            .plan
            .lock()
            .map(|mut p| p.take().is_some())
            .unwrap_or(false);
        frontend.emit(Event::Notice(format!(
            "🆕 New session: {forgotten} message(s) forgotten."
        )));
        if had_plan {
            // An editor shows the last plan it was sent until told otherwise: an empty one
            // clears its plan view (the terminal draws nothing for it).
            frontend.emit(Event::Plan(Plan::default()));
        }
        frontend.emit(Event::ContextUsage(self.context_usage(s)));
        PromptOutcome {
            stop: Ok(StopReason::EndTurn),
            command: Some(Command::New {
                forgotten,
                archived_as,
            }),
            recap: None,
        }
    }

    async fn command_undo(&self, s: &mut Session, frontend: &dyn Frontend) -> PromptOutcome {
        let cwd = s.cwd.clone();
        let fence = |path: &std::path::Path| self.sandbox.check_write(&cwd, path);
        let excluded: Vec<std::path::PathBuf> = s.sessions_dir.iter().cloned().collect();
        let at = (s.cwd.as_path(), s.id.as_str(), excluded.as_slice());
        let done = s.undo.undo(&self.processes, at, &fence).await;
        frontend.emit(Event::Notice(done.lines().join("\n")));
        frontend.emit(Event::ContextUsage(self.context_usage(s)));
        PromptOutcome {
            stop: Ok(StopReason::EndTurn),
            command: Some(Command::Undo(done)),
            recap: None,
        }
    }

    async fn command_compact(
        &self,
        s: &mut Session,
        frontend: &dyn Frontend,
        cancel: &CancellationToken,
    ) -> PromptOutcome {
        let keep = self.config.context.keep_last_turns;
        let done = self
            .compress(s, keep, Trigger::Manual, frontend, cancel)
            .await;
        frontend.emit(Event::Notice(done.line()));
        frontend.emit(Event::ContextUsage(self.context_usage(s)));
        let stop = if cancel.is_cancelled() {
            StopReason::Cancelled
        } else {
            StopReason::EndTurn
        };
        PromptOutcome {
            stop: Ok(stop),
            command: Some(Command::Compact(done)),
            recap: None,
        }
    }

    /// Compresses the history keeping the last `keep` turns: `preCompact` hooks, one summary
    /// call, the outcome line. The history changes only on success.
    pub(crate) async fn compress(
        &self,
        s: &mut Session,
        keep: usize,
        trigger: Trigger,
        frontend: &dyn Frontend,
        cancel: &CancellationToken,
    ) -> CompactOutcome {
        if compact::plan_compaction(&s.history, keep).is_none() {
            let messages = crate::history::count_without_system(&s.history);
            return CompactOutcome::Nothing { messages, keep };
        }
        if self.hooks.any(HookEvent::PreCompact, None) {
            let name = match trigger {
                Trigger::Manual => "manual",
                Trigger::Auto => "auto",
            };
            let input = serde_json::json!({"trigger": name});
            let r = self
                .session_hooks(HookEvent::PreCompact, input, s, frontend, cancel)
                .await;
            if let HookDecision::Deny(reason) = r.decision {
                return CompactOutcome::Skipped(reason);
            }
        }
        let started = Instant::now();
        let before = self.estimate(s);
        let budget = self.transcript_budget(s);
        let id = self.next_compaction_id();
        frontend.emit(Event::CompactionStarted { id: id.clone() });
        let result = compact::compact(
            self.model.as_ref(),
            s.model.as_deref(),
            &s.history,
            keep,
            budget,
            &|w| frontend.emit(Event::Waiting(w)),
            cancel,
        )
        .await;
        let end = match &result {
            CompactResult::Compressed { history, .. } => CompactionEnd::Completed(
                history
                    .iter()
                    .find(|m| m.compact)
                    .map(|m| m.content.clone())
                    .unwrap_or_default(),
            ),
            CompactResult::Failed(_) if cancel.is_cancelled() => CompactionEnd::Cancelled,
            CompactResult::Failed(e) => CompactionEnd::Failed(e.clone()),
            // Planned above, so not reached; said as it is all the same.
            CompactResult::Nothing { .. } => CompactionEnd::Failed("nothing to compact".into()),
        };
        frontend.emit(Event::CompactionEnded { id, end });
        // Like any model call that reported its usage: the editor's meter hears of it.
        if let CompactResult::Compressed { usage: Some(u), .. } = &result {
            let size = self.session_window(s, cancel).await;
            frontend.emit(Event::ContextUsage(crate::event::ContextUsage {
                used: u.total(),
                size,
            }));
        }
        match result {
            CompactResult::Compressed {
                history,
                replaced,
                kept,
                usage,
            } => {
                s.history = history;
                if let Some(u) = usage {
                    s.usage.add(&u);
                }
                s.last_measure = None;
                s.last_input = None;
                CompactOutcome::Compressed {
                    replaced,
                    kept,
                    before,
                    after: self.estimate(s),
                    secs: started.elapsed().as_secs_f64(),
                }
            }
            CompactResult::Nothing { messages, keep } => CompactOutcome::Nothing { messages, keep },
            CompactResult::Failed(e) => CompactOutcome::Failed(e),
        }
    }

    /// Characters of transcript the summary call may send: what fits the window after the
    /// instruction and the answer's reserve.
    fn transcript_budget(&self, s: &Session) -> usize {
        let window = self.window_known(s);
        if window == 0 {
            return 200_000;
        }
        let reserve = self.answer_reserve();
        let room = window.saturating_sub(reserve + 512);
        ((room as f64) * s.chars_per_token * 0.9) as usize
    }

    /// Tokens kept free for the answer in every "does it fit" test: the cap sent with each
    /// request (`ModelConfig::answer_cap`), else 1 024.
    pub(crate) fn answer_reserve(&self) -> u64 {
        let window = self.known.window.load(std::sync::atomic::Ordering::Relaxed);
        self.config.model.answer_cap(window).unwrap_or(1024)
    }
}

//! One turn: the model is called, its tool calls dispatched, until it answers without a call,
//! the step limit is reached, it fails, or the turn is cancelled.

use std::sync::Mutex;

use tokio_util::sync::CancellationToken;

use super::commands::Trigger;
use super::task::Children;
use super::{Engine, Recap, Session, StopReason, TurnError};
use crate::event::{CompactOutcome, ContextUsage, Event, Frontend, ToolStatus};
use crate::history::{self, Message, Role, ToolCall};
use crate::model::{
    ChatRequest, Conversation, ModelError, ModelResponse, RawToolCall, StreamEvent,
};
use crate::tools::dispatch::{self, Gates, TurnEnv};
use crate::tools::repeat::RepeatDetector;
use crate::tools::task::Subagents;

/// The line that ends a turn whose answer was stopped because the model repeated itself.
pub const REPEATED_LINE: &str = "[stopped: the model repeated itself]";

/// The outcome of the turn loop.
pub(crate) struct TurnEnd {
    pub stop: Result<StopReason, TurnError>,
    pub recap: Recap,
}

impl Engine {
    /// Runs the turn loop on a session whose last message is the user's.
    pub(crate) async fn run_turn(
        &self,
        s: &mut Session,
        frontend: &dyn Frontend,
        cancel: &CancellationToken,
    ) -> TurnEnd {
        let turn_start = s.history.len().saturating_sub(1);
        let mut recap = Recap::default();
        // The refusals of the session's share of the fence's network, recorded while the turn
        // ran (its `task` children's included: they share it).
        let refusals = s.network.refusals().clone();
        let refused_from = refusals.count();
        s.controls.open_turn();
        let stop = self.turn_loop(s, frontend, cancel, &mut recap).await;
        recap.set_refused(u32::try_from(refusals.since(refused_from).len()).unwrap_or(u32::MAX));
        // A message sent as the turn failed or was cancelled is not kept.
        let late = s.controls.close_turn();
        if !late.is_empty() {
            tracing::debug!(
                messages = late.len(),
                "messages sent to a turn that ended first"
            );
        }
        // A question that got no answer at all is removed.
        let unanswered = s.history.len() == turn_start + 1;
        if unanswered && (stop.is_err() || stop == Ok(StopReason::Cancelled)) {
            s.history.pop();
        }
        if let Err(e) = &stop {
            frontend.emit(Event::Notice(format!("[error: {e}]")));
        }
        frontend.emit(Event::ContextUsage(self.context_usage(s)));
        TurnEnd { stop, recap }
    }

    pub(crate) async fn turn_loop(
        &self,
        s: &mut Session,
        frontend: &dyn Frontend,
        cancel: &CancellationToken,
        recap: &mut Recap,
    ) -> Result<StopReason, TurnError> {
        let cfg = &self.config;
        let mut repeat = RepeatDetector::new(cfg.loop_.max_repeats);
        // MCP tools join between turns (the lists that came, within a bounded wait); then the
        // tool set is frozen for the length of the turn.
        self.join_mcp_tools(s, frontend, cancel).await;
        let tools = s.tools.clone();
        let tool_defs: Vec<serde_json::Value> = tools.definitions();
        let text_tool_names: Vec<String> = if cfg.model.text_tool_calls {
            tools.names()
        } else {
            Vec::new()
        };
        // Detection may still wait for a server loading its model: said, not a silent wait.
        self.model
            .await_detection(
                &|ev| {
                    if let StreamEvent::Waiting(w) = ev {
                        frontend.emit(Event::Waiting(w));
                    }
                },
                cancel,
            )
            .await;
        self.announce_model(frontend, cancel).await;
        let mut retried_overflow = false;
        let (max_steps, key) = match s.parent {
            None => (cfg.max_steps, "maxSteps"),
            Some(_) => (cfg.tools.task_max_steps, "tools.task.maxSteps"),
        };
        for _step in 0..max_steps {
            if cancel.is_cancelled() {
                return Ok(StopReason::Cancelled);
            }
            self.join_steered(s, frontend, cancel).await;
            self.make_room(s, frontend, cancel).await?;
            let request = ChatRequest {
                messages: history::to_wire(&s.history),
                tools: tool_defs.clone(),
                text_tool_names: text_tool_names.clone(),
                model: s.model.clone(),
                repetition: cfg.loop_.repetition(),
                conversation: Some(Conversation {
                    id: s.id.clone(),
                    parent: s.parent.clone(),
                }),
            };
            let request_chars = request_chars(&request);
            let streamed = Mutex::new(String::new());
            let on_event = |ev: StreamEvent| match ev {
                StreamEvent::Text(t) => {
                    if let Ok(mut acc) = streamed.lock() {
                        acc.push_str(&t);
                    }
                    frontend.emit(Event::Text(t));
                }
                StreamEvent::Thought(t) => frontend.emit(Event::Thought(t)),
                StreamEvent::Waiting(w) => frontend.emit(Event::Waiting(w)),
            };
            let response = self.model.chat(&request, &on_event, cancel).await;
            let partial = streamed.lock().map(|s| s.clone()).unwrap_or_default();
            let response = match response {
                Ok(r) => r,
                Err(ModelError::Cancelled) => {
                    keep_partial(s, partial);
                    return Ok(StopReason::Cancelled);
                }
                Err(e @ ModelError::ContextExceeded { .. })
                    if !retried_overflow && partial.is_empty() =>
                {
                    // The server knows its window better than we do: compress once and retry.
                    retried_overflow = true;
                    if self.compress_hard(s, frontend, cancel).await {
                        continue;
                    }
                    // Nothing could be compressed: the turn fails with the server's line.
                    return Err(e.into());
                }
                Err(e) => {
                    keep_partial(s, partial);
                    return Err(e.into());
                }
            };
            self.note_model_name(cancel).await;
            self.record_usage(s, &response, request_chars, frontend, cancel)
                .await;
            let ModelResponse {
                text,
                tool_calls,
                finish_reason,
                repeated,
                ..
            } = response;
            if let Some(r) = repeated {
                // The stream was dropped; what is stored is the answer cut after the first
                // occurrence, so the next request does not feed the loop back to the model.
                tracing::debug!(?r, "the model repeated itself: answer stopped");
                if !text.is_empty() {
                    s.history.push(Message::assistant(text, Vec::new()));
                } else if s.history.last().is_some_and(|m| m.role == Role::User) {
                    // No answer at all (the loop was in the reasoning or a call's arguments):
                    // the question goes too, as after a failure, so the next prompt does not
                    // follow it as a second user message in a row.
                    s.history.pop();
                }
                frontend.emit(Event::Notice(REPEATED_LINE.to_string()));
                return Ok(StopReason::EndTurn);
            }
            let cut = finish_reason.as_deref() == Some("length");
            let calls = self.assign_refs(s, tool_calls, cut);
            if text.is_empty() && calls.is_empty() {
                if cut {
                    return Ok(StopReason::MaxTokens);
                }
                // Nothing to show and nothing to store: a failure, so that the user hears of
                // it and a question left without any answer is removed (two user messages in a
                // row are refused by strict chat templates).
                return Err(TurnError::EmptyAnswer);
            }
            s.history.push(Message::assistant(text, calls.clone()));
            if cut {
                return Ok(StopReason::MaxTokens);
            }
            if calls.is_empty() {
                // A message sent into the turn meanwhile gets one more step, not lost.
                if s.controls.end_unless_steered() {
                    return Ok(StopReason::EndTurn);
                }
                continue;
            }
            for call in &calls {
                if cancel.is_cancelled() {
                    return Ok(StopReason::Cancelled);
                }
                // A `task` call's child; a child starts none.
                let children = s
                    .parent
                    .is_none()
                    .then(|| Children::of(self, s, &tools, frontend));
                let env = TurnEnv {
                    tools: &tools,
                    cwd: &s.cwd,
                    session_id: &s.id,
                    // Read at each call: a switch during the turn applies from the next call.
                    mode: s.controls.mode(),
                    max_output: self.max_output(s),
                    frontend,
                    hooks: &self.hooks,
                    journal: Some(&s.undo.journal),
                    subagents: children.as_ref().map(|c| c as &dyn Subagents),
                };
                let gates = Gates {
                    repeat: &mut repeat,
                    rules: &mut s.rules,
                };
                let d = dispatch::dispatch(&env, gates, call, cancel).await;
                if let Some(children) = children {
                    children.fold(s, recap);
                }
                if let Some(t) = d.tally {
                    recap.add(t);
                }
                s.history.push(Message::tool(
                    &call.id,
                    d.output,
                    d.status == ToolStatus::Failed,
                ));
                if let Some(line) = d.end_turn {
                    frontend.emit(Event::Notice(line));
                    return Ok(StopReason::EndTurn);
                }
                if cancel.is_cancelled() {
                    return Ok(StopReason::Cancelled);
                }
            }
        }
        frontend.emit(Event::Notice(format!(
            "[stopped: {max_steps} model calls in this turn, the {key} limit]"
        )));
        Ok(StopReason::MaxTurnRequests)
    }

    /// Joins the messages the user sent into the turn since its last model call, each through
    /// the prompt pipeline (`@path`, `$skill`, `userPromptSubmit` hooks) as the user's.
    async fn join_steered(
        &self,
        s: &mut Session,
        frontend: &dyn Frontend,
        cancel: &CancellationToken,
    ) {
        for m in s.controls.take_steered() {
            match self
                .compose(s, &m.text, &m.attached, frontend, cancel)
                .await
            {
                Ok((_, full)) => push_user(&mut s.history, full),
                Err(_) if cancel.is_cancelled() => {}
                Err(reason) => frontend.emit(Event::Notice(format!(
                    "[message blocked by a hook: {reason}]"
                ))),
            }
        }
    }

    /// Gives each call its `call_N` ref and the id its `tool` message answers (the ref when the
    /// model gave none, an empty one, or one already used). With `cut`, a call whose arguments
    /// are not complete JSON is dropped.
    fn assign_refs(&self, s: &Session, calls: Vec<RawToolCall>, cut: bool) -> Vec<ToolCall> {
        let mut out: Vec<ToolCall> = Vec::with_capacity(calls.len());
        for c in calls {
            if cut && serde_json::from_str::<serde_json::Value>(&c.arguments).is_err() {
                continue;
            }
            let ref_ = self.next_ref();
            let used = c.id.is_empty()
                || out.iter().any(|o| o.id == c.id)
                || s.history
                    .iter()
                    .any(|m| m.tool_calls.iter().any(|t| t.id == c.id));
            let id = if used { ref_.clone() } else { c.id };
            out.push(ToolCall {
                id,
                ref_,
                name: c.name,
                arguments: c.arguments,
            });
        }
        out
    }

    /// After a call that succeeded the server is known: its model's name goes in session files.
    async fn note_model_name(&self, cancel: &CancellationToken) {
        let Ok(info) = self.model.info(cancel).await else {
            return;
        };
        if info.name.is_empty() {
            return;
        }
        if let Ok(mut name) = self.known.model.lock()
            && *name != info.name
        {
            *name = info.name;
        }
    }

    async fn record_usage(
        &self,
        s: &mut Session,
        r: &ModelResponse,
        request_chars: usize,
        frontend: &dyn Frontend,
        cancel: &CancellationToken,
    ) {
        let Some(u) = r.usage else { return };
        s.usage.add(&u);
        s.last_measure = Some(u.total());
        s.last_input = Some(u.input_tokens);
        if u.input_tokens > 0 && request_chars > 0 {
            s.chars_per_token = request_chars as f64 / u.input_tokens as f64;
        }
        let size = self.session_window(s, cancel).await;
        frontend.emit(Event::ContextUsage(ContextUsage {
            used: u.total(),
            size,
        }));
    }
}

impl Engine {
    /// Reports the model server once per process, when detection has completed.
    async fn announce_model(&self, frontend: &dyn Frontend, cancel: &CancellationToken) {
        if self
            .known
            .announced
            .swap(true, std::sync::atomic::Ordering::Relaxed)
        {
            return;
        }
        match self.model.info(cancel).await {
            Ok(info) => {
                let window = self.context_window(cancel).await;
                frontend.emit(Event::ModelDetected {
                    name: info.name,
                    url: info.url,
                    context_window: (window > 0).then_some(window),
                });
            }
            // The turn's model call reports the failure; try again next turn.
            Err(_) => self
                .known
                .announced
                .store(false, std::sync::atomic::Ordering::Relaxed),
        }
    }

    /// Before a model call: compresses when the history (or the last input count) plus the
    /// answer's reserve reaches `context.threshold` of a known window, keeping fewer turns if
    /// needed; a turn that alone exceeds the window fails instead of sending a request the
    /// server would reject.
    async fn make_room(
        &self,
        s: &mut Session,
        frontend: &dyn Frontend,
        cancel: &CancellationToken,
    ) -> Result<(), TurnError> {
        let window = self.session_window(s, cancel).await;
        if window == 0 {
            return Ok(());
        }
        let reserve = self.answer_reserve();
        let limit = (self.config.context.threshold * window as f64) as u64;
        let used = |e: &Engine, s: &Session| e.estimate(s).max(s.last_input.unwrap_or(0)) + reserve;
        if used(self, s) < limit {
            return Ok(());
        }
        let mut keep = self.config.context.keep_last_turns.max(1);
        loop {
            let done = self
                .compress(s, keep, Trigger::Auto, frontend, cancel)
                .await;
            // Nothing to compact at this depth is not worth a line; a failure or a hook's
            // refusal is, and ends the attempt.
            let stop_trying = match &done {
                CompactOutcome::Compressed { .. } => false,
                CompactOutcome::Nothing { .. } => false,
                CompactOutcome::Skipped(_) | CompactOutcome::Failed(_) => true,
            };
            if !matches!(done, CompactOutcome::Nothing { .. }) {
                frontend.emit(Event::AutoCompacted(done));
            }
            if cancel.is_cancelled() || used(self, s) < limit || keep <= 1 || stop_trying {
                break;
            }
            keep -= 1;
        }
        let need = self.estimate(s) + reserve;
        if need > window {
            return Err(TurnError::TooLarge { need, window });
        }
        Ok(())
    }

    /// After the server said the context is exceeded: compress, keeping fewer turns until
    /// something changes. Returns whether the history changed.
    async fn compress_hard(
        &self,
        s: &mut Session,
        frontend: &dyn Frontend,
        cancel: &CancellationToken,
    ) -> bool {
        let mut keep = self.config.context.keep_last_turns.max(1);
        loop {
            let done = self
                .compress(s, keep, Trigger::Auto, frontend, cancel)
                .await;
            let nothing = matches!(done, CompactOutcome::Nothing { .. });
            let changed = done.changed();
            if !nothing {
                // A failed or skipped compression is reported too, and not tried again.
                frontend.emit(Event::AutoCompacted(done));
            }
            if changed {
                return true;
            }
            if !nothing || keep <= 1 || cancel.is_cancelled() {
                return false;
            }
            keep -= 1;
        }
    }
}

/// A user message joins the history: merged into the last one when the history ends with the
/// user's (strict chat templates refuse two user messages in a row).
fn push_user(history: &mut Vec<Message>, text: String) {
    match history.last_mut() {
        Some(last) if last.role == Role::User && !last.compact => {
            last.content.push_str("\n\n");
            last.content.push_str(&text);
        }
        _ => history.push(Message::user(text)),
    }
}

/// Text streamed before a failure or a cancel is kept as the model's answer.
fn keep_partial(s: &mut Session, partial: String) {
    if !partial.is_empty() {
        s.history.push(Message::assistant(partial, Vec::new()));
    }
}

/// The character count of a request (messages and tool schemas), for the estimate.
pub(crate) fn request_chars(r: &ChatRequest) -> usize {
    let m: usize = r.messages.iter().map(|v| v.to_string().len()).sum();
    let t: usize = r.tools.iter().map(|v| v.to_string().len()).sum();
    m + t
}

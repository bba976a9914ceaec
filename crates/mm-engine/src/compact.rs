//! Compression of a history (docs/sessions.md, "Compression"): everything between the system prompt
//! and the last K turns is replaced by one summary the model writes.
//!
//! Pure logic plus one non-streamed model call; the engine decides when to compress, fires the
//! `preCompact` hook, saves the file and reports the line.

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::event::{Usage, Waiting};
use crate::history::{Message, Role, count_without_system};
use crate::model::{ModelClient, StreamEvent};

/// Characters of one tool result kept in the summary's transcript.
const TOOL_RESULT_CHARS: usize = 300;

/// The instruction of the summary call.
const SUMMARY_INSTRUCTION: &str = "You summarise the earlier part of a conversation between a user and a coding agent, so that \
the agent can go on with the work without it. Write a concise summary under these headings: \
the user's goals; decisions made; files touched and their state; commands that worked; open \
problems; next steps. Keep exact file paths, names, commands and error messages; leave out \
what no longer matters. Answer with the summary only.";

/// The outcome of a compression.
#[derive(Debug, Clone, PartialEq)]
pub enum CompactResult {
    /// The new history: the system prompt, one summary (`compact: true`), the kept messages.
    Compressed {
        history: Vec<Message>,
        /// Messages replaced (a previous summary included).
        replaced: usize,
        /// Messages kept after the summary.
        kept: usize,
        /// What the summary call reported (it adds to the session's totals).
        usage: Option<Usage>,
    },
    /// No turn older than the last `keep`: the history is unchanged.
    Nothing {
        /// Messages without the system prompt.
        messages: usize,
        keep: usize,
    },
    /// The model call failed or wrote nothing: the explanation; the history is unchanged.
    Failed(String),
}

/// The range of `history` that compression replaces: everything after the system prompt and
/// before the last `keep_last_turns` turns (earlier turns and any earlier summary). `None` when
/// nothing but summaries is older than those turns.
///
/// A turn starts at a user message that is not a summary, so the end of the range is always
/// such a message (or the end of the history): a tool call and its result are never separated.
pub fn plan_compaction(history: &[Message], keep_last_turns: usize) -> Option<(usize, usize)> {
    let start = usize::from(history.first().is_some_and(|m| m.role == Role::System));
    let turn_starts: Vec<usize> = (start..history.len())
        .filter(|&i| history[i].starts_turn())
        .collect();
    let end = if keep_last_turns == 0 {
        history.len()
    } else if turn_starts.len() >= keep_last_turns {
        turn_starts[turn_starts.len() - keep_last_turns]
    } else {
        // Fewer turns than kept: only what precedes the first turn could go.
        turn_starts.first().copied().unwrap_or(history.len())
    };
    // Replacing a summary by a summary of itself gains nothing.
    if history[start..end].iter().all(|m| m.compact) {
        return None;
    }
    Some((start, end))
}

/// The messages as a plain transcript for the summary call, trimmed from the start to at most
/// `budget_chars` characters (the summary call must fit the window too).
pub fn transcript(messages: &[Message], budget_chars: usize) -> String {
    let entries: Vec<String> = messages
        .iter()
        .enumerate()
        .filter_map(|(i, m)| render(messages, i, m))
        .collect();

    let sep = 2; // "\n\n" between entries
    let lens: Vec<usize> = entries.iter().map(|e| e.chars().count()).collect();
    // suffix[i]: the characters of entries[i..] joined.
    let mut suffix = vec![0; entries.len() + 1];
    for i in (0..entries.len()).rev() {
        suffix[i] = lens[i] + suffix[i + 1] + if i + 1 < entries.len() { sep } else { 0 };
    }
    if suffix[0] <= budget_chars {
        return entries.join("\n\n");
    }
    for first_kept in 1..entries.len() {
        let note = format!("[{first_kept} earlier message(s) omitted]");
        if note.chars().count() + sep + suffix[first_kept] <= budget_chars {
            return format!("{note}\n\n{}", entries[first_kept..].join("\n\n"));
        }
    }
    // Not even the last message with the note: the last message, or its end.
    let Some(last) = entries.last() else {
        return String::new();
    };
    let skip = last.chars().count().saturating_sub(budget_chars);
    last.chars().skip(skip).collect()
}

fn render(messages: &[Message], index: usize, m: &Message) -> Option<String> {
    match m.role {
        Role::System => None,
        Role::User if m.compact => Some(format!(
            "Summary of earlier conversation: {}",
            m.content.trim()
        )),
        Role::User => Some(match &m.note {
            Some(note) => format!("mm: {}\nUser: {}", note.trim(), m.content.trim()),
            None => format!("User: {}", m.content.trim()),
        }),
        Role::Assistant => {
            let mut lines = Vec::new();
            if !m.content.trim().is_empty() {
                lines.push(format!("Assistant: {}", m.content.trim()));
            }
            for c in &m.tool_calls {
                lines.push(format!("Assistant called {}: {}", c.name, c.arguments));
            }
            (!lines.is_empty()).then(|| lines.join("\n"))
        }
        Role::Tool => {
            let id = m.tool_call_id.as_deref().unwrap_or("");
            let name = messages[..index]
                .iter()
                .rev()
                .flat_map(|p| p.tool_calls.iter())
                .find(|c| c.id == id)
                .map_or("tool", |c| c.name.as_str());
            let status = if m.failed { ", failed" } else { "" };
            Some(format!(
                "Result of {name}{status}: {}",
                cut(m.content.trim(), TOOL_RESULT_CHARS)
            ))
        }
    }
}

fn cut(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max {
        return s.to_string();
    }
    let head: String = s.chars().take(max).collect();
    format!("{head}… [{} more characters]", n - max)
}

/// The wire messages of the summary call: the instruction, then the transcript.
pub fn summary_request(transcript: &str) -> Vec<Value> {
    vec![
        json!({"role": "system", "content": SUMMARY_INSTRUCTION}),
        json!({"role": "user", "content": format!("The conversation to summarise:\n\n{transcript}")}),
    ]
}

/// Compresses `history` keeping its last `keep_last_turns` turns, the summary written by
/// `model_name` (`None`: the configured or detected model); `on_wait` hears of the summary
/// call's waits (a server retried). The history is never modified: the caller replaces it with
/// the one returned.
pub async fn compact(
    model: &dyn ModelClient,
    model_name: Option<&str>,
    history: &[Message],
    keep_last_turns: usize,
    transcript_budget_chars: usize,
    on_wait: &(dyn Fn(Waiting) + Send + Sync),
    cancel: &CancellationToken,
) -> CompactResult {
    let Some((start, end)) = plan_compaction(history, keep_last_turns) else {
        return CompactResult::Nothing {
            messages: count_without_system(history),
            keep: keep_last_turns,
        };
    };
    let text = transcript(&history[start..end], transcript_budget_chars);
    let on_event = |ev: StreamEvent| {
        if let StreamEvent::Waiting(w) = ev {
            on_wait(w);
        }
    };
    let response = match model
        .complete(summary_request(&text), model_name, &on_event, cancel)
        .await
    {
        Ok(r) => r,
        Err(e) => return CompactResult::Failed(e.to_string()),
    };
    let summary = response.text.trim();
    if summary.is_empty() {
        return CompactResult::Failed("the summary was empty".into());
    }
    let mut new_history = Vec::with_capacity(start + 1 + history.len() - end);
    new_history.extend_from_slice(&history[..start]);
    new_history.push(Message::summary(summary));
    new_history.extend_from_slice(&history[end..]);
    CompactResult::Compressed {
        history: new_history,
        replaced: end - start,
        kept: history.len() - end,
        usage: response.usage,
    }
}

/// The estimate of a request's size in tokens: the characters of its serialised messages and
/// tool schemas divided by the chars-per-token ratio (4 when the ratio is not usable).
pub fn estimate_tokens(wire_messages: &[Value], tools: &[Value], chars_per_token: f64) -> u64 {
    let ratio = if chars_per_token.is_finite() && chars_per_token > 0.0 {
        chars_per_token
    } else {
        4.0
    };
    let chars: usize = wire_messages
        .iter()
        .chain(tools)
        .map(|v| v.to_string().chars().count())
        .sum();
    (chars as f64 / ratio).ceil() as u64
}

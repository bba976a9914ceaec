//! Saved sessions on the terminal: `/sessions`, `/load ID`, what a reopened session shows
//! (`--continue`, `--resume ID`, `/load ID`), where `/new` kept the previous conversation, and
//! the ids Tab completes after `/load `.

use std::path::Path;
use std::time::SystemTime;

use super::style;
use crate::engine::{Engine, LoadError, Session};
use crate::sanitize::visible;
use crate::session::SessionSummary;
use mm_core::history::{Message, Role};

/// Lines of the last prompt and of the last answer shown when a session is reopened.
const EXCHANGE_LINES: usize = 3;
/// Characters of one of those lines.
const EXCHANGE_CHARS: usize = 100;

const SESSIONS_OFF: &str = "sessions are off: set sessions.enabled = true to keep and resume them";

/// `/sessions`: the saved sessions of this folder, oldest first.
pub fn sessions_lines(engine: &Engine, session: &Session, color: bool) -> Vec<String> {
    if !engine.config.sessions.enabled {
        return vec![style::yellow(color, SESSIONS_OFF)];
    }
    let dir = match &session.view().sessions_dir() {
        Ok(dir) => dir,
        Err(outside) => return vec![style::yellow(color, &outside.to_string())],
    };
    let list = crate::session::list(dir);
    if list.is_empty() {
        return vec![style::dim(
            color,
            &visible(&format!("no saved session in {}", dir.display())),
        )];
    }
    let mut lines: Vec<String> = list
        .iter()
        .map(|s| {
            let mark = if s.id == session.view().id() {
                "* "
            } else {
                "  "
            };
            format!("{mark}{}", row(s))
        })
        .collect();
    lines.push(style::dim(color, "resume one with /load ID"));
    lines
}

/// One saved session as `/sessions` lists it, after its mark: id, age, messages, size, first
/// prompt.
fn row(s: &SessionSummary) -> String {
    let age = chrono::DateTime::parse_from_rfc3339(&s.updated_at)
        .map(|t| age(chrono::Local::now().signed_duration_since(t)))
        .unwrap_or_else(|_| "?".into());
    let size = if s.size >= 1024 {
        format!("{} kB", s.size / 1024)
    } else {
        format!("{} B", s.size)
    };
    let prompt = super::render::clean(s.first_prompt.as_deref().unwrap_or("(no prompt)"));
    format!(
        "{}  {age:>8}  {:>4} msg  {size:>7}  {prompt}",
        visible(&s.id),
        s.messages
    )
}

/// How many saved sessions a wrong id is answered with.
const RECENT: usize = 5;

/// What an id that names no saved session of `dir` is answered with (`mm --resume ID`, `/load
/// ID`): no path, the sessions saved last to pick from, newest first, and how to reopen one
/// (`how`: `mm --resume ID` or `/load ID`).
pub fn unknown_id(dir: &Path, id: &str, how: &str) -> Vec<String> {
    let mut list = crate::session::list(dir);
    list.sort_by(|a, b| {
        let at = |s: &SessionSummary| chrono::DateTime::parse_from_rfc3339(&s.updated_at).ok();
        at(b).cmp(&at(a)).then_with(|| b.id.cmp(&a.id))
    });
    let head = format!("no saved session {} in this folder", visible(id));
    if list.is_empty() {
        return vec![format!("{head}, and none is saved here yet")];
    }
    let mut lines = vec![format!("{head}; the ones saved last:")];
    lines.extend(list.iter().take(RECENT).map(|s| format!("  {}", row(s))));
    if list.len() > RECENT {
        lines.push(format!(
            "  … {} more (/sessions lists them)",
            list.len() - RECENT
        ));
    }
    lines.push(format!("{how} reopens one"));
    lines
}

/// How long ago, shortly: `45s ago`, `12m ago`, `3h ago`, `2d ago`.
pub fn age(d: chrono::TimeDelta) -> String {
    let s = d.num_seconds().max(0);
    match s {
        0..60 => format!("{s}s ago"),
        60..3600 => format!("{}m ago", s / 60),
        3600..86400 => format!("{}h ago", s / 3600),
        _ => format!("{}d ago", s / 86400),
    }
}

/// `/load ID`: replaces the current session by a saved one (the current one stays saved) and
/// says what it opened.
pub async fn load(
    engine: &Engine,
    session: &mut Session,
    id: &str,
    frontend: &dyn crate::event::Frontend,
    color: bool,
) -> Vec<String> {
    if !engine.config.sessions.enabled {
        return vec![style::yellow(color, SESSIONS_OFF)];
    }
    if id.is_empty() {
        return vec![style::yellow(color, "usage: /load ID (see /sessions)")];
    }
    let saved = saved_age(engine, session.view().cwd(), id);
    match engine
        .load_session(session.view().cwd().to_path_buf(), id, frontend)
        .await
    {
        Ok(loaded) => {
            *session = loaded;
            reopened_lines(&summary(session, saved), color)
        }
        Err(LoadError::File(e)) if e.is_not_found() => {
            let dir = session
                .view()
                .sessions_dir()
                .as_deref()
                .unwrap_or(Path::new(""));
            let mut lines = unknown_id(dir, id, "/load ID");
            lines[0] = style::red(color, &format!("/load: {}", lines[0]));
            lines
        }
        Err(e) => vec![style::red(color, &visible(&format!("/load: {e}")))],
    }
}

/// What a session reopened by `--continue` or `--resume` holds (before a turn rewrites its file).
pub fn reopened(engine: &Engine, session: &Session, color: bool) -> Vec<String> {
    let saved = saved_age(engine, session.view().cwd(), session.view().id());
    reopened_lines(&summary(session, saved), color)
}

/// How long ago the session file `id` of `cwd` was written.
pub fn saved_age(engine: &Engine, cwd: &Path, id: &str) -> Option<String> {
    let file = engine.sessions_dir(cwd).ok()?.join(format!("{id}.json"));
    let modified = std::fs::metadata(file).and_then(|m| m.modified()).ok()?;
    let elapsed = SystemTime::now()
        .duration_since(modified)
        .unwrap_or_default();
    chrono::TimeDelta::from_std(elapsed).ok().map(age)
}

/// What a reopened session shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reopened {
    pub id: String,
    /// `2h ago`.
    pub age: Option<String>,
    /// Messages without the system prompt.
    pub messages: usize,
    pub first_prompt: Option<String>,
    pub last_prompt: Option<String>,
    pub last_answer: Option<String>,
}

/// The summary of a session just loaded; `age`: when its file was written.
pub fn summary(session: &Session, age: Option<String>) -> Reopened {
    let messages = session.view().history();
    let prompts: Vec<&Message> = messages.iter().filter(|m| m.starts_turn()).collect();
    let last_prompt_at = messages.iter().rposition(Message::starts_turn);
    let last_answer = last_prompt_at.and_then(|at| {
        messages[at..]
            .iter()
            .rev()
            .find(|m| m.role == Role::Assistant && !m.content.trim().is_empty())
            .map(|m| m.content.clone())
    });
    Reopened {
        id: session.view().id().to_string(),
        age,
        messages: mm_core::history::count_without_system(messages),
        first_prompt: prompts
            .first()
            .map(|m| m.content.split_whitespace().collect::<Vec<_>>().join(" ")),
        last_prompt: prompts.last().map(|m| m.content.clone()),
        last_answer,
    }
}

/// `session <id> · saved 2h ago · 12 message(s) · first prompt: …`, then the last exchange,
/// dimmed: the last prompt (`> …`) and the answer to it, a few lines of each.
pub fn reopened_lines(r: &Reopened, color: bool) -> Vec<String> {
    let mut head = format!("session {}", visible(&r.id));
    if let Some(age) = &r.age {
        head.push_str(&format!(" · saved {age}"));
    }
    head.push_str(&format!(" · {} message(s)", r.messages));
    if let Some(first) = &r.first_prompt {
        let first = super::render::clean(first);
        head.push_str(&format!(" · first prompt: {}", clip(&first, 60)));
    }
    let mut lines = vec![head];
    if let Some(prompt) = &r.last_prompt {
        for (i, line) in excerpt(prompt).into_iter().enumerate() {
            let mark = if i == 0 { "> " } else { "  " };
            lines.push(style::dim(color, &format!("  {mark}{line}")));
        }
    }
    if let Some(answer) = &r.last_answer {
        for line in excerpt(answer) {
            lines.push(style::dim(color, &format!("  {line}")));
        }
    }
    lines
}

/// The first lines of a message (blank ones left out), each clipped, `…` when there is more.
fn excerpt(text: &str) -> Vec<String> {
    let all: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let mut lines: Vec<String> = all
        .iter()
        .take(EXCHANGE_LINES)
        .map(|l| clip(&super::render::clean(l.trim_end()), EXCHANGE_CHARS))
        .collect();
    if all.len() > EXCHANGE_LINES {
        lines.push("…".to_string());
    }
    lines
}

fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max - 1).collect();
    out.push('…');
    out
}

/// After `/new` with sessions on: where the previous conversation was kept.
pub fn archived_line(id: &str, color: bool) -> String {
    style::dim(color, &format!("previous conversation saved: /load {id}"))
}

/// The ids of the sessions saved in `dir` (for Tab after `/load `), sorted.
pub fn ids(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut ids: Vec<String> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_string();
            let id = name.strip_suffix(".json")?;
            crate::session::validate_id(id).ok()?;
            Some(id.to_string())
        })
        .collect();
    ids.sort();
    ids
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn a_reopened_session_shows_where_it_stopped() {
        let r = Reopened {
            id: "20260916-101530-4f2a9c1e".into(),
            age: Some("2h ago".into()),
            messages: 6,
            first_prompt: Some("fix the build".into()),
            last_prompt: Some("and the tests?\n[attached file: /p/t.rs]".into()),
            last_answer: Some("They pass.\n\nAll 42.\nline 3\nline 4".into()),
        };
        assert_eq!(
            reopened_lines(&r, false),
            vec![
                "session 20260916-101530-4f2a9c1e · saved 2h ago · 6 message(s) · first prompt: fix the build",
                "  > and the tests?",
                "    [attached file: /p/t.rs]",
                "  They pass.",
                "  All 42.",
                "  line 3",
                "  …",
            ]
        );
    }

    #[test]
    fn ages() {
        assert_eq!(age(chrono::TimeDelta::seconds(45)), "45s ago");
        assert_eq!(age(chrono::TimeDelta::seconds(7300)), "2h ago");
    }
}

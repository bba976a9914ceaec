//! What the user typed: local slash commands, prompts for the engine, completion candidates.
//! Pure, unit-tested.

use std::path::{Path, PathBuf};

use crate::engine::EngineCommand;

/// The terminal's own commands, with their descriptions (also what shadows a skill's command).
pub const LOCAL_COMMANDS: &[(&str, &str)] = &[
    ("help", "Show the commands and keys"),
    (
        "model",
        "Show the model and the server's others; /model NAME switches",
    ),
    ("mode", "Show the mode; /mode ask|yolo|read-only switches"),
    ("skills", "List the skills and their folders"),
    (
        "permissions",
        "List the answers remembered this session (/new keeps them); /permissions remove N|clear",
    ),
    ("mcp", "List the MCP servers, their state and their tools"),
    ("sessions", "List the saved sessions of this folder"),
    ("load", "Resume a saved session: /load ID"),
    ("ask", "Ask another agent: /ask AGENT question"),
    ("quit", "Leave mm (also Ctrl-D)"),
];

/// A command handled by the terminal itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Local {
    Help,
    Quit,
    /// `/model` (empty) or `/model NAME`.
    Model(String),
    /// `/mode` (empty) or `/mode NAME`.
    Mode(String),
    Skills,
    /// `/permissions` (empty), `/permissions remove N` or `/permissions clear`: the session's
    /// remembered answers.
    Permissions(String),
    Mcp,
    Sessions,
    Load(String),
    Ask(String),
}

/// What a submitted line is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    Empty,
    Local(Local),
    /// A prompt, one of the engine's commands (`/new`, `/compact`, `/undo`) or `/skill …`: the
    /// engine handles it.
    Engine(String),
    /// `/word` that names no command and no skill.
    Unknown(String),
}

/// Removes the trailing `\` of continued lines (the newline stays).
pub fn join_continuations(text: &str) -> String {
    text.replace("\\\n", "\n")
}

/// Whether the line goes on below (it ends with `\`).
pub fn continues(text: &str) -> bool {
    text.ends_with('\\') && !text.ends_with("\\\\")
}

/// Classifies a submitted line; `skills` are the catalogue's names.
pub fn classify(text: &str, skills: &[String]) -> Input {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Input::Empty;
    }
    let Some(command) = trimmed.strip_prefix('/') else {
        return Input::Engine(text.to_string());
    };
    let (word, rest) = match command.split_once(char::is_whitespace) {
        Some((w, r)) => (w, r.trim().to_string()),
        None => (command, String::new()),
    };
    match word {
        "help" => Input::Local(Local::Help),
        "quit" | "exit" => Input::Local(Local::Quit),
        "model" => Input::Local(Local::Model(rest)),
        "mode" => Input::Local(Local::Mode(rest)),
        "skills" => Input::Local(Local::Skills),
        "permissions" => Input::Local(Local::Permissions(rest)),
        "mcp" => Input::Local(Local::Mcp),
        "sessions" => Input::Local(Local::Sessions),
        "load" => Input::Local(Local::Load(rest)),
        "ask" => Input::Local(Local::Ask(rest)),
        _ if EngineCommand::named(word).is_some() => Input::Engine(text.to_string()),
        _ if skills.iter().any(|s| s == word) => Input::Engine(text.to_string()),
        // A path such as `/etc/hosts` starts a prompt, not a command.
        _ if word.contains('/') || word.is_empty() => Input::Engine(text.to_string()),
        _ => Input::Unknown(word.to_string()),
    }
}

/// Every slash command name: the terminal's, the engine's, then the skills'.
pub fn command_names(engine_commands: &[(&str, &str)], skills: &[String]) -> Vec<String> {
    let mut names: Vec<String> = LOCAL_COMMANDS
        .iter()
        .chain(engine_commands.iter())
        .map(|(n, _)| (*n).to_string())
        .collect();
    for skill in skills {
        if !names.contains(skill) {
            names.push(skill.clone());
        }
    }
    names.sort();
    names
}

/// What Tab completes at `pos`: the start of the replaced word and the candidates
/// (`(display, replacement)`).
pub fn complete(
    line: &str,
    pos: usize,
    commands: &[String],
    skills: &[String],
    cwd: &Path,
    home: Option<&Path>,
) -> (usize, Vec<(String, String)>) {
    let before = &line[..pos.min(line.len())];
    let start = before.rfind(char::is_whitespace).map_or(0, |i| {
        i + before[i..].chars().next().map_or(1, char::len_utf8)
    });
    let word = &before[start..];
    if let Some(prefix) = word.strip_prefix('/')
        && start == before.len() - before.trim_start().len()
    {
        let found = commands
            .iter()
            .filter(|c| c.starts_with(prefix))
            .map(|c| (format!("/{c}"), format!("/{c} ")))
            .collect();
        return (start, found);
    }
    if let Some(prefix) = word.strip_prefix('$') {
        let found = skills
            .iter()
            .filter(|s| s.starts_with(prefix))
            .map(|s| (format!("${s}"), format!("${s} ")))
            .collect();
        return (start, found);
    }
    if let Some(path) = word.strip_prefix('@') {
        let found = complete_path(path, cwd, home)
            .into_iter()
            .map(|p| (p.clone(), format!("@{p}")))
            .collect();
        return (start, found);
    }
    (start, Vec::new())
}

/// Tab after `/load `: the saved sessions' ids that start with what was typed; `None` when the
/// cursor is not in `/load`'s argument.
pub fn complete_load(
    line: &str,
    pos: usize,
    ids: &[String],
) -> Option<(usize, Vec<(String, String)>)> {
    complete_argument(line, pos, "/load ", ids)
}

/// Tab in the one argument of `command` (`/model `): the `names` that start with what was
/// typed; `None` when the cursor is not there.
pub fn complete_argument(
    line: &str,
    pos: usize,
    command: &str,
    names: &[String],
) -> Option<(usize, Vec<(String, String)>)> {
    let before = &line[..pos.min(line.len())];
    let indent = before.len() - before.trim_start().len();
    let rest = before[indent..].strip_prefix(command)?;
    let typed = rest.trim_start();
    if typed.contains(char::is_whitespace) {
        return None;
    }
    let start = before.len() - typed.len();
    let found = names
        .iter()
        .filter(|name| name.starts_with(typed))
        .map(|name| (name.clone(), name.clone()))
        .collect();
    Some((start, found))
}

/// What a prompt names that does not exist: an `@path` (at the start or after whitespace, as
/// the engine reads them) naming no file or folder. One dim notice line each, shown before the
/// prompt goes anyway. A `$word` naming no skill is plain text (`echo tick $i`): no line.
pub fn unresolved(text: &str, cwd: &Path) -> Vec<String> {
    let trailing: &[char] = &[',', '.', ';', ':', '!', '?', ')', ']', '}', '"', '\''];
    let mut notices = Vec::new();
    for word in text.split_whitespace() {
        let Some(path) = word.strip_prefix('@') else {
            continue;
        };
        let path = path.trim_end_matches(trailing);
        // The prompt may come from a file (`mm < notes.txt`): shown visibly.
        let line = format!(
            "@{}: no such file or folder, not attached",
            crate::sanitize::visible(path)
        );
        if !path.is_empty()
            && !crate::paths::resolve(cwd, path).exists()
            && !notices.contains(&line)
        {
            notices.push(line);
        }
    }
    notices
}

/// Paths that start with `typed` (relative to `cwd`, absolute, or `~/…`), directories with a
/// trailing `/`, sorted; hidden entries only when the typed name starts with a dot.
pub fn complete_path(typed: &str, cwd: &Path, home: Option<&Path>) -> Vec<String> {
    let (dir_part, name_part) = match typed.rfind('/') {
        Some(i) => (&typed[..=i], &typed[i + 1..]),
        None => ("", typed),
    };
    let dir: PathBuf = if let Some(rest) = dir_part.strip_prefix("~/") {
        match home {
            Some(h) => h.join(rest),
            None => return Vec::new(),
        }
    } else if dir_part.starts_with('/') {
        PathBuf::from(dir_part)
    } else {
        cwd.join(dir_part)
    };
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut found: Vec<String> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().to_string();
            if !name.starts_with(name_part)
                || (name.starts_with('.') && !name_part.starts_with('.'))
            {
                return None;
            }
            let is_dir = e.file_type().is_ok_and(|t| t.is_dir())
                || (e.file_type().is_ok_and(|t| t.is_symlink()) && e.path().is_dir());
            Some(format!("{dir_part}{name}{}", if is_dir { "/" } else { "" }))
        })
        .collect();
    found.sort();
    found
}

/// The history file: `$XDG_STATE_HOME/mm/history`, else `~/.local/state/mm/history`.
pub fn history_path(xdg_state_home: Option<&Path>, home: Option<&Path>) -> Option<PathBuf> {
    crate::paths::state_dir(home, xdg_state_home).map(|d| d.join("history"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::disallowed_methods)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn skills() -> Vec<String> {
        vec!["greetings".into(), "deploy".into()]
    }

    #[test]
    fn classifies_commands_prompts_and_skills() {
        let s = skills();
        assert_eq!(classify("  ", &s), Input::Empty);
        assert_eq!(classify("/help", &s), Input::Local(Local::Help));
        assert_eq!(classify("/exit", &s), Input::Local(Local::Quit));
        assert_eq!(
            classify("/load 20260916-101530-4f2a9c1e", &s),
            Input::Local(Local::Load("20260916-101530-4f2a9c1e".into()))
        );
        assert_eq!(
            classify("/model", &s),
            Input::Local(Local::Model(String::new()))
        );
        assert_eq!(
            classify("/model  qwen3:8b ", &s),
            Input::Local(Local::Model("qwen3:8b".into()))
        );
        assert_eq!(
            classify("/mode read-only", &s),
            Input::Local(Local::Mode("read-only".into()))
        );
        assert_eq!(classify("/new", &s), Input::Engine("/new".into()));
        assert_eq!(
            classify(" /compact ", &s),
            Input::Engine(" /compact ".into())
        );
        assert_eq!(
            classify("/greetings Bob", &s),
            Input::Engine("/greetings Bob".into())
        );
        assert_eq!(
            classify("/etc/hosts: what is in it?", &s),
            Input::Engine("/etc/hosts: what is in it?".into())
        );
        assert_eq!(classify("/nope x", &s), Input::Unknown("nope".into()));
        assert_eq!(
            classify("list files", &s),
            Input::Engine("list files".into())
        );
    }

    #[test]
    fn continuation_lines() {
        assert!(continues("first line \\"));
        assert!(!continues("a path C:\\\\"));
        assert_eq!(join_continuations("one \\\ntwo"), "one \ntwo");
    }

    #[test]
    fn completes_commands_skills_and_paths() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/main.rs"), "").unwrap();
        std::fs::write(dir.path().join("Cargo.toml"), "").unwrap();
        std::fs::write(dir.path().join(".hidden"), "").unwrap();
        let commands = command_names(&[("new", ""), ("compact", "")], &skills());
        let s = skills();
        let (start, found) = complete("/co", 3, &commands, &s, dir.path(), None);
        assert_eq!(
            (start, found),
            (0, vec![("/compact".into(), "/compact ".into())])
        );
        let (start, found) = complete("say $gr", 7, &commands, &s, dir.path(), None);
        assert_eq!(
            (start, found),
            (4, vec![("$greetings".into(), "$greetings ".into())])
        );
        let (start, found) = complete("read @", 6, &commands, &s, dir.path(), None);
        assert_eq!(
            (start, found),
            (
                5,
                vec![
                    ("Cargo.toml".into(), "@Cargo.toml".into()),
                    ("src/".into(), "@src/".into())
                ]
            )
        );
        let (_, found) = complete("@src/m", 6, &commands, &s, dir.path(), None);
        assert_eq!(found, vec![("src/main.rs".into(), "@src/main.rs".into())]);
        // A slash in the middle of a line is not a command.
        let (_, found) = complete("a /co", 5, &commands, &s, dir.path(), None);
        assert_eq!(found, Vec::<(String, String)>::new());
    }

    #[test]
    fn tab_after_load_completes_session_ids() {
        let ids = vec![
            "20260916-101530-4f2a9c1e".to_string(),
            "20260917-080000-00000000".to_string(),
        ];
        assert_eq!(
            complete_load("/load 2026091", 13, &ids),
            Some((
                6,
                vec![
                    (ids[0].clone(), ids[0].clone()),
                    (ids[1].clone(), ids[1].clone())
                ]
            ))
        );
        assert_eq!(
            complete_load("/load 20260917", 14, &ids).map(|(_, f)| f.len()),
            Some(1)
        );
        assert_eq!(complete_load("/lo", 3, &ids), None);
        let models = vec![
            "qwen2.5-coder:7b".to_string(),
            "qwen3:8b".to_string(),
            "llama3".to_string(),
        ];
        assert_eq!(
            complete_argument("/model qwen3", 12, "/model ", &models),
            Some((7, vec![("qwen3:8b".to_string(), "qwen3:8b".to_string())]))
        );
        assert_eq!(
            complete_argument("/model q", 8, "/model ", &models).map(|(_, f)| f.len()),
            Some(2)
        );
    }

    #[test]
    fn missing_paths_are_named_and_unknown_skills_are_plain_text() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("here.txt"), "").unwrap();
        assert_eq!(
            unresolved(
                "read @here.txt and @missing.txt, use $greetings $nosuch; echo tick $i $HOME a@b.c $5",
                dir.path(),
            ),
            vec!["@missing.txt: no such file or folder, not attached".to_string()]
        );
    }

    #[test]
    fn history_under_xdg_state_or_home() {
        // Absolute on every system (`/s` is not on Windows).
        let (state, home) = (
            std::env::temp_dir().join("s"),
            std::env::temp_dir().join("h"),
        );
        assert_eq!(
            history_path(Some(&state), Some(&home)),
            Some(state.join("mm").join("history"))
        );
        assert_eq!(
            history_path(Some(Path::new("rel")), Some(&home)),
            Some(home.join(".local").join("state").join("mm").join("history"))
        );
        assert_eq!(history_path(None, None), None);
    }
}

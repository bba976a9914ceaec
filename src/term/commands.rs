//! The terminal's own slash commands (`/help`, `/model`, `/skills`, `/sessions`, `/load`,
//! `/ask`): each answers with lines.

use tokio_util::sync::CancellationToken;

use super::input::{self, Local};
use super::render;
use super::sessions;
use super::style;
use crate::engine::{Engine, Session};
use crate::event::Frontend;

/// Runs a local command (not `/quit`, which the loop handles) and returns its lines.
pub async fn run(
    command: &Local,
    engine: &Engine,
    session: &mut Session,
    frontend: &dyn Frontend,
    color: bool,
) -> Vec<String> {
    match command {
        Local::Help => help_lines(session, color),
        Local::Model => match engine.model.info(&CancellationToken::new()).await {
            Ok(info) => {
                let window = if info.context_window > 0 {
                    render::window(info.context_window)
                } else {
                    "unknown".to_string()
                };
                vec![
                    format!("model           {}", info.name),
                    format!("server          {}", info.url),
                    format!("context window  {window}"),
                ]
            }
            Err(e) => vec![style::red(color, &e.to_string())],
        },
        Local::Skills => skills_lines(session, color),
        Local::Mcp => super::mcp::mcp_lines(&engine.mcp_report(session), color),
        Local::Sessions => sessions::sessions_lines(engine, session, color),
        Local::Load(id) => sessions::load(engine, session, id.trim(), frontend, color).await,
        // Handled by the session loop (repl.rs `ask_command`): it runs like a turn.
        Local::Ask(_) => Vec::new(),
        Local::Quit => Vec::new(),
    }
}

/// `/help`.
pub fn help_lines(session: &Session, color: bool) -> Vec<String> {
    let mut commands: Vec<(String, String)> = input::LOCAL_COMMANDS
        .iter()
        .chain(Engine::commands().iter())
        .map(|(n, d)| ((*n).to_string(), (*d).to_string()))
        .collect();
    commands.sort();
    let mut lines = vec![style::bold(color, "Commands")];
    for (name, description) in commands {
        lines.push(format!("  /{name:<12} {}", style::dim(color, &description)));
    }
    if !session.skills.skills.is_empty() {
        lines.push(style::bold(color, "Skills (/name or $name in a prompt)"));
        for skill in &session.skills.skills {
            lines.push(format!(
                "  /{:<12} {}",
                skill.name,
                style::dim(color, &skill.description)
            ));
        }
    }
    lines.push(style::bold(color, "Keys"));
    for (keys, what) in KEYS {
        lines.push(format!("  {keys:<24} {}", style::dim(color, what)));
    }
    lines
}

/// The keys `/help` lists.
const KEYS: &[(&str, &str)] = &[
    ("Enter", "send"),
    ("\\ at the end, Alt-Enter", "new line"),
    ("Tab", "complete /commands, $skills, @paths, /load ids"),
    ("Up, Down", "history (kept across sessions)"),
    (
        "Ctrl-C",
        "cancel the turn; clear the line; twice on an empty line: leave",
    ),
    ("Ctrl-D", "leave (on an empty line)"),
    ("Ctrl-L", "clear the screen"),
];

/// `/skills`: the catalogue with each skill's folder.
pub fn skills_lines(session: &Session, color: bool) -> Vec<String> {
    if session.skills.skills.is_empty() {
        return vec![style::dim(color, "no skills")];
    }
    let mut lines = Vec::new();
    for skill in &session.skills.skills {
        lines.push(format!(
            "{} — {}",
            style::bold(color, &skill.name),
            skill.description
        ));
        lines.push(style::dim(color, &format!("  {}", skill.dir.display())));
    }
    lines
}

//! The terminal's own slash commands (`/help`, `/model`, `/skills`, `/permissions`,
//! `/sessions`, `/load`, `/ask`): each answers with lines.

use tokio_util::sync::CancellationToken;

use super::input::{self, Local};
use super::numbers;
use super::sessions;
use super::style;
use crate::config;
use crate::engine::gate::{Answer, Covers, Rule};
use crate::engine::{Engine, Session};
use crate::event::{Frontend, PermissionMode};
use crate::sanitize::visible;

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
        Local::Model(name) if name.is_empty() => model_lines(engine, session, color).await,
        Local::Model(name) => switch_model(engine, session, name, color).await,
        Local::Mode(name) => mode_lines(engine, session, name, frontend, color),
        Local::Skills => skills_lines(session, color),
        Local::Permissions(what) => permissions(session, what, color),
        Local::Mcp => {
            let home = engine.env().home.as_deref();
            let file = config::user_config_path(home, engine.env().xdg_config_home.as_deref());
            let user_file = config::shown_file(file.as_deref(), home);
            super::mcp::mcp_lines(&engine.mcp_report(session), &user_file, color)
        }
        Local::Sessions => sessions::sessions_lines(engine, session, color),
        Local::Load(id) => sessions::load(engine, session, id.trim(), frontend, color).await,
        // Handled by the session loop (repl.rs `ask_command`): it runs like a turn.
        Local::Ask(_) => Vec::new(),
        Local::Quit => Vec::new(),
    }
}

/// `/permissions`: what `[a]lways` and `ne[v]er` remembered this session, numbered in the
/// order given (`1  always allow bash read-only "git log …"`); `/permissions remove N` forgets
/// one, `/permissions clear` all. `/new` keeps them.
pub fn permissions(session: &mut Session, what: &str, color: bool) -> Vec<String> {
    let mut words = what.split_whitespace();
    match (words.next(), words.next(), words.next()) {
        (None, _, _) => permissions_lines(session, color),
        (Some("clear"), None, _) => {
            let n = session.forget_rules();
            vec![format!(
                "forgot {n} remembered answer(s): every gated call asks"
            )]
        }
        (Some("remove"), Some(n), None) => {
            match n.parse().ok().and_then(|n| session.forget_rule(n)) {
                Some(rule) => vec![format!("forgot: {}", rule_line(&rule))],
                None => vec![style::yellow(
                    color,
                    &format!(
                        "no remembered answer {} (/permissions lists them)",
                        visible(n)
                    ),
                )],
            }
        }
        _ => vec![style::yellow(
            color,
            "usage: /permissions, /permissions remove N, /permissions clear",
        )],
    }
}

/// The numbered list of the session's remembered answers.
pub fn permissions_lines(session: &Session, color: bool) -> Vec<String> {
    let rules = session.view().rules();
    if rules.is_empty() {
        return vec![style::dim(
            color,
            "no permission remembered: every gated call asks (in ask mode)",
        )];
    }
    let digits = rules.len().to_string().len();
    let mut lines: Vec<String> = rules
        .iter()
        .enumerate()
        .map(|(i, rule)| format!("{:>digits$}  {}", i + 1, rule_line(rule)))
        .collect();
    lines.push(style::dim(
        color,
        "/permissions remove N forgets one, /permissions clear all (/new keeps them)",
    ));
    lines
}

/// One remembered answer: `always allow bash read-only "git log …"`, `always allow bash
/// exactly "make build"`, `always allow write_file`, `never bash exactly "rm -rf x"`, `never
/// fetch_content`.
fn rule_line(rule: &Rule) -> String {
    let answer = match rule.answer {
        Answer::Always => "always allow",
        Answer::Never => "never",
    };
    let tool = super::permission::inline(&rule.tool);
    match &rule.covers {
        Covers::Tool => format!("{answer} {tool}"),
        Covers::ReadOnly(form) => format!(
            "{answer} {tool} read-only \"{} …\"",
            super::permission::inline(form)
        ),
        Covers::Exact(command) => format!(
            "{answer} {tool} exactly \"{}\"",
            super::permission::inline(command)
        ),
    }
}

/// `/model`: the model the session asks, its server and window, and the server's others.
async fn model_lines(engine: &Engine, session: &Session, color: bool) -> Vec<String> {
    let cancel = CancellationToken::new();
    let info = match engine.model.info(&cancel).await {
        Ok(info) => info,
        Err(e) => return vec![style::red(color, &visible(&e.to_string()))],
    };
    let current = engine.model_of(session);
    let current = if current.is_empty() {
        info.name.clone()
    } else {
        current
    };
    // The window of the one chosen once a turn has probed it, else the detected model's.
    let window = match engine.context_usage(session).size {
        0 => info.context_window,
        known => known,
    };
    let window = if window > 0 {
        numbers::window(window)
    } else {
        "unknown".to_string()
    };
    let list = engine.model.models(&cancel).await.unwrap_or_default();
    // A router's models say where they are: `qwen3 (loaded)`.
    let named = |m: &String| match list.status.get(m) {
        Some(status) => format!("{m} ({})", status.label()),
        None => m.clone(),
    };
    let mut lines = vec![
        format!("model           {}", visible(&named(&current))),
        format!("server          {}", visible(&info.url)),
        format!("context window  {window}"),
    ];
    let others: Vec<String> = list
        .models
        .iter()
        .filter(|m| **m != current)
        .map(named)
        .collect();
    if !others.is_empty() {
        lines.push(format!("also served     {}", visible(&others.join(", "))));
        lines.push(style::dim(
            color,
            "/model NAME switches, from the next turn",
        ));
    }
    lines
}

/// `/model NAME`: one of the server's models for this session, from its next turn.
async fn switch_model(
    engine: &Engine,
    session: &mut Session,
    name: &str,
    color: bool,
) -> Vec<String> {
    let listed = match engine.model.models(&CancellationToken::new()).await {
        Ok(list) => list.models,
        Err(e) => return vec![style::red(color, &visible(&e.to_string()))],
    };
    if !listed.iter().any(|m| m == name) {
        let served = if listed.is_empty() {
            "the server lists no models".to_string()
        } else {
            format!("the server has {}", listed.join(", "))
        };
        let line = format!("no model {name}: {served}");
        return vec![style::yellow(color, &visible(&line))];
    }
    session.controls().set_model(name);
    vec![format!("model {name} from the next turn")]
}

/// `/mode` shows the session's mode and the others; `/mode NAME` switches (saved with the
/// session).
fn mode_lines(
    engine: &Engine,
    session: &mut Session,
    name: &str,
    frontend: &dyn Frontend,
    color: bool,
) -> Vec<String> {
    if name.is_empty() {
        let current = session.view().mode();
        let fenced = engine.read_only_runs_commands();
        return PermissionMode::ALL
            .iter()
            .map(|m| {
                let mark = if *m == current { "●" } else { " " };
                format!(
                    "{mark} {:<10} {}",
                    m.id(),
                    style::dim(color, m.description(fenced))
                )
            })
            .collect();
    }
    let Some(mode) = PermissionMode::parse(name) else {
        return vec![style::yellow(
            color,
            &format!("no mode {name}: the modes are ask, yolo and read-only"),
        )];
    };
    if session.controls().set_mode(mode) {
        engine.save(session, frontend);
    }
    vec![format!(
        "mode {}: {}",
        mode.id(),
        mode.description(engine.read_only_runs_commands())
    )]
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
    if !session.view().skills().skills.is_empty() {
        lines.push(style::bold(color, "Skills (/name or $name in a prompt)"));
        for skill in &session.view().skills().skills {
            lines.push(format!(
                "  /{:<12} {}",
                visible(&skill.name),
                style::dim(color, &visible(&skill.description))
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
    if session.view().skills().skills.is_empty() {
        return vec![style::dim(color, "no skills")];
    }
    let mut lines = Vec::new();
    for skill in &session.view().skills().skills {
        lines.push(format!(
            "{} — {}",
            style::bold(color, &visible(&skill.name)),
            visible(&skill.description)
        ));
        let dir = skill.dir.display().to_string();
        lines.push(style::dim(color, &format!("  {}", visible(&dir))));
    }
    lines
}

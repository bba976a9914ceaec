//! Skills end to end through the engine (docs/skills.md): the catalogue from the session's and the
//! user's folders, the system prompt, `$skill`, `/skill`, `read_skill` and a skill's script.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use super::common;

use std::path::Path;

use crate::{Command, Engine, StopReason};
use common::*;
use mm_core::event::{CompactOutcome, Event, Tally};
use mm_core::history::Role;
use pretty_assertions::assert_eq;
use serde_json::json;

const GREETINGS: &str = "---\nname: greetings\ndescription: Greet somebody with a festive message.\n---\n\nWrite a short festive greeting for the person named in the parameters.\nRun scripts/greet.sh NAME to get the wording.\n";

fn skill(root: &Path, folder: &str, text: &str) -> std::path::PathBuf {
    let dir = root.join(folder);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("SKILL.md"), text).unwrap();
    dir
}

/// Writes a skill's script (run with `sh`, so no execute bit is needed).
fn script(path: &Path, body: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, body).unwrap();
}

/// `<cwd>/.mm/skills/greetings` with a script, and a user skill in the XDG folder.
fn install(r: &Rig) -> std::path::PathBuf {
    let dir = skill(&r.cwd.path().join(".mm/skills"), "greetings", GREETINGS);
    script(
        &dir.join("scripts/greet.sh"),
        "#!/bin/sh\necho \"Happy holidays, $1! 🎉\"\n",
    );
    skill(
        &r.home.path().join("config/mm/skills"),
        "vulcan-salute",
        "---\ndescription: Send a vulcan salute to somebody.\n---\nSay: live long and prosper.\n",
    );
    // The session's own folder wins over the user's for one name.
    skill(
        &r.home.path().join("config/mm/skills"),
        "greetings",
        "---\nname: greetings\ndescription: The user's older greetings.\n---\nold\n",
    );
    dir
}

fn requested(name: &str) -> String {
    format!(
        "[skill requested: {name} — load it with read_skill(\"{name}\") and follow it; its parameters are the text after ${name}]"
    )
}

#[tokio::test]
async fn the_catalogue_is_listed_in_the_system_prompt() {
    let model = ScriptedModel::new(vec![Answer::text("ok")]);
    let r = rig(model.clone(), |_| {});
    let dir = install(&r);
    let fe = Recorder::new();
    let mut s = r.session(&fe).await;
    let names: Vec<(&str, &str)> = s
        .skills
        .skills
        .iter()
        .map(|k| (k.name.as_str(), k.description.as_str()))
        .collect();
    assert_eq!(
        names,
        vec![
            ("greetings", "Greet somebody with a festive message."),
            ("vulcan-salute", "Send a vulcan salute to somebody.")
        ]
    );
    assert_eq!(s.skills.get("greetings").unwrap().dir, dir);
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    let section = "Skills (procedures: load one with read_skill, then follow it):\n- greetings: Greet somebody with a festive message.\n- vulcan-salute: Send a vulcan salute to somebody.\n";
    assert!(
        s.history[0].content.contains(section),
        "{}",
        s.history[0].content
    );
    r.prompt(&mut s, "hi", &fe).await;
    let system = model.requests()[0].messages[0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(system.contains(section));
}

fn tool_names(model: &ScriptedModel, request: usize) -> Vec<String> {
    model.requests()[request]
        .tools
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn read_skill_is_offered_only_when_the_session_has_a_skill() {
    // Without a skill the model could name none, and the schema costs tokens on every request.
    let model = ScriptedModel::new(vec![Answer::text("ok")]);
    let r = rig(model.clone(), |_| {});
    let fe = Recorder::new();
    let mut bare = r.session(&fe).await;
    r.prompt(&mut bare, "hi", &fe).await;
    assert!(!tool_names(&model, 0).contains(&"read_skill".to_string()));
    assert!(tool_names(&model, 0).contains(&"bash".to_string()));

    // A process reads a folder's skills once: a second engine sees the installed ones.
    let model = ScriptedModel::new(vec![Answer::text("ok")]);
    let r = rig(model.clone(), |_| {});
    install(&r);
    let mut s = r.session(&fe).await;
    r.prompt(&mut s, "hi", &fe).await;
    assert!(tool_names(&model, 0).contains(&"read_skill".to_string()));
}

#[tokio::test]
async fn dollar_and_slash_notations_request_the_skill() {
    let model = ScriptedModel::new(vec![]);
    let r = rig(model.clone(), |_| {});
    install(&r);
    let fe = Recorder::new();
    let mut s = r.session(&fe).await;

    r.prompt(&mut s, "$greetings Bob, and keep $HOME as it is", &fe)
        .await;
    assert_eq!(
        s.history[1].content,
        format!(
            "$greetings Bob, and keep $HOME as it is\n{}",
            requested("greetings")
        )
    );

    // `/greetings Bob` is the `$greetings Bob` notation.
    r.prompt(&mut s, "/greetings Bob", &fe).await;
    assert_eq!(
        s.history[3].content,
        format!("$greetings Bob\n{}", requested("greetings"))
    );
    // Two skills, each once.
    r.prompt(
        &mut s,
        "$vulcan-salute Spock then $greetings Kirk. $greetings",
        &fe,
    )
    .await;
    assert_eq!(
        s.history[5].content,
        format!(
            "$vulcan-salute Spock then $greetings Kirk. $greetings\n{}\n{}",
            requested("vulcan-salute"),
            requested("greetings")
        )
    );
    // An unknown `/name` goes to the model as typed.
    r.prompt(&mut s, "/nope Bob", &fe).await;
    assert_eq!(s.history[7].content, "/nope Bob");
    let sent = contents(&model.requests()[1]);
    assert_eq!(sent[3], s.history[3].content);
}

#[tokio::test]
async fn read_skill_returns_the_body_the_folder_and_its_files_and_is_counted() {
    let model = ScriptedModel::new(vec![
        Answer::call("read_skill", json!({"name": "greetings"})),
        Answer::call("read_skill", json!({"name": "nope"})),
        Answer::text("Happy holidays, Bob!"),
    ]);
    // No permission is needed to read a skill.
    let r = rig(model.clone(), |c| c.yolo = false);
    let dir = install(&r);
    let fe = Recorder::new();
    let mut s = r.session(&fe).await;
    let out = r.prompt(&mut s, "$greetings Bob", &fe).await;
    assert_eq!(out.stop, Ok(StopReason::EndTurn));
    let results: Vec<(String, bool)> = s
        .history
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| (m.content.clone(), m.failed))
        .collect();
    assert_eq!(
        results[0],
        (
            format!(
                "skill directory: {}\nfiles:\n- SKILL.md\n- scripts/greet.sh\n\nWrite a short festive greeting for the person named in the parameters.\nRun scripts/greet.sh NAME to get the wording.\n",
                // `/` only, on Windows too: the model copies it into Git Bash's commands.
                common::platform::slashed(&dir)
            ),
            false
        )
    );
    assert_eq!(
        results[1],
        (
            "[unknown skill \"nope\"; the skills are: greetings, vulcan-salute]".to_string(),
            true
        )
    );
    let recap = out.recap.unwrap();
    assert_eq!(recap.get(Tally::Skill), 1);
    assert_eq!(recap.get(Tally::Command), 0);
    assert!(fe.asked().is_empty());
    let titles: Vec<String> = fe
        .events()
        .into_iter()
        .filter_map(|e| match e {
            Event::ToolCallStarted(c) => Some(c.title),
            _ => None,
        })
        .collect();
    assert_eq!(titles, vec!["read_skill: greetings", "read_skill: nope"]);
    model.assert_invariants();
}

// Windows has bash only where Git Bash is installed, and this crate's tests cannot skip with a
// reason at run time (mm-testkit's harness sits above it): the suite's skill tests run bash there.
#[cfg_attr(
    windows,
    ignore = "runs a skill's script through bash, which Windows may not have"
)]
#[tokio::test]
async fn a_skill_script_runs_through_bash() {
    // What a real user's skill does: load it, then run its script from its folder.
    let model = ScriptedModel::new(vec![]);
    let r = rig(model.clone(), |_| {});
    let dir = install(&r);
    model.push(Answer::call("read_skill", json!({"name": "greetings"})));
    model.push(Answer::call(
        "bash",
        json!({"command": format!("sh {}/scripts/greet.sh Bob", dir.display())}),
    ));
    model.push(Answer::text("Happy holidays, Bob! 🎉"));
    let fe = Recorder::new();
    let mut s = r.session(&fe).await;
    let out = r.prompt(&mut s, "/greetings Bob", &fe).await;
    assert_eq!(out.stop, Ok(StopReason::EndTurn));
    let recap = out.recap.unwrap();
    assert_eq!((recap.get(Tally::Skill), recap.get(Tally::Command)), (1, 1));
    let last_result = s.history.iter().rfind(|m| m.role == Role::Tool).unwrap();
    assert_eq!(last_result.content, "Happy holidays, Bob! 🎉\n");
    assert_eq!(s.history.last().unwrap().content, "Happy holidays, Bob! 🎉");
    model.assert_invariants();
}

#[tokio::test]
async fn a_skill_named_like_a_command_is_shadowed_but_reachable_with_dollar() {
    let model = ScriptedModel::new(vec![]);
    let r = rig(model.clone(), |_| {});
    install(&r);
    skill(
        &r.cwd.path().join(".mm/skills"),
        "compact",
        "---\ndescription: Make code compact.\n---\nShorten it.\n",
    );
    let fe = Recorder::new();
    let mut s = r.session(&fe).await;
    let commands: Vec<&str> = Engine::commands().iter().map(|(n, _)| *n).collect();
    assert_eq!(
        mm_core::skills::shadowed(&s.skills, &commands),
        vec![
            "skill \"compact\" is not advertised: the /compact command shadows it; use $compact"
                .to_string()
        ]
    );
    let advertised: Vec<&str> = mm_core::skills::advertised(&s.skills, &commands)
        .iter()
        .map(|k| k.name.as_str())
        .collect();
    assert_eq!(advertised, vec!["greetings", "vulcan-salute"]);
    // `/compact` is the command, never the skill.
    let out = r.prompt(&mut s, "/compact", &fe).await;
    assert_eq!(
        out.command,
        Some(Command::Compact(CompactOutcome::Nothing {
            messages: 0,
            keep: 2
        }))
    );
    assert!(model.requests().is_empty());
    // `$compact` requests the skill.
    r.prompt(&mut s, "$compact src/main.rs", &fe).await;
    assert_eq!(
        s.history[1].content,
        format!("$compact src/main.rs\n{}", requested("compact"))
    );
}

#[tokio::test]
async fn a_broken_skill_is_skipped_with_a_warning_naming_the_file() {
    let model = ScriptedModel::new(vec![]);
    let r = rig(model.clone(), |_| {});
    let dir = skill(
        &r.cwd.path().join(".mm/skills"),
        "broken",
        "---\nname: broken\n---\nno description\n",
    );
    let fe = Recorder::new();
    let s = r.session(&fe).await;
    assert!(s.skills.is_empty());
    assert_eq!(s.warnings.len(), 1);
    // In the system's own form, as the user is shown it.
    let file = common::platform::native(&dir.join("SKILL.md").display().to_string());
    assert!(s.warnings[0].contains(&file), "{:?}", s.warnings);
    assert!(s.warnings[0].contains("no description"), "{:?}", s.warnings);
    assert!(!s.history[0].content.contains("Skills (procedures"));
}

//! Asking in the interactive terminal (the real binary in a pseudo-terminal, the fake model
//! server): `ask_user`'s forms, Ctrl-C on a question cancelling only the question, and `/ask`
//! with another agent's permission request and form put to the user.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]
// pseudo-terminals are Unix's (docs/platforms.md)
#![cfg(unix)]

use mm_testkit as common;

use std::path::Path;

use common::Reply;
use common::agents::{mode_agent, need_landlock, need_python, need_python_sdk, received};
use common::pty::{PtyServer as Server, spawn_mm};
use expectrl::{Eof, Expect};
use serde_json::json;

#[mm_testkit::test]
fn ask_user_in_the_terminal_and_ctrl_c_cancels_only_the_question() {
    let (server, url) = Server::start(vec![
        Reply::tool_call(
            "ask_user",
            json!({"questions": [{"question": "Colour?", "type": "choice", "options": ["red", "blue"]}]}),
        ),
        Reply::text("You chose."),
        Reply::tool_call(
            "ask_user",
            json!({"questions": [{"question": "Name?", "type": "text"}]}),
        ),
        Reply::text("Moving on."),
    ]);
    let home = tempfile::tempdir().unwrap();
    let mut mm = spawn_mm(home.path(), &url, &[]);
    mm.expect("> ").unwrap();
    mm.send_line("pick one").unwrap();
    mm.expect("? Colour?").unwrap();
    mm.expect("2. blue").unwrap();
    mm.expect("number>").unwrap();
    mm.send("2\r").unwrap();
    mm.expect("You chose.").unwrap();
    mm.expect("> ").unwrap();
    assert_eq!(server.tool_results(), ["Colour? → blue"]);

    mm.send_line("again").unwrap();
    mm.expect("? Name?").unwrap();
    mm.send("\x03").unwrap();
    // The turn goes on: the model is told, and answers.
    mm.expect("Moving on.").unwrap();
    mm.expect("> ").unwrap();
    assert_eq!(
        server.tool_results(),
        ["Colour? → blue", "[the question was cancelled]"]
    );
    mm.send("\x04").unwrap();
    mm.expect(Eof).unwrap();
    server.assert_valid();
}

#[mm_testkit::test]
fn slash_ask_puts_the_agents_questions_to_the_terminal() {
    need_python_sdk();
    let (_server, url) = Server::start(vec![]);
    let home = tempfile::tempdir().unwrap();
    common::pty::python_agent_config(home.path(), "py", "python_agent.py");
    let mut mm = spawn_mm(home.path(), &url, &[]);
    mm.expect("> ").unwrap();
    mm.send_line("/ask py go").unwrap();
    mm.expect("│ rm -rf build").unwrap();
    mm.expect("Allow py: rm -rf build?  [1] Yes, once  [2] No")
        .unwrap();
    mm.send("1").unwrap();
    mm.expect(" Yes, once").unwrap();
    mm.expect("py asks: A few details").unwrap();
    mm.expect("? Pick a colour").unwrap();
    mm.expect("number>").unwrap();
    mm.send("2\r").unwrap();
    mm.expect("? Sure?").unwrap();
    mm.send("y").unwrap();
    mm.expect(r#"permission=py-yes; form=accept {"alpha": true, "zeta": "blue"}"#)
        .unwrap();
    mm.expect("> ").unwrap();
    mm.send("\x04").unwrap();
    mm.expect(Eof).unwrap();
}

fn write_config(home: &Path, toml: &str) {
    let config = home.join("config/mm/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(&config, toml).unwrap();
}

#[mm_testkit::test]
fn slash_mode_reaches_the_asked_agent_before_each_question() {
    need_python();
    let ask = |agent: &str, question: &str| {
        Reply::tool_call("ask_agent", json!({"agent": agent, "question": question}))
    };
    let (server, url) = Server::start(vec![
        ask("rec", "first"),
        Reply::text("asked once."),
        ask("rec", "second"),
        Reply::text("asked twice."),
    ]);
    let home = tempfile::tempdir().unwrap();
    write_config(
        home.path(),
        &format!(
            "{}{}",
            mode_agent("rec", &home.path().join("rec.log"), "ask,yolo,read-only"),
            mode_agent("bare", &home.path().join("bare.log"), "none")
        ),
    );
    let mut mm = spawn_mm(home.path(), &url, &[]);
    mm.expect("> ").unwrap();
    mm.send_line("/mode read-only").unwrap();
    mm.expect("mode read-only: ").unwrap();
    mm.send_line("go").unwrap();
    mm.expect("asked once.").unwrap();
    mm.expect("> ").unwrap();
    assert_eq!(server.tool_results(), ["mode=read-only"]);
    // The kept agent gets the new mode with the next question.
    mm.send_line("/mode yolo").unwrap();
    mm.expect("mode yolo: ").unwrap();
    mm.send_line("again").unwrap();
    mm.expect("asked twice.").unwrap();
    mm.expect("> ").unwrap();
    assert_eq!(server.tool_results(), ["mode=read-only", "mode=yolo"]);
    assert_eq!(
        received(&home.path().join("rec.log")),
        [
            "initialize",
            "session/new",
            "session/set_mode read-only",
            "session/prompt",
            "session/set_mode yolo",
            "session/prompt",
        ]
    );
    // `/ask` puts the agent in the session's mode too, and refuses one that has no read-only.
    mm.send_line("/mode read-only").unwrap();
    mm.expect("mode read-only: ").unwrap();
    mm.send_line("/ask bare hello").unwrap();
    mm.expect(
        "[agent bare failed: the session is in read-only mode and it offers no read-only mode]",
    )
    .unwrap();
    mm.expect("> ").unwrap();
    assert_eq!(
        received(&home.path().join("bare.log")),
        ["initialize", "session/new"]
    );
    mm.send("\x04").unwrap();
    mm.expect(Eof).unwrap();
    server.assert_valid();
}

#[mm_testkit::test]
fn slash_ask_runs_the_agent_inside_the_fence() {
    need_landlock();
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join("from-the-agent.txt");
    let (server, url) = Server::start(vec![
        Reply::tool_call(
            "bash",
            json!({"command": format!("touch {}", file.display())}),
        ),
        Reply::text("the agent is done"),
    ]);
    // The asked mm reaches the same server through the shared configuration.
    write_config(
        home.path(),
        &format!(
            "[model]\nurl = {url:?}\n[agents.second]\ncommand = {:?}\nargs = [\"-acp\", \"--yolo\"]\n",
            env!("CARGO_BIN_EXE_mm")
        ),
    );
    let mut mm = spawn_mm(home.path(), &url, &["--sandbox", "read-only"]);
    mm.expect("> ").unwrap();
    mm.send_line("/ask second write it").unwrap();
    mm.expect("the agent is done").unwrap();
    mm.expect("> ").unwrap();
    assert!(!file.exists(), "/ask's agent wrote under read-only");
    let requests = server.requests();
    let result = requests[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()["content"]
        .clone();
    assert!(
        result.as_str().unwrap().contains("Permission denied"),
        "{result}"
    );
    mm.send("\x04").unwrap();
    mm.expect(Eof).unwrap();
    server.assert_valid();
}

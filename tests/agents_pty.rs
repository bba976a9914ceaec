//! Asking in the interactive terminal (the real binary in a pseudo-terminal, the fake model
//! server): `ask_user`'s forms, Ctrl-C on a question cancelling only the question, and `/ask`
//! with another agent's permission request and form put to the user.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

mod common;

use std::process::Command;

use common::Reply;
use common::pty::{PtyServer as Server, spawn_mm};
use expectrl::{Eof, Expect};
use serde_json::json;

#[test]
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

#[test]
fn slash_ask_puts_the_agents_questions_to_the_terminal() {
    let sdk = Command::new("python3")
        .args(["-c", "import acp.stdio"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !sdk {
        eprintln!(
            "SKIPPED: the ACP Python SDK is not installed (pip install agent-client-protocol==0.12.1)"
        );
        return;
    }
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

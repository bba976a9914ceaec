//! What a newcomer expects of the prompt, in the real `mm` binary in a pseudo-terminal at 120
//! and 60 columns, against the fake model server: the status line while a turn runs and Esc,
//! Ctrl-R, `/model`'s completion, the prompt drawn again whole when the window is resized.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// pseudo-terminals are Unix's (docs/platforms.md)
#![cfg(unix)]

use mm_testkit as common;

use common::Reply;
use common::pty::{PtyServer as Server, answer_with_usage, bash_reply, spawn_mm};
use expectrl::{Eof, Expect, Regex};
use serde_json::json;

/// A quiet command: the status line says it runs, for how long, and that Esc stops it; Esc
/// cancels the turn (the command with it) and the prompt comes back.
fn a_quiet_command_shows_the_status_line_and_esc_stops_it(cols: u16, command: &str, shown: &str) {
    let (server, url) = Server::start(vec![
        bash_reply("call_1", command),
        answer_with_usage("after the cancel"),
    ]);
    let home = tempfile::tempdir().unwrap();
    let mut mm = spawn_mm(home.path(), &url, &["--yolo"]);
    mm.get_process_mut().set_window_size(cols, 24).unwrap();
    mm.expect("> ").unwrap();
    mm.send_line("wait").unwrap();
    // `\r⠋ <what> · 2s · esc to interrupt` and its erase, redrawn every 100 ms.
    let drawn = mm
        .expect(Regex(
            r"\r[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] [^\r\x1b]* · [1-9]\d*s · esc to interrupt\x1b\[K",
        ))
        .unwrap();
    let line = String::from_utf8_lossy(drawn.get(0).unwrap()).to_string();
    let line = line.trim_start_matches('\r').trim_end_matches("\x1b[K");
    let what = line.split_once(' ').unwrap().1;
    let what = what.split(" · ").next().unwrap();
    assert_eq!(what, shown, "{line:?}");
    assert!(line.chars().count() < usize::from(cols), "{line:?}");
    mm.send("\x1b").unwrap();
    mm.expect("cancelled").unwrap();
    mm.expect("> ").unwrap();
    mm.send_line("again").unwrap();
    mm.expect("after the cancel").unwrap();
    mm.expect("> ").unwrap();
    server.assert_valid();
    mm.send("\x04").unwrap();
    mm.expect(Eof).unwrap();
}

#[mm_testkit::test]
fn the_status_line_at_120_columns() {
    a_quiet_command_shows_the_status_line_and_esc_stops_it(120, "sleep 30", "bash: sleep 30");
}

#[mm_testkit::test]
fn the_status_line_at_60_columns_is_cut_to_fit() {
    a_quiet_command_shows_the_status_line_and_esc_stops_it(
        60,
        "sleep 30 # long enough a comment to be cut",
        "bash: sleep 30 # long enough a c…",
    );
}

#[mm_testkit::test]
fn ctrl_r_finds_an_earlier_prompt_and_enter_sends_it() {
    let (server, url) = Server::start(vec![
        answer_with_usage("one"),
        answer_with_usage("two"),
        answer_with_usage("three"),
    ]);
    let home = tempfile::tempdir().unwrap();
    let mut mm = spawn_mm(home.path(), &url, &["--yolo"]);
    mm.get_process_mut().set_window_size(120, 24).unwrap();
    mm.expect("> ").unwrap();
    mm.send_line("list the files").unwrap();
    mm.expect("one").unwrap();
    mm.expect("> ").unwrap();
    mm.send_line("count the lines").unwrap();
    mm.expect("two").unwrap();
    mm.expect("> ").unwrap();
    mm.send("\x12files").unwrap();
    mm.expect("(search: files) list the files").unwrap();
    mm.send("\r").unwrap();
    mm.expect("three").unwrap();
    mm.expect("> ").unwrap();
    let last = server.requests().last().unwrap()["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .unwrap()["content"]
        .clone();
    assert_eq!(last, "list the files");
    mm.send("\x04").unwrap();
    mm.expect(Eof).unwrap();
}

#[mm_testkit::test]
fn tab_after_model_completes_the_server_s_models() {
    let (server, url) = Server::start(vec![]);
    server.server.route(
        "GET /v1/models",
        vec![Reply::json(json!({"object": "list", "data": [
            {"id": "model-a", "object": "model", "owned_by": "llamacpp"},
            {"id": "qwen3:8b", "object": "model", "owned_by": "llamacpp"},
        ]}))],
    );
    let home = tempfile::tempdir().unwrap();
    let mut mm = spawn_mm(home.path(), &url, &["--yolo"]);
    mm.get_process_mut().set_window_size(60, 24).unwrap();
    // The model line: detection asked the server, as the completion's list did at the same time.
    // It may come before the first prompt or after it (detection runs beside the prompt), so it
    // alone is awaited; keys typed before the prompt is drawn are kept.
    mm.expect(Regex(r"context(\r\n| )window")).unwrap();
    mm.send("/model qw\t").unwrap();
    mm.expect("/model qwen3:8b").unwrap();
    mm.send("\r").unwrap();
    mm.expect("model qwen3:8b from the next turn").unwrap();
    mm.send("\x04").unwrap();
    mm.expect(Eof).unwrap();
}

#[mm_testkit::test]
fn a_resize_draws_the_prompt_again_whole() {
    let (_server, url) = Server::start(vec![]);
    let home = tempfile::tempdir().unwrap();
    let mut mm = spawn_mm(home.path(), &url, &["--yolo"]);
    mm.get_process_mut().set_window_size(60, 24).unwrap();
    mm.expect("> ").unwrap();
    // The model line, wrapped at 60 columns (`… · context` / `window 32k`) or not.
    mm.expect("window 32k").unwrap();
    // `> ` and 70 characters: two rows at 60 columns, the cursor on the second.
    let draft = "x".repeat(70);
    mm.send(&draft).unwrap();
    mm.expect(&draft[60..]).unwrap();
    // Wider: the terminal joins the two rows; the prompt is drawn from the one row it is on.
    mm.get_process_mut().set_window_size(120, 24).unwrap();
    mm.expect(format!("\x1b[?2026h\r\x1b[J> {draft}\r\x1b[72C\x1b[?2026l"))
        .unwrap();
    // Narrower: three rows of 30, the cursor on the third; up two rows, then drawn whole.
    mm.get_process_mut().set_window_size(30, 24).unwrap();
    mm.expect(format!("\x1b[?2026h\x1b[2A\r\x1b[J> {}", &draft[..28]))
        .unwrap();
    mm.send("\x15\x04").unwrap();
    mm.expect(Eof).unwrap();
}

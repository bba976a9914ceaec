//! What a newcomer expects of the prompt, in the real `mm` binary in a pseudo-terminal at 120
//! and 60 columns, against the fake model server: the status line while a turn runs and Esc,
//! Ctrl-R, `/model`'s completion, the prompt drawn again whole when the window is resized.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// pseudo-terminals are Unix's (docs/platforms.md)
#![cfg(unix)]

use mm_testkit as common;

use common::Reply;
use common::pty::{PtyServer as Server, Term, answer_with_usage, bash_reply, spawn_mm};
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

/// The window narrows while a command runs: the status line is drawn again cut to the new width
/// (drawn at the old one, it would wrap, and each redraw would leave a spinner row behind).
#[mm_testkit::test]
fn a_resize_during_a_command_cuts_the_status_line_to_the_new_width() {
    let (_server, url) = Server::start(vec![
        bash_reply("call_1", "sleep 30 # long enough a comment to be cut"),
        answer_with_usage("after the cancel"),
    ]);
    let home = tempfile::tempdir().unwrap();
    let mut mm = spawn_mm(home.path(), &url, &["--yolo"]);
    mm.get_process_mut().set_window_size(120, 24).unwrap();
    mm.expect("> ").unwrap();
    mm.send_line("wait").unwrap();
    mm.expect("bash: sleep 30 # long enough a comment to be cut · ")
        .unwrap();
    mm.get_process_mut().set_window_size(60, 24).unwrap();
    let drawn = mm
        .expect(Regex(
            r"\r[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] bash: sleep 30 # long enough a c… · [^\r\x1b]*\x1b\[K",
        ))
        .unwrap();
    let line = String::from_utf8_lossy(drawn.get(0).unwrap()).to_string();
    let line = line.trim_start_matches('\r').trim_end_matches("\x1b[K");
    assert!(line.chars().count() < 60, "{line:?}");
    mm.send("\x1b").unwrap();
    mm.expect("cancelled").unwrap();
    mm.expect("> ").unwrap();
    mm.send("\x04").unwrap();
    mm.expect(Eof).unwrap();
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
    let last = server.last_user_message();
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
    // The model line, wrapped at 60 columns (`… · context` / `window 32k`) or not. Detection runs
    // beside the prompt, so the line may come before the first prompt or after it: it alone is
    // awaited (awaiting `> ` first loses the line when it came first); keys typed before the
    // prompt is drawn are kept, and the prompt is drawn again under the line.
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

/// A command that writes 400 lines, then waits: while it runs, its last lines are redrawn in
/// place in a box of 4 under its line (the scrollback does not fill); when it ends, the box
/// makes way for the tail of its output with the exact count of the lines above.
fn live_output_is_redrawn_in_place(cols: u16, title: &[&str]) {
    let command = "for i in $(seq 1 400); do echo line $i; done; sleep 1; echo finished";
    let (server, url) = Server::start(vec![
        bash_reply("call_1", command),
        answer_with_usage("all done"),
    ]);
    let home = tempfile::tempdir().unwrap();
    let mut term = Term::spawn(home.path(), &url, &["--yolo"], cols, 50);
    term.expect("> ");
    term.send_line("count");
    term.expect("line 400");
    let rows = term.rows();
    let at = rows.iter().position(|r| r.starts_with("$ bash")).unwrap();
    assert_eq!(rows[at..at + title.len()], *title, "{rows:#?}");
    let live: Vec<&String> = rows.iter().filter(|r| r.contains("│ line")).collect();
    assert_eq!(
        live,
        [
            "  │ line 397",
            "  │ line 398",
            "  │ line 399",
            "  │ line 400"
        ],
        "{rows:#?}"
    );
    assert_eq!(rows[at + title.len()], "  │ line 397", "{rows:#?}");
    term.expect("all done");
    term.expect("> ");
    let rows = term.rows();
    let at = rows.iter().position(|r| r.starts_with("$ bash")).unwrap();
    let after: Vec<&str> = rows[at + title.len()..]
        .iter()
        .map(String::as_str)
        .take(6)
        .collect();
    assert_eq!(
        after,
        [
            "  … 397 earlier lines",
            "  line 398",
            "  line 399",
            "  line 400",
            "  finished",
            "all done"
        ],
        "{rows:#?}"
    );
    assert!(!rows.iter().any(|r| r.contains('│')), "{rows:#?}");
    server.assert_valid();
    term.send("\x04");
    term.mm.expect(Eof).unwrap();
}

#[mm_testkit::test]
fn live_output_is_redrawn_in_place_at_120_columns() {
    live_output_is_redrawn_in_place(
        120,
        &["$ bash: for i in $(seq 1 400); do echo line $i; done; sleep 1; echo finished"],
    );
}

#[mm_testkit::test]
fn live_output_is_redrawn_in_place_at_60_columns() {
    live_output_is_redrawn_in_place(
        60,
        &[
            "$ bash: for i in $(seq 1 400); do echo line $i; done; sleep",
            "  1; echo finished",
        ],
    );
}

/// Keys typed while a turn runs are echoed on a prompt row under the status line, and the next
/// prompt starts with them.
#[mm_testkit::test]
fn type_ahead_is_echoed_while_a_turn_runs() {
    let (server, url) = Server::start(vec![
        bash_reply("call_1", "sleep 2"),
        answer_with_usage("slept"),
        answer_with_usage("listed"),
    ]);
    let home = tempfile::tempdir().unwrap();
    let mut term = Term::spawn(home.path(), &url, &["--yolo"], 60, 30);
    term.expect("> ");
    term.send_line("wait");
    // The status line of the running call (it says `thinking` first, from the turn's start).
    term.expect("bash: sleep 2 · ");
    term.expect("esc to interrupt");
    term.send("list the fi");
    term.expect("> list the fi");
    let rows = term.rows();
    let status = rows
        .iter()
        .position(|r| r.contains("bash: sleep 2 · ") && r.ends_with("esc to interrupt"))
        .unwrap_or_else(|| panic!("{rows:#?}"));
    assert_eq!(rows[status + 1], "> list the fi", "{rows:#?}");
    term.expect("slept");
    term.send("les\r");
    term.expect("listed");
    let last = server.last_user_message();
    assert_eq!(last, "list the files");
    term.send("\x04");
    term.mm.expect(Eof).unwrap();
}

/// Ctrl-L while a turn runs clears the screen at once (not when the turn ends), and the status
/// line is drawn again at the top; the turn goes on.
#[mm_testkit::test]
fn ctrl_l_during_a_turn_clears_the_screen_at_once() {
    let (server, url) = Server::start(vec![
        bash_reply("call_1", "sleep 2"),
        answer_with_usage("slept"),
    ]);
    let home = tempfile::tempdir().unwrap();
    let mut term = Term::spawn(home.path(), &url, &["--yolo"], 60, 30);
    term.expect("> ");
    term.send_line("wait");
    term.expect("bash: sleep 2 · ");
    term.expect("esc to interrupt");
    term.send("\x0c");
    term.expect("\x1b[H\x1b[2J");
    term.expect("esc to interrupt");
    let rows = term.rows();
    assert_eq!(rows.len(), 1, "{rows:#?}");
    assert!(rows[0].contains(" bash: sleep 2 · "), "{rows:#?}");
    term.expect("slept");
    term.expect("> ");
    assert_eq!(term.rows()[0], "slept", "{:#?}", term.rows());
    server.assert_valid();
    term.send("\x04");
    term.mm.expect(Eof).unwrap();
}

#[mm_testkit::test]
fn a_routers_models_show_their_status_and_a_model_loading_is_the_status_line() {
    let (server, url) = Server::start(vec![answer_with_usage("up")]);
    // A llama.cpp router (its README, "Using multiple models"): the named model still loading.
    server.server.route(
        "GET /v1/models",
        vec![Reply::json(json!({"object": "list", "data": [
            {"id": "qwen3-8b", "object": "model", "owned_by": "llamacpp",
             "status": {"value": "loading", "args": ["llama-server", "-c", "32768"]}},
            {"id": "gemma-3-4b", "object": "model", "owned_by": "llamacpp",
             "status": {"value": "unloaded"}},
        ]}))],
    );
    let home = tempfile::tempdir().unwrap();
    let mut mm = spawn_mm(home.path(), &url, &["--yolo", "--model", "qwen3-8b"]);
    mm.get_process_mut().set_window_size(120, 24).unwrap();
    mm.expect("> ").unwrap();
    mm.send_line("/model").unwrap();
    mm.expect("model           qwen3-8b (loading)").unwrap();
    mm.expect("also served     gemma-3-4b (not loaded)")
        .unwrap();
    mm.expect("> ").unwrap();
    mm.send_line("hello").unwrap();
    mm.expect(Regex(
        r"\r[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] the model server is loading qwen3-8b · \d+s · esc to interrupt",
    ))
    .unwrap();
    mm.expect("up").unwrap();
    mm.expect("> ").unwrap();
    server.assert_valid();
    mm.send("\x04").unwrap();
    mm.expect(Eof).unwrap();
}

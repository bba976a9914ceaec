//! The status line while a turn runs, and Esc, in the real `mm` binary in a pseudo-terminal at
//! 120 and 60 columns, against the fake model server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mm_testkit as common;

use common::pty::{PtyServer as Server, answer_with_usage, bash_reply, spawn_mm};
use expectrl::{Eof, Expect, Regex};

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

#[test]
fn the_status_line_at_120_columns() {
    a_quiet_command_shows_the_status_line_and_esc_stops_it(120, "sleep 30", "bash: sleep 30");
}

#[test]
fn the_status_line_at_60_columns_is_cut_to_fit() {
    a_quiet_command_shows_the_status_line_and_esc_stops_it(
        60,
        "sleep 30 # long enough a comment to be cut",
        "bash: sleep 30 # long enough a c…",
    );
}

//! `/undo` in the real terminal: its lines, exact, at 120 and at 60 columns.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]
// pseudo-terminals are Unix's (docs/platforms.md)
#![cfg(unix)]

use mm_testkit as common;

use common::pty::{PtyServer as Server, answer_with_usage, call_reply, spawn_mm};
use expectrl::{Eof, Expect};
use serde_json::json;

fn undo_at(columns: u16) {
    let (server, url) = Server::start(vec![
        call_reply(
            "c1",
            "write_file",
            json!({"path": "a.txt", "content": "two\n"}),
        ),
        answer_with_usage("written"),
    ]);
    let home = tempfile::tempdir_in(common::target_tmpdir()).unwrap();
    std::fs::write(home.path().join("a.txt"), "one\n").unwrap();
    let mut mm = spawn_mm(home.path(), &url, &["--yolo"]);
    mm.get_process_mut().set_window_size(columns, 24).unwrap();
    mm.expect("> ").unwrap();
    mm.send_line("write it").unwrap();
    mm.expect("written").unwrap();
    mm.expect("> ").unwrap();
    assert_eq!(
        std::fs::read_to_string(home.path().join("a.txt")).unwrap(),
        "two\n"
    );
    mm.send_line("/undo").unwrap();
    mm.expect("\r\n↩ turn 1 undone: 1 restored, 0 not restored\r\n  restored a.txt\r\n")
        .unwrap();
    mm.expect("> ").unwrap();
    assert_eq!(
        std::fs::read_to_string(home.path().join("a.txt")).unwrap(),
        "one\n"
    );
    mm.send_line("/undo").unwrap();
    mm.expect("\r\n↩ nothing to undo: no turn of this session is left to undo\r\n")
        .unwrap();
    mm.expect("> ").unwrap();
    mm.send("\x04").unwrap();
    mm.expect(Eof).unwrap();
    server.assert_valid();
}

#[mm_testkit::test]
fn undo_says_what_it_restored_at_120_columns() {
    undo_at(120);
}

#[mm_testkit::test]
fn undo_says_what_it_restored_at_60_columns() {
    undo_at(60);
}

//! The real `mm` binary in a pseudo-terminal, against the fake model server (which also checks
//! the history invariants on every request): a turn with a tool call, the permission prompt
//! answered each way, Ctrl-C during a slow stream, `/new`, the local commands, leaving.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// pseudo-terminals are Unix's (docs/platforms.md)
#![cfg(unix)]

use mm_testkit as common;

use std::time::Duration;

use common::pty::{PtyServer as Server, answer_with_usage, bash_reply, spawn_mm};
use common::{Chunk, Reply};
use expectrl::session::OsSession;
use expectrl::{Eof, Expect, Regex, Session};
use serde_json::{Value, json};

/// Many words, slowly: cancelled long before the end.
fn slow_reply() -> Reply {
    let mut chunks: Vec<Chunk> = (0..200).map(|i| Chunk::text(format!("word{i} "))).collect();
    chunks.push(Chunk::finish("stop"));
    chunks.push(Chunk::Done);
    Reply::chunks(chunks, Duration::from_millis(100))
}

/// `mm` in a pseudo-terminal, in a fresh home and folder, talking to `url`.
fn user_messages(requests: &[Value]) -> Vec<String> {
    requests
        .last()
        .and_then(|r| r["messages"].as_array())
        .map(|m| {
            m.iter()
                .filter(|m| m["role"] == "user")
                .map(|m| m["content"].as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[mm_testkit::test]
fn a_turn_with_a_tool_call_then_leave() {
    let (server, url) = Server::start(vec![
        bash_reply("c1", "echo hello-from-bash"),
        answer_with_usage("All done."),
    ]);
    let home = tempfile::tempdir().unwrap();
    let mut mm = spawn_mm(home.path(), &url, &["--yolo"]);
    mm.expect("mm v").unwrap();
    mm.expect("> ").unwrap();
    mm.send_line("say hello").unwrap();
    mm.expect("$ bash: echo hello-from-bash").unwrap();
    mm.expect("hello-from-bash").unwrap();
    mm.expect("All done.").unwrap();
    // The recap: this turn's tokens, the context, the time.
    mm.expect("2.2k in / 54 out").unwrap();
    mm.expect("> ").unwrap();
    mm.send("\x04").unwrap();
    mm.expect(Eof).unwrap();
    assert_eq!(server.requests().len(), 2);
    server.assert_valid();
    // The history was written.
    let history = std::fs::read_to_string(home.path().join("state/mm/history")).unwrap();
    assert!(history.contains("say hello"), "{history}");
}

#[mm_testkit::test]
fn permission_prompt_answered_each_way() {
    let (server, url) = Server::start(vec![
        bash_reply("c1", "echo one"),
        answer_with_usage("first"),
        bash_reply("c2", "echo two"),
        answer_with_usage("second"),
        bash_reply("c3", "echo three"),
        answer_with_usage("third"),
        bash_reply("c4", "echo four"),
        answer_with_usage("fourth"),
        bash_reply("c5", "echo five"),
        answer_with_usage("fifth"),
    ]);
    let home = tempfile::tempdir().unwrap();
    let mut mm = spawn_mm(home.path(), &url, &["--no-yolo"]);
    mm.expect("> ").unwrap();

    mm.send_line("one").unwrap();
    mm.expect(
        "Allow bash: echo one?  [y]es  [a]lways allow read-only \"echo …\"  [n]o  [t]ell why  ne[v]er this command",
    )
    .unwrap();
    mm.send("y").unwrap();
    mm.expect(" yes").unwrap();
    mm.expect("first").unwrap();
    mm.expect("> ").unwrap();

    mm.send_line("two").unwrap();
    mm.expect("Allow bash: echo two?").unwrap();
    mm.send("n").unwrap();
    mm.expect(" no").unwrap();
    mm.expect("[command rejected by the user]").unwrap();
    mm.expect("second").unwrap();
    mm.expect("> ").unwrap();

    mm.send_line("three").unwrap();
    mm.expect("Allow bash: echo three?").unwrap();
    mm.send("a").unwrap();
    mm.expect(" always").unwrap();
    mm.expect("third").unwrap();
    mm.expect("> ").unwrap();

    // Allowed always: no question this time.
    mm.send_line("four").unwrap();
    mm.expect("$ bash: echo four").unwrap();
    mm.expect("fourth").unwrap();
    mm.expect("> ").unwrap();
    mm.send_line("/quit").unwrap();
    mm.expect(Eof).unwrap();

    let tool_results: Vec<String> = server
        .requests()
        .iter()
        .flat_map(|r| r["messages"].as_array().cloned().unwrap_or_default())
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or("").to_string())
        .collect();
    assert!(
        tool_results
            .iter()
            .any(|t| t.contains("[command rejected by the user]"))
    );
    assert!(tool_results.iter().any(|t| t.contains("four")));
    server.assert_valid();
}

#[mm_testkit::test]
fn permission_never_rejects_the_same_command_later_without_asking() {
    let (server, url) = Server::start(vec![
        bash_reply("c1", "echo one"),
        answer_with_usage("first"),
        bash_reply("c2", "echo one"),
        answer_with_usage("second"),
    ]);
    let home = tempfile::tempdir().unwrap();
    let mut mm = spawn_mm(home.path(), &url, &["--no-yolo"]);
    mm.expect("> ").unwrap();
    mm.send_line("one").unwrap();
    mm.expect("Allow bash: echo one?").unwrap();
    mm.send("v").unwrap();
    mm.expect(" never").unwrap();
    mm.expect("first").unwrap();
    mm.expect("> ").unwrap();
    mm.send_line("two").unwrap();
    mm.expect("$ bash: echo one").unwrap();
    mm.expect("[command rejected by the user]").unwrap();
    mm.expect("second").unwrap();
    mm.expect("> ").unwrap();
    mm.send("\x04").unwrap();
    mm.expect(Eof).unwrap();
    assert_eq!(server.requests().len(), 4);
    server.assert_valid();
}

#[mm_testkit::test]
fn ctrl_c_cancels_a_slow_stream_and_the_prompt_comes_back() {
    let (server, url) = Server::start(vec![slow_reply(), answer_with_usage("after the cancel")]);
    let home = tempfile::tempdir().unwrap();
    let mut mm = spawn_mm(home.path(), &url, &["--yolo"]);
    mm.expect("> ").unwrap();
    mm.send_line("talk slowly").unwrap();
    mm.expect("word2 ").unwrap();
    mm.send("\x03").unwrap();
    mm.expect("cancelled").unwrap();
    mm.expect("> ").unwrap();
    mm.send_line("again").unwrap();
    mm.expect("after the cancel").unwrap();
    mm.expect("> ").unwrap();
    // The cancelled turn's text stayed in the history.
    let users = user_messages(&server.requests());
    assert_eq!(users, vec!["talk slowly".to_string(), "again".to_string()]);
    server.assert_valid();
    // Twice Ctrl-C on an empty line leaves.
    mm.send("\x03").unwrap();
    mm.expect("Ctrl-C again").unwrap();
    // The prompt is drawn once the line editor is back in raw mode: a Ctrl-C before that would
    // be a signal, not a key.
    mm.expect("> ").unwrap();
    mm.send("\x03").unwrap();
    mm.expect(Eof).unwrap();
}

#[mm_testkit::test]
fn new_forgets_the_conversation() {
    let (server, url) = Server::start(vec![answer_with_usage("one"), answer_with_usage("two")]);
    let home = tempfile::tempdir().unwrap();
    let mut mm = spawn_mm(home.path(), &url, &["--yolo"]);
    mm.expect("> ").unwrap();
    mm.send_line("first question").unwrap();
    mm.expect("one").unwrap();
    mm.expect("> ").unwrap();
    mm.send_line("/new").unwrap();
    mm.expect("🆕 New session: 2 message(s) forgotten.")
        .unwrap();
    mm.expect("> ").unwrap();
    mm.send_line("second question").unwrap();
    mm.expect("two").unwrap();
    mm.expect("> ").unwrap();
    mm.send("\x04").unwrap();
    mm.expect(Eof).unwrap();
    assert_eq!(
        user_messages(&server.requests()),
        vec!["second question".to_string()]
    );
    server.assert_valid();
}

#[mm_testkit::test]
fn local_commands_answer_without_the_model() {
    let (server, url) = Server::start(vec![]);
    let home = tempfile::tempdir().unwrap();
    let mut mm = spawn_mm(home.path(), &url, &["--yolo"]);
    mm.expect("> ").unwrap();
    mm.send_line("/help").unwrap();
    mm.expect("/compact").unwrap();
    mm.expect("> ").unwrap();
    mm.send_line("/model").unwrap();
    mm.expect("fake-model").unwrap();
    mm.expect("context window  32k").unwrap();
    // Sessions are on by default: this one is saved from the start, marked in the list.
    mm.send_line("/sessions").unwrap();
    mm.expect(Regex(r"\* \d{8}-\d{6}-[0-9a-f]{8} ")).unwrap();
    mm.expect("resume one with /load ID").unwrap();
    // A wrong id: no path, the sessions saved last to pick from.
    mm.send_line("/load nosuch").unwrap();
    mm.expect("/load: no saved session nosuch in this folder; the ones saved last:")
        .unwrap();
    mm.expect(Regex(r"  \d{8}-\d{6}-[0-9a-f]{8} ")).unwrap();
    mm.expect("/load ID reopens one").unwrap();
    mm.send_line("/bogus").unwrap();
    mm.expect("unknown command /bogus").unwrap();
    mm.send_line("/quit").unwrap();
    mm.expect(Eof).unwrap();
    assert_eq!(server.requests().len(), 0);
}

/// The prompt drawn empty, the cursor after it.
const EMPTY_PROMPT: &str = "\x1b[J> \r\x1b[2C";

/// What mm printed from now until `needle` (which is consumed too).
fn until(mm: &mut OsSession, needle: &str) -> String {
    let found = mm.expect(needle).unwrap();
    String::from_utf8_lossy(found.before()).into_owned()
}

/// One call of `tool` with these arguments.
fn call_reply(id: &str, tool: &str, args: Value) -> Reply {
    Reply::chunks(
        vec![
            Chunk::ToolCall {
                index: 0,
                id: Some(id.to_string()),
                name: Some(tool.to_string()),
                arguments: args.to_string(),
            },
            Chunk::finish("tool_calls"),
            Chunk::Done,
        ],
        Duration::ZERO,
    )
}

#[mm_testkit::test]
fn the_change_is_shown_before_it_is_allowed() {
    let long: String = (1..=30).map(|i| format!("L{i}\n")).collect();
    let (server, url) = Server::start(vec![
        call_reply(
            "c1",
            "write_file",
            json!({"path": "out.txt", "content": "hello\nworld\n"}),
        ),
        answer_with_usage("written"),
        call_reply(
            "c2",
            "edit_file",
            json!({"path": "out.txt", "old_text": "world\n", "new_text": long}),
        ),
        answer_with_usage("edited"),
    ]);
    let home = tempfile::tempdir().unwrap();
    let mut mm = spawn_mm(home.path(), &url, &["--no-yolo"]);
    mm.expect("> ").unwrap();
    mm.send_line("write it").unwrap();
    let shown = until(
        &mut mm,
        "Allow write_file: out.txt?  [y]es  [a]lways for write_file this session  [n]o  [t]ell why  ne[v]er",
    );
    // The new file's lines, above the question.
    assert!(shown.contains("new file "), "{shown}");
    assert!(shown.contains("  +hello\r\n  +world\r\n"), "{shown}");
    mm.send("y").unwrap();
    let after = until(&mut mm, "written");
    assert!(after.contains("wrote 12 bytes to out.txt"), "{after}");
    // Not shown a second time once allowed.
    assert!(!after.contains("+hello"), "{after}");
    mm.expect("> ").unwrap();

    mm.send_line("edit it").unwrap();
    let shown = until(&mut mm, "Allow edit_file: out.txt?");
    assert!(shown.contains("  -world\r\n  +L1\r\n"), "{shown}");
    // Cut with a count: 20 lines of the diff, then what was left out.
    assert!(shown.contains("  +L17\r\n  … 13 more lines\r\n"), "{shown}");
    assert!(!shown.contains("+L18"), "{shown}");
    mm.send("n").unwrap();
    mm.expect("[edit_file rejected by the user]").unwrap();
    mm.expect("edited").unwrap();
    mm.expect("> ").unwrap();
    mm.send("\x04").unwrap();
    mm.expect(Eof).unwrap();
    assert_eq!(
        std::fs::read_to_string(common::pty::project(home.path()).join("out.txt")).unwrap(),
        "hello\nworld\n"
    );
    server.assert_valid();
}

#[mm_testkit::test]
fn a_reopened_session_says_what_it_opened() {
    let (server, url) = Server::start(vec![answer_with_usage("first answer")]);
    let home = tempfile::tempdir().unwrap();
    let sessions = ["-c", "sessions.enabled=true", "--yolo"];
    let mut mm = spawn_mm(home.path(), &url, &sessions);
    mm.expect("> ").unwrap();
    mm.send_line("first question").unwrap();
    mm.expect("first answer").unwrap();
    mm.expect("> ").unwrap();
    mm.send("\x04").unwrap();
    mm.expect(Eof).unwrap();

    // --continue: the session updated last, where it stopped. A window where its line fits
    // (the banner wraps at word boundaries).
    let command = common::pty::mm_command(
        home.path(),
        &common::pty::project(home.path()),
        &url,
        &[&sessions[..], &["--continue"]].concat(),
    );
    let mut mm = common::pty::spawn_sized(&command, 200);
    mm.expect(expectrl::Regex(
        r"session \d{8}-\d{6}-[0-9a-f]{8} · saved \d+s ago · 2 message\(s\) · first prompt: first question",
    ))
    .unwrap();
    mm.expect("  > first question\r\n  first answer\r\n")
        .unwrap();
    mm.expect("/help for commands · Ctrl-D to leave").unwrap();
    mm.expect("> ").unwrap();
    // After /new, where the previous conversation went.
    mm.send_line("/new").unwrap();
    mm.expect("🆕 New session: 2 message(s) forgotten.")
        .unwrap();
    let saved = mm
        .expect(expectrl::Regex(
            r"previous conversation saved: /load (\d{8}-\d{6}-[0-9a-f]{8})",
        ))
        .unwrap();
    let archived = String::from_utf8_lossy(saved.get(1).unwrap()).into_owned();
    mm.expect("> ").unwrap();
    // Tab completes a session id after /load.
    mm.send(format!("/load {}\t", &archived[..archived.len() - 2]))
        .unwrap();
    mm.expect(format!("> /load {archived}").as_str()).unwrap();
    mm.send("\r").unwrap();
    mm.expect(format!("session {archived} · saved ").as_str())
        .unwrap();
    mm.expect("2 message(s) · first prompt: first question")
        .unwrap();
    mm.expect("  > first question\r\n  first answer\r\n")
        .unwrap();
    mm.expect("> ").unwrap();
    mm.send("\x04").unwrap();
    mm.expect(Eof).unwrap();
    server.assert_valid();
}

#[mm_testkit::test]
fn each_failure_is_one_line() {
    let (server, url) = Server::start(vec![
        Reply::error(
            500,
            json!({"error": {"code": 500, "message": "the model crashed", "type": "server_error"}}),
        ),
        bash_reply("c1", "echo same"),
        bash_reply("c2", "echo same"),
        bash_reply("c3", "echo same"),
    ]);
    let home = tempfile::tempdir().unwrap();
    let mut mm = spawn_mm(home.path(), &url, &["--yolo", "-c", "loop.maxRepeats=1"]);
    mm.expect("> ").unwrap();
    mm.send_line("hi").unwrap();
    mm.expect("> hi").unwrap();
    let turn = until(&mut mm, EMPTY_PROMPT);
    assert_eq!(
        turn.matches("model server answered 500: the model crashed")
            .count(),
        1,
        "{turn}"
    );
    mm.send_line("loop").unwrap();
    mm.expect("> loop").unwrap();
    let turn = until(&mut mm, EMPTY_PROMPT);
    assert_eq!(
        turn.matches("[stopped: the model kept calling bash with the same arguments]")
            .count(),
        1,
        "{turn}"
    );
    mm.send("\x04").unwrap();
    mm.expect(Eof).unwrap();
    server.assert_valid();
}

#[mm_testkit::test]
fn the_banner_names_the_model_once_and_says_how_to_leave() {
    let (server, url) = Server::start(vec![]);
    let home = tempfile::tempdir().unwrap();
    let mut cmd = common::pty::mm_command(home.path(), home.path(), &url, &[]);
    cmd.env("MM_MODEL", "fake-model");
    let mut mm = Session::spawn(cmd).unwrap();
    mm.set_expect_timeout(Some(Duration::from_secs(20)));
    mm.expect(format!("model fake-model at {url}\r\n").as_str())
        .unwrap();
    mm.expect("/help for commands · Ctrl-D to leave\r\n")
        .unwrap();
    // Detection adds what the banner did not say.
    let later = until(&mut mm, "context window 32k\r\n");
    assert!(!later.contains("model fake-model"), "{later}");
    mm.send_line("/quit").unwrap();
    let rest = String::from_utf8_lossy(mm.expect(Eof).unwrap().before()).into_owned();
    assert!(!rest.contains("model fake-model"), "{rest}");
    assert_eq!(server.requests().len(), 0);
}

#[mm_testkit::test]
fn a_missing_file_gets_a_notice_an_unknown_skill_is_plain_text_and_the_prompt_still_goes() {
    let (server, url) = Server::start(vec![answer_with_usage("fine")]);
    let home = tempfile::tempdir().unwrap();
    let mut mm = spawn_mm(home.path(), &url, &["--yolo"]);
    mm.expect("> ").unwrap();
    mm.send_line("read @missing.txt with $nosuch; echo tick $i")
        .unwrap();
    mm.expect("@missing.txt: no such file or folder, not attached\r\n")
        .unwrap();
    let between = until(&mut mm, "fine");
    assert!(!between.contains("no skill"), "{between}");
    mm.expect("> ").unwrap();
    mm.send("\x04").unwrap();
    mm.expect(Eof).unwrap();
    assert_eq!(
        user_messages(&server.requests()),
        vec!["read @missing.txt with $nosuch; echo tick $i".to_string()]
    );
    server.assert_valid();
}

#[mm_testkit::test]
fn ctrl_c_on_a_line_with_text_clears_it_and_leaving_takes_two_on_an_empty_one() {
    let (_server, url) = Server::start(vec![]);
    let home = tempfile::tempdir().unwrap();
    let mut mm = spawn_mm(home.path(), &url, &["--yolo"]);
    mm.expect("context window 32k").unwrap();
    mm.send("some text").unwrap();
    mm.expect("> some text").unwrap();
    mm.send("\x03").unwrap();
    // The line is dropped, mm stays, and this Ctrl-C does not count toward leaving.
    let after = until(&mut mm, EMPTY_PROMPT);
    assert!(after.contains("^C"), "{after}");
    assert!(!after.contains("Ctrl-C again"), "{after}");
    mm.send("\x03").unwrap();
    mm.expect("(Ctrl-C again or Ctrl-D to leave)").unwrap();
    mm.expect("> ").unwrap();
    mm.send("\x03").unwrap();
    mm.expect(Eof).unwrap();
}

#[mm_testkit::test]
fn long_answers_wrap_at_word_boundaries_and_thoughts_are_marked() {
    let answer = "The build failed because the linker could not find libssl; install it and retry.";
    let (server, url) = Server::start(vec![
        Reply::text(answer).with_reasoning("The user wants the build fixed."),
    ]);
    let home = tempfile::tempdir().unwrap();
    let mut mm = spawn_mm(home.path(), &url, &["--yolo"]);
    mm.get_process_mut().set_window_size(40, 24).unwrap();
    mm.expect("> ").unwrap();
    mm.send_line("why").unwrap();
    // Without colour the reasoning reads apart from the answer.
    mm.expect("│ The user wants the build fixed.\r\n").unwrap();
    mm.expect(
        "The build failed because the linker\r\ncould not find libssl; install it and\r\nretry.\r\n",
    )
    .unwrap();
    mm.expect("> ").unwrap();
    mm.send("\x04").unwrap();
    mm.expect(Eof).unwrap();
    server.assert_valid();
}

#[mm_testkit::test]
fn the_mode_and_the_model_switch_from_the_prompt() {
    let (server, url) = Server::start(vec![
        bash_reply("c1", "echo hi > out.txt"),
        answer_with_usage("refused, fine"),
        answer_with_usage("from b"),
    ]);
    server.server.route(
        "GET /v1/models",
        vec![Reply::json(json!({"object": "list", "data": [
            {"id": "model-a", "object": "model", "owned_by": "llamacpp"},
            {"id": "model-b", "object": "model", "owned_by": "llamacpp"},
        ]}))],
    );
    let home = tempfile::tempdir().unwrap();
    let mut mm = spawn_mm(home.path(), &url, &["--yolo"]);
    mm.expect("mode yolo").unwrap();
    mm.expect("> ").unwrap();
    mm.send_line("/mode").unwrap();
    mm.expect("● yolo").unwrap();
    mm.send_line("/mode read-only").unwrap();
    mm.expect("mode read-only: Read and answer only").unwrap();
    mm.send_line("write it").unwrap();
    // The command runs inside the read-only fence where the kernel has one, and its write
    // fails; without one it is refused.
    if mm_tools::sandbox::landlock_abi() > 0 {
        mm.expect("out.txt: Permission denied").unwrap();
    } else {
        mm.expect("[bash refused: read-only mode]").unwrap();
    }
    mm.expect("refused, fine").unwrap();
    // The end-of-turn line says the mode.
    mm.expect("mode read-only").unwrap();
    mm.send_line("/model").unwrap();
    mm.expect("model           model-a").unwrap();
    mm.expect("also served     model-b").unwrap();
    mm.send_line("/model model-z").unwrap();
    mm.expect("no model model-z: the server has model-a, model-b")
        .unwrap();
    mm.send_line("/model model-b").unwrap();
    mm.expect("model model-b from the next turn").unwrap();
    mm.send_line("again").unwrap();
    mm.expect("from b").unwrap();
    mm.send_line("/quit").unwrap();
    mm.expect(Eof).unwrap();
    let requests = server.requests();
    let models: Vec<&str> = requests
        .iter()
        .map(|r| r["model"].as_str().unwrap())
        .collect();
    assert_eq!(models, ["model-a", "model-a", "model-b"]);
    assert!(
        !common::pty::project(home.path()).join("out.txt").exists(),
        "read-only ran nothing"
    );
    server.assert_valid();
}

/// A `task` call (docs/terminal.md, "Tasks"): its child's commands show under the call, its
/// question is labelled with the task, a summary line ends it; its answer is the call's result.
#[mm_testkit::test]
fn a_task_shows_its_child_under_the_call_and_labels_its_question() {
    let (server, url) = Server::start(vec![
        Reply::tool_call(
            "task",
            json!({"description": "find x", "prompt": "look for x"}),
        ),
        bash_reply("c1", "echo from-the-child"),
        answer_with_usage("x is in a.txt"),
        answer_with_usage("The task says: a.txt."),
    ]);
    let home = tempfile::tempdir().unwrap();
    let mut mm = spawn_mm(home.path(), &url, &["--no-yolo"]);
    mm.expect("> ").unwrap();
    mm.send_line("where is x?").unwrap();
    mm.expect("task: find x").unwrap();
    // The child's step, in the call's live box (erased when the call ends: the summary stays).
    mm.expect("│ bash: echo from-the-child").unwrap();
    mm.expect("Allow task: find x › bash: echo from-the-child?")
        .unwrap();
    mm.send("y").unwrap();
    mm.expect(" yes").unwrap();
    mm.expect("└ task answered: 2 model call(s), 1 tool call(s)")
        .unwrap();
    mm.expect("The task says: a.txt.").unwrap();
    mm.expect("> ").unwrap();
    mm.send_line("/quit").unwrap();
    mm.expect(Eof).unwrap();
    let requests = server.requests();
    let last = requests.last().unwrap()["messages"].as_array().unwrap();
    assert_eq!(
        last.len(),
        4,
        "the parent's history: no turn of the child's"
    );
    assert_eq!(last[3]["content"], "x is in a.txt");
    server.assert_valid();
}

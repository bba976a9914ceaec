//! Session files on disk: format, ids, atomic saves, load errors, listings, and a writer killed
//! at random moments.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]
// Unix permissions, signals and process groups throughout (docs/platforms.md)
#![cfg(unix)]

use std::fs;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

use chrono::{Local, TimeZone};
use mm_core::event::{PermissionMode, Plan, PlanStatus, PlanStep, Usage};
use mm_core::history::{Message, ToolCall};
use mm_core::session::{self, FileUsage, SessionFile, SessionSummary};
use pretty_assertions::assert_eq;
use serde_json::json;

const EXAMPLE: &str = r#"{
  "version": 1,
  "id": "20260916-101530-4f2a9c1e",
  "cwd": "/home/u/proj",
  "createdAt": "2026-09-16T10:15:30+02:00",
  "updatedAt": "2026-09-16T10:21:02+02:00",
  "title": "list the files",
  "mode": "read-only",
  "model": "qwen2.5-coder:7b",
  "usage": {"inputTokens": 0, "outputTokens": 0, "totalTokens": 0},
  "plan": null,
  "messages": [
    {"role": "system", "content": "…"},
    {"role": "user", "content": "list the files"},
    {"role": "assistant", "content": "", "toolCalls": [{"id": "x1", "ref": "call_1", "name": "bash", "arguments": "{\"command\":\"ls\"}"}]},
    {"role": "tool", "toolCallId": "x1", "content": "Cargo.toml\nsrc\n"},
    {"role": "user", "content": "…summary…", "compact": true}
  ]
}"#;

fn example() -> SessionFile {
    SessionFile {
        version: 1,
        id: "20260916-101530-4f2a9c1e".into(),
        cwd: PathBuf::from("/home/u/proj"),
        created_at: "2026-09-16T10:15:30+02:00".into(),
        updated_at: "2026-09-16T10:21:02+02:00".into(),
        title: Some("list the files".into()),
        mode: Some(PermissionMode::ReadOnly),
        model: "qwen2.5-coder:7b".into(),
        usage: FileUsage::default(),
        plan: None,
        messages: vec![
            Message::system("…"),
            Message::user("list the files"),
            Message::assistant(
                "",
                vec![ToolCall {
                    id: "x1".into(),
                    ref_: "call_1".into(),
                    name: "bash".into(),
                    arguments: r#"{"command":"ls"}"#.into(),
                }],
            ),
            Message::tool("x1", "Cargo.toml\nsrc\n", false),
            Message::summary("…summary…"),
        ],
        children: Vec::new(),
    }
}

fn sessions_dir(root: &Path) -> PathBuf {
    root.join(".mm/sessions")
}

#[mm_testkit::test]
fn the_example_of_the_spec_has_exactly_this_shape() {
    let expected: serde_json::Value = serde_json::from_str(EXAMPLE).unwrap();
    assert_eq!(serde_json::to_value(example()).unwrap(), expected);

    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("20260916-101530-4f2a9c1e.json"), EXAMPLE).unwrap();
    let loaded = session::load(tmp.path(), "20260916-101530-4f2a9c1e").unwrap();
    assert_eq!(loaded, example());
}

#[mm_testkit::test]
fn round_trip_keeps_everything() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = sessions_dir(tmp.path());
    let mut file = example();
    let usage = Usage {
        input_tokens: 1200,
        output_tokens: 34,
        thought_tokens: Some(7),
        cached_read_tokens: None,
    };
    file.usage = FileUsage::from(&usage);
    file.plan = Some(Plan {
        title: "Fix it".into(),
        steps: vec![PlanStep {
            content: "read".into(),
            status: PlanStatus::InProgress,
            note: None,
        }],
    });
    file.messages.push(Message::tool("x2", "boom", true));

    let path = session::save(&dir, &file).unwrap();
    assert_eq!(path, dir.join("20260916-101530-4f2a9c1e.json"));
    let loaded = session::load(&dir, &file.id).unwrap();
    assert_eq!(loaded, file);
    assert_eq!(Usage::from(&loaded.usage), usage);

    let raw: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    assert_eq!(
        raw["usage"],
        json!({"inputTokens": 1200, "outputTokens": 34, "totalTokens": 1234, "thoughtTokens": 7})
    );
    assert_eq!(raw["plan"]["steps"][0]["status"], json!("in_progress"));
}

#[mm_testkit::test]
fn saving_again_replaces_the_file_and_leaves_no_temporary_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = sessions_dir(tmp.path());
    let mut file = example();
    session::save(&dir, &file).unwrap();
    file.messages.push(Message::user("more"));
    session::save(&dir, &file).unwrap();
    assert_eq!(session::load(&dir, &file.id).unwrap(), file);
    let names: Vec<String> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, vec!["20260916-101530-4f2a9c1e.json".to_string()]);
}

#[mm_testkit::test]
fn folder_is_0700_and_file_0600() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = sessions_dir(tmp.path());
    let path = session::save(&dir, &example()).unwrap();
    let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(mode(&path), 0o600);
}

#[mm_testkit::test]
fn the_first_save_ignores_the_session_folder_in_git() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = sessions_dir(tmp.path());
    session::save(&dir, &example()).unwrap();
    let ignore = tmp.path().join(".mm/.gitignore");
    let expected = "# mm's session files: your conversations, not the project's.\nsessions/\n";
    assert_eq!(fs::read_to_string(&ignore).unwrap(), expected);
    // Later saves leave it alone: the user may edit it, or remove the line.
    fs::write(&ignore, "# mine\n").unwrap();
    let mut file = example();
    file.id = "20260916-101531-00000000".into();
    session::save(&dir, &file).unwrap();
    assert_eq!(fs::read_to_string(&ignore).unwrap(), "# mine\n");
}

#[mm_testkit::test]
fn a_gitignore_of_the_users_is_never_replaced() {
    let tmp = tempfile::tempdir().unwrap();
    fs::create_dir(tmp.path().join(".mm")).unwrap();
    let ignore = tmp.path().join(".mm/.gitignore");
    fs::write(&ignore, "*.log\n").unwrap();
    session::save(&sessions_dir(tmp.path()), &example()).unwrap();
    assert_eq!(fs::read_to_string(&ignore).unwrap(), "*.log\n");
}

#[mm_testkit::test]
fn a_session_folder_outside_dot_mm_gets_no_gitignore() {
    let tmp = tempfile::tempdir().unwrap();
    session::save(&tmp.path().join("chats"), &example()).unwrap();
    let names: Vec<String> = fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, vec!["chats".to_string()]);
}

#[mm_testkit::test]
fn ids_are_time_then_eight_hex_digits() {
    let now = Local.with_ymd_and_hms(2026, 9, 16, 10, 15, 30).unwrap();
    let a = session::new_id(now);
    let b = session::new_id(now);
    for id in [&a, &b] {
        assert_eq!(id.len(), 24, "{id}");
        assert_eq!(&id[..16], "20260916-101530-", "{id}");
        assert!(
            id[16..]
                .chars()
                .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c)),
            "{id}"
        );
        assert_eq!(session::validate_id(id), Ok(()));
    }
    assert_ne!(a, b, "8 random hex digits should differ");
    assert_eq!(session::timestamp(now).len(), 25);
    assert!(session::timestamp(now).starts_with("2026-09-16T10:15:30"));
}

#[mm_testkit::test]
fn id_validation_table() {
    let longest = "a".repeat(128);
    let too_long = "a".repeat(129);
    let valid = [
        "a",
        "Z",
        "0",
        "20260916-101530-4f2a9c1e",
        "A_b-c",
        "a--__",
        &longest,
    ];
    for id in valid {
        assert_eq!(session::validate_id(id), Ok(()), "{id:?}");
    }
    let invalid = [
        "",
        "../x",
        "/etc/passwd",
        "-a",
        "_a",
        ".hidden",
        "a b",
        "a.json",
        "a/b",
        "a\\b",
        "é",
        "a\n",
        &too_long,
    ];
    for id in invalid {
        assert!(session::validate_id(id).is_err(), "{id:?} accepted");
    }
    assert_eq!(
        session::validate_id("../x").unwrap_err().to_string(),
        r#"invalid session id "../x": expected 1 to 128 letters, digits, '_' or '-', starting with a letter or digit"#
    );
}

#[mm_testkit::test]
fn an_invalid_id_is_refused_before_any_file_is_touched() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = sessions_dir(tmp.path());
    fs::create_dir_all(&dir).unwrap();
    // A file the id would reach if it were used as a path.
    fs::write(tmp.path().join(".mm/x.json"), EXAMPLE).unwrap();
    let err = session::load(&dir, "../x").unwrap_err();
    assert!(matches!(err, session::FileError::InvalidId(_)), "{err}");

    let mut bad = example();
    bad.id = "../escape".into();
    let err = session::save(&dir, &bad).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    assert!(!tmp.path().join(".mm/escape.json").exists());
}

/// Loads `id`, expecting an error; checks the file is byte-for-byte what it was.
fn failed_load(dir: &Path, id: &str, content: Option<&[u8]>) -> String {
    let path = dir.join(format!("{id}.json"));
    if let Some(c) = content {
        fs::write(&path, c).unwrap();
    }
    let err = session::load(dir, id).unwrap_err().to_string();
    match content {
        Some(c) => assert_eq!(fs::read(&path).unwrap(), c, "file changed by a failed load"),
        None => assert!(!path.exists()),
    }
    err
}

#[mm_testkit::test]
fn load_errors_name_the_file_and_the_problem_and_change_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let p = |id: &str| dir.join(format!("{id}.json")).display().to_string();

    let missing = session::load(dir, "missing").unwrap_err();
    assert!(missing.is_not_found());
    assert_eq!(
        failed_load(dir, "missing", None),
        format!("cannot read {}: No such file or directory", p("missing"))
    );
    assert_eq!(
        failed_load(dir, "garbage", Some(b"not json")),
        format!(
            "{} is not a session file: expected ident at line 1 column 2",
            p("garbage")
        )
    );
    assert_eq!(
        failed_load(dir, "torn", Some(&EXAMPLE.as_bytes()[..40])),
        format!(
            "{} is not a session file: EOF while parsing a string at line 3 column 22",
            p("torn")
        )
    );
    assert_eq!(
        failed_load(dir, "fields", Some(br#"{"version": 1}"#)),
        format!(
            "{} is not a session file: missing field `id` at line 1 column 14",
            p("fields")
        )
    );
    let v2 = EXAMPLE.replace(r#""version": 1"#, r#""version": 2"#);
    assert_eq!(
        failed_load(dir, "v2", Some(v2.as_bytes())),
        format!("{} has version 2, this mm reads version 1", p("v2"))
    );
    // Another version with another shape still says which version it is.
    assert_eq!(
        failed_load(dir, "v3", Some(br#"{"version": 3, "turns": []}"#)),
        format!("{} has version 3, this mm reads version 1", p("v3"))
    );
    assert!(!session::load(dir, "v2").unwrap_err().is_not_found());
}

fn file_with(id: &str, updated_at: &str, prompt: &str) -> SessionFile {
    SessionFile {
        id: id.into(),
        updated_at: updated_at.into(),
        messages: vec![
            Message::system("s"),
            Message::summary("an older summary"),
            Message::user(prompt),
            Message::assistant("ok", vec![]),
        ],
        ..example()
    }
}

#[mm_testkit::test]
fn listing_sorts_by_id_and_describes_each_session() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = sessions_dir(tmp.path());
    assert_eq!(session::list(&dir), vec![]);
    assert_eq!(session::latest(&dir), None);

    let long = "word ".repeat(30);
    session::save(
        &dir,
        &file_with(
            "20260916-120000-bbbbbbbb",
            "2026-09-16T12:00:00+02:00",
            &long,
        ),
    )
    .unwrap();
    session::save(
        &dir,
        &file_with(
            "20260916-110000-aaaaaaaa",
            "2026-09-16T11:00:00+02:00",
            "fix\nthe   build",
        ),
    )
    .unwrap();
    // Not sessions: another file, an invalid one, a name that is not an id.
    fs::write(dir.join("notes.txt"), "x").unwrap();
    fs::write(dir.join("broken.json"), "{").unwrap();
    fs::write(dir.join("a.b.json"), EXAMPLE).unwrap();

    let size = |id: &str| fs::metadata(dir.join(format!("{id}.json"))).unwrap().len();
    let expected = vec![
        SessionSummary {
            id: "20260916-110000-aaaaaaaa".into(),
            created_at: "2026-09-16T10:15:30+02:00".into(),
            updated_at: "2026-09-16T11:00:00+02:00".into(),
            first_prompt: Some("fix the build".into()),
            messages: 3,
            size: size("20260916-110000-aaaaaaaa"),
        },
        SessionSummary {
            id: "20260916-120000-bbbbbbbb".into(),
            created_at: "2026-09-16T10:15:30+02:00".into(),
            updated_at: "2026-09-16T12:00:00+02:00".into(),
            first_prompt: Some(format!("{}…", "word ".repeat(12).trim_end())),
            messages: 3,
            size: size("20260916-120000-bbbbbbbb"),
        },
    ];
    assert_eq!(session::list(&dir), expected);
    assert_eq!(
        expected[0].to_string(),
        "20260916-110000-aaaaaaaa  3 message(s)  fix the build"
    );
}

#[mm_testkit::test]
fn latest_compares_update_instants_not_strings() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // 08:00 UTC, written later in the string order than the next one.
    session::save(dir, &file_with("b", "2026-09-16T10:00:00+02:00", "p")).unwrap();
    // 09:30 UTC: the latest.
    session::save(dir, &file_with("a", "2026-09-16T09:30:00+00:00", "p")).unwrap();
    session::save(dir, &file_with("c", "2026-09-15T23:00:00+02:00", "p")).unwrap();
    assert_eq!(session::latest(dir).unwrap().id, "a");
}

#[mm_testkit::test]
fn latest_breaks_a_tie_within_one_second_by_the_file_written_last() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // Same second; "b" sorts after "a" by id, but "a" was written after it.
    session::save(dir, &file_with("b", "2026-09-16T10:00:00+02:00", "p")).unwrap();
    session::save(dir, &file_with("a", "2026-09-16T10:00:00+02:00", "p")).unwrap();
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
    std::fs::File::options()
        .write(true)
        .open(dir.join("b.json"))
        .unwrap()
        .set_modified(old)
        .unwrap();
    assert_eq!(session::latest(dir).unwrap().id, "a");
}

#[mm_testkit::test]
fn temporary_files_are_ignored_and_old_ones_removed() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    session::save(dir, &file_with("s1", "2026-09-16T10:00:00+02:00", "p")).unwrap();
    let old = dir.join(".s1.json.tmp0badf00d");
    let young = dir.join(".s1.json.tmp12345678");
    fs::write(&old, &EXAMPLE[..30]).unwrap();
    fs::write(&young, &EXAMPLE[..30]).unwrap();
    let two_minutes_ago = SystemTime::now() - Duration::from_secs(120);
    fs::File::options()
        .write(true)
        .open(&old)
        .unwrap()
        .set_modified(two_minutes_ago)
        .unwrap();

    let ids: Vec<String> = session::list(dir).into_iter().map(|s| s.id).collect();
    assert_eq!(ids, vec!["s1".to_string()]);
    assert!(!old.exists(), "an old temporary file is removed");
    assert!(young.exists(), "a young one may be a live writer's");
}

#[mm_testkit::test]
fn an_older_file_has_no_title_and_no_mode_and_an_unknown_mode_reads_as_none() {
    let tmp = tempfile::tempdir().unwrap();
    let older = EXAMPLE
        .replace("  \"title\": \"list the files\",\n", "")
        .replace("  \"mode\": \"read-only\",\n", "");
    assert!(!older.contains("title") && !older.contains("\"mode\""));
    fs::write(tmp.path().join("old.json"), &older).unwrap();
    let file = session::load(tmp.path(), "old").unwrap();
    assert_eq!((file.title, file.mode), (None, None));
    // Written again without them: the older shape, field for field.
    let again: serde_json::Value = serde_json::to_value(SessionFile {
        title: None,
        mode: None,
        ..example()
    })
    .unwrap();
    assert_eq!(
        again,
        serde_json::from_str::<serde_json::Value>(&older).unwrap()
    );

    fs::write(
        tmp.path().join("future.json"),
        EXAMPLE.replace("\"read-only\"", "\"plan-first\""),
    )
    .unwrap();
    assert_eq!(session::load(tmp.path(), "future").unwrap().mode, None);
}

#[mm_testkit::test]
fn a_header_is_read_from_the_start_of_the_file_up_to_the_messages() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // Everything after `"messages":` is garbage: a header that stops there does not see it.
    let cut = EXAMPLE.find("\"messages\"").unwrap() + "\"messages\"".len();
    let mut bytes = EXAMPLE.as_bytes()[..cut].to_vec();
    bytes.extend_from_slice(b": [not json at all, and the file never ends");
    let path = dir.join("s1.json");
    fs::write(&path, &bytes).unwrap();
    assert_eq!(
        session::read_header(&path).unwrap(),
        session::SessionHeader {
            id: "20260916-101530-4f2a9c1e".into(),
            cwd: "/home/u/proj".into(),
            title: Some("list the files".into()),
            updated_at: "2026-09-16T10:21:02+02:00".into(),
        }
    );
    assert!(
        session::load(dir, "s1").is_err(),
        "the whole file is broken"
    );

    // Another field order: the messages first, the header after them.
    let v: serde_json::Value = serde_json::from_str(EXAMPLE).unwrap();
    let mut reordered = serde_json::Map::new();
    reordered.insert("messages".into(), v["messages"].clone());
    for (k, val) in v.as_object().unwrap() {
        if k != "messages" {
            reordered.insert(k.clone(), val.clone());
        }
    }
    let other = dir.join("s2.json");
    fs::write(&other, serde_json::to_string(&reordered).unwrap()).unwrap();
    assert_eq!(
        session::read_header(&other).unwrap().title.as_deref(),
        Some("list the files")
    );

    // What a list skips says which file and why.
    fs::write(dir.join("s3.json"), "{\"version\": 2}").unwrap();
    fs::write(dir.join("s4.json"), "[]").unwrap();
    fs::write(dir.join(".s1.json.tmp12345678"), "{").unwrap();
    let (mut found, mut skipped) = session::headers(dir);
    found.sort_by(|a, b| a.id.cmp(&b.id));
    skipped.sort();
    let ids: Vec<&str> = found.iter().map(|h| h.id.as_str()).collect();
    assert_eq!(ids, ["s1", "s2"], "named after their files");
    assert_eq!(
        skipped,
        [
            format!(
                "{} has version 2, this mm reads version 1",
                dir.join("s3.json").display()
            ),
            format!(
                "{} is not a session file: invalid type: sequence, expected a session file (a JSON object) at line 1 column 1",
                dir.join("s4.json").display()
            ),
        ]
    );
}

const WRITER_DIR_ENV: &str = "MM_TEST_SESSION_WRITER_DIR";
const CRASH_ID: &str = "20260916-101530-c0ffee00";
const READY: &str = "writer: saving";

/// The child process of [`a_writer_killed_at_any_moment_leaves_a_whole_file`]: rewrites the
/// session file in a tight loop, with content that grows and shrinks. Does nothing unless the
/// parent set the variable on the child's command.
#[mm_testkit::test]
#[ignore = "the child process of a_writer_killed_at_any_moment_leaves_a_whole_file"]
// It tells its parent on stdout that it has started saving.
#[allow(clippy::print_stdout)]
fn session_writer_child() {
    let Some(dir) = std::env::var_os(WRITER_DIR_ENV) else {
        return;
    };
    let dir = PathBuf::from(dir);
    let mut file = session::load(&dir, CRASH_ID).unwrap();
    let mut announced = false;
    loop {
        if file.messages.len() > 48 {
            file.messages.truncate(1);
        }
        let n = file.usage.output_tokens;
        file.messages
            .push(Message::user(format!("{n}: {}", "x".repeat(3000))));
        file.usage.output_tokens += 1;
        file.usage.total_tokens = file.usage.input_tokens + file.usage.output_tokens;
        session::save(&dir, &file).unwrap();
        if !announced {
            println!("{READY}");
            announced = true;
        }
    }
}

/// splitmix64: a deterministic sequence of kill moments.
struct Prng(u64);

impl Prng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

#[mm_testkit::test]
fn a_writer_killed_at_any_moment_leaves_a_whole_file() {
    // 200 kills in all, by four workers in four folders at once: the same checks in a quarter of
    // the wall time (each kill waits for a process start).
    let workers: Vec<_> = (0..4u64)
        .map(|w| std::thread::spawn(move || kill_writers(w, 50)))
        .collect();
    for w in workers {
        w.join().unwrap();
    }
}

/// Starts a writer `kills` times and kills it at a moment drawn from the worker's sequence;
/// after each kill the file must load and hold more saves than before.
fn kill_writers(worker: u64, kills: usize) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = sessions_dir(tmp.path());
    let mut first = example();
    first.id = CRASH_ID.into();
    session::save(&dir, &first).unwrap();

    let exe = std::env::current_exe().unwrap();
    let mut rng = Prng(0x6d6d_2d73_6573_7321 ^ worker);
    let mut previous_saves = 0;
    for i in 0..kills {
        let mut child = Command::new(&exe)
            .args([
                "--exact",
                "session_files::session_writer_child",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(WRITER_DIR_ENV, &dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Wait until the child is in its loop, so that the kill lands among its saves.
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        while !line.contains(READY) {
            line.clear();
            assert_ne!(
                out.read_line(&mut line).unwrap(),
                0,
                "worker {worker}, iteration {i}: the writer ended before saving"
            );
        }
        std::thread::sleep(Duration::from_millis(rng.next() % 21));
        child.kill().unwrap();
        child.wait().unwrap();

        let file = session::load(&dir, CRASH_ID)
            .unwrap_or_else(|e| panic!("worker {worker}, iteration {i}: after a kill: {e}"));
        let saves = file.usage.output_tokens;
        assert!(
            saves > previous_saves,
            "worker {worker}, iteration {i}: no save happened"
        );
        previous_saves = saves;
    }
    // Whatever temporary files the kills left, the listing shows the one session.
    let ids: Vec<String> = session::list(&dir).into_iter().map(|s| s.id).collect();
    assert_eq!(ids, vec![CRASH_ID.to_string()]);
}

/// `session::prune` keeps the `keep` files saved last (by modification time) and the current
/// one, looks at session files only (not temporary files, not other names), and keeps
/// everything with `keep` 0.
#[mm_testkit::test]
fn prune_keeps_the_files_saved_last_and_the_current_one() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = sessions_dir(tmp.path());
    let now = SystemTime::now();
    for (i, id) in ["a", "b", "c", "d"].iter().enumerate() {
        session::save(&dir, &file_with(id, "2026-09-16T10:00:00+02:00", "p")).unwrap();
        let f = fs::File::options()
            .write(true)
            .open(dir.join(format!("{id}.json")))
            .unwrap();
        // `a` saved last, `d` first.
        f.set_modified(now - Duration::from_secs(60 * (i as u64 + 1)))
            .unwrap();
    }
    fs::write(dir.join("notes.txt"), "mine").unwrap();
    fs::write(dir.join(".d.json.mm-1-1.tmp"), "").unwrap();
    let names = |dir: &Path| {
        let mut v: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        v.sort();
        v
    };

    assert_eq!(session::prune(&dir, 0, "d"), (vec![], vec![]));
    assert_eq!(names(&dir).len(), 6);
    // `d` is the one just saved: kept with the one saved last.
    let (mut removed, failed) = session::prune(&dir, 2, "d");
    removed.sort();
    assert_eq!(
        (removed, failed),
        (vec!["b".to_string(), "c".to_string()], vec![])
    );
    assert_eq!(
        names(&dir),
        [".d.json.mm-1-1.tmp", "a.json", "d.json", "notes.txt"]
    );
    assert_eq!(session::prune(&dir, 2, "d"), (vec![], vec![]));
}

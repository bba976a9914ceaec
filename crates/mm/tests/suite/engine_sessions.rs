//! Sessions end to end over HTTP and through the binary (docs/sessions.md): the history stays
//! valid for a real server's client through compaction, `/new`, a cancel and a load; `mm -p`
//! writes a session that `--continue` and `--resume` pick up. The engine's own behaviour with
//! sessions is tested in mm-engine (src/tests/sessions.rs).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use mm_testkit as common;

use std::sync::Arc;

use common::platform::OnlyHome;
use common::*;
use mm_core::history::Role;
use mm_core::session;
use mm_engine::{Command, StopReason};
use pretty_assertions::assert_eq;
use regex::Regex;
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// The same paths with the real OpenAI client over HTTP: the fake server checks every request
/// against the history invariants real servers enforce (after compaction, `/new`, a cancel and a
/// load), and answers llama.cpp's "context exceeded" like the real thing.
#[mm_testkit::test]
async fn over_http_the_history_stays_valid_through_compaction_new_cancel_and_load() {
    use common::{FakeServer, Reply as Http};
    let server = FakeServer::start(vec![
        Http::text("a").with_usage(100, 10),
        Http::tool_call("bash", json!({"command": "echo b"})),
        Http::text("b"),
        Http::context_exceeded(40_000, 32_768),
        Http::text("SUMMARY").with_usage(50, 5),
        Http::text("fits"),
    ])
    .await;
    let mut cfg = mm_core::config::Config::default();
    cfg.sessions.enabled = true;
    cfg.context.keep_last_turns = 1;
    cfg.model.url = server.url();
    let client = || -> Arc<dyn mm_model::ModelClient> {
        Arc::new(mm_model::openai::OpenAiClient::new(&cfg.model, 0))
    };
    let cwd = tempfile::tempdir().unwrap();
    let engine = mm_engine::Engine::new(Arc::new(cfg.clone()), client());
    let fe = Recorder::new();
    let mut s = engine.new_session(cwd.path().to_path_buf(), &fe).await;
    let run = async |e: &mm_engine::Engine, s: &mut mm_engine::Session, t: &str| {
        e.prompt(s, t, &[], &fe, &CancellationToken::new()).await
    };
    assert_eq!(
        run(&engine, &mut s, "one").await.stop,
        Ok(StopReason::EndTurn)
    );
    assert_eq!(
        run(&engine, &mut s, "two").await.stop,
        Ok(StopReason::EndTurn)
    );
    // Exceeded → one compression (the summary call) → one retry.
    assert_eq!(
        run(&engine, &mut s, "three").await.stop,
        Ok(StopReason::EndTurn)
    );
    assert_eq!(fe.auto_compacted().len(), 1, "{:?}", fe.auto_compacted());
    let reqs = server.requests();
    assert_eq!(reqs.len(), 6);
    assert_eq!(reqs[4]["stream"], json!(false));
    assert_eq!(reqs[5]["messages"].as_array().unwrap().len(), 2);
    assert_eq!(reqs[5]["messages"][1]["content"], "SUMMARY\n\nthree");

    // /new, then a turn.
    let out = run(&engine, &mut s, "/new").await;
    // The summary, "three" and its answer.
    assert!(
        matches!(
            out.command,
            Some(Command::New {
                forgotten: 3,
                archived_as: Some(_)
            })
        ),
        "{:?}",
        out.command
    );
    run(&engine, &mut s, "four").await;

    // A call cancelled while the server hangs.
    server.push([Http::hang()]);
    let cancel = CancellationToken::new();
    let turn = engine.prompt(&mut s, "five", &[], &fe, &cancel);
    let canceller = async {
        server.wait_for_requests(8).await;
        cancel.cancel();
    };
    let (out, ()) = tokio::join!(turn, canceller);
    assert_eq!(out.stop, Ok(StopReason::Cancelled));
    server.push([Http::text("six done")]);
    run(&engine, &mut s, "six").await;

    // Another engine loads the session and goes on.
    server.push([
        Http::tool_call("bash", json!({"command": "echo seven"})),
        Http::text("seven done"),
    ]);
    let engine2 = mm_engine::Engine::new(Arc::new(cfg.clone()), client());
    let mut s2 = engine2
        .load_session(cwd.path().to_path_buf(), s.view().id(), &fe)
        .await
        .unwrap();
    assert_eq!(
        run(&engine2, &mut s2, "seven").await.stop,
        Ok(StopReason::EndTurn)
    );
    assert_eq!(
        s2.view()
            .history()
            .iter()
            .filter(|m| m.role == Role::Tool)
            .count(),
        1
    );

    assert_eq!(server.requests().len(), 11);
    let dir = engine2.sessions_dir(cwd.path()).unwrap();
    assert_eq!(
        session::load(&dir, s.view().id()).unwrap().model,
        "fake-model"
    );
    assert_eq!(server.violations(), Vec::<String>::new());
}

/// `mm` with a fresh home, in `cwd`, against `url`; returns (exit code, stdout, stderr).
pub(crate) async fn mm(
    home: &std::path::Path,
    cwd: &std::path::Path,
    url: &str,
    args: &[&str],
) -> (i32, String, String) {
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_mm"))
        .args(["--url", url])
        .args(args)
        .current_dir(cwd)
        .only_home(home)
        .env("XDG_STATE_HOME", home.join("state"))
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[mm_testkit::test]
async fn mm_p_writes_a_session_that_continue_and_resume_pick_up() {
    use common::{FakeServer, Reply as Http};
    let server = FakeServer::start(vec![
        Http::text("first answer"),
        Http::text("second answer"),
    ])
    .await;
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let on = ["-c", "sessions.enabled=true"];
    let (code, stdout, stderr) = mm(
        home.path(),
        cwd.path(),
        &server.url(),
        &[&on[..], &["-p", "one"]].concat(),
    )
    .await;
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("first answer"), "{stdout}");
    let dir = cwd.path().join(".mm/sessions");
    let listed = session::list(&dir);
    assert_eq!(listed.len(), 1);
    let id = listed[0].id.clone();
    let f = session::load(&dir, &id).unwrap();
    assert_eq!(
        f.messages[1..]
            .iter()
            .map(|m| m.content.as_str())
            .collect::<Vec<_>>(),
        vec!["one", "first answer"]
    );

    let (code, _, stderr) = mm(
        home.path(),
        cwd.path(),
        &server.url(),
        &[&on[..], &["--continue", "-p", "two"]].concat(),
    )
    .await;
    assert_eq!(code, 0, "{stderr}");
    let last = server.requests().pop().unwrap();
    let sent: Vec<&str> = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .skip(1)
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(sent, vec!["one", "first answer", "two"]);
    assert_eq!(session::list(&dir).len(), 1);
    assert_eq!(session::load(&dir, &id).unwrap().messages.len(), 5);

    // An invalid id is refused, nothing is sent.
    let (code, _, stderr) = mm(
        home.path(),
        cwd.path(),
        &server.url(),
        &[&on[..], &["--resume", "../x", "-p", "three"]].concat(),
    )
    .await;
    assert_ne!(code, 0);
    assert!(stderr.contains("invalid session id \"../x\""), "{stderr}");
    assert_eq!(server.requests().len(), 2);
    assert_eq!(server.violations(), Vec::<String>::new());
}

/// Sessions switched off: `--continue` and `--resume` stop naming the key that switches them
/// on. Sessions on (the default), a wrong id: no path, the sessions saved last to pick from,
/// newest first; none saved: said so.
#[mm_testkit::test]
async fn continue_without_sessions_names_the_key_and_a_wrong_id_lists_the_recent_ones() {
    use common::{FakeServer, Reply as Http};
    let server = FakeServer::start(vec![Http::text("first"), Http::text("second")]).await;
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let off = ["-c", "sessions.enabled=false"];
    for flag in [
        &["--continue"][..],
        &["--resume", "20260916-101530-4f2a9c1e"][..],
    ] {
        let (code, stdout, stderr) = mm(
            home.path(),
            cwd.path(),
            &server.url(),
            &[&off[..], flag, &["-p", "hi"]].concat(),
        )
        .await;
        assert_eq!((code, stdout.as_str()), (1, ""), "{stderr}");
        assert_eq!(
            stderr,
            format!(
                "mm: {}: sessions are off: set sessions.enabled = true (or -c sessions.enabled=true) to keep and resume them\n",
                flag[0]
            )
        );
    }

    let wrong = ["--resume", "20260916-101530-4f2a9c1e", "-p", "hi"];
    let (code, _, stderr) = mm(home.path(), cwd.path(), &server.url(), &wrong).await;
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(
        stderr,
        "mm: --resume: no saved session 20260916-101530-4f2a9c1e in this folder, and none is saved here yet\n"
    );
    let (code, _, stderr) = mm(
        home.path(),
        cwd.path(),
        &server.url(),
        &["--continue", "-p", "hi"],
    )
    .await;
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(
        stderr,
        "mm: --continue: no saved session in this folder yet (they are kept in .mm/sessions)\n"
    );

    // Two sessions saved (by default): both listed, the one saved last first.
    for prompt in ["list the files", "fix the build"] {
        let (code, _, stderr) = mm(home.path(), cwd.path(), &server.url(), &["-p", prompt]).await;
        assert_eq!(code, 0, "{stderr}");
    }
    let dir = cwd.path().join(".mm/sessions");
    let mut saved = session::list(&dir);
    assert_eq!(saved.len(), 2);
    saved.sort_by(|a, b| (&b.updated_at, &b.id).cmp(&(&a.updated_at, &a.id)));
    let (code, _, stderr) = mm(home.path(), cwd.path(), &server.url(), &wrong).await;
    assert_eq!(code, 1, "{stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(
        lines[0],
        "mm: --resume: no saved session 20260916-101530-4f2a9c1e in this folder; the ones saved last:"
    );
    let row = Regex::new(r"^  (\S+)  +\d+s ago +2 msg +\d+ B  (.*)$").unwrap();
    let listed: Vec<(String, String)> = lines[1..3]
        .iter()
        .map(|l| {
            let c = row.captures(l).unwrap_or_else(|| panic!("{l:?}"));
            (c[1].to_string(), c[2].to_string())
        })
        .collect();
    let expected: Vec<(String, String)> = saved
        .iter()
        .map(|s| (s.id.clone(), s.first_prompt.clone().unwrap()))
        .collect();
    // Saved within one second of each other, the two may tie on `updatedAt`: the order is the
    // listing's, the content both.
    assert_eq!(listed, expected);
    assert_eq!(lines[3..], ["mm --resume ID reopens one"]);
    assert!(
        !stderr.contains(&*cwd.path().to_string_lossy()),
        "no path: {stderr}"
    );
    assert_eq!(server.requests().len(), 2);
}

//! What `mm -acp` offers beyond the reference (docs/acp.md, "Beyond the reference"): the saved
//! sessions' history (`session/list`, `session/resume`, `session/delete`), `session/close`,
//! modes, configuration options (the mode and the model), titles, live progress of `bash`, and
//! `compaction_update`. In process over duplex pipes with a scripted model, and through the built
//! binary against the fake model server; every message mm writes is validated against the
//! official schema by the test client.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use mm_testkit as common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Instant;

use common::acp::*;
use common::platform::OnlyHome;
use common::{Answer, FakeServer, Reply, ScriptedModel};
use mm_core::config::Config;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

fn canonical(p: &Path) -> PathBuf {
    mm_core::paths::canonical(p).unwrap()
}

fn with_sessions() -> Config {
    let mut config = test_config();
    config.sessions.enabled = true;
    config
}

/// The `sessionUpdate` kinds among messages, in order.
fn kinds(msgs: &[Value]) -> Vec<String> {
    updates(msgs)
        .iter()
        .map(|u| u["sessionUpdate"].as_str().unwrap().to_string())
        .collect()
}

/// A session file as an older mm wrote it (no title, no mode), last changed at `updated_at`.
fn older_file(cwd: &Path, id: &str, updated_at: &str, prompt: &str) {
    let dir = cwd.join(".mm/sessions");
    std::fs::create_dir_all(&dir).unwrap();
    let file = json!({"version": 1, "id": id, "cwd": cwd, "createdAt": updated_at,
        "updatedAt": updated_at, "model": "m",
        "usage": {"inputTokens": 0, "outputTokens": 0, "totalTokens": 0}, "plan": null,
        "messages": [{"role": "system", "content": "old"}, {"role": "user", "content": prompt},
                     {"role": "assistant", "content": "ok"}]});
    std::fs::write(dir.join(format!("{id}.json")), file.to_string()).unwrap();
}

// ------------------------------------------------------------------ close

#[mm_testkit::test]
async fn close_frees_a_session_with_sessions_off_and_its_id_is_unknown_after() {
    let dir = tmp();
    let cwd = canonical(dir.path());
    let mut config = test_config();
    config.sessions.enabled = false;
    let mut h = Harness::start(config, ScriptedModel::new(vec![]));
    h.client.initialize(false).await;
    let (id, _) = h.client.new_session(&cwd).await;
    let (_, r) = h
        .client
        .call("session/close", json!({"sessionId": id}))
        .await;
    assert_eq!(r["result"], json!({}));
    assert!(
        h.log_lines()
            .contains(&format!("[acp] session {id} closed")),
        "{:?}",
        h.log_lines()
    );
    let (_, r) = h.client.prompt(&id, "still there?").await;
    assert_eq!(r["error"]["code"], -32602);
    assert_eq!(r["error"]["data"], json!({"sessionId": id}));
    let (_, r) = h
        .client
        .call("session/close", json!({"sessionId": id}))
        .await;
    assert_eq!(r["error"]["code"], -32602, "closed twice: {r}");
    // The history's methods stay unknown without sessions.
    let (_, r) = h.client.call("session/list", json!({"cwd": cwd})).await;
    assert_eq!(r["error"]["code"], -32601);
    h.finish().await.unwrap();
}

#[cfg(unix)]
#[mm_testkit::test]
async fn close_cancels_the_running_turn_and_stops_its_command() {
    let dir = tmp();
    let cwd = canonical(dir.path());
    let pid_file = cwd.join("pid");
    let command = format!("echo $$ > {}; exec sleep 60", pid_file.display());
    let model = ScriptedModel::new(vec![
        Answer::call("bash", json!({"command": command})).without_usage(),
    ]);
    let mut h = Harness::start(test_config(), model);
    h.client.initialize(false).await;
    let (id, _) = h.client.new_session(&cwd).await;
    let prompt = h.client.send_prompt(&id, "sleep").await;
    h.client.until_update("tool_call_update").await;
    // Bounded poll: the command writes its pid as it starts, nothing tells the client when.
    let started = Instant::now();
    let pid = loop {
        if let Ok(text) = std::fs::read_to_string(&pid_file)
            && let Ok(pid) = text.trim().parse::<i32>()
        {
            break pid;
        }
        assert!(
            started.elapsed() < common::HANG_GUARD,
            "the command never started"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    };
    let close = h
        .client
        .request("session/close", json!({"sessionId": id}))
        .await;
    let (_, r) = h.client.until_response(prompt).await;
    assert_eq!(r["result"]["stopReason"], "cancelled");
    let (_, r) = h.client.until_response(close).await;
    assert_eq!(r["result"], json!({}));
    // The command's process group is signalled once the turn ends: gone within the grace.
    let pid = nix::unistd::Pid::from_raw(pid);
    let started = Instant::now();
    while nix::sys::signal::kill(pid, None).is_ok() {
        assert!(
            started.elapsed() < common::HANG_GUARD,
            "the command outlived the close"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    h.finish().await.unwrap();
}

/// With `acp.clientMcpServers`, the editor's servers start for a resumed session as they do for
/// `session/new` and `session/load`: the model is offered their tools and its call runs.
#[mm_testkit::test]
async fn a_resumed_session_starts_the_client_s_mcp_servers() {
    common::need_command("python3", ".ci/run installs it");
    let dir = tmp();
    let cwd = canonical(dir.path());
    let id = "20250101-000000-00000002";
    older_file(&cwd, id, "2025-01-01T00:00:00+00:00", "hello");
    let model = ScriptedModel::new(vec![
        Answer::call("files__echo", json!({"text": "hi"})),
        Answer::text("done"),
    ]);
    let mut config = with_sessions();
    config.acp.client_mcp_servers = true;
    config.mcp_timing = mm_core::config::McpTiming {
        start: common::HANG_GUARD,
        list_wait: common::HANG_GUARD,
        ..mm_core::config::McpTiming::default()
    };
    let mut h = Harness::start(config, model.clone());
    h.client.initialize(false).await;
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/mcp/fake_mcp.py"
    );
    let server = json!({"name": "files", "command": "python3", "args": [fixture, "ok"], "env": []});
    let (_, r) = h
        .client
        .call(
            "session/resume",
            json!({"sessionId": id, "cwd": cwd, "mcpServers": [server]}),
        )
        .await;
    assert_eq!(r["result"]["modes"]["currentModeId"], "yolo", "{r}");
    let (msgs, r) = h.client.prompt(id, "echo").await;
    assert_eq!(r["result"]["stopReason"], "end_turn");
    let requests = model.requests();
    let offered: Vec<&str> = requests[0]
        .tools
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(offered.contains(&"files__echo"), "{offered:?}");
    let done: Vec<Value> = updates(&msgs)
        .into_iter()
        .filter(|u| u["sessionUpdate"] == "tool_call_update" && u["status"] == "completed")
        .map(|u| u["rawOutput"]["output"].clone())
        .collect();
    assert_eq!(done, [json!("echo: hi")]);
    assert!(
        !h.log_lines()
            .iter()
            .any(|l| l.contains("from the client ignored")),
        "{:?}",
        h.log_lines()
    );
    h.finish().await.unwrap();
}

// ------------------------------------------------------------------ list, resume, delete

#[mm_testkit::test]
async fn list_resume_and_delete_saved_sessions() {
    let dir = tmp();
    let cwd = canonical(dir.path());
    older_file(
        &cwd,
        "20250101-000000-00000001",
        "2025-01-01T00:00:00+00:00",
        "old one",
    );
    std::fs::write(cwd.join(".mm/sessions/20250101-000000-0000000b.json"), "{").unwrap();
    let model = ScriptedModel::new(vec![
        Answer::text("first answer"),
        Answer::text("second answer"),
        Answer::text("after the resume"),
    ]);
    let mut h = Harness::start(with_sessions(), model.clone());
    h.client.initialize(false).await;
    let (first, _) = h.client.new_session(&cwd).await;
    let long = format!("{}\nand a second line", "fix the build ".repeat(10));
    let (before, _) = h.client.prompt(&first, &long).await;
    let title = format!("{}…", &"fix the build ".repeat(10)[..79]);
    assert_eq!(
        updates(&before)[0],
        json!({"sessionUpdate": "session_info_update", "title": title})
    );
    let (second, _) = h.client.new_session(&cwd).await;
    h.client.prompt(&second, "write the docs").await;

    let (_, r) = h.client.call("session/list", json!({"cwd": cwd})).await;
    let sessions = r["result"]["sessions"].as_array().unwrap();
    let ids: Vec<&str> = sessions
        .iter()
        .map(|s| s["sessionId"].as_str().unwrap())
        .collect();
    // Newest first (the two new ones may share their second, which orders them by id).
    assert_eq!(ids.len(), 3, "{r}");
    assert!(ids[..2].contains(&first.as_str()) && ids[..2].contains(&second.as_str()));
    assert_eq!(ids[2], "20250101-000000-00000001");
    let listed = |id: &str| sessions.iter().find(|s| s["sessionId"] == id).unwrap();
    assert_eq!(listed(&second)["title"], "write the docs");
    assert_eq!(listed(&first)["title"], json!(title));
    assert_eq!(listed(&first)["cwd"], json!(cwd));
    assert!(
        listed(&first)["updatedAt"]
            .as_str()
            .unwrap()
            .starts_with("20")
    );
    // An older file has no title: none is made up from its messages.
    assert_eq!(
        sessions[2],
        json!({"sessionId": "20250101-000000-00000001", "cwd": cwd,
               "updatedAt": "2025-01-01T00:00:00+00:00"})
    );
    assert_eq!(r["result"].get("nextCursor"), None);
    let broken = cwd
        .join(".mm")
        .join("sessions")
        .join("20250101-000000-0000000b.json");
    assert!(
        h.log_lines().iter().any(|l| l.starts_with(&format!(
            "[acp] session/list: skipped {} is not a session file: ",
            broken.display()
        ))),
        "{:?}",
        h.log_lines()
    );
    // Without a cwd: the live sessions' folders (and the process's).
    let (_, r) = h.client.call("session/list", json!({})).await;
    let listed: Vec<&str> = r["result"]["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["cwd"] == json!(cwd))
        .map(|s| s["sessionId"].as_str().unwrap())
        .collect();
    assert_eq!(listed.len(), 3, "{r}");

    // Resume the first one in a new connection: no replay, the conversation goes on.
    h.finish().await.unwrap();
    let mut h = Harness::start(with_sessions(), model.clone());
    h.client.initialize(false).await;
    let (before, r) = h
        .client
        .call(
            "session/resume",
            json!({"sessionId": first, "cwd": cwd, "mcpServers": []}),
        )
        .await;
    assert!(updates(&before).is_empty(), "no replay: {before:#?}");
    assert_eq!(r["result"], session_options("yolo"));
    let (after, _) = h.client.until_update("session_info_update").await;
    assert_eq!(
        kinds(&after),
        ["available_commands_update", "usage_update"],
        "what a session shows besides its history, after the answer"
    );
    let (_, r) = h.client.prompt(&first, "go on").await;
    assert_eq!(r["result"]["stopReason"], "end_turn");
    let messages = model.requests().last().unwrap().messages.clone();
    assert_eq!(
        messages[1]["content"],
        json!(long),
        "the history was resumed"
    );
    assert!(
        h.log_lines().contains(&format!(
            "[acp] session {first} resumed from {}: 2 message(s)",
            cwd.join(".mm").join("sessions").display()
        )),
        "{:?}",
        h.log_lines()
    );
    let (_, r) = h
        .client
        .call(
            "session/resume",
            json!({"sessionId": first, "cwd": cwd, "mcpServers": []}),
        )
        .await;
    assert_eq!(r["error"]["code"], -32602, "already live: {r}");

    // Delete: a live one is closed first; one that is not live is found in a listed folder.
    let (_, r) = h
        .client
        .call("session/delete", json!({"sessionId": first}))
        .await;
    assert_eq!(r["result"], json!({}));
    assert!(!cwd.join(format!(".mm/sessions/{first}.json")).exists());
    let (_, r) = h.client.prompt(&first, "gone?").await;
    assert_eq!(r["error"]["code"], -32602);
    let (_, r) = h.client.call("session/list", json!({"cwd": cwd})).await;
    assert_eq!(r["result"]["sessions"].as_array().unwrap().len(), 2);
    let (_, r) = h
        .client
        .call("session/delete", json!({"sessionId": second}))
        .await;
    assert_eq!(r["result"], json!({}));
    let (_, r) = h
        .client
        .call("session/delete", json!({"sessionId": second}))
        .await;
    assert_eq!(r["error"]["code"], -32602);
    assert_eq!(r["error"]["data"]["sessionId"], json!(second));
    let (_, r) = h
        .client
        .call("session/delete", json!({"sessionId": "../x"}))
        .await;
    assert_eq!(r["error"]["code"], -32602);
    let log = h.log_lines();
    assert!(
        log.contains(&format!("[acp] session {first} closed")),
        "{log:?}"
    );
    assert!(
        log.contains(&format!(
            "[acp] session {second} deleted from {}",
            cwd.join(".mm").join("sessions").display()
        )),
        "{log:?}"
    );
    h.finish().await.unwrap();
}

#[mm_testkit::test]
async fn a_list_comes_in_pages_of_fifty_newest_first() {
    let dir = tmp();
    let cwd = canonical(dir.path());
    for i in 0..55 {
        older_file(
            &cwd,
            &format!("20250101-0000{i:02}-00000000"),
            &format!("2025-01-01T00:00:{i:02}+00:00"),
            "p",
        );
    }
    let mut h = Harness::start(with_sessions(), ScriptedModel::new(vec![]));
    h.client.initialize(false).await;
    let (_, r) = h.client.call("session/list", json!({"cwd": cwd})).await;
    let page = r["result"]["sessions"].as_array().unwrap();
    assert_eq!(page.len(), 50);
    assert_eq!(page[0]["sessionId"], "20250101-000054-00000000");
    let cursor = r["result"]["nextCursor"].as_str().unwrap().to_string();
    let (_, r) = h
        .client
        .call("session/list", json!({"cwd": cwd, "cursor": cursor}))
        .await;
    let page = r["result"]["sessions"].as_array().unwrap();
    let ids: Vec<&str> = page
        .iter()
        .map(|s| s["sessionId"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "20250101-000004-00000000",
            "20250101-000003-00000000",
            "20250101-000002-00000000",
            "20250101-000001-00000000",
            "20250101-000000-00000000"
        ]
    );
    assert_eq!(r["result"].get("nextCursor"), None);
    let (_, r) = h
        .client
        .call("session/list", json!({"cwd": cwd, "cursor": "not ours"}))
        .await;
    assert_eq!(r["error"]["code"], -32602);
    let (_, r) = h
        .client
        .call("session/list", json!({"cwd": "relative"}))
        .await;
    assert_eq!(r["error"]["code"], -32602);
    h.finish().await.unwrap();
}

// ------------------------------------------------------------------ modes

#[mm_testkit::test]
async fn a_mode_switch_mid_session_changes_what_asks() {
    common::platform::need_bash();
    let dir = tmp();
    let cwd = canonical(dir.path());
    std::fs::write(cwd.join("notes.txt"), "n\n").unwrap();
    let model = ScriptedModel::new(vec![
        // yolo: runs without asking.
        Answer::call("bash", json!({"command": "echo one"})).without_usage(),
        Answer::text("ran").without_usage(),
        // ask: the first call asks; the mode switched to yolo meanwhile, the second does not.
        Answer::call("bash", json!({"command": "echo two"})).without_usage(),
        Answer::call("bash", json!({"command": "echo three"})).without_usage(),
        Answer::text("ran").without_usage(),
        // read-only: commands run unasked inside the read-only fence (where the kernel has
        // Landlock; refused without it): they read, and a write fails; reading files works.
        Answer::call(
            "bash",
            json!({"command": "cat notes.txt && echo four > four.txt; rm notes.txt"}),
        )
        .without_usage(),
        Answer::call("read_file", json!({"path": "notes.txt"})).without_usage(),
        Answer::text("read").without_usage(),
    ]);
    let mut h = Harness::start(with_sessions(), model);
    h.client.initialize(false).await;
    let (_, r) = h
        .client
        .call("session/new", json!({"cwd": cwd, "mcpServers": []}))
        .await;
    let id = r["result"]["sessionId"].as_str().unwrap().to_string();
    assert_eq!(
        r["result"]["modes"],
        modes("yolo"),
        "the first mode is from `yolo`"
    );
    assert_eq!(r["result"]["configOptions"], json!([mode_option("yolo")]));

    let (before, _) = h.client.prompt(&id, "one").await;
    assert!(
        before
            .iter()
            .all(|m| m["method"] != "session/request_permission")
    );

    let (after, r) = h
        .client
        .call(
            "session/set_mode",
            json!({"sessionId": id, "modeId": "ask"}),
        )
        .await;
    assert_eq!(r["result"], json!({}));
    let (rest, options) = h.client.until_update("config_option_update").await;
    let mut sent = updates(&after);
    sent.extend(updates(&rest));
    assert_eq!(
        sent,
        [json!({"sessionUpdate": "current_mode_update", "currentModeId": "ask"})]
    );
    assert_eq!(
        options["params"]["update"],
        json!({"sessionUpdate": "config_option_update", "configOptions": [mode_option("ask")]})
    );
    let file = cwd.join(format!(".mm/sessions/{id}.json"));
    // The mode is saved with the session (by a task of its own when no turn runs).
    let started = Instant::now();
    while !std::fs::read_to_string(&file)
        .unwrap()
        .contains("\"mode\": \"ask\"")
    {
        assert!(
            started.elapsed() < common::HANG_GUARD,
            "the mode was not saved"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }

    let prompt = h.client.send_prompt(&id, "two").await;
    let (_, ask) = h.client.until_request("session/request_permission").await;
    assert_eq!(ask["params"]["toolCall"]["title"], "bash: echo two");
    // Switched while the turn runs (and waits for this answer): the next call does not ask.
    let (_, r) = h
        .client
        .call(
            "session/set_mode",
            json!({"sessionId": id, "modeId": "yolo"}),
        )
        .await;
    assert_eq!(r["result"], json!({}));
    h.client.select_option(&ask, "allow").await;
    let (before, r) = h.client.until_response(prompt).await;
    assert_eq!(r["result"]["stopReason"], "end_turn");
    assert!(
        before
            .iter()
            .all(|m| m["method"] != "session/request_permission")
    );
    let done: Vec<Value> = updates(&before)
        .into_iter()
        .filter(|u| u["status"] == "completed")
        .collect();
    assert_eq!(done.len(), 2, "both ran: {before:#?}");

    // The mode as a configuration option, the other way round.
    let (after, r) = h
        .client
        .call(
            "session/set_config_option",
            json!({"sessionId": id, "configId": "mode", "value": "read-only"}),
        )
        .await;
    assert!(updates(&after).is_empty());
    assert_eq!(
        r["result"],
        json!({"configOptions": [mode_option("read-only")]})
    );
    let (_, mode) = h.client.until_update("current_mode_update").await;
    assert_eq!(mode["params"]["update"]["currentModeId"], "read-only");
    let (before, _) = h.client.prompt(&id, "four").await;
    assert!(
        before
            .iter()
            .all(|m| m["method"] != "session/request_permission")
    );
    let ends: Vec<Value> = updates(&before)
        .into_iter()
        .filter(|u| u["status"] == "failed" || u["status"] == "completed")
        .collect();
    let output = ends[0]["rawOutput"]["output"].as_str().unwrap();
    if mm_tools::sandbox::landlock_abi() > 0 {
        assert_eq!(ends[0]["status"], "completed", "{ends:#?}");
        assert!(output.starts_with("n\n"), "the command read: {output}");
        assert!(
            output.contains("four.txt: Permission denied") && output.contains("[exit code: 1]"),
            "the write failed: {output}"
        );
    } else {
        assert_eq!(ends[0]["status"], "failed");
        assert_eq!(output, "[bash refused: read-only mode]");
    }
    assert!(!cwd.join("four.txt").exists(), "nothing was written");
    assert_eq!(ends[1]["status"], "completed", "reading works: {ends:#?}");

    // What mm does not have.
    for (method, params) in [
        (
            "session/set_mode",
            json!({"sessionId": id, "modeId": "plan"}),
        ),
        (
            "session/set_config_option",
            json!({"sessionId": id, "configId": "mode", "value": "plan"}),
        ),
        (
            "session/set_config_option",
            json!({"sessionId": id, "configId": "temperature", "value": "hot"}),
        ),
        (
            "session/set_config_option",
            json!({"sessionId": id, "configId": "model", "value": "m"}),
        ),
    ] {
        let (_, r) = h.client.call(method, params).await;
        assert_eq!(r["error"]["code"], -32602, "{method}: {r}");
        assert_eq!(r["error"]["data"]["sessionId"], json!(id));
    }
    let (_, r) = h
        .client
        .call(
            "session/set_mode",
            json!({"sessionId": id, "modeId": "plan"}),
        )
        .await;
    assert_eq!(
        r["error"]["data"]["error"],
        "unknown mode \"plan\": the modes are ask, yolo and read-only"
    );
    let log = h.log_lines();
    assert!(
        log.contains(&format!("[acp] session {id}: mode read-only")),
        "{log:?}"
    );
    h.finish().await.unwrap();
}

#[mm_testkit::test]
async fn a_loaded_mode_is_never_looser_than_the_configuration() {
    let dir = tmp();
    let cwd = canonical(dir.path());
    let mut h = Harness::start(with_sessions(), ScriptedModel::new(vec![]));
    h.client.initialize(false).await;
    let (strict, _) = h.client.new_session(&cwd).await;
    let (loose, _) = h.client.new_session(&cwd).await;
    h.client
        .call(
            "session/set_mode",
            json!({"sessionId": strict, "modeId": "read-only"}),
        )
        .await;
    // Saved as the session file says; a prompt saves too.
    h.client.prompt(&strict, "hi").await;
    h.client.prompt(&loose, "hi").await;
    h.finish().await.unwrap();

    // The configuration now asks: a file saying `yolo` does not switch asking off.
    let mut config = with_sessions();
    config.yolo = false;
    let mut h = Harness::start(config, ScriptedModel::new(vec![]));
    h.client.initialize(false).await;
    for (id, expected) in [(&strict, "read-only"), (&loose, "ask")] {
        let (_, r) = h.client.load_session(id, &cwd).await;
        assert_eq!(r["result"], session_options(expected), "{id}");
    }
    h.finish().await.unwrap();
}

// ------------------------------------------------------------------ the model

#[mm_testkit::test]
async fn a_model_switch_applies_to_that_session_from_its_next_turn() {
    let dir = tmp();
    let cwd = canonical(dir.path());
    let model = ScriptedModel::new(vec![]);
    model.list_models(&["model-a", "model-b"]);
    model.window("model-b", 4096);
    let mut config = test_config();
    config.context.keep_last_turns = 1;
    // Probed, not configured (a configured window wins over every model's).
    config.context_window = 0;
    let mut h = Harness::start(config, model.clone());
    h.client.initialize(false).await;
    let (_, r) = h
        .client
        .call("session/new", json!({"cwd": cwd, "mcpServers": []}))
        .await;
    let id = r["result"]["sessionId"].as_str().unwrap().to_string();
    assert_eq!(
        r["result"]["configOptions"],
        json!([
            mode_option("yolo"),
            model_option("model-a", &["model-a", "model-b"])
        ]),
        "the list is known: the option comes in the answer"
    );
    let (other, _) = h.client.new_session(&cwd).await;
    h.client.prompt(&id, "first").await;
    assert_eq!(model.requests().last().unwrap().model, None);

    let (_, r) = h
        .client
        .call(
            "session/set_config_option",
            json!({"sessionId": id, "configId": "model", "value": "model-b"}),
        )
        .await;
    assert_eq!(
        r["result"]["configOptions"],
        json!([
            mode_option("yolo"),
            model_option("model-b", &["model-a", "model-b"])
        ])
    );
    let (msgs, _) = h.client.prompt(&id, "second").await;
    assert_eq!(
        model.requests().last().unwrap().model.as_deref(),
        Some("model-b")
    );
    // Its window was probed again: the context is measured against model-b's.
    assert_eq!(model.probed(), ["model-b"]);
    let sizes: Vec<Value> = updates(&msgs)
        .iter()
        .filter(|u| u["sessionUpdate"] == "usage_update")
        .map(|u| u["size"].clone())
        .collect();
    assert!(
        !sizes.is_empty() && sizes.iter().all(|s| s == &json!(4096)),
        "{sizes:?}"
    );
    // The summary of a compression is written by the session's model too.
    h.client.prompt(&id, "/compact").await;
    assert_eq!(model.summary_models(), [Some("model-b".to_string())]);
    // Other sessions keep theirs, and its window.
    let (msgs, _) = h.client.prompt(&other, "third").await;
    assert_eq!(model.requests().last().unwrap().model, None);
    let sizes: Vec<Value> = updates(&msgs)
        .iter()
        .filter(|u| u["sessionUpdate"] == "usage_update")
        .map(|u| u["size"].clone())
        .collect();
    assert!(
        !sizes.is_empty() && sizes.iter().all(|s| s == &json!(common::model::WINDOW)),
        "{sizes:?}"
    );
    assert_eq!(model.probed(), ["model-b"], "probed once after the switch");
    let (_, r) = h
        .client
        .call(
            "session/set_config_option",
            json!({"sessionId": id, "configId": "model", "value": "model-c"}),
        )
        .await;
    assert_eq!(
        r["error"]["data"],
        json!({"sessionId": id, "error": "model has no value \"model-c\""})
    );
    assert!(h.log_lines().contains(&format!(
        "[acp] session {id}: model model-b from the next turn"
    )));
    h.finish().await.unwrap();
}

// ------------------------------------------------------------------ progress

#[mm_testkit::test]
async fn a_long_command_reports_its_output_at_most_every_250_ms() {
    common::platform::need_bash();
    let dir = tmp();
    let cwd = canonical(dir.path());
    // Prints for about two seconds.
    let command = "for i in $(seq 1 50); do echo line $i; sleep 0.04; done";
    let model = ScriptedModel::new(vec![
        Answer::call("bash", json!({"command": command})).without_usage(),
        Answer::text("built").without_usage(),
    ]);
    let mut h = Harness::start(test_config(), model);
    h.client.initialize(false).await;
    let (id, _) = h.client.new_session(&cwd).await;
    let prompt = h.client.send_prompt(&id, "build").await;
    let mut progress: Vec<(Instant, Value)> = Vec::new();
    let mut running = None;
    let finished = loop {
        let m = h.client.next().await;
        let u = &m["params"]["update"];
        if u["sessionUpdate"] != "tool_call_update" {
            continue;
        }
        match u["status"].as_str() {
            Some("in_progress") => running = Some(Instant::now()),
            Some(_) => break (Instant::now(), u.clone()),
            None => progress.push((Instant::now(), u.clone())),
        }
    };
    let (_, r) = h.client.until_response(prompt).await;
    assert_eq!(r["result"]["stopReason"], "end_turn");
    let ran = finished.0 - running.unwrap();
    assert!(progress.len() >= 3, "{} updates in {ran:?}", progress.len());
    // At most one per 250 ms (the first a period after the start).
    let most = (ran.as_millis() / 250) as usize + 1;
    assert!(
        progress.len() <= most,
        "{} updates in {ran:?}: more than one per 250 ms",
        progress.len()
    );
    // Each shows the output so far: its last lines, in order, up to 40.
    let mut last_seen = 0;
    for (_, u) in &progress {
        let text = u["content"][0]["content"]["text"].as_str().unwrap();
        let numbers: Vec<u32> = text
            .lines()
            .map(|l| l.strip_prefix("line ").unwrap().parse().unwrap())
            .collect();
        assert!(numbers.len() <= 40, "{text}");
        assert!(numbers.windows(2).all(|w| w[1] == w[0] + 1), "{text}");
        assert!(*numbers.last().unwrap() > last_seen, "{text}");
        last_seen = *numbers.last().unwrap();
    }
    // The result is the whole output, as without progress.
    let expected: String = (1..=50).map(|i| format!("line {i}\n")).collect();
    assert_eq!(finished.1["status"], "completed");
    assert_eq!(finished.1["rawOutput"]["output"], json!(expected));
    assert_eq!(
        finished.1["content"],
        json!([{"type": "content", "content": {"type": "text", "text": expected}}])
    );
    h.finish().await.unwrap();
}

// ------------------------------------------------------------------ compaction

async fn initialize_with_compaction(h: &mut Harness) {
    let (_, r) = h
        .client
        .call(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {"session": {"compaction": {}}}}),
        )
        .await;
    assert_eq!(r["result"]["protocolVersion"], 1);
}

#[mm_testkit::test]
async fn compaction_updates_go_to_a_client_that_advertised_them() {
    let dir = tmp();
    let cwd = canonical(dir.path());
    let mut config = test_config();
    config.context.keep_last_turns = 1;
    let model = ScriptedModel::new(vec![]);
    model.push_summary(Answer::text("The user said hi twice."));
    model.push_summary(Answer::error(mm_model::ModelError::Http {
        status: 500,
        message: "boom".into(),
    }));
    let mut h = Harness::start(config.clone(), model.clone());
    initialize_with_compaction(&mut h).await;
    let (id, _) = h.client.new_session(&cwd).await;
    // Nothing to compact: nothing but the line.
    let (before, _) = h.client.prompt(&id, "/compact").await;
    assert_eq!(kinds(&before), ["agent_message_chunk", "usage_update"]);
    h.client.prompt(&id, "hi").await;
    h.client.prompt(&id, "hi again").await;
    let (before, _) = h.client.prompt(&id, "/compact").await;
    let ups = updates(&before);
    assert_eq!(
        ups[..2],
        [
            json!({"sessionUpdate": "compaction_update", "compactionId": "compaction_1", "status": "in_progress"}),
            json!({"sessionUpdate": "compaction_update", "compactionId": "compaction_1", "status": "completed",
                   "summary": [{"type": "text", "text": "The user said hi twice."}]}),
        ]
    );
    h.client.prompt(&id, "and again").await;
    let (before, _) = h.client.prompt(&id, "/compact").await;
    assert_eq!(
        updates(&before)[1],
        json!({"sessionUpdate": "compaction_update", "compactionId": "compaction_2", "status": "failed",
               "error": "model server answered 500: boom"})
    );
    h.finish().await.unwrap();

    // A client that did not advertise it sees the reference's line only.
    let model = ScriptedModel::new(vec![]);
    let mut h = Harness::start(config, model);
    h.client.initialize(false).await;
    let (id, _) = h.client.new_session(&cwd).await;
    h.client.prompt(&id, "hi").await;
    h.client.prompt(&id, "hi again").await;
    let (before, _) = h.client.prompt(&id, "/compact").await;
    // The summary call's usage, then the command's line and its own (acp.md).
    assert_eq!(
        kinds(&before),
        ["usage_update", "agent_message_chunk", "usage_update"]
    );
    h.finish().await.unwrap();
}

// ------------------------------------------------------------------ through the binary

pub(crate) struct Mm {
    pub(crate) child: tokio::process::Child,
    pub(crate) client: TestClient,
}

pub(crate) fn spawn_mm(cwd: &Path, home: &Path, url: &str) -> Mm {
    spawn_mm_with(cwd, home, url, &[])
}

/// `mm -acp` with sessions on and `extra` arguments, in `cwd` and a fresh `home`, talking to
/// `url`.
pub(crate) fn spawn_mm_with(cwd: &Path, home: &Path, url: &str, extra: &[&str]) -> Mm {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_mm"))
        .args(["-acp", "-c", "sessions.enabled=true"])
        .args(extra)
        .current_dir(cwd)
        .only_home(home)
        .env("MM_MODEL_URL", url)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    Mm {
        client: TestClient::new(Box::new(stdin), Box::new(stdout)),
        child,
    }
}

/// The model option of a session: in the `session/new` answer when detection was done, else in
/// the `config_option_update` that follows once the list arrives.
pub(crate) async fn model_option_of(client: &mut TestClient, answer: &Value) -> Value {
    if let Some(o) = answer["result"]["configOptions"]
        .as_array()
        .and_then(|o| o.iter().find(|o| o["id"] == "model"))
    {
        return o.clone();
    }
    let (_, u) = client.until_update("config_option_update").await;
    u["params"]["update"]["configOptions"][1].clone()
}

#[mm_testkit::test]
async fn the_binary_switches_between_the_servers_models_and_keeps_the_history() {
    let server = FakeServer::start(vec![Reply::text("from a"), Reply::text("from b")]).await;
    server.route(
        "GET /v1/models",
        vec![Reply::json(json!({"object": "list", "data": [
            {"id": "model-a", "object": "model", "owned_by": "llamacpp", "meta": {"n_ctx": 32768}},
            {"id": "nomic-embed-text", "object": "model", "owned_by": "llamacpp"},
            {"id": "model-b", "object": "model", "owned_by": "llamacpp", "meta": {"n_ctx": 32768}},
        ]}))],
    );
    let dir = tmp();
    let home = tmp();
    let cwd = canonical(dir.path());
    let mut mm = spawn_mm(&cwd, home.path(), &server.url());
    let r = mm.client.initialize(false).await;
    assert_eq!(
        r["result"]["agentCapabilities"]["sessionCapabilities"],
        json!({"close": {}, "list": {}, "resume": {}, "delete": {}})
    );
    let (_, answer) = mm
        .client
        .call("session/new", json!({"cwd": cwd, "mcpServers": []}))
        .await;
    let id = answer["result"]["sessionId"].as_str().unwrap().to_string();
    assert_eq!(
        model_option_of(&mut mm.client, &answer).await,
        model_option("model-a", &["model-a", "model-b"]),
        "embedding models are not offered"
    );
    mm.client.prompt(&id, "hello").await;
    let (_, r) = mm
        .client
        .call(
            "session/set_config_option",
            json!({"sessionId": id, "configId": "model", "value": "model-b"}),
        )
        .await;
    assert_eq!(r["result"]["configOptions"][1]["currentValue"], "model-b");
    let (before, _) = mm.client.prompt(&id, "hello again").await;
    assert_eq!(agent_text(&before), "from b");
    let chats = server.received("POST /v1/chat/completions");
    assert_eq!(chats[0].json()["model"], "model-a");
    assert_eq!(
        chats[1].json()["model"],
        "model-b",
        "the next request names the new model"
    );
    assert_eq!(server.violations(), Vec::<String>::new());

    // Reopened from the list in a new process: the conversation goes on.
    let (_, r) = mm.client.call("session/list", json!({"cwd": cwd})).await;
    assert_eq!(r["result"]["sessions"][0]["sessionId"], json!(id));
    assert_eq!(r["result"]["sessions"][0]["title"], "hello");
    mm.client.close().await;
    assert_eq!(mm.child.wait().await.unwrap().code(), Some(0));
    server.push([Reply::text("still here")]);
    let mut mm = spawn_mm(&cwd, home.path(), &server.url());
    mm.client.initialize(false).await;
    let (_, r) = mm.client.call("session/list", json!({})).await;
    assert_eq!(
        r["result"]["sessions"][0]["sessionId"],
        json!(id),
        "the process's cwd is listed without a cwd"
    );
    let (_, r) = mm
        .client
        .call(
            "session/resume",
            json!({"sessionId": id, "cwd": cwd, "mcpServers": []}),
        )
        .await;
    assert_eq!(r["result"]["modes"]["currentModeId"], "yolo");
    let (before, _) = mm.client.prompt(&id, "and now?").await;
    assert_eq!(agent_text(&before), "still here");
    let last = server.requests().last().unwrap().clone();
    let contents: Vec<&str> = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(contents, ["hello", "hello again", "and now?"]);
    let (_, r) = mm
        .client
        .call("session/close", json!({"sessionId": id}))
        .await;
    assert_eq!(r["result"], json!({}));
    let (_, r) = mm
        .client
        .call("session/delete", json!({"sessionId": id}))
        .await;
    assert_eq!(r["result"], json!({}));
    let (_, r) = mm.client.call("session/list", json!({"cwd": cwd})).await;
    assert_eq!(r["result"]["sessions"], json!([]));
    mm.client.close().await;
    assert_eq!(mm.child.wait().await.unwrap().code(), Some(0));
}

// ------------------------------------------------------------------ undo

#[mm_testkit::test]
async fn undo_is_a_command_and_puts_back_the_last_turn_s_files() {
    let dir = tempfile::tempdir_in(common::target_tmpdir()).unwrap();
    let cwd = canonical(dir.path());
    std::fs::write(cwd.join("a.txt"), "one\n").unwrap();
    let model = ScriptedModel::new(vec![
        Answer::call("write_file", json!({"path": "a.txt", "content": "two\n"})).without_usage(),
        Answer::text("written").without_usage(),
    ]);
    let mut h = Harness::start(test_config(), model);
    h.client.initialize(false).await;
    let (_, r) = h
        .client
        .call("session/new", json!({"cwd": cwd, "mcpServers": []}))
        .await;
    let id = r["result"]["sessionId"].as_str().unwrap().to_string();
    let (_, commands) = h.client.until_update("available_commands_update").await;
    let names: Vec<&str> = commands["params"]["update"]["availableCommands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["new", "compact", "undo"]);
    h.client.prompt(&id, "write").await;
    assert_eq!(std::fs::read_to_string(cwd.join("a.txt")).unwrap(), "two\n");
    let (msgs, r) = h.client.prompt(&id, "/undo").await;
    assert_eq!(r["result"]["stopReason"], "end_turn");
    let chunks: Vec<String> = updates(&msgs)
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .map(|u| u["content"]["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        chunks,
        ["↩ turn 1 undone: 1 restored, 0 not restored\n  restored a.txt"]
    );
    assert_eq!(std::fs::read_to_string(cwd.join("a.txt")).unwrap(), "one\n");
    let (msgs, _) = h.client.prompt(&id, "/undo").await;
    assert!(
        updates(&msgs).iter().any(|u| u["content"]["text"]
            == "↩ nothing to undo: no turn of this session is left to undo"),
        "{msgs:#?}"
    );
    h.finish().await.unwrap();
}

//! Setting up from the editor (docs/acp.md, "Setting up from the editor"): the terminal auth
//! method offered only to a client that can run one, `session/new`'s `auth_required` for those
//! clients while no server is configured or found, the ACP registry's own check against the built
//! binary; and the details an editor shows (the window known at `session/load`, a compaction's
//! `usage_update`, an `MM_LOG` without colour codes).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use mm_testkit as common;

use std::path::{Path, PathBuf};
use std::process::Stdio;

use common::acp::*;
use common::platform::OnlyHome;
use common::{Answer, ScriptedModel};
use mm_model::ModelError;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir_in(common::target_tmpdir()).unwrap()
}

fn canonical(dir: &tempfile::TempDir) -> PathBuf {
    mm_core::paths::canonical(dir.path()).unwrap()
}

/// The request of the registry's validator, byte for byte (../shared/acp-registry/README.md).
const VALIDATOR_INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion": 1, "clientInfo": {"name": "ACP Registry Validator", "version": "1.0.0"}, "clientCapabilities": {"terminal": true, "fs": {"readTextFile": true, "writeTextFile": true}, "_meta": {"terminal_output": true, "terminal-auth": true}}}}"#;

/// The method a client that can run it is offered, `command` being mm's executable.
fn setup_method(command: &str) -> Value {
    json!({
        "type": "terminal",
        "id": "mm-setup",
        "name": "Set up a local model",
        "description": "Find a local model server, pick a model and check that it can call tools",
        "args": ["setup"],
        "_meta": {"terminal-auth": {"command": command, "args": ["setup"], "label": "Set up a local model"}}
    })
}

async fn initialize_with(h: &mut Harness, caps: Value) -> Value {
    let (_, r) = h
        .client
        .call(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": caps,
                   "clientInfo": {"name": "zed", "version": "0.200.0"}}),
        )
        .await;
    r["result"].clone()
}

// ------------------------------------------------------------------ the auth method

#[mm_testkit::test]
async fn a_client_without_terminal_auth_sees_the_reference_initialize() {
    // What acp.md fixes, whole: `authMethods: []` whatever else the client can do (sessions
    // on, the default: `loadSession` and the history's methods).
    let reference = json!({
        "protocolVersion": 1,
        "agentCapabilities": {
            "loadSession": true,
            "promptCapabilities": {"image": false, "audio": false, "embeddedContext": false},
            "mcpCapabilities": {"http": false, "sse": false},
            "sessionCapabilities": {"close": {}, "list": {}, "resume": {}, "delete": {}},
            "auth": {}
        },
        "authMethods": [],
        "agentInfo": {"name": "bob", "title": "Bob (bash-first agent)", "version": mm_core::VERSION},
        // `_session/steering`: the one addition, in the `_meta` ACP reserves for extensions.
        "_meta": {"steering": {"supported": true}}
    });
    for caps in [
        json!({}),
        json!({"terminal": true, "fs": {"readTextFile": true, "writeTextFile": true}}),
        json!({"auth": {"terminal": false}, "_meta": {"terminal_output": true}}),
        json!({"_meta": {"terminal-auth": false}}),
    ] {
        let mut h = Harness::start(test_config(), ScriptedModel::new(vec![]));
        assert_eq!(
            initialize_with(&mut h, caps.clone()).await,
            reference,
            "{caps}"
        );
        h.finish().await.unwrap();
    }
}

#[mm_testkit::test]
async fn a_client_with_terminal_auth_is_offered_mm_setup_in_both_forms() {
    let exe = std::env::current_exe().unwrap().display().to_string();
    for caps in [
        json!({"auth": {"terminal": true}}),
        json!({"_meta": {"terminal-auth": true}}),
    ] {
        let mut h = Harness::start(test_config(), ScriptedModel::new(vec![]));
        let result = initialize_with(&mut h, caps.clone()).await;
        assert_eq!(result["authMethods"], json!([setup_method(&exe)]), "{caps}");
        // `authenticate` keeps acp.md's answer, for any id.
        for id in ["mm-setup", "anything"] {
            let (_, r) = h.client.call("authenticate", json!({"methodId": id})).await;
            assert_eq!(r["result"], json!({}), "{r}");
        }
        h.finish().await.unwrap();
    }
}

#[mm_testkit::test]
async fn session_new_asks_a_terminal_auth_client_for_setup_while_no_server_is_found() {
    let dir = tmp();
    let cwd = canonical(&dir);
    let no_server = ModelError::NoServer("no model server found (tried …)".into());

    let model = ScriptedModel::new(vec![]);
    model.fail_info(no_server.clone());
    let mut h = Harness::start(test_config(), model);
    initialize_with(&mut h, json!({"_meta": {"terminal-auth": true}})).await;
    let (_, r) = h
        .client
        .call("session/new", json!({"cwd": cwd, "mcpServers": []}))
        .await;
    assert_eq!(r["error"]["code"], -32000, "{r}");
    assert_eq!(
        r["error"]["data"]["error"],
        "no model server found (tried …); run `mm setup` (the \"Set up a local model\" sign-in)"
    );
    h.finish().await.unwrap();

    // Any other client gets its session (its turns say what is wrong)…
    let model = ScriptedModel::new(vec![]);
    model.fail_info(no_server.clone());
    let mut h = Harness::start(test_config(), model);
    h.client.initialize(false).await;
    h.client.new_session(&cwd).await;
    h.finish().await.unwrap();

    // …and so does this one once a server is configured, reachable or not.
    let mut config = test_config();
    config.model.url = "http://127.0.0.1:9/v1".into();
    let model = ScriptedModel::new(vec![]);
    model.fail_info(no_server);
    let mut h = Harness::start(config, model);
    initialize_with(&mut h, json!({"auth": {"terminal": true}})).await;
    h.client.new_session(&cwd).await;
    h.finish().await.unwrap();
}

/// `mm -acp` in a fresh home, with nothing of the test's environment but `PATH` and `env`.
fn spawn_acp(home: &Path, cwd: &Path, env: &[(&str, &str)]) -> tokio::process::Child {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_mm"));
    cmd.arg("-acp")
        .current_dir(cwd)
        .only_home(home)
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    cmd.spawn().unwrap()
}

/// The registry's check (../shared/acp-registry/README.md), against the built binary: a fresh
/// HOME, `TERM=dumb`, the validator's `initialize`, and the first line of stdout as its answer,
/// which must offer a method of type `agent` or `terminal`.
#[mm_testkit::test]
async fn the_registry_check_passes_against_the_binary() {
    let home = tmp();
    let cwd = tmp();
    let mut child = spawn_acp(home.path(), cwd.path(), &[("TERM", "dumb")]);
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(format!("{VALIDATOR_INITIALIZE}\n").as_bytes())
        .await
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    tokio::time::timeout(common::HANG_GUARD, stdout.read_line(&mut first))
        .await
        .expect("no answer to initialize")
        .unwrap();
    let answer: Value = serde_json::from_str(&first).expect("the first line is the answer");
    assert_eq!(answer["id"], 1, "{first}");
    let methods = answer["result"]["authMethods"].as_array().unwrap();
    let typed = |m: &Value| {
        let t = m["type"].as_str().unwrap_or("agent");
        t == "agent" || t == "terminal"
    };
    assert!(methods.iter().any(typed), "{first}");
    // Where the binary runs from (under Wine not the Linux path cargo built it at).
    let exe = common::mm_binary();
    assert_eq!(
        answer["result"]["authMethods"],
        json!([setup_method(&exe.display().to_string())])
    );
    drop(stdin);
    let status = tokio::time::timeout(common::HANG_GUARD, child.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status.code(), Some(0));
}

// ------------------------------------------------------------------ details editors show

fn sizes(msgs: &[Value]) -> Vec<(u64, u64)> {
    updates(msgs)
        .iter()
        .filter(|u| u["sessionUpdate"] == "usage_update")
        .map(|u| (u["used"].as_u64().unwrap(), u["size"].as_u64().unwrap()))
        .collect()
}

#[mm_testkit::test]
async fn the_window_probed_since_initialize_is_in_the_load_and_the_new_usage_update() {
    let dir = tmp();
    let cwd = canonical(&dir);
    let mut config = test_config();
    config.sessions.enabled = true;
    // Not configured: only the probe knows it.
    config.context_window = 0;
    let mut h = Harness::start(config.clone(), ScriptedModel::new(vec![]));
    h.client.initialize(false).await;
    let (id, _) = h.client.new_session(&cwd).await;
    h.client.prompt(&id, "hello").await;
    h.finish().await.unwrap();

    let model = ScriptedModel::new(vec![]);
    let mut h = Harness::start(config, model.clone());
    h.client.initialize(false).await;
    // The probe runs in the background from the answer on; the load does not wait for it.
    model.wait_for_info().await;
    let (before, r) = h.client.load_session(&id, &cwd).await;
    assert!(r["result"].is_object(), "{r}");
    let loaded = sizes(&before);
    assert_eq!(loaded.len(), 1, "{before:#?}");
    assert_eq!(loaded[0].1, common::model::WINDOW);
    // A `/new` before any model call knows it too.
    let (msgs, _) = h.client.prompt(&id, "/new").await;
    assert_eq!(sizes(&msgs), [(sizes(&msgs)[0].0, common::model::WINDOW)]);
    assert_eq!(model.calls(), 0, "no model call was made");
    h.finish().await.unwrap();
}

#[mm_testkit::test]
async fn a_compaction_reports_its_summary_call_like_any_model_call() {
    let dir = tmp();
    let cwd = canonical(&dir);
    let mut config = test_config();
    config.context.keep_last_turns = 1;
    let model = ScriptedModel::new(vec![]);
    model.push_summary(Answer::text("the summary").with_usage(300, 40));
    let mut h = Harness::start(config, model);
    h.client.initialize(false).await;
    let (id, _) = h.client.new_session(&cwd).await;
    h.client.prompt(&id, "one").await;
    h.client.prompt(&id, "two").await;
    let (msgs, _) = h.client.prompt(&id, "/compact").await;
    let reported = sizes(&msgs);
    // The summary call's own measure, then the end of the command's (acp.md).
    assert_eq!(reported.len(), 2, "{msgs:#?}");
    assert_eq!(reported[0], (340, 8192));
    assert_eq!(reported[1].1, 8192);
    h.finish().await.unwrap();
}

#[mm_testkit::test]
async fn mm_log_on_a_stderr_that_is_no_terminal_has_no_colour_codes() {
    let home = tmp();
    let cwd = tmp();
    let env = [
        ("MM_LOG", "debug"),
        ("MM_MODEL_URL", "http://127.0.0.1:9/v1"),
    ];
    let mut child = spawn_acp(home.path(), cwd.path(), &env);
    // Read all along: a full pipe would stop mm before it answers.
    let mut stderr = child.stderr.take().unwrap();
    let log = tokio::spawn(async move {
        let mut err = String::new();
        stderr.read_to_string(&mut err).await.unwrap();
        err
    });
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(format!("{VALIDATOR_INITIALIZE}\n").as_bytes())
        .await
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).await.unwrap();
    drop(stdin);
    tokio::time::timeout(common::HANG_GUARD, child.wait())
        .await
        .unwrap()
        .unwrap();
    let err = log.await.unwrap();
    assert!(
        err.lines()
            .any(|l| l.contains("TRACE") || l.contains("DEBUG")),
        "the log has tracing lines: {err}"
    );
    assert!(!err.contains('\u{1b}'), "{err:?}");
}

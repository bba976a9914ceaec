//! MCP servers configured the way a user does (`~/.config/mm/config.toml`), through the real
//! binary: `mm -p` offers and calls their tools, a project's servers need trust, and no server
//! outlives mm.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use mm_testkit as common;

use std::time::Duration;

use common::mm_run::Sandbox;
use common::{FakeServer, HANG_GUARD, Reply, tool_results};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

fn fixture() -> String {
    concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/mcp/fake_mcp.py"
    )
    .to_string()
}

fn write_config(sb: &Sandbox, text: &str) {
    let path = sb.user_config();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn tool_names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        !s.rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

#[mm_testkit::test]
async fn mm_p_uses_a_configured_server_s_tools_and_leaves_no_process_behind() {
    common::need_command("python3", ".ci/run installs it");
    let server = FakeServer::start(vec![
        Reply::tool_call("fake__echo", json!({"text": "from the model"})),
        Reply::text("The server said it."),
    ])
    .await;
    let sb = Sandbox::new();
    let log = sb.home.path().join("mcp.log");
    write_config(
        &sb,
        &format!(
            "[mcp.servers.fake]\ncommand = \"python3\"\nargs = [{:?}, \"ok\"]\nenv = {{ MCP_LOG = {:?} }}\n",
            fixture(),
            log.display().to_string()
        ),
    );
    let run = sb.run(Some(&server.url()), &["-p", "echo something"]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(run.stdout, "The server said it.\n");
    assert!(
        run.stderr.contains("· MCP: fake"),
        "the banner names the server: {}",
        run.stderr
    );
    let requests = server.requests();
    assert!(tool_names(&requests[0]).contains(&"fake__echo".to_string()));
    assert_eq!(tool_results(&requests[1]), vec!["echo: from the model"]);
    // The server was stopped on the way out.
    let first: Value = serde_json::from_str(
        std::fs::read_to_string(&log)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    let pid = first["pid"].as_i64().unwrap() as i32;
    let deadline = std::time::Instant::now() + HANG_GUARD;
    while alive(pid) && std::time::Instant::now() < deadline {
        // A process's end has no event to await from here: poll, bounded.
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(!alive(pid), "the MCP server outlived mm");
}

#[mm_testkit::test]
async fn mm_p_with_the_reference_server() {
    common::need_command(
        "mcp-server-everything",
        "npm install -g @modelcontextprotocol/server-everything",
    );
    let server = FakeServer::start(vec![
        Reply::tool_call("everything__get-sum", json!({"a": 19, "b": 23})),
        Reply::text("42."),
    ])
    .await;
    let sb = Sandbox::new();
    write_config(
        &sb,
        "[mcp.servers.everything]\ncommand = \"mcp-server-everything\"\nargs = [\"stdio\"]\n",
    );
    let run = sb.run(Some(&server.url()), &["-p", "add 19 and 23"]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(run.stdout, "42.\n");
    assert_eq!(
        tool_results(&server.requests()[1]),
        vec!["The sum of 19 and 23 is 42."]
    );
}

#[mm_testkit::test]
async fn an_untrusted_project_s_servers_are_named_in_the_banner_and_not_started() {
    let server = FakeServer::start(vec![Reply::text("ok")]).await;
    let sb = Sandbox::new();
    sb.write(
        ".mm/config.toml",
        &format!(
            "[mcp.servers.files]\ncommand = \"python3\"\nargs = [{:?}, \"ok\"]\n",
            fixture()
        ),
    );
    let run = sb.run(Some(&server.url()), &["-p", "hi"]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let expected = format!(
        "warning: project {} is not trusted: ignored its 1 MCP server(s) (files); trust it with: mm trust {}",
        sb.dir().display(),
        sb.dir().display()
    );
    assert!(run.stderr.lines().any(|l| l == expected), "{}", run.stderr);
    assert!(
        !tool_names(&server.requests()[0])
            .iter()
            .any(|n| n.starts_with("files__"))
    );
}

#[mm_testkit::test]
async fn a_server_that_fails_to_start_is_a_warning_and_the_prompt_is_answered() {
    common::need_command("python3", ".ci/run installs it");
    let server = FakeServer::start(vec![Reply::text("answered anyway")]).await;
    let sb = Sandbox::new();
    write_config(
        &sb,
        &format!(
            "[mcp.servers.broken]\ncommand = \"python3\"\nargs = [{:?}, \"crash-on-start\"]\n",
            fixture()
        ),
    );
    let run = sb.run(Some(&server.url()), &["-p", "hi"]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(run.stdout, "answered anyway\n");
    assert!(
        run.stderr.lines().any(|l| l
            == "MCP server broken failed: exited with status 3: boom: MY_API_KEY is not set (during initialize); its tools are withdrawn until it restarts (at most once a minute)"),
        "{}",
        run.stderr
    );
}

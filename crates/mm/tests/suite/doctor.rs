//! `mm doctor` against the fake model server in the modes that matter — tool calls structured,
//! tool calls only as text, no tool support, a tiny window, no server — line by line, and its
//! `--json`. The real llama.cpp server's report is in tests/e2e.rs.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use mm_testkit as common;

use common::mm_run::{Run, Sandbox};
use common::platform::native;
use common::probes::{cached, counted};
use common::{FakeServer, Options, Reply};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// The seconds a line measures (`0.4s`) vary from run to run: `N.Ns`. And the sandbox's line and
/// the network's after it, which say what this kernel enforces of the default fence
/// (`workspace-write`, the allow-list): `SANDBOX` (their words are
/// `sandbox::doctor_says_what_is_fenced_and_hidden`'s and
/// `the_network_line_says_the_mode_the_hosts_and_that_the_proxy_works`').
fn timeless(text: &str) -> String {
    let text = regex::Regex::new(r"\d+\.\ds")
        .unwrap()
        .replace_all(text, "N.Ns");
    regex::Regex::new(
        r"(?m)^[✓!] sandbox: workspace-write.*\n(  fix: .*\n)?([✓!] network: .*\n(  fix: .*\n)?)?",
    )
    .unwrap()
    .replace_all(&text, "SANDBOX\n")
    .into_owned()
}

fn paris() -> Value {
    json!({"city": "Paris"})
}

async fn doctor(sb: &Sandbox, url: &str, extra: &[&str]) -> Run {
    let mut args = vec!["doctor"];
    args.extend_from_slice(extra);
    let mut c = sb.command(Some(url), &args);
    // The package caches are the test home's (none), not those of the machine's user that
    // rustup's CARGO_HOME or a GOPATH would name.
    for var in [
        "CARGO_HOME",
        "GOPATH",
        "GOMODCACHE",
        "GOCACHE",
        "XDG_CACHE_HOME",
    ] {
        c.env_remove(var);
    }
    common::mm_run::finish_within(c.spawn().unwrap(), sb.limit).await
}

/// The user's config file of a sandbox as doctor names it, in the system's own form
/// (`~\.config\mm\config.toml` on Windows).
fn user_file() -> String {
    native("~/.config/mm/config.toml")
}

/// The lines every default sandbox ends with: the project, the sandbox, sessions (on by default).
fn tail(sb: &Sandbox) -> String {
    format!(
        "✓ project: {} has no .mm/config.toml
SANDBOX
✓ sessions: on: 0 saved in {}, the last 100 kept (sessions.keep)
",
        sb.dir().display(),
        sb.path(".mm/sessions").display()
    )
}

fn head(url: &str) -> String {
    format!(
        "mm doctor v0.1.0
✓ config: built-in defaults (no {}, no .mm/config.toml)
✓ server: llama.cpp at {url} (model.url, set by env MM_MODEL_URL)
✓ model: fake-model
✓ streaming: 3 tokens in N.Ns (first after N.Ns)
",
        user_file()
    )
}

#[mm_testkit::test]
async fn structured_tool_calls_and_a_warm_cache_pass() {
    common::platform::need_bash();
    let server = FakeServer::start(vec![
        counted(),
        Reply::tool_call("get_time", paris()),
        Reply::text("It is 14:05 in Paris."),
        cached(176),
    ])
    .await;
    let sb = Sandbox::new();
    let run = doctor(&sb, &server.url(), &[]).await;
    assert_eq!(
        timeless(&run.stdout),
        format!(
            "{}✓ context window: 32768 tokens
✓ tool calls: get_time({{\"city\":\"Paris\"}}) came back as a structured call, and the server took its result
✓ prompt cache: 176 of 180 prompt tokens cached on a repeated request
{}everything mm needs works
",
            head(&server.url()),
            tail(&sb)
        ),
        "stderr:\n{}",
        run.stderr
    );
    assert_eq!(run.code, Some(0));
    assert_eq!(server.violations(), Vec::<String>::new());
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    // The tool call is asked for with tool_choice; the round trip goes back as mm sends it.
    assert_eq!(requests[1]["tool_choice"], "required");
    assert_eq!(requests[1]["tools"][0]["function"]["name"], "get_time");
    assert_eq!(requests[2].get("tool_choice"), None);
    assert_eq!(requests[2]["tools"][0]["function"]["name"], "get_time");
    let roles: Vec<&str> = requests[2]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool"]);
    // The cache is checked with the streaming request's very prompt.
    assert_eq!(requests[3]["messages"], requests[0]["messages"]);
    assert_eq!(requests[3]["max_tokens"], 1);
}

#[mm_testkit::test]
async fn a_call_written_as_text_is_read_but_the_server_is_told_to_parse_them() {
    common::platform::need_bash();
    let call = r#"<tool_call>{"name": "get_time", "arguments": {"city": "Paris"}}</tool_call>"#;
    let server = FakeServer::start(vec![
        counted(),
        Reply::text(call),
        Reply::text("It is 14:05 in Paris."),
        cached(0),
    ])
    .await;
    let sb = Sandbox::new();
    let run = doctor(&sb, &server.url(), &[]).await;
    assert_eq!(
        timeless(&run.stdout),
        format!(
            "{}✓ context window: 32768 tokens
! tool calls: get_time({{\"city\":\"Paris\"}}) came back written as text (Hermes/Qwen <tool_call> JSON): mm reads it (model.textToolCalls = \"auto\"), but the server does not parse tool calls
  fix: restart llama-server with `--jinja` (and a model whose chat template has tool calls, or `--chat-template-file`)
! prompt cache: 0 of 180 prompt tokens cached on a repeated request: every turn reads the whole history again
  fix: keep llama-server's prompt cache on (the default: `cache_prompt`), with one slot per client (`--parallel 1`)
{}everything mm needs works
",
            head(&server.url()),
            tail(&sb)
        )
    );
    assert_eq!(run.code, Some(0), "warnings do not fail");
    assert_eq!(server.violations(), Vec::<String>::new());

    // With text calls off, mm would never run it: that fails.
    let server = FakeServer::start(vec![counted(), Reply::text(call), Reply::text("ok")]).await;
    let run = doctor(&sb, &server.url(), &["-c", "model.textToolCalls=off"]).await;
    assert!(
        run.stdout.contains("✗ tool calls: get_time({\"city\":\"Paris\"}) came back written as text (Hermes/Qwen <tool_call> JSON), which mm reads only with model.textToolCalls = \"auto\" (it is \"off\")\n  fix: set model.textToolCalls = \"auto\", or restart llama-server with `--jinja`"),
        "{}",
        run.stdout
    );
    assert_eq!(run.code, Some(1));
}

#[mm_testkit::test]
async fn a_call_in_a_format_mm_cannot_read_says_the_format() {
    // Kimi K2's markers, the arguments cut: mm sees the format but cannot read the call.
    let broken = "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_time:0<|tool_call_argument_begin|>{\"city\": Paris}<|tool_call_end|>";
    let server = FakeServer::start(vec![counted(), Reply::text(broken), cached(170)]).await;
    let sb = Sandbox::new();
    let run = doctor(&sb, &server.url(), &[]).await;
    assert!(
        run.stdout.contains("✗ tool calls: the model wrote its call as text (Kimi K2 <|tool_calls_section_begin|>), but mm could not read it: \"<|tool_calls_section_begin|><|tool_call_begin|>functions.ge…\"\n"),
        "{}",
        run.stdout
    );
    assert_eq!(run.code, Some(1));
}

#[mm_testkit::test]
async fn the_chat_template_the_server_reports_names_the_models_own_form() {
    common::platform::need_bash();
    // Functionary writes its first call as `NAME` and JSON on the next line, which mm reads only
    // when the server's chat template says the model is Functionary.
    let first_call = "get_time\n{\"city\": \"Paris\"}";
    let server = FakeServer::start(vec![
        counted(),
        Reply::text(first_call),
        Reply::text("It is 14:05 in Paris."),
        cached(170),
    ])
    .await;
    server.route(
        "GET /props",
        vec![Reply::json(json!({
            "default_generation_settings": {"n_ctx": 32768},
            "chat_template": "{% for m in messages %}>>>{{ m.recipient }}\n{{ m.content }}{% endfor %}{{ '>>>all\n' }}",
        }))],
    );
    let sb = Sandbox::new();
    let run = doctor(&sb, &server.url(), &[]).await;
    assert!(
        run.stdout.contains("! tool calls: get_time({\"city\":\"Paris\"}) came back written as text (Functionary <function=…> / >>>): mm reads it"),
        "{}",
        run.stdout
    );
    assert_eq!(run.code, Some(0));
}

#[mm_testkit::test]
async fn a_server_without_tool_support_fails_the_check_and_the_exit_code() {
    common::platform::need_bash();
    let refusal = || {
        Reply::error(
            400,
            json!({"error": {"message": "fake-model does not support tools"}}),
        )
    };
    let server = FakeServer::start(vec![counted(), refusal(), refusal(), cached(170)]).await;
    let sb = Sandbox::new();
    let run = doctor(&sb, &server.url(), &[]).await;
    assert_eq!(
        timeless(&run.stdout),
        format!(
            "{}✓ context window: 32768 tokens
✗ tool calls: the server refused a request with a tool: model server answered 400: fake-model does not support tools
  fix: restart llama-server with `--jinja` (and a model whose chat template has tool calls, or `--chat-template-file`)
✓ prompt cache: 170 of 180 prompt tokens cached on a repeated request
{}mm needs a fix: tool calls
",
            head(&server.url()),
            tail(&sb)
        )
    );
    assert_eq!(run.code, Some(1));
    // Asked with tool_choice, then once more without it (a server may not know it).
    let requests = server.requests();
    assert_eq!(requests[1]["tool_choice"], "required");
    assert_eq!(requests[2].get("tool_choice"), None);

    // A model that answers in prose, never calling the tool, fails too.
    let server = FakeServer::start(vec![
        counted(),
        Reply::text("I cannot tell the time, but Paris is lovely."),
        cached(170),
    ])
    .await;
    let run = doctor(&sb, &server.url(), &[]).await;
    assert!(
        run.stdout.contains("✗ tool calls: the model answered with text, not a call: \"I cannot tell the time, but Paris is lovely.\"\n  fix: restart llama-server with `--jinja`"),
        "{}",
        run.stdout
    );
    assert_eq!(run.code, Some(1));
}

#[mm_testkit::test]
async fn a_tiny_window_fails_with_the_way_to_raise_it() {
    common::platform::need_bash();
    let options = Options {
        n_ctx: Some(2048),
        ..Options::default()
    };
    let script = vec![
        counted(),
        Reply::tool_call("get_time", paris()),
        Reply::text("14:05"),
        cached(176),
    ];
    let server = FakeServer::start_with(options, script).await.unwrap();
    let sb = Sandbox::new();
    let run = doctor(&sb, &server.url(), &[]).await;
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(
        lines[5..7],
        [
            "✗ context window: 2048 tokens: too small for an agent, the system prompt and the tools take most of it",
            "  fix: restart llama-server with a larger context, e.g. `-c 32768`",
        ],
        "{}",
        run.stdout
    );
    assert_eq!(lines.last(), Some(&"mm needs a fix: context window"));
    assert_eq!(run.code, Some(1));

    // 12k works, with a warning; a window set in the configuration is named.
    let server = FakeServer::start(vec![
        counted(),
        Reply::tool_call("get_time", paris()),
        Reply::text("14:05"),
        cached(176),
    ])
    .await;
    let run = doctor(&sb, &server.url(), &["-c", "contextWindow=12288"]).await;
    assert!(
        run.stdout.contains("! context window: 12288 tokens (contextWindow, set by -c): small for an agent, long sessions are compressed often\n  fix: restart llama-server with a larger context, e.g. `-c 32768`\n"),
        "{}",
        run.stdout
    );
    assert_eq!(run.code, Some(0));
}

#[mm_testkit::test]
async fn no_server_fails_and_skips_what_needs_one() {
    common::platform::need_bash();
    let sb = Sandbox::new();
    let url = format!("http://127.0.0.1:{}/v1", common::refused_port());
    let run = doctor(&sb, &url, &[]).await;
    assert_eq!(
        timeless(&run.stdout),
        format!(
            "mm doctor v0.1.0
✓ config: built-in defaults (no {}, no .mm/config.toml)
✗ server: not reachable at {url}: connection refused
  fix: start the server, or correct model.url (set by env MM_MODEL_URL)
– model: not checked: no model server
– streaming: not checked: no model server
– context window: not checked: no model server
– tool calls: not checked: no model server
– prompt cache: not checked: no model server
{}mm needs a fix: server
",
            user_file(),
            tail(&sb)
        )
    );
    assert_eq!(run.code, Some(1));
    assert_eq!(run.stderr, "");
}

/// Doctor names the user's config file as it is on this system, in the system's own form, in
/// its config line and in the fixes that say to edit it (on Windows `~\.config\mm\config.toml`
/// or `~\AppData\Roaming\mm\config.toml`, never `~/.config/mm/config.toml`). Only these lines:
/// the others depend on the machine (a bash on Windows).
#[mm_testkit::test]
async fn the_user_s_config_file_is_named_as_the_system_writes_it() {
    let sb = Sandbox::new();
    let url = format!("http://127.0.0.1:{}/v1", common::refused_port());
    // The fence off (the default is on), so that doctor says where to turn it on.
    let mut c = sb.command(Some(&url), &["doctor"]);
    c.env("MM_SANDBOX", "off");
    let run = common::mm_run::finish_within(c.spawn().unwrap(), sb.limit).await;
    let lines: Vec<&str> = run.stdout.lines().collect();
    let user = user_file();
    for line in [
        format!("✓ config: built-in defaults (no {user}, no .mm/config.toml)"),
        format!(
            "  fix: tools.sandbox = \"workspace-write\", the default, fences them: remove tools.sandbox = \"off\" from {user} (or run with --sandbox workspace-write)"
        ),
    ] {
        assert!(
            lines.contains(&line.as_str()),
            "{line}\nin:\n{}",
            run.stdout
        );
    }
}

#[mm_testkit::test]
async fn the_configuration_and_the_project_are_reported() {
    common::platform::need_bash();
    let server = FakeServer::start(vec![
        counted(),
        Reply::tool_call("get_time", paris()),
        Reply::text("14:05"),
        cached(176),
    ])
    .await;
    let sb = Sandbox::new();
    let user = sb.user_config();
    std::fs::create_dir_all(user.parent().unwrap()).unwrap();
    std::fs::write(
        &user,
        "modle = 1\n[tools]\nsandbox = \"workspace-write\"\n[sessions]\nenabled = true\n",
    )
    .unwrap();
    sb.write(
        ".mm/config.toml",
        "[[hooks.turnEnd]]\ncommand = \"notify-send done\"\n",
    );
    let run = doctor(&sb, &server.url(), &[]).await;
    let dir = sb.dir();
    let lines: Vec<String> = timeless(&run.stdout).lines().map(String::from).collect();
    assert_eq!(
        lines[1..3],
        [
            format!(
                "! config: {}, {}; 1 warning(s)",
                user_file(),
                sb.path(".mm/config.toml").display()
            ),
            format!("  unknown key \"modle\" in {}", user.display()),
        ],
        "{}",
        run.stdout
    );
    let project = lines.iter().position(|l| l.contains(" project: ")).unwrap();
    assert_eq!(
        lines[project..project + 3],
        [
            format!(
                "! project: {} is not trusted: its 1 command(s) in .mm/config.toml do not run",
                dir.display()
            ),
            "  hook turnEnd: notify-send done".to_string(),
            format!(
                "  fix: mm trust {} (or answer the question mm asks at start)",
                dir.display()
            ),
        ]
    );
    // The sandbox line depends on the kernel (what it lacks), but always says what is fenced
    // and hidden; sessions are on, none saved.
    assert_eq!(lines[project + 3], "SANDBOX", "{}", run.stdout);
    assert!(
        run.stdout.contains(
            "hidden from commands and mm's tools: ~/.config/mm/config.toml; package caches writable: none here"
        ),
        "{}",
        run.stdout
    );
    assert_eq!(
        lines[lines.len() - 2],
        format!(
            "✓ sessions: on: 0 saved in {}, the last 100 kept (sessions.keep)",
            sb.path(".mm/sessions").display()
        )
    );
}

#[mm_testkit::test]
async fn json_reports_every_check_for_scripts() {
    common::platform::need_bash();
    let server = FakeServer::start(vec![
        counted(),
        Reply::tool_call("get_time", paris()),
        Reply::text("14:05"),
        cached(176),
    ])
    .await;
    let sb = Sandbox::new();
    let run = doctor(&sb, &server.url(), &["--json"]).await;
    assert_eq!(run.code, Some(0));
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["ok"], true);
    let statuses: Vec<(String, String)> = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["check"].as_str().unwrap().to_string(),
                c["status"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let expected = [
        ("config", "ok"),
        ("server", "ok"),
        ("model", "ok"),
        ("streaming", "ok"),
        ("contextWindow", "ok"),
        ("toolCalls", "ok"),
        ("promptCache", "ok"),
        ("project", "ok"),
        // Whole on this kernel, or what it lacks said.
        (
            "sandbox",
            if mm_tools::sandbox::landlock_abi() >= 6
                && mm_tools::sandbox::namespace_works().is_ok()
            {
                "ok"
            } else {
                "warn"
            },
        ),
        // The fence's own network, with mm's proxy its only way out (allow-list by default).
        (
            "network",
            if mm_tools::sandbox::network_works().is_ok() {
                "ok"
            } else {
                "warn"
            },
        ),
        ("sessions", "ok"),
    ]
    .map(|(a, b)| (a.to_string(), b.to_string()));
    assert_eq!(statuses, expected);
    let checks = &report["checks"];
    assert_eq!(
        checks[1]["details"],
        json!({"url": server.url(), "kind": "llama.cpp"})
    );
    assert_eq!(
        checks[4]["details"],
        json!({"tokens": 32768, "configured": false})
    );
    assert_eq!(
        checks[5]["details"],
        json!({"came": "structured", "call": {"name": "get_time", "arguments": "{\"city\":\"Paris\"}"}, "toolChoiceRefused": false})
    );
    assert_eq!(
        checks[6]["details"],
        json!({"promptTokens": 180, "cachedTokens": 176})
    );
}

#[mm_testkit::test]
async fn a_configuration_that_does_not_load_is_the_one_failed_line() {
    let sb = Sandbox::new();
    sb.write(".mm/config.toml", "contextWindow = \"big\"\n");
    let run = sb.run(None, &["doctor"]).await;
    assert_eq!(
        run.stdout,
        format!(
            "mm doctor v0.1.0
✗ config: {}: contextWindow must be an integer, got a string
  fix: correct the file or the value it names; nothing else was checked
mm needs a fix: config
",
            sb.path(".mm/config.toml").display()
        )
    );
    assert_eq!(run.code, Some(1));
}

/// The fence's network has a line of its own (docs/sandbox.md, "The network"): the mode, the
/// hosts allowed, and whether its namespace and mm's proxy can be made here (mm doctor tries).
#[mm_testkit::test]
async fn the_network_line_says_the_mode_the_hosts_and_that_the_proxy_works() {
    if mm_tools::sandbox::landlock_abi() == 0 {
        common::skip("this kernel has no Landlock");
    }
    if let Err(why) = mm_tools::sandbox::network_works() {
        common::skip(format!("no network namespace here ({why})"));
    }
    let server = FakeServer::start(vec![
        counted(),
        Reply::tool_call("get_time", paris()),
        Reply::text("14:05"),
        cached(176),
    ])
    .await;
    let sb = Sandbox::new();
    let user = sb.user_config();
    std::fs::create_dir_all(user.parent().unwrap()).unwrap();
    let line = |config: &str| {
        std::fs::write(
            &user,
            format!("[tools]\nsandbox = \"workspace-write\"\n{config}"),
        )
        .unwrap();
        let (sb, url) = (&sb, server.url());
        async move {
            let run = doctor(sb, &url, &[]).await;
            // Right after the sandbox's line.
            let lines: Vec<&str> = run.stdout.lines().collect();
            let at = lines.iter().position(|l| l.contains(" sandbox: ")).unwrap();
            lines.get(at + 1).map(|l| l.to_string())
        }
    };
    assert_eq!(
        line("networkAllow = [\"example.com\", \"*.example.org\"]\n")
            .await
            .as_deref(),
        Some("✓ network: allow-list (2 hosts): mm's proxy is the fence's only way out")
    );
    assert_eq!(
        line("network = \"none\"\n").await.as_deref(),
        Some("✓ network: none: no connection leaves the fence")
    );
    assert_eq!(
        line("network = \"open\"\n").await.as_deref(),
        Some("✓ network: open (tools.network = \"open\"): fenced commands reach any host")
    );
    // tools.networkExpose: said, and a port another program holds on the host is a warning.
    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = held.local_addr().unwrap().port();
    let free = mm_testkit::refused_port();
    let got = line(&format!("networkExpose = [{free}, {taken}]\n"))
        .await
        .unwrap();
    if !got.contains("cannot be made here") {
        let prefix = format!(
            "! network: allow-list (24 hosts): mm's proxy is the fence's only way out; the host's 127.0.0.1 reaches its port(s) {free}, {taken} (tools.networkExpose); but 127.0.0.1:{taken} is taken on the host ("
        );
        assert!(got.starts_with(&prefix), "{got}");
        assert!(
            got.ends_with(&format!(
                "): the fence's server on port {taken} will not be reachable from it"
            )),
            "{got}"
        );
    }
    assert_eq!(
        line("network = \"open\"\nnetworkExpose = [3000]\n")
            .await
            .as_deref(),
        Some(
            "✓ network: open (tools.network = \"open\"): fenced commands reach any host; tools.networkExpose does nothing here (commands share the host's network)"
        )
    );
}

//! Asked agents inherit the asking session (agents.md, "The asking session's fence and mode"),
//! tried as a hostile model would: the fake model server scripts the outer mm and the asked one
//! (`mm -acp` itself, on the same server, in the test's home), or the recording agent of
//! mm-testkit's agents/mode_agent.py stands for a third-party agent. Each test asserts on disk (what
//! the agent's commands could write) and on the wire (what the agent received).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use mm_testkit as common;

use common::acp::updates;
use common::agents::*;
use common::mm_run::Sandbox;
use common::{FakeServer, Reply};
use pretty_assertions::assert_eq;
use serde_json::json;

/// An asked mm that runs every tool without asking, whatever the shared configuration says:
/// only the fence and the mode mm puts it in can hold it.
const YOLO_MM: &str = "[agents.second]\ncommand = \"mm\"\nargs = [\"-acp\", \"--yolo\"]\n";

/// The asked mm's turn: one `bash` call, then a word.
fn agent_runs(command: &str) -> [Reply; 2] {
    [
        Reply::tool_call("bash", json!({ "command": command })),
        Reply::text("done"),
    ]
}

fn ask(agent: &str, question: &str) -> Reply {
    Reply::tool_call("ask_agent", json!({"agent": agent, "question": question}))
}

/// The tool results of every `bash` call the asked mm made, as its model server saw them.
#[cfg(target_os = "linux")]
fn bash_results(server: &FakeServer) -> Vec<String> {
    server
        .requests()
        .iter()
        .flat_map(|r| r["messages"].as_array().cloned().unwrap_or_default())
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or("").to_string())
        .filter(|c| c.contains("exit code") || c.contains("Permission denied"))
        .collect()
}

// ------------------------------------------------------------------ the fence

// Landlock's: on other systems there is no such fence to test (docs/platforms.md).
#[cfg(target_os = "linux")]
#[mm_testkit::test]
async fn under_the_sandbox_an_asked_mm_cannot_write_where_our_own_commands_cannot() {
    need_landlock();
    // The mode by flag (the asked mm's own sandbox is off), or in the shared configuration: a
    // nested mm with a sandbox of its own still works inside ours (it cannot make its own mount
    // namespace there, and layers its Landlock ruleset on ours).
    for (mode, shared) in [
        ("read-only", false),
        ("workspace-write", false),
        ("workspace-write", true),
    ] {
        let outside = outside();
        let out_file = outside.path().join("from-the-agent.txt");
        let sandbox = Sandbox::new();
        // read-only refuses the workspace too; workspace-write only what lies outside it.
        let in_file = sandbox.path("in-the-workspace.txt");
        let command = format!("touch {} ; touch {}", out_file.display(), in_file.display());
        let [run, done] = agent_runs(&command);
        let server = FakeServer::start(vec![
            ask("second", "write the files"),
            run,
            done,
            Reply::text("asked"),
        ])
        .await;
        let r = if shared {
            configure(&sandbox, &format!("[tools]\nsandbox = {mode:?}\n{YOLO_MM}"));
            run_mm(&sandbox, &server, &["-p", "go"]).await
        } else {
            configure(&sandbox, YOLO_MM);
            run_mm(&sandbox, &server, &["--sandbox", mode, "-p", "go"]).await
        };
        assert_eq!(r.code, Some(0), "{mode}: {}", r.stderr);
        assert_eq!(r.stdout, "asked\n", "{mode}");
        assert!(
            !out_file.exists(),
            "{mode}: the agent wrote outside the fence"
        );
        assert_eq!(in_file.exists(), mode == "workspace-write", "{mode}");
        // The asked mm's command ran, and the kernel refused it.
        let results = bash_results(&server);
        assert_eq!(results.len(), 1, "{mode}: {results:?}");
        assert!(
            results[0].contains("Permission denied"),
            "{mode}: {}",
            results[0]
        );
        assert_eq!(server.violations(), Vec::<String>::new());
    }
}

// Landlock's: on other systems there is no such fence to test (docs/platforms.md).
#[cfg(target_os = "linux")]
#[mm_testkit::test]
async fn mm_ask_and_a_command_line_agent_run_inside_the_fence_too() {
    need_landlock();
    let sandbox = Sandbox::new();
    let file = sandbox.path("from-the-agent.txt");
    let [run, done] = agent_runs(&format!("touch {}", file.display()));
    let server = FakeServer::start(vec![run, done]).await;
    let r = run_mm(
        &sandbox,
        &server,
        &[
            "--sandbox",
            "read-only",
            "--ask",
            "mm -acp --yolo",
            "write it",
        ],
    )
    .await;
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.stdout, "done\n");
    assert!(!file.exists(), "mm --ask's agent wrote under read-only");
    assert!(bash_results(&server)[0].contains("Permission denied"));
}

// Landlock's: on other systems there is no such fence to test (docs/platforms.md).
#[cfg(target_os = "linux")]
#[mm_testkit::test]
async fn an_agents_own_sandbox_writable_folders_open_for_that_agent_only() {
    need_landlock();
    let state = outside();
    let elsewhere = outside();
    let (state_dir, other_dir) = (state.path(), elsewhere.path());
    let by_agent = state_dir.join("by-the-agent.txt");
    let not_its = other_dir.join("by-the-agent.txt");
    let by_bash = state_dir.join("by-bash.txt");
    let by_other_agent = state_dir.join("by-another-agent.txt");
    let [first, first_done] = agent_runs(&format!(
        "touch {} ; touch {}",
        by_agent.display(),
        not_its.display()
    ));
    let [other, other_done] = agent_runs(&format!("touch {}", by_other_agent.display()));
    let server = FakeServer::start(vec![
        ask("keeper", "write your state"),
        first,
        first_done,
        Reply::tool_call(
            "bash",
            json!({"command": format!("touch {}", by_bash.display())}),
        ),
        ask("plain", "write the keeper's state"),
        other,
        other_done,
        Reply::text("end"),
    ])
    .await;
    let sandbox = Sandbox::new();
    // The asked mms' own fence is off: only ours (with the keeper's folder open for it) holds
    // their commands.
    configure(
        &sandbox,
        &format!(
            "[agents.keeper]\ncommand = \"mm\"\nargs = [\"-acp\", \"--yolo\", \"--sandbox\", \"off\"]\nsandboxWritable = [{:?}]\n\
             [agents.plain]\ncommand = \"mm\"\nargs = [\"-acp\", \"--yolo\", \"--sandbox\", \"off\"]\n",
            state_dir.display().to_string()
        ),
    );
    let r = run_mm(
        &sandbox,
        &server,
        &["--sandbox", "workspace-write", "-p", "go"],
    )
    .await;
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.stdout, "end\n");
    assert!(
        by_agent.exists(),
        "the agent could not write its own folder"
    );
    assert!(!not_its.exists(), "the agent wrote outside its own folders");
    assert!(
        !by_bash.exists(),
        "our own bash wrote in the agent's folder"
    );
    assert!(
        !by_other_agent.exists(),
        "another agent wrote in the keeper's folder"
    );
    assert_eq!(server.violations(), Vec::<String>::new());
}

// ------------------------------------------------------------------ the mode

/// A project for the recording agents: the log of `rec` (offers every mm mode) and `bare`
/// (offers none).
struct Recording {
    sandbox: Sandbox,
}

impl Recording {
    fn new(extra: &str) -> Recording {
        let sandbox = Sandbox::new();
        configure(
            &sandbox,
            &format!(
                "{extra}{}{}",
                mode_agent("rec", &sandbox.path("rec.log"), "ask,yolo,read-only"),
                mode_agent("bare", &sandbox.path("bare.log"), "none")
            ),
        );
        Recording { sandbox }
    }

    fn rec(&self) -> Vec<String> {
        received(&self.sandbox.path("rec.log"))
    }

    fn bare(&self) -> Vec<String> {
        received(&self.sandbox.path("bare.log"))
    }
}

/// The fence hides places where it has a private mount namespace (and Landlock); skipped with
/// the reason elsewhere.
#[cfg(target_os = "linux")]
fn need_hidden_places() {
    need_landlock();
    if let Err(why) = mm_tools::sandbox::namespace_works() {
        common::skip(format!("no private mount namespace here ({why})"));
    }
}

/// The model each request to `server` named, in order.
#[cfg(target_os = "linux")]
fn models_asked(server: &FakeServer) -> Vec<String> {
    server
        .requests()
        .iter()
        .map(|q| q["model"].as_str().unwrap_or("").to_string())
        .collect()
}

// The hidden places are the Linux fence's mount namespace (docs/platforms.md).
#[cfg(target_os = "linux")]
#[mm_testkit::test]
async fn an_asked_mm_reads_the_users_config_its_commands_cannot() {
    need_hidden_places();
    // The fence hides the user's config file from the asked mm and its commands alike: the
    // asking mm hands it the file as a descriptor (docs/agents.md), which it closes before its
    // commands run. Its model name is the config's (ours is set by flag), and its `cat` of the
    // file reads nothing, on disk and on the wire; the variable naming the descriptor is gone.
    const MARK: &str = "config-text-only-mm-reads-5e1f";
    let sandbox = Sandbox::new();
    let config = sandbox.user_config();
    let copy = sandbox.path("copy.txt");
    let [runs, done] = agent_runs(&format!(
        "cat {0} > {1}; cat {0}; echo \"exit code $? fd=${{MM_CONFIG_FD:-none}}\"",
        config.display(),
        copy.display()
    ));
    let server = FakeServer::start(vec![
        ask("second", "show me the config"),
        runs,
        done,
        Reply::text("end"),
    ])
    .await;
    configure(
        &sandbox,
        &format!("# {MARK}\n[model]\nname = \"from-the-users-config\"\n{YOLO_MM}"),
    );
    let r = run_mm(&sandbox, &server, &["--model", "ours", "-p", "go"]).await;
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.stdout, "end\n");
    let models = models_asked(&server);
    assert_eq!(
        models,
        [
            "ours",
            "from-the-users-config",
            "from-the-users-config",
            "ours"
        ]
    );
    assert_eq!(bash_results(&server).len(), 1);
    assert!(
        bash_results(&server)[0].contains("exit code 0 fd=none"),
        "{:?}",
        bash_results(&server)
    );
    assert_eq!(std::fs::read_to_string(&copy).unwrap(), "");
    for q in server.requests() {
        assert!(!q.to_string().contains(MARK), "{q}");
    }
    assert_eq!(server.violations(), Vec::<String>::new());
}

// The hidden places are the Linux fence's mount namespace (docs/platforms.md).
#[cfg(target_os = "linux")]
#[mm_testkit::test]
async fn an_agent_asked_by_an_asked_mm_reads_the_users_config_too() {
    need_hidden_places();
    // The asked mm cannot open the hidden file either: it hands on the text it was handed, so
    // the mm it asks in turn (the deepest asking allows) has the user's settings too.
    let sandbox = Sandbox::new();
    let server = FakeServer::start(vec![
        ask("second", "ask further"),
        ask("second", "how deep?"),
        Reply::text("deep"),
        Reply::text("mid"),
        Reply::text("end"),
    ])
    .await;
    configure(
        &sandbox,
        &format!("[model]\nname = \"from-the-users-config\"\n{YOLO_MM}"),
    );
    let r = run_mm(&sandbox, &server, &["--model", "ours", "-p", "go"]).await;
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.stdout, "end\n");
    let models = models_asked(&server);
    let users = "from-the-users-config";
    assert_eq!(models, ["ours", users, users, users, "ours"]);
    assert_eq!(server.violations(), Vec::<String>::new());
}

#[mm_testkit::test]
async fn in_read_only_mode_over_acp_the_agent_is_set_read_only_or_not_asked() {
    need_python();
    let w = Recording::new("");
    let target = w.sandbox.path("written.txt");
    let server = FakeServer::start(vec![
        ask("rec", &format!("write {}", target.display())),
        ask("bare", "hello"),
        Reply::text("ok"),
    ])
    .await;
    let mut acp = spawn_acp(&w.sandbox, &server.url());
    acp.client.initialize(true).await;
    let (session, _) = acp.client.new_session(&w.sandbox.dir()).await;
    let (_, r) = acp
        .client
        .call(
            "session/set_mode",
            json!({"sessionId": session, "modeId": "read-only"}),
        )
        .await;
    assert_eq!(r["result"], json!({}), "{r}");
    let (msgs, r) = acp.client.prompt(&session, "go").await;
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    // The agent was put in read-only before the question; it asked to write anyway, and mm
    // refused for it without a question to the client.
    assert_eq!(
        w.rec(),
        [
            "initialize",
            "session/new",
            "session/set_mode read-only",
            "session/prompt",
            "response"
        ]
    );
    assert!(
        !msgs
            .iter()
            .any(|m| m["method"] == "session/request_permission"),
        "{msgs:#?}"
    );
    assert!(!target.exists());
    let results: Vec<String> = updates(&msgs)
        .iter()
        .filter(|u| u["status"] == "completed" || u["status"] == "failed")
        .map(|u| u["rawOutput"]["output"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        results,
        [
            "mode=read-only; permission=rec-no",
            "[ask_agent refused: read-only mode]"
        ]
    );
    // The agent without a read-only mode was started, and never asked.
    assert_eq!(w.bare(), ["initialize", "session/new"]);
    let requests = server.requests();
    assert_eq!(
        last_tool_result(&requests[2]),
        "[ask_agent refused: read-only mode]"
    );
    let run = acp.finish().await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(server.violations(), Vec::<String>::new());
}

#[mm_testkit::test]
async fn in_ask_mode_the_asked_mm_asks_and_a_rejection_keeps_its_command_from_running() {
    let sandbox = Sandbox::new();
    let file = sandbox.path("from-the-agent.txt");
    let [run, done] = agent_runs(&format!("touch {}", file.display()));
    let server = FakeServer::start(vec![
        ask("second", "write it"),
        run,
        done,
        Reply::text("the agent was refused"),
    ])
    .await;
    // The user's yolo = false; the asked mm is started with --yolo, which only the mode mm puts
    // it in overrides.
    configure(&sandbox, &format!("yolo = false\n{YOLO_MM}"));
    let mut acp = spawn_acp(&sandbox, &server.url());
    acp.client.initialize(true).await;
    let (session, _) = acp.client.new_session(&sandbox.dir()).await;
    let id = acp.client.send_prompt(&session, "go").await;
    let (_, permission) = acp.client.until_request("session/request_permission").await;
    assert_eq!(
        permission["params"]["toolCall"]["title"],
        format!("second: bash: touch {}", file.display())
    );
    let reject = permission["params"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["kind"] == "reject_once")
        .unwrap()["optionId"]
        .clone();
    acp.client
        .select_option(&permission, reject.as_str().unwrap())
        .await;
    let (_, r) = acp.client.until_response(id).await;
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    assert!(!file.exists(), "the rejected command ran");
    assert_eq!(
        last_tool_result(&server.requests()[2]),
        "[command rejected by the user]"
    );
    let run = acp.finish().await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(server.violations(), Vec::<String>::new());
}

#[mm_testkit::test]
async fn mm_ask_puts_the_agent_in_the_configured_mode() {
    need_python();
    for (flag, mode) in [("--no-yolo", "ask"), ("--yolo", "yolo")] {
        let w = Recording::new("");
        let target = w.sandbox.path("written.txt");
        let r = run(
            &w.sandbox,
            None,
            &[flag, "--ask", "rec", &format!("write {}", target.display())],
        )
        .await;
        assert_eq!(r.code, Some(0), "{mode}: {}", r.stderr);
        // mm --ask cannot ask its user: the agent's own refusal, whatever the mode.
        assert_eq!(r.stdout, format!("mode={mode}; permission=rec-no\n"));
        assert!(!target.exists());
        assert_eq!(
            w.rec(),
            [
                "initialize",
                "session/new",
                &format!("session/set_mode {mode}"),
                "session/prompt",
                "response"
            ]
        );
    }
}

#[mm_testkit::test]
async fn a_kept_agent_is_put_in_the_sessions_mode_again_before_each_question() {
    need_python();
    let w = Recording::new("");
    let server = FakeServer::start(vec![
        ask("rec", "first"),
        Reply::text("one"),
        ask("rec", "second"),
        Reply::text("two"),
        ask("bare", "third"),
        Reply::text("three"),
    ])
    .await;
    let mut acp = spawn_acp(&w.sandbox, &server.url());
    acp.client.initialize(true).await;
    let (session, _) = acp.client.new_session(&w.sandbox.dir()).await;
    let set = |mode: &str| json!({"sessionId": session, "modeId": mode});
    acp.client.call("session/set_mode", set("ask")).await;
    acp.client.prompt(&session, "go").await;
    acp.client.call("session/set_mode", set("yolo")).await;
    acp.client.prompt(&session, "again").await;
    // An agent without the mode keeps its own in ask and yolo: it is asked, never set.
    acp.client.call("session/set_mode", set("ask")).await;
    acp.client.prompt(&session, "the other").await;
    assert_eq!(
        w.rec(),
        [
            "initialize",
            "session/new",
            "session/set_mode ask",
            "session/prompt",
            "session/set_mode yolo",
            "session/prompt",
        ]
    );
    assert_eq!(w.bare(), ["initialize", "session/new", "session/prompt"]);
    let requests = server.requests();
    assert_eq!(last_tool_result(&requests[1]), "mode=ask");
    assert_eq!(last_tool_result(&requests[3]), "mode=yolo");
    assert_eq!(last_tool_result(&requests[5]), "mode=default");
    acp.finish().await;
    assert_eq!(server.violations(), Vec::<String>::new());
}

/// `mm ARGS` in the sandbox against the fake server, `mm` on its `PATH`.
#[cfg(target_os = "linux")]
async fn run_mm(sandbox: &Sandbox, server: &FakeServer, args: &[&str]) -> common::mm_run::Run {
    run(sandbox, Some(&server.url()), args).await
}

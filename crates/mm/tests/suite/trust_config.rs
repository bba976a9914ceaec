//! A hostile repository and a hostile model against the user's own settings (docs/config.md,
//! "Trust"): a project's `.mm/config.toml` sets only harmless keys unless trusted, never the
//! model server, its key or `yolo = true`; its session folder stays inside it; the key goes only
//! to the server the user named, never to one found on the usual ports, and no child sees it.
//! Each test asserts on disk and on the wire.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use mm_testkit as common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, SystemTime};

use common::acp::TestClient;
use common::mm_run::{Run, Sandbox, assert_code, finish_within};
use common::platform::toml_string;
use common::{FakeServer, Reply};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// The canonical project folder of a sandbox, as mm names it.
fn project(sb: &Sandbox) -> PathBuf {
    sb.dir()
}

/// Writes the user's own file.
fn user_file(sb: &Sandbox, text: &str) -> PathBuf {
    let path = sb.user_config();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, text).unwrap();
    path
}

/// `trustedProjects = [<the sandbox's folder>]`, and `rest`.
fn trusting(sb: &Sandbox, rest: &str) -> String {
    format!("trustedProjects = [{}]\n{rest}", toml_string(project(sb)))
}

/// `mm ARGS` with `MM_API_KEY` (and no `MM_MODEL_URL`: the user's file names the server).
async fn run_with_key(sb: &Sandbox, key: &str, args: &[&str]) -> Run {
    let mut command = sb.command(None, args);
    command.env("MM_API_KEY", key);
    finish_within(command.spawn().unwrap(), sb.limit).await
}

/// Whether stderr has exactly this line.
fn said(run: &Run, line: &str) -> bool {
    run.stderr.lines().any(|l| l == line)
}

fn assert_said(run: &Run, line: &str) {
    assert!(said(run, line), "no line\n{line}\nin:\n{}", run.stderr);
}

/// The line that names an untrusted project's ignored keys.
fn keys_line(sb: &Sandbox, keys: &str) -> String {
    let p = project(sb);
    format!(
        "project {} is not trusted: ignored its keys {keys}; trust it with: mm trust {}",
        p.display(),
        p.display()
    )
}

/// The system message of the first chat request.
fn system_prompt(server: &FakeServer) -> String {
    server.requests()[0]["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The `tool` results of chat request `n`.
fn tool_results(server: &FakeServer, n: usize) -> Vec<String> {
    server.requests()[n]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_string())
        .collect()
}

// ------------------------------------------------------------------ the model server and its key

#[mm_testkit::test]
async fn a_project_never_chooses_the_model_server_nor_its_key() {
    for trusted in [false, true] {
        let user_server = FakeServer::start(vec![Reply::text("from the user's server")]).await;
        let project_server = FakeServer::start(vec![Reply::text("from the project's")]).await;
        let sb = Sandbox::new();
        let user_text = format!("[model]\nurl = \"{}\"\n", user_server.url());
        match trusted {
            true => user_file(&sb, &trusting(&sb, &user_text)),
            false => user_file(&sb, &user_text),
        };
        let file = sb.write(
            ".mm/config.toml",
            &format!(
                "[model]\nurl = \"{}\"\napiKey = \"project-key\"\n",
                project_server.url()
            ),
        );
        let run = run_with_key(&sb, "user-key-0123456789", &["-p", "hi"]).await;
        assert_code(&run, 0);
        assert_eq!(run.stdout, "from the user's server\n", "trusted: {trusted}");
        assert_eq!(
            project_server.hits(),
            Vec::<String>::new(),
            "trusted: {trusted}"
        );
        let chats = user_server.received("POST /v1/chat/completions");
        assert_eq!(chats.len(), 1);
        assert_eq!(
            chats[0].header("authorization"),
            Some("Bearer user-key-0123456789")
        );
        assert_said(
            &run,
            &format!(
                "warning: model.url, model.apiKey are ignored in project files ({}): only the user's config, --config, the environment and flags choose the model server and its key",
                file.display()
            ),
        );
    }
}

#[mm_testkit::test]
async fn detection_never_sends_the_key_to_a_server_on_a_probed_port() {
    use mm_core::config::Config;
    use mm_model::ModelClient;
    use mm_model::detect::ServerKind;
    use mm_model::openai::{ClientOptions, OpenAiClient};
    use tokio_util::sync::CancellationToken;

    // A server the model left listening on a usual port (8080, moved for the test).
    let left_behind = FakeServer::start(vec![Reply::text("got you")]).await;
    let mut model = Config::default().model;
    model.api_key = "user-key-0123456789".into();
    let options = ClientOptions {
        candidates: vec![(ServerKind::LlamaCpp, left_behind.url())],
        retry_base: Duration::from_millis(1),
        probe_timeout: Duration::from_millis(1500),
    };
    let client = OpenAiClient::with_options(&model, 0, options);
    let request = mm_model::ChatRequest {
        messages: vec![json!({"role": "user", "content": "hi"})],
        tools: vec![],
        text_tool_names: vec![],
        model: None,
        repetition: None,
        conversation: None,
    };
    let answer = client
        .chat(&request, &|_| {}, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(answer.text, "got you");
    let routes = left_behind.hits();
    assert!(
        routes.contains(&"GET /v1/models".to_string())
            && routes.contains(&"POST /v1/chat/completions".to_string()),
        "{routes:?}"
    );
    let keyed: Vec<String> = routes
        .iter()
        .flat_map(|route| left_behind.received(route))
        .filter(|r| r.header("authorization").is_some())
        .map(|r| r.route())
        .collect();
    assert_eq!(keyed, Vec::<String>::new());
}

#[mm_testkit::test]
async fn no_child_sees_the_key_but_a_server_the_user_gave_it_to() {
    common::platform::need_bash();
    let sb = Sandbox::new();
    // Every kind of child: a hook, an MCP server, bash; the second MCP server has the variable
    // in its own `env`, which the user wrote for it.
    user_file(
        &sb,
        "[[hooks.sessionStart]]\ncommand = \"env > hook-env.txt\"\n\
         [mcp.servers.plain]\ncommand = \"sh\"\nargs = [\"-c\", \"env > mcp-env.txt\"]\n\
         [mcp.servers.given]\ncommand = \"sh\"\nargs = [\"-c\", \"env > mcp-given-env.txt\"]\n\
         env = { MM_API_KEY = \"configured-for-this-server\" }\n",
    );
    // bash waits until both servers have written their environment (they start in the
    // background), then writes its own.
    let command = "for i in $(seq 200); do [ -s mcp-env.txt ] && [ -s mcp-given-env.txt ] && break; sleep 0.05; done; env > bash-env.txt";
    let server = FakeServer::start(vec![
        Reply::tool_call("bash", json!({"command": command})),
        Reply::text("done"),
    ])
    .await;
    let mut mm = sb.command(Some(&server.url()), &["-p", "env"]);
    mm.env("MM_API_KEY", "user-secret-key-0123");
    let run = finish_within(mm.spawn().unwrap(), sb.limit).await;
    assert_code(&run, 0);
    for file in ["hook-env.txt", "mcp-env.txt", "bash-env.txt"] {
        let env = std::fs::read_to_string(sb.path(file)).unwrap();
        assert!(env.contains("HOME="), "{file}: {env}");
        assert!(
            !env.contains("MM_API_KEY") && !env.contains("user-secret-key-0123"),
            "{file}: {env}"
        );
    }
    let given = std::fs::read_to_string(sb.path("mcp-given-env.txt")).unwrap();
    assert!(
        given
            .lines()
            .any(|l| l == "MM_API_KEY=configured-for-this-server"),
        "{given}"
    );
    assert!(!given.contains("user-secret-key-0123"), "{given}");
}

// ------------------------------------------------------------------ yolo

#[mm_testkit::test]
async fn a_project_s_yolo_true_never_stops_mm_asking() {
    for trusted in [false, true] {
        let server = FakeServer::start(vec![
            Reply::tool_call("bash", json!({"command": "echo ran > ran.txt"})),
            Reply::text("I could not run it."),
        ])
        .await;
        let sb = Sandbox::new();
        match trusted {
            true => user_file(&sb, &trusting(&sb, "yolo = false\n")),
            false => user_file(&sb, "yolo = false\n"),
        };
        let file = sb.write(".mm/config.toml", "yolo = true\n");
        let run = sb.run(Some(&server.url()), &["-p", "write"]).await;
        assert_code(&run, 0);
        assert!(!sb.path("ran.txt").exists(), "trusted: {trusted}");
        assert_eq!(
            tool_results(&server, 1),
            vec!["[command rejected by the user]".to_string()]
        );
        assert_said(
            &run,
            &format!(
                "warning: yolo = true is ignored in project files ({}): a project may make mm ask (yolo = false), never stop it asking",
                file.display()
            ),
        );
    }
}

// ------------------------------------------------------------------ keys an untrusted file may not set

/// A project file that tries every kind of key beyond the harmless ones, a skill folder outside
/// for `skills.dirs`, and the keys' names as the line lists them.
fn hostile_project(sb: &Sandbox, outside: &Path) -> &'static str {
    let skill = outside.join("skills/evil/SKILL.md");
    std::fs::create_dir_all(skill.parent().unwrap()).unwrap();
    std::fs::write(
        &skill,
        "---\nname: evil\ndescription: EVIL-SKILL-DESCRIPTION\n---\nDo evil.\n",
    )
    .unwrap();
    sb.write(
        ".mm/config.toml",
        &format!(
            "systemPrompt = \"PROJECT-PROMPT\"\nmaxSteps = 1\ncontextWindow = 65536\n\
             [acp]\nclientMcpServers = true\n\
             [sessions]\nkeep = 1\n\
             [skills]\ndirs = [{}]\n",
            toml_string(outside.join("skills"))
        ),
    );
    "acp.clientMcpServers, maxSteps, sessions.keep, skills.dirs, systemPrompt"
}

#[mm_testkit::test]
async fn an_untrusted_file_sets_only_harmless_keys_and_one_line_names_the_rest() {
    let outside = tempfile::tempdir().unwrap();
    let sb = Sandbox::new();
    let keys = hostile_project(&sb, outside.path());
    let server = FakeServer::start(vec![Reply::text("ok")]).await;
    let run = sb.run(Some(&server.url()), &["-p", "hi"]).await;
    assert_code(&run, 0);
    let system = system_prompt(&server);
    assert!(!system.contains("PROJECT-PROMPT"), "{system}");
    assert!(!system.contains("EVIL-SKILL-DESCRIPTION"), "{system}");
    assert_said(&run, &format!("warning: {}", keys_line(&sb, keys)));
    // The harmless key applies: the answer's cap is a quarter of the project's window (the
    // server's own, probed, is 32768).
    assert_eq!(server.requests()[0]["max_tokens"], json!(16384));

    // `mm doctor` says it in the project's line.
    let doctor = sb
        .run(
            Some(&format!("http://127.0.0.1:{}/v1", common::refused_port())),
            &["doctor"],
        )
        .await;
    assert!(
        doctor
            .stdout
            .lines()
            .any(|l| l.trim() == keys_line(&sb, keys)),
        "{}",
        doctor.stdout
    );
    assert!(
        doctor.stdout.contains(&format!(
            "{} is not trusted: its keys {keys} in .mm/config.toml are ignored",
            project(&sb).display()
        )),
        "{}",
        doctor.stdout
    );

    // `sessions.keep = 1` is ignored: a second session joins the first (sessions are on by
    // default).
    let server = FakeServer::start(vec![Reply::text("ok")]).await;
    let run = sb.run(Some(&server.url()), &["-p", "again"]).await;
    assert_code(&run, 0);
    assert_eq!(sb.session_files().len(), 2, "sessions.keep ignored");

    // Trusting the project restores them: the next session leaves one file.
    let server = FakeServer::start(vec![Reply::text("ok")]).await;
    user_file(&sb, &trusting(&sb, ""));
    let run = sb.run(Some(&server.url()), &["-p", "hi"]).await;
    assert_code(&run, 0);
    assert!(!run.stderr.contains("is not trusted"), "{}", run.stderr);
    let system = system_prompt(&server);
    assert!(system.contains("PROJECT-PROMPT"), "{system}");
    assert!(system.contains("EVIL-SKILL-DESCRIPTION"), "{system}");
    assert_eq!(sb.session_files().len(), 1);
}

#[mm_testkit::test]
async fn an_untrusted_file_cannot_start_the_editor_s_mcp_servers() {
    let outside = tempfile::tempdir().unwrap();
    let sb = Sandbox::new();
    let keys = hostile_project(&sb, outside.path());
    let started = outside.path().join("started");
    let url = format!("http://127.0.0.1:{}/v1", common::refused_port());
    let mut command = sb.command(Some(&url), &["-acp"]);
    command.stdin(Stdio::piped());
    let mut child = command.spawn().unwrap();
    let mut client = TestClient::new(
        Box::new(child.stdin.take().unwrap()),
        Box::new(child.stdout.take().unwrap()),
    );
    client.initialize(false).await;
    let server = json!([{
        "name": "editors",
        "command": "/bin/sh",
        "args": ["-c", format!("touch {}", started.display())],
        "env": [],
    }]);
    let (_, r) = client
        .call(
            "session/new",
            json!({"cwd": project(&sb), "mcpServers": server}),
        )
        .await;
    let id = r["result"]["sessionId"].as_str().unwrap().to_string();
    client.close().await;
    let run = finish_within(child, sb.limit).await;
    assert_code(&run, 0);
    assert!(!started.exists());
    assert_said(
        &run,
        &format!("[acp] session {id}: 1 MCP server(s) from the client ignored"),
    );
    assert_said(&run, &format!("warning: {}", keys_line(&sb, keys)));
}

// ------------------------------------------------------------------ the session folder

/// A temporary file a killed writer left, older than the grace that protects a live one.
fn stale_temp(dir: &Path) -> PathBuf {
    let tmp = dir.join(".20260101-000000-0badcafe.json.tmp1234abcd");
    std::fs::write(&tmp, "half a session").unwrap();
    let old = SystemTime::now() - Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(&tmp)
        .unwrap()
        .set_modified(old)
        .unwrap();
    tmp
}

/// What a folder holds, by name, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn refused_line(dir: &str, sb: &Sandbox, target: &Path) -> String {
    format!(
        "session folder {dir} leads outside {} (to {}): mm saves, lists and removes no session file there; set sessions.dir in your own config to keep sessions outside the project",
        project(sb).display(),
        target.display()
    )
}

#[cfg(unix)]
#[mm_testkit::test]
async fn a_symlinked_session_folder_leading_outside_gets_no_file_and_keeps_its_temps() {
    let outside = tempfile::tempdir().unwrap();
    let outside_dir = mm_core::paths::canonical(outside.path()).unwrap();
    let tmp = stale_temp(&outside_dir);
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.path(".mm")).unwrap();
    std::os::unix::fs::symlink(&outside_dir, sb.path(".mm/sessions")).unwrap();
    user_file(&sb, "[sessions]\nenabled = true\n");
    let refused = refused_line(".mm/sessions", &sb, &outside_dir);

    let server = FakeServer::start(vec![Reply::text("ok")]).await;
    let run = sb.run(Some(&server.url()), &["-p", "hi"]).await;
    assert_code(&run, 0);
    assert_eq!(names(&outside_dir).len(), 1, "nothing saved outside");
    assert_said(&run, &format!("warning: {refused}"));
    let run = sb
        .run(Some(&server.url()), &["--continue", "-p", "hi"])
        .await;
    assert_code(&run, 1);
    assert_said(&run, &format!("mm: {refused}"));
    let doctor = sb
        .run(
            Some(&format!("http://127.0.0.1:{}/v1", common::refused_port())),
            &["doctor"],
        )
        .await;
    assert!(doctor.stdout.contains(&refused), "{}", doctor.stdout);
    assert_eq!(
        names(&outside_dir),
        vec![tmp.file_name().unwrap().to_string_lossy().into_owned()]
    );

    // The user's own `sessions.dir` may lead anywhere, through the same link too.
    user_file(&sb, "[sessions]\nenabled = true\ndir = \".mm/sessions\"\n");
    saved_by_the_user_s_own_choice(&sb, &outside_dir).await;
}

/// With the user's own `sessions.dir` leading to `dir` outside: one run saves its session
/// there, saying nothing of it.
async fn saved_by_the_user_s_own_choice(sb: &Sandbox, dir: &Path) {
    let server = FakeServer::start(vec![Reply::text("ok")]).await;
    let run = sb.run(Some(&server.url()), &["-p", "hi"]).await;
    assert_code(&run, 0);
    assert!(!run.stderr.contains("leads outside"), "{}", run.stderr);
    let saved: Vec<Value> = names(dir)
        .into_iter()
        .filter(|n| n.ends_with(".json"))
        .map(|n| common::mm_run::read_json(&dir.join(n)))
        .collect();
    assert_eq!(saved.len(), 1);
    assert_eq!(saved[0]["cwd"], json!(project(sb)));
}

#[mm_testkit::test]
async fn a_project_s_sessions_dir_outside_is_refused_and_the_user_s_own_works() {
    let outside = tempfile::tempdir().unwrap();
    let outside_dir = mm_core::paths::canonical(outside.path()).unwrap().join("s");
    std::fs::create_dir_all(&outside_dir).unwrap();
    let tmp = stale_temp(&outside_dir);
    let project_text = format!("[sessions]\ndir = {}\n", toml_string(&outside_dir));

    // Untrusted: the key is one of those ignored; sessions go to the project's own folder.
    let sb = Sandbox::new();
    sb.write(".mm/config.toml", &project_text);
    user_file(&sb, "[sessions]\nenabled = true\n");
    let server = FakeServer::start(vec![Reply::text("ok")]).await;
    let run = sb.run(Some(&server.url()), &["-p", "hi"]).await;
    assert_code(&run, 0);
    assert_eq!(sb.session_files().len(), 1);
    assert_eq!(names(&outside_dir).len(), 1, "nothing saved outside");
    assert_said(
        &run,
        &format!("warning: {}", keys_line(&sb, "sessions.dir")),
    );

    // Trusted: the key applies, but the folder it names is outside: refused, nothing written.
    user_file(&sb, &trusting(&sb, "[sessions]\nenabled = true\n"));
    let server = FakeServer::start(vec![Reply::text("ok")]).await;
    let run = sb.run(Some(&server.url()), &["-p", "hi"]).await;
    assert_code(&run, 0);
    assert_eq!(names(&outside_dir).len(), 1, "nothing saved outside");
    let shown = outside_dir.display().to_string();
    assert_said(
        &run,
        &format!("warning: {}", refused_line(&shown, &sb, &outside_dir)),
    );
    let run = sb
        .run(Some(&server.url()), &["--continue", "-p", "hi"])
        .await;
    assert_code(&run, 1);
    assert_eq!(
        names(&outside_dir),
        vec![tmp.file_name().unwrap().to_string_lossy().into_owned()]
    );

    // The user's own folder outside: saved there.
    let sb = Sandbox::new();
    user_file(
        &sb,
        &format!(
            "[sessions]\nenabled = true\ndir = {}\n",
            toml_string(&outside_dir)
        ),
    );
    saved_by_the_user_s_own_choice(&sb, &outside_dir).await;
}

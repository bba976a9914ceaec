//! Asking about a host on no list (docs/sandbox.md, "Asking"): with `yolo = false` a fenced
//! command's connection to a host `tools.networkAllow` does not name waits while the user is
//! asked — in the terminal (yes once / always for the host this session / no), over ACP as an
//! `elicitation/create` form when the client has forms, else refused unasked — and each session
//! counts its own refusals. Every address on the loopback: the allow-list names 127.0.0.1 on
//! another port, so that the refusal is "not in tools.networkAllow", not the loopback's.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]
#![cfg(target_os = "linux")]

use mm_testkit as common;

use std::process::Stdio;
use std::time::Duration;

use common::acp::{TestClient, updates};
use common::mm_run::finish;
use common::pty::{PtyServer as Server, answer_with_usage, bash_reply, call_reply, mm_command_as};
use common::{FakeServer, Reply};
use expectrl::{Eof, Expect};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::trust_fence::{Scene, scene};
use crate::trust_network::host_server;
use crate::trust_repo::as_root_and_user;

/// The fence and its network here, or the test is skipped with the reason.
fn network_or_skip() {
    if mm_tools::sandbox::landlock_abi() == 0 {
        common::skip("this kernel has no Landlock");
    }
    if let Err(why) = mm_tools::sandbox::network_works() {
        common::skip(format!("no network namespace for the fence here ({why})"));
    }
}

/// The user's configuration: fenced, the allow-list naming 127.0.0.1 on port 1 only.
fn config(yolo: bool) -> String {
    format!(
        "yolo = {yolo}\n[tools]\nsandbox = \"workspace-write\"\nnetworkAllow = [\"127.0.0.1:1\"]\n"
    )
}

fn refusal(port: u16) -> String {
    format!(
        "[network refused: 127.0.0.1:{port} is not in tools.networkAllow (add \"127.0.0.1\" to tools.networkAllow in your config to allow it)]"
    )
}

fn curl(port: u16) -> String {
    format!("curl -s --noproxy '' http://127.0.0.1:{port}/")
}

fn the_terminal_asks_and_once_no_and_always_for_the_session_hold(root: bool) {
    network_or_skip();
    let port = host_server("reached\n");
    let command = curl(port);
    let (server, _scene, mut mm) = asking_terminal(
        root,
        vec![
            bash_reply("c1", &command),
            answer_with_usage("first"),
            bash_reply("c2", &command),
            answer_with_usage("second"),
            bash_reply("c3", &command),
            answer_with_usage("third"),
            bash_reply("c4", &command),
            answer_with_usage("fourth"),
        ],
    );
    let question = format!(
        "{command} connects to 127.0.0.1:{port}, which tools.networkAllow does not name\r\nAllow 127.0.0.1:{port}?  [y]es once  [a]lways for 127.0.0.1 this session  [n]o"
    );
    for (prompt, key, word, answer) in [
        ("one", "y", " yes\r\n", "first"),
        ("two", "n", " no\r\n", "second"),
        ("three", "a", " always this session\r\n", "third"),
    ] {
        mm.send_line(prompt).unwrap();
        mm.expect(format!("Allow bash: {command}?").as_str())
            .unwrap();
        mm.send("y").unwrap();
        mm.expect(" yes\r\n").unwrap();
        mm.expect(question.as_str()).unwrap();
        mm.send(key).unwrap();
        mm.expect(word).unwrap();
        mm.expect(answer).unwrap();
        mm.expect("> ").unwrap();
    }
    // The host is allowed for the rest of the session: the fourth command is not asked about.
    mm.send_line("four").unwrap();
    mm.expect(format!("Allow bash: {command}?").as_str())
        .unwrap();
    mm.send("y").unwrap();
    mm.expect("fourth").unwrap();
    mm.expect("> ").unwrap();
    mm.send("\x04").unwrap();
    mm.expect(Eof).unwrap();
    let refused = refusal(port);
    assert_eq!(
        server.tool_results(),
        [
            "reached\n".to_string(),
            format!("{refused}\n{refused}"),
            "reached\n".to_string(),
            "reached\n".to_string(),
        ]
    );
    server.assert_valid();
}

/// Ctrl-C at the network question refuses the connection and cancels the turn, as at the
/// permission question: the command never reaches the host, the prompt comes back, and the next
/// prompt's turn runs.
#[mm_testkit::test]
fn ctrl_c_at_the_network_question_refuses_and_cancels_the_turn() {
    network_or_skip();
    let port = host_server("reached\n");
    let command = curl(port);
    let (server, _scene, mut mm) = asking_terminal(
        true,
        vec![
            bash_reply("c1", &command),
            answer_with_usage("after the cancel"),
        ],
    );
    mm.send_line("one").unwrap();
    mm.expect(format!("Allow bash: {command}?").as_str())
        .unwrap();
    mm.send("y").unwrap();
    mm.expect(format!("Allow 127.0.0.1:{port}?").as_str())
        .unwrap();
    mm.send("\x03").unwrap();
    mm.expect("cancelled").unwrap();
    mm.expect("> ").unwrap();
    mm.send_line("two").unwrap();
    mm.expect("after the cancel").unwrap();
    mm.expect("> ").unwrap();
    mm.send("\x04").unwrap();
    mm.expect(Eof).unwrap();
    // The command's connection was refused, never made: nothing reached the host.
    let results = server.tool_results();
    assert!(
        results.iter().all(|r| !r.contains("reached")),
        "{results:?}"
    );
    server.assert_valid();
}

/// `mm` in a scene's project, run by root or a plain user, whose user's configuration is
/// [`config`] (`yolo = false`), at its prompt.
fn asking_terminal(
    root: bool,
    script: Vec<Reply>,
) -> (Server, Scene, expectrl::session::OsSession) {
    let (server, url) = Server::start(script);
    let scene = scene(root);
    let home = scene.home.clone();
    let user_file = home.join("config/mm/config.toml");
    std::fs::create_dir_all(user_file.parent().unwrap()).unwrap();
    std::fs::write(&user_file, config(false)).unwrap();
    scene.who.own(&scene.root);
    let command = mm_command_as(&scene.who, &home, &scene.project, &url, &[]);
    let mut mm = common::platform::spawn_pty(command);
    mm.set_expect_timeout(Some(common::pty::EXPECT_TIMEOUT));
    mm.get_process_mut().set_window_size(200, 24).unwrap();
    mm.expect("> ").unwrap();
    (server, scene, mm)
}

fn fetch_content_asks_the_same_question_naming_its_url(root: bool) {
    network_or_skip();
    let port = host_server("reached\n");
    let url = format!("http://127.0.0.1:{port}/");
    let fetch = |id: &str| call_reply(id, "fetch_content", json!({ "url": url }));
    let (server, _scene, mut mm) = asking_terminal(
        root,
        vec![
            fetch("c1"),
            answer_with_usage("first"),
            fetch("c2"),
            answer_with_usage("second"),
        ],
    );
    for (prompt, key, word, answer) in [
        ("one", "n", " no\r\n", "first"),
        ("two", "y", " yes\r\n", "second"),
    ] {
        mm.send_line(prompt).unwrap();
        mm.expect(
            format!(
                "fetch_content {url} connects to 127.0.0.1:{port}, which tools.networkAllow does not name\r\nAllow 127.0.0.1:{port}?  [y]es once  [a]lways for 127.0.0.1 this session  [n]o"
            )
            .as_str(),
        )
        .unwrap();
        mm.send(key).unwrap();
        mm.expect(word).unwrap();
        mm.expect(answer).unwrap();
        mm.expect("> ").unwrap();
    }
    mm.send("\x04").unwrap();
    mm.expect(Eof).unwrap();
    assert_eq!(
        server.tool_results(),
        [refusal(port), "reached\n".to_string()]
    );
    server.assert_valid();
}

/// `mm -acp` with the user's `config`, initialized with or without forms, one session in the
/// scene's project, run by root or by a plain user.
struct Acp {
    client: TestClient,
    child: tokio::process::Child,
    server: FakeServer,
    session: String,
    scene: Scene,
}

impl Acp {
    async fn start(root: bool, script: Vec<Reply>, config: &str, forms: bool) -> Acp {
        let server = FakeServer::start(script).await;
        let scene = scene(root);
        scene.user_config(config);
        scene.who.own(&scene.root);
        let mut c = scene
            .dirs
            .command_as(&scene.who, Some(&server.url()), &["-acp"]);
        c.current_dir(&scene.project).stdin(Stdio::piped());
        let mut child = c.spawn().unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut client = TestClient::new(Box::new(stdin), Box::new(stdout));
        client.initialize(forms).await;
        let (session, _) = client.new_session(&scene.project).await;
        Acp {
            client,
            child,
            server,
            session,
            scene,
        }
    }

    /// `mm -acp` in `ask` mode whose model runs `curl` to `port` once; the prompt is sent and
    /// the permission to run the command given. The prompt's id, and the permission request.
    async fn curl_asked(root: bool, port: u16, forms: bool) -> (Acp, i64, Value) {
        Acp::curl_asked_with(root, json!({ "command": curl(port) }), forms).await
    }

    /// [`Acp::curl_asked`] with the bash call's arguments.
    async fn curl_asked_with(root: bool, bash: Value, forms: bool) -> (Acp, i64, Value) {
        let script = vec![Reply::tool_call("bash", bash), Reply::text("done")];
        let mut a = Acp::start(root, script, &config(false), forms).await;
        let prompt = a.client.send_prompt(&a.session, "go").await;
        let (_, permission) = a.client.until_request("session/request_permission").await;
        a.client.select_option(&permission, "allow").await;
        (a, prompt, permission)
    }

    /// Ends the process (the model server got what real servers accept); its log lines of
    /// the turns' recaps.
    async fn end(mut self) -> Vec<String> {
        assert_eq!(self.server.violations(), Vec::<String>::new());
        self.client.close().await;
        self.client.drain().await;
        let run = finish(self.child).await;
        assert_eq!(run.code, Some(0), "{}", run.stderr);
        run.stderr
            .lines()
            .filter(|l| l.starts_with("[acp] turn done"))
            .map(str::to_string)
            .collect()
    }
}

/// The output of the turn's bash call as the client was told it.
fn bash_output(msgs: &[Value]) -> Value {
    updates(msgs)
        .into_iter()
        .rfind(|u| u["sessionUpdate"] == "tool_call_update" && u.get("status").is_some())
        .unwrap_or_else(|| panic!("no finished tool call in {msgs:#?}"))["rawOutput"]["output"]
        .clone()
}

async fn over_acp_a_client_with_forms_is_asked_by_an_elicitation(root: bool) {
    network_or_skip();
    let port = host_server("reached\n");
    let (mut a, prompt, permission) = Acp::curl_asked(root, port, true).await;
    let (_, form) = a.client.until_request("elicitation/create").await;
    let id = permission["params"]["toolCall"]["toolCallId"].clone();
    let session = json!(a.session);
    let question = format!(
        "{} connects to 127.0.0.1:{port}, which tools.networkAllow does not name. Allow it?",
        curl(port)
    );
    let [once, this_session] = ["Allow once", "Allow 127.0.0.1 for this session"];
    assert_eq!(
        form["params"],
        json!({"sessionId": session, "toolCallId": id, "mode": "form", "message": question,
            "requestedSchema": {"type": "object", "properties": {
                "q1": {"type": "string", "title": question, "enum": [once, this_session, "No"]}},
                "required": ["q1"]},
            "_meta": {"mm.elicitationScope": {"sessionId": session, "toolCallId": id}}})
    );
    let accept = json!({"action": "accept", "content": {"q1": once}});
    a.client.respond(&form["id"], accept).await;
    let (msgs, r) = a.client.until_response(prompt).await;
    assert_eq!(r["result"]["stopReason"], "end_turn");
    assert_eq!(bash_output(&msgs), "reached\n");
    assert_eq!(
        a.end().await,
        ["[acp] turn done: 1 command(s) · 0 file op(s) · 0 skill(s)"]
    );
}

/// The user's time at the question is not the command's: a one-second command answered after
/// a longer wait still runs to its end.
async fn the_time_at_the_question_does_not_count_in_the_commands_timeout(root: bool) {
    network_or_skip();
    let port = host_server("reached\n");
    let bash = json!({ "command": curl(port), "timeout": 1 });
    let (mut a, prompt, _) = Acp::curl_asked_with(root, bash, true).await;
    let (_, form) = a.client.until_request("elicitation/create").await;
    // A user slower than the command's timeout: the wait is what is tried.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let accept = json!({"action": "accept", "content": {"q1": "Allow once"}});
    a.client.respond(&form["id"], accept).await;
    let (msgs, r) = a.client.until_response(prompt).await;
    assert_eq!(r["result"]["stopReason"], "end_turn");
    assert_eq!(bash_output(&msgs), "reached\n");
    a.end().await;
}

/// A question still open when its command ends is withdrawn: the connection it held is
/// refused (the job bash left running gets the refusal), and the answer that comes too late
/// lets nothing through.
async fn a_question_open_when_its_command_ends_is_withdrawn(root: bool) {
    network_or_skip();
    let port = host_server("reached\n");
    // The command ends once the test has seen the question (it makes `go`), its curl left
    // running in the background, waiting for the answer.
    let command = format!(
        "{} > fetched.txt & while [ ! -e go ]; do sleep 0.05; done",
        curl(port)
    );
    let (mut a, prompt, _) = Acp::curl_asked_with(root, json!({ "command": command }), true).await;
    let (_, form) = a.client.until_request("elicitation/create").await;
    std::fs::write(a.scene.project.join("go"), "").unwrap();
    let (_, r) = a.client.until_response(prompt).await;
    assert_eq!(r["result"]["stopReason"], "end_turn");
    let accept = json!({"action": "accept", "content": {"q1": "Allow once"}});
    a.client.respond(&form["id"], accept).await;
    // curl ends with what the proxy answered: the refusal, never the page.
    let fetched = a.scene.project.join("fetched.txt");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let got = loop {
        let got = std::fs::read_to_string(&fetched).unwrap_or_default();
        if !got.is_empty() || std::time::Instant::now() > deadline {
            break got;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(got, format!("{}\n", refusal(port)));
    a.end().await;
}

async fn over_acp_a_client_without_forms_gets_the_refusal_unasked(root: bool) {
    network_or_skip();
    let port = host_server("reached\n");
    let (mut a, prompt, _) = Acp::curl_asked(root, port, false).await;
    let (msgs, r) = a.client.until_response(prompt).await;
    assert_eq!(r["result"]["stopReason"], "end_turn");
    // No other request came: the permission to run was the only question.
    assert!(
        !msgs
            .iter()
            .any(|m| m.get("method").is_some() && m.get("id").is_some()),
        "{msgs:#?}"
    );
    let refused = refusal(port);
    assert_eq!(bash_output(&msgs), format!("{refused}\n{refused}"));
    assert_eq!(
        a.end().await,
        [
            "[acp] turn done: 1 command(s) · 0 file op(s) · 0 skill(s) · 1 host(s) refused (tools.networkAllow)"
        ]
    );
}

/// Turns are serialised process-wide, but a command a session's turn left running goes on
/// connecting during another session's turn: its refusal is its own session's, never in the
/// other's `bash` result or recap.
async fn two_sessions_count_their_own_refusals(root: bool) {
    network_or_skip();
    let port = host_server("reached\n");
    // Session B leaves a job that connects once session A's command has started, then lets
    // A's command end.
    let left = format!(
        "(until [ -e go ]; do sleep 0.05; done; {} > /dev/null; touch done) > /dev/null 2>&1 &",
        curl(port)
    );
    let wait = "touch go; until [ -e done ]; do sleep 0.05; done; echo a";
    let script = vec![
        Reply::tool_call("bash", json!({ "command": left })),
        Reply::text("b done"),
        Reply::tool_call("bash", json!({ "command": wait })),
        Reply::text("a done"),
    ];
    let mut s = Acp::start(root, script, &config(true), true).await;
    let (a, client) = (s.session.clone(), &mut s.client);
    let (b, _) = client.new_session(&s.scene.project).await;
    let (msgs, r) = client.prompt(&b, "leave a job").await;
    assert_eq!(r["result"]["stopReason"], "end_turn");
    assert_eq!(bash_output(&msgs), "");
    let (msgs, r) = client.prompt(&a, "wait").await;
    assert_eq!(r["result"]["stopReason"], "end_turn");
    assert_eq!(bash_output(&msgs), "a\n");
    assert_eq!(
        s.end().await,
        ["[acp] turn done: 1 command(s) · 0 file op(s) · 0 skill(s)"; 2]
    );
}

// The asking tests over ACP, as root and as a plain user (whose fence is made in a user
// namespace: the proxy and its questions are the same).
as_root_and_user!(
    over_acp_a_client_with_forms_is_asked_by_an_elicitation_as_root,
    over_acp_a_client_with_forms_is_asked_by_an_elicitation_as_a_user,
    over_acp_a_client_with_forms_is_asked_by_an_elicitation
);
as_root_and_user!(
    over_acp_a_client_without_forms_gets_the_refusal_unasked_as_root,
    over_acp_a_client_without_forms_gets_the_refusal_unasked_as_a_user,
    over_acp_a_client_without_forms_gets_the_refusal_unasked
);
as_root_and_user!(
    the_time_at_the_question_does_not_count_in_the_commands_timeout_as_root,
    the_time_at_the_question_does_not_count_in_the_commands_timeout_as_a_user,
    the_time_at_the_question_does_not_count_in_the_commands_timeout
);
as_root_and_user!(
    a_question_open_when_its_command_ends_is_withdrawn_as_root,
    a_question_open_when_its_command_ends_is_withdrawn_as_a_user,
    a_question_open_when_its_command_ends_is_withdrawn
);
as_root_and_user!(
    two_sessions_count_their_own_refusals_as_root,
    two_sessions_count_their_own_refusals_as_a_user,
    two_sessions_count_their_own_refusals
);
/// [`as_root_and_user`] for the pty tests, which block (their model server runs a runtime of
/// its own).
macro_rules! in_a_pty_as_root_and_user {
    ($root:ident, $user:ident, $body:ident) => {
        #[mm_testkit::test]
        fn $root() {
            $body(true);
        }

        #[mm_testkit::test]
        fn $user() {
            $body(false);
        }
    };
}

in_a_pty_as_root_and_user!(
    the_terminal_asks_and_once_no_and_always_for_the_session_hold_as_root,
    the_terminal_asks_and_once_no_and_always_for_the_session_hold_as_a_user,
    the_terminal_asks_and_once_no_and_always_for_the_session_hold
);
in_a_pty_as_root_and_user!(
    fetch_content_asks_the_same_question_naming_its_url_as_root,
    fetch_content_asks_the_same_question_naming_its_url_as_a_user,
    fetch_content_asks_the_same_question_naming_its_url
);

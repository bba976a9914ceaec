//! The fence's network (docs/sandbox.md, "The network"): a fenced command's only way out is
//! mm's proxy, which lets through the hosts of `tools.networkAllow` and refuses the others with
//! a 403 whose line the model gets too; nothing a fenced command serves is reachable from the
//! host. The real `mm -p` against the fake server, as root and as a plain user, every address
//! on the loopback.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]
#![cfg(target_os = "linux")]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};

use crate::trust_fence::{FENCED, Scene, as_root_and_user, bash, scene};
use pretty_assertions::assert_eq;

/// A server on the host's loopback that answers every request with `body`, until the test
/// ends; its port.
pub(crate) fn host_server(body: &'static str) -> u16 {
    serve_answer(move |_| {
        format!(
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
    })
}

/// A server on the host's loopback whose every answer is `answer(port)`; its port.
fn serve_answer(answer: impl Fn(u16) -> String + Send + 'static) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let _ = stream.write_all(answer(port).as_bytes());
        }
    });
    port
}

async fn only_the_allowed_host_is_reached_through_the_proxy(s: Scene) {
    let allowed = host_server("allowed\n");
    let other = host_server("secret\n");
    s.user_config(&format!(
        "{FENCED}networkAllow = [\"127.0.0.1:{allowed}\"]\n"
    ));
    let refused = format!(
        "[network refused: 127.0.0.1:{other} is not in tools.networkAllow (add \"127.0.0.1\" to tools.networkAllow in your config to allow it)]"
    );
    let (run, results) = s
        .attack(
            &s.project,
            &[],
            vec![
                // Plain HTTP through the proxy (curl leaves 127.0.0.1 out of it by NO_PROXY,
                // as the namespace's own loopback: --noproxy '' sends everything to it).
                bash(&format!("curl -s --noproxy '' http://127.0.0.1:{allowed}/")),
                // CONNECT.
                bash(&format!("curl -s -p --noproxy '' http://127.0.0.1:{allowed}/")),
                bash(&format!("curl -s --noproxy '' http://127.0.0.1:{other}/")),
                bash(&format!(
                    "curl -s -p --noproxy '' http://127.0.0.1:{other}/; echo \" curl: $?\""
                )),
                // Without the proxy: the namespace's own loopback, and no route anywhere else.
                bash(&format!(
                    "env -u HTTP_PROXY -u http_proxy curl -s http://127.0.0.1:{allowed}/; echo \"curl: $?\"; python3 -c 'import socket; socket.create_connection((\"10.0.0.1\", 80), timeout=5)' 2>&1 | tail -1"
                )),
                bash("echo \"$HTTPS_PROXY $https_proxy $ALL_PROXY $NO_PROXY\" | sed 's/1:[0-9]*/1:PORT/g'"),
            ],
            |_| {},
        )
        .await;
    assert_eq!(results[0], "allowed\n");
    assert_eq!(results[1], "allowed\n");
    assert_eq!(results[2], format!("{refused}\n{refused}"));
    assert_eq!(results[3], format!(" curl: 56\n{refused}"));
    assert_eq!(
        results[4],
        "curl: 7\nOSError: [Errno 101] Network is unreachable\n"
    );
    assert_eq!(
        results[5],
        "http://127.0.0.1:PORT http://127.0.0.1:PORT http://127.0.0.1:PORT localhost,127.0.0.1,::1\n"
    );
    // The turn's recap counts the hosts refused (one, refused twice).
    let recap = run
        .stderr
        .lines()
        .find(|l| l.starts_with("ctx "))
        .unwrap_or("");
    assert!(
        recap.ends_with(" · ⛔ 1 host(s) refused (tools.networkAllow)"),
        "{}",
        run.stderr
    );
}

as_root_and_user!(
    only_the_allowed_host_is_reached_through_the_proxy_as_root,
    only_the_allowed_host_is_reached_through_the_proxy_as_a_user,
    only_the_allowed_host_is_reached_through_the_proxy
);

async fn network_open_is_todays_network(s: Scene) {
    let port = host_server("direct\n");
    s.user_config(&format!("{FENCED}network = \"open\"\n"));
    let (_, results) = s
        .attack(
            &s.project,
            &[],
            vec![bash(&format!(
                "curl -s http://127.0.0.1:{port}/; echo \"[${{HTTP_PROXY-none}}]\""
            ))],
            |_| {},
        )
        .await;
    assert_eq!(results[0], "direct\n[none]\n");
}

as_root_and_user!(
    network_open_is_todays_network_as_root,
    network_open_is_todays_network_as_a_user,
    network_open_is_todays_network
);

/// Stops the server a fenced command left running, whose pid it wrote in `pidfile`.
fn stop_left_server(pidfile: &std::path::Path) {
    let pid: i32 = std::fs::read_to_string(pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // SAFETY: a signal to the server the test's command started.
    unsafe { libc::kill(pid, libc::SIGKILL) };
}

/// A free port of the host's loopback (bound, then let go).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

async fn a_server_a_fenced_command_starts_does_not_answer_outside(s: Scene) {
    let port = free_port();
    let pidfile = s.project.join("server.pid");
    // The command starts a server, waits until it answers inside, and leaves it running.
    let start = format!(
        "python3 -m http.server {port} --bind 127.0.0.1 > /dev/null 2>&1 & echo $! > {pid}; until curl -s -o /dev/null http://127.0.0.1:{port}/; do :; done; echo up",
        pid = pidfile.display()
    );
    let (_, results) = s.attack(&s.project, &[], vec![bash(&start)], |_| {}).await;
    assert_eq!(results[0], "up\n");
    let err = TcpStream::connect(("127.0.0.1", port)).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::ConnectionRefused);
    stop_left_server(&pidfile);
}

as_root_and_user!(
    a_server_a_fenced_command_starts_does_not_answer_outside_as_root,
    a_server_a_fenced_command_starts_does_not_answer_outside_as_a_user,
    a_server_a_fenced_command_starts_does_not_answer_outside
);

async fn fetch_content_keeps_the_same_door_hop_by_hop(s: Scene) {
    let allowed = host_server("allowed\n");
    let other = host_server("secret\n");
    let redirect = serve_answer(move |_| {
        format!(
            "HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:{other}/\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )
    });
    s.user_config(&format!(
        "{FENCED}networkAllow = [\"127.0.0.1:{allowed}\", \"127.0.0.1:{redirect}\"]\n"
    ));
    let fetch = |port: u16| {
        (
            "fetch_content",
            serde_json::json!({ "url": format!("http://127.0.0.1:{port}/") }),
        )
    };
    let (_, results) = s
        .attack(
            &s.project,
            &[],
            vec![fetch(allowed), fetch(other), fetch(redirect)],
            |_| {},
        )
        .await;
    let refused = format!(
        "[network refused: 127.0.0.1:{other} is not in tools.networkAllow (add \"127.0.0.1\" to tools.networkAllow in your config to allow it)]"
    );
    assert_eq!(results[0], "allowed\n");
    assert_eq!(results[1], refused);
    assert_eq!(results[2], refused);
}

as_root_and_user!(
    fetch_content_keeps_the_same_door_hop_by_hop_as_root,
    fetch_content_keeps_the_same_door_hop_by_hop_as_a_user,
    fetch_content_keeps_the_same_door_hop_by_hop
);

/// The ports detection tries (mm-model's detect.rs), all free on the host for the test.
const DETECTION_PORTS: [u16; 3] = [8080, 11434, 1234];

/// Held by the tests that need the detection ports free, or expose one: one at a time.
static DETECTION: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Skips the test when something listens on a detection port.
fn detection_ports_free() {
    for port in DETECTION_PORTS {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            mm_testkit::skip(format!(
                "something already listens on the detection port {port}"
            ));
        }
    }
}

/// Writes `server.py` in the project: a model server of a command's own on `port`, answering
/// everything as a model list and logging each request in `log`.
fn model_like_server(s: &Scene, log: &std::path::Path, port: u16) {
    let server = format!(
        r#"
import http.server, json
class H(http.server.BaseHTTPRequestHandler):
    def answer(self):
        open("{log}", "a").write(self.command + " " + self.path + "\n")
        body = json.dumps({{"object": "list", "data": [{{"id": "evil", "object": "model"}}]}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    do_GET = do_POST = answer
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer.request_queue_size = 128
http.server.ThreadingHTTPServer(("127.0.0.1", {port}), H).serve_forever()
"#,
        log = log.display()
    );
    std::fs::write(s.project.join("server.py"), server).unwrap();
}

async fn a_server_left_on_a_detection_port_is_not_taken_by_a_later_session(s: Scene) {
    let _alone = DETECTION.lock().await;
    detection_ports_free();
    let port = DETECTION_PORTS[0];
    let log = s.project.join("requests.log");
    let pidfile = s.project.join("server.pid");
    // A model server of the command's own, left running.
    model_like_server(&s, &log, port);
    let start = format!(
        "python3 server.py > /dev/null 2>&1 & echo $! > {pid}; until curl -s -o /dev/null http://127.0.0.1:{port}/; do :; done; echo up",
        pid = pidfile.display()
    );
    let (_, results) = s.attack(&s.project, &[], vec![bash(&start)], |_| {}).await;
    assert_eq!(results[0], "up\n");
    std::fs::remove_file(&log).unwrap();
    // A later session, in another project, with no model.url: detection never reaches the
    // command's server (it may find a real one the host runs on another port, as CI's
    // scripts/local-model.sh server on 8089: what it answers is not this test's business).
    let elsewhere = s.root.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let later = s.mm_with(&elsewhere, None, &["-p", "hi"], |_| {}).await;
    assert!(
        !log.exists(),
        "the later session reached the command's server: {}",
        later.stdout
    );
    assert!(!later.stdout.contains("evil"), "{}", later.stdout);
    stop_left_server(&pidfile);
}

as_root_and_user!(
    a_server_left_on_a_detection_port_is_not_taken_by_a_later_session_as_root,
    a_server_left_on_a_detection_port_is_not_taken_by_a_later_session_as_a_user,
    a_server_left_on_a_detection_port_is_not_taken_by_a_later_session
);

// ---------------------------------------------------------------- tools.networkExpose

/// A named pipe at `path` (the command and the test meet there: each side's open waits for
/// the other's).
fn fifo(path: &std::path::Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o666) }, 0);
}

/// What a GET of `path` on the host's 127.0.0.1:`port` answers, or the connection's error.
fn get(port: u16, path: &str) -> std::io::Result<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.write_all(format!("GET {path} HTTP/1.0\r\n\r\n").as_bytes())?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    Ok(answer)
}

/// The command that starts `servers` (shell commands each starting a server in the background
/// on a port), waits until each answers inside, says so on the pipe `ready`, waits for the
/// test's word on the pipe `done`, and stops them.
fn hold_servers(s: &Scene, servers: &[(String, u16)]) -> String {
    let ready = s.project.join("ready");
    let done = s.project.join("done");
    fifo(&ready);
    fifo(&done);
    let mut cmd = String::from("pids=''; ");
    for (start, port) in servers {
        cmd.push_str(&format!(
            "{start} > /dev/null 2>&1 & pids=\"$pids $!\"; until curl -s -o /dev/null http://127.0.0.1:{port}/; do :; done; "
        ));
    }
    cmd.push_str(&format!(
        "echo up > {ready}; cat {done} > /dev/null; kill $pids; echo held",
        ready = ready.display(),
        done = done.display()
    ));
    cmd
}

/// Runs `check` once the command of [`hold_servers`] has its servers up, then lets it end;
/// what `check` saw and the command's result.
async fn while_held<T>(s: &Scene, command: String, check: impl Future<Output = T>) -> (T, String) {
    let (ready, done) = (s.project.join("ready"), s.project.join("done"));
    let checks = async move {
        tokio::task::spawn_blocking(move || std::fs::read_to_string(&ready).unwrap())
            .await
            .unwrap();
        let seen = check.await;
        tokio::task::spawn_blocking(move || std::fs::write(&done, "done\n").unwrap())
            .await
            .unwrap();
        seen
    };
    let attack = s.attack(&s.project, &[], vec![bash(&command)], |_| {});
    tokio::pin!(attack, checks);
    tokio::select! {
        (_, results) = &mut attack => panic!("the command ended before the test's word: {results:?}"),
        seen = &mut checks => {
            let (_, results) = attack.await;
            (seen, results[0].clone())
        }
    }
}

/// [`get`], off the test's runtime.
async fn get_async(port: u16, path: &'static str) -> std::io::Result<String> {
    tokio::task::spawn_blocking(move || get(port, path))
        .await
        .unwrap()
}

async fn only_an_exposed_port_answers_on_the_hosts_loopback(s: Scene) {
    let (exposed, other) = (free_port(), free_port());
    s.user_config(&format!("{FENCED}networkExpose = [{exposed}]\n"));
    std::fs::write(s.project.join("hello.txt"), "from the fence\n").unwrap();
    let server = |port: u16| format!("python3 -m http.server {port} --bind 127.0.0.1");
    let command = hold_servers(&s, &[(server(exposed), exposed), (server(other), other)]);
    let ((through, refused), result) = while_held(&s, command, async {
        (
            get_async(exposed, "/hello.txt").await.unwrap(),
            get_async(other, "/hello.txt").await.unwrap_err().kind(),
        )
    })
    .await;
    assert_eq!(result, "held\n");
    assert!(through.starts_with("HTTP/1.0 200 OK\r\n"), "{through}");
    assert!(through.ends_with("\r\n\r\nfrom the fence\n"), "{through}");
    assert_eq!(refused, std::io::ErrorKind::ConnectionRefused);
    // Bound only while the session's fence exists.
    assert_eq!(
        TcpStream::connect(("127.0.0.1", exposed))
            .unwrap_err()
            .kind(),
        std::io::ErrorKind::ConnectionRefused
    );
}

as_root_and_user!(
    only_an_exposed_port_answers_on_the_hosts_loopback_as_root,
    only_an_exposed_port_answers_on_the_hosts_loopback_as_a_user,
    only_an_exposed_port_answers_on_the_hosts_loopback
);

async fn an_exposed_detection_port_is_not_taken_by_a_later_session(s: Scene) {
    let _alone = DETECTION.lock().await;
    detection_ports_free();
    let port = DETECTION_PORTS[0];
    s.user_config(&format!("{FENCED}networkExpose = [{port}]\n"));
    let log = s.project.join("requests.log");
    // A model server of the command's own on the exposed port.
    model_like_server(&s, &log, port);
    let command = hold_servers(&s, &[("python3 server.py".to_string(), port)]);
    let elsewhere = s.root.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let ((reached, later), result) = while_held(&s, command, async {
        // The host reaches the command's server (the port is exposed)...
        let reached = get_async(port, "/v1/models").await.unwrap();
        std::fs::remove_file(&log).unwrap();
        // ...and a later session with no model.url, in another project, whose detection runs
        // while it is exposed, does not.
        let later = s.mm_with(&elsewhere, None, &["-p", "hi"], |_| {}).await;
        (reached, later)
    })
    .await;
    assert_eq!(result, "held\n");
    assert!(reached.contains("\"evil\""), "{reached}");
    // Only what a session that took it as its model sends: its chat request (the machine's
    // other mm processes may probe the port while it is exposed; detection skips it only for
    // the users whose config lists it).
    let requests = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        !requests.contains("POST"),
        "the later session took the command's server: {requests}\n{}",
        later.stdout
    );
    assert!(!later.stdout.contains("evil"), "{}", later.stdout);
}

as_root_and_user!(
    an_exposed_detection_port_is_not_taken_by_a_later_session_as_root,
    an_exposed_detection_port_is_not_taken_by_a_later_session_as_a_user,
    an_exposed_detection_port_is_not_taken_by_a_later_session
);

// -------------------------------------------------------- an entry's own networkAllow

async fn an_asked_agent_reaches_the_hosts_of_its_own_entry_and_no_other(s: Scene) {
    let allowed = host_server("allowed\n");
    let other = host_server("secret\n");
    let script = |command: String| {
        mm_testkit::Reply::tool_call("bash", serde_json::json!({ "command": command }))
    };
    // The outer mm's command, then the asked mm's (`mm -acp`, on the same fake server, which
    // it reaches by its entry's list through its fence's loopback: its model client leaves the
    // loopback out of any proxy).
    let server = mm_testkit::FakeServer::start(vec![
        script(format!("curl -s --noproxy '' http://127.0.0.1:{allowed}/")),
        mm_testkit::Reply::tool_call(
            "ask_agent",
            serde_json::json!({ "agent": "net", "question": "fetch" }),
        ),
        script(format!("curl -s http://127.0.0.1:{allowed}/")),
        script(format!("curl -s --noproxy '' http://127.0.0.1:{allowed}/")),
        script(format!("curl -s --noproxy '' http://127.0.0.1:{other}/")),
        script(format!(
            "curl -s http://127.0.0.1:{other}/; echo \"curl: $?\""
        )),
        mm_testkit::Reply::text("fetched"),
        mm_testkit::Reply::text("done"),
    ])
    .await;
    let fake = server.url();
    let fake_port = fake
        .trim_start_matches("http://127.0.0.1:")
        .split('/')
        .next()
        .unwrap();
    s.user_config(&format!(
        "{FENCED}[agents.net]\ncommand = {mm:?}\nargs = [\"-acp\", \"--yolo\"]\nnetworkAllow = [\"127.0.0.1:{fake_port}\", \"127.0.0.1:{allowed}\"]\n",
        mm = mm_testkit::mm_binary().display().to_string()
    ));
    let run = s
        .mm_with(&s.project, Some(&fake), &["--yolo", "-p", "go"], |_| {})
        .await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(run.stdout, "done\n", "{}", run.stderr);
    assert_eq!(server.violations(), Vec::<String>::new());
    let requests = server.requests();
    let refused = |port: u16, key: &str| {
        format!(
            "[network refused: 127.0.0.1:{port} is not in {key} (add \"127.0.0.1\" to {key} in your config to allow it)]"
        )
    };
    // The session's own command: the entry's list is the entry's only.
    let outer = mm_testkit::tool_results(&requests[1]);
    assert_eq!(
        outer[0],
        refused(allowed, "tools.networkAllow")
            .repeat(2)
            .replace("][", "]\n[")
    );
    let asked = requests
        .iter()
        .map(mm_testkit::tool_results)
        .rfind(|r| r.len() == 4)
        .expect("the asked mm's four results");
    assert_eq!(asked[0], "allowed\n");
    assert_eq!(asked[1], "allowed\n");
    assert!(
        asked[2].contains(&refused(other, "tools.networkAllow")),
        "{}",
        asked[2]
    );
    assert_eq!(asked[3], "curl: 7\n");
}

as_root_and_user!(
    an_asked_agent_reaches_the_hosts_of_its_own_entry_and_no_other_as_root,
    an_asked_agent_reaches_the_hosts_of_its_own_entry_and_no_other_as_a_user,
    an_asked_agent_reaches_the_hosts_of_its_own_entry_and_no_other
);

/// A stand-in language server that answers `initialize` and every request with nothing found.
const QUIET_LSP: &str = r#"
while True:
    msg = read()
    if msg.get("method") == "initialize":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"capabilities": {"definitionProvider": True}}})
    elif "id" in msg:
        send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
"#;

async fn an_mcp_server_a_language_server_and_a_hook_reach_the_hosts_of_their_own_entries(s: Scene) {
    let allowed = host_server("allowed\n");
    let other = host_server("secret\n");
    let fixture = s.root.join("fake_mcp.py");
    std::fs::copy(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/mcp/fake_mcp.py"
        ),
        &fixture,
    )
    .unwrap();
    // Each fetches both hosts through the proxy into files named after it; the second hook
    // has no list of its own, so it keeps the machine's network.
    let fetch = |name: &str| {
        format!(
            "curl -s --noproxy '' http://127.0.0.1:{allowed}/ > {name}-allowed; curl -s --noproxy '' http://127.0.0.1:{other}/ > {name}-other\n"
        )
    };
    std::fs::write(
        s.project.join("serve.sh"),
        format!("{}exec python3 {} ok\n", fetch("mcp"), fixture.display()),
    )
    .unwrap();
    std::fs::write(s.root.join("lsp.py"), mm_testkit::lsp::stand_in(QUIET_LSP)).unwrap();
    std::fs::write(
        s.project.join("lsp.sh"),
        format!(
            "{}exec python3 {}\n",
            fetch("lsp"),
            s.root.join("lsp.py").display()
        ),
    )
    .unwrap();
    std::fs::write(s.project.join("a.fk"), "x\n").unwrap();
    std::fs::write(s.project.join("hook.sh"), fetch("hook")).unwrap();
    std::fs::write(s.project.join("plain.sh"), fetch("plain")).unwrap();
    s.user_config(&format!(
        "{FENCED}\
         [mcp.servers.proj]\ncommand = \"sh\"\nargs = [\"serve.sh\"]\nnetworkAllow = [\"127.0.0.1:{allowed}\"]\n\
         [lsp.servers.fake]\ncommand = \"sh\"\nargs = [\"lsp.sh\"]\nextensions = [\".fk\"]\nnetworkAllow = [\"127.0.0.1:{allowed}\"]\n\
         [[hooks.postToolCall]]\ncommand = \"sh hook.sh\"\nnetworkAllow = [\"127.0.0.1:{allowed}\"]\n\
         [[hooks.postToolCall]]\ncommand = \"sh plain.sh\"\n"
    ));
    let (out, results) = s
        .attack(
            &s.project,
            &[],
            vec![
                ("proj__echo", serde_json::json!({"text": "hi"})),
                (
                    "lsp",
                    serde_json::json!({"action": "definition", "path": "a.fk", "line": 1, "column": 1}),
                ),
            ],
            |_| {},
        )
        .await;
    assert_eq!(results.len(), 2, "{}", out.stderr);
    assert_eq!(results[0], "echo: hi", "{}", out.stderr);
    let read = |name: &str| std::fs::read_to_string(s.project.join(name)).unwrap();
    let refused = format!(
        "[network refused: 127.0.0.1:{other} is not in tools.networkAllow (add \"127.0.0.1\" to tools.networkAllow in your config to allow it)]\n"
    );
    for name in ["mcp", "lsp", "hook"] {
        assert_eq!(read(&format!("{name}-allowed")), "allowed\n", "{name}");
        assert_eq!(read(&format!("{name}-other")), refused, "{name}");
    }
    // Without a list of its own: today's network (no proxy, so curl went straight there).
    assert_eq!(read("plain-allowed"), "allowed\n");
    assert_eq!(read("plain-other"), "secret\n");
}

as_root_and_user!(
    an_mcp_server_a_language_server_and_a_hook_reach_the_hosts_of_their_own_entries_as_root,
    an_mcp_server_a_language_server_and_a_hook_reach_the_hosts_of_their_own_entries_as_a_user,
    an_mcp_server_a_language_server_and_a_hook_reach_the_hosts_of_their_own_entries
);

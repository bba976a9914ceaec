//! `fetch_content` against a local HTTP server started by each test (raw HTTP/1.1 on tokio):
//! the tool as the dispatcher runs it, then through the engine over ACP.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mm_testkit as common;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::acp::*;
use common::{Answer, HANG_GUARD, ScriptedModel};
use mm_core::event::{ToolKind, ToolStatus};
use mm_tools::tools::fetch_content::{FetchContent, FetchSettings};
use mm_tools::tools::{CallContext, Describe, Tool, ToolOutput};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

// ---------------------------------------------------------------- the local server

const PAGE: &str = r##"<!doctype html>
<html><head><title>Release notes</title>
<script>window.track = function () { document.write("<p>tracked</p>"); };</script>
<style>p { color: red }</style></head>
<body>
<nav><a href="/">Home</a> · <a href="/docs">Docs</a></nav>
<main>
<h1>Version 2.0</h1>
<p>The <b>new</b> parser is <a href="/parser.html">faster</a>.</p>
<ul><li>Fixed a crash</li><li>Added &quot;fetch&quot;</li></ul>
</main>
<footer>Copyright</footer>
<script>track();</script>
</body></html>"##;

/// The 1 kB writes of `/trickle`, one every 20 ms: three HANG_GUARDs of body.
const TRICKLE_WRITES: usize = (HANG_GUARD.as_millis() as usize * 3) / 20;

/// What the server saw of an endless body: how many bytes it wrote before the client went away.
type Stopped = mpsc::UnboundedReceiver<usize>;

struct Server {
    base: String,
    /// Sends once an endless body has started flowing.
    started: Mutex<Option<mpsc::UnboundedReceiver<()>>>,
    stopped: Mutex<Option<Stopped>>,
}

impl Server {
    async fn start() -> Arc<Server> {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (started_tx, started_rx) = mpsc::unbounded_channel();
        let (stopped_tx, stopped_rx) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            loop {
                let Ok((socket, _)) = listener.accept().await else {
                    return;
                };
                let (started, stopped) = (started_tx.clone(), stopped_tx.clone());
                tokio::spawn(serve(socket, started, stopped));
            }
        });
        Arc::new(Server {
            base,
            started: Mutex::new(Some(started_rx)),
            stopped: Mutex::new(Some(stopped_rx)),
        })
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }
}

async fn respond(socket: &mut TcpStream, status: &str, headers: &[(&str, &str)], body: &[u8]) {
    let mut head = format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let _ = socket.write_all(head.as_bytes()).await;
    let _ = socket.write_all(body).await;
    let _ = socket.shutdown().await;
}

async fn serve(
    mut socket: TcpStream,
    started: mpsc::UnboundedSender<()>,
    stopped: mpsc::UnboundedSender<usize>,
) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        match socket.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let request = String::from_utf8_lossy(&buf).to_string();
    let path = request.split_whitespace().nth(1).unwrap_or("/").to_string();
    let html = [("Content-Type", "text/html; charset=utf-8")];
    match path.as_str() {
        "/page.html" => respond(&mut socket, "200 OK", &html, PAGE.as_bytes()).await,
        "/unlabelled" => respond(&mut socket, "200 OK", &[], PAGE.as_bytes()).await,
        "/data.json" => {
            let body = br#"{"name":"mm","tools":["bash","fetch_content"],"n":2}"#;
            respond(
                &mut socket,
                "200 OK",
                &[("Content-Type", "application/json")],
                body,
            )
            .await
        }
        "/notes.txt" => {
            respond(
                &mut socket,
                "200 OK",
                &[("Content-Type", "text/plain")],
                b"plain  text\n",
            )
            .await
        }
        "/image.png" => {
            let mut body = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
            body.extend_from_slice(&[0u8; 100]);
            respond(
                &mut socket,
                "200 OK",
                &[("Content-Type", "image/png")],
                &body,
            )
            .await
        }
        "/missing" => {
            let body =
                b"<html><body><h1>Not here</h1><p>No page at this address.</p></body></html>";
            respond(&mut socket, "404 Not Found", &html, body).await
        }
        "/broken" => {
            let body = b"database is down\n";
            respond(
                &mut socket,
                "500 Internal Server Error",
                &[("Content-Type", "text/plain")],
                body,
            )
            .await
        }
        "/slow" => {
            // Never answers within the test's timeout nor its HANG_GUARD; bounded so the task
            // ends by itself.
            tokio::time::sleep(HANG_GUARD * 3).await;
            respond(&mut socket, "200 OK", &[], b"late").await
        }
        "/endless" => {
            let head = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n";
            let _ = socket.write_all(head.as_bytes()).await;
            let line = [b'x'; 64 * 1024];
            let mut sent = 0usize;
            // Bounded: 64 MB at most, whatever the client does.
            while sent < 64 * 1024 * 1024 {
                if socket.write_all(&line).await.is_err() {
                    break;
                }
                sent += line.len();
            }
        }
        "/trickle" => {
            // 1 kB every 20 ms for 3 HANG_GUARDs at most: only a client that goes away stops it
            // sooner.
            let head = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n";
            let _ = socket.write_all(head.as_bytes()).await;
            let mut sent = 0usize;
            let _ = started.send(());
            for _ in 0..TRICKLE_WRITES {
                if socket.write_all(&[b'y'; 1024]).await.is_err() {
                    break;
                }
                sent += 1024;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            let _ = stopped.send(sent);
        }
        p if p.starts_with("/hop/") => {
            let n: u32 = p["/hop/".len()..].parse().unwrap_or(0);
            if n == 0 {
                respond(
                    &mut socket,
                    "200 OK",
                    &[("Content-Type", "text/plain")],
                    b"arrived",
                )
                .await
            } else {
                let next = format!("/hop/{}", n - 1);
                respond(&mut socket, "302 Found", &[("Location", &next)], b"").await
            }
        }
        _ => respond(&mut socket, "404 Not Found", &[], b"").await,
    }
}

// ---------------------------------------------------------------- the tool

fn tool(timeout: Duration) -> FetchContent {
    FetchContent {
        settings: FetchSettings {
            timeout,
            ..FetchSettings::default()
        },
        sandbox: Default::default(),
        tasks: Default::default(),
    }
}

async fn fetch_with(
    t: &FetchContent,
    cwd: &Path,
    args: Value,
    cancel: &CancellationToken,
) -> ToolOutput {
    // Nobody to ask: permission questions are refused, forms unavailable.
    let frontend = mm_testkit::Recorder::new();
    let call = CallContext::new(
        "call_1",
        cwd,
        30_000,
        cancel,
        mm_core::event::PermissionMode::Yolo,
        &frontend,
    );
    t.run(args, &call).await
}

async fn fetch(cwd: &Path, args: Value) -> ToolOutput {
    fetch_with(
        &tool(Duration::from_secs(20)),
        cwd,
        args,
        &CancellationToken::new(),
    )
    .await
}

fn failed(text: &str) -> ToolOutput {
    ToolOutput::not_run(text)
}

#[mm_testkit::test]
async fn html_becomes_text_without_scripts_styles_or_navigation() {
    let s = Server::start().await;
    let dir = tempfile::tempdir().unwrap();
    let out = fetch(dir.path(), json!({"url": s.url("/page.html")})).await;
    let expected = format!(
        "# Release notes\n\n# Version 2.0\n\nThe new parser is [faster]({}).\n\n- Fixed a crash\n- Added \"fetch\"",
        s.url("/parser.html")
    );
    assert_eq!(out, ToolOutput::completed(expected.clone()));
    // A page without a content type is recognised by its start.
    let out = fetch(dir.path(), json!({"url": s.url("/unlabelled")})).await;
    assert_eq!(out, ToolOutput::completed(expected));
}

#[mm_testkit::test]
async fn json_is_pretty_printed_and_other_text_kept_as_it_is() {
    let s = Server::start().await;
    let dir = tempfile::tempdir().unwrap();
    let out = fetch(dir.path(), json!({"url": s.url("/data.json")})).await;
    assert_eq!(
        out,
        ToolOutput::completed(
            "{\n  \"name\": \"mm\",\n  \"tools\": [\n    \"bash\",\n    \"fetch_content\"\n  ],\n  \"n\": 2\n}"
        )
    );
    let out = fetch(dir.path(), json!({"url": s.url("/notes.txt")})).await;
    assert_eq!(out, ToolOutput::completed("plain  text\n"));
}

#[mm_testkit::test]
async fn binary_is_refused_without_output_and_saved_with_it() {
    let s = Server::start().await;
    let dir = tempfile::tempdir().unwrap();
    let url = s.url("/image.png");
    let out = fetch(dir.path(), json!({"url": url})).await;
    assert_eq!(
        out,
        failed(&format!(
            "[fetch_content: {url} is binary (image/png, 116 bytes); give output to save it to a file]"
        ))
    );
    let out = fetch(dir.path(), json!({"url": url, "output": "img/logo.png"})).await;
    assert_eq!(
        out,
        ToolOutput::completed("saved 116 bytes (image/png) to img/logo.png")
    );
    let saved = std::fs::read(dir.path().join("img/logo.png")).unwrap();
    assert_eq!(saved.len(), 116);
    assert!(saved.starts_with(b"\x89PNG"));
    // No temporary file is left beside it.
    let names: Vec<String> = std::fs::read_dir(dir.path().join("img"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec!["logo.png"]);
}

#[mm_testkit::test]
async fn five_redirects_are_followed_and_a_sixth_is_refused() {
    let s = Server::start().await;
    let dir = tempfile::tempdir().unwrap();
    let out = fetch(dir.path(), json!({"url": s.url("/hop/5")})).await;
    assert_eq!(out, ToolOutput::completed("arrived"));
    let out = fetch(dir.path(), json!({"url": s.url("/hop/6")})).await;
    assert_eq!(
        out,
        failed(&format!(
            "[fetch_content: too many redirects (more than 5) from {}]",
            s.url("/hop/6")
        ))
    );
}

#[mm_testkit::test]
async fn error_statuses_give_the_status_and_the_start_of_the_page() {
    let s = Server::start().await;
    let dir = tempfile::tempdir().unwrap();
    let out = fetch(dir.path(), json!({"url": s.url("/missing")})).await;
    assert_eq!(
        out,
        failed(&format!(
            "[fetch_content: HTTP 404 Not Found from {}]\n# Not here\n\nNo page at this address.",
            s.url("/missing")
        ))
    );
    let out = fetch(dir.path(), json!({"url": s.url("/broken")})).await;
    assert_eq!(
        out,
        failed(&format!(
            "[fetch_content: HTTP 500 Internal Server Error from {}]\ndatabase is down",
            s.url("/broken")
        ))
    );
}

#[mm_testkit::test]
async fn a_slow_server_times_out_with_one_line() {
    let s = Server::start().await;
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let out = fetch_with(
        &tool(Duration::from_millis(200)),
        dir.path(),
        json!({"url": s.url("/slow")}),
        &CancellationToken::new(),
    )
    .await;
    assert_eq!(
        out,
        failed(&format!(
            "[fetch_content: timed out after 0.2 s fetching {}]",
            s.url("/slow")
        ))
    );
    assert!(started.elapsed() < HANG_GUARD, "{:?}", started.elapsed());
}

#[mm_testkit::test]
async fn a_body_over_the_cap_is_cut_and_said_so_or_not_saved_at_all() {
    let s = Server::start().await;
    let dir = tempfile::tempdir().unwrap();
    let out = fetch(dir.path(), json!({"url": s.url("/endless")})).await;
    assert_eq!(out.status(), ToolStatus::Completed);
    let first = out.text.lines().next().unwrap();
    assert_eq!(
        first,
        "[cut: the body is over the 10 MB cap; this is its first 10 MB]"
    );
    assert!(out.text.contains(&format!(
        "[… {} characters omitted …]",
        10 * 1024 * 1024 - (30_000 - 200)
    )));
    let out = fetch(
        dir.path(),
        json!({"url": s.url("/endless"), "output": "big.txt"}),
    )
    .await;
    assert_eq!(
        out,
        failed(
            "[fetch_content: the body is over the 10 MB cap; nothing was written (a cut file would be corrupt)]"
        )
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[mm_testkit::test]
async fn cancel_stops_the_download_at_once() {
    let s = Server::start().await;
    let dir = tempfile::tempdir().unwrap();
    let cancel = CancellationToken::new();
    let mut started = s.started.lock().unwrap().take().unwrap();
    let mut stopped = s.stopped.lock().unwrap().take().unwrap();
    let t = tool(Duration::from_secs(20));
    let c = cancel.clone();
    let url = s.url("/trickle");
    let run = async {
        fetch_with(
            &t,
            dir.path(),
            json!({"url": url, "output": "endless.txt"}),
            &c,
        )
        .await
    };
    let cancelled_at = async {
        started.recv().await.unwrap();
        cancel.cancel();
        Instant::now()
    };
    let (out, at) = tokio::join!(run, cancelled_at);
    assert_eq!(out, ToolOutput::interrupted("[cancelled]"));
    // At once: bounded by HANG_GUARD, against a body that would flow for three (bench/toolbox.sh
    // measures how fast).
    assert!(at.elapsed() < HANG_GUARD, "{:?}", at.elapsed());
    // The server's writes fail soon after: the connection was dropped, not drained.
    let sent = tokio::time::timeout(HANG_GUARD, stopped.recv())
        .await
        .expect("the server kept writing")
        .unwrap();
    assert!(
        sent < TRICKLE_WRITES * 1024,
        "the whole body was sent: {sent}"
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[mm_testkit::test]
async fn bad_urls_and_unreachable_hosts_get_one_line_each() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            json!({"url": "ftp://example.com/file"}),
            "[fetch_content: only http and https URLs can be fetched, not ftp: (ftp://example.com/file)]",
        ),
        (
            json!({"url": "http//example.com"}),
            "[fetch_content: malformed URL \"http//example.com\": relative URL without a base]",
        ),
        (
            json!({"url": "http://nothing.invalid/"}),
            "[fetch_content: could not resolve the host nothing.invalid (DNS)]",
        ),
    ];
    for (args, line) in cases {
        assert_eq!(fetch(dir.path(), args).await, failed(line));
    }
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    assert_eq!(
        fetch(
            dir.path(),
            json!({"url": format!("http://127.0.0.1:{port}/")})
        )
        .await,
        failed(&format!(
            "[fetch_content: connection refused by 127.0.0.1:{port}]"
        ))
    );
    let out = fetch(dir.path(), json!({"link": "x"})).await;
    assert!(
        out.text
            .starts_with("[bad arguments for fetch_content: missing field `url`"),
        "{}",
        out.text
    );
}

#[mm_testkit::test]
fn kind_title_locations_and_gating() {
    let t = tool(Duration::from_secs(1));
    let cwd = Path::new("/work");
    let page = json!({"url": "http://x.test/"});
    let save = json!({"url": "http://x.test/", "output": "a/b.bin"});
    assert_eq!(t.kind(&page), ToolKind::Fetch);
    assert_eq!(t.title(&page), "fetch_content: http://x.test/");
    assert!(!t.gated(&t.parse(page.clone()).unwrap()));
    assert!(t.gated(&t.parse(save.clone()).unwrap()));
    assert_eq!(t.locations(&page, cwd), Vec::<std::path::PathBuf>::new());
    assert_eq!(t.locations(&save, cwd), vec![cwd.join("a/b.bin")]);
}

// ---------------------------------------------------------------- over ACP

#[mm_testkit::test]
async fn over_acp_a_fetch_is_kind_fetch_and_asks_only_to_save() {
    let s = Server::start().await;
    let dir = tempfile::tempdir().unwrap();
    let cwd = mm_core::paths::canonical(dir.path()).unwrap();
    let mut config = test_config();
    config.yolo = false;
    // The fence's network lets fetch_content reach only allowed hosts: the test's server is one.
    let host = s.url("/");
    let host = host.trim_start_matches("http://").trim_end_matches('/');
    config.tools.network.allow.push(host.to_string());
    let model = ScriptedModel::new(vec![
        Answer::call("fetch_content", json!({"url": s.url("/notes.txt")})),
        Answer::call(
            "fetch_content",
            json!({"url": s.url("/notes.txt"), "output": "notes.txt"}),
        ),
        Answer::text("done"),
    ]);
    let mut h = Harness::start(config, model);
    h.client.initialize(false).await;
    let (id, _) = h.client.new_session(&cwd).await;
    let pid = h.client.send_prompt(&id, "get the notes").await;
    // The first call runs without a dialog; the second asks.
    let (before, req) = h.client.until_request("session/request_permission").await;
    let ups = updates(&before);
    let first = ups
        .iter()
        .find(|u| u["sessionUpdate"] == "tool_call")
        .unwrap();
    assert_eq!(first["kind"], "fetch");
    assert_eq!(
        first["title"],
        format!("fetch_content: {}", s.url("/notes.txt"))
    );
    let done = ups
        .iter()
        .find(|u| u["sessionUpdate"] == "tool_call_update" && u["status"] == "completed")
        .unwrap();
    assert_eq!(done["rawOutput"]["output"], "plain  text\n");
    assert_eq!(req["params"]["toolCall"]["kind"], "fetch");
    assert_eq!(
        req["params"]["toolCall"]["locations"],
        json!([{"path": cwd.join("notes.txt")}])
    );
    h.client.select_option(&req, "allow").await;
    let (before, r) = h.client.until_response(pid).await;
    assert_eq!(r["result"]["stopReason"], "end_turn");
    let saved = updates(&before)
        .into_iter()
        .find(|u| u["sessionUpdate"] == "tool_call_update" && u["status"] == "completed")
        .unwrap();
    assert_eq!(
        saved["rawOutput"]["output"],
        "saved 12 bytes (text/plain) to notes.txt"
    );
    assert_eq!(
        std::fs::read_to_string(cwd.join("notes.txt")).unwrap(),
        "plain  text\n"
    );
    h.finish().await.unwrap();
}

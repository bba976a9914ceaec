//! Benchmarks of the `fetch_content` and `lsp` tools (bench/toolbox.sh runs them in release):
//!
//! - `fetch`: a 10 MB HTML page from a local server, converted and cut: the time of the call and
//!   the growth of the process's peak RSS (VmHWM), for one call per process.
//! - `lsp`: `definition` on a warm `pylsp`: the median time from the call to its result, and
//!   mm's own share of it (the call's time minus the server's, from writing the request to
//!   reading the answer).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::disallowed_methods
)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use mm_core::config::Config;
use mm_tools::lsp::{LspServers, Timeouts};
use mm_tools::process::Supervisor;
use mm_tools::tools::fetch_content::{FetchContent, FetchSettings};
use mm_tools::tools::lsp::Lsp;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

mod common;
use common::run;

/// Peak resident memory of this process (VmHWM), in bytes.
fn peak_rss() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    let kb: usize = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb * 1024
}

/// CPU time of this process so far (user + system, all threads).
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap()
        .split_whitespace()
        .collect();
    // Fields 14 and 15 of the line (utime, stime), counted after the command's `)`.
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    Duration::from_millis(ticks * 10)
}

/// A page like a long documentation page: navigation, scripts, headings, paragraphs with
/// links and entities, lists, code, tables; repeated to `size` bytes.
fn page(size: usize) -> Vec<u8> {
    let mut out = String::from(
        "<!doctype html><html><head><title>Big page</title><style>body{margin:0}</style>\
         <script>var analytics = {id: 42};</script></head><body>\
         <nav><ul><li><a href=\"/\">Home</a></li><li><a href=\"/docs\">Docs</a></li></ul></nav>",
    );
    let mut i = 0;
    while out.len() < size - 200 {
        i += 1;
        out.push_str(&format!(
            "<section><h2>Section {i}</h2><p>The <b>quick</b> brown fox &amp; the lazy dog \
             jump over <a href=\"/page/{i}\">link {i}</a> and   more   text, &eacute;t&eacute; \
             &lt;escaped&gt;.</p><ul><li>first item</li><li>second <code>item()</code></li></ul>\
             <pre>fn f{i}() {{\n    println!(\"{i}\");\n}}</pre><table><tr><td>a</td><td>{i}</td>\
             </tr></table><script>track({i});</script></section>\n"
        ));
    }
    out.push_str("<footer>the end</footer></body></html>");
    out.into_bytes()
}

async fn serve(page: Arc<Vec<u8>>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/big.html", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let page = Arc::clone(&page);
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = socket.read(&mut buf).await;
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n\
                     Content-Length: {}\r\nConnection: close\r\n\r\n",
                    page.len()
                );
                let _ = socket.write_all(head.as_bytes()).await;
                let _ = socket.write_all(&page).await;
            });
        }
    });
    url
}

async fn fetch_bench() {
    let size = 10 * 1024 * 1024 - 4096;
    let page = Arc::new(page(size));
    let url = serve(Arc::clone(&page)).await;
    let tool = FetchContent {
        settings: FetchSettings::default(),
        sandbox: Default::default(),
        tasks: Default::default(),
    };
    let dir = std::env::temp_dir();
    let before = peak_rss();
    let cpu = cpu_time();
    let started = Instant::now();
    let out = run(&tool, &dir, json!({"url": url})).await;
    let elapsed = started.elapsed();
    let cpu = cpu_time().saturating_sub(cpu);
    let growth = peak_rss().saturating_sub(before);
    assert!(
        out.text.contains("# Section 1\n"),
        "{}",
        &out.text[..out.text.len().min(500)]
    );
    println!(
        "fetch_content of a {:.1} MB HTML page: {:.0} ms ({:.0} ms of CPU, server included), result {} chars, peak RSS growth {:.1} MB ({:.2}x the page)",
        page.len() as f64 / 1e6,
        elapsed.as_secs_f64() * 1000.0,
        cpu.as_secs_f64() * 1000.0,
        out.text.chars().count(),
        growth as f64 / 1e6,
        growth as f64 / page.len() as f64
    );
}

fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    v[v.len() / 2]
}

async fn lsp_bench() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().canonicalize().unwrap();
    std::fs::write(
        cwd.join("calc.py"),
        "def add_one(x):\n    return x + 1\n\n\nclass Counter:\n    def bump(self):\n        return add_one(1)\n",
    )
    .unwrap();
    let mut main = String::from("from calc import add_one, Counter\n\n");
    for i in 0..200 {
        main.push_str(&format!("value_{i} = add_one({i})\n"));
    }
    std::fs::write(cwd.join("main.py"), &main).unwrap();
    let processes = Supervisor::new();
    let servers = Arc::new(LspServers::new(
        &Config::default(),
        Arc::clone(&processes),
        Default::default(),
    ));
    let tool = Lsp {
        servers: Arc::clone(&servers),
        timeouts: Timeouts {
            start: Duration::from_secs(60),
            request: Duration::from_secs(30),
            diagnostics: Duration::from_secs(10),
        },
        sandbox: Default::default(),
    };
    let args = json!({"action": "definition", "path": "main.py", "line": 102, "symbol": "add_one"});
    let started = Instant::now();
    let first = run(&tool, &cwd, args.clone()).await;
    let cold = started.elapsed();
    assert_eq!(first.text, "calc.py:1:5  def add_one(x):", "{}", first.text);
    for _ in 0..5 {
        run(&tool, &cwd, args.clone()).await;
    }
    let (mut total, mut own) = (Vec::new(), Vec::new());
    for _ in 0..30 {
        let started = Instant::now();
        let out = run(&tool, &cwd, args.clone()).await;
        let t = started.elapsed();
        assert_eq!(out.text, "calc.py:1:5  def add_one(x):");
        total.push(t);
        own.push(t.saturating_sub(servers.last_round_trip().unwrap()));
    }
    println!(
        "lsp definition on pylsp: cold {:.0} ms; warm median {:.1} ms (of 30), of which mm's own {:.2} ms (max {:.2} ms)",
        cold.as_secs_f64() * 1000.0,
        median(&mut total).as_secs_f64() * 1000.0,
        median(&mut own).as_secs_f64() * 1000.0,
        own.iter().max().unwrap().as_secs_f64() * 1000.0,
    );
    processes.shutdown().await;
}

#[tokio::main]
async fn main() {
    match std::env::args().nth(1).as_deref() {
        Some("fetch") => fetch_bench().await,
        Some("lsp") => lsp_bench().await,
        _ => eprintln!("usage: toolbox_bench fetch|lsp"),
    }
}

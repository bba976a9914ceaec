//! The sandbox's fence alone, without mm around it (bench/sandbox.sh runs it): each mode's
//! median time to build the fence, and to spawn `/bin/true` inside it and wait for it, over
//! 400 spawns a mode. The modes take turns spawn by spawn, so that the load of a shared
//! machine falls on all alike; the fence's cost is the median of the differences with the
//! `off` spawn of the same turn. `workspace-write` is the default fence, with its network
//! namespace and mm's proxy (`tools.network = allowlist`); `…, network open` is the same fence
//! without them, so the difference of the two is what the network's isolation costs a call.
//!
//! Then what the proxy costs a download (docs/sandbox.md, "The network"): `curl` fetching
//! 200 MB from a server of this process on the host's 127.0.0.1, fenced through mm's proxy
//! (the server's address in `tools.networkAllow`) and unfenced, directly, in turns.
//!
//!     cargo run --release --example fence_cost [spawns] [downloads]
// A benchmark sets up its folders directly, not through mm's writer, and reports on stdout.
#![allow(clippy::disallowed_methods, clippy::print_stdout)]

use std::sync::Arc;
use std::time::Instant;

use mm_core::config::{NetworkConfig, NetworkMode, SandboxMode};
use mm_tools::process::{Group, Supervisor};
use mm_tools::sandbox::{Fencing, Places, Sandbox, Settings};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The download's size.
const DOWNLOAD: usize = 200 * 1024 * 1024;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn sandbox(
    mode: SandboxMode,
    network: NetworkMode,
    allow: &[String],
    places: &Places,
) -> Arc<Sandbox> {
    let settings = Settings {
        network: NetworkConfig {
            mode: network,
            allow: allow.to_vec(),
            expose: Vec::new(),
        },
        ..Settings::mode(mode)
    };
    Arc::new(Sandbox::new(settings, places.clone()))
}

/// Runs `program args` in `fencing` and waits for it; `Err` when it fails.
async fn run(
    processes: &Arc<Supervisor>,
    fencing: Fencing,
    program: &str,
    args: &[&str],
) -> std::io::Result<()> {
    let mut cmd = fencing.command(program);
    cmd.args(args);
    let mut child = processes.spawn(&mut cmd, Group::Session, fencing)?;
    let status = child.wait().await?;
    child.release();
    match status.success() {
        true => Ok(()),
        false => Err(std::io::Error::other(format!(
            "{program} {args:?}: {status}"
        ))),
    }
}

/// A server on the host's 127.0.0.1 answering every request with [`DOWNLOAD`] bytes.
async fn serve_download() -> std::io::Result<u16> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut head = [0u8; 4096];
                let _ = stream.read(&mut head).await;
                let start = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {DOWNLOAD}\r\nConnection: close\r\n\r\n"
                );
                stream.write_all(start.as_bytes()).await?;
                let chunk = vec![0u8; 1024 * 1024];
                for _ in 0..DOWNLOAD / chunk.len() {
                    stream.write_all(&chunk).await?;
                }
                stream.shutdown().await
            });
        }
    });
    Ok(port)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(400);
    let downloads: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(5);
    // A folder of its own: the fence makes the cwd's `.mm/` when it is missing.
    let dir = std::env::temp_dir().join(format!("mm-fence-cost-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let cwd = dir.canonicalize()?;
    let processes = Supervisor::new();
    let default_allow = NetworkConfig::default().allow;
    let modes = [
        ("off", SandboxMode::Off, NetworkMode::Allowlist),
        ("read-only", SandboxMode::ReadOnly, NetworkMode::Allowlist),
        (
            "workspace-write",
            SandboxMode::WorkspaceWrite,
            NetworkMode::Allowlist,
        ),
        (
            "…, network open",
            SandboxMode::WorkspaceWrite,
            NetworkMode::Open,
        ),
    ];
    // The places mm's own run has: the home's secret places to look up and hide, the
    // package caches to open.
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let places = Places {
        caches: home
            .as_deref()
            .map(|h| mm_tools::sandbox::hidden::caches(h, |v| std::env::var_os(v)))
            .unwrap_or_default(),
        home,
        ..Places::default()
    };
    let sandboxes: Vec<Arc<Sandbox>> = modes
        .iter()
        .map(|(_, mode, network)| sandbox(*mode, *network, &default_allow, &places))
        .collect();
    if let Some(s) = sandboxes.last() {
        let r = s.report();
        println!(
            "hidden places that exist: {}; package caches open: {}",
            r.hidden.len(),
            r.caches.len()
        );
    }
    let mut build = vec![Vec::new(); modes.len()];
    let mut total = vec![Vec::new(); modes.len()];
    for _ in 0..n {
        for (m, sandbox) in sandboxes.iter().enumerate() {
            let start = Instant::now();
            let fence = sandbox.fence(&cwd).map_err(std::io::Error::other)?;
            let built = Instant::now();
            run(&processes, fence, "/bin/true", &[]).await?;
            build[m].push((built - start).as_secs_f64() * 1e3);
            total[m].push(start.elapsed().as_secs_f64() * 1e3);
        }
    }
    println!("spawn /bin/true and wait, median of {n}, modes in turn");
    println!(
        "{:<16} {:>10} {:>12} {:>12}",
        "tools.sandbox", "build", "spawn+wait", "fence cost"
    );
    let mut missed = Vec::new();
    for (m, (name, _, _)) in modes.iter().enumerate() {
        let cost: Vec<f64> = total[m].iter().zip(&total[0]).map(|(t, o)| t - o).collect();
        let cost = median(cost);
        println!(
            "{:<16} {:>7.3} ms {:>9.3} ms {:>+9.3} ms",
            name,
            median(build[m].clone()),
            median(total[m].clone()),
            cost
        );
        if cost >= 2.0 {
            missed.push(format!(
                "{name}: the fence costs a call {cost:.3} ms (budget: 2 ms)"
            ));
        }
    }

    let port = serve_download().await?;
    let url = format!("http://127.0.0.1:{port}/");
    let proxied = sandbox(
        SandboxMode::WorkspaceWrite,
        NetworkMode::Allowlist,
        &[format!("127.0.0.1:{port}")],
        &places,
    );
    let direct = sandbox(SandboxMode::Off, NetworkMode::Open, &[], &places);
    // curl leaves 127.0.0.1 out of the proxy by NO_PROXY (the namespace's own loopback):
    // `--noproxy ''` sends it through; unfenced, `--noproxy '*'` goes straight.
    let (mut through, mut straight) = (Vec::new(), Vec::new());
    for _ in 0..downloads {
        for (times, sandbox, noproxy) in
            [(&mut through, &proxied, ""), (&mut straight, &direct, "*")]
        {
            let fence = sandbox.fence(&cwd).map_err(std::io::Error::other)?;
            let start = Instant::now();
            let args = ["-sf", "-o", "/dev/null", "--noproxy", noproxy, url.as_str()];
            run(&processes, fence, "curl", &args).await?;
            times.push(start.elapsed().as_secs_f64() * 1e3);
        }
    }
    let (through, straight) = (median(through), median(straight));
    println!();
    println!("curl 200 MB from 127.0.0.1, median of {downloads}, in turns");
    println!("{:<16} {:>9.1} ms", "direct", straight);
    println!(
        "{:<16} {:>9.1} ms  ×{:.2}",
        "through the proxy",
        through,
        through / straight
    );
    if through >= 2.0 * straight {
        missed.push(format!(
            "the download through the proxy takes ×{:.2} the direct time (budget: ×2)",
            through / straight
        ));
    }
    std::fs::remove_dir_all(&dir)?;
    match missed.is_empty() {
        true => Ok(()),
        false => Err(std::io::Error::other(missed.join("; "))),
    }
}

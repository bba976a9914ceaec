//! The sandbox's fence alone, without mm around it (bench/sandbox.sh runs it): each mode's
//! median time to build the fence, and to spawn `/bin/true` inside it and wait for it, over
//! 400 spawns a mode. The modes take turns spawn by spawn, so that the load of a shared
//! machine falls on all alike; the fence's cost is the median of the differences with the
//! `off` spawn of the same turn.
//!
//!     cargo run --release --example fence_cost [spawns]
// A benchmark sets up its folders directly, not through mm's writer, and reports on stdout.
#![allow(clippy::disallowed_methods, clippy::print_stdout)]

use std::sync::Arc;
use std::time::Instant;

use mm_core::config::SandboxMode;
use mm_tools::process::{Group, Supervisor};
use mm_tools::sandbox::{Places, Sandbox, Settings};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(400);
    // A folder of its own: the fence makes the cwd's `.mm/` when it is missing.
    let dir = std::env::temp_dir().join(format!("mm-fence-cost-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let cwd = dir.canonicalize()?;
    let processes = Supervisor::new();
    let modes = [
        SandboxMode::Off,
        SandboxMode::ReadOnly,
        SandboxMode::WorkspaceWrite,
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
        .map(|mode| Arc::new(Sandbox::new(Settings::mode(*mode), places.clone())))
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
            let mut cmd = fence.command("/bin/true");
            let mut child = processes.spawn(&mut cmd, Group::Session, fence)?;
            child.wait().await?;
            child.release();
            build[m].push((built - start).as_secs_f64() * 1e3);
            total[m].push(start.elapsed().as_secs_f64() * 1e3);
        }
    }
    println!("spawn /bin/true and wait, median of {n}, modes in turn");
    println!(
        "{:<16} {:>10} {:>12} {:>12}",
        "tools.sandbox", "build", "spawn+wait", "fence cost"
    );
    for (m, mode) in modes.iter().enumerate() {
        let cost: Vec<f64> = total[m].iter().zip(&total[0]).map(|(t, o)| t - o).collect();
        println!(
            "{:<16} {:>7.3} ms {:>9.3} ms {:>+9.3} ms",
            mode.name(),
            median(build[m].clone()),
            median(total[m].clone()),
            median(cost)
        );
    }
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

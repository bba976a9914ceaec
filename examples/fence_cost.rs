//! The sandbox's fence alone, without mm around it (bench/sandbox.sh runs it): each mode's
//! median time to build the fence, and to spawn `/bin/true` inside it and wait for it, over
//! 400 spawns, the modes taken twice in turn. The fence costs the difference with `off`.
//!
//!     cargo run --release --example fence_cost [spawns]
// A benchmark sets up its folders directly, not through mm's writer.
#![allow(clippy::disallowed_methods)]

use std::sync::Arc;
use std::time::Instant;

use mm::config::Config;
use mm::process::{Group, Supervisor};
use mm::sandbox::{Mode, Places, Sandbox};

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
    println!("spawn /bin/true and wait, median of {n}");
    println!(
        "{:<16} {:>10} {:>12}",
        "tools.sandbox", "build", "spawn+wait"
    );
    let modes = [Mode::Off, Mode::ReadOnly, Mode::WorkspaceWrite];
    for mode in modes.iter().chain(modes.iter()) {
        let mut config = Config::default();
        config.tools.sandbox = *mode;
        let sandbox = Arc::new(Sandbox::new(&config, Places::default()));
        let (mut build, mut total) = (Vec::new(), Vec::new());
        for _ in 0..n {
            let start = Instant::now();
            let fence = sandbox.fence(&cwd).map_err(std::io::Error::other)?;
            let built = Instant::now();
            let mut cmd = tokio::process::Command::new("/bin/true");
            let mut child = processes.spawn_fenced(&mut cmd, Group::Session, fence)?;
            child.wait().await?;
            child.release();
            build.push((built - start).as_secs_f64() * 1e3);
            total.push(start.elapsed().as_secs_f64() * 1e3);
        }
        println!(
            "{:<16} {:>7.3} ms {:>9.3} ms",
            mode.name(),
            median(build),
            median(total)
        );
    }
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

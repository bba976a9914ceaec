//! Prints the Seatbelt profile mm gives a command of a session in the current folder under
//! `tools.sandbox = workspace-write` (or the mode given as the first argument) and
//! `tools.network = "open"` (or the second argument: `open`, `none`, or the port of mm's proxy
//! for `allowlist`), for the macOS CI job to run
//! `sandbox-exec -p "$(cargo run -q -p mm-tools --example seatbelt_profile)" true`
//! (docs/platforms.md).
#![allow(clippy::print_stdout)]

use std::path::PathBuf;

use mm_core::config::SandboxMode;
use mm_tools::sandbox::SeatbeltOutbound;

fn main() -> Result<(), String> {
    let mode = match std::env::args().nth(1) {
        Some(name) => SandboxMode::parse(&name).ok_or(format!("no such mode: {name}"))?,
        None => SandboxMode::WorkspaceWrite,
    };
    let outbound = match std::env::args().nth(2).as_deref() {
        None | Some("open") => SeatbeltOutbound::Open,
        Some("none") => SeatbeltOutbound::Nowhere,
        Some(port) => SeatbeltOutbound::Proxy(
            port.parse()
                .map_err(|_| format!("not open, none or a port: {port}"))?,
        ),
    };
    let cwd = std::env::current_dir().map_err(|e| e.to_string())?;
    let cwd = mm_core::paths::canonical(&cwd).map_err(|e| e.to_string())?;
    let mut writable = vec![cwd.clone(), PathBuf::from("/tmp")];
    writable.extend(std::env::var_os("TMPDIR").map(PathBuf::from));
    let protected = [(cwd.join(".mm"), true)];
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let hidden = mm_tools::sandbox::hidden::Hidden::new(home.as_deref(), &[], &[], &[]);
    print!(
        "{}",
        mm_tools::sandbox::seatbelt_profile(
            mode,
            &writable,
            &protected,
            &hidden.real_places(),
            outbound
        )
    );
    Ok(())
}

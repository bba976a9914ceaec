//! mm's test support (dev only): in a suite of crates/mm/tests, `use mm_testkit as common;`
//! then `use common::*;` (or name what it uses).
//!
//! - the model: [`ScriptedModel`] in process (mm-testkit-core's model.rs), or [`FakeServer`]
//!   over HTTP (fake_server.rs and http.rs, answering from the script of script.rs); both check
//!   every request's history with mm-testkit-core's invariants.rs; the demo model's answers
//!   (demo.rs, also the `mm-fake-server` binary);
//! - the front end: [`Recorder`] (mm-testkit-core's recorder.rs);
//! - an engine over the scripted model in a sandbox: [`Rig`] (rig.rs);
//! - the ACP test client and in-process server (acp.rs); stand-in language servers (lsp.rs);
//! - asking other agents from the real binary: helpers and the agents of agents/ (agents.rs);
//! - the `mm` binary run in a sandbox (mm_run.rs), as root or as a plain user (as_user.rs);
//! - the fuzz targets and the counting allocator (fuzz.rs; also in examples/fuzz.rs);
//! - the suites' harness (harness.rs): `#[mm_testkit::test]`, and [`skip`] for a test that
//!   cannot run here.
//!
//! It depends on the crates below the binary only (never on `mm`, whose suites use it), so a
//! suite links one copy of each crate.
// Test code: a failed step panics with its reason, the fixtures write files directly, and the
// rigs spawn their tasks and start mm and its stand-ins themselves (the test's runtime owns them).
#![allow(
    dead_code,
    unused_imports,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods
)]

pub mod acp;
pub mod agents;
#[cfg(unix)]
pub mod as_user;
#[cfg(not(unix))]
#[path = "as_user_none.rs"]
pub mod as_user;
pub mod demo;
pub mod fake_server;
pub mod fuzz;
pub mod harness;
pub mod http;
pub mod lsp;
pub mod mm_run;
pub mod platform;
pub mod probes;
pub mod pty;
pub mod rig;
pub mod script;

// The doubles below the engine are mm-testkit-core's (mm-engine's own tests use them too).
pub use mm_testkit_core::{invariants, model, recorder};

use std::path::PathBuf;
use std::time::Duration;

pub use fake_server::{FakeServer, LastByte, Options, Received, Responder};
pub use harness::{skip, under_ci};
pub use mm_testkit_core::{Answer, Recorder, ScriptedModel, check_history};
pub use mm_testkit_macros::test;
pub use rig::{Rig, compact_line, contents, hook, rig, script, tool_outputs};
pub use script::{Call, Chunk, Reply};

/// Whether an executable `command` is on PATH (on Windows with an extension of `PATHEXT`, as
/// mm finds it: `npx.cmd`).
pub fn on_path(command: &str) -> bool {
    platform::on_path(command)
}

/// The test needs `command` on PATH: when it is not there, the test is skipped with the reason,
/// `install` saying how to get it (under `CI=true` it fails).
pub fn need_command(command: &str, install: &str) {
    if !on_path(command) {
        skip(format!("{command} is not installed ({install})"));
    }
}

/// The bound of what must happen at once (a cancel answered, a timeout fired, a call returning
/// while a job it started runs on): many times the expected time, so a busy two-core machine
/// cannot miss it, and well below the sleeps of 30 s and more that it guards against. How fast
/// these things really are is measured by the scripts in bench/.
pub const HANG_GUARD: Duration = Duration::from_secs(10);

/// The content of the `tool` messages of a chat request, in order.
pub fn tool_results(request: &serde_json::Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .expect("a request with messages")
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// A port on 127.0.0.1 that was free a moment ago and has no listener now: connecting to it is
/// refused.
pub fn refused_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    listener.local_addr().expect("a bound address").port()
}

/// The real model server's base URL for end-to-end tests: `MM_E2E_URL`, which `.ci/run` sets
/// after `scripts/local-model.sh start`. When it is not set the test is skipped with the reason
/// (under `CI=true` it fails).
pub fn e2e_url() -> String {
    match std::env::var("MM_E2E_URL") {
        Ok(url) if !url.is_empty() => url,
        _ => skip("MM_E2E_URL is not set: no real model server (scripts/local-model.sh start)"),
    }
}

/// The `mm` binary under test: `target/<profile>/mm` (`mm.exe` on Windows), beside the folder of the running test
/// (`target/<profile>/deps/`). Cargo builds it before the suites of crates/mm/tests, the ones
/// that run it; `CARGO_BIN_EXE_mm` names it for them but not for this library.
pub fn mm_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("the running test's path");
    let mut dir = exe.parent().expect("the test's folder").to_path_buf();
    if dir.ends_with("deps") {
        dir.pop();
    }
    let mm = dir.join(format!("mm{}", std::env::consts::EXE_SUFFIX));
    assert!(
        mm.is_file(),
        "{} is missing: the suites that run mm are those of crates/mm (cargo test -p mm)",
        mm.display()
    );
    mm
}

/// A folder of cargo's target folder for the suites' temporary files (what `CARGO_TARGET_TMPDIR`
/// names for a suite): `target/tmp`, beside the folder of the `mm` under test.
pub fn target_tmpdir() -> PathBuf {
    let bin = mm_binary();
    let target = bin
        .parent()
        .and_then(|profile| profile.parent())
        .expect("the target folder");
    let tmp = target.join("tmp");
    std::fs::create_dir_all(&tmp).expect("the target's tmp folder");
    tmp
}

/// The folders the fence of `workspace-write` lets every command write, as `mm` finds them: the
/// sandbox's temp folders (`/tmp`, `/dev/shm` on Unix) and the process's (`$TMPDIR`; `%TEMP%`
/// on Windows), canonical.
pub fn fence_temp_folders() -> Vec<PathBuf> {
    let places = mm_tools::sandbox::Places::default().with_temp_dir(std::env::temp_dir());
    places
        .temp
        .into_iter()
        .map(|t| mm_core::paths::canonical(&t).unwrap_or(t))
        .collect()
}

/// A fresh folder of the test's own outside every folder the fence lets commands write
/// ([`fence_temp_folders`]), for a project and what lies beside it (a write that must be refused
/// aims there): under cargo's target folder when that is outside them, else under `/var/tmp`,
/// else under `~/.cache/mm-tests`, the first where the test can make a folder and `fits`
/// accepts it (the home folder: `USERPROFILE` on Windows). A clone under `/tmp` has its target
/// folder there too: the test runs all the same.
/// When there is no such folder, the test is skipped with the reason (under `CI=true` it fails).
pub fn outside_the_fence_where(fits: impl Fn(&std::path::Path) -> bool) -> tempfile::TempDir {
    let mut candidates = vec![target_tmpdir(), PathBuf::from("/var/tmp")];
    if let Some(home) = mm_core::paths::home() {
        candidates.push(home.join(".cache").join("mm-tests"));
    }
    let mut tried = Vec::new();
    for base in first_outside(&candidates, &fence_temp_folders(), fits, &mut tried) {
        match tempfile::tempdir_in(&base) {
            Ok(dir) => return dir,
            Err(e) => tried.push(format!("{} ({e})", base.display())),
        }
    }
    skip(format!(
        "no folder outside the fence's writable temp folders for this test: tried {}",
        tried.join(", ")
    ))
}

/// The candidates (made when missing, canonical) that lie under none of `temp` and that `fits`
/// accepts, in order; why each other one was passed over goes to `tried`.
fn first_outside(
    candidates: &[PathBuf],
    temp: &[PathBuf],
    fits: impl Fn(&std::path::Path) -> bool,
    tried: &mut Vec<String>,
) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for base in candidates {
        let _ = std::fs::create_dir_all(base);
        let Ok(real) = mm_core::paths::canonical(base) else {
            tried.push(format!("{} (cannot be made)", base.display()));
            continue;
        };
        if let Some(t) = temp.iter().find(|t| real.starts_with(t)) {
            tried.push(format!("{} (under {})", real.display(), t.display()));
        } else if !fits(&real) {
            tried.push(format!("{} (not reachable)", real.display()));
        } else {
            out.push(real);
        }
    }
    out
}

/// [`outside_the_fence_where`] any such folder fits.
pub fn outside_the_fence() -> tempfile::TempDir {
    outside_the_fence_where(|_| true)
}

#[cfg(test)]
mod tests {
    use super::*;

    // libtest's `#[test]`: the crate's own `test` (the suites' harness macro) is in scope.
    /// A clone under /tmp: its target folder is passed over for the next candidate.
    #[::core::prelude::v1::test]
    fn a_target_folder_under_a_temp_folder_is_passed_over() {
        let temp = tempfile::tempdir().unwrap();
        let other = tempfile::tempdir().unwrap();
        let t = mm_core::paths::canonical(temp.path()).unwrap();
        let target = t.join("clone").join("target").join("tmp");
        let beside = mm_core::paths::canonical(other.path()).unwrap();
        let mut tried = Vec::new();
        let found = first_outside(
            &[target.clone(), beside.clone()],
            std::slice::from_ref(&t),
            |_| true,
            &mut tried,
        );
        assert_eq!(found, vec![beside.clone()]);
        assert_eq!(
            tried,
            vec![format!("{} (under {})", target.display(), t.display())]
        );
        // One that does not fit (a plain user cannot reach it) is passed over too.
        let mut tried = Vec::new();
        let found = first_outside(std::slice::from_ref(&beside), &[], |_| false, &mut tried);
        assert!(found.is_empty());
        assert_eq!(tried, vec![format!("{} (not reachable)", beside.display())]);
    }
}

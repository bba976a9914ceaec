//! macOS: commands run under Seatbelt, as `/usr/bin/sandbox-exec -p <profile> <program> …`
//! with the profile of [`super::seatbelt::profile`]. Seatbelt cannot be nested (a
//! `sandbox_apply` inside a sandbox fails), so an mm that runs inside mm's fence
//! ([`FENCED_VAR`] set) starts its commands in the outer fence alone.
//!
//! The network (`tools.network`): macOS has no network namespace, so in `allowlist` mm's proxy
//! (`proxy.rs`) listens on the host's 127.0.0.1, on a port the kernel picks, started with the
//! first fence that needs it and kept for the process; the profile lets a command's IP
//! connections go to that port only, and the command gets the proxy variables. In `none` the
//! profile lets none out; in `open` it says nothing of the network.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use mm_core::config::{NetworkMode, SandboxMode};
use mm_core::sandbox_report::{FENCED_VAR, Fencer};

use super::kernel::Enforcement;
use super::network::Door;
pub use super::not_linux::{FenceError, landlock_abi, namespace_works};
use super::passage::{Passage, PassageKey};
use super::paths::Rule;
use super::proxy::Proxy;
use super::seatbelt::Outbound;

/// Where macOS keeps it.
const SANDBOX_EXEC: &str = "/usr/bin/sandbox-exec";

/// What `mm doctor` says to do when the fence is not whole and `tools.sandboxRequired` is set.
pub const REMEDY: &str = "run mm where /usr/bin/sandbox-exec is (it comes with macOS)";

/// What is kept between calls: mm's proxy for each door and session (its refusals, allowed
/// hosts and questions are the session's), started with the first fence that needs it.
pub type State = Arc<Mutex<HashMap<(Door, PassageKey), Arc<Proxy>>>>;

/// What one fenced child runs under: the profile, and the proxy variables in `allowlist`.
#[derive(Debug)]
pub struct Fence {
    mode: SandboxMode,
    profile: String,
    env: Vec<(&'static str, String)>,
}

impl Fence {
    /// The value of [`FENCED_VAR`] in the child's environment: the mode.
    pub fn marker(&self) -> &'static str {
        self.mode.name()
    }

    /// `sandbox-exec -p <profile> <program>`: the caller adds the program's arguments.
    pub fn command(&self, program: &OsStr) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(SANDBOX_EXEC);
        cmd.arg("-p").arg(&self.profile).arg(program);
        cmd
    }

    /// Sets [`FENCED_VAR`] and the proxy variables: the command itself was made by
    /// [`Fence::command`].
    pub(crate) fn apply(self, cmd: &mut tokio::process::Command) {
        cmd.env(FENCED_VAR, self.marker());
        cmd.envs(self.env);
    }
}

/// Whether mm's proxy can listen on the host's loopback (started, then stopped). `Err` says
/// why not.
pub fn network_works() -> Result<(), String> {
    start_proxy(Door::open(), Passage::default().key())
        .map(drop)
        .map_err(|e| format!("mm's proxy cannot listen on 127.0.0.1: {e}"))
}

/// Seatbelt is there when `sandbox-exec` is.
pub(super) fn enforcement(outer_fence: Option<String>) -> Enforcement {
    let fencer = match Path::new(SANDBOX_EXEC).exists() {
        true => Fencer::Seatbelt,
        false => Fencer::Missing(format!("{SANDBOX_EXEC} is missing")),
    };
    let linux_only = || Err("Linux only (Seatbelt's profile keeps .mm/ read-only)".to_string());
    Enforcement {
        fencer,
        namespace: linux_only(),
        // Seatbelt's profile fences it (the proxy is started with the first fence).
        network: Ok(()),
        devpts: linux_only(),
        seccomp: linux_only(),
        nested: outer_fence,
    }
}

/// The fence of one command under `rule`; `None` inside an outer fence.
pub(super) fn fence(
    rule: &Rule<'_>,
    enforcement: &Enforcement,
    state: &State,
    // No namespace: nothing to forward (docs/platforms.md).
    (door, passage, _): (&Door, &Passage, &super::forwarding::Forwarding),
) -> Result<Option<Fence>, FenceError> {
    if enforcement.nested.is_some() {
        return Ok(None);
    }
    let (outbound, env) = match door.mode {
        NetworkMode::Open => (Outbound::Open, Vec::new()),
        NetworkMode::None => (Outbound::Nowhere, Vec::new()),
        // A proxy that cannot be started leaves the command no network: the fence fails
        // closed, as `none`.
        NetworkMode::Allowlist => match proxy(state, door, passage) {
            Some(proxy) => (Outbound::Proxy(proxy.port()), proxy.env("")),
            None => (Outbound::Nowhere, Vec::new()),
        },
    };
    let writable: Vec<PathBuf> = rule.roots.paths().map(Path::to_path_buf).collect();
    Ok(Some(Fence {
        mode: rule.mode,
        profile: super::seatbelt::profile(
            rule.mode,
            &writable,
            &rule.protected,
            &rule.hidden.real_places(),
            outbound,
        ),
        env,
    }))
}

/// The proxy of `door` for the session of `passage`, started the first time it is asked for;
/// those of sessions that ended are stopped then.
fn proxy(state: &State, door: &Door, passage: &Passage) -> Option<Arc<Proxy>> {
    let mut started = state.lock().ok()?;
    let key = (door.clone(), passage.key());
    if let Some(proxy) = started.get(&key) {
        return Some(Arc::clone(proxy));
    }
    started.retain(|(_, session), _| session.alive());
    let proxy = Arc::new(start_proxy(door.clone(), passage.key()).ok()?);
    started.insert(key, Arc::clone(&proxy));
    Some(proxy)
}

/// mm's proxy on the host's 127.0.0.1, on a port the kernel picks.
fn start_proxy(door: Door, passage: PassageKey) -> std::io::Result<Proxy> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    Proxy::start(listener, door, passage)
}

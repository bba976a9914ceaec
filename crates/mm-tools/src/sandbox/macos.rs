//! macOS: commands run under Seatbelt, as `/usr/bin/sandbox-exec -p <profile> <program> …`
//! with the profile of [`super::seatbelt::profile`]. Seatbelt cannot be nested (a
//! `sandbox_apply` inside a sandbox fails), so an mm that runs inside mm's fence
//! ([`FENCED_VAR`] set) starts its commands in the outer fence alone.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use mm_core::config::SandboxMode;
use mm_core::sandbox_report::{FENCED_VAR, Fencer};

use super::kernel::Enforcement;
pub use super::not_linux::{FenceError, landlock_abi, namespace_works, network_works};
use super::paths::Rule;

/// Where macOS keeps it.
const SANDBOX_EXEC: &str = "/usr/bin/sandbox-exec";

/// What `mm doctor` says to do when the fence is not whole and `tools.sandboxRequired` is set.
pub const REMEDY: &str = "run mm where /usr/bin/sandbox-exec is (it comes with macOS)";

/// Nothing is kept between calls.
pub type State = ();

/// What one fenced child runs under: the profile.
#[derive(Debug)]
pub struct Fence {
    mode: SandboxMode,
    profile: String,
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

    /// Sets [`FENCED_VAR`]: the command itself was made by [`Fence::command`].
    pub(crate) fn apply(self, cmd: &mut tokio::process::Command) {
        cmd.env(FENCED_VAR, self.marker());
    }
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
        devpts: linux_only(),
        seccomp: linux_only(),
        nested: outer_fence,
    }
}

/// The fence of one command under `rule`; `None` inside an outer fence.
pub(super) fn fence(
    rule: &Rule<'_>,
    enforcement: &Enforcement,
    _: &State,
    _: (&super::network::Door, &super::network::Refusals),
) -> Result<Option<Fence>, FenceError> {
    if enforcement.nested.is_some() {
        return Ok(None);
    }
    let writable: Vec<PathBuf> = rule.roots.paths().map(Path::to_path_buf).collect();
    Ok(Some(Fence {
        mode: rule.mode,
        profile: super::seatbelt::profile(
            rule.mode,
            &writable,
            &rule.protected,
            &rule.hidden.real_places(),
        ),
    }))
}

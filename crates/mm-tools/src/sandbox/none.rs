//! Systems without a fence for commands yet (Windows): the sandbox is "not enforced", which
//! the banner, `mm doctor` and the ACP log say and `tools.sandboxRequired = true` refuses; the
//! file tools' `check_write` still holds.

use std::ffi::OsStr;

use mm_core::sandbox_report::Fencer;

use super::kernel::Enforcement;
pub use super::not_linux::{FenceError, landlock_abi, namespace_works};
use super::paths::Rule;

/// What `mm doctor` says to do when the fence is not whole and `tools.sandboxRequired` is set.
pub const REMEDY: &str = "run mm in WSL (Linux, with Landlock) for a fence";

/// Nothing is kept between calls.
pub type State = ();

/// No fence is ever made.
#[derive(Debug)]
pub enum Fence {}

impl Fence {
    pub fn marker(&self) -> &'static str {
        match *self {}
    }

    pub fn command(&self, _: &OsStr) -> tokio::process::Command {
        match *self {}
    }

    pub(crate) fn apply(self, _: &mut tokio::process::Command) {
        match self {}
    }
}

/// Nothing fences the network here.
pub fn network_works() -> Result<(), String> {
    Err(format!(
        "{} has no fence for commands' connections",
        std::env::consts::OS
    ))
}

/// Nothing fences commands here.
pub(super) fn enforcement(outer_fence: Option<String>) -> Enforcement {
    let none = || Err("no sandbox for commands on this system".to_string());
    Enforcement {
        fencer: Fencer::Missing(format!(
            "{} has no sandbox for commands yet",
            std::env::consts::OS
        )),
        namespace: none(),
        network: none(),
        devpts: none(),
        seccomp: none(),
        nested: outer_fence,
    }
}

/// Never asked: [`Sandbox::fence`](super::Sandbox::fence) asks only where commands are fenced.
pub(super) fn fence(
    _: &Rule<'_>,
    _: &Enforcement,
    _: &State,
    _: (
        &super::network::Door,
        &super::passage::Passage,
        &super::forwarding::Forwarding,
    ),
) -> Result<Option<Fence>, FenceError> {
    Ok(None)
}

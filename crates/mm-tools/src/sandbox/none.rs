//! Systems without a fence for commands yet (Windows): the sandbox is "not enforced", which
//! the banner, `mm doctor` and the ACP log say and `tools.sandboxRequired = true` refuses; the
//! file tools' `check_write` still holds.

use std::ffi::OsStr;
use std::path::Path;

use super::{Enforcement, Fencer, Roots, Sandbox};

/// What `mm doctor` says to do when the fence is not whole and `tools.sandboxRequired` is set.
pub const REMEDY: &str = "run mm in WSL (Linux, with Landlock) for a fence";

/// Nothing is kept between calls.
pub type State = ();

/// Landlock is Linux's.
pub fn landlock_abi() -> i32 {
    0
}

/// Mount namespaces are Linux's.
pub fn namespace_works() -> Result<(), String> {
    Err("no mount namespaces on this system".into())
}

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

/// No fence, so no failure to make one.
#[derive(Debug)]
pub enum FenceError {}

impl std::fmt::Display for FenceError {
    fn fmt(&self, _: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {}
    }
}

impl std::error::Error for FenceError {}

/// Nothing fences commands here.
pub(super) fn enforcement(outer_fence: Option<String>) -> Enforcement {
    let none = || Err("no sandbox for commands on this system".to_string());
    Enforcement {
        fencer: Fencer::Missing(format!(
            "{} has no sandbox for commands yet",
            std::env::consts::OS
        )),
        abi: 0,
        namespace: none(),
        devpts: none(),
        seccomp: none(),
        nested: outer_fence,
    }
}

/// Never asked: [`Sandbox::fence`] asks only where commands are fenced.
pub(super) fn fence(_: &Sandbox, _: &Path, _: &Roots<'_>) -> Result<Option<Fence>, FenceError> {
    Ok(None)
}

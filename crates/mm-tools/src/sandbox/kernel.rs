//! What the kernel enforces of the fence ([`Enforcement`]), asked once per process by the
//! system's module, and what it cannot enforce in a mode (its gaps).

use mm_core::config::SandboxMode;
use mm_core::sandbox_report::{Fencer, Gap};

/// What the kernel enforces of the fence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Enforcement {
    /// What fences commands here.
    pub fencer: Fencer,
    /// Whether mm can make a private mount namespace (to keep `.mm/` read-only and pin its
    /// parents); `Err` says why not.
    pub namespace: Result<(), String>,
    /// Whether `tools.network` can be fenced here (Linux: a network namespace of its own, as
    /// the mount namespace; macOS: Seatbelt's profile); `Err` says why not.
    pub network: Result<(), String>,
    /// Whether a private `devpts` can be mounted in it (terminals of the command's own).
    pub devpts: Result<(), String>,
    /// Whether the seccomp filter (`TIOCSTI`, `TIOCLINUX`) is there; `Err` says why not.
    pub seccomp: Result<(), String>,
    /// The outer fence's mode when mm runs inside one (`MM_FENCED`).
    pub nested: Option<String>,
}

impl Enforcement {
    /// Nothing is asked of the kernel when the sandbox is off.
    pub(super) fn off() -> Enforcement {
        let off = || Err("the sandbox is off".to_string());
        Enforcement {
            fencer: Fencer::Missing("the sandbox is off".into()),
            namespace: off(),
            network: off(),
            devpts: off(),
            seccomp: off(),
            nested: None,
        }
    }

    /// Whether commands are fenced.
    pub(super) fn fences(&self) -> bool {
        !matches!(self.fencer, Fencer::Missing(_))
    }

    /// What the running kernel cannot fence in `mode` (each a part of the fence that is not
    /// there); none when the sandbox is off or there is no Landlock at all (the report's note
    /// then says why).
    pub(super) fn gaps(&self, mode: SandboxMode) -> Vec<Gap> {
        let Fencer::Landlock(abi) = self.fencer else {
            return Vec::new();
        };
        if mode == SandboxMode::Off {
            return Vec::new();
        }
        let mut gaps = Vec::new();
        if abi < 2 {
            gaps.push(Gap::Refer);
        }
        if abi < 3 {
            gaps.push(Gap::Truncate);
        }
        if abi < 5 {
            gaps.push(Gap::DeviceIoctl);
        }
        if abi < 6 {
            gaps.push(Gap::AbstractSockets);
        }
        if let Err(why) = &self.seccomp {
            gaps.push(Gap::Seccomp(why.clone()));
        }
        if let (Err(why), None) = (&self.namespace, &self.nested) {
            gaps.push(match mode {
                SandboxMode::ReadOnly => Gap::Unhidden(why.clone()),
                SandboxMode::WorkspaceWrite | SandboxMode::Off => Gap::Namespace(why.clone()),
            });
        }
        gaps
    }
}

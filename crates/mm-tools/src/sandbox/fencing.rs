//! How one child meets the fence: what [`Supervisor::spawn`](crate::process::Supervisor::spawn)
//! takes for every child mm starts (docs/sandbox.md, "What runs outside the fence"). A
//! [`Fencing`] inside the fence comes only from the [`Sandbox`](super::Sandbox) (`fence`,
//! `fence_for`), which knows where the session's commands may write; one outside it names why,
//! an [`Unfenced`]: the one list of exceptions, which docs/sandbox.md's table and the suite's
//! `trust_children.rs` (every call site that names one) hold.

use std::ffi::OsStr;

use super::os::Fence;

/// Where one child runs: inside the fence (none when the sandbox is off or nothing fences
/// commands here), or outside it, and why.
#[derive(Debug)]
pub struct Fencing(Way);

#[derive(Debug)]
enum Way {
    Inside(Option<Fence>),
    Outside(Unfenced),
}

/// Why a child runs outside the fence while it is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unfenced {
    /// The user's own entry (a hook, an MCP or language server, an agent) says
    /// `sandbox = false`; the banner and the ACP log name it.
    OptedOut,
    /// mm's own `git` for `/undo`: it writes mm's snapshot store, which no command may write,
    /// with the repository's configuration cut off (docs/terminal.md).
    UndoSnapshots,
}

impl Unfenced {
    /// Every reason, in the order docs/sandbox.md lists them.
    pub const ALL: [Unfenced; 2] = [Unfenced::OptedOut, Unfenced::UndoSnapshots];

    /// Its name, as docs/sandbox.md's table writes it (`Unfenced::OptedOut`).
    pub fn name(self) -> &'static str {
        match self {
            Unfenced::OptedOut => "Unfenced::OptedOut",
            Unfenced::UndoSnapshots => "Unfenced::UndoSnapshots",
        }
    }
}

impl Fencing {
    pub(super) fn inside(fence: Option<Fence>) -> Fencing {
        Fencing(Way::Inside(fence))
    }

    /// Outside the fence, for a reason of [`Unfenced`].
    pub fn outside(why: Unfenced) -> Fencing {
        Fencing(Way::Outside(why))
    }

    /// The command that runs `program`: on macOS a fenced one is `sandbox-exec -p <profile>
    /// <program>`, so a child to be fenced is made here.
    pub fn command(&self, program: impl AsRef<OsStr>) -> tokio::process::Command {
        match &self.0 {
            Way::Inside(Some(fence)) => fence.command(program.as_ref()),
            Way::Inside(None) | Way::Outside(_) => tokio::process::Command::new(program),
        }
    }

    /// Whether the child will enter a fence.
    pub fn fences(&self) -> bool {
        matches!(self.0, Way::Inside(Some(_)))
    }

    /// Why the child runs outside the fence, when it was asked to.
    pub fn unfenced(&self) -> Option<Unfenced> {
        match self.0 {
            Way::Outside(why) => Some(why),
            Way::Inside(_) => None,
        }
    }

    /// Makes `cmd` (made by [`Fencing::command`]) enter the fence, if any.
    pub(crate) fn apply(self, cmd: &mut tokio::process::Command) {
        if let Way::Inside(Some(fence)) = self.0 {
            fence.apply(cmd);
        }
    }
}

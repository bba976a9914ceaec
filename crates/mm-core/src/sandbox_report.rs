//! What the sandbox enforces on this system, as a value: the tools layer builds it
//! (`mm_tools::sandbox::Sandbox::report`) and each front end words it for its audience — the
//! terminal's banner, the ACP log, `mm doctor`. Each fact says itself here once (a part of the
//! fence the kernel lacks, a folder skipped, an entry outside the fence, a working directory
//! commands may not write in), so that every audience reads the same words; which facts a front
//! end shows, and how it introduces them, is its own (docs/sandbox.md, "What the kernel enforces").

use std::fmt;
use std::path::PathBuf;

use crate::config::{NetworkMode, SandboxMode};

/// The variable a fenced child finds in its environment, set to the mode (`workspace-write`,
/// `read-only`): a nested mm reads it (through `main.rs`, into the sandbox's
/// `Places::outer_fence`) and then makes no mount namespace of its own, which cannot be made
/// inside Landlock, while still fencing its own children with its own ruleset (Landlock
/// stacks).
pub const FENCED_VAR: &str = "MM_FENCED";

/// What fences commands on this system.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fencer {
    /// Linux's Landlock, at this ABI (1 or later).
    Landlock(i32),
    /// macOS's Seatbelt (`/usr/bin/sandbox-exec`).
    Seatbelt,
    /// Nothing: why, as the note says it after `not enforced: ` (this kernel has no Landlock,
    /// Windows has no sandbox for commands yet, the sandbox is off).
    Missing(String),
}

impl Fencer {
    /// What fences commands, as `mm doctor` names it: `Landlock ABI 6`, `Seatbelt`, `nothing`.
    pub fn name(&self) -> String {
        match self {
            Fencer::Landlock(abi) => format!("Landlock ABI {abi}"),
            Fencer::Seatbelt => "Seatbelt".into(),
            Fencer::Missing(_) => "nothing".into(),
        }
    }
}

/// A part of the fence that the running kernel cannot enforce.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gap {
    /// Landlock before ABI 2 has no `Refer` right.
    Refer,
    /// Landlock before ABI 3 has no `Truncate` right.
    Truncate,
    /// Landlock before ABI 5 has no `IoctlDev` right.
    DeviceIoctl,
    /// Landlock before ABI 6 has no scope for abstract unix sockets.
    AbstractSockets,
    /// No seccomp filter: why.
    Seccomp(String),
    /// No private mount namespace in `workspace-write`: why.
    Namespace(String),
    /// No private mount namespace in `read-only`: why.
    Unhidden(String),
    /// No network namespace for `tools.network` (not `open`): why.
    Network(String),
}

impl fmt::Display for Gap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Gap::Refer => f.write_str("moving or linking a file between folders is always refused"),
            Gap::Truncate => f.write_str("truncate(2) is not fenced"),
            Gap::DeviceIoctl => f.write_str("device ioctls are not fenced"),
            Gap::AbstractSockets => f.write_str("abstract unix sockets are not fenced"),
            Gap::Seccomp(why) => write!(f, "TIOCSTI is not refused ({why})"),
            Gap::Namespace(why) => write!(
                f,
                "the project's .mm/ stays writable and the hidden places are readable by commands (no private mount namespace: {why})"
            ),
            Gap::Unhidden(why) => write!(
                f,
                "the hidden places are readable by commands (no private mount namespace: {why})"
            ),
            Gap::Network(why) => write!(
                f,
                "the network stays open to commands (no network namespace: {why})"
            ),
        }
    }
}

/// Why a `sandboxWritable` folder is skipped for the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Skip {
    /// It goes through this symlink, which lies where commands may write (so a command could
    /// have made it).
    Link(PathBuf),
    /// It did not exist at start.
    Missing,
}

/// A `sandboxWritable` folder skipped for the run: the key it was given under
/// (`tools.sandboxWritable`, `mcp.servers.x.sandboxWritable`), the folder, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub key: String,
    pub path: PathBuf,
    pub why: Skip,
}

impl fmt::Display for Skipped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (key, path) = (&self.key, self.path.display());
        match &self.why {
            Skip::Link(link) => write!(
                f,
                "{key} {path} goes through the symlink {}, which lies where commands may write, so it is skipped (remove the link if you did not make it)",
                link.display()
            ),
            Skip::Missing => write!(
                f,
                "{key} {path} does not exist, so it is not writable in this run (make it, then start mm again)"
            ),
        }
    }
}

/// A session's working directory that commands may not write in (`workspace-write` in the
/// home folder or above it), canonical.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnwritableCwd(pub PathBuf);

impl fmt::Display for UnwritableCwd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the working directory {} is the home folder or above it, so commands may not write in it: only in the temp folders and tools.sandboxWritable (start mm in a project's folder)",
            self.0.display()
        )
    }
}

/// What the sandbox of this process enforces, and what it leaves out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxReport {
    pub mode: SandboxMode,
    pub fencer: Fencer,
    /// The parts of the fence the kernel lacks (none when the sandbox is off or nothing fences
    /// commands: the note then says why).
    pub gaps: Vec<Gap>,
    /// The outer fence's mode when mm itself runs inside mm's fence ([`FENCED_VAR`]).
    pub nested: Option<String>,
    /// The `sandboxWritable` folders skipped for this run.
    pub skipped: Vec<Skipped>,
    /// The entries (hooks, MCP and language servers, agents) that run outside the fence
    /// (`sandbox = false`), by key (`mcp.servers.x`); none when nothing fences commands.
    pub outside: Vec<String>,
    /// The package caches commands may write in (`workspace-write`, those that exist).
    pub caches: Vec<PathBuf>,
    /// The hidden places that exist now (none when the sandbox is off).
    pub hidden: Vec<PathBuf>,
    /// The fence's network (`tools.network`) and how many entries `tools.networkAllow`
    /// holds; `None` when nothing fences commands.
    pub network: Option<(NetworkMode, usize)>,
}

impl SandboxReport {
    pub fn is_on(&self) -> bool {
        self.mode != SandboxMode::Off
    }

    /// Whether commands are fenced (the mode is on and something fences them here).
    pub fn fences(&self) -> bool {
        self.is_on() && !matches!(self.fencer, Fencer::Missing(_))
    }

    /// The mode as the banner and `mm doctor` show it: `workspace-write`, or
    /// `workspace-write (not enforced)` when nothing fences commands here.
    pub fn label(&self) -> String {
        match (self.mode, &self.fencer) {
            (SandboxMode::Off, _) => "off".into(),
            (m, Fencer::Missing(_)) => format!("{m} (not enforced)"),
            (m, _) => m.to_string(),
        }
    }

    /// The fence's network as the banner and `mm doctor` show it after the mode:
    /// `network allow-list (24 hosts)`, `network open`, `network none`; `None` when nothing
    /// fences commands.
    pub fn network_label(&self) -> Option<String> {
        let (mode, hosts) = self.network?;
        Some(match mode {
            NetworkMode::Allowlist => format!(
                "network allow-list ({hosts} host{})",
                if hosts == 1 { "" } else { "s" }
            ),
            NetworkMode::Open => "network open".into(),
            NetworkMode::None => "network none".into(),
        })
    }

    /// What the kernel does not enforce of the fence, in one line; `None` when the sandbox is
    /// off or whole. Inside an outer fence it also says that the read-only mounts are the
    /// outer fence's.
    pub fn note(&self) -> Option<String> {
        if !self.is_on() {
            return None;
        }
        if let Fencer::Missing(why) = &self.fencer {
            return Some(format!(
                "not enforced: {why}; the file tools still refuse writes outside it"
            ));
        }
        let mut gaps: Vec<String> = self.gaps.iter().map(Gap::to_string).collect();
        if let Some(outer) = &self.nested {
            gaps.push(match self.fencer {
                Fencer::Seatbelt => format!(
                    "it relies on the outer fence (mm runs inside mm's fence: {FENCED_VAR}={outer}, and Seatbelt cannot be nested)"
                ),
                Fencer::Landlock(_) | Fencer::Missing(_) => format!(
                    "it relies on the outer fence for the read-only mounts and the hidden places (mm runs inside mm's fence: {FENCED_VAR}={outer})"
                ),
            });
        }
        self.enforced_but(&gaps)
    }

    /// Why the fence is not whole, as `tools.sandboxRequired` refuses it; `None` when it is
    /// (or the sandbox is off). Running inside an outer fence is no gap: its mounts hold.
    pub fn shortfall(&self) -> Option<String> {
        match self.fencer {
            Fencer::Missing(_) => self.note(),
            Fencer::Landlock(_) | Fencer::Seatbelt => {
                let gaps: Vec<String> = self.gaps.iter().map(Gap::to_string).collect();
                self.enforced_but(&gaps)
            }
        }
    }

    /// `<fencer> enforced, but <gap>; <gap>`; `None` without gaps.
    fn enforced_but(&self, gaps: &[String]) -> Option<String> {
        (!gaps.is_empty())
            .then(|| format!("{} enforced, but {}", self.fencer.name(), gaps.join("; ")))
    }

    /// One line per `sandboxWritable` folder skipped for this run, then one per entry that
    /// runs outside the fence (`mcp.servers.x runs outside the fence (sandbox = false)`).
    pub fn lines(&self) -> Vec<String> {
        let outside = self
            .outside
            .iter()
            .map(|key| format!("{key} runs outside the fence (sandbox = false)"));
        self.skipped
            .iter()
            .map(Skipped::to_string)
            .chain(outside)
            .collect()
    }
}

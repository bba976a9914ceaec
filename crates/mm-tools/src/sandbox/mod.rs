//! The sandbox for what the model runs (`tools.sandbox`, docs/sandbox.md): `bash` children run
//! inside a [`Fence`], and the file tools ask [`Sandbox::check_write`] before they write, since
//! mm's own process is not confined (it must still write its sessions and history).
//!
//! The fence is the system's, one module per system (docs/platforms.md): on Linux, Landlock, a
//! private mount namespace that keeps mm's own configuration read-only and gives the command
//! terminals of its own, root's capabilities cut and a seccomp filter (`fence.rs`, `linux/`);
//! on macOS, Seatbelt (`macos.rs`, running the command under `sandbox-exec` with the profile
//! `seatbelt.rs` writes); elsewhere (Windows) none yet (`none.rs`), which the banner, `mm
//! doctor` and the ACP log say, and which `tools.sandboxRequired = true` refuses. The rule, the
//! places and `check_write` are the same everywhere.
//!
//! One [`Sandbox`] per process, built from the configuration and the places `main.rs` knows
//! (the temp folder, the configuration files, the home folder, an outer fence), handed to tools
//! through `Setup::sandbox`.

mod held;
mod seatbelt;

#[cfg(target_os = "linux")]
mod fence;
#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
use linux as os;
#[cfg(target_os = "linux")]
pub use {
    fence::{Fence, FenceError, landlock_abi, namespace_works},
    linux::REMEDY,
    linux::caps::KEPT as ROOT_CAPABILITIES,
};

#[cfg(not(target_os = "linux"))]
mod not_linux;

#[cfg(target_os = "macos")]
mod macos;
#[cfg(target_os = "macos")]
use macos as os;
#[cfg(target_os = "macos")]
pub use macos::{Fence, FenceError, REMEDY, landlock_abi, namespace_works};

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
mod none;
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
use none as os;
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
pub use none::{Fence, FenceError, REMEDY, landlock_abi, namespace_works};

pub use seatbelt::profile as seatbelt_profile;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use held::Held;
use mm_core::config::{Config, SandboxMode};

/// The command that runs `program`, inside `fence` when given: pass the fence on to
/// [`Supervisor::spawn_fenced`](crate::process::Supervisor::spawn_fenced). On macOS a fenced
/// command is `sandbox-exec -p <profile> <program>`, so a fenced child must be made here.
pub fn command(fence: Option<&Fence>, program: impl AsRef<OsStr>) -> tokio::process::Command {
    match fence {
        Some(fence) => fence.command(program.as_ref()),
        None => tokio::process::Command::new(program),
    }
}

/// The variable a fenced child finds in its environment, set to the mode
/// (`workspace-write`, `read-only`): a nested mm reads it (through `main.rs`, into
/// [`Places::outer_fence`]) and then makes no mount namespace of its own, which cannot be made
/// inside Landlock, while still fencing its own children with its own ruleset (Landlock
/// stacks).
pub const FENCED_VAR: &str = "MM_FENCED";

/// Device files a shell needs, writable even in `read-only` (every system's fence).
const DEVICE_FILES: [&str; 5] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/ptmx",
];

/// Places outside the configuration that the sandbox needs, found by `main.rs` (the library
/// does not read the environment).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Places {
    /// The system temp folders, writable in `workspace-write`: [`SYSTEM_TEMP`] and the process's
    /// own ([`Places::with_temp_dir`]: `$TMPDIR` on Unix, `%TEMP%` on Windows).
    pub temp: Vec<PathBuf>,
    /// Folders kept read-only inside the fence when they lie where it lets commands write
    /// (and created then if missing, so that a command cannot make them first): the
    /// configuration folders mm reads at start (the user's, the `.mm/` of the folder mm started
    /// in). Every session's own `<cwd>/.mm` is added per call.
    pub protected: Vec<PathBuf>,
    /// Files kept read-only the same way when they exist (a `--config` file).
    pub protected_files: Vec<PathBuf>,
    /// The home folder: a session whose cwd is the home folder or above it does not get its
    /// cwd writable in `workspace-write` (it would open the whole home).
    pub home: Option<PathBuf>,
    /// The value of [`FENCED_VAR`] when mm itself runs inside an mm fence.
    pub outer_fence: Option<String>,
}

/// The system's fixed temp folders: `/tmp` and `/dev/shm` on Unix; none on Windows, whose temp
/// folder is the user's (`%TEMP%`), and where `/tmp` would be `\tmp` on the current drive.
pub const SYSTEM_TEMP: &[&str] = if cfg!(unix) {
    &["/tmp", "/dev/shm"]
} else {
    &[]
};

impl Places {
    /// With the process's temp folder (`std::env::temp_dir()`, which `main.rs` reads: `$TMPDIR`,
    /// else `/tmp`, on Unix; `%TMP%`, `%TEMP%` on Windows) among [`Places::temp`], unless it is
    /// empty or there already.
    pub fn with_temp_dir(mut self, dir: PathBuf) -> Self {
        if !dir.as_os_str().is_empty() && !self.temp.contains(&dir) {
            self.temp.push(dir);
        }
        self
    }
}

impl Default for Places {
    fn default() -> Self {
        Places {
            temp: SYSTEM_TEMP.iter().map(PathBuf::from).collect(),
            protected: Vec::new(),
            protected_files: Vec::new(),
            home: None,
            outer_fence: None,
        }
    }
}

/// What fences commands on this system.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fencer {
    /// Linux's Landlock (with what [`Enforcement`] says of the rest).
    Landlock,
    /// macOS's Seatbelt (`/usr/bin/sandbox-exec`).
    Seatbelt,
    /// Nothing: why, as the note says it after `not enforced: ` (this kernel has no Landlock,
    /// Windows has no sandbox for commands yet).
    Missing(String),
}

/// What the kernel enforces of the fence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Enforcement {
    /// What fences commands here.
    pub fencer: Fencer,
    /// The Landlock ABI (0: none, and always 0 off Linux).
    pub abi: i32,
    /// Whether mm can make a private mount namespace (to keep `.mm/` read-only and pin its
    /// parents); `Err` says why not.
    pub namespace: Result<(), String>,
    /// Whether a private `devpts` can be mounted in it (terminals of the command's own).
    pub devpts: Result<(), String>,
    /// Whether the seccomp filter (`TIOCSTI`, `TIOCLINUX`) is there; `Err` says why not.
    pub seccomp: Result<(), String>,
    /// The outer fence's mode when mm runs inside one ([`FENCED_VAR`]).
    pub nested: Option<String>,
}

impl Enforcement {
    fn off() -> Enforcement {
        let off = || Err("the sandbox is off".to_string());
        Enforcement {
            fencer: Fencer::Missing("the sandbox is off".into()),
            abi: 0,
            namespace: off(),
            devpts: off(),
            seccomp: off(),
            nested: None,
        }
    }

    /// Whether commands are fenced.
    fn fences(&self) -> bool {
        !matches!(self.fencer, Fencer::Missing(_))
    }
}

/// `tools.sandboxRequired = true` and the fence is not whole.
#[derive(Debug, thiserror::Error)]
#[error("tools.sandboxRequired = true, but {0}")]
pub struct NotEnforced(String);

/// The process's sandbox: the mode, where commands may write, and what the kernel enforces.
#[derive(Debug, Clone)]
pub struct Sandbox {
    mode: SandboxMode,
    /// The writable places besides the cwd (the temp folders, `tools.sandboxWritable`),
    /// resolved once at start and held open: a symlink put later where one was, or where a
    /// missing one would be, opens nothing.
    held: Vec<Held>,
    /// The asked agents' own `agents.<name>.sandboxWritable` entries, as configured, held
    /// open the same way; each opens only for a fence asked for with it
    /// ([`Sandbox::fence_with`]).
    agent_held: Vec<(PathBuf, Held)>,
    /// Why each `tools.sandboxWritable` entry skipped for this run was (it did not exist at
    /// start, or it goes through a symlink a command could have made).
    skipped: Vec<String>,
    /// The home folder, canonical.
    home: Option<PathBuf>,
    places: Places,
    enforcement: Enforcement,
    /// What the system's fence keeps between calls (Linux: the mount namespaces made).
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    state: os::State,
}

/// Where commands of one session may write, as each call finds it.
pub(crate) struct Roots<'a> {
    /// The session's cwd (canonical), unless it is the home folder or above it.
    pub(crate) cwd: Option<PathBuf>,
    /// The held places, with where each is now.
    pub(crate) held: Vec<(&'a Held, PathBuf)>,
}

impl Roots<'_> {
    pub(crate) fn paths(&self) -> impl Iterator<Item = &Path> {
        self.cwd
            .iter()
            .map(PathBuf::as_path)
            .chain(self.held.iter().map(|(_, p)| p.as_path()))
    }
}

impl Default for Sandbox {
    fn default() -> Self {
        Sandbox::off()
    }
}

/// What the configuration says of the fence: `tools.sandbox`, `tools.sandboxWritable` and each
/// asked agent's `agents.<name>.sandboxWritable`.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    pub mode: SandboxMode,
    pub writable: Vec<PathBuf>,
    /// `(name, entries)` of each agent that has `sandboxWritable` entries.
    pub agents: Vec<(String, Vec<PathBuf>)>,
}

impl Settings {
    /// The fence settings of a configuration.
    pub fn of(config: &Config) -> Settings {
        Settings {
            mode: config.tools.sandbox,
            writable: config.tools.sandbox_writable.clone(),
            agents: config
                .agents
                .iter()
                .filter(|(_, a)| !a.sandbox_writable.is_empty())
                .map(|(name, a)| (name.clone(), a.sandbox_writable.clone()))
                .collect(),
        }
    }

    /// Only a mode, nothing more writable.
    pub fn mode(mode: SandboxMode) -> Settings {
        Settings {
            mode,
            ..Settings::default()
        }
    }
}

impl Sandbox {
    /// The sandbox of a configuration. Asks the kernel what it enforces (once per process) when
    /// the mode is not `off`.
    /// The `tools.sandboxWritable` entries and the temp folders are resolved here, once (the
    /// user's own symlinks followed) and held open; an entry that does not exist is skipped for
    /// the run, with a warning ([`Sandbox::warnings`]).
    pub fn new(settings: Settings, places: Places) -> Sandbox {
        let Settings {
            mode,
            writable: entries,
            agents,
        } = settings;
        let enforcement = match mode {
            SandboxMode::Off => Enforcement::off(),
            SandboxMode::WorkspaceWrite | SandboxMode::ReadOnly => {
                os::enforcement(places.outer_fence.clone())
            }
        };
        let (mut held, mut skipped) = (Vec::new(), Vec::new());
        if mode == SandboxMode::WorkspaceWrite {
            // A temp folder that is missing is nothing the user asked for: no warning.
            held.extend(places.temp.iter().filter_map(|t| Held::open(t).ok()));
            let writable = plain_places(&places.temp, &entries);
            for entry in &entries {
                match hold(entry, &writable) {
                    Ok(h) => held.push(h),
                    Err(why) => skipped.push(why.line("tools.sandboxWritable", entry)),
                }
            }
        }
        let mut agent_held = Vec::new();
        if mode == SandboxMode::WorkspaceWrite {
            let writable = plain_places(&places.temp, &entries);
            for (name, agent_entries) in &agents {
                for entry in agent_entries {
                    let key = format!("agents.{name}.sandboxWritable");
                    match hold(entry, &writable) {
                        Ok(h) => agent_held.push((entry.clone(), h)),
                        Err(why) => skipped.push(why.line(&key, entry)),
                    }
                }
            }
        }
        Sandbox {
            mode,
            held,
            agent_held,
            skipped,
            home: places
                .home
                .as_deref()
                .and_then(|h| crate::paths::canonical(h).ok()),
            places,
            enforcement,
            state: os::State::default(),
        }
    }

    /// No sandbox (tests and tools built without a configuration).
    pub fn off() -> Sandbox {
        Sandbox {
            mode: SandboxMode::Off,
            held: Vec::new(),
            agent_held: Vec::new(),
            skipped: Vec::new(),
            home: None,
            places: Places::default(),
            enforcement: Enforcement::off(),
            state: os::State::default(),
        }
    }

    pub fn mode(&self) -> SandboxMode {
        self.mode
    }

    /// The sandbox a session in `read-only` mode runs its commands in: these places, nothing
    /// writable, whatever `tools.sandbox` says; `None` where the kernel fences nothing (then
    /// such a session refuses commands).
    pub fn read_only(&self) -> Option<Sandbox> {
        let ro = match self.mode {
            SandboxMode::ReadOnly => self.clone(),
            SandboxMode::Off | SandboxMode::WorkspaceWrite => {
                Sandbox::new(Settings::mode(SandboxMode::ReadOnly), self.places.clone())
            }
        };
        ro.fences_commands().then_some(ro)
    }

    pub fn is_on(&self) -> bool {
        self.mode != SandboxMode::Off
    }

    /// Whether the system fences commands (the mode is on and Landlock or Seatbelt is there).
    fn fences_commands(&self) -> bool {
        self.mode != SandboxMode::Off && self.enforcement.fences()
    }

    pub fn enforcement(&self) -> &Enforcement {
        &self.enforcement
    }

    /// The mode as the banner and the ACP log show it: `workspace-write`, or
    /// `workspace-write (not enforced)` when nothing fences commands here.
    pub fn label(&self) -> String {
        match self.mode {
            SandboxMode::Off => "off".into(),
            m if !self.enforcement.fences() => format!("{m} (not enforced)"),
            m => m.to_string(),
        }
    }

    /// What fences commands, as `mm doctor` names it: `Landlock ABI 6`, `Seatbelt`.
    pub fn fencer_name(&self) -> String {
        match &self.enforcement.fencer {
            Fencer::Landlock => format!("Landlock ABI {}", self.enforcement.abi),
            Fencer::Seatbelt => "Seatbelt".into(),
            Fencer::Missing(_) => "nothing".into(),
        }
    }

    /// What the running kernel cannot fence here (each a part of the fence that is not
    /// there); empty when the sandbox is off (or has no Landlock at all: [`Sandbox::note`]).
    fn gaps(&self) -> Vec<String> {
        let e = &self.enforcement;
        let abi = e.abi;
        let mut gaps: Vec<String> = Vec::new();
        if self.mode == SandboxMode::Off || e.fencer != Fencer::Landlock {
            return gaps;
        }
        if abi < 2 {
            gaps.push("moving or linking a file between folders is always refused".into());
        }
        if abi < 3 {
            gaps.push("truncate(2) is not fenced".into());
        }
        if abi < 5 {
            gaps.push("device ioctls are not fenced".into());
        }
        if abi < 6 {
            gaps.push("abstract unix sockets are not fenced".into());
        }
        if let Err(why) = &e.seccomp {
            gaps.push(format!("TIOCSTI is not refused ({why})"));
        }
        if let (SandboxMode::WorkspaceWrite, Err(why), None) = (self.mode, &e.namespace, &e.nested)
        {
            gaps.push(format!(
                "the project's .mm/ stays writable (no private mount namespace: {why})"
            ));
        }
        gaps
    }

    /// What the kernel does not enforce of the fence, in one line; `None` when the sandbox is
    /// off or whole. Inside an outer fence it also says that the read-only mounts are the
    /// outer fence's.
    pub fn note(&self) -> Option<String> {
        if self.mode == SandboxMode::Off {
            return None;
        }
        if let Fencer::Missing(why) = &self.enforcement.fencer {
            return Some(format!(
                "not enforced: {why}; the file tools still refuse writes outside it"
            ));
        }
        let mut gaps = self.gaps();
        if let Some(outer) = &self.enforcement.nested {
            gaps.push(match self.enforcement.fencer {
                Fencer::Seatbelt => format!(
                    "it relies on the outer fence (mm runs inside mm's fence: {FENCED_VAR}={outer}, and Seatbelt cannot be nested)"
                ),
                _ => format!(
                    "it relies on the outer fence for the read-only mounts (mm runs inside mm's fence: {FENCED_VAR}={outer})"
                ),
            });
        }
        (!gaps.is_empty())
            .then(|| format!("{} enforced, but {}", self.fencer_name(), gaps.join("; ")))
    }

    /// The banner's warnings for a session in `cwd`: what the fence lacks, the
    /// `tools.sandboxWritable` entries skipped, and a cwd that is not writable.
    pub fn warnings(&self, cwd: &Path) -> Vec<String> {
        let mode = self.mode;
        self.note()
            .into_iter()
            .chain(self.skipped_lines())
            .chain(self.cwd_note(cwd))
            .map(|n| format!("sandbox {mode}: {n}"))
            .collect()
    }

    /// One line per `tools.sandboxWritable` entry skipped for this run.
    pub fn skipped_lines(&self) -> Vec<String> {
        self.skipped.clone()
    }

    /// The line said when the cwd of a session is not writable in `workspace-write` (the home
    /// folder or above it); `None` otherwise.
    pub fn cwd_note(&self, cwd: &Path) -> Option<String> {
        let real = crate::paths::canonical(cwd).ok()?;
        (self.mode == SandboxMode::WorkspaceWrite && self.home_or_above(&real)).then(|| {
            format!(
                "the working directory {} is the home folder or above it, so commands may not write in it: only in the temp folders and tools.sandboxWritable (start mm in a project's folder)",
                real.display()
            )
        })
    }

    fn home_or_above(&self, real: &Path) -> bool {
        self.home.as_deref().is_some_and(|h| h.starts_with(real))
    }

    /// The ACP log lines at `initialize`: `[acp] sandbox: <mode>`, and what is not enforced
    /// after ` — `; then one line per skipped `tools.sandboxWritable` entry.
    pub fn log_lines(&self) -> Vec<String> {
        let first = match self.note() {
            Some(n) => format!("[acp] sandbox: {} — {n}", self.mode),
            None => format!("[acp] sandbox: {}", self.mode),
        };
        std::iter::once(first)
            .chain(
                self.skipped_lines()
                    .into_iter()
                    .map(|l| format!("[acp] sandbox: {l}")),
            )
            .collect()
    }

    /// `Err` when `tools.sandboxRequired` is set and the fence is not whole. Running inside
    /// an outer fence is no gap: its mounts hold.
    pub fn require(&self, required: bool) -> Result<(), NotEnforced> {
        let why = match self.enforcement.fencer {
            Fencer::Missing(_) => self.note(),
            _ => {
                let gaps = self.gaps();
                (!gaps.is_empty())
                    .then(|| format!("{} enforced, but {}", self.fencer_name(), gaps.join("; ")))
            }
        };
        match why {
            Some(why) if required => Err(NotEnforced(format!(
                "tools.sandbox = {} is not enforced whole: {why}",
                self.mode
            ))),
            _ => Ok(()),
        }
    }

    /// Where commands of a session in `cwd` may write (those that exist), with the folders
    /// of `extra` that were held at start for one child of its own (an asked agent's
    /// `agents.<name>.sandboxWritable`).
    fn roots(&self, cwd: &Path, extra: &[PathBuf]) -> Roots<'_> {
        match self.mode {
            SandboxMode::Off | SandboxMode::ReadOnly => Roots {
                cwd: None,
                held: Vec::new(),
            },
            SandboxMode::WorkspaceWrite => Roots {
                cwd: crate::paths::canonical(cwd)
                    .ok()
                    .filter(|c| !self.home_or_above(c)),
                held: self
                    .held
                    .iter()
                    .chain(
                        self.agent_held
                            .iter()
                            .filter(|(entry, _)| extra.contains(entry))
                            .map(|(_, h)| h),
                    )
                    .filter_map(|h| h.path().map(|p| (h, p)))
                    .collect(),
            },
        }
    }

    /// The paths kept read-only for a session in `cwd` (canonical where they exist), with
    /// whether each is a folder mm may create.
    pub(crate) fn protected(&self, cwd: &Path) -> Vec<(PathBuf, bool)> {
        std::iter::once(cwd.join(".mm"))
            .chain(self.places.protected.iter().cloned())
            .map(|p| (real_path(&p), true))
            .chain(
                self.places
                    .protected_files
                    .iter()
                    .map(|p| (real_path(p), false)),
            )
            .collect()
    }

    /// The fence a command of a session in `cwd` runs in; `None` when the sandbox is off or
    /// nothing fences commands here (or, on macOS, inside an outer fence: Seatbelt cannot be
    /// nested, and the outer one holds).
    pub fn fence(&self, cwd: &Path) -> Result<Option<Fence>, FenceError> {
        self.fence_with(cwd, &[])
    }

    /// [`Sandbox::fence`] that also lets the child write under `extra` in `workspace-write`
    /// (never in `read-only`): an asked agent's own `agents.<name>.sandboxWritable`, for its
    /// fence only.
    pub fn fence_with(&self, cwd: &Path, extra: &[PathBuf]) -> Result<Option<Fence>, FenceError> {
        if !self.fences_commands() {
            return Ok(None);
        }
        let roots = self.roots(cwd, extra);
        os::fence(self, cwd, &roots)
    }

    /// Checks a write by mm itself on behalf of a tool (`write_file`, `edit_file`, …) against
    /// the rule the kernel applies to commands: `Err` is the text for the model,
    /// `[write outside the sandbox refused: <path> (tools.sandbox = <mode>)]`, naming the path
    /// where the write would land (symlinks followed).
    pub fn check_write(&self, cwd: &Path, path: &Path) -> Result<(), String> {
        if self.mode == SandboxMode::Off {
            return Ok(());
        }
        let real = real_path(path);
        let inside = self.roots(cwd, &[]).paths().any(|r| real.starts_with(r))
            && !self.protected(cwd).iter().any(|(p, _)| real.starts_with(p));
        if inside {
            Ok(())
        } else {
            Err(format!(
                "[write outside the sandbox refused: {} (tools.sandbox = {})]",
                real.display(),
                self.mode
            ))
        }
    }

    /// The line a failed `bash` call of a session in `cwd` gets when the fence may be why (its
    /// output says a permission was denied); `None` when commands are not fenced.
    pub fn bash_hint(&self, cwd: &Path) -> Option<String> {
        if !self.fences_commands() {
            return None;
        }
        match self.mode {
            SandboxMode::Off => None,
            SandboxMode::WorkspaceWrite if self.cwd_note(cwd).is_some() => Some(
                "[tools.sandbox = workspace-write: the working directory is the home folder, so commands may write only in the temp folder and tools.sandboxWritable]"
                    .into(),
            ),
            SandboxMode::WorkspaceWrite => Some(
                "[tools.sandbox = workspace-write: commands may write only in the working directory (not its .mm/), the temp folder and tools.sandboxWritable]"
                    .into(),
            ),
            SandboxMode::ReadOnly => {
                Some("[tools.sandbox = read-only: commands may not write any file]".into())
            }
        }
    }

    /// What the system prompt says of the sandbox; `None` when commands are not fenced.
    pub fn prompt_section(&self) -> Option<String> {
        if !self.fences_commands() {
            return None;
        }
        match self.mode {
            SandboxMode::Off => None,
            SandboxMode::WorkspaceWrite => Some(
                "Sandbox: commands and file tools may write only in the working directory (not .mm/) and the temp folder."
                    .into(),
            ),
            SandboxMode::ReadOnly => Some("Sandbox: commands and file tools may not write files.".into()),
        }
    }
}

/// The writable places whose paths hold no symlink (canonical): the temp folders and such
/// `tools.sandboxWritable` entries. A symlink inside one of them may be a command's.
fn plain_places(temp: &[PathBuf], entries: &[PathBuf]) -> Vec<PathBuf> {
    temp.iter()
        .chain(entries)
        .filter_map(|p| {
            let real = crate::paths::canonical(p).ok()?;
            (real == crate::paths::normalize(p)).then_some(real)
        })
        .collect()
}

/// The first symlink on `entry`'s path that lies in one of `writable` (so that a fenced
/// command could have made it, as `ln -s / <missing entry>`); `None` when every symlink on it
/// is where commands cannot write (the user's own).
/// Why a writable entry is skipped for the run.
enum Skipped {
    /// It goes through this symlink, which lies where commands may write.
    Link(PathBuf),
    Missing,
}

impl Skipped {
    fn line(&self, key: &str, entry: &Path) -> String {
        match self {
            Skipped::Link(link) => format!(
                "{key} {} goes through the symlink {}, which lies where commands may write, so it is skipped (remove the link if you did not make it)",
                entry.display(),
                link.display()
            ),
            Skipped::Missing => format!(
                "{key} {} does not exist, so it is not writable in this run (make it, then start mm again)",
                entry.display()
            ),
        }
    }
}

/// A writable entry resolved and held open, once, at start.
fn hold(entry: &Path, writable: &[PathBuf]) -> Result<Held, Skipped> {
    if let Some(link) = link_in(entry, writable) {
        return Err(Skipped::Link(link));
    }
    Held::open(entry).map_err(|_| Skipped::Missing)
}

fn link_in(entry: &Path, writable: &[PathBuf]) -> Option<PathBuf> {
    let entry = crate::paths::normalize(entry);
    let mut prefixes: Vec<&Path> = entry.ancestors().collect();
    prefixes.reverse();
    prefixes.into_iter().find_map(|p| {
        let link = std::fs::symlink_metadata(p).ok()?.file_type().is_symlink();
        let parent = crate::paths::canonical(p.parent()?).ok()?;
        (link && writable.iter().any(|w| parent.starts_with(w))).then(|| p.to_path_buf())
    })
}

/// What a failed command prints when a write was refused: EACCES, EPERM, EROFS (`.mm/`), and
/// EXDEV, which Landlock answers to a link or a move between folders it does not allow.
pub const DENIED_MARKERS: [&str; 4] = [
    "Permission denied",
    "Operation not permitted",
    "Read-only file system",
    "Invalid cross-device link",
];

/// The path a write to `path` lands on: symlinks followed (the last component's too, as
/// `write_file` writes through a link), the part that does not exist yet kept as given.
pub fn real_path(path: &Path) -> PathBuf {
    let path = crate::paths::normalize(path);
    let mut followed = path.clone();
    for _ in 0..40 {
        match std::fs::read_link(&followed) {
            Ok(link) => {
                let next = match followed.parent() {
                    Some(parent) if link.is_relative() => parent.join(link),
                    _ => link,
                };
                followed = crate::paths::normalize(&next);
            }
            Err(_) => break,
        }
    }
    let mut existing = followed.as_path();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = crate::paths::canonical(existing) {
            let mut out = real;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return out;
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                existing = parent;
            }
            _ => return followed,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::disallowed_methods)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_and_name() {
        for name in SandboxMode::NAMES {
            assert_eq!(SandboxMode::parse(name).unwrap().name(), name);
        }
        assert_eq!(SandboxMode::parse("on"), None);
    }

    fn with(mode: SandboxMode, abi: i32, namespace: Result<(), String>) -> Sandbox {
        Sandbox {
            mode,
            held: Vec::new(),
            agent_held: Vec::new(),
            skipped: Vec::new(),
            home: None,
            places: Places::default(),
            state: os::State::default(),
            enforcement: Enforcement {
                fencer: match abi {
                    0 => Fencer::Missing("this kernel has no Landlock (Linux 5.13 or later, with landlock among its LSMs)".into()),
                    _ => Fencer::Landlock,
                },
                abi,
                devpts: namespace.clone(),
                namespace,
                seccomp: Ok(()),
                nested: None,
            },
        }
    }

    #[test]
    fn a_whole_fence_says_only_its_mode() {
        let s = with(SandboxMode::WorkspaceWrite, 7, Ok(()));
        assert_eq!(s.label(), "workspace-write");
        assert_eq!(s.note(), None);
        assert_eq!(s.log_lines(), ["[acp] sandbox: workspace-write"]);
        assert!(s.require(true).is_ok());
        let off = with(SandboxMode::Off, 0, Err("off".into()));
        assert_eq!(off.note(), None);
        assert!(off.require(true).is_ok());
    }

    #[test]
    fn what_the_kernel_lacks_is_said_once_and_is_an_error_when_required() {
        let s = with(
            SandboxMode::WorkspaceWrite,
            3,
            Err("Operation not permitted (os error 1)".into()),
        );
        let note = "Landlock ABI 3 enforced, but device ioctls are not fenced; abstract unix sockets are not fenced; the project's .mm/ stays writable (no private mount namespace: Operation not permitted (os error 1))";
        assert_eq!(s.note().as_deref(), Some(note));
        assert_eq!(
            s.warnings(Path::new("/")),
            [format!("sandbox workspace-write: {note}")]
        );
        assert_eq!(
            s.log_lines(),
            [format!("[acp] sandbox: workspace-write — {note}")]
        );
        assert!(s.require(false).is_ok());
        assert_eq!(
            s.require(true).unwrap_err().to_string(),
            format!(
                "tools.sandboxRequired = true, but tools.sandbox = workspace-write is not enforced whole: {note}"
            )
        );
        let none = with(SandboxMode::ReadOnly, 0, Ok(()));
        assert_eq!(none.label(), "read-only (not enforced)");
        // Nothing claimed for commands: no fence to enter, no hint, nothing in the prompt.
        assert!(none.fence(Path::new("/")).unwrap().is_none());
        assert_eq!(none.bash_hint(Path::new("/")), None);
        assert_eq!(none.prompt_section(), None);
        assert_eq!(
            none.note().as_deref(),
            Some(
                "not enforced: this kernel has no Landlock (Linux 5.13 or later, with landlock among its LSMs); the file tools still refuse writes outside it"
            )
        );
        let old = with(SandboxMode::ReadOnly, 1, Ok(()));
        assert_eq!(
            old.note().as_deref(),
            Some(
                "Landlock ABI 1 enforced, but moving or linking a file between folders is always refused; truncate(2) is not fenced; device ioctls are not fenced; abstract unix sockets are not fenced"
            )
        );
    }

    #[test]
    fn inside_an_outer_fence_the_note_says_so_and_is_no_gap() {
        let mut s = with(SandboxMode::WorkspaceWrite, 7, Err("inside".into()));
        s.enforcement.nested = Some("read-only".into());
        assert_eq!(
            s.note().as_deref(),
            Some(
                "Landlock ABI 7 enforced, but it relies on the outer fence for the read-only mounts (mm runs inside mm's fence: MM_FENCED=read-only)"
            )
        );
        assert!(s.require(true).is_ok());
        s.enforcement.seccomp = Err("no seccomp filter for the sparc64 architecture".into());
        assert_eq!(
            s.require(true).unwrap_err().to_string(),
            "tools.sandboxRequired = true, but tools.sandbox = workspace-write is not enforced whole: Landlock ABI 7 enforced, but TIOCSTI is not refused (no seccomp filter for the sparc64 architecture)"
        );
    }

    #[test]
    fn a_cwd_at_or_above_the_home_folder_is_not_writable() {
        let dir = tempfile::tempdir().unwrap();
        let base = crate::paths::canonical(dir.path()).unwrap();
        let home = base.join("home");
        let project = home.join("project");
        std::fs::create_dir_all(&project).unwrap();
        let mut config = Config::default();
        config.tools.sandbox = SandboxMode::WorkspaceWrite;
        let places = Places {
            temp: Vec::new(),
            home: Some(home.clone()),
            ..Places::default()
        };
        let s = Sandbox::new(Settings::of(&config), places);
        for cwd in [&home, &base] {
            assert!(s.check_write(cwd, &cwd.join("x")).is_err());
            assert!(s.cwd_note(cwd).is_some());
        }
        assert_eq!(s.check_write(&project, &project.join("x")), Ok(()));
        assert_eq!(s.cwd_note(&project), None);
        assert_eq!(
            s.cwd_note(&home).unwrap(),
            format!(
                "the working directory {} is the home folder or above it, so commands may not write in it: only in the temp folders and tools.sandboxWritable (start mm in a project's folder)",
                home.display()
            )
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_writable_entry_through_a_link_where_commands_write_is_found() {
        let dir = tempfile::tempdir().unwrap();
        let base = crate::paths::canonical(dir.path()).unwrap();
        std::fs::create_dir_all(base.join("cache")).unwrap();
        std::fs::create_dir_all(base.join("mine/data")).unwrap();
        std::os::unix::fs::symlink("/", base.join("cache/x")).unwrap();
        // The user's own link, in a folder commands cannot write.
        std::os::unix::fs::symlink(base.join("mine/data"), base.join("mine/link")).unwrap();
        let entries = [
            base.join("cache"),
            base.join("cache/x"),
            base.join("mine/link"),
        ];
        let writable = plain_places(&[], &entries);
        assert_eq!(writable, [base.join("cache")]);
        assert_eq!(link_in(&entries[1], &writable), Some(base.join("cache/x")));
        assert_eq!(link_in(&entries[2], &writable), None);
        assert_eq!(link_in(&entries[0], &writable), None);
    }

    #[cfg(unix)]
    #[test]
    fn real_path_follows_links_and_keeps_what_does_not_exist() {
        let dir = tempfile::tempdir().unwrap();
        let base = crate::paths::canonical(dir.path()).unwrap();
        std::fs::create_dir(base.join("out")).unwrap();
        std::os::unix::fs::symlink(base.join("out"), base.join("link")).unwrap();
        std::os::unix::fs::symlink("out/f", base.join("file-link")).unwrap();
        assert_eq!(real_path(&base.join("link/new/x")), base.join("out/new/x"));
        assert_eq!(real_path(&base.join("file-link")), base.join("out/f"));
        assert_eq!(real_path(&base.join("a/../out/./y")), base.join("out/y"));
    }
}

//! The sandbox for what the model runs (`tools.sandbox`, docs/sandbox.md): `bash` children run
//! inside a kernel [`Fence`] (Landlock, and a private mount namespace that keeps mm's own
//! configuration read-only), and the file tools ask [`Sandbox::check_write`] before they write,
//! since mm's own process is not confined (it must still write its sessions and history).
//!
//! One [`Sandbox`] per process, built from the configuration and the places `main.rs` knows
//! (the temp folder, the configuration files), handed to tools through `Setup::sandbox`.

mod fence;

use std::fmt;
use std::path::{Path, PathBuf};

pub use fence::{Fence, FenceError, landlock_abi, namespace_works};

/// `tools.sandbox`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// No fence (the default).
    #[default]
    Off,
    /// Reads anywhere; writes only under the session's cwd, the temp folders and
    /// `tools.sandboxWritable`.
    WorkspaceWrite,
    /// No writes at all (device files a shell needs aside).
    ReadOnly,
}

impl Mode {
    /// The names `tools.sandbox` and `--sandbox` take.
    pub const NAMES: [&'static str; 3] = ["off", "workspace-write", "read-only"];

    pub fn parse(name: &str) -> Option<Mode> {
        match name {
            "off" => Some(Mode::Off),
            "workspace-write" => Some(Mode::WorkspaceWrite),
            "read-only" => Some(Mode::ReadOnly),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Mode::Off => "off",
            Mode::WorkspaceWrite => "workspace-write",
            Mode::ReadOnly => "read-only",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Places outside the configuration that the sandbox needs, found by `main.rs` (the library
/// does not read the environment).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Places {
    /// The system temp folders, writable in `workspace-write`: `/tmp`, `/dev/shm` and `$TMPDIR`.
    pub temp: Vec<PathBuf>,
    /// Folders kept read-only inside the fence when they lie where it lets commands write
    /// (and created then if missing, so that a command cannot make them first): the
    /// configuration folders mm reads at start (the user's, the `.mm/` of the folder mm started
    /// in). Every session's own `<cwd>/.mm` is added per call.
    pub protected: Vec<PathBuf>,
    /// Files kept read-only the same way when they exist (a `--config` file).
    pub protected_files: Vec<PathBuf>,
}

impl Default for Places {
    fn default() -> Self {
        Places {
            temp: vec![PathBuf::from("/tmp"), PathBuf::from("/dev/shm")],
            protected: Vec::new(),
            protected_files: Vec::new(),
        }
    }
}

/// What the kernel enforces of the fence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Enforcement {
    /// The Landlock ABI (0: none).
    pub abi: i32,
    /// Whether `.mm/` can be kept read-only (a private mount namespace); `Err` says why not.
    pub namespace: Result<(), String>,
}

/// `tools.sandboxRequired = true` and the fence is not whole.
#[derive(Debug, thiserror::Error)]
#[error("tools.sandboxRequired = true, but {0}")]
pub struct NotEnforced(String);

/// The process's sandbox: the mode, where commands may write, and what the kernel enforces.
#[derive(Debug, Clone)]
pub struct Sandbox {
    mode: Mode,
    /// `tools.sandboxWritable`.
    writable: Vec<PathBuf>,
    places: Places,
    enforcement: Enforcement,
}

impl Default for Sandbox {
    fn default() -> Self {
        Sandbox::off()
    }
}

impl Sandbox {
    /// The sandbox of a configuration. Asks the kernel what it enforces (once per process) when
    /// the mode is not `off`.
    pub fn new(config: &crate::config::Config, places: Places) -> Sandbox {
        let mode = config.tools.sandbox;
        let enforcement = match mode {
            Mode::Off => Enforcement {
                abi: 0,
                namespace: Err("the sandbox is off".into()),
            },
            Mode::WorkspaceWrite | Mode::ReadOnly => {
                let abi = landlock_abi();
                Enforcement {
                    abi,
                    namespace: match (mode, abi) {
                        // Nothing is writable to protect in read-only; nothing is fenced
                        // without Landlock.
                        (Mode::ReadOnly, _) | (_, 0) => Ok(()),
                        _ => namespace_works(),
                    },
                }
            }
        };
        Sandbox {
            mode,
            writable: config.tools.sandbox_writable.clone(),
            places,
            enforcement,
        }
    }

    /// No sandbox (tests and tools built without a configuration).
    pub fn off() -> Sandbox {
        Sandbox {
            mode: Mode::Off,
            writable: Vec::new(),
            places: Places::default(),
            enforcement: Enforcement {
                abi: 0,
                namespace: Err("the sandbox is off".into()),
            },
        }
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    pub fn is_on(&self) -> bool {
        self.mode != Mode::Off
    }

    /// Whether the kernel fences commands (the mode is on and Landlock is there).
    fn fences_commands(&self) -> bool {
        self.mode != Mode::Off && self.enforcement.abi > 0
    }

    pub fn enforcement(&self) -> &Enforcement {
        &self.enforcement
    }

    /// The mode as the banner and the ACP log show it: `workspace-write`, or
    /// `workspace-write (not enforced)` when the kernel has no Landlock.
    pub fn label(&self) -> String {
        match self.mode {
            Mode::Off => "off".into(),
            m if self.enforcement.abi == 0 => format!("{m} (not enforced)"),
            m => m.to_string(),
        }
    }

    /// What the kernel does not enforce of the fence, in one line; `None` when the sandbox is
    /// off or whole.
    pub fn note(&self) -> Option<String> {
        if self.mode == Mode::Off {
            return None;
        }
        let abi = self.enforcement.abi;
        if abi == 0 {
            return Some(
                "not enforced: this kernel has no Landlock (Linux 5.13 or later, with landlock among its LSMs); the file tools still refuse writes outside it"
                    .into(),
            );
        }
        let mut gaps: Vec<String> = Vec::new();
        if abi < 2 {
            gaps.push("moving or linking a file between folders is always refused".into());
        }
        if abi < 3 {
            gaps.push("truncate(2) is not fenced".into());
        }
        if abi < 5 {
            gaps.push("device ioctls are not fenced".into());
        }
        if let Err(why) = &self.enforcement.namespace {
            gaps.push(format!(
                "the project's .mm/ stays writable (no private mount namespace: {why})"
            ));
        }
        (!gaps.is_empty()).then(|| format!("Landlock ABI {abi} enforced, but {}", gaps.join("; ")))
    }

    /// The banner's warning when the fence is not whole.
    pub fn warning(&self) -> Option<String> {
        self.note().map(|n| format!("sandbox {}: {n}", self.mode))
    }

    /// The ACP log line: `[acp] sandbox: <mode>`, and what is not enforced after ` — `.
    pub fn log_line(&self) -> String {
        match self.note() {
            Some(n) => format!("[acp] sandbox: {} — {n}", self.mode),
            None => format!("[acp] sandbox: {}", self.mode),
        }
    }

    /// `Err` when `tools.sandboxRequired` is set and the fence is not whole.
    pub fn require(&self, required: bool) -> Result<(), NotEnforced> {
        match self.note() {
            Some(why) if required => Err(NotEnforced(format!(
                "tools.sandbox = {} is not enforced whole: {why}",
                self.mode
            ))),
            _ => Ok(()),
        }
    }

    /// Where commands of a session in `cwd` may write (canonical; those that exist), with
    /// `extra` folders of one child's own (an asked agent's `sandboxWritable`).
    fn roots(&self, cwd: &Path, extra: &[PathBuf]) -> Vec<PathBuf> {
        match self.mode {
            Mode::Off | Mode::ReadOnly => Vec::new(),
            Mode::WorkspaceWrite => std::iter::once(cwd)
                .chain(self.places.temp.iter().map(PathBuf::as_path))
                .chain(self.writable.iter().map(PathBuf::as_path))
                .chain(extra.iter().map(PathBuf::as_path))
                .filter_map(|p| std::fs::canonicalize(p).ok())
                .collect(),
        }
    }

    /// The paths kept read-only for a session in `cwd` (canonical where they exist), with
    /// whether each is a folder mm may create.
    fn protected(&self, cwd: &Path) -> Vec<(PathBuf, bool)> {
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

    /// The fence a command of a session in `cwd` runs in; `None` when the sandbox is off or the
    /// kernel has no Landlock.
    /// A protected folder that a command could otherwise create first (the session's `.mm/`)
    /// is created, so that it exists to be kept read-only.
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
        let namespace = self.enforcement.namespace.is_ok();
        let mut readonly: Vec<PathBuf> = Vec::new();
        if namespace {
            for (p, folder) in self.protected(cwd) {
                if !roots.iter().any(|r| p.starts_with(r)) || readonly.contains(&p) {
                    continue;
                }
                if folder && !p.exists() {
                    let shown = p.display().to_string();
                    let _ =
                        crate::writer::create_dir_all(&p, &shown, crate::writer::Check::Anywhere);
                }
                if p.exists() {
                    readonly.push(p);
                }
            }
        }
        Fence::build(&fence::Plan {
            writable: &roots,
            readonly: &readonly,
            namespace,
        })
        .map(Some)
    }

    /// Checks a write by mm itself on behalf of a tool (`write_file`, `edit_file`, …) against
    /// the rule the kernel applies to commands: `Err` is the text for the model,
    /// `[write outside the sandbox refused: <path> (tools.sandbox = <mode>)]`, naming the path
    /// where the write would land (symlinks followed).
    pub fn check_write(&self, cwd: &Path, path: &Path) -> Result<(), String> {
        if self.mode == Mode::Off {
            return Ok(());
        }
        let real = real_path(path);
        let inside = self.roots(cwd, &[]).iter().any(|r| real.starts_with(r))
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

    /// The line a failed `bash` call gets when the fence may be why (its output says a
    /// permission was denied); `None` when commands are not fenced.
    pub fn bash_hint(&self) -> Option<String> {
        if !self.fences_commands() {
            return None;
        }
        match self.mode {
            Mode::Off => None,
            Mode::WorkspaceWrite => Some(
                "[tools.sandbox = workspace-write: commands may write only in the working directory (not its .mm/), the temp folder and tools.sandboxWritable]"
                    .into(),
            ),
            Mode::ReadOnly => {
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
            Mode::Off => None,
            Mode::WorkspaceWrite => Some(
                "Sandbox: commands and file tools may write only in the working directory (not .mm/) and the temp folder."
                    .into(),
            ),
            Mode::ReadOnly => Some("Sandbox: commands and file tools may not write files.".into()),
        }
    }
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
        if let Ok(real) = std::fs::canonicalize(existing) {
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
        for name in Mode::NAMES {
            assert_eq!(Mode::parse(name).unwrap().name(), name);
        }
        assert_eq!(Mode::parse("on"), None);
    }

    fn with(mode: Mode, abi: i32, namespace: Result<(), String>) -> Sandbox {
        Sandbox {
            mode,
            writable: Vec::new(),
            places: Places::default(),
            enforcement: Enforcement { abi, namespace },
        }
    }

    #[test]
    fn a_whole_fence_says_only_its_mode() {
        let s = with(Mode::WorkspaceWrite, 7, Ok(()));
        assert_eq!(s.label(), "workspace-write");
        assert_eq!(s.note(), None);
        assert_eq!(s.log_line(), "[acp] sandbox: workspace-write");
        assert!(s.require(true).is_ok());
        let off = with(Mode::Off, 0, Err("off".into()));
        assert_eq!(off.note(), None);
        assert!(off.require(true).is_ok());
    }

    #[test]
    fn what_the_kernel_lacks_is_said_once_and_is_an_error_when_required() {
        let s = with(
            Mode::WorkspaceWrite,
            3,
            Err("Operation not permitted (os error 1)".into()),
        );
        let note = "Landlock ABI 3 enforced, but device ioctls are not fenced; the project's .mm/ stays writable (no private mount namespace: Operation not permitted (os error 1))";
        assert_eq!(s.note().as_deref(), Some(note));
        assert_eq!(
            s.warning(),
            Some(format!("sandbox workspace-write: {note}"))
        );
        assert_eq!(
            s.log_line(),
            format!("[acp] sandbox: workspace-write — {note}")
        );
        assert!(s.require(false).is_ok());
        assert_eq!(
            s.require(true).unwrap_err().to_string(),
            format!(
                "tools.sandboxRequired = true, but tools.sandbox = workspace-write is not enforced whole: {note}"
            )
        );
        let none = with(Mode::ReadOnly, 0, Ok(()));
        assert_eq!(none.label(), "read-only (not enforced)");
        // Nothing claimed for commands: no fence to enter, no hint, nothing in the prompt.
        assert!(none.fence(Path::new("/")).unwrap().is_none());
        assert_eq!(none.bash_hint(), None);
        assert_eq!(none.prompt_section(), None);
        assert_eq!(
            none.note().as_deref(),
            Some(
                "not enforced: this kernel has no Landlock (Linux 5.13 or later, with landlock among its LSMs); the file tools still refuse writes outside it"
            )
        );
        let old = with(Mode::ReadOnly, 1, Ok(()));
        assert_eq!(
            old.note().as_deref(),
            Some(
                "Landlock ABI 1 enforced, but moving or linking a file between folders is always refused; truncate(2) is not fenced; device ioctls are not fenced"
            )
        );
    }

    #[test]
    fn real_path_follows_links_and_keeps_what_does_not_exist() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir(base.join("out")).unwrap();
        std::os::unix::fs::symlink(base.join("out"), base.join("link")).unwrap();
        std::os::unix::fs::symlink("out/f", base.join("file-link")).unwrap();
        assert_eq!(real_path(&base.join("link/new/x")), base.join("out/new/x"));
        assert_eq!(real_path(&base.join("file-link")), base.join("out/f"));
        assert_eq!(real_path(&base.join("a/../out/./y")), base.join("out/y"));
    }
}

//! The `write_file` tool (docs/tools.md), and the atomic write `edit_file` shares.

use std::fs;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;

use super::{Call, Setup, Tool, ToolOutput, parse_args, schema_of};
use crate::event::{FileDiff, Tally, ToolKind};
use crate::paths;
use crate::sandbox::Sandbox;

pub const NAME: &str = "write_file";

#[derive(Default)]
pub struct WriteFile {
    /// Writes outside it are refused (docs/sandbox.md).
    pub sandbox: Arc<Sandbox>,
}

/// The registration (tools/mod.rs).
pub fn tool(setup: &Setup<'_>) -> Option<Arc<dyn Tool>> {
    Some(Arc::new(WriteFile {
        sandbox: Arc::clone(setup.sandbox),
    }))
}

#[derive(Deserialize, schemars::JsonSchema)]
struct Args {
    path: String,
    content: String,
}

/// Why a file could not be written; the text is for the model.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error(
        "{0} is read-only; it was not changed (make it writable with chmod u+w first if it should be)"
    )]
    ReadOnly(String),
    #[error("{0} is a directory, not a file")]
    IsDirectory(String),
    #[error("could not write {path}: {source}")]
    Io { path: String, source: io::Error },
    /// The sandbox refused the write (its own text, for the model).
    #[error("{0}")]
    Refused(String),
}

#[async_trait]
impl Tool for WriteFile {
    fn name(&self) -> &str {
        NAME
    }
    fn description(&self) -> &str {
        "Create or overwrite a file with the given content (parent directories are created)."
    }
    fn parameters(&self) -> Value {
        schema_of::<Args>()
    }
    fn kind(&self, _args: &Value) -> ToolKind {
        ToolKind::Edit
    }
    fn title(&self, args: &Value) -> String {
        path_title(NAME, args)
    }
    fn locations(&self, args: &Value, cwd: &Path) -> Vec<PathBuf> {
        path_location(args, cwd)
    }
    fn tally(&self) -> Option<Tally> {
        Some(Tally::FileOp)
    }
    fn gated(&self, _args: &Value) -> bool {
        true
    }
    fn preview(&self, args: &Value, cwd: &Path) -> Vec<FileDiff> {
        match serde_json::from_value::<Args>(args.clone()) {
            Ok(args) => change(args, cwd).map(|d| vec![d]).unwrap_or_default(),
            Err(_) => Vec::new(),
        }
    }
    async fn run(&self, args: Value, call: &Call<'_>) -> ToolOutput {
        let args: Args = match parse_args(NAME, &args) {
            Ok(a) => a,
            Err(out) => return out,
        };
        let shown = args.path.clone();
        let abs = paths::resolve(call.cwd, &args.path);
        if let Err(refused) = self.sandbox.check_write(call.cwd, &abs) {
            return ToolOutput::failed(refused);
        }
        let diff = match change(args, call.cwd) {
            Ok(d) => d,
            Err(e) => return ToolOutput::failed(e.to_string()),
        };
        let check = |p: &Path| self.sandbox.check_write(call.cwd, p);
        if let Err(e) = write_atomic_checked(&diff.path, &shown, diff.new_text.as_bytes(), check) {
            return ToolOutput::failed(e.to_string());
        }
        let mut out =
            ToolOutput::completed(format!("wrote {} bytes to {shown}", diff.new_text.len()));
        out.diffs.push(diff);
        out
    }
}

/// The change a call makes: the file's absolute path, its content now (`None`: it does not
/// exist) and the new content.
fn change(args: Args, cwd: &Path) -> Result<FileDiff, WriteError> {
    let abs = paths::resolve(cwd, &args.path);
    if abs.is_dir() {
        return Err(WriteError::IsDirectory(args.path));
    }
    let old_text = match fs::read(&abs) {
        Ok(bytes) => Some(String::from_utf8_lossy(&bytes).into_owned()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => {
            return Err(WriteError::Io {
                path: args.path,
                source: e,
            });
        }
    };
    Ok(FileDiff {
        path: abs,
        old_text,
        new_text: args.content,
    })
}

/// `<tool>: <path>`, or the tool's name when the arguments carry no path.
pub(crate) fn path_title(tool: &str, args: &Value) -> String {
    match args.get("path").and_then(Value::as_str) {
        Some(p) => format!("{tool}: {p}"),
        None => tool.to_string(),
    }
}

/// The absolute path named by the arguments' `path`, if any.
pub(crate) fn path_location(args: &Value, cwd: &Path) -> Vec<PathBuf> {
    args.get("path")
        .and_then(Value::as_str)
        .map(|p| vec![paths::resolve(cwd, p)])
        .unwrap_or_default()
}

/// Writes `bytes` to `path` through a temporary file in the same directory and a rename, so a
/// reader never sees half a file. Keeps an existing file's mode (a new file gets 0666 minus the
/// umask), writes beside the real file when `path` is a symlink (the link stays a link), creates
/// missing parent directories, and refuses a read-only file. `shown` names the file in errors.
pub fn write_atomic(path: &Path, shown: &str, bytes: &[u8]) -> Result<(), WriteError> {
    write_atomic_checked(path, shown, bytes, |_| Ok(()))
}

/// [`write_atomic`], asking `check` (the sandbox's `check_write`) where the write really lands
/// before anything is created: the folder is opened, its real path read from the open
/// descriptor, and every later step (missing folders, the temporary file, the rename) made
/// relative to that descriptor without following links. A command that swaps a folder of the
/// path for a symlink meanwhile cannot send the write elsewhere.
pub fn write_atomic_checked(
    path: &Path,
    shown: &str,
    bytes: &[u8],
    check: impl Fn(&Path) -> Result<(), String>,
) -> Result<(), WriteError> {
    let io_err = |source: io::Error| WriteError::Io {
        path: shown.to_string(),
        source,
    };
    let target = follow_links(path).map_err(io_err)?;
    let existing = match fs::metadata(&target) {
        Ok(m) => Some(m),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(io_err(e)),
    };
    let mode = match &existing {
        Some(m) if m.is_dir() => return Err(WriteError::IsDirectory(shown.to_string())),
        Some(m) if m.permissions().readonly() => {
            return Err(WriteError::ReadOnly(shown.to_string()));
        }
        Some(m) => Some(m.permissions().mode()),
        None => None,
    };
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = target
        .file_name()
        .map(|n| n.to_os_string())
        .ok_or_else(|| io_err(io::Error::other("no file name")))?;
    let dir_fd = open_dir_checked(&dir, &name, &check, &io_err)?;
    let (tmp_name, mut file) = create_temp(&dir_fd, &name).map_err(io_err)?;
    let written = (|| {
        file.write_all(bytes)?;
        if let Some(mode) = mode {
            file.set_permissions(fs::Permissions::from_mode(mode))?;
        }
        file.sync_all()?;
        drop(file);
        nix::fcntl::renameat(&dir_fd, tmp_name.as_os_str(), &dir_fd, name.as_os_str())
            .map_err(io::Error::from)
    })();
    if let Err(e) = written {
        let _ = nix::unistd::unlinkat(
            &dir_fd,
            tmp_name.as_os_str(),
            nix::unistd::UnlinkatFlags::NoRemoveDir,
        );
        return Err(io_err(e));
    }
    Ok(())
}

/// Opens `dir` (creating what is missing of it) for a write of `name` in it, once `check` has
/// accepted where that write lands. The deepest folder that exists is opened (links followed)
/// and its real path read back from the descriptor; the missing folders are then made and
/// opened one by one relative to it, never following a link.
fn open_dir_checked(
    dir: &Path,
    name: &std::ffi::OsStr,
    check: &impl Fn(&Path) -> Result<(), String>,
    io_err: &impl Fn(io::Error) -> WriteError,
) -> Result<OwnedFd, WriteError> {
    use nix::fcntl::{OFlag, open, openat};
    use nix::sys::stat::Mode;
    let errno = |e: nix::errno::Errno| io_err(e.into());
    let mut existing = dir;
    let mut missing = Vec::new();
    while let Err(e) = fs::symlink_metadata(existing) {
        if e.kind() != io::ErrorKind::NotFound {
            return Err(io_err(e));
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(part)) => {
                missing.push(part.to_os_string());
                existing = parent;
            }
            _ => break,
        }
    }
    let flags = OFlag::O_DIRECTORY | OFlag::O_RDONLY | OFlag::O_CLOEXEC;
    let mut fd = open(existing, flags, Mode::empty()).map_err(errno)?;
    let mut lands = fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())).map_err(io_err)?;
    for part in missing.iter().rev() {
        lands.push(part);
    }
    lands.push(name);
    check(&lands).map_err(WriteError::Refused)?;
    for part in missing.iter().rev() {
        match nix::sys::stat::mkdirat(&fd, part.as_os_str(), Mode::from_bits_truncate(0o777)) {
            Ok(()) | Err(nix::errno::Errno::EEXIST) => {}
            Err(e) => return Err(errno(e)),
        }
        fd = openat(
            &fd,
            part.as_os_str(),
            flags | OFlag::O_NOFOLLOW,
            Mode::empty(),
        )
        .map_err(errno)?;
    }
    Ok(fd)
}

/// Creates a new temporary file beside `name` in the open folder, mode 0666 before the umask.
fn create_temp(dir: &OwnedFd, name: &std::ffi::OsStr) -> io::Result<(PathBuf, fs::File)> {
    use nix::fcntl::{OFlag, openat};
    use nix::sys::stat::Mode;
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let base = name.to_string_lossy().into_owned();
    loop {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let tmp = PathBuf::from(format!(".{base}.mm-{}-{n}.tmp", std::process::id()));
        let flags =
            OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        match openat(dir, tmp.as_os_str(), flags, Mode::from_bits_truncate(0o666)) {
            Ok(fd) => return Ok((tmp, fs::File::from(fd))),
            Err(nix::errno::Errno::EEXIST) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// The file a path finally names once symlinks in its last component are followed (the
/// target need not exist: a dangling link is written through).
fn follow_links(path: &Path) -> io::Result<PathBuf> {
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        match fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let link = fs::read_link(&p)?;
                p = match p.parent() {
                    Some(parent) if link.is_relative() => parent.join(link),
                    _ => link,
                };
            }
            Ok(_) => return Ok(p),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(p),
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other("too many levels of symbolic links"))
}

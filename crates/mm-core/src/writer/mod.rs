//! The one writer every file mm writes goes through: the files tools write for the model
//! (`write_file`, `edit_file`, `fetch_content` with `output`, `lsp rename`) and mm's own
//! (session files, config edits, the prompt's history). Clippy's `disallowed-methods`
//! (clippy.toml) keeps every other way of creating, truncating or renaming a file out of the
//! library; this module is where it is allowed.
//!
//! A file is replaced atomically: a temporary file is created beside it, written (streamed, for
//! a download), fsynced, renamed over it, and the folder fsynced, so a reader never sees half a
//! file and a process killed at any moment leaves the old or the new file whole.
//!
//! Where the write lands is decided once, by descriptor: the deepest folder of the path that
//! exists is opened, its real path read back from the open descriptor ([`path_of_dir`]) and
//! asked of the [`Check`] with every folder to create and the file itself, before anything is
//! created; the missing folders, the temporary file and the rename are then made relative to
//! that descriptor without following links. A command that swaps a folder of the path for a
//! symlink meanwhile cannot send the write elsewhere.
//!
//! It knows nothing of the tools or the sandbox: the check is a closure (a tool passes its
//! sandbox's `check_write`), so it can stand below them.
// The one place of the library that creates, truncates and renames files (clippy.toml).
#![allow(clippy::disallowed_methods)]

mod journal;
mod linux;

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag};
use nix::sys::stat::{Mode, SFlag};

pub use journal::{Journal, KEPT_BYTES, Noted, Prior};
pub use linux::path_of_dir;

/// Asked where a write lands before anything is created.
#[derive(Clone, Copy)]
pub enum Check<'a> {
    /// mm's own files (session files, config edits, the history): written wherever they are.
    Anywhere,
    /// A write on the model's behalf: asked with the real path of every folder the write
    /// creates and of the file (symlinks of the existing part resolved); `Err` refuses the
    /// write, its text is what the caller says (the sandbox's refusal, for the model).
    Fenced(&'a (dyn Fn(&Path) -> Result<(), String> + Sync)),
}

impl Check<'_> {
    fn fenced(&self) -> bool {
        match self {
            Check::Anywhere => false,
            Check::Fenced(_) => true,
        }
    }

    fn ask(&self, lands: &Path) -> Result<(), WriteError> {
        match self {
            Check::Anywhere => Ok(()),
            Check::Fenced(check) => check(lands).map_err(WriteError::Refused),
        }
    }
}

/// What kind of file is written, which says its mode and how a symlink at its path is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// A file of the user's or of a project's (what tools write, the user's config, the
    /// history): written through a symlink to where it lives (the link stays a link), an
    /// existing file's mode kept and a read-only one refused ([`WriteError::ReadOnly`]); a new
    /// file is 0666 and new folders 0777, less the umask.
    Ordinary,
    /// A private file of mm's (a session file): 0600 whatever was there, its own folder 0700
    /// when the writer creates it (the folders above it 0777), less the umask; a symlink in its
    /// place is replaced, not followed.
    Private,
}

impl FileKind {
    fn follows_links(self) -> bool {
        match self {
            FileKind::Ordinary => true,
            FileKind::Private => false,
        }
    }

    fn new_file_mode(self) -> u32 {
        match self {
            FileKind::Ordinary => 0o666,
            FileKind::Private => 0o600,
        }
    }

    fn own_folder_mode(self) -> u32 {
        match self {
            FileKind::Ordinary => 0o777,
            FileKind::Private => 0o700,
        }
    }
}

/// Why a file was not written; `Display` is the line for the model (or the user), naming the
/// file as the caller showed it.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error(
        "{0} is read-only; it was not changed (make it writable with chmod u+w first if it should be)"
    )]
    ReadOnly(String),
    #[error("{0} is a directory, not a file")]
    IsDirectory(String),
    #[error("{0} is not a regular file (a device, a pipe or a socket); it was not changed")]
    NotAFile(String),
    #[error("could not write {path}: {source}")]
    Io { path: String, source: io::Error },
    /// The check refused the write (its own text).
    #[error("{0}")]
    Refused(String),
}

impl WriteError {
    /// As an `io::Error`, for callers whose errors are (session files, config edits): the
    /// underlying error itself for a failed system call, else the line.
    pub fn into_io(self) -> io::Error {
        match self {
            WriteError::Io { source, .. } => source,
            other => io::Error::other(other.to_string()),
        }
    }
}

/// Replaces the file at `path` by `bytes` (see the module's documentation). `shown` names the
/// file in errors.
pub fn write(
    path: &Path,
    shown: &str,
    bytes: &[u8],
    kind: FileKind,
    check: Check<'_>,
) -> Result<(), WriteError> {
    write_noted(path, shown, bytes, kind, check, None)
}

/// [`write`], noting in `journal` (when there is one) what the file held before.
pub fn write_noted(
    path: &Path,
    shown: &str,
    bytes: &[u8],
    kind: FileKind,
    check: Check<'_>,
    journal: Option<&Journal>,
) -> Result<(), WriteError> {
    let mut staged = stage_noted(path, shown, kind, check, journal)?;
    staged.write_all(bytes).map_err(|e| staged.error(e))?;
    staged.commit()
}

/// Starts replacing the file at `path`: checks where it lands, creates the missing folders and
/// the temporary file beside it. Write the content into the returned [`Staged`] (it is
/// `io::Write`; [`Staged::file`] for an async writer), then [`Staged::commit`]; dropped
/// without a commit, it removes its temporary file and the old file stays.
pub fn stage(
    path: &Path,
    shown: &str,
    kind: FileKind,
    check: Check<'_>,
) -> Result<Staged, WriteError> {
    stage_noted(path, shown, kind, check, None)
}

/// [`stage`], noting in `journal` (when there is one) what the file held before, once the
/// write is known to land (before anything is created).
pub fn stage_noted(
    path: &Path,
    shown: &str,
    kind: FileKind,
    check: Check<'_>,
    journal: Option<&Journal>,
) -> Result<Staged, WriteError> {
    let io_err = |source| WriteError::Io {
        path: shown.to_string(),
        source,
    };
    let target = if kind.follows_links() {
        follow_links(path).map_err(io_err)?
    } else {
        path.to_path_buf()
    };
    let (dir, name) = split(&target).map_err(io_err)?;
    let folder = open_folder(&dir, Some(&name), kind, check).map_err(|e| e.named(shown))?;
    let existing =
        match nix::sys::stat::fstatat(&folder, name.as_os_str(), AtFlags::AT_SYMLINK_NOFOLLOW) {
            Ok(st) => Some(st),
            Err(Errno::ENOENT) => None,
            Err(e) => return Err(io_err(e.into())),
        };
    let file_type =
        |st: &nix::sys::stat::FileStat| SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT;
    let kept_mode = match existing {
        Some(st) if file_type(&st) == SFlag::S_IFDIR => {
            return Err(WriteError::IsDirectory(shown.to_string()));
        }
        // A link that appeared since it was followed is replaced by the file, in this folder.
        Some(st) if file_type(&st) == SFlag::S_IFLNK => None,
        // A device, a pipe or a socket is never replaced by a file (`/dev/null`, as root).
        Some(st) if file_type(&st) != SFlag::S_IFREG => {
            return Err(WriteError::NotAFile(shown.to_string()));
        }
        Some(st) => match kind {
            FileKind::Ordinary if st.st_mode & 0o222 == 0 => {
                return Err(WriteError::ReadOnly(shown.to_string()));
            }
            FileKind::Ordinary => Some(st.st_mode & 0o7777),
            FileKind::Private => None,
        },
        None => None,
    };
    if let Some(journal) = journal {
        journal.note(&dir.join(&name), || {
            prior(&folder, &name, existing.as_ref())
        });
    }
    let (tmp, fd) = create_temp(&folder, &name, kind.new_file_mode()).map_err(io_err)?;
    let staged = Staged {
        dir: folder,
        tmp,
        name,
        file: File::from(fd),
        shown: shown.to_string(),
        committed: false,
    };
    if let Some(mode) = kept_mode {
        nix::sys::stat::fchmod(staged.file(), Mode::from_bits_truncate(mode))
            .map_err(|e| staged.error(e.into()))?;
    }
    Ok(staged)
}

/// What the file `name` of `folder` holds now, for the journal.
fn prior(folder: &OwnedFd, name: &OsStr, existing: Option<&nix::sys::stat::FileStat>) -> Prior {
    let Some(st) = existing else {
        return Prior::Missing;
    };
    if SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT != SFlag::S_IFREG {
        return Prior::NotKept("not a regular file".into());
    }
    if st.st_size as u64 > KEPT_BYTES {
        return Prior::NotKept(format!("bigger than {} MiB", KEPT_BYTES >> 20));
    }
    let flags = OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let read = nix::fcntl::openat(folder, name, flags, Mode::empty())
        .map_err(io::Error::from)
        .and_then(|fd| {
            let mut bytes = Vec::new();
            io::Read::read_to_end(&mut File::from(fd), &mut bytes).map(|_| bytes)
        });
    match read {
        Ok(bytes) => Prior::File {
            bytes,
            mode: st.st_mode & 0o7777,
        },
        Err(e) => Prior::NotKept(format!("unreadable: {e}")),
    }
}

/// A file being replaced: its temporary file, open for writing, in the checked folder.
#[derive(Debug)]
pub struct Staged {
    dir: OwnedFd,
    tmp: OsString,
    name: OsString,
    file: File,
    shown: String,
    /// Renamed into place: nothing to remove when dropped.
    committed: bool,
}

impl Staged {
    /// The temporary file, for a writer of its own (`tokio::fs::File::from_std` of a
    /// `try_clone`, for a download).
    pub fn file(&self) -> &File {
        &self.file
    }

    /// The error of a failed write, naming the file as the caller showed it.
    pub fn error(&self, source: io::Error) -> WriteError {
        WriteError::Io {
            path: self.shown.clone(),
            source,
        }
    }

    /// Fsyncs the temporary file, renames it over the file and fsyncs the folder: the new
    /// content is in place.
    pub fn commit(mut self) -> Result<(), WriteError> {
        self.file.sync_all().map_err(|e| self.error(e))?;
        nix::fcntl::renameat(
            &self.dir,
            self.tmp.as_os_str(),
            &self.dir,
            self.name.as_os_str(),
        )
        .map_err(|e| self.error(e.into()))?;
        self.committed = true;
        // Makes the rename itself durable. Some file systems refuse to sync a folder; the file
        // is whole either way, so that is not worth failing the write.
        let _ = nix::unistd::fsync(&self.dir);
        Ok(())
    }
}

impl Write for Staged {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.committed {
            let _ = nix::unistd::unlinkat(
                &self.dir,
                self.tmp.as_os_str(),
                nix::unistd::UnlinkatFlags::NoRemoveDir,
            );
        }
    }
}

/// Appends `bytes` to the file at `path` (an [`FileKind::Ordinary`] file: through a symlink
/// to where it lives), creating it and its folders when missing, `header` first in a file it
/// creates. Not atomic: for a log whose last line may be cut (the prompt's history).
pub fn append(
    path: &Path,
    shown: &str,
    header: &[u8],
    bytes: &[u8],
    check: Check<'_>,
) -> Result<(), WriteError> {
    let io_err = |source| WriteError::Io {
        path: shown.to_string(),
        source,
    };
    let target = follow_links(path).map_err(io_err)?;
    let (dir, name) = split(&target).map_err(io_err)?;
    let folder =
        open_folder(&dir, Some(&name), FileKind::Ordinary, check).map_err(|e| e.named(shown))?;
    let flags = OFlag::O_WRONLY | OFlag::O_APPEND | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let mode = Mode::from_bits_truncate(FileKind::Ordinary.new_file_mode());
    let (fd, created) = match nix::fcntl::openat(
        &folder,
        name.as_os_str(),
        flags | OFlag::O_CREAT | OFlag::O_EXCL,
        mode,
    ) {
        Ok(fd) => (fd, true),
        Err(Errno::EEXIST) => (
            nix::fcntl::openat(&folder, name.as_os_str(), flags, mode)
                .map_err(|e| io_err(e.into()))?,
            false,
        ),
        Err(e) => return Err(io_err(e.into())),
    };
    let mut text = Vec::with_capacity(header.len() + bytes.len());
    if created {
        text.extend_from_slice(header);
    }
    text.extend_from_slice(bytes);
    File::from(fd).write_all(&text).map_err(io_err)
}

/// Creates the folder at `path` and what is missing above it (0777 less the umask), each
/// checked first; a folder that exists is left as it is.
pub fn create_dir_all(path: &Path, shown: &str, check: Check<'_>) -> Result<(), WriteError> {
    open_folder(path, None, FileKind::Ordinary, check)
        .map(drop)
        .map_err(|e| e.named(shown))
}

/// An error of [`open_folder`] before it knows how the caller names the file.
enum FolderError {
    Io(io::Error),
    Refused(String),
}

impl FolderError {
    fn named(self, shown: &str) -> WriteError {
        match self {
            FolderError::Io(source) => WriteError::Io {
                path: shown.to_string(),
                source,
            },
            FolderError::Refused(why) => WriteError::Refused(why),
        }
    }
}

impl From<Errno> for FolderError {
    fn from(e: Errno) -> Self {
        FolderError::Io(e.into())
    }
}

impl From<io::Error> for FolderError {
    fn from(e: io::Error) -> Self {
        FolderError::Io(e)
    }
}

/// Opens `dir`, creating what is missing of it, once `check` has accepted every folder it
/// creates and the file `name` in it. The deepest folder that exists is opened (links
/// followed) and, for a fenced write, its real path read back from the descriptor; the
/// missing folders are then made and opened one by one relative to it, never following a link.
fn open_folder(
    dir: &Path,
    name: Option<&OsStr>,
    kind: FileKind,
    check: Check<'_>,
) -> Result<OwnedFd, FolderError> {
    let mut existing = dir;
    let mut missing = Vec::new();
    while let Err(e) = std::fs::symlink_metadata(existing) {
        if e.kind() != io::ErrorKind::NotFound {
            return Err(e.into());
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(part)) => {
                missing.push(part.to_os_string());
                existing = if parent.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    parent
                };
            }
            _ => break,
        }
    }
    missing.reverse();
    let flags = OFlag::O_DIRECTORY | OFlag::O_RDONLY | OFlag::O_CLOEXEC;
    let mut fd = nix::fcntl::open(existing, flags, Mode::empty())?;
    if check.fenced() {
        let mut lands = path_of_dir(&fd)?;
        for part in &missing {
            lands.push(part);
            check.ask(&lands).map_err(refused)?;
        }
        if let Some(name) = name {
            check.ask(&lands.join(name)).map_err(refused)?;
        }
    }
    let last = missing.len().saturating_sub(1);
    for (i, part) in missing.iter().enumerate() {
        let mode = if i == last && name.is_some() {
            kind.own_folder_mode()
        } else {
            0o777
        };
        match nix::sys::stat::mkdirat(&fd, part.as_os_str(), Mode::from_bits_truncate(mode)) {
            Ok(()) | Err(Errno::EEXIST) => {}
            Err(e) => return Err(e.into()),
        }
        fd = nix::fcntl::openat(
            &fd,
            part.as_os_str(),
            flags | OFlag::O_NOFOLLOW,
            Mode::empty(),
        )?;
    }
    Ok(fd)
}

fn refused(e: WriteError) -> FolderError {
    match e {
        WriteError::Refused(why) => FolderError::Refused(why),
        other => FolderError::Io(other.into_io()),
    }
}

/// The folder and the name of a file's path.
fn split(path: &Path) -> io::Result<(PathBuf, OsString)> {
    let name = path
        .file_name()
        .map(OsStr::to_os_string)
        .ok_or_else(|| io::Error::other("no file name"))?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    Ok((dir, name))
}

/// Bytes of the file's name kept in its temporary file's name, so that the whole stays under
/// the 255 bytes a name may have.
const TEMP_BASE_BYTES: usize = 200;

/// Creates a new temporary file (`.<name>.mm-<pid>-<n>.tmp`) beside `name` in the open folder.
fn create_temp(dir: &OwnedFd, name: &OsStr, mode: u32) -> io::Result<(OsString, OwnedFd)> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let bytes = name.as_bytes();
    let base = String::from_utf8_lossy(&bytes[..bytes.len().min(TEMP_BASE_BYTES)]).into_owned();
    loop {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let tmp = OsString::from(format!(".{base}.mm-{}-{n}.tmp", std::process::id()));
        let flags =
            OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        match nix::fcntl::openat(dir, tmp.as_os_str(), flags, Mode::from_bits_truncate(mode)) {
            Ok(fd) => return Ok((tmp, fd)),
            Err(Errno::EEXIST) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// The file a path finally names once symlinks in its last component are followed (the
/// target need not exist: a dangling link is written through).
fn follow_links(path: &Path) -> io::Result<PathBuf> {
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let link = std::fs::read_link(&p)?;
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

#[cfg(test)]
mod tests;

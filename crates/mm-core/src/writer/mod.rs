//! The one writer every file mm writes goes through: the files tools write for the model
//! (`write_file`, `edit_file`, `fetch_content` with `output`, `lsp rename`) and mm's own
//! (session files, config edits, the prompt's history). Clippy's `disallowed-methods`
//! (clippy.toml) keeps every other way of creating, truncating or renaming a file out of the
//! library; this module is where it is allowed.
//!
//! The system's part is one module per system, the same few operations on an open folder:
//! `unix.rs` (relative to the folder's descriptor: `openat`, `mkdirat`, `renameat`, never
//! following a link), `windows.rs` (by path under the folder's final path, the folder held
//! open without `FILE_SHARE_DELETE` so that it cannot be renamed or removed meanwhile).
//!
//! A file is replaced atomically: a temporary file is created beside it, written (streamed, for
//! a download), fsynced, renamed over it, and the folder fsynced, so a reader never sees half a
//! file and a process killed at any moment leaves the old or the new file whole.
//!
//! Where the write lands is decided once, by descriptor: the deepest folder of the path that
//! exists is opened, its real path read back from the open descriptor ([`crate::handle_path`]) and
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
#[cfg(unix)]
mod unix;
#[cfg(unix)]
use unix as os;
#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows as os;

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use os::Dir;

/// What is at a name in a folder, as the system's part tells it.
enum Existing {
    Missing,
    Dir,
    Link,
    /// A device, a pipe or a socket (Unix): anything but a file, a folder or a link.
    Other,
    /// A regular file: whether nobody may write it (its mode, or Windows' read-only
    /// attribute), and its mode bits where there are any (`None` on Windows).
    File {
        read_only: bool,
        mode: Option<u32>,
    },
}

pub use journal::{Journal, KEPT_BYTES, Noted, Prior};

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
    let existing = os::existing(&folder, &name).map_err(io_err)?;
    let kept_mode = match existing {
        Existing::Missing => None,
        Existing::Dir => return Err(WriteError::IsDirectory(shown.to_string())),
        // A link that appeared since it was followed is replaced by the file, in this folder.
        Existing::Link => None,
        // A device, a pipe or a socket is never replaced by a file (`/dev/null`, as root).
        Existing::Other => return Err(WriteError::NotAFile(shown.to_string())),
        Existing::File { read_only, mode } => match kind {
            FileKind::Ordinary if read_only => {
                return Err(WriteError::ReadOnly(shown.to_string()));
            }
            FileKind::Ordinary => mode,
            FileKind::Private => None,
        },
    };
    if let Some(journal) = journal {
        journal.note(&dir.join(&name), || prior(&folder, &name, &existing));
    }
    let (tmp, file) = create_temp(&folder, &name, kind).map_err(io_err)?;
    let staged = Staged {
        dir: folder,
        tmp,
        name,
        file,
        shown: shown.to_string(),
        committed: false,
    };
    if let Some(mode) = kept_mode {
        os::keep_mode(staged.file(), mode).map_err(|e| staged.error(e))?;
    }
    Ok(staged)
}

/// What the file `name` of `folder` holds now, for the journal.
/// Whether this process may write in the folder `dir`, as the system says (`mm doctor`).
pub fn can_write(dir: &Path) -> bool {
    os::can_write(dir)
}

/// Gives the file at `path` the permission bits `mode` (Unix; on Windows, only whether it is
/// read-only), as `/undo` puts back what a file had.
pub fn set_mode(path: &Path, mode: u32) -> io::Result<()> {
    os::set_mode(path, mode)
}

/// All of `file` when it holds at most `limit` bytes.
fn read_limited(file: File, limit: u64) -> io::Result<Option<Vec<u8>>> {
    if file.metadata()?.len() > limit {
        return Ok(None);
    }
    let mut bytes = Vec::new();
    io::Read::read_to_end(&mut io::Read::take(file, limit + 1), &mut bytes)?;
    Ok((bytes.len() as u64 <= limit).then_some(bytes))
}

fn prior(folder: &Dir, name: &OsStr, existing: &Existing) -> Prior {
    match existing {
        Existing::Missing => Prior::Missing,
        Existing::File { mode, .. } => match os::read_in(folder, name, KEPT_BYTES) {
            Ok(Some(bytes)) => Prior::File {
                bytes,
                mode: mode.unwrap_or(0o644),
            },
            Ok(None) => Prior::NotKept(format!("bigger than {} MiB", KEPT_BYTES >> 20)),
            Err(e) => Prior::NotKept(format!("unreadable: {e}")),
        },
        Existing::Dir | Existing::Link | Existing::Other => {
            Prior::NotKept("not a regular file".into())
        }
    }
}

/// A file being replaced: its temporary file, open for writing, in the checked folder.
#[derive(Debug)]
pub struct Staged {
    dir: Dir,
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
        os::rename_in(&self.dir, &self.tmp, &self.name).map_err(|e| self.error(e))?;
        self.committed = true;
        // Makes the rename itself durable. Some file systems refuse to sync a folder; the file
        // is whole either way, so that is not worth failing the write.
        let _ = os::sync_dir(&self.dir);
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
            let _ = os::remove_in(&self.dir, &self.tmp);
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
    let (mut file, created) = os::open_append(&folder, &name).map_err(io_err)?;
    let mut text = Vec::with_capacity(header.len() + bytes.len());
    if created {
        text.extend_from_slice(header);
    }
    text.extend_from_slice(bytes);
    file.write_all(&text).map_err(io_err)
}

/// Creates the file at `path` holding `bytes` (an [`FileKind::Ordinary`] file, its folders
/// made when missing) unless something is at that name already, which is left as it is;
/// whether it was created. Not atomic (the name is taken first, then written): for a small file
/// of mm's own that is never replaced (the `.gitignore` beside the session folder).
pub fn create_new(
    path: &Path,
    shown: &str,
    bytes: &[u8],
    check: Check<'_>,
) -> Result<bool, WriteError> {
    let io_err = |source| WriteError::Io {
        path: shown.to_string(),
        source,
    };
    let (dir, name) = split(path).map_err(io_err)?;
    let folder =
        open_folder(&dir, Some(&name), FileKind::Ordinary, check).map_err(|e| e.named(shown))?;
    let Some(mut file) = os::create_new(&folder, &name, FileKind::Ordinary).map_err(io_err)? else {
        return Ok(false);
    };
    file.write_all(bytes).map_err(io_err)?;
    file.sync_all().map_err(io_err)?;
    Ok(true)
}

/// Removes the file at `path` once `check` has accepted it: a symlink there is removed itself,
/// never followed; a folder, a device, a pipe or a socket is refused. Whether there was
/// something to remove (a missing file or folder: `false`). For mm's own files that it lets go
/// (old session files beyond `sessions.keep`).
pub fn remove(path: &Path, shown: &str, check: Check<'_>) -> Result<bool, WriteError> {
    let io_err = |source| WriteError::Io {
        path: shown.to_string(),
        source,
    };
    let (dir, name) = split(path).map_err(io_err)?;
    match std::fs::symlink_metadata(&dir) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(io_err(e)),
        Ok(_) => {}
    }
    let folder =
        open_folder(&dir, Some(&name), FileKind::Private, check).map_err(|e| e.named(shown))?;
    match os::existing(&folder, &name).map_err(io_err)? {
        Existing::Missing => Ok(false),
        Existing::Dir => Err(WriteError::IsDirectory(shown.to_string())),
        Existing::Other => Err(WriteError::NotAFile(shown.to_string())),
        Existing::Link | Existing::File { .. } => match os::remove_in(&folder, &name) {
            Ok(()) => Ok(true),
            // Removed meanwhile (another process pruning the same folder).
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(io_err(e)),
        },
    }
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
) -> Result<Dir, FolderError> {
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
    let mut folder = os::open_dir(existing)?;
    if check.fenced() {
        let mut lands = os::path_of(&folder)?;
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
        // The file's own folder is private for a private file; the folders above it are not.
        let private = i == last && name.is_some() && kind == FileKind::Private;
        os::make_dir_in(&folder, part, private)?;
        folder = os::open_dir_in(&folder, part)?;
    }
    Ok(folder)
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
fn create_temp(dir: &Dir, name: &OsStr, kind: FileKind) -> io::Result<(OsString, File)> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let bytes = name.as_encoded_bytes();
    let base = String::from_utf8_lossy(&bytes[..bytes.len().min(TEMP_BASE_BYTES)]).into_owned();
    loop {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let tmp = OsString::from(format!(".{base}.mm-{}-{n}.tmp", std::process::id()));
        if let Some(file) = os::create_new(dir, &tmp, kind)? {
            return Ok((tmp, file));
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

// The tests use Unix modes, links and fifos.
#[cfg(all(test, unix))]
mod tests;

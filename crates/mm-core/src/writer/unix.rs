//! The writer's operations on Unix: relative to an open folder's descriptor, never following
//! a link below it.

use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag};
use nix::sys::stat::{Mode, SFlag};

use super::{Existing, FileKind, read_limited};

/// An open folder.
pub type Dir = OwnedFd;

const DIR_FLAGS: OFlag = OFlag::O_DIRECTORY
    .union(OFlag::O_RDONLY)
    .union(OFlag::O_CLOEXEC);

fn new_file_mode(kind: FileKind) -> Mode {
    match kind {
        FileKind::Ordinary => Mode::from_bits_truncate(0o666),
        FileKind::Private => Mode::from_bits_truncate(0o600),
    }
}

/// Opens the folder at `path` (links followed).
pub fn open_dir(path: &Path) -> io::Result<Dir> {
    Ok(nix::fcntl::open(path, DIR_FLAGS, Mode::empty())?)
}

/// Where the open folder is ([`crate::handle_path::path_of`]).
pub fn path_of(dir: &Dir) -> io::Result<PathBuf> {
    crate::handle_path::path_of(dir.as_fd())
}

/// Makes the folder `name` in `dir` (0777, or 0700 when `private`, less the umask); one that
/// exists is left.
pub fn make_dir_in(dir: &Dir, name: &OsStr, private: bool) -> io::Result<()> {
    let mode = Mode::from_bits_truncate(if private { 0o700 } else { 0o777 });
    match nix::sys::stat::mkdirat(dir, name, mode) {
        Ok(()) | Err(Errno::EEXIST) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Opens the folder `name` in `dir`, refusing a link.
pub fn open_dir_in(dir: &Dir, name: &OsStr) -> io::Result<Dir> {
    Ok(nix::fcntl::openat(
        dir,
        name,
        DIR_FLAGS | OFlag::O_NOFOLLOW,
        Mode::empty(),
    )?)
}

/// What is at `name` in `dir` (a link not followed).
pub(super) fn existing(dir: &Dir, name: &OsStr) -> io::Result<Existing> {
    let st = match nix::sys::stat::fstatat(dir, name, AtFlags::AT_SYMLINK_NOFOLLOW) {
        Ok(st) => st,
        Err(Errno::ENOENT) => return Ok(Existing::Missing),
        Err(e) => return Err(e.into()),
    };
    let kind = SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT;
    Ok(if kind == SFlag::S_IFDIR {
        Existing::Dir
    } else if kind == SFlag::S_IFLNK {
        Existing::Link
    } else if kind != SFlag::S_IFREG {
        Existing::Other
    } else {
        #[allow(clippy::unnecessary_cast)] // u32 on Linux, u16 on macOS
        let mode = (st.st_mode & 0o7777) as u32;
        Existing::File {
            read_only: mode & 0o222 == 0,
            mode: Some(mode),
        }
    })
}

/// Whether this process may write in `dir` (access(2), which knows root and ACLs).
pub fn can_write(dir: &Path) -> bool {
    nix::unistd::access(dir, nix::unistd::AccessFlags::W_OK).is_ok()
}

/// Sets the permission bits of the file at `path`.
pub fn set_mode(path: &Path, mode: u32) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
}

/// The content of the file `name` in `dir` (a link not followed); `None` when it is over `limit`
/// bytes.
pub fn read_in(dir: &Dir, name: &OsStr, limit: u64) -> io::Result<Option<Vec<u8>>> {
    let flags = OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let file = File::from(nix::fcntl::openat(dir, name, flags, Mode::empty())?);
    read_limited(file, limit)
}

/// Creates the new file `name` in `dir`, for writing; `None` when something is there.
pub fn create_new(dir: &Dir, name: &OsStr, kind: FileKind) -> io::Result<Option<File>> {
    let flags =
        OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    match nix::fcntl::openat(dir, name, flags, new_file_mode(kind)) {
        Ok(fd) => Ok(Some(File::from(fd))),
        Err(Errno::EEXIST) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Gives `file` the mode of the file it replaces.
pub fn keep_mode(file: &File, mode: u32) -> io::Result<()> {
    #[allow(clippy::unnecessary_cast)] // u32 on Linux, u16 on macOS: the 12 mode bits fit
    let mode = Mode::from_bits_truncate(mode as nix::libc::mode_t);
    Ok(nix::sys::stat::fchmod(file, mode)?)
}

/// Renames `from` over `to`, both in `dir`.
pub fn rename_in(dir: &Dir, from: &OsStr, to: &OsStr) -> io::Result<()> {
    Ok(nix::fcntl::renameat(dir, from, dir, to)?)
}

/// Removes the file `name` in `dir`.
pub fn remove_in(dir: &Dir, name: &OsStr) -> io::Result<()> {
    Ok(nix::unistd::unlinkat(
        dir,
        name,
        nix::unistd::UnlinkatFlags::NoRemoveDir,
    )?)
}

/// Makes the folder's entries durable.
pub fn sync_dir(dir: &Dir) -> io::Result<()> {
    Ok(nix::unistd::fsync(dir)?)
}

/// Opens `name` in `dir` for appending, creating it when missing (never through a link);
/// with whether it was created.
pub fn open_append(dir: &Dir, name: &OsStr) -> io::Result<(File, bool)> {
    let flags = OFlag::O_WRONLY | OFlag::O_APPEND | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let mode = new_file_mode(FileKind::Ordinary);
    match nix::fcntl::openat(dir, name, flags | OFlag::O_CREAT | OFlag::O_EXCL, mode) {
        Ok(fd) => Ok((File::from(fd), true)),
        Err(Errno::EEXIST) => Ok((
            File::from(nix::fcntl::openat(dir, name, flags, mode)?),
            false,
        )),
        Err(e) => Err(e.into()),
    }
}

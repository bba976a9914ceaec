//! The writer's operations on Windows, which has no `openat`: by path under the open folder's
//! final path (`GetFinalPathNameByHandleW`, links resolved). Each folder is held open without
//! `FILE_SHARE_DELETE`, so that nothing can rename or remove it, or put a link in its place,
//! while the write goes on; a folder it makes is opened without following a reparse point
//! (a symlink or a junction) and refused if it is one.

use std::ffi::OsStr;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::windows::fs::OpenOptionsExt;
use std::os::windows::io::AsHandle;
use std::path::{Path, PathBuf};

use windows_sys::Win32::Storage::FileSystem::{
    FILE_FLAG_BACKUP_SEMANTICS, FILE_FLAG_OPEN_REPARSE_POINT, FILE_SHARE_READ, FILE_SHARE_WRITE,
};

use super::{Existing, FileKind, read_limited};

/// An open folder and where it is.
#[derive(Debug)]
pub struct Dir {
    _held: File,
    path: PathBuf,
}

fn hold(path: &Path, flags: u32) -> io::Result<Dir> {
    let file = OpenOptions::new()
        .read(true)
        .share_mode(FILE_SHARE_READ | FILE_SHARE_WRITE)
        .custom_flags(FILE_FLAG_BACKUP_SEMANTICS | flags)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_dir() || meta.file_type().is_symlink() {
        return Err(io::Error::other(format!(
            "{} is not a folder",
            path.display()
        )));
    }
    let path = crate::handle_path::path_of(file.as_handle())?;
    Ok(Dir { _held: file, path })
}

/// Opens the folder at `path` (links followed).
pub fn open_dir(path: &Path) -> io::Result<Dir> {
    hold(path, 0)
}

/// Where the open folder is.
pub fn path_of(dir: &Dir) -> io::Result<PathBuf> {
    Ok(dir.path.clone())
}

/// Makes the folder `name` in `dir`; one that exists is left. (Windows has no mode bits: a
/// private folder is private by its place in the user's profile.)
pub fn make_dir_in(dir: &Dir, name: &OsStr, _private: bool) -> io::Result<()> {
    match std::fs::create_dir(dir.path.join(name)) {
        Err(e) if e.kind() != io::ErrorKind::AlreadyExists => Err(e),
        _ => Ok(()),
    }
}

/// Opens the folder `name` in `dir`, refusing a link or a junction.
pub fn open_dir_in(dir: &Dir, name: &OsStr) -> io::Result<Dir> {
    hold(&dir.path.join(name), FILE_FLAG_OPEN_REPARSE_POINT)
}

/// What is at `name` in `dir` (a link not followed).
pub(super) fn existing(dir: &Dir, name: &OsStr) -> io::Result<Existing> {
    let meta = match std::fs::symlink_metadata(dir.path.join(name)) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Existing::Missing),
        Err(e) => return Err(e),
    };
    let kind = meta.file_type();
    Ok(if kind.is_symlink() {
        Existing::Link
    } else if kind.is_dir() {
        Existing::Dir
    } else if !kind.is_file() {
        Existing::Other
    } else {
        Existing::File {
            read_only: meta.permissions().readonly(),
            mode: None,
        }
    })
}

/// Whether this process may write in `dir`: Windows tells only the read-only attribute here.
pub fn can_write(dir: &Path) -> bool {
    std::fs::metadata(dir).is_ok_and(|m| !m.permissions().readonly())
}

/// Windows has no permission bits: a mode without any write bit makes the file read-only.
pub fn set_mode(path: &Path, mode: u32) -> io::Result<()> {
    let mut perms = std::fs::metadata(path)?.permissions();
    perms.set_readonly(mode & 0o222 == 0);
    std::fs::set_permissions(path, perms)
}

/// The content of the file `name` in `dir`, by its path under the folder's final path; `None`
/// when it is over `limit` bytes.
pub fn read_in(dir: &Dir, name: &OsStr, limit: u64) -> io::Result<Option<Vec<u8>>> {
    read_limited(File::open(path_of(dir)?.join(name))?, limit)
}

/// Creates the new file `name` in `dir`, for writing; `None` when something is there.
pub fn create_new(dir: &Dir, name: &OsStr, _kind: FileKind) -> io::Result<Option<File>> {
    match OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(dir.path.join(name))
    {
        Ok(file) => Ok(Some(file)),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(None),
        Err(e) => Err(e),
    }
}

/// Nothing to keep: Windows has no mode bits (a read-only file was refused before).
pub fn keep_mode(_file: &File, _mode: u32) -> io::Result<()> {
    Ok(())
}

/// Renames `from` over `to`, both in `dir` (`MoveFileExW` with `MOVEFILE_REPLACE_EXISTING`).
pub fn rename_in(dir: &Dir, from: &OsStr, to: &OsStr) -> io::Result<()> {
    std::fs::rename(dir.path.join(from), dir.path.join(to))
}

/// Removes the file `name` in `dir`.
pub fn remove_in(dir: &Dir, name: &OsStr) -> io::Result<()> {
    std::fs::remove_file(dir.path.join(name))
}

/// Windows cannot flush a folder; the rename is durable once the file system says so.
pub fn sync_dir(_dir: &Dir) -> io::Result<()> {
    Ok(())
}

/// Opens `name` in `dir` for appending, creating it when missing; with whether it was
/// created.
pub fn open_append(dir: &Dir, name: &OsStr) -> io::Result<(File, bool)> {
    let path = dir.path.join(name);
    match OpenOptions::new().append(true).create_new(true).open(&path) {
        Ok(file) => Ok((file, true)),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            Ok((OpenOptions::new().append(true).open(&path)?, false))
        }
        Err(e) => Err(e),
    }
}

//! [`Held`]: a writable place (a temp folder, a `tools.sandboxWritable` entry) opened once at
//! start, whose place is read back from its descriptor or handle
//! ([`mm_core::handle_path::path_of`]): renaming it, or putting a symlink where it was, does
//! not change what it is.
//!
//! Windows: held by handle, opened without `FILE_SHARE_DELETE`.

use std::fs::File;
use std::io;
use std::os::windows::fs::OpenOptionsExt;
use std::os::windows::io::AsHandle;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use windows_sys::Win32::Storage::FileSystem::{
    FILE_FLAG_BACKUP_SEMANTICS, FILE_SHARE_READ, FILE_SHARE_WRITE,
};

/// A folder (or file) opened once, held by handle. It is opened without
/// `FILE_SHARE_DELETE`, so that it cannot be renamed or removed while mm holds it.
#[derive(Debug, Clone)]
pub struct Held {
    file: Arc<File>,
}

impl Held {
    pub fn open(path: &Path) -> io::Result<Held> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .share_mode(FILE_SHARE_READ | FILE_SHARE_WRITE)
            // A folder can be opened only with backup semantics.
            .custom_flags(FILE_FLAG_BACKUP_SEMANTICS)
            .open(path)?;
        Ok(Held {
            file: Arc::new(file),
        })
    }

    /// Where it is now.
    pub fn path(&self) -> Option<PathBuf> {
        mm_core::handle_path::path_of(self.file.as_handle()).ok()
    }
}

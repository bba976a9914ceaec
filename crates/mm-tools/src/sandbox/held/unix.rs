//! [`Held`]: a writable place (a temp folder, a `tools.sandboxWritable` entry) opened once at
//! start, whose place is read back from its descriptor or handle
//! ([`mm_core::handle_path::path_of`]): renaming it, or putting a symlink where it was, does
//! not change what it is.
//!
//! Unix: held by descriptor, its place read back from `/proc/self/fd` or `F_GETPATH`.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Linux opens it as a path only (`O_PATH`: no read right needed, and what Landlock takes).
#[cfg(target_os = "linux")]
const FLAGS: libc::c_int = libc::O_PATH;
#[cfg(not(target_os = "linux"))]
const FLAGS: libc::c_int = 0;

/// A folder (or file) opened once (the user's symlinks followed), held by descriptor.
#[derive(Debug, Clone)]
pub struct Held {
    fd: Arc<OwnedFd>,
}

impl Held {
    pub fn open(path: &Path) -> io::Result<Held> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(FLAGS)
            .open(path)?;
        Ok(Held {
            fd: Arc::new(OwnedFd::from(file)),
        })
    }

    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Where it is now; `None` once it was removed.
    pub fn path(&self) -> Option<PathBuf> {
        let path = mm_core::handle_path::path_of(self.fd.as_fd()).ok()?;
        let now = std::fs::metadata(&path).ok()?;
        let held = nix::sys::stat::fstat(self.fd.as_fd()).ok()?;
        #[allow(clippy::unnecessary_cast)] // u64 on Linux, i32 and u64 on macOS
        let same = now.dev() == held.st_dev as u64 && now.ino() == held.st_ino as u64;
        same.then_some(path)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::disallowed_methods)]
mod tests {
    use super::*;

    #[test]
    fn a_held_folder_is_found_where_it_moved_and_not_where_a_link_replaced_it() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        std::fs::create_dir(base.join("cache")).unwrap();
        let held = Held::open(&base.join("cache")).unwrap();
        assert_eq!(held.path(), Some(base.join("cache")));
        std::fs::rename(base.join("cache"), base.join("moved")).unwrap();
        std::os::unix::fs::symlink("/", base.join("cache")).unwrap();
        assert_eq!(held.path(), Some(base.join("moved")));
        std::fs::remove_dir(base.join("moved")).unwrap();
        assert_eq!(held.path(), None);
    }
}

//! The Linux parts of the fence that are not Landlock, one concern a module, each entered by
//! the child between `fork` and `exec` on memory prepared by mm: the mount namespace (read-only
//! binds, the binds that pin protected paths, a private `devpts`), root's capabilities and the
//! seccomp filter. Beside them, [`Held`]: a folder opened once, whose place is read back from
//! its descriptor.

pub mod caps;
pub mod devpts;
pub mod namespace;
pub mod seccomp;

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A folder (or file) opened once (`O_PATH`, the user's symlinks followed), held by descriptor:
/// renaming it, or putting a symlink where it was, does not change what it is.
#[derive(Debug, Clone)]
pub struct Held {
    fd: Arc<OwnedFd>,
}

impl Held {
    pub fn open(path: &Path) -> io::Result<Held> {
        use std::os::unix::fs::OpenOptionsExt;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_PATH)
            .open(path)?;
        Ok(Held {
            fd: Arc::new(OwnedFd::from(file)),
        })
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Where it is now; `None` once it was removed.
    pub fn path(&self) -> Option<PathBuf> {
        let path = fd_path(self.fd.as_fd()).ok()?;
        let now = std::fs::metadata(&path).ok()?;
        let held = nix::sys::stat::fstat(self.fd.as_fd()).ok()?;
        (now.dev() == held.st_dev as u64 && now.ino() == held.st_ino as u64).then_some(path)
    }
}

/// The path an open descriptor names now, as the kernel reads it back.
pub fn fd_path(fd: BorrowedFd<'_>) -> io::Result<PathBuf> {
    std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd()))
}

pub(super) fn check(ret: libc::c_int) -> io::Result<()> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Writes `bytes` to a file of `/proc/self` (one `write`, as those files require).
///
/// # Safety
/// Async-signal-safe: open, write and close on caller-owned memory.
unsafe fn write_proc(path: &std::ffi::CStr, bytes: &[u8]) -> io::Result<()> {
    // SAFETY: `path` is NUL-terminated; `bytes` is valid for its length.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let n = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
        let result = if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        };
        libc::close(fd);
        result
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

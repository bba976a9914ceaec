//! What the Linux fence's modules share: a system call's result checked, a file of
//! `/proc/self` written (both async-signal-safe, for the child between `fork` and `exec`), and
//! why a fence could not be made.

use std::io;
use std::path::PathBuf;

/// Why a fence could not be built.
#[derive(Debug, thiserror::Error)]
pub enum FenceError {
    #[error("cannot build the Landlock ruleset: {0}")]
    Ruleset(#[from] landlock::RulesetError),
    #[error("cannot open {}: {source}", path.display())]
    Open { path: PathBuf, source: io::Error },
    #[error("cannot make the private mount namespace: {0}")]
    Namespace(io::Error),
}

/// A system call's answer: `Err` with the system's error when it failed (below 0).
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
pub(super) unsafe fn write_proc(path: &std::ffi::CStr, bytes: &[u8]) -> io::Result<()> {
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

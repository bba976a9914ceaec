//! A private `devpts` for a fenced child: mounted on `/dev/pts` in its mount namespace, it
//! holds only the terminals the child opens itself, so the user's terminal (`/dev/pts/N` of the
//! shell mm runs in) cannot be opened and written to, past any sanitiser of mm's. `/dev/ptmx`
//! opens the instance mounted beside it (`pts` in the same folder, Linux 4.7 and later), so
//! `openpty` still works inside.

use std::ffi::CStr;
use std::io;

use super::sys::check;

pub const PTS: &CStr = c"/dev/pts";

/// Mounts a new `devpts` instance on `/dev/pts` (in the caller's mount namespace).
///
/// # Safety
/// Async-signal-safe (one system call on static strings): may run between `fork` and `exec`.
pub unsafe fn mount_private() -> io::Result<()> {
    // SAFETY: NUL-terminated static strings.
    check(unsafe {
        libc::mount(
            c"devpts".as_ptr(),
            PTS.as_ptr(),
            c"devpts".as_ptr(),
            libc::MS_NOSUID | libc::MS_NOEXEC,
            c"newinstance,ptmxmode=0666,mode=0620".as_ptr().cast(),
        )
    })
}

//! macOS: `fcntl(F_GETPATH)`.

use std::ffi::OsStr;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

/// What [`path_of`] reads: a descriptor.
pub type Handle<'a> = std::os::fd::BorrowedFd<'a>;

/// The path `fd` names now, as `F_GETPATH` reads it back.
pub fn path_of(fd: Handle<'_>) -> io::Result<PathBuf> {
    let mut buf = [0u8; libc::PATH_MAX as usize];
    // SAFETY: F_GETPATH writes at most PATH_MAX bytes, NUL-terminated, into `buf`.
    let r = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETPATH, buf.as_mut_ptr()) };
    if r < 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(
            e.kind(),
            format!("cannot tell where the folder is (F_GETPATH: {e})"),
        ));
    }
    let len = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    Ok(PathBuf::from(OsStr::from_bytes(&buf[..len])))
}

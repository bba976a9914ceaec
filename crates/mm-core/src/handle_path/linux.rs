//! Linux: the descriptor's link in `/proc/self/fd`.

use std::io;
use std::os::fd::AsRawFd;
use std::path::PathBuf;

/// What [`path_of`] reads: a descriptor.
pub type Handle<'a> = std::os::fd::BorrowedFd<'a>;

/// The path `fd` names now (`/proc/self/fd/N`).
pub fn path_of(fd: Handle<'_>) -> io::Result<PathBuf> {
    let raw = fd.as_raw_fd();
    std::fs::read_link(format!("/proc/self/fd/{raw}")).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("cannot tell where the folder is (/proc/self/fd/{raw}: {e})"),
        )
    })
}

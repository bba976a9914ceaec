//! The writer's one per-platform part on Linux.

use std::io;
use std::os::fd::{AsFd, AsRawFd};
use std::path::PathBuf;

/// The real path of an open folder, as the kernel knows it (`/proc/self/fd/N`): where a write
/// relative to it lands, whatever links named it when it was opened.
pub fn path_of_dir(fd: impl AsFd) -> io::Result<PathBuf> {
    let raw = fd.as_fd().as_raw_fd();
    std::fs::read_link(format!("/proc/self/fd/{raw}")).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("cannot tell where the folder is (/proc/self/fd/{raw}: {e})"),
        )
    })
}

//! What the test kit does differently per system, in one place: the rest of it has no `cfg`.
#![allow(clippy::unwrap_used, clippy::disallowed_methods)]

use std::fs::Metadata;
use std::path::Path;

/// Whether a file found on PATH can be run (Unix: an execute bit; Windows: any file).
#[cfg(unix)]
pub fn is_executable(m: &Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    m.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
pub fn is_executable(_m: &Metadata) -> bool {
    true
}

/// Makes the script at `path` executable (Unix: mode 0755; Windows has no such bit).
#[cfg(unix)]
pub fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[cfg(not(unix))]
pub fn make_executable(_path: &Path) {}

/// Sends SIGINT to the process `pid`, as Ctrl-C in a terminal would (Unix only: the suites
/// that interrupt a child are Unix's).
#[cfg(unix)]
pub fn interrupt(pid: u32) {
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
}

#[cfg(not(unix))]
pub fn interrupt(_pid: u32) {
    panic!("no SIGINT to send on this system: the suites that interrupt mm are Unix's");
}

//! What the test kit does differently per system, in one place: the rest of it has no `cfg`.
#![allow(clippy::unwrap_used, clippy::disallowed_methods)]

use std::fs::Metadata;
use std::path::Path;
use std::process::Command;

use expectrl::session::OsSession;

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

/// `command`, started once its terminal is `columns` wide (Unix: a shell polls `stty size`, as
/// nothing announces the size; Windows: at once, the console resized meanwhile).
#[cfg(unix)]
pub fn once_sized(command: &Command, columns: u16, rows: u16) -> Command {
    let mut sh = Command::new("sh");
    sh.arg("-c").arg(format!(
        "while [ \"$(stty size)\" != \"{rows} {columns}\" ]; do sleep 0.01; done; exec \"$0\" \"$@\""
    ));
    sh.arg(command.get_program());
    copy_into(command, sh)
}

#[cfg(not(unix))]
pub fn once_sized(command: &Command, _columns: u16, _rows: u16) -> Command {
    copy_into(command, Command::new(command.get_program()))
}

/// `into` with `command`'s arguments, environment (cleared first) and folder.
fn copy_into(command: &Command, mut into: Command) -> Command {
    into.args(command.get_args()).env_clear();
    for (key, value) in command.get_envs() {
        if let Some(value) = value {
            into.env(key, value);
        }
    }
    if let Some(dir) = command.get_current_dir() {
        into.current_dir(dir);
    }
    into
}

/// Gives a pseudo-terminal session's window `columns` columns and `rows` rows.
#[cfg(unix)]
pub fn resize(session: &mut OsSession, columns: u16, rows: u16) {
    session
        .get_process_mut()
        .set_window_size(columns, rows)
        .unwrap();
}

#[cfg(not(unix))]
pub fn resize(session: &mut OsSession, columns: u16, rows: u16) {
    let columns = i16::try_from(columns).unwrap_or(i16::MAX);
    let rows = i16::try_from(rows).unwrap_or(i16::MAX);
    session.get_process_mut().resize(columns, rows).unwrap();
}

//! What the test kit does differently per system, in one place: the rest of it has no `cfg`.
#![allow(clippy::unwrap_used, clippy::disallowed_methods)]

use std::ffi::OsStr;
use std::fs::Metadata;
use std::path::Path;
use std::process::Command;

use expectrl::Session;
use expectrl::session::OsSession;

use super::skip;

/// Whether an executable `command` is on PATH (Unix: a file with an execute bit).
#[cfg(unix)]
pub fn on_path(command: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let executable = |m: &Metadata| m.is_file() && m.permissions().mode() & 0o111 != 0;
    std::env::var_os("PATH").is_some_and(|paths| {
        std::env::split_paths(&paths)
            .any(|d| std::fs::metadata(d.join(command)).is_ok_and(|m| executable(&m)))
    })
}

/// Whether `command` is on PATH as mm finds it on Windows: with an extension of `PATHEXT`
/// (`npx.cmd`; a file without one, such as a Linux program under Wine, is not a program here).
#[cfg(windows)]
pub fn on_path(command: &str) -> bool {
    mm_tools::program::resolve(OsStr::new(command)).is_absolute()
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

/// What a test's child needs of the environment on every system, once it is cleared: `PATH`,
/// and on Windows `SystemRoot` (Winsock does not start without it; Wine does not mind).
const KEPT: &[&str] = &["PATH", "SystemRoot"];

/// A child's environment cleared but for [`KEPT`], with `home` as its home folder: `HOME`, and
/// `USERPROFILE`, which Windows reads. For `std`'s and tokio's commands alike.
pub trait OnlyHome {
    fn only_home(&mut self, home: &Path) -> &mut Self;
}

macro_rules! only_home {
    ($command:ty) => {
        impl OnlyHome for $command {
            fn only_home(&mut self, home: &Path) -> &mut Self {
                self.env_clear();
                for name in KEPT {
                    if let Some(value) = std::env::var_os(name) {
                        self.env(name, value);
                    }
                }
                self.env("HOME", home).env("USERPROFILE", home)
            }
        }
    };
}
only_home!(Command);
only_home!(tokio::process::Command);

/// A pseudo-terminal session running `command`. Where the system has none the test is skipped
/// with the reason: Wine 8's ConPTY is "Not implemented" (a session starts, but its output
/// never comes and it cannot be resized).
pub fn spawn_pty(command: Command) -> OsSession {
    not_under_wine("its pseudo-console (ConPTY) is not implemented");
    match Session::spawn(command) {
        Ok(session) => session,
        // E_NOTIMPL from CreatePseudoConsole.
        Err(e) if format!("{e:?}").contains("0x80004001") => {
            skip("no pseudo-console here (CreatePseudoConsole: not implemented, as under Wine)")
        }
        Err(e) => panic!("spawn mm in a pty: {e}"),
    }
}

/// Whether this Windows is Wine (scripts/windows-test.sh runs the Windows build there): its
/// prefix has Wine's own programs.
#[cfg(windows)]
pub fn under_wine() -> bool {
    let root = std::env::var_os("SystemRoot").unwrap_or_else(|| r"C:\windows".into());
    Path::new(&root).join(r"system32\wineboot.exe").is_file()
}

#[cfg(not(windows))]
pub fn under_wine() -> bool {
    false
}

/// The test cannot run under Wine (`why`): skipped there with the reason; it runs everywhere
/// else.
pub fn not_under_wine(why: &str) {
    if under_wine() {
        skip(format!("not under Wine: {why}"));
    }
}

/// The test runs commands with mm's bash: on Windows Git for Windows' (mm's own lookup,
/// `tools.bash.path` aside); when there is none the test is skipped with the reason (under
/// `CI=true` it fails: the Windows job must have Git for Windows).
/// The fence's part of the banner's facts line as this system has it by default: the enforced
/// fence and its network (Linux, macOS); on Windows, which has no fence for commands yet,
/// `(not enforced)` and no network of its own.
pub const FENCE_FACTS: &str = if cfg!(windows) {
    "sandbox workspace-write (not enforced)"
} else {
    "sandbox workspace-write · network allow-list (24 hosts)"
};

/// Whether `line` is the warning a system without a fence for commands (Windows) gives on every
/// run: `warning: sandbox workspace-write: not enforced: …`. Tests about other things leave it
/// out; the banner and doctor tests check it.
pub fn is_fence_gap(line: &str) -> bool {
    line.starts_with("warning: sandbox workspace-write: not enforced")
}

pub fn need_bash() {
    if let Err(why) = mm_tools::program::bash(None) {
        skip(why);
    }
}

/// A path as a TOML string (quoted and escaped: a Windows path's `\` would start an escape).
pub fn toml_string(path: impl AsRef<OsStr>) -> String {
    let text = path.as_ref().to_string_lossy();
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

/// The system's text for the error of opening `path`, which does not exist (Unix: "No such
/// file or directory (os error 2)"; Windows says it its own way, and another for a missing
/// folder).
pub fn open_error(path: &Path) -> String {
    match std::fs::File::open(path) {
        Ok(_) => panic!("{} exists", path.display()),
        Err(e) => e.to_string(),
    }
}

/// `unix` (rooted at `/`) as an absolute path of this system: as it is on Unix; on Windows, where
/// a path without a drive is not absolute, on `C:` (`C:\nowhere`).
pub fn absolute(unix: &str) -> std::path::PathBuf {
    match cfg!(windows) {
        true => format!("C:{}", native(unix)).into(),
        false => unix.into(),
    }
}

/// The system's text for a failed lookup of `host`, as std's resolver (and so mm) reports it.
pub fn lookup_error(host: &str) -> String {
    use std::net::ToSocketAddrs;
    match (host, 80).to_socket_addrs() {
        Ok(_) => panic!("{host} resolves"),
        Err(e) => e.to_string(),
    }
}

/// A path as mm shows it to the model: with `/` separators on Windows too (`C:/Users/u/p`),
/// since the model copies paths into commands Git Bash runs.
pub fn slashed(path: &Path) -> String {
    let text = path.to_string_lossy();
    match cfg!(windows) {
        true => text.replace('\\', "/"),
        false => text.into_owned(),
    }
}

/// `text` with `/` made the system's separator: a path as mm shows it to the user
/// (`~\.config\mm\config.toml` on Windows).
pub fn native(text: &str) -> String {
    text.replace('/', std::path::MAIN_SEPARATOR_STR)
}

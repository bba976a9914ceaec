//! Unix: a child's tree is its process group (a new group, or a new session for `bash`),
//! asked to stop with SIGTERM and killed with SIGKILL; a released child's group is forgotten,
//! so its background jobs run on.

use std::io;
use std::process::ExitStatus;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::process::Command;

use super::Group;

/// Makes the child the leader of a group (or session) of its own.
pub(super) fn prepare(cmd: &mut Command, group: Group) {
    match group {
        Group::Own => {
            cmd.process_group(0);
        }
        Group::Session => {
            // SAFETY: setsid is async-signal-safe and touches no memory of the parent; the
            // child becomes the leader of a new session and process group.
            unsafe {
                cmd.pre_exec(|| nix::unistd::setsid().map(|_| ()).map_err(io::Error::from));
            }
        }
    }
}

/// A child's process group.
#[derive(Debug, Clone)]
pub(super) struct Tree(Pid);

impl Tree {
    /// The group the child leads; `None` when it has already been reaped.
    pub(super) fn of(child: &tokio::process::Child) -> io::Result<Option<Tree>> {
        Ok(child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .map(|id| Tree(Pid::from_raw(id))))
    }

    /// SIGTERM to the group.
    pub(super) fn ask(&self) {
        let _ = killpg(self.0, Signal::SIGTERM);
    }

    /// SIGKILL to the group.
    pub(super) fn kill(&self) {
        let _ = killpg(self.0, Signal::SIGKILL);
    }

    /// Whether a process of the group still runs (signal 0).
    pub(super) fn alive(&self) -> bool {
        killpg(self.0, None).is_ok()
    }
}

/// The signal that ended a process, if one did.
pub fn signal_of(status: &ExitStatus) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt;
    status.signal()
}

/// The read end of a command's output pipe, read asynchronously.
pub type OutputReader = tokio::net::unix::pipe::Receiver;

/// The read end of `io::pipe`, for the runtime.
pub fn output_reader(read_end: io::PipeReader) -> io::Result<OutputReader> {
    OutputReader::from_owned_fd(std::os::fd::OwnedFd::from(read_end))
}

/// What the pipe holds now, without waiting: the raw non-blocking read, since the runtime may
/// not have seen the pipe become readable yet (`WouldBlock` when it holds nothing).
pub fn read_now(reader: &mut OutputReader, buf: &mut [u8]) -> io::Result<usize> {
    Ok(nix::unistd::read(&*reader, buf)?)
}

/// Keeps what mm read from its environment for itself (`vars`: the model server's key,
/// `config::KEY_VARS`) from the user's other processes: each value is wiped in the environment
/// block the process started with (what `/proc/<pid>/environ` shows, however the environment
/// changes later) and the variable removed; on Linux the process is made non-dumpable
/// (`PR_SET_DUMPABLE` 0), so that a process of the same user cannot read its environment or
/// its memory, nor trace it. Root outside the fence still can (docs/sandbox.md, "Limits").
///
/// # Safety
/// No other thread may run: the environment is written.
pub unsafe fn keep_private(vars: &[&str]) {
    unsafe extern "C" {
        static mut environ: *mut *mut libc::c_char;
    }
    // SAFETY: single-threaded (the caller's promise); `environ` is the process's
    // NUL-terminated array of NUL-terminated strings, each writable (the first ones lie in the
    // block the kernel gave the process, the others were copied by `setenv`), and only the
    // bytes of a value are overwritten, within its string.
    unsafe {
        let mut entry = environ;
        while !entry.is_null() && !(*entry).is_null() {
            let text = *entry;
            let bytes = std::ffi::CStr::from_ptr(text).to_bytes();
            if let Some(eq) = bytes.iter().position(|b| *b == b'=')
                && vars.iter().any(|v| v.as_bytes() == &bytes[..eq])
            {
                std::ptr::write_bytes(text.add(eq + 1), 0, bytes.len() - eq - 1);
            }
            entry = entry.add(1);
        }
        for var in vars {
            std::env::remove_var(var);
        }
        #[cfg(target_os = "linux")]
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
    }
}

/// The user's config file, open for the one child that inherits it ([`hand_config`]); closed
/// in mm when dropped, after the spawn.
#[derive(Debug, Default)]
pub struct Handed(#[allow(dead_code, reason = "held open until the spawn")] Option<std::fs::File>);

/// Opens `file` (the user's config file) for the child `cmd` starts: the descriptor, opened
/// close-on-exec as every one of mm's, is made inheritable in that child only (between its
/// `fork` and `exec`), and [`super::CONFIG_FD_VAR`] names it. A missing file hands nothing.
pub fn hand_config(cmd: &mut Command, file: &std::path::Path) -> io::Result<Handed> {
    match std::fs::File::open(file) {
        Ok(open) => Ok(hand_open(cmd, open)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Handed(None)),
        Err(e) => Err(e),
    }
}

/// [`hand_config`] for an mm that was itself handed its user config (an asked mm, whose fence
/// hides the file): `text` goes on to its own asked agent in a file of no name (a memfd on
/// Linux, an unlinked temp file elsewhere), so an agent asked by an asked agent reads the
/// user's config too.
pub fn hand_config_text(cmd: &mut Command, text: &str) -> io::Result<Handed> {
    use std::io::{Seek, Write};
    let mut file = nameless_file()?;
    file.write_all(text.as_bytes())?;
    file.rewind()?;
    Ok(hand_open(cmd, file))
}

#[cfg(target_os = "linux")]
fn nameless_file() -> io::Result<std::fs::File> {
    use nix::sys::memfd::{MFdFlags, memfd_create};
    let fd = memfd_create(c"mm-config", MFdFlags::MFD_CLOEXEC).map_err(io::Error::from)?;
    Ok(std::fs::File::from(fd))
}

#[cfg(not(target_os = "linux"))]
fn nameless_file() -> io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let path = std::env::temp_dir().join(format!(
        "mm-config-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    ));
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)?;
    std::fs::remove_file(&path)?;
    Ok(file)
}

/// `open` inherited by the child `cmd` starts, and named by [`super::CONFIG_FD_VAR`].
fn hand_open(cmd: &mut Command, open: std::fs::File) -> Handed {
    use std::os::fd::AsRawFd;
    let fd = open.as_raw_fd();
    cmd.env(super::CONFIG_FD_VAR, fd.to_string());
    // SAFETY: fcntl is async-signal-safe and touches no memory of the parent; `fd` stays open
    // in mm until the spawn has returned (the caller holds the `Handed`).
    unsafe {
        cmd.pre_exec(move || {
            let flags = libc::fcntl(fd, libc::F_GETFD);
            if flags < 0 || libc::fcntl(fd, libc::F_SETFD, flags & !libc::FD_CLOEXEC) < 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    Handed(Some(open))
}

/// The text of the user's config file when the asking mm handed it ([`hand_config`]): the
/// descriptor [`super::CONFIG_FD_VAR`] names is read and closed, and the variable removed, so
/// nothing mm starts sees either. `None` without the variable, or when it names no regular
/// file past stdio (not a descriptor mm handed: left alone).
///
/// # Safety
/// No other thread may run: the environment is written, and the descriptor taken over.
pub unsafe fn take_handed_config() -> Option<io::Result<String>> {
    use std::io::Read;
    use std::os::fd::{FromRawFd, RawFd};
    let value = std::env::var_os(super::CONFIG_FD_VAR)?;
    // SAFETY: single-threaded (the caller's promise).
    unsafe { std::env::remove_var(super::CONFIG_FD_VAR) };
    let fd: RawFd = value.to_str()?.trim().parse().ok()?;
    if fd <= 2 {
        return None;
    }
    // SAFETY: fstat writes only into `stat`.
    let mut stat: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd, &mut stat) } != 0 || stat.st_mode & libc::S_IFMT != libc::S_IFREG {
        return None;
    }
    // SAFETY: an open descriptor nothing in this process owns yet (nothing has run): the file
    // closes it when dropped.
    let mut file = unsafe { std::fs::File::from_raw_fd(fd) };
    let mut text = String::new();
    Some(file.read_to_string(&mut text).map(|_| text))
}

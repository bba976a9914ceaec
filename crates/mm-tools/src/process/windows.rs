//! Windows: a child's tree is a Job Object of its own, which every process it starts joins.
//!
//! - The child is started in a new process group (`CREATE_NEW_PROCESS_GROUP`) and assigned to
//!   its job right after `CreateProcess` returns. The race is accepted, not closed by spawning
//!   suspended (std gives no handle of the main thread to resume): a process the child starts
//!   before the assignment (microseconds; bash.exe takes milliseconds to start) would be
//!   outside the job. What starts later is inside it.
//! - Asked to stop: CTRL_BREAK to its process group (what a console program takes for Ctrl+C;
//!   without a shared console it reaches nothing). After the grace ([`super::KILL_GRACE`]),
//!   `TerminateJobObject` ends every process in the job.
//! - Released: the job's handle is closed. The job has no `KILL_ON_JOB_CLOSE`, so what the
//!   child left running (the background jobs of a finished `bash` call) runs on, as on Unix.

use std::io;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};
use std::process::ExitStatus;
use std::sync::Arc;

use tokio::process::Command;
use windows_sys::Win32::System::Console::{CTRL_BREAK_EVENT, GenerateConsoleCtrlEvent};
use windows_sys::Win32::System::JobObjects::{
    AssignProcessToJobObject, CreateJobObjectW, JOBOBJECT_BASIC_ACCOUNTING_INFORMATION,
    JobObjectBasicAccountingInformation, QueryInformationJobObject, TerminateJobObject,
};
use windows_sys::Win32::System::Threading::CREATE_NEW_PROCESS_GROUP;

use super::Group;

/// Starts the child in a process group of its own (both kinds: Windows has no sessions).
pub(super) fn prepare(cmd: &mut Command, _group: Group) {
    cmd.creation_flags(CREATE_NEW_PROCESS_GROUP);
}

/// A child's Job Object, and the child's id (its process group's, for CTRL_BREAK).
#[derive(Debug, Clone)]
pub(super) struct Tree {
    job: Arc<OwnedHandle>,
    pid: u32,
}

impl Tree {
    /// A new job with the child in it; `None` when the child has already been reaped.
    pub(super) fn of(child: &tokio::process::Child) -> io::Result<Option<Tree>> {
        let (Some(pid), Some(process)) = (child.id(), child.raw_handle()) else {
            return Ok(None);
        };
        // SAFETY: no name, default security; the handle is owned from here on.
        let raw = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
        if raw.is_null() {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a new handle that nothing else owns.
        let job = unsafe { OwnedHandle::from_raw_handle(raw) };
        // SAFETY: both handles are valid for the call.
        if unsafe { AssignProcessToJobObject(job.as_raw_handle(), process) } == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Some(Tree {
            job: Arc::new(job),
            pid,
        }))
    }

    /// CTRL_BREAK to the child's process group.
    pub(super) fn ask(&self) {
        // SAFETY: plain call; a group that is gone or shares no console makes it fail.
        let _ = unsafe { GenerateConsoleCtrlEvent(CTRL_BREAK_EVENT, self.pid) };
    }

    /// Ends every process in the job.
    pub(super) fn kill(&self) {
        // SAFETY: the job handle is valid while `self` is.
        let _ = unsafe { TerminateJobObject(self.job.as_raw_handle(), 1) };
    }

    /// Whether a process of the job still runs.
    pub(super) fn alive(&self) -> bool {
        let mut info = std::mem::MaybeUninit::<JOBOBJECT_BASIC_ACCOUNTING_INFORMATION>::zeroed();
        let size = std::mem::size_of::<JOBOBJECT_BASIC_ACCOUNTING_INFORMATION>() as u32;
        // SAFETY: `info` is large enough for the class asked for.
        let ok = unsafe {
            QueryInformationJobObject(
                self.job.as_raw_handle(),
                JobObjectBasicAccountingInformation,
                info.as_mut_ptr().cast(),
                size,
                std::ptr::null_mut(),
            )
        };
        // SAFETY: filled by the successful call (and zeroed before).
        ok != 0 && unsafe { info.assume_init() }.ActiveProcesses > 0
    }
}

/// Windows ends no process by a signal.
pub fn signal_of(_status: &ExitStatus) -> Option<i32> {
    None
}

/// The read end of a command's output pipe: Windows' anonymous pipes cannot be read
/// asynchronously, so a thread reads it and hands the bytes over.
#[derive(Debug)]
pub struct OutputReader {
    chunks: std::sync::Mutex<std::sync::mpsc::Receiver<Vec<u8>>>,
    ready: tokio::sync::mpsc::UnboundedReceiver<()>,
    /// What was received and not yet read.
    left: Vec<u8>,
    ended: bool,
}

/// The read end of `io::pipe`, read by a thread of its own until every writer closed it.
pub fn output_reader(mut read_end: io::PipeReader) -> io::Result<OutputReader> {
    use std::io::Read;
    let (tx, rx) = std::sync::mpsc::channel();
    let (wake, ready) = tokio::sync::mpsc::unbounded_channel();
    std::thread::Builder::new()
        .name("mm-output".into())
        .spawn(move || {
            let mut buf = vec![0u8; 16 * 1024];
            loop {
                match read_end.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if tx.send(buf[..n].to_vec()).is_err() {
                            break;
                        }
                        let _ = wake.send(());
                    }
                }
            }
            // Dropping both senders tells the reader the output ended.
        })?;
    Ok(OutputReader {
        chunks: std::sync::Mutex::new(rx),
        ready,
        left: Vec::new(),
        ended: false,
    })
}

impl OutputReader {
    /// Moves what the thread sent into `left`; whether the output ended.
    fn gather(&mut self) -> bool {
        let Ok(chunks) = self.chunks.lock() else {
            return true;
        };
        loop {
            match chunks.try_recv() {
                Ok(chunk) => self.left.extend_from_slice(&chunk),
                Err(std::sync::mpsc::TryRecvError::Empty) => return false,
                Err(std::sync::mpsc::TryRecvError::Disconnected) => return true,
            }
        }
    }

    fn hand_out(&mut self, buf: &mut [u8]) -> usize {
        let n = buf.len().min(self.left.len());
        buf[..n].copy_from_slice(&self.left[..n]);
        self.left.drain(..n);
        n
    }
}

impl tokio::io::AsyncRead for OutputReader {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        use std::task::Poll;
        loop {
            let ended = self.gather();
            if !self.left.is_empty() {
                let n = self.hand_out(buf.initialize_unfilled());
                buf.advance(n);
                return Poll::Ready(Ok(()));
            }
            if ended || self.ended {
                self.ended = true;
                return Poll::Ready(Ok(()));
            }
            match self.ready.poll_recv(cx) {
                Poll::Ready(Some(())) => continue,
                // The thread is gone: what it sent is gathered on the next turn.
                Poll::Ready(None) => self.ended = self.gather(),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

/// What the pipe holds now, without waiting (`WouldBlock` when it holds nothing).
pub fn read_now(reader: &mut OutputReader, buf: &mut [u8]) -> io::Result<usize> {
    let ended = reader.gather();
    if !reader.left.is_empty() {
        return Ok(reader.hand_out(buf));
    }
    match ended {
        true => Ok(0),
        false => Err(io::ErrorKind::WouldBlock.into()),
    }
}

/// Removes what mm read from its environment for itself (`vars`) from the environment. Windows
/// keeps the block the process started with in its own memory, which the user's other
/// processes can read: nothing more is promised there (docs/sandbox.md, "Limits").
///
/// # Safety
/// No other thread may run: the environment is written.
pub unsafe fn keep_private(vars: &[&str]) {
    for var in vars {
        // SAFETY: single-threaded (the caller's promise).
        unsafe { std::env::remove_var(var) };
    }
}

/// Nothing to hand: Windows has no fence, so the user's config file is not hidden from an
/// asked agent (docs/sandbox.md).
#[derive(Debug, Default)]
pub struct Handed;

/// Hands nothing (the agent reads the file itself).
pub fn hand_config(_cmd: &mut Command, _file: &std::path::Path) -> io::Result<Handed> {
    Ok(Handed)
}

/// Hands nothing (never handed a config on Windows, nothing to hand on).
pub fn hand_config_text(_cmd: &mut Command, _text: &str) -> io::Result<Handed> {
    Ok(Handed)
}

/// Never handed on Windows.
///
/// # Safety
/// None needed; unsafe as on Unix, where the environment is written.
pub unsafe fn take_handed_config() -> Option<io::Result<String>> {
    None
}

//! The kernel's side of the sandbox: a [`Fence`] is built in mm's process (a Landlock ruleset,
//! the plan of a private mount namespace, root's capability cut, the seccomp filter), handed to
//! [`Supervisor::spawn`](crate::process::Supervisor::spawn), and entered by the
//! child between `fork` and `exec` ([`Fence::enter`]), so that the program and every descendant
//! run inside it.
//!
//! Entering only makes system calls on memory prepared beforehand: no allocation, no lock, as
//! the child of a multi-threaded process requires.

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use landlock::{
    ABI, Access, AccessFs, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreatedAttr, Scope,
};

use super::namespace::Joined;
use super::sys::{FenceError, check};
use super::{caps, devpts, seccomp};
use crate::config::SandboxMode;
use crate::sandbox::held::Held;
use crate::sandbox::paths::DEVICE_FILES;
use mm_core::sandbox_report::FENCED_VAR;

/// The newest Landlock ABI whose write rights the fence handles (`Refer` came with 2,
/// `Truncate` with 3, `IoctlDev` with 5; later ABIs add no right that writes a file).
const RIGHTS_ABI: ABI = ABI::V5;

/// Every right that changes a file or a folder (all handled, so all refused but where granted).
fn write_rights() -> BitFlags<AccessFs> {
    AccessFs::from_write(RIGHTS_ABI)
}

/// What a writable root grants: every write but making device files, which nothing in a
/// workspace needs and which as root would give raw access to a disk.
fn root_rights() -> BitFlags<AccessFs> {
    write_rights() & !(AccessFs::MakeBlock | AccessFs::MakeChar)
}

/// The rights that apply to a file itself: writing, truncating, device ioctls.
fn file_write_rights() -> BitFlags<AccessFs> {
    AccessFs::from_write(RIGHTS_ABI) & AccessFs::from_file(RIGHTS_ABI)
}

/// Where a fenced command's terminals come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Pts {
    /// A private `devpts` in the child's namespace, writable.
    Private,
    /// `/dev/pts` as it is, writable: mm runs inside an outer fence, whose own private
    /// `devpts` it is (or which refuses it).
    Outer,
    /// Not writable (no namespace to make a private one in).
    Closed,
}

/// What one fenced child will enter: built in the parent, entered in the child.
#[derive(Debug)]
pub struct Fence {
    mode: SandboxMode,
    /// The Landlock ruleset; `None` when the kernel has no Landlock.
    ruleset: Option<OwnedFd>,
    /// The rights of the rule the child adds for its private `devpts` (as the kernel knows
    /// them: within what the ruleset handles).
    pts_rights: u64,
    /// The private mount namespace the child joins; `None` when there is nothing to mount or
    /// the kernel does not let mm make one.
    namespace: Option<Arc<Joined>>,
    /// Root's capabilities, cut after the mounts; `None` when mm is not root.
    caps: Option<caps::Cut>,
    /// The seccomp filter; `None` where there is none for the architecture.
    seccomp: Option<seccomp::Filter>,
}

/// The Landlock ABI of the running kernel (0: no Landlock), asked once.
pub fn landlock_abi() -> i32 {
    static ABI_VERSION: OnceLock<i32> = OnceLock::new();
    *ABI_VERSION.get_or_init(|| {
        // SAFETY: LANDLOCK_CREATE_RULESET_VERSION with a null attribute and size 0 only returns
        // the ABI version (or fails); nothing is read or written.
        let v = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                std::ptr::null::<u8>(),
                0usize,
                1u32, // LANDLOCK_CREATE_RULESET_VERSION
            )
        };
        i32::try_from(v).unwrap_or(0).max(0)
    })
}

/// What the ruleset allows and what the namespace mounts.
pub(super) struct Plan<'a> {
    pub mode: SandboxMode,
    /// Folders (or files) under which everything may be written, opened now.
    pub writable: &'a [PathBuf],
    /// The same, opened at start.
    pub held: &'a [&'a Held],
    /// The private mount namespace to join (made by the sandbox, once per plan).
    pub namespace: Option<Arc<Joined>>,
    pub pts: Pts,
}

impl Fence {
    /// Builds the ruleset and the namespace plan in mm's process. Paths that do not exist are
    /// left out (there is nothing there to write).
    pub(super) fn build(plan: &Plan<'_>) -> Result<Fence, FenceError> {
        let abi = landlock_abi();
        let ruleset = if abi > 0 {
            let mut rs = Ruleset::default()
                .set_compatibility(CompatLevel::BestEffort)
                .handle_access(write_rights())?
                // Abstract unix sockets made outside (ABI 6): a session bus, a debugger, an
                // X server. Signals stay open: scoping them would stop one call from ending
                // the server an earlier call left running (docs/sandbox.md).
                .scope(Scope::AbstractUnixSocket)?
                .create()?;
            for path in plan.writable {
                if let Some(fd) = open_path(path)? {
                    rs = rs.add_rule(PathBeneath::new(fd, root_rights()))?;
                }
            }
            for held in plan.held {
                rs = rs.add_rule(PathBeneath::new(held.fd(), root_rights()))?;
            }
            let outer_pts = (plan.pts == Pts::Outer).then_some(devpts_path());
            for dev in DEVICE_FILES.iter().map(Path::new).chain(outer_pts) {
                if let Some(fd) = open_path(dev)? {
                    rs = rs.add_rule(PathBeneath::new(fd, file_write_rights()))?;
                }
            }
            Option::<OwnedFd>::from(rs)
        } else {
            None
        };
        Ok(Fence {
            mode: plan.mode,
            ruleset,
            pts_rights: (file_write_rights() & AccessFs::from_all(ABI::from(abi))).bits(),
            namespace: plan.namespace.clone(),
            caps: caps::Cut::for_this_process(),
            seccomp: seccomp::filter().ok(),
        })
    }

    /// The value of [`FENCED_VAR`] in the child's environment: the mode.
    pub fn marker(&self) -> &'static str {
        self.mode.name()
    }

    /// The command that runs `program` (the program itself: the fence is entered before
    /// `exec`, [`Fence::apply`]).
    pub fn command(&self, program: &std::ffi::OsStr) -> tokio::process::Command {
        tokio::process::Command::new(program)
    }

    /// Makes `cmd` enter the fence between `fork` and `exec`, with [`FENCED_VAR`] set to the
    /// mode in its environment.
    pub(crate) fn apply(self, cmd: &mut tokio::process::Command) {
        cmd.env(FENCED_VAR, self.marker());
        if let Some(proxy) = self.namespace.as_deref().and_then(Joined::proxy) {
            cmd.envs(proxy.env("localhost,127.0.0.1,::1"));
        }
        // SAFETY: `Fence::enter` only makes system calls on memory prepared before the fork
        // (no allocation, no lock).
        unsafe {
            cmd.pre_exec(move || self.enter());
        }
    }

    /// Enters the fence: the private mount namespace with its mounts, root's capability cut
    /// (after the mounts, which need `CAP_SYS_ADMIN`), `no_new_privs`, the Landlock ruleset
    /// (after the mounts: Landlock forbids mounting), and the seccomp filter.
    /// Runs in the child between `fork` and `exec`: system calls only, on memory prepared by
    /// [`Fence::build`].
    pub(crate) fn enter(&self) -> io::Result<()> {
        // SAFETY: every step is async-signal-safe on memory prepared by `build`.
        unsafe {
            if let Some(ns) = &self.namespace {
                ns.enter()?;
            }
            if let Some(cut) = &self.caps {
                cut.apply()?;
            }
            check(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))?;
            if let Some(fd) = &self.ruleset {
                if self.namespace.as_deref().is_some_and(Joined::devpts) {
                    add_rule_here(fd, devpts::PTS, self.pts_rights)?;
                }
                check(
                    libc::syscall(libc::SYS_landlock_restrict_self, fd.as_raw_fd(), 0u32)
                        as libc::c_int,
                )?;
            }
            if let Some(filter) = &self.seccomp {
                filter.install()?;
            }
        }
        Ok(())
    }
}

fn devpts_path() -> &'static Path {
    Path::new("/dev/pts")
}

/// `struct landlock_path_beneath_attr`.
#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: libc::c_int,
}

/// Adds a rule for `path` as this process sees it (the child's private `devpts`, which mm's
/// process cannot open).
///
/// # Safety
/// Async-signal-safe: open, one Landlock call and close, on the stack.
unsafe fn add_rule_here(ruleset: &OwnedFd, path: &CStr, access: u64) -> io::Result<()> {
    // SAFETY: `path` is NUL-terminated; the attribute lives on the stack for the call.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_PATH | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let attr = PathBeneathAttr {
            allowed_access: access,
            parent_fd: fd,
        };
        let r = libc::syscall(
            libc::SYS_landlock_add_rule,
            ruleset.as_raw_fd(),
            1u32, // LANDLOCK_RULE_PATH_BENEATH
            &attr as *const PathBeneathAttr,
            0u32,
        );
        let result = if r < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        };
        libc::close(fd);
        result
    }
}

/// An `O_PATH` descriptor of `path`, `None` when it does not exist.
fn open_path(path: &Path) -> Result<Option<PathFd>, FenceError> {
    if std::fs::symlink_metadata(path).is_err() {
        return Ok(None);
    }
    PathFd::new(path).map(Some).map_err(|e| FenceError::Open {
        path: path.to_path_buf(),
        source: io::Error::other(e.to_string()),
    })
}

//! The kernel's side of the sandbox: a [`Fence`] is built in mm's process (a Landlock ruleset,
//! and the paths a private mount namespace keeps read-only), handed to
//! [`Supervisor::spawn_fenced`](crate::process::Supervisor::spawn_fenced), and entered by the
//! child between `fork` and `exec` ([`Fence::enter`]), so that the program and every descendant
//! run inside it.
//!
//! Entering only makes system calls on memory prepared beforehand: no allocation, no lock, as
//! the child of a multi-threaded process requires.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use landlock::{
    ABI, AccessFs, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr,
};

/// The newest Landlock ABI whose write rights the fence handles (`Refer` came with 2,
/// `Truncate` with 3, `IoctlDev` with 5; later ABIs add no right that writes a file).
const RIGHTS_ABI: ABI = ABI::V5;

/// Device files a shell needs, writable even in `read-only`.
const DEVICE_FILES: [&str; 5] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/ptmx",
];
/// Device folders whose files a shell needs (terminals).
const DEVICE_DIRS: [&str; 1] = ["/dev/pts"];

/// Every right that changes a file or a folder.
fn write_rights() -> BitFlags<AccessFs> {
    AccessFs::from_write(RIGHTS_ABI)
}

/// The rights that apply to a file itself: writing, truncating, device ioctls.
fn file_write_rights() -> BitFlags<AccessFs> {
    AccessFs::from_write(RIGHTS_ABI) & AccessFs::from_file(RIGHTS_ABI)
}

/// Why a fence could not be built.
#[derive(Debug, thiserror::Error)]
pub enum FenceError {
    #[error("cannot build the Landlock ruleset: {0}")]
    Ruleset(#[from] landlock::RulesetError),
    #[error("cannot open {}: {source}", path.display())]
    Open { path: PathBuf, source: io::Error },
}

/// What one fenced child will enter: built in the parent, entered in the child.
#[derive(Debug)]
pub struct Fence {
    /// The Landlock ruleset; `None` when the kernel has no Landlock.
    ruleset: Option<OwnedFd>,
    /// A private mount namespace keeping some paths read-only; `None` when there are none or
    /// the kernel does not let mm make one.
    namespace: Option<Namespace>,
}

#[derive(Debug)]
struct Namespace {
    /// The uid and gid maps of a user namespace, needed to mount without being root; `None`
    /// for root, which needs no user namespace.
    user: Option<UserMaps>,
    readonly: Vec<ReadOnly>,
}

#[derive(Debug)]
struct UserMaps {
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
}

#[derive(Debug)]
struct ReadOnly {
    path: CString,
    /// The flags of the mount the path lies in that a remount must keep (`nosuid`, `nodev`,
    /// `noexec`: a user namespace may not drop them).
    keep: libc::c_ulong,
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

/// Whether a private mount namespace with a read-only bind works here: tried once, in a child
/// that enters such a fence and exits before running anything. `Err` says why not.
pub fn namespace_works() -> Result<(), String> {
    static WORKS: OnceLock<Result<(), String>> = OnceLock::new();
    WORKS.get_or_init(probe_namespace).clone()
}

fn probe_namespace() -> Result<(), String> {
    use std::os::unix::process::CommandExt;
    let fence = Fence {
        ruleset: None,
        namespace: Some(Namespace::new(&[PathBuf::from("/")]).map_err(|e| e.to_string())?),
    };
    // Not a supervised child: it never runs a program (it exits inside the fork, right after
    // entering the fence) and is waited for here, so nothing can outlive it.
    let mut cmd = std::process::Command::new("/");
    // SAFETY: `enter` only makes system calls on memory prepared before the fork, and `_exit`
    // is async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            fence.enter()?;
            libc::_exit(0)
        });
    }
    cmd.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    match cmd.spawn() {
        Ok(mut child) => match child.wait() {
            Ok(s) if s.success() => Ok(()),
            Ok(s) => Err(format!("the probe ended with {s}")),
            Err(e) => Err(e.to_string()),
        },
        Err(e) => Err(e.to_string()),
    }
}

impl Namespace {
    fn new(readonly: &[PathBuf]) -> Result<Self, FenceError> {
        // SAFETY: geteuid and getegid cannot fail and touch no memory.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        let user = if uid == 0 {
            None
        } else {
            Some(UserMaps {
                uid_map: format!("{uid} {uid} 1\n").into_bytes(),
                gid_map: format!("{gid} {gid} 1\n").into_bytes(),
            })
        };
        let mut paths = Vec::new();
        for p in readonly {
            let open_err = |source: io::Error| FenceError::Open {
                path: p.clone(),
                source,
            };
            let vfs = nix::sys::statvfs::statvfs(p).map_err(|e| open_err(e.into()))?;
            let f = vfs.flags();
            use nix::sys::statvfs::FsFlags;
            let mut keep: libc::c_ulong = 0;
            for (st, ms) in [
                (FsFlags::ST_NOSUID, libc::MS_NOSUID),
                (FsFlags::ST_NODEV, libc::MS_NODEV),
                (FsFlags::ST_NOEXEC, libc::MS_NOEXEC),
            ] {
                if f.contains(st) {
                    keep |= ms;
                }
            }
            let path = CString::new(p.as_os_str().as_bytes())
                .map_err(|e| open_err(io::Error::new(io::ErrorKind::InvalidInput, e)))?;
            paths.push(ReadOnly { path, keep });
        }
        Ok(Namespace {
            user,
            readonly: paths,
        })
    }
}

/// What the ruleset allows, besides the device files.
pub(super) struct Plan<'a> {
    /// Folders (or files) under which everything may be written.
    pub writable: &'a [PathBuf],
    /// Paths under `writable` kept read-only (they exist).
    pub readonly: &'a [PathBuf],
    /// Make the private mount namespace for `readonly`.
    pub namespace: bool,
}

impl Fence {
    /// Builds the ruleset and the namespace plan in mm's process. Paths that do not exist are
    /// left out (there is nothing there to write).
    pub(super) fn build(plan: &Plan<'_>) -> Result<Fence, FenceError> {
        let ruleset = if landlock_abi() > 0 {
            let mut rs = Ruleset::default()
                .set_compatibility(CompatLevel::BestEffort)
                .handle_access(write_rights())?
                .create()?;
            for path in plan.writable {
                if let Some(fd) = open_path(path)? {
                    rs = rs.add_rule(PathBeneath::new(fd, write_rights()))?;
                }
            }
            for dev in DEVICE_FILES.iter().chain(DEVICE_DIRS.iter()) {
                if let Some(fd) = open_path(Path::new(dev))? {
                    rs = rs.add_rule(PathBeneath::new(fd, file_write_rights()))?;
                }
            }
            Option::<OwnedFd>::from(rs)
        } else {
            None
        };
        let namespace = if plan.namespace && !plan.readonly.is_empty() {
            Some(Namespace::new(plan.readonly)?)
        } else {
            None
        };
        Ok(Fence { ruleset, namespace })
    }

    /// Enters the fence: the private mount namespace with its read-only paths, then
    /// `no_new_privs` and the Landlock ruleset (after the mounts: Landlock forbids mounting).
    /// Runs in the child between `fork` and `exec`: system calls only, on memory prepared by
    /// [`Fence::build`].
    pub(crate) fn enter(&self) -> io::Result<()> {
        if let Some(ns) = &self.namespace {
            let flags = match ns.user {
                Some(_) => libc::CLONE_NEWUSER | libc::CLONE_NEWNS,
                None => libc::CLONE_NEWNS,
            };
            // SAFETY: plain system calls on NUL-terminated strings owned by `self`.
            unsafe {
                check(libc::unshare(flags))?;
                if let Some(maps) = &ns.user {
                    // Without `deny`, an unprivileged process may not write its gid map; a
                    // kernel older than 3.19 has no such file and needs none.
                    match write_proc(c"/proc/self/setgroups", b"deny") {
                        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {}
                        other => other?,
                    }
                    write_proc(c"/proc/self/uid_map", &maps.uid_map)?;
                    write_proc(c"/proc/self/gid_map", &maps.gid_map)?;
                }
                // Nothing mounted here may reach the namespace it came from.
                check(libc::mount(
                    std::ptr::null(),
                    c"/".as_ptr(),
                    std::ptr::null(),
                    libc::MS_SLAVE | libc::MS_REC,
                    std::ptr::null(),
                ))?;
                for ro in &ns.readonly {
                    check(libc::mount(
                        ro.path.as_ptr(),
                        ro.path.as_ptr(),
                        std::ptr::null(),
                        libc::MS_BIND,
                        std::ptr::null(),
                    ))?;
                    check(libc::mount(
                        std::ptr::null(),
                        ro.path.as_ptr(),
                        std::ptr::null(),
                        libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY | ro.keep,
                        std::ptr::null(),
                    ))?;
                }
            }
        }
        // SAFETY: prctl and the Landlock system call take integers only.
        unsafe {
            check(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))?;
            if let Some(fd) = &self.ruleset {
                check(
                    libc::syscall(libc::SYS_landlock_restrict_self, fd.as_raw_fd(), 0u32)
                        as libc::c_int,
                )?;
            }
        }
        Ok(())
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

fn check(ret: libc::c_int) -> io::Result<()> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Writes `bytes` to a file of `/proc/self` (one `write`, as those files require).
///
/// # Safety
/// Async-signal-safe: open, write and close on caller-owned memory.
unsafe fn write_proc(path: &std::ffi::CStr, bytes: &[u8]) -> io::Result<()> {
    // SAFETY: `path` is NUL-terminated; `bytes` is valid for its length.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let n = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
        let result = if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        };
        libc::close(fd);
        result
    }
}

//! A fenced child's private mount namespace (a user namespace first when mm is not root): the
//! protected paths mounted read-only onto themselves, the folders between a writable root and a
//! protected path bound onto themselves so that they cannot be renamed or removed (a mount
//! point answers EBUSY), the hidden places covered (an empty read-only `tmpfs` on a folder, an
//! empty read-only file bound on anything else: a file, a socket), and a private `devpts`.
//! Landlock, entered afterwards, forbids mounting, so the command cannot undo any of it, and
//! the mounts exist only in the fenced namespace.
//!
//! Making a mount namespace and tearing it down costs most of the fence (a copy of the mount
//! table, and a wait for the kernel's RCU when the last process leaves it), so a namespace is
//! made once per plan ([`Namespace::make`]: in a helper child, then held by descriptor) and each
//! fenced child joins it ([`Joined::enter`]).

use std::collections::BTreeMap;
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::OnceLock;

use super::forward::{Forwards, Port};
use super::sys::{FenceError, check, write_proc};
use super::{devpts, net};
use crate::sandbox::network::Door;
use crate::sandbox::passage::PassageKey;
use crate::sandbox::proxy::Proxy;

/// Where the file hidden files are covered with is made: a `tmpfs` mounted for the time of the
/// mounts on the first of these folders that holds no mounted path, unmounted afterwards (the
/// binds of its file keep it alive, unreachable but through them).
const SCRATCH: [&str; 3] = ["/proc", "/sys", "/dev"];
/// The flags of the empty file's mount, kept by its read-only remount.
const EMPTY_FLAGS: libc::c_ulong = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;

#[derive(Debug)]
pub struct Namespace {
    /// The uid and gid maps of a user namespace, needed to mount without being root; `None`
    /// for root, which needs no user namespace.
    user: Option<UserMaps>,
    /// In mount order: a folder before what lies in it.
    mounts: Vec<Mount>,
    /// Where the empty file is made (`tmpfs` mount point, file) when a file is hidden.
    scratch: Option<(CString, CString)>,
    devpts: bool,
    /// A network namespace of its own too (`linux/net.rs`), and whether mm's proxy is its way
    /// out.
    net: Option<Net>,
}

/// The network namespace a [`Namespace`] makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Net {
    /// Only its loopback (`tools.network = "none"`).
    Closed,
    /// Its loopback and a listener for mm's proxy on it.
    Proxied,
}

#[derive(Debug)]
struct UserMaps {
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
}

#[derive(Debug)]
struct Mount {
    path: CString,
    kind: Kind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Bound onto itself, writable as before: it can no longer be renamed away.
    Pin,
    /// Bound onto itself read-only, keeping the flags of the mount the path lies in that a
    /// remount must keep (`nosuid`, `nodev`, `noexec`: a user namespace may not drop them).
    ReadOnly { keep: libc::c_ulong },
    /// A hidden folder: an empty, read-only `tmpfs` over it.
    HiddenFolder,
    /// A hidden file (or socket): an empty regular file bound over it, read-only, so that it
    /// reads as empty and a write fails (`EROFS`).
    HiddenFile,
}

impl Namespace {
    /// `readonly`: paths kept read-only; `pins`: folders kept in place; `hidden`: places
    /// covered, with whether each is a folder; `devpts`: mount a private one. The paths exist,
    /// and none lies under a hidden place.
    pub fn new(
        readonly: &[PathBuf],
        pins: &[PathBuf],
        hidden: &[(PathBuf, bool)],
        devpts: bool,
    ) -> Result<Self, FenceError> {
        // SAFETY: geteuid and getegid cannot fail and touch no memory.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        let user = (uid != 0).then(|| UserMaps {
            uid_map: format!("{uid} {uid} 1\n").into_bytes(),
            gid_map: format!("{gid} {gid} 1\n").into_bytes(),
        });
        // Sorted by components, a folder comes before what lies in it: a pin mounted after a
        // read-only path inside it would hide it.
        let mut kinds: BTreeMap<PathBuf, Kind> = BTreeMap::new();
        for p in pins {
            kinds.insert(p.clone(), Kind::Pin);
        }
        for p in readonly {
            kinds.insert(
                p.clone(),
                Kind::ReadOnly {
                    keep: keep_flags(p)?,
                },
            );
        }
        for (p, folder) in hidden {
            let kind = match folder {
                true => Kind::HiddenFolder,
                false => Kind::HiddenFile,
            };
            kinds.insert(p.clone(), kind);
        }
        let scratch = match kinds.values().any(|k| *k == Kind::HiddenFile) {
            true => Some(scratch(kinds.keys())?),
            false => None,
        };
        let mut mounts = Vec::new();
        for (p, kind) in kinds {
            let path = CString::new(p.as_os_str().as_bytes()).map_err(|e| FenceError::Open {
                path: p.clone(),
                source: io::Error::new(io::ErrorKind::InvalidInput, e),
            })?;
            mounts.push(Mount { path, kind });
        }
        Ok(Namespace {
            user,
            mounts,
            scratch,
            devpts,
            net: None,
        })
    }

    /// The same, with a network namespace of its own.
    pub fn with_network(mut self, net: Option<Net>) -> Self {
        self.net = net;
        self
    }

    /// Makes the namespace in a helper child (forked, never running a program) and holds it by
    /// descriptor.
    pub fn make(&self) -> io::Result<Joined> {
        // Close-on-exec: a child spawned meanwhile by another thread must not hold them open.
        let pipe = || nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(io::Error::from);
        let (ready_r, ready_w) = pipe()?;
        let (done_r, done_w) = pipe()?;
        // The proxy's listener comes back over a unix socket (`SCM_RIGHTS`).
        let channel = match self.net {
            Some(Net::Proxied) => Some(net::socket_pair()?),
            _ => None,
        };
        let sender = channel.as_ref().map_or(-1, |(_, child)| child.as_raw_fd());
        // SAFETY: the child only makes async-signal-safe system calls on memory prepared here
        // (`enter`, write, read, `_exit`), as the child of a multi-threaded process must.
        let pid = match unsafe { nix::unistd::fork() }.map_err(io::Error::from)? {
            nix::unistd::ForkResult::Child => unsafe {
                // Keep only its own two pipes (and its end of the channel): another thread's
                // helper must not wait on an end this one holds.
                let mut keep = [ready_w.as_raw_fd(), done_r.as_raw_fd(), sender];
                keep.sort_unstable();
                let mut first: libc::c_uint = 3;
                for fd in keep.into_iter().filter(|fd| *fd >= 3) {
                    let fd = fd as libc::c_uint;
                    if first < fd {
                        libc::syscall(libc::SYS_close_range, first, fd - 1, 0u32);
                    }
                    first = fd + 1;
                }
                libc::syscall(libc::SYS_close_range, first, !0 as libc::c_uint, 0u32);
                let mut entered = self.enter().is_ok();
                if entered && sender >= 0 {
                    entered = match net::listen_loopback() {
                        Ok(listener) => net::send_fd(sender, listener).is_ok(),
                        Err(_) => false,
                    };
                }
                let ok: u8 = if entered { 1 } else { 0 };
                libc::write(ready_w.as_raw_fd(), (&ok as *const u8).cast(), 1);
                let mut byte = 0u8;
                libc::read(done_r.as_raw_fd(), (&mut byte as *mut u8).cast(), 1);
                libc::_exit(0)
            },
            nix::unistd::ForkResult::Parent { child } => child,
        };
        drop(ready_w);
        drop(done_r);
        let mut ok = [0u8; 1];
        let held = match nix::unistd::read(&ready_r, &mut ok) {
            Ok(1) if ok[0] == 1 => self.hold(pid).and_then(|mut joined| {
                if let Some((mine, _)) = &channel {
                    joined.listener = Some(net::recv_fd(mine)?);
                }
                Ok(joined)
            }),
            Ok(_) => Err(io::Error::other("the namespace could not be made")),
            Err(e) => Err(io::Error::from(e)),
        };
        // The helper's end: it exits, the namespace lives on in the descriptors. A byte, not
        // the pipe's end: a process forked meanwhile may hold a copy of this end.
        let _ = nix::unistd::write(&done_w, b"x");
        drop(done_w);
        let _ = nix::sys::wait::waitpid(pid, None);
        held
    }

    fn hold(&self, pid: nix::unistd::Pid) -> io::Result<Joined> {
        let open = |name: &str| -> io::Result<OwnedFd> {
            let path = CString::new(format!("/proc/{pid}/ns/{name}"))
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
            // SAFETY: a NUL-terminated path; the descriptor is owned at once.
            let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
            if fd < 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: `fd` was just opened and is owned by nothing else.
            Ok(unsafe { OwnedFd::from_raw_fd(fd) })
        };
        Ok(Joined {
            user: match self.user {
                Some(_) => Some(open("user")?),
                None => None,
            },
            mnt: open("mnt")?,
            net: match self.net {
                Some(_) => Some(open("net")?),
                None => None,
            },
            devpts: self.devpts,
            listener: None,
            proxy: None,
            forwards: None,
        })
    }

    /// Enters a new namespace and makes its mounts (in the helper of [`Namespace::make`], and
    /// in the probe; fenced children join the result).
    ///
    /// # Safety
    /// Async-signal-safe: system calls on memory prepared by [`Namespace::new`] and the stack
    /// only, so it may run between `fork` and `exec`.
    pub unsafe fn enter(&self) -> io::Result<()> {
        let flags = match self.user {
            Some(_) => libc::CLONE_NEWUSER | libc::CLONE_NEWNS,
            None => libc::CLONE_NEWNS,
        } | match self.net {
            Some(_) => libc::CLONE_NEWNET,
            None => 0,
        };
        // SAFETY: plain system calls on NUL-terminated strings owned by `self` or static.
        unsafe {
            if self.user.is_some() {
                // A fork of mm, which is not dumpable (`process::keep_private`): as such, its
                // `/proc/self/uid_map` would be root's, and mm could not open its namespaces.
                // It never runs a program and lives until mm holds them; a fenced command
                // cannot reach it (Landlock refuses tracing a process outside the domain).
                check(libc::prctl(libc::PR_SET_DUMPABLE, 1, 0, 0, 0))?;
            }
            check(libc::unshare(flags))?;
            if let Some(maps) = &self.user {
                // Without `deny`, an unprivileged process may not write its gid map; a kernel
                // older than 3.19 has no such file and needs none.
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
            if let Some((dir, file)) = &self.scratch {
                check(libc::mount(
                    c"tmpfs".as_ptr(),
                    dir.as_ptr(),
                    c"tmpfs".as_ptr(),
                    EMPTY_FLAGS,
                    c"mode=0700,size=4k".as_ptr().cast(),
                ))?;
                let fd = libc::open(
                    file.as_ptr(),
                    libc::O_CREAT | libc::O_EXCL | libc::O_WRONLY | libc::O_CLOEXEC,
                    0o444 as libc::c_uint,
                );
                check(fd)?;
                libc::close(fd);
            }
            for m in &self.mounts {
                match m.kind {
                    Kind::Pin | Kind::ReadOnly { .. } => {
                        // Recursive: a user namespace refuses to bind a folder without the
                        // mounts inside it (they would uncover what they hide), and what is
                        // mounted inside stays visible.
                        check(libc::mount(
                            m.path.as_ptr(),
                            m.path.as_ptr(),
                            std::ptr::null(),
                            libc::MS_BIND | libc::MS_REC,
                            std::ptr::null(),
                        ))?;
                    }
                    Kind::HiddenFolder => {
                        check(libc::mount(
                            c"tmpfs".as_ptr(),
                            m.path.as_ptr(),
                            c"tmpfs".as_ptr(),
                            libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                            c"mode=0555,size=4k".as_ptr().cast(),
                        ))?;
                    }
                    Kind::HiddenFile => {
                        let Some((_, empty)) = &self.scratch else {
                            return Err(io::Error::from_raw_os_error(libc::EINVAL));
                        };
                        check(libc::mount(
                            empty.as_ptr(),
                            m.path.as_ptr(),
                            std::ptr::null(),
                            libc::MS_BIND,
                            std::ptr::null(),
                        ))?;
                    }
                }
                let keep = match m.kind {
                    Kind::ReadOnly { keep } => Some(keep),
                    Kind::HiddenFile => Some(EMPTY_FLAGS),
                    Kind::Pin | Kind::HiddenFolder => None,
                };
                if let Some(keep) = keep {
                    check(libc::mount(
                        std::ptr::null(),
                        m.path.as_ptr(),
                        std::ptr::null(),
                        libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY | keep,
                        std::ptr::null(),
                    ))?;
                }
            }
            if let Some((dir, _)) = &self.scratch {
                check(libc::umount2(dir.as_ptr(), libc::MNT_DETACH))?;
            }
            if self.devpts {
                devpts::mount_private()?;
            }
            if self.net.is_some() {
                net::lo_up()?;
            }
        }
        Ok(())
    }
}

/// A namespace made once ([`Namespace::make`]), that fenced children join.
#[derive(Debug)]
pub struct Joined {
    /// The user namespace it belongs to when mm is not root.
    user: Option<OwnedFd>,
    mnt: OwnedFd,
    /// Its network namespace, when it has one of its own.
    net: Option<OwnedFd>,
    devpts: bool,
    /// The listener the helper bound for mm's proxy, until [`Joined::serve`] takes it.
    listener: Option<OwnedFd>,
    /// mm's proxy, the namespace's way out; stopped with the namespace.
    proxy: Option<Proxy>,
    /// The ports forwarded between the host's loopback and the namespace's; stopped with it.
    forwards: Option<Forwards>,
}

impl Joined {
    /// Starts mm's proxy on the listener the helper bound (nothing when it bound none).
    pub fn serve(&mut self, door: Door, passage: PassageKey) -> io::Result<()> {
        if let Some(fd) = self.listener.take() {
            self.proxy = Some(Proxy::start(
                std::net::TcpListener::from(fd),
                door,
                passage,
            )?);
        }
        Ok(())
    }

    /// mm's proxy, when it is the namespace's way out.
    pub fn proxy(&self) -> Option<&Proxy> {
        self.proxy.as_ref()
    }

    /// Forwards `ports` between the host's loopback and the namespace's (nothing when it has
    /// no network of its own, or no port is asked for). A port that cannot be bound is no
    /// error: [`Forwards::start`] says so in the log.
    pub fn forward(&mut self, ports: &[Port]) -> io::Result<()> {
        if let (Some(net), false) = (&self.net, ports.is_empty()) {
            let user = match &self.user {
                Some(u) => Some(u.try_clone()?),
                None => None,
            };
            let inside = Inside {
                user,
                net: net.try_clone()?,
            };
            self.forwards = Some(Forwards::start(inside, ports)?);
        }
        Ok(())
    }

    /// Whether it holds a private `devpts`.
    pub fn devpts(&self) -> bool {
        self.devpts
    }

    /// Joins the namespace, and enters the cwd again (joining a mount namespace moves the
    /// caller to its root) through its mounts.
    ///
    /// # Safety
    /// Async-signal-safe: system calls on descriptors held by `self` and the stack only.
    pub unsafe fn enter(&self) -> io::Result<()> {
        // SAFETY: plain system calls; `buf` lives on the stack for them.
        unsafe {
            let mut buf = [0u8; libc::PATH_MAX as usize];
            if libc::getcwd(buf.as_mut_ptr().cast(), buf.len()).is_null() {
                return Err(io::Error::last_os_error());
            }
            if let Some(user) = &self.user {
                check(libc::setns(user.as_raw_fd(), libc::CLONE_NEWUSER))?;
            }
            if let Some(net) = &self.net {
                check(libc::setns(net.as_raw_fd(), libc::CLONE_NEWNET))?;
            }
            check(libc::setns(self.mnt.as_raw_fd(), libc::CLONE_NEWNS))?;
            check(libc::chdir(buf.as_ptr().cast()))?;
        }
        Ok(())
    }
}

/// What makes sockets in a namespace's network without mm entering it: its descriptors.
#[derive(Debug)]
pub(super) struct Inside {
    user: Option<OwnedFd>,
    net: OwnedFd,
}

impl Inside {
    /// A TCP socket of the namespace's network (IPv4, neither bound nor connected): what mm
    /// binds or connects there from any thread, a socket keeping the namespace it was made in.
    /// A child forked for it joins the namespace (its user namespace first when mm is not
    /// root: a thread of mm's may not join one) and hands the socket back (`SCM_RIGHTS`).
    pub(super) fn socket(&self) -> io::Result<OwnedFd> {
        let (mine, theirs) = net::socket_pair()?;
        let user = self.user.as_ref().map_or(-1, |u| u.as_raw_fd());
        let (netns, sender) = (self.net.as_raw_fd(), theirs.as_raw_fd());
        // SAFETY: the child makes async-signal-safe system calls on descriptors and the stack
        // only, then `_exit`s, as the child of a multi-threaded process must.
        let pid = match unsafe { nix::unistd::fork() }.map_err(io::Error::from)? {
            nix::unistd::ForkResult::Child => unsafe {
                let joined = (user < 0 || libc::setns(user, libc::CLONE_NEWUSER) == 0)
                    && libc::setns(netns, libc::CLONE_NEWNET) == 0;
                if joined {
                    let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
                    if fd >= 0 {
                        let _ = net::send_fd(sender, fd);
                    }
                }
                libc::_exit(0)
            },
            nix::unistd::ForkResult::Parent { child } => child,
        };
        drop(theirs);
        let got = net::recv_fd(&mine);
        let _ = nix::sys::wait::waitpid(pid, None);
        got
    }
}

/// The first folder of [`SCRATCH`] that is not, and holds none of, `mounted`, and the empty
/// file's path in it. (A mount above it, bound recursively, takes the `tmpfs` along.)
fn scratch<'a>(
    mounted: impl Iterator<Item = &'a PathBuf> + Clone,
) -> Result<(CString, CString), FenceError> {
    let free = SCRATCH
        .iter()
        .map(std::path::Path::new)
        .find(|dir| dir.is_dir() && !mounted.clone().any(|p| p.starts_with(dir)));
    let Some(dir) = free else {
        return Err(FenceError::Open {
            path: PathBuf::from(SCRATCH[0]),
            source: io::Error::other("no folder to make the hidden files' empty file in"),
        });
    };
    let c = |p: &std::path::Path| {
        CString::new(p.as_os_str().as_bytes()).map_err(|e| FenceError::Open {
            path: p.to_path_buf(),
            source: io::Error::new(io::ErrorKind::InvalidInput, e),
        })
    };
    Ok((c(dir)?, c(&dir.join("empty"))?))
}

fn keep_flags(p: &std::path::Path) -> Result<libc::c_ulong, FenceError> {
    use nix::sys::statvfs::FsFlags;
    let vfs = nix::sys::statvfs::statvfs(p).map_err(|e| FenceError::Open {
        path: p.to_path_buf(),
        source: e.into(),
    })?;
    let f = vfs.flags();
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
    Ok(keep)
}

/// What the kernel lets mm make here, asked once: `namespace` a private mount namespace with a
/// read-only bind, `devpts` a private `devpts` in it. `Err` says why not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Support {
    pub namespace: Result<(), String>,
    pub devpts: Result<(), String>,
}

pub fn support() -> Support {
    static SUPPORT: OnceLock<Support> = OnceLock::new();
    SUPPORT.get_or_init(probe).clone()
}

/// The probe's exit code when the namespace works and `devpts` does not.
const NO_DEVPTS: i32 = 3;

/// Tried in a child that enters such a namespace and exits before running anything.
fn probe() -> Support {
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    let ns = match Namespace::new(&[PathBuf::from("/")], &[], &[], false) {
        Ok(ns) => ns,
        Err(e) => {
            return Support {
                namespace: Err(e.to_string()),
                devpts: Err(e.to_string()),
            };
        }
    };
    // Not a supervised child: it never runs a program (it exits inside the fork, right after
    // entering the namespace) and is waited for here, so nothing can outlive it.
    let mut cmd = std::process::Command::new("/");
    // SAFETY: `enter` and `mount_private` only make system calls on memory prepared before the
    // fork, and `_exit` is async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            ns.enter()?;
            match devpts::mount_private() {
                Ok(()) => libc::_exit(0),
                Err(_) => libc::_exit(NO_DEVPTS),
            }
        });
    }
    cmd.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let failed = |why: String| Support {
        namespace: Err(why.clone()),
        devpts: Err(why),
    };
    // A probe of the kernel, waited for here: no tree to stop, no task to own.
    #[allow(
        clippy::disallowed_methods,
        reason = "the sandbox's own launch code: a probe child waited for at once"
    )]
    let spawned = cmd.spawn();
    match spawned {
        Ok(mut child) => match child.wait() {
            Ok(s) if s.success() => Support {
                namespace: Ok(()),
                devpts: Ok(()),
            },
            Ok(s) if s.code() == Some(NO_DEVPTS) => Support {
                namespace: Ok(()),
                devpts: Err("the kernel refused to mount a private devpts".into()),
            },
            Ok(s) => failed(match s.signal() {
                Some(sig) => format!("the probe was killed by signal {sig}"),
                None => format!("the probe ended with {s}"),
            }),
            Err(e) => failed(e.to_string()),
        },
        Err(e) => failed(e.to_string()),
    }
}

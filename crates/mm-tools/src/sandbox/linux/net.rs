//! The fence's network namespace (docs/sandbox.md, "The network"): the namespace helper
//! (`namespace.rs`) unshares the network with the mounts, brings the new namespace's `lo` up
//! and, when mm's proxy is its way out, binds a listener on its 127.0.0.1 and hands it to mm
//! over a unix socket (`SCM_RIGHTS`): mm accepts there without entering the namespace, and
//! connects out from its own. Fenced children join the namespace with `setns`, like the mounts.
//!
//! What runs in the helper (`lo_up`, `listen_loopback`, `send_fd`) is async-signal-safe: system
//! calls on the stack only.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use super::sys::check;

/// `struct ifreq` with its flags member (40 bytes on Linux).
#[repr(C)]
struct IfreqFlags {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

/// Brings the namespace's `lo` up (a new network namespace has it down).
///
/// # Safety
/// Async-signal-safe: a socket, two ioctls, a close.
pub(super) unsafe fn lo_up() -> io::Result<()> {
    // SAFETY: plain system calls on a struct on the stack.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut req = IfreqFlags {
            name: [0; libc::IFNAMSIZ],
            flags: 0,
            _pad: [0; 22],
        };
        req.name[..2].copy_from_slice(b"lo");
        let mut r = libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut req as *mut IfreqFlags);
        if r >= 0 {
            req.flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
            r = libc::ioctl(fd, libc::SIOCSIFFLAGS, &mut req as *mut IfreqFlags);
        }
        let result = if r < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        };
        libc::close(fd);
        result
    }
}

/// A TCP listener on 127.0.0.1 of the calling process's namespace, on a port the kernel picks.
///
/// # Safety
/// Async-signal-safe: socket, bind, listen on the stack.
pub(super) unsafe fn listen_loopback() -> io::Result<RawFd> {
    // SAFETY: plain system calls on a struct on the stack.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let addr = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: 0,
            sin_addr: libc::in_addr {
                s_addr: u32::from_ne_bytes([127, 0, 0, 1]),
            },
            sin_zero: [0; 8],
        };
        let size = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        if let Err(e) = check(libc::bind(
            fd,
            (&addr as *const libc::sockaddr_in).cast(),
            size,
        ))
        .and_then(|()| check(libc::listen(fd, 1024)))
        {
            libc::close(fd);
            return Err(e);
        }
        Ok(fd)
    }
}

/// Space for one descriptor's control message (`CMSG_SPACE(sizeof(int))` on 64-bit Linux).
const CMSG_BUF: usize = 24;

#[repr(C, align(8))]
struct CmsgBuf([u8; CMSG_BUF]);

/// A message of one byte (`byte`) with room for one descriptor in `control`, both on the
/// caller's stack; `controllen` is what the control part says it holds.
///
/// # Safety
/// Async-signal-safe; the message points into `iov` and `control`, which must outlive it.
unsafe fn message(iov: &mut libc::iovec, control: &mut CmsgBuf, controllen: usize) -> libc::msghdr {
    // SAFETY: a zeroed msghdr is a valid empty one; the pointers are the caller's.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.0.as_mut_ptr().cast();
    msg.msg_controllen = controllen as _;
    msg
}

/// Sends `fd` over the unix socket `sock`, with one byte.
///
/// # Safety
/// Async-signal-safe: one `sendmsg` on the stack.
pub(super) unsafe fn send_fd(sock: RawFd, fd: RawFd) -> io::Result<()> {
    // SAFETY: the message and its control buffer live on the stack for the call; the CMSG
    // macros stay within the buffer, sized for one descriptor.
    unsafe {
        let mut byte = [1u8];
        let mut iov = libc::iovec {
            iov_base: byte.as_mut_ptr().cast(),
            iov_len: 1,
        };
        let mut control = CmsgBuf([0; CMSG_BUF]);
        let space = libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) as usize;
        let msg = message(&mut iov, &mut control, space);
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        if cmsg.is_null() {
            return Err(io::Error::other("no room for the descriptor"));
        }
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<RawFd>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<RawFd>(), fd);
        if libc::sendmsg(sock, &msg, libc::MSG_NOSIGNAL) < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

/// Receives the descriptor [`send_fd`] sent over `sock` (in mm's process).
pub(super) fn recv_fd(sock: &OwnedFd) -> io::Result<OwnedFd> {
    // SAFETY: as in `send_fd`; the descriptor received is owned at once.
    unsafe {
        let mut byte = [0u8];
        let mut iov = libc::iovec {
            iov_base: byte.as_mut_ptr().cast(),
            iov_len: 1,
        };
        let mut control = CmsgBuf([0; CMSG_BUF]);
        let mut msg = message(&mut iov, &mut control, CMSG_BUF);
        if libc::recvmsg(sock.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC) < 1 {
            return Err(io::Error::other("the namespace's helper sent no listener"));
        }
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        if cmsg.is_null()
            || (*cmsg).cmsg_level != libc::SOL_SOCKET
            || (*cmsg).cmsg_type != libc::SCM_RIGHTS
        {
            return Err(io::Error::other("the namespace's helper sent no listener"));
        }
        let fd = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<RawFd>());
        Ok(OwnedFd::from_raw_fd(fd))
    }
}

/// A unix socket pair, both ends close-on-exec (the helper's channel).
pub(super) fn socket_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: `fds` has room for the two descriptors, owned at once.
    unsafe {
        check(libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        ))?;
        Ok((OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])))
    }
}

//! Root's capabilities inside the fence: a fenced child of mm running as root (containers, CI)
//! keeps only [`KEPT`], Docker's default set without `CAP_MKNOD` (a block device made in the
//! workspace would give raw disk writes) and, like Docker's, without `CAP_SYS_ADMIN` (mounts,
//! `TIOCSTI` on any terminal). `CAP_DAC_OVERRIDE` and `CAP_FOWNER` stay, so that root in CI can
//! still edit files of other users in the workspace.
//!
//! The cut is applied in the child after the mounts (they need `CAP_SYS_ADMIN`): the bounding
//! set first (it needs `CAP_SETPCAP`), so that nothing `exec` starts gets more back, then the
//! effective, permitted, inheritable and ambient sets.

use std::io;

use super::sys::check;

/// The capabilities a fenced root keeps (number, name as `capabilities(7)` spells it).
pub const KEPT: [(u32, &str); 13] = [
    (0, "CAP_CHOWN"),
    (1, "CAP_DAC_OVERRIDE"),
    (3, "CAP_FOWNER"),
    (4, "CAP_FSETID"),
    (5, "CAP_KILL"),
    (6, "CAP_SETGID"),
    (7, "CAP_SETUID"),
    (8, "CAP_SETPCAP"),
    (10, "CAP_NET_BIND_SERVICE"),
    (13, "CAP_NET_RAW"),
    (18, "CAP_SYS_CHROOT"),
    (29, "CAP_AUDIT_WRITE"),
    (31, "CAP_SETFCAP"),
];

/// `_LINUX_CAPABILITY_VERSION_3`: 64-bit sets, in two 32-bit halves.
const VERSION_3: u32 = 0x2008_0522;

#[repr(C)]
struct Header {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct Data {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// The cut a child makes, prepared in mm's process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cut {
    kept: u64,
}

impl Cut {
    /// The cut for a child of this process: `Some` when mm runs as root, whose children would
    /// otherwise start with every capability; `None` otherwise (a user's children have none
    /// after `exec`).
    pub fn for_this_process() -> Option<Cut> {
        // SAFETY: geteuid cannot fail and touches no memory.
        (unsafe { libc::geteuid() } == 0).then(Cut::kept)
    }

    fn kept() -> Cut {
        Cut {
            kept: KEPT.iter().fold(0, |m, (n, _)| m | (1u64 << n)),
        }
    }

    /// Cuts the calling process's capabilities to the kept set.
    ///
    /// # Safety
    /// Async-signal-safe (system calls on the stack only): may run between `fork` and `exec`.
    pub unsafe fn apply(&self) -> io::Result<()> {
        // SAFETY: prctl and the capability system calls take integers and pointers to the
        // stack only.
        unsafe {
            // Capabilities are numbered from 0 without gaps: the first the kernel calls
            // invalid is the end.
            for cap in 0..64u32 {
                if self.kept & (1 << cap) != 0 {
                    continue;
                }
                let cap = libc::c_ulong::from(cap);
                // Read first: dropping needs CAP_SETPCAP even for a capability already gone
                // (a container's root may lack it, with a bounding set cut already).
                match libc::prctl(libc::PR_CAPBSET_READ, cap, 0, 0, 0) {
                    r if r < 0 => {
                        let e = io::Error::last_os_error();
                        if e.raw_os_error() == Some(libc::EINVAL) {
                            break;
                        }
                        return Err(e);
                    }
                    0 => {}
                    _ => check(libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0))?,
                }
                // A kernel without ambient capabilities (before 4.3) has none to lower.
                libc::prctl(
                    libc::PR_CAP_AMBIENT,
                    libc::PR_CAP_AMBIENT_LOWER as libc::c_ulong,
                    cap,
                    0,
                    0,
                );
            }
            let mut header = Header {
                version: VERSION_3,
                pid: 0,
            };
            let mut data = [Data {
                effective: 0,
                permitted: 0,
                inheritable: 0,
            }; 2];
            if libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()) < 0 {
                return Err(io::Error::last_os_error());
            }
            for (half, d) in data.iter_mut().enumerate() {
                let kept = (self.kept >> (32 * half)) as u32;
                d.effective &= kept;
                d.permitted &= kept;
                d.inheritable &= kept;
            }
            if libc::syscall(libc::SYS_capset, &mut header, data.as_ptr()) < 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_kept_set_is_dockers_without_mknod_and_keeps_editing_others_files() {
        let names: Vec<&str> = KEPT.iter().map(|(_, n)| *n).collect();
        assert!(!names.contains(&"CAP_MKNOD"));
        assert!(!names.contains(&"CAP_SYS_ADMIN"));
        assert!(names.contains(&"CAP_DAC_OVERRIDE") && names.contains(&"CAP_FOWNER"));
        let kept = Cut::kept().kept;
        assert_eq!(kept & (1 << 27), 0, "CAP_MKNOD");
        assert_eq!(kept & (1 << 21), 0, "CAP_SYS_ADMIN");
        assert_eq!(kept.count_ones(), 13);
    }
}

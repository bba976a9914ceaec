//! The fence's seccomp filter: `ioctl` `TIOCSTI` (which types bytes into a terminal's input, so
//! into the user's shell) and `TIOCLINUX` (which can do as much on a virtual console) answer
//! EPERM, and so do `add_key`, `request_key` and `keyctl` (the kernel's key rings are not
//! namespaced: a command could read or fill the user's session keyring, as Docker's default
//! profile refuses them; docs/sandbox.md has the table). Built once in mm's process with
//! `seccompiler`, installed by each fenced child after `no_new_privs`.
//!
//! The request is compared as 32 bits: the kernel truncates it to an `unsigned int` before it
//! reaches the terminal, so `TIOCSTI` with high bits set would otherwise slip past. The filter
//! is for the machine's own architecture: a 32-bit x86 program (or `int 0x80`) is killed by it
//! rather than let through unchecked.

use std::io;
use std::sync::{Arc, OnceLock};

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

/// The requests refused.
// `libc::Ioctl` is `c_ulong` with glibc and `c_int` with musl.
#[allow(clippy::unnecessary_cast)]
const REFUSED: [u64; 2] = [libc::TIOCSTI as u64, libc::TIOCLINUX as u64];

/// The system calls refused whatever their arguments: the key rings.
const REFUSED_CALLS: [i64; 3] = [libc::SYS_add_key, libc::SYS_request_key, libc::SYS_keyctl];

/// The x32 ABI's bit (`__X32_SYSCALL_BIT`): same architecture as x86_64, other numbers, on
/// kernels built with it.
const X32: i64 = 0x4000_0000;

/// The x32 ABI's `ioctl` (514: its own entry, not x86_64's 16).
const X32_IOCTL: i64 = X32 | 514;

/// A compiled filter, shared by every fence of the process.
#[derive(Debug, Clone)]
pub struct Filter(Arc<BpfProgram>);

#[repr(C)]
struct SockFprog {
    len: libc::c_ushort,
    filter: *const seccompiler::sock_filter,
}

/// The filter for this machine, built once; `Err` says why there is none (an architecture
/// seccompiler does not know).
pub fn filter() -> Result<Filter, String> {
    static FILTER: OnceLock<Result<Filter, String>> = OnceLock::new();
    FILTER.get_or_init(build).clone()
}

fn build() -> Result<Filter, String> {
    let arch = std::env::consts::ARCH;
    let target = TargetArch::try_from(arch)
        .map_err(|_| format!("no seccomp filter for the {arch} architecture"))?;
    let rule = |request: u64| {
        SeccompCondition::new(1, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, request)
            .and_then(|c| SeccompRule::new(vec![c]))
    };
    let rules: Vec<SeccompRule> = REFUSED
        .iter()
        .map(|r| rule(*r))
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    let mut ioctls = vec![libc::SYS_ioctl];
    let mut calls = REFUSED_CALLS.to_vec();
    if matches!(target, TargetArch::x86_64) {
        ioctls.push(X32_IOCTL);
        // The key calls are "common" in x86_64's table: x32 has them at the same numbers.
        calls.extend(REFUSED_CALLS.map(|n| X32 | n));
    }
    // An empty list of rules matches every call of that number.
    let filter = SeccompFilter::new(
        ioctls
            .into_iter()
            .map(|n| (n, rules.clone()))
            .chain(calls.into_iter().map(|n| (n, Vec::new())))
            .collect(),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        target,
    )
    .map_err(|e| e.to_string())?;
    let program: BpfProgram = filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| e.to_string())?;
    Ok(Filter(Arc::new(program)))
}

impl Filter {
    /// Installs the filter on the calling thread (after `no_new_privs`).
    ///
    /// # Safety
    /// Async-signal-safe (one system call on memory prepared by [`filter`]): may run between
    /// `fork` and `exec`.
    pub unsafe fn install(&self) -> io::Result<()> {
        let prog = SockFprog {
            len: self.0.len() as libc::c_ushort,
            filter: self.0.as_ptr(),
        };
        // SAFETY: the kernel copies the program from `prog`, which points into `self`.
        let r = unsafe {
            libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                0u32,
                &prog as *const SockFprog,
            )
        };
        if r < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    }
}

//! Windows: `GetFinalPathNameByHandleW`, without the `\\?\` prefix it answers with.

use std::ffi::OsString;
use std::io;
use std::os::windows::ffi::OsStringExt;
use std::os::windows::io::AsRawHandle;
use std::path::PathBuf;

use windows_sys::Win32::Storage::FileSystem::{FILE_NAME_NORMALIZED, GetFinalPathNameByHandleW};

/// What [`path_of`] reads: a handle.
pub type Handle<'a> = std::os::windows::io::BorrowedHandle<'a>;

/// The path `handle` names now, as the file system reads it back (`\\?\` taken off where the
/// path needs no such prefix).
pub fn path_of(handle: Handle<'_>) -> io::Result<PathBuf> {
    let mut buf = vec![0u16; 512];
    loop {
        let len = u32::try_from(buf.len()).unwrap_or(u32::MAX);
        // SAFETY: the buffer holds `len` UTF-16 units; the call writes at most that many.
        let n = unsafe {
            GetFinalPathNameByHandleW(
                handle.as_raw_handle(),
                buf.as_mut_ptr(),
                len,
                FILE_NAME_NORMALIZED,
            )
        } as usize;
        if n == 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(
                e.kind(),
                format!("cannot tell where the folder is (GetFinalPathNameByHandleW: {e})"),
            ));
        }
        if n < buf.len() {
            let path = PathBuf::from(OsString::from_wide(&buf[..n]));
            return Ok(dunce::simplified(&path).to_path_buf());
        }
        buf.resize(n + 1, 0);
    }
}

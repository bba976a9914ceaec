//! Windows: Git for Windows' install folder from the registry.

use std::ffi::OsString;
use std::os::windows::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;

use windows_sys::Win32::System::Registry::{
    HKEY_CURRENT_USER, HKEY_LOCAL_MACHINE, RRF_RT_REG_SZ, RegGetValueW,
};

/// `InstallPath` of `SOFTWARE\GitForWindows`, the machine's install first, then the user's.
pub fn git_install_path() -> Option<PathBuf> {
    let wide = |s: &str| -> Vec<u16> {
        std::ffi::OsStr::new(s)
            .encode_wide()
            .chain(std::iter::once(0))
            .collect()
    };
    let (key, value) = (wide(r"SOFTWARE\GitForWindows"), wide("InstallPath"));
    [HKEY_LOCAL_MACHINE, HKEY_CURRENT_USER]
        .into_iter()
        .find_map(|root| {
            let mut buf = vec![0u16; 1024];
            let mut size = (buf.len() * 2) as u32;
            // SAFETY: the strings are NUL-terminated; `buf` holds `size` bytes.
            let status = unsafe {
                RegGetValueW(
                    root,
                    key.as_ptr(),
                    value.as_ptr(),
                    RRF_RT_REG_SZ,
                    std::ptr::null_mut(),
                    buf.as_mut_ptr().cast(),
                    &mut size,
                )
            };
            if status != 0 {
                return None;
            }
            let units = (size as usize / 2).min(buf.len());
            let text: Vec<u16> = buf[..units]
                .iter()
                .copied()
                .take_while(|&u| u != 0)
                .collect();
            Some(PathBuf::from(OsString::from_wide(&text)))
        })
}

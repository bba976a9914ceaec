//! The real path of an open file or folder, as the system reads it back from the descriptor
//! (or handle): where a write relative to it lands, whatever links named it when it was opened.
//! The checked writer asks it of the folder it opened, the sandbox of the places it holds open.
//! One module per system: `/proc/self/fd` on Linux, `F_GETPATH` on macOS,
//! `GetFinalPathNameByHandleW` on Windows.

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
use linux as os;
#[cfg(target_os = "macos")]
mod macos;
#[cfg(target_os = "macos")]
use macos as os;
#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows as os;

pub use os::{Handle, path_of};

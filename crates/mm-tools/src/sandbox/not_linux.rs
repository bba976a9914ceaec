//! What the systems without Landlock share (macOS, Windows): no Landlock ABI, no mount
//! namespaces, and a fence that cannot fail to be made.

/// Landlock is Linux's.
pub fn landlock_abi() -> i32 {
    0
}

/// Mount namespaces are Linux's.
pub fn namespace_works() -> Result<(), String> {
    Err(format!("{} has no mount namespaces", std::env::consts::OS))
}

/// A fence that cannot fail to be made.
#[derive(Debug)]
pub enum FenceError {}

impl std::fmt::Display for FenceError {
    fn fmt(&self, _: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {}
    }
}

impl std::error::Error for FenceError {}

//! Where there are no Unix users to become (Windows): mm runs as whoever runs the tests. The
//! fence's tests that need a plain user are Linux's.

use std::path::{Path, PathBuf};

/// Who runs mm: here, only the user running the tests.
#[derive(Debug, Clone)]
pub enum Who {
    Root,
}

impl Who {
    /// The program to start and its first arguments, to run `bin`.
    pub fn program(&self, bin: &Path, _dir: &Path) -> (PathBuf, Vec<String>) {
        (bin.to_path_buf(), Vec::new())
    }

    /// The binary `bin` as this user runs it.
    pub fn binary(&self, bin: &Path, _dir: &Path) -> PathBuf {
        bin.to_path_buf()
    }
}

//! What the writer replaced on the model's behalf, kept so that `/undo` can put it back: each
//! file's content (and mode) before its first write since the journal was last taken.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

/// Bytes of a file's old content the journal keeps at most (a bigger file is noted as not kept).
pub const KEPT_BYTES: u64 = 16 << 20;

/// What was at a path before the writer first replaced it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Prior {
    /// No file: the write created it.
    Missing,
    /// A regular file: its bytes and permission bits.
    File { bytes: Vec<u8>, mode: u32 },
    /// Something the journal could not keep, and why (too big, unreadable).
    NotKept(String),
}

/// One file the writer replaced: where it really lies (links followed) and what was there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Noted {
    pub path: PathBuf,
    pub before: Prior,
}

/// The files written since the journal was last taken, in the order of their first write.
#[derive(Debug, Default)]
pub struct Journal {
    noted: Mutex<Vec<Noted>>,
}

impl Journal {
    pub fn new() -> Journal {
        Journal::default()
    }

    /// Notes `path` unless it is noted already (only its first write's "before" counts);
    /// `before` is read only then.
    pub(super) fn note(&self, path: &Path, before: impl FnOnce() -> Prior) {
        let mut noted = self.noted.lock().unwrap_or_else(PoisonError::into_inner);
        if noted.iter().any(|n| n.path == path) {
            return;
        }
        noted.push(Noted {
            path: path.to_path_buf(),
            before: before(),
        });
    }

    /// Notes what another journal took (a `task` call's child session), each path unless it
    /// is noted already: the first write's "before" counts, whoever made it.
    pub fn absorb(&self, taken: Vec<Noted>) {
        let mut noted = self.noted.lock().unwrap_or_else(PoisonError::into_inner);
        for n in taken {
            if !noted.iter().any(|m| m.path == n.path) {
                noted.push(n);
            }
        }
    }

    /// What was noted, leaving the journal empty.
    pub fn take(&self) -> Vec<Noted> {
        std::mem::take(&mut *self.noted.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

//! A session's undo records on disk, so that `/undo` works after a restart (`mm --continue`,
//! `session/load`): `<state>/undo/sessions/<session>/records.json` (the turns, their snapshots'
//! tree ids, the pending note) beside one file per kept copy of a file the tools replaced
//! (`<turn>-<n>-before`, `<turn>-<n>-after`). The snapshots themselves are in the project's
//! git store (git.rs), under the session's refs. Kept as long as those: [`KEPT_DAYS`] after
//! the session's last save.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::git::{DAY, KEPT_DAYS, age, write_file};
use super::{Turn, Undo};
use crate::writer::{Noted, Prior};

const RECORDS: &str = "records.json";

#[derive(Debug, Serialize, Deserialize)]
struct Records {
    count: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    note: Option<String>,
    turns: Vec<SavedTurn>,
}

#[derive(Debug, Serialize, Deserialize)]
struct SavedTurn {
    number: usize,
    /// The trees before and after, or why there are none.
    trees: Result<(String, String), String>,
    commands: u32,
    written: Vec<SavedWrite>,
}

#[derive(Debug, Serialize, Deserialize)]
struct SavedWrite {
    path: PathBuf,
    before: SavedPrior,
    /// The file holding what was there after the turn (`None`: nothing, or not kept).
    after: Option<String>,
}

#[derive(Debug, Serialize, Deserialize)]
enum SavedPrior {
    Missing,
    File { copy: String, mode: u32 },
    NotKept(String),
}

/// The folder of a session's records under `stores` (`<state>/undo`).
pub(super) fn folder(stores: &Path, session: &str) -> PathBuf {
    stores.join("sessions").join(session)
}

/// Writes the records of `undo` to `dir`; the copies already there are not written again, the
/// ones of turns no longer kept are removed. Best effort: a record that cannot be written
/// only means no `/undo` after a restart.
pub(super) fn save(undo: &Undo, dir: &Path) {
    // Turns with nothing to put back (commands run outside git) and no note leave nothing on
    // disk: a reopened session just has no turn to undo.
    let worth = undo.note.is_some()
        || undo
            .turns
            .iter()
            .any(|t| !t.written.is_empty() || t.trees.is_ok());
    if !worth {
        if dir.exists() {
            let _ = std::fs::remove_dir_all(dir);
        }
        return;
    }
    let first = !dir.exists();
    let mut wanted: Vec<String> = vec![RECORDS.to_string()];
    let mut copy = |name: String, bytes: &[u8]| -> Option<String> {
        let path = dir.join(&name);
        if path.exists() || write_file(&path, bytes).is_ok() {
            wanted.push(name.clone());
            Some(name)
        } else {
            None
        }
    };
    let turns = undo
        .turns
        .iter()
        .map(|t| SavedTurn {
            number: t.number,
            trees: t.trees.clone(),
            commands: t.commands,
            written: t
                .written
                .iter()
                .enumerate()
                .map(|(i, (noted, after))| SavedWrite {
                    path: noted.path.clone(),
                    before: match &noted.before {
                        Prior::Missing => SavedPrior::Missing,
                        Prior::File { bytes, mode } => {
                            match copy(format!("{}-{i}-before", t.number), bytes) {
                                Some(copy) => SavedPrior::File { copy, mode: *mode },
                                None => SavedPrior::NotKept("its copy could not be saved".into()),
                            }
                        }
                        Prior::NotKept(why) => SavedPrior::NotKept(why.clone()),
                    },
                    after: after
                        .as_ref()
                        .and_then(|bytes| copy(format!("{}-{i}-after", t.number), bytes)),
                })
                .collect(),
        })
        .collect();
    let records = Records {
        count: undo.count,
        note: undo.note.clone(),
        turns,
    };
    let Ok(json) = serde_json::to_vec(&records) else {
        return;
    };
    if write_file(&dir.join(RECORDS), &json).is_err() {
        return;
    }
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !wanted.contains(&name) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
    if first && let Some(all) = dir.parent() {
        forget_expired(all);
    }
}

/// The records a session left in `dir`, if any (unreadable ones are none).
pub(super) fn load(undo: &mut Undo, dir: &Path) {
    let Ok(bytes) = std::fs::read(dir.join(RECORDS)) else {
        return;
    };
    let Ok(records) = serde_json::from_slice::<Records>(&bytes) else {
        return;
    };
    let read = |name: &str| std::fs::read(dir.join(name)).ok();
    undo.count = records.count;
    undo.note = records.note;
    undo.turns = records
        .turns
        .into_iter()
        .map(|t| Turn {
            number: t.number,
            trees: t.trees,
            commands: t.commands,
            written: t
                .written
                .into_iter()
                .map(|w| {
                    let before = match w.before {
                        SavedPrior::Missing => Prior::Missing,
                        SavedPrior::File { copy, mode } => match read(&copy) {
                            Some(bytes) => Prior::File { bytes, mode },
                            None => Prior::NotKept("its copy is gone".into()),
                        },
                        SavedPrior::NotKept(why) => Prior::NotKept(why),
                    };
                    let after = w.after.as_deref().and_then(read);
                    (
                        Noted {
                            path: w.path,
                            before,
                        },
                        after,
                    )
                })
                .collect(),
        })
        .collect();
}

/// Removes the records of sessions last saved more than [`KEPT_DAYS`] ago (their git undo
/// points are deleted then too).
fn forget_expired(all: &Path) {
    let kept = Duration::from_secs(KEPT_DAYS * DAY.as_secs());
    for entry in std::fs::read_dir(all).into_iter().flatten().flatten() {
        let saved = age(&entry.path().join(RECORDS)).or_else(|| age(&entry.path()));
        if saved.is_none_or(|a| a > kept) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

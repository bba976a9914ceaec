//! Session files on disk (docs/sessions.md): ids, the file format, atomic saves, loading, listing.
//!
//! A file is always written through `crate::writer` (a temporary file in the same folder,
//! fsynced, then renamed over the old one), so a process killed at any moment leaves the old or
//! the new file whole. Two processes writing one session: the last writer wins.

use std::fmt;
use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use chrono::{DateTime, FixedOffset, Local, SecondsFormat};
use serde::{Deserialize, Serialize};

use crate::event::{ChildEnd, PermissionMode, Plan, Usage};
use crate::history::{Message, count_without_system};
use crate::writer::{self, Check, FileKind, WriteError};

mod folder;
pub use folder::{OutsideProject, resolve_dir};

/// The format version this mm writes and reads.
pub const VERSION: u32 = 1;

/// How many characters of the first prompt a listing shows.
const PROMPT_PREVIEW_CHARS: usize = 60;

/// A temporary file younger than this may belong to a live writer.
const TMP_GRACE: Duration = Duration::from_secs(60);

/// A fresh id: local date and time, then 8 random lowercase hex digits
/// (`20260916-101530-4f2a9c1e`), so that sorting ids sorts sessions by age.
pub fn new_id(now: DateTime<Local>) -> String {
    format!("{}-{:08x}", now.format("%Y%m%d-%H%M%S"), random_u32())
}

/// A time as the file stores it: RFC 3339 with the local offset, to the second.
pub fn timestamp(now: DateTime<Local>) -> String {
    now.to_rfc3339_opts(SecondsFormat::Secs, false)
}

/// An id received from outside that cannot name a session file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid session id {0:?}: expected 1 to 128 letters, digits, '_' or '-', starting with a letter or digit"
)]
pub struct InvalidId(pub String);

/// Checks an id received from outside (`session/load`, `mm --resume`) before any file is
/// touched: `^[0-9A-Za-z][0-9A-Za-z_-]{0,127}$`, so it can never leave the sessions folder.
pub fn validate_id(id: &str) -> Result<(), InvalidId> {
    let mut chars = id.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_alphanumeric());
    let rest_ok = chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if first_ok && rest_ok && id.len() <= 128 {
        Ok(())
    } else {
        Err(InvalidId(id.to_string()))
    }
}

/// Token totals as the file stores them: the session's [`Usage`] plus `totalTokens`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub total_tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_read_tokens: Option<u64>,
}

impl From<&Usage> for FileUsage {
    fn from(u: &Usage) -> Self {
        FileUsage {
            input_tokens: u.input_tokens,
            output_tokens: u.output_tokens,
            total_tokens: u.total(),
            thought_tokens: u.thought_tokens,
            cached_read_tokens: u.cached_read_tokens,
        }
    }
}

impl From<&FileUsage> for Usage {
    /// `totalTokens` is derived, so it is not read back.
    fn from(u: &FileUsage) -> Self {
        Usage {
            input_tokens: u.input_tokens,
            output_tokens: u.output_tokens,
            thought_tokens: u.thought_tokens,
            cached_read_tokens: u.cached_read_tokens,
        }
    }
}

/// A session file, field for field (docs/sessions.md). What a session list shows comes before
/// the messages, so a listing reads only the start of each file ([`read_header`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionFile {
    pub version: u32,
    pub id: String,
    pub cwd: PathBuf,
    /// RFC 3339, local time ([`timestamp`]).
    pub created_at: String,
    pub updated_at: String,
    /// The first prompt's first line; absent until there is one, and in files of older
    /// versions of mm.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The session's mode; absent in older files, and a mode this mm does not know reads as
    /// absent (the configuration's applies).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient_mode"
    )]
    pub mode: Option<PermissionMode>,
    pub model: String,
    pub usage: FileUsage,
    #[serde(default)]
    pub plan: Option<Plan>,
    /// Starts with the system prompt (replaced by the current one on load).
    pub messages: Vec<Message>,
    /// The children of its `task` calls ([`ChildSession`]), after the messages: never part of
    /// them, so never sent to the model; absent when there are none and in older files.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<ChildSession>,
}

/// A `task` call's child as its parent's file keeps it: its turns, for the record and for a
/// `session/load` replay to a client that is shown subagents.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChildSession {
    /// `<parent id>/<call ref>`.
    pub id: String,
    /// The `task` call's ref.
    pub call: String,
    /// The task's description.
    pub description: String,
    pub end: ChildEnd,
    /// Its history without the system prompt: the task, then its turns.
    pub messages: Vec<Message>,
}

fn lenient_mode<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<PermissionMode>, D::Error> {
    let v = Option::<serde_json::Value>::deserialize(d)?;
    Ok(v.and_then(|v| serde_json::from_value(v).ok()))
}

/// The path of a session's file in `dir`.
pub fn file_path(dir: &Path, id: &str) -> PathBuf {
    dir.join(format!("{id}.json"))
}

/// A session file's bytes, as [`save`] writes them.
pub fn encode(file: &SessionFile) -> serde_json::Result<Vec<u8>> {
    let mut bytes = serde_json::to_vec_pretty(file)?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// Writes `<dir>/<id>.json` atomically (crate::writer: temporary file in the same folder, fsync,
/// rename, fsync of the folder), creating the folder (0700) if needed. The file is 0600. The
/// save that creates a folder of `.mm` (the default `.mm/sessions`) also creates
/// `.mm/.gitignore` ignoring it ([`ignore_beside`]).
pub fn save(dir: &Path, file: &SessionFile) -> io::Result<PathBuf> {
    validate_id(&file.id).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let bytes = encode(file).map_err(io::Error::other)?;
    let target = file_path(dir, &file.id);
    let shown = target.display().to_string();
    let first = fs::symlink_metadata(dir).is_err();
    writer::write(&target, &shown, &bytes, FileKind::Private, Check::Anywhere)
        .map_err(WriteError::into_io)?;
    // The session is saved: a `.gitignore` that cannot be made is no reason to say otherwise.
    if first {
        let _ = ignore_beside(dir);
    }
    Ok(target)
}

/// Session files are the user's conversations, not the project's: when `dir` is a folder of
/// a `.mm` folder (`.mm/sessions`), `.mm/.gitignore` is created ignoring it (`sessions/`), so a
/// `git add .` leaves them out. A `.gitignore` already there is the user's: left as it is, with
/// or without the line. Whether it was created.
pub fn ignore_beside(dir: &Path) -> io::Result<bool> {
    let (Some(parent), Some(name)) = (dir.parent(), dir.file_name()) else {
        return Ok(false);
    };
    if parent.file_name() != Some(std::ffi::OsStr::new(".mm")) {
        return Ok(false);
    }
    let path = parent.join(".gitignore");
    let text = format!(
        "# mm's session files: your conversations, not the project's.\n{}/\n",
        name.to_string_lossy()
    );
    writer::create_new(
        &path,
        &path.display().to_string(),
        text.as_bytes(),
        Check::Anywhere,
    )
    .map_err(WriteError::into_io)
}

/// Why a session file could not be loaded; `Display` names the file and the problem.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error(transparent)]
    InvalidId(#[from] InvalidId),
    /// `err`, not `source`: the message already says why, and a source would be printed again
    /// by anything that prints the chain (`mm: cannot read …: No such file or directory: No such
    /// file or directory (os error 2)`).
    #[error("cannot read {}: {}", path.display(), os_reason(err))]
    Read { path: PathBuf, err: io::Error },
    #[error("{} is not a session file: {reason}", path.display())]
    NotSession { path: PathBuf, reason: String },
    #[error("{} has version {version}, this mm reads version {VERSION}", path.display())]
    Version { path: PathBuf, version: u64 },
}

impl FileError {
    /// No file for that id.
    pub fn is_not_found(&self) -> bool {
        matches!(self, FileError::Read { err, .. } if err.kind() == io::ErrorKind::NotFound)
    }
}

/// An io error's message without the ` (os error N)` suffix std adds.
fn os_reason(e: &io::Error) -> String {
    let s = e.to_string();
    match s.rfind(" (os error ") {
        Some(i) if s.ends_with(')') => s[..i].to_string(),
        _ => s,
    }
}

/// Reads and checks `<dir>/<id>.json`. The id is validated before any file is touched; a failed
/// load never modifies or deletes the file. The caller replaces the system prompt.
pub fn load(dir: &Path, id: &str) -> Result<SessionFile, FileError> {
    validate_id(id)?;
    let path = file_path(dir, id);
    let bytes = fs::read(&path).map_err(|err| FileError::Read {
        path: path.clone(),
        err,
    })?;
    parse(&path, &bytes)
}

/// Reads a session file's bytes (`path` only names it in errors): what [`load`] does once the
/// file is read.
pub fn parse(path: &Path, bytes: &[u8]) -> Result<SessionFile, FileError> {
    #[derive(Deserialize)]
    struct Probe {
        version: u64,
    }
    let version_error = |version| FileError::Version {
        path: path.to_path_buf(),
        version,
    };
    match serde_json::from_slice::<SessionFile>(bytes) {
        Ok(file) if file.version == VERSION => Ok(file),
        Ok(file) => Err(version_error(u64::from(file.version))),
        Err(e) => match serde_json::from_slice::<Probe>(bytes) {
            // Another version may have another shape: say so rather than what does not parse.
            Ok(p) if p.version != u64::from(VERSION) => Err(version_error(p.version)),
            _ => Err(FileError::NotSession {
                path: path.to_path_buf(),
                reason: e.to_string(),
            }),
        },
    }
}

/// Removes `<dir>/<id>.json` (the id is validated first).
pub fn delete(dir: &Path, id: &str) -> Result<(), FileError> {
    validate_id(id)?;
    let path = file_path(dir, id);
    fs::remove_file(&path).map_err(|err| FileError::Read { path, err })
}

/// The session files of `dir` beyond the `keep` saved last (by modification time, then by id),
/// removed through mm's writer; `current`, the session just saved, is always kept. `keep` 0
/// keeps every file (`sessions.keep`, docs/sessions.md). The ids removed, and beside them the
/// files that could not be, each as `<id>: <why>`.
pub fn prune(dir: &Path, keep: usize, current: &str) -> (Vec<String>, Vec<String>) {
    let (mut removed, mut failed) = (Vec::new(), Vec::new());
    if keep == 0 {
        return (removed, failed);
    }
    let Ok(entries) = fs::read_dir(dir) else {
        return (removed, failed);
    };
    let mut files: Vec<(Option<SystemTime>, String)> = entries
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name();
            let id = name.to_str()?.strip_suffix(".json")?;
            validate_id(id).ok()?;
            let saved = entry.metadata().and_then(|m| m.modified()).ok();
            Some((saved, id.to_string()))
        })
        .collect();
    // Newest first; the session just saved first of all, whatever the clock says.
    files.sort_by(|a, b| (b.1 == current, b).cmp(&(a.1 == current, a)));
    for (_, id) in files.into_iter().skip(keep) {
        let path = file_path(dir, &id);
        match writer::remove(&path, &path.display().to_string(), Check::Anywhere) {
            Ok(_) => removed.push(id),
            Err(e) => failed.push(format!("{id}: {e}")),
        }
    }
    (removed, failed)
}

/// What a session list shows of a file: read from its start up to the messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionHeader {
    pub id: String,
    /// The cwd the session last had.
    pub cwd: PathBuf,
    pub title: Option<String>,
    pub updated_at: String,
}

/// Reads the start of a session file, up to its messages (or its end, for a file written in
/// another field order): the bytes a list needs, whatever the length of the history.
pub fn read_header(path: &Path) -> Result<SessionHeader, FileError> {
    use serde::de::Deserializer as _;
    let read_error = |err| FileError::Read {
        path: path.to_path_buf(),
        err,
    };
    let file = File::open(path).map_err(read_error)?;
    let mut fields = HeaderFields::default();
    let mut de = serde_json::Deserializer::from_reader(io::BufReader::with_capacity(4096, file));
    let parsed = (&mut de).deserialize_map(HeaderVisitor {
        fields: &mut fields,
    });
    let not_session = |reason: String| FileError::NotSession {
        path: path.to_path_buf(),
        reason,
    };
    // Stopping at `messages` leaves the object unfinished, which the parser reports: what
    // was read by then is the header.
    if let (Err(e), false) = (parsed, fields.reached_messages) {
        return Err(match fields.version {
            Some(v) if v != u64::from(VERSION) => FileError::Version {
                path: path.to_path_buf(),
                version: v,
            },
            _ if e.is_io() => read_error(io::Error::other(e.to_string())),
            _ => not_session(e.to_string()),
        });
    }
    if fields.reached_messages
        && (fields.id.is_none() || fields.cwd.is_none() || fields.updated_at.is_none())
    {
        // Written in another order (by hand, by another tool): the whole file, then.
        let bytes = fs::read(path).map_err(read_error)?;
        let file = parse(path, &bytes)?;
        return Ok(SessionHeader {
            id: file.id,
            cwd: file.cwd,
            title: file.title,
            updated_at: file.updated_at,
        });
    }
    match fields.version {
        Some(v) if v == u64::from(VERSION) => {}
        Some(v) => {
            return Err(FileError::Version {
                path: path.to_path_buf(),
                version: v,
            });
        }
        None => return Err(not_session("missing field `version`".into())),
    }
    let missing = |name: &str| not_session(format!("missing field `{name}`"));
    Ok(SessionHeader {
        id: fields.id.ok_or_else(|| missing("id"))?,
        cwd: fields.cwd.ok_or_else(|| missing("cwd"))?,
        title: fields.title,
        updated_at: fields.updated_at.ok_or_else(|| missing("updatedAt"))?,
    })
}

/// The sessions saved in `dir` as a list shows them (each file read only up to its messages),
/// in no particular order; the files that could not be read, each as `<path>: <why>`, beside.
/// Nothing is written or removed.
pub fn headers(dir: &Path) -> (Vec<SessionHeader>, Vec<String>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return (Vec::new(), Vec::new());
    };
    let mut found = Vec::new();
    let mut skipped = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        // Temporary files of saves (`.<id>.json.tmp…`) are not sessions.
        if name.starts_with('.') {
            continue;
        }
        let Some(id) = name.strip_suffix(".json") else {
            continue;
        };
        if validate_id(id).is_err() {
            continue;
        }
        match read_header(&entry.path()) {
            // The name is what loads it.
            Ok(header) => found.push(SessionHeader {
                id: id.to_string(),
                ..header
            }),
            Err(e) => skipped.push(e.to_string()),
        }
    }
    (found, skipped)
}

#[derive(Default)]
struct HeaderFields {
    version: Option<u64>,
    id: Option<String>,
    cwd: Option<PathBuf>,
    title: Option<String>,
    updated_at: Option<String>,
    reached_messages: bool,
}

struct HeaderVisitor<'a> {
    fields: &'a mut HeaderFields,
}

impl<'de> serde::de::Visitor<'de> for HeaderVisitor<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a session file (a JSON object)")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        use serde::de::IgnoredAny;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "version" => self.fields.version = Some(map.next_value()?),
                "id" => self.fields.id = Some(map.next_value()?),
                "cwd" => self.fields.cwd = Some(map.next_value()?),
                "title" => self.fields.title = map.next_value()?,
                "updatedAt" => self.fields.updated_at = Some(map.next_value()?),
                "messages" => {
                    self.fields.reached_messages = true;
                    return Ok(());
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// One saved session, as listings show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionSummary {
    pub id: String,
    pub created_at: String,
    pub updated_at: String,
    /// The first prompt the user typed (not a summary), on one line, cut to 60 characters.
    pub first_prompt: Option<String>,
    /// Messages without the system prompt.
    pub messages: usize,
    /// Bytes.
    pub size: u64,
}

/// The sessions saved in `dir`, sorted by id (so by age). Files that do not load are left out
/// (loading one by its id says what is wrong with it). Temporary files left by a killed writer
/// are ignored, and removed once they are old enough.
pub fn list(dir: &Path) -> Vec<SessionSummary> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let now = SystemTime::now();
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if name.starts_with('.') && name.contains(".tmp") {
            // A temporary file this young may be a save in progress in another process (two
            // processes may share a session folder): removing it would make that save's rename
            // fail. A writer finishes in well under a minute, so an older one is debris.
            let old = entry
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| now.duration_since(t).is_ok_and(|age| age > TMP_GRACE));
            if old {
                let _ = fs::remove_file(entry.path());
            }
            continue;
        }
        let Some(id) = name.strip_suffix(".json") else {
            continue;
        };
        if validate_id(id).is_err() {
            continue;
        }
        let path = entry.path();
        let Ok(bytes) = fs::read(&path) else { continue };
        let Ok(file) = parse(&path, &bytes) else {
            continue;
        };
        out.push(SessionSummary {
            id: id.to_string(),
            first_prompt: first_prompt(&file.messages),
            messages: count_without_system(&file.messages),
            size: bytes.len() as u64,
            created_at: file.created_at,
            updated_at: file.updated_at,
        });
    }
    out.sort_by(|a, b| a.id.cmp(&b.id));
    out
}

/// The session updated last (by `updatedAt`, compared as instants), for `mm --continue`.
/// `updatedAt` counts seconds, so two sessions saved within one second tie: the file written
/// last wins (its modification time), then the id.
pub fn latest(dir: &Path) -> Option<SessionSummary> {
    let instant = |s: &SessionSummary| -> Option<DateTime<FixedOffset>> {
        DateTime::parse_from_rfc3339(&s.updated_at).ok()
    };
    let written = |s: &SessionSummary| {
        fs::metadata(file_path(dir, &s.id))
            .and_then(|m| m.modified())
            .ok()
    };
    list(dir).into_iter().max_by(|a, b| {
        instant(a)
            .cmp(&instant(b))
            .then_with(|| written(a).cmp(&written(b)))
            .then_with(|| a.id.cmp(&b.id))
    })
}

fn first_prompt(messages: &[Message]) -> Option<String> {
    let m = messages.iter().find(|m| m.starts_turn())?;
    let one_line = m.content.split_whitespace().collect::<Vec<_>>().join(" ");
    Some(truncate(&one_line, PROMPT_PREVIEW_CHARS))
}

fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

impl fmt::Display for SessionSummary {
    /// One line of `/sessions`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}  {} message(s)  {}",
            self.id,
            self.messages,
            self.first_prompt.as_deref().unwrap_or("(no prompt)")
        )
    }
}

/// 32 random bits; falls back on the clock and the pid if the system's source fails, since
/// an id or a temporary name only needs to be unlikely to collide.
fn random_u32() -> u32 {
    getrandom::u32().unwrap_or_else(|_| {
        let nanos = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.subsec_nanos() ^ (d.as_secs() as u32))
            .unwrap_or(0);
        nanos.rotate_left(13) ^ std::process::id().wrapping_mul(0x9e37_79b9)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn os_suffix_is_dropped() {
        // The system's own text ("No such file or directory" on Linux), without the suffix.
        let e = io::Error::from_raw_os_error(2);
        assert_eq!(format!("{} (os error 2)", os_reason(&e)), e.to_string());
        assert!(!os_reason(&e).is_empty());
        assert_eq!(os_reason(&io::Error::other("plain")), "plain");
    }

    #[test]
    fn preview_is_one_line_and_cut() {
        assert_eq!(truncate("abc", 3), "abc");
        assert_eq!(truncate("abcd", 3), "ab…");
        let m = vec![
            Message::system("s"),
            Message::summary("sum"),
            Message::user("  list\n the   files "),
        ];
        assert_eq!(first_prompt(&m).as_deref(), Some("list the files"));
    }
}

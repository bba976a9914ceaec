//! The sandbox's paths: where writes of one session may land ([`Rule`]: the writable
//! [`Roots`] and what stays read-only under them), the device files every fence leaves writable, where a write really lands ([`real_path`]: symlinks
//! followed), and the `sandboxWritable` folders resolved and held once at start ([`hold`]),
//! skipped when a command could have made a link on their way.

use std::path::{Path, PathBuf};

use mm_core::config::SandboxMode;
use mm_core::sandbox_report::Skip;

use super::held::Held;
use super::hidden::Hidden;

/// Device files a shell needs, writable even in `read-only` (every system's fence).
pub(super) const DEVICE_FILES: [&str; 5] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/ptmx",
];

/// Where commands of one session may write, as each call finds it.
pub(crate) struct Roots<'a> {
    /// The session's cwd (canonical), unless it is the home folder or above it.
    pub(crate) cwd: Option<PathBuf>,
    /// The held places, with where each is now.
    pub(crate) held: Vec<(&'a Held, PathBuf)>,
}

impl Roots<'_> {
    /// Nowhere (the sandbox off, or `read-only`).
    pub(super) fn none() -> Self {
        Roots {
            cwd: None,
            held: Vec::new(),
        }
    }

    pub(crate) fn paths(&self) -> impl Iterator<Item = &Path> {
        self.cwd
            .iter()
            .map(PathBuf::as_path)
            .chain(self.held.iter().map(|(_, p)| p.as_path()))
    }
}

/// Where the writes of one session may land: what the system's fence enforces for its
/// commands, and what `check_write` asks for the tools' own writes.
pub(crate) struct Rule<'a> {
    pub mode: SandboxMode,
    pub roots: Roots<'a>,
    /// The paths kept read-only (canonical where they exist), each with whether it is a folder
    /// mm may create.
    pub protected: Vec<(PathBuf, bool)>,
    /// The places commands may not read (nor write).
    pub hidden: &'a Hidden,
}

impl Rule<'_> {
    /// Whether a write may land on `real` (symlinks already followed).
    pub(super) fn lets_write(&self, real: &Path) -> bool {
        self.roots.paths().any(|r| real.starts_with(r))
            && !self.protected.iter().any(|(p, _)| real.starts_with(p))
            && !self.hidden.covers(real)
    }
}

/// The writable places whose paths hold no symlink (canonical): the temp folders and such
/// `tools.sandboxWritable` entries. A symlink inside one of them may be a command's.
pub(super) fn plain_places(temp: &[PathBuf], entries: &[PathBuf]) -> Vec<PathBuf> {
    temp.iter()
        .chain(entries)
        .filter_map(|p| {
            let real = crate::paths::canonical(p).ok()?;
            (real == crate::paths::normalize(p)).then_some(real)
        })
        .collect()
}

/// A writable entry resolved and held open, once, at start; `Err` says why it is skipped.
pub(super) fn hold(entry: &Path, writable: &[PathBuf]) -> Result<Held, Skip> {
    if let Some(link) = link_in(entry, writable) {
        return Err(Skip::Link(link));
    }
    Held::open(entry).map_err(|_| Skip::Missing)
}

/// The first symlink on `entry`'s path that lies in one of `writable` (so that a fenced
/// command could have made it, as `ln -s / <missing entry>`); `None` when every symlink on it
/// is where commands cannot write (the user's own).
fn link_in(entry: &Path, writable: &[PathBuf]) -> Option<PathBuf> {
    let entry = crate::paths::normalize(entry);
    let mut prefixes: Vec<&Path> = entry.ancestors().collect();
    prefixes.reverse();
    prefixes.into_iter().find_map(|p| {
        let link = std::fs::symlink_metadata(p).ok()?.file_type().is_symlink();
        let parent = crate::paths::canonical(p.parent()?).ok()?;
        (link && writable.iter().any(|w| parent.starts_with(w))).then(|| p.to_path_buf())
    })
}

/// The path a write to `path` lands on: symlinks followed (the last component's too, as
/// `write_file` writes through a link), the part that does not exist yet kept as given.
pub fn real_path(path: &Path) -> PathBuf {
    let path = crate::paths::normalize(path);
    let mut followed = path.clone();
    for _ in 0..40 {
        match std::fs::read_link(&followed) {
            Ok(link) => {
                let next = match followed.parent() {
                    Some(parent) if link.is_relative() => parent.join(link),
                    _ => link,
                };
                followed = crate::paths::normalize(&next);
            }
            Err(_) => break,
        }
    }
    let mut existing = followed.as_path();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = crate::paths::canonical(existing) {
            let mut out = real;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return out;
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                existing = parent;
            }
            _ => return followed,
        }
    }
}

// The links are made with Unix's call (Windows needs a privilege to make one).
#[cfg(all(test, unix))]
#[allow(clippy::unwrap_used, clippy::disallowed_methods)]
mod tests {
    use super::*;

    #[test]
    fn a_writable_entry_through_a_link_where_commands_write_is_found() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(base.join("cache")).unwrap();
        std::fs::create_dir_all(base.join("mine/data")).unwrap();
        std::os::unix::fs::symlink("/", base.join("cache/x")).unwrap();
        // The user's own link, in a folder commands cannot write.
        std::os::unix::fs::symlink(base.join("mine/data"), base.join("mine/link")).unwrap();
        let entries = [
            base.join("cache"),
            base.join("cache/x"),
            base.join("mine/link"),
        ];
        let writable = plain_places(&[], &entries);
        assert_eq!(writable, [base.join("cache")]);
        assert_eq!(link_in(&entries[1], &writable), Some(base.join("cache/x")));
        assert_eq!(link_in(&entries[2], &writable), None);
        assert_eq!(link_in(&entries[0], &writable), None);
    }

    #[test]
    fn real_path_follows_links_and_keeps_what_does_not_exist() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir(base.join("out")).unwrap();
        std::os::unix::fs::symlink(base.join("out"), base.join("link")).unwrap();
        std::os::unix::fs::symlink("out/f", base.join("file-link")).unwrap();
        assert_eq!(real_path(&base.join("link/new/x")), base.join("out/new/x"));
        assert_eq!(real_path(&base.join("file-link")), base.join("out/f"));
        assert_eq!(real_path(&base.join("a/../out/./y")), base.join("out/y"));
    }
}

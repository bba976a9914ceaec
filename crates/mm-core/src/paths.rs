//! Path resolution shared by tools and prompt flattening.

use std::path::{Component, Path, PathBuf};

/// Resolves a path given by the model or the user: relative to `cwd` unless absolute or `~/…`,
/// then normalised lexically (symlinks are not resolved).
pub fn resolve(cwd: &Path, path: &str) -> PathBuf {
    let joined = if path == "~" {
        home().unwrap_or_else(|| cwd.to_path_buf())
    } else if let Some(rest) = path.strip_prefix("~/") {
        match home() {
            Some(h) => h.join(rest),
            None => cwd.join(path),
        }
    } else {
        cwd.join(path)
    };
    normalize(&joined)
}

/// Removes `.` and resolves `..` lexically.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Prefix(_) | Component::RootDir | Component::Normal(_) => {
                out.push(c.as_os_str())
            }
        }
    }
    out
}

/// The user's home directory, from `HOME`.
pub fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

/// A word as a shell reads it back: as it is when it holds only safe characters, else in
/// single quotes (`'it'\''s'`). For lines the user may copy (`mm trust '/my project'`).
pub fn shell_quote(word: &str) -> String {
    let safe = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+=:,@%^".contains(c));
    if safe {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_quote_leaves_plain_words_alone() {
        assert_eq!(shell_quote("/home/u/my-project"), "/home/u/my-project");
        assert_eq!(shell_quote("/home/u/my project"), "'/home/u/my project'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote(""), "''");
    }

    #[test]
    fn relative_absolute_and_dots() {
        let cwd = Path::new("/p/q");
        assert_eq!(resolve(cwd, "a/../b/./c"), PathBuf::from("/p/q/b/c"));
        assert_eq!(resolve(cwd, "/etc/x"), PathBuf::from("/etc/x"));
        assert_eq!(resolve(cwd, "../z"), PathBuf::from("/p/z"));
    }
}

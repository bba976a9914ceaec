//! Changing the user's config file for `mm trust` and the trust prompt: one list of projects is
//! edited with `toml_edit`, so every other byte of the file (comments, order, spacing, other
//! keys) stays as the user wrote it, and the file is replaced atomically through `crate::writer`
//! (a temporary file in the same folder, renamed over it), through a symlink to where it really
//! lives.

use std::path::{Path, PathBuf};

use toml_edit::{DocumentMut, Item, Value};

use super::{DISTRUSTED_KEY, TRUSTED_KEY, canonical};
use crate::writer::{self, Check, FileKind};

/// Why the user's file could not be changed; `Display` is the line users see.
#[derive(Debug, thiserror::Error)]
pub enum EditError {
    #[error("cannot read {}: {err}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        err: std::io::Error,
    },
    #[error("{}: {message}", path.display())]
    Parse { path: PathBuf, message: String },
    #[error("{}: {key} must be an array of paths", path.display())]
    NotAList { path: PathBuf, key: &'static str },
    #[error("cannot write {}: {err}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        err: std::io::Error,
    },
    #[error("no user config file: HOME is not set")]
    NoUserFile,
}

/// What a change did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The file was written.
    Changed,
    /// The file already said so: nothing was written.
    Already,
}

/// Adds `project` (absolute, canonical) to `trustedProjects` in the user's file, creating the
/// file when there is none, and takes it out of `distrustedProjects`.
pub fn trust(
    user_file: Option<&Path>,
    home: Option<&Path>,
    project: &Path,
) -> Result<Outcome, EditError> {
    edit(user_file, home, |doc, path, home| {
        let removed = remove(doc, DISTRUSTED_KEY, project, path, home)?;
        let added = add(doc, TRUSTED_KEY, project, path, home)?;
        Ok(removed || added)
    })
}

/// Adds `project` to `distrustedProjects` (the trust prompt's "never"): mm does not offer to
/// trust it again.
pub fn distrust(
    user_file: Option<&Path>,
    home: Option<&Path>,
    project: &Path,
) -> Result<Outcome, EditError> {
    edit(user_file, home, |doc, path, home| {
        add(doc, DISTRUSTED_KEY, project, path, home)
    })
}

/// Sets each dotted key (`model.url`) to its string in the user's file (`mm setup`), creating
/// the file and its tables when missing; every other byte stays as it was.
pub fn set(
    user_file: Option<&Path>,
    home: Option<&Path>,
    values: &[(&str, &str)],
) -> Result<Outcome, EditError> {
    edit(user_file, home, |doc, path, _| {
        let mut changed = false;
        for (key, value) in values {
            let mut parts: Vec<&str> = key.split('.').collect();
            let Some(leaf) = parts.pop() else { continue };
            let mut table: &mut dyn toml_edit::TableLike = doc.as_table_mut();
            for part in parts {
                let item = table.entry(part).or_insert_with(toml_edit::table);
                table = item.as_table_like_mut().ok_or_else(|| EditError::Parse {
                    path: path.to_path_buf(),
                    message: format!("{key}: {part} is not a table"),
                })?;
            }
            if table.get(leaf).and_then(Item::as_str) == Some(value) {
                continue;
            }
            // The value's own decor (a comment after it) is kept.
            match table.get_mut(leaf).and_then(Item::as_value_mut) {
                Some(old) => {
                    let decor = old.decor().clone();
                    *old = Value::from(*value);
                    *old.decor_mut() = decor;
                }
                None => {
                    table.insert(leaf, toml_edit::value(*value));
                }
            }
            changed = true;
        }
        Ok(changed)
    })
}

fn edit(
    user_file: Option<&Path>,
    home: Option<&Path>,
    change: impl FnOnce(&mut DocumentMut, &Path, Option<&Path>) -> Result<bool, EditError>,
) -> Result<Outcome, EditError> {
    let named = user_file.ok_or(EditError::NoUserFile)?;
    // A config file kept elsewhere and linked (a dotfiles folder) is changed where it lives.
    let path = crate::paths::canonical(named).unwrap_or_else(|_| named.to_path_buf());
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => Some(text),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => None,
        Err(err) => return Err(EditError::Read { path, err }),
    };
    let mut doc = match &text {
        Some(text) => text.parse::<DocumentMut>().map_err(|e| EditError::Parse {
            path: path.clone(),
            message: e.to_string().trim_end().to_string(),
        })?,
        None => DocumentMut::new(),
    };
    if !change(&mut doc, &path, home)? {
        return Ok(Outcome::Already);
    }
    // The old file's mode is kept, unless it holds an API key: then only its owner may read it
    // (0600), as for any secret mm writes.
    let holds_key = doc
        .get("model")
        .and_then(|m| m.get("apiKey"))
        .and_then(Item::as_str)
        .is_some_and(|k| !k.is_empty());
    let kind = if holds_key {
        FileKind::Private
    } else {
        FileKind::Ordinary
    };
    let shown = path.display().to_string();
    let bytes = doc.to_string();
    writer::write(&path, &shown, bytes.as_bytes(), kind, Check::Anywhere).map_err(|e| {
        EditError::Write {
            path: path.clone(),
            err: e.into_io(),
        }
    })?;
    Ok(Outcome::Changed)
}

/// The project an entry names, compared as `load` does: `~/` expanded, then canonical.
fn names(entry: &Value, project: &Path, home: Option<&Path>) -> bool {
    let Some(text) = entry.as_str() else {
        return false;
    };
    let path = match (text.strip_prefix("~/"), home) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => PathBuf::from(text),
    };
    canonical(&path) == project
}

fn list<'d>(
    doc: &'d mut DocumentMut,
    key: &'static str,
    path: &Path,
) -> Result<Option<&'d mut toml_edit::Array>, EditError> {
    match doc.get_mut(key) {
        None => Ok(None),
        Some(item) => match item.as_array_mut() {
            Some(array) => Ok(Some(array)),
            None => Err(EditError::NotAList {
                path: path.to_path_buf(),
                key,
            }),
        },
    }
}

/// Appends `project` to the list `key` (created when missing), laid out like its last entry.
fn add(
    doc: &mut DocumentMut,
    key: &'static str,
    project: &Path,
    path: &Path,
    home: Option<&Path>,
) -> Result<bool, EditError> {
    let entry = project.to_string_lossy().into_owned();
    let Some(array) = list(doc, key, path)? else {
        let mut array = toml_edit::Array::new();
        array.push(entry);
        doc.insert(key, Item::Value(Value::Array(array)));
        return Ok(true);
    };
    if array.iter().any(|v| names(v, project, home)) {
        return Ok(false);
    }
    // One entry per line stays one per line, indented like the last (whose prefix may hold
    // the comment that ended the line before it); `["a", "b"]` stays on one line.
    let prefix = match array.iter().last() {
        None => String::new(),
        Some(last) => match last.decor().prefix().and_then(|p| p.as_str()) {
            Some(p) if p.contains('\n') => {
                let indent = p.rsplit('\n').next().unwrap_or_default();
                format!("\n{indent}")
            }
            _ => " ".to_string(),
        },
    };
    let mut value = Value::from(entry);
    value.decor_mut().set_prefix(prefix);
    array.push_formatted(value);
    Ok(true)
}

/// Removes `project` from the list `key`, if it is there.
fn remove(
    doc: &mut DocumentMut,
    key: &'static str,
    project: &Path,
    path: &Path,
    home: Option<&Path>,
) -> Result<bool, EditError> {
    let Some(array) = list(doc, key, path)? else {
        return Ok(false);
    };
    let before = array.len();
    array.retain(|v| !names(v, project, home));
    // The entry that is now first loses the space that separated it from the one removed.
    if let Some(first) = array.get_mut(0)
        && first
            .decor()
            .prefix()
            .and_then(|p| p.as_str())
            .is_some_and(|p| !p.contains('\n'))
    {
        first.decor_mut().set_prefix("");
    }
    Ok(array.len() != before)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::disallowed_methods)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn edited(before: &str, project: &str, trust_it: bool) -> String {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config.toml");
        std::fs::write(&file, before).unwrap();
        let change = if trust_it { trust } else { distrust };
        change(Some(&file), None, Path::new(project)).unwrap();
        std::fs::read_to_string(&file).unwrap()
    }

    #[test]
    fn set_changes_the_values_and_keeps_every_comment() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config.toml");
        std::fs::write(
            &file,
            "# mine\nyolo = true\n\n[model]\n# the one I like\nurl = \"http://old/v1\" # here\n",
        )
        .unwrap();
        let values = [
            ("model.url", "http://new/v1"),
            ("model.name", "qwen"),
            ("tools.sandbox", "workspace-write"),
        ];
        assert_eq!(set(Some(&file), None, &values).unwrap(), Outcome::Changed);
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            "# mine\nyolo = true\n\n[model]\n# the one I like\nurl = \"http://new/v1\" # here\nname = \"qwen\"\n\n[tools]\nsandbox = \"workspace-write\"\n"
        );
        assert_eq!(set(Some(&file), None, &values).unwrap(), Outcome::Already);
        // No file yet: made.
        let new = dir.path().join("new.toml");
        set(Some(&new), None, &values[..1]).unwrap();
        assert_eq!(
            std::fs::read_to_string(&new).unwrap(),
            "[model]\nurl = \"http://new/v1\"\n"
        );
    }

    #[test]
    fn a_new_key_goes_before_the_tables_and_nothing_else_moves() {
        let before = "# mine\nyolo = false  # careful\n\n[model]\nurl = \"http://x/v1\" # there\n";
        assert_eq!(
            edited(before, "/p", true),
            "# mine\nyolo = false  # careful\ntrustedProjects = [\"/p\"]\n\n[model]\nurl = \"http://x/v1\" # there\n"
        );
    }

    #[test]
    fn entries_are_added_in_the_list_s_own_layout() {
        assert_eq!(
            edited("trustedProjects = [\"/a\"]\n", "/p", true),
            "trustedProjects = [\"/a\", \"/p\"]\n"
        );
        assert_eq!(
            edited(
                "trustedProjects = [\n  \"/a\",  # work\n  \"/b\",\n]\n",
                "/p",
                true
            ),
            "trustedProjects = [\n  \"/a\",  # work\n  \"/b\",\n  \"/p\",\n]\n"
        );
        assert_eq!(
            edited("trustedProjects = []\n", "/p", true),
            "trustedProjects = [\"/p\"]\n"
        );
    }

    #[test]
    fn trusting_takes_the_project_out_of_the_distrusted_list() {
        assert_eq!(
            edited("distrustedProjects = [\"/p\", \"/q\"]\n", "/p", true),
            "distrustedProjects = [\"/q\"]\ntrustedProjects = [\"/p\"]\n"
        );
        assert_eq!(
            edited("trustedProjects = [\"/a\"]\n", "/p", false),
            "trustedProjects = [\"/a\"]\ndistrustedProjects = [\"/p\"]\n"
        );
    }

    #[test]
    fn a_project_already_listed_leaves_the_file_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config.toml");
        let home = dir.path().join("home");
        std::fs::create_dir_all(home.join("p")).unwrap();
        let project = crate::paths::canonical(&home.join("p")).unwrap();
        std::fs::write(&file, "trustedProjects = [ \"~/p\" ]\n").unwrap();
        assert_eq!(
            trust(Some(&file), Some(&home), &project).unwrap(),
            Outcome::Already
        );
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            "trustedProjects = [ \"~/p\" ]\n"
        );
    }

    #[test]
    fn a_missing_file_is_created_and_a_wrong_value_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("mm").join("config.toml");
        assert_eq!(
            trust(Some(&file), None, Path::new("/p")).unwrap(),
            Outcome::Changed
        );
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            "trustedProjects = [\"/p\"]\n"
        );
        std::fs::write(&file, "trustedProjects = \"/p\"\n").unwrap();
        assert_eq!(
            trust(Some(&file), None, Path::new("/q"))
                .unwrap_err()
                .to_string(),
            format!(
                "{}: trustedProjects must be an array of paths",
                crate::paths::canonical(&file).unwrap().display()
            )
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_linked_file_is_changed_where_it_lives_with_its_permissions() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("dotfiles.toml");
        std::fs::write(&real, "yolo = true\n").unwrap();
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o600)).unwrap();
        let link = dir.path().join("config.toml");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        trust(Some(&link), None, Path::new("/p")).unwrap();
        assert!(link.symlink_metadata().unwrap().file_type().is_symlink());
        assert_eq!(
            std::fs::read_to_string(&real).unwrap(),
            "yolo = true\ntrustedProjects = [\"/p\"]\n"
        );
        let mode = std::fs::metadata(&real).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[cfg(unix)]
    #[test]
    fn a_file_given_an_api_key_is_made_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config.toml");
        std::fs::write(&file, "# mine\n").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        set(Some(&file), None, &[("model.url", "http://h/v1")]).unwrap();
        let mode = |f: &Path| std::fs::metadata(f).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&file), 0o644);
        set(Some(&file), None, &[("model.apiKey", "sk-1")]).unwrap();
        assert_eq!(mode(&file), 0o600);
        let new = dir.path().join("new.toml");
        set(Some(&new), None, &[("model.apiKey", "sk-1")]).unwrap();
        assert_eq!(mode(&new), 0o600);
    }
}

//! Path resolution shared by tools and prompt flattening, and where the user's folders are on
//! each system (docs/platforms.md): the home folder (`HOME`; `USERPROFILE` on Windows), the
//! folder mm's config lives under (`$XDG_CONFIG_HOME`, else `~/.config`, on Unix; `%APPDATA%`
//! on Windows, so `%APPDATA%\mm`) and mm's state folder, the prompt history's and `/undo`'s
//! store (`$XDG_STATE_HOME/mm`, else `~/.local/state/mm`).

use std::ffi::OsString;
use std::io;
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

/// The user's home directory, from `HOME` (`USERPROFILE` on Windows).
pub fn home() -> Option<PathBuf> {
    home_in(cfg!(windows), &|name| std::env::var_os(name))
}

/// The folder the user's `mm/` folder is in: `$XDG_CONFIG_HOME` when set (`None` then means
/// `~/.config`); `%APPDATA%` on Windows, where a set `XDG_CONFIG_HOME` still wins.
pub fn config_home() -> Option<PathBuf> {
    config_home_in(cfg!(windows), &|name| std::env::var_os(name))
}

/// `XDG_STATE_HOME` when set and absolute (the one place the library reads it; `None` then means
/// `~/.local/state`).
pub fn state_home() -> Option<PathBuf> {
    std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .filter(|s| s.is_absolute())
}

/// mm's state folder: `$XDG_STATE_HOME/mm` (`xdg_state_home`, when absolute), else
/// `~/.local/state/mm`; `None` without either.
pub fn state_dir(home: Option<&Path>, xdg_state_home: Option<&Path>) -> Option<PathBuf> {
    match xdg_state_home {
        Some(state) if state.is_absolute() => Some(state.join("mm")),
        _ => home.map(|h| h.join(".local").join("state").join("mm")),
    }
}

/// [`home`] with the system and the environment given.
fn home_in(windows: bool, var: &dyn Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    let name = if windows { "USERPROFILE" } else { "HOME" };
    var(name).filter(|h| !h.is_empty()).map(PathBuf::from)
}

/// [`config_home`] with the system and the environment given.
fn config_home_in(windows: bool, var: &dyn Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    let set = |name: &str| var(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    set("XDG_CONFIG_HOME").or_else(|| if windows { set("APPDATA") } else { None })
}

/// The canonical path of an existing file or folder: links resolved, and on Windows without
/// the `\\?\` prefix `std::fs::canonicalize` adds (which no path a user or the model writes
/// has, so that prefix comparisons such as the sandbox's `check_write` would never match).
pub fn canonical(path: &Path) -> io::Result<PathBuf> {
    dunce::canonicalize(path)
}

/// A path as the model is shown it: on Windows with `/` for every `\` (`C:/Users/u/project`),
/// since the model copies paths into the commands Git Bash runs, which drops an unquoted
/// backslash; as it is on Unix.
pub fn for_model(path: &Path) -> String {
    slashed(&path.to_string_lossy(), cfg!(windows))
}

/// [`for_model`] relative to `cwd` when `path` lies below it, else whole.
pub fn for_model_in(cwd: &Path, path: &Path) -> String {
    match path.strip_prefix(cwd) {
        Ok(rel) if !rel.as_os_str().is_empty() => for_model(rel),
        _ => for_model(path),
    }
}

/// [`for_model`] with the system given.
fn slashed(path: &str, windows: bool) -> String {
    match windows {
        true => path.replace('\\', "/"),
        false => path.to_string(),
    }
}

/// A file as the user is shown it, in the system's own form: `~/…` under the home folder, else
/// whole; on Windows with `\` for every `/` (`~\AppData\Roaming\mm\config.toml`, where a
/// path joined from a setting such as `.mm/sessions` would mix both).
pub fn for_user(path: &Path, home: Option<&Path>) -> String {
    let rest = home
        .filter(|h| !h.as_os_str().is_empty())
        .and_then(|h| path.strip_prefix(h).ok());
    let shown = match rest {
        Some(rest) => format!("~/{}", rest.display()),
        None => path.display().to_string(),
    };
    user_form(&shown, cfg!(windows))
}

/// [`for_user`]'s separators with the system given.
fn user_form(text: &str, windows: bool) -> String {
    match windows {
        true => text.replace('/', "\\"),
        false => text.to_string(),
    }
}

/// A word as a shell reads it back: as it is when it holds only safe characters, else in
/// single quotes (`'it'\''s'`). For lines the user may copy (`mm trust '/my project'`). On
/// Windows as PowerShell and cmd read it: a `\` is safe there, and the quotes are double ones
/// (`mm trust "C:\my project"`).
pub fn shell_quote(word: &str) -> String {
    quote_for(word, cfg!(windows))
}

/// [`shell_quote`] with the system given.
fn quote_for(word: &str, windows: bool) -> String {
    let safe = !word.is_empty()
        && word.chars().all(|c| {
            c.is_ascii_alphanumeric() || "/._-+=:,@%^".contains(c) || (windows && c == '\\')
        });
    match (safe, windows) {
        (true, _) => word.to_string(),
        (false, true) => format!("\"{}\"", word.replace('"', "\"\"")),
        (false, false) => format!("'{}'", word.replace('\'', "'\\''")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_quote_leaves_plain_words_alone() {
        assert_eq!(shell_quote("/home/u/my-project"), "/home/u/my-project");
        assert_eq!(
            quote_for("/home/u/my project", false),
            "'/home/u/my project'"
        );
        assert_eq!(quote_for("it's", false), "'it'\\''s'");
        assert_eq!(quote_for("", false), "''");
        assert_eq!(quote_for("", true), r#""""#);
        assert_eq!(quote_for(r"C:\Users\u\p", true), r"C:\Users\u\p");
        assert_eq!(quote_for(r"C:\Users\u\p", false), r"'C:\Users\u\p'");
        assert_eq!(quote_for(r"C:\my project", true), r#""C:\my project""#);
        assert_eq!(quote_for(r#"say "hi""#, true), r#""say ""hi""""#);
    }

    #[test]
    fn the_model_sees_forward_slashes_and_the_user_the_systems_form() {
        let windows = r"C:\Users\u\.mm/skills\greetings";
        assert_eq!(slashed(windows, true), "C:/Users/u/.mm/skills/greetings");
        // On Unix a backslash is part of a name.
        assert_eq!(slashed(r"/home/u/a\b", false), r"/home/u/a\b");
        assert_eq!(
            user_form(r"~/AppData\Roaming\mm\config.toml", true),
            r"~\AppData\Roaming\mm\config.toml"
        );
        assert_eq!(user_form(r"C:\p\.mm/sessions", true), r"C:\p\.mm\sessions");
        assert_eq!(
            user_form("~/.config/mm/config.toml", false),
            "~/.config/mm/config.toml"
        );
        let home = Some(Path::new("/home/u"));
        let shown = |p: &str| for_user(Path::new(p), home);
        assert_eq!(
            shown("/home/u/.config/mm/config.toml"),
            user_form("~/.config/mm/config.toml", cfg!(windows))
        );
        assert_eq!(
            shown("/etc/mm.toml"),
            user_form("/etc/mm.toml", cfg!(windows))
        );
        assert_eq!(
            for_user(Path::new("/etc/mm.toml"), None),
            user_form("/etc/mm.toml", cfg!(windows))
        );
        let cwd = Path::new("/p");
        assert_eq!(for_model_in(cwd, Path::new("/p/src/a.rs")), "src/a.rs");
        assert_eq!(for_model_in(cwd, cwd), "/p");
        assert_eq!(for_model_in(cwd, Path::new("/q/b.rs")), "/q/b.rs");
    }

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| OsString::from(v))
        }
    }

    #[test]
    fn the_home_and_config_folders_per_system() {
        let unix = [
            ("HOME", "/home/u"),
            ("APPDATA", "/x"),
            ("USERPROFILE", "/y"),
        ];
        assert_eq!(home_in(false, &env(&unix)), Some(PathBuf::from("/home/u")));
        // ~/.config (None) on Unix, whatever APPDATA says.
        assert_eq!(config_home_in(false, &env(&unix)), None);
        let windows = [
            ("HOME", ""),
            ("USERPROFILE", r"C:\Users\u"),
            ("APPDATA", r"C:\Users\u\AppData\Roaming"),
        ];
        assert_eq!(
            home_in(true, &env(&windows)),
            Some(PathBuf::from(r"C:\Users\u"))
        );
        assert_eq!(
            config_home_in(true, &env(&windows)),
            Some(PathBuf::from(r"C:\Users\u\AppData\Roaming"))
        );
        let xdg = [("XDG_CONFIG_HOME", "/cfg"), ("APPDATA", "/x")];
        for windows in [false, true] {
            assert_eq!(
                config_home_in(windows, &env(&xdg)),
                Some(PathBuf::from("/cfg"))
            );
        }
        assert_eq!(home_in(true, &env(&[("HOME", "/home/u")])), None);
    }

    #[test]
    fn the_state_folder_is_xdg_state_home_s_else_the_home_s() {
        // Absolute on every system (`/state` has no drive on Windows).
        let root = std::env::current_dir().unwrap();
        let home = root.join("home");
        assert_eq!(
            state_dir(Some(&home), Some(&root.join("state"))),
            Some(root.join("state").join("mm"))
        );
        // A relative XDG_STATE_HOME is ignored, as the XDG spec says.
        assert_eq!(
            state_dir(Some(&home), Some(Path::new("state"))),
            Some(home.join(".local").join("state").join("mm"))
        );
        assert_eq!(state_dir(None, None), None);
    }

    #[test]
    fn relative_absolute_and_dots() {
        let cwd = Path::new("/p/q");
        assert_eq!(resolve(cwd, "a/../b/./c"), PathBuf::from("/p/q/b/c"));
        assert_eq!(resolve(cwd, "/etc/x"), PathBuf::from("/etc/x"));
        assert_eq!(resolve(cwd, "../z"), PathBuf::from("/p/z"));
    }
}

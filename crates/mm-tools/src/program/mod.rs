//! Finding the programs mm starts (docs/platforms.md): a server's, an agent's or a language
//! server's command as the user wrote it (`npx`, `uvx`), and the shell of `bash` and of hooks.
//!
//! On Unix a bare name is left to `exec`'s own `PATH` search, hooks run through `sh` and the
//! tool through `bash`. On Windows a bare name is looked up in `PATH` with each extension of
//! `PATHEXT` (`npx` is `npx.cmd`; std only tries `.exe`), and both run through Git for Windows'
//! `bash.exe` ([`find_bash`]), never `C:\Windows\System32\bash.exe`, which starts WSL.

pub mod python;
#[cfg(windows)]
mod windows;

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

/// The line said when Windows has no bash for mm (the tool's answer, and `mm doctor`'s first).
pub const NO_BASH: &str = "no bash found: install Git for Windows (https://gitforwindows.org), whose bash.exe mm runs commands with, or set tools.bash.path to a bash.exe";

/// The program to start for `name`: on Windows a bare name found in `PATH` with `PATHEXT`,
/// else `name` as it is.
pub fn resolve(name: &OsStr) -> PathBuf {
    if !cfg!(windows) {
        return PathBuf::from(name);
    }
    let var = |v: &str| std::env::var_os(v).unwrap_or_default();
    find_with_pathext(name, &var("PATH"), &var("PATHEXT"), &|p: &Path| p.is_file())
        .unwrap_or_else(|| PathBuf::from(name))
}

/// Where Windows finds the program `name`: a name with a folder or an extension as it is; a
/// bare one in each folder of `path` (`;`-separated), with each extension of `pathext`
/// (`.COM;.EXE;.BAT;.CMD` when empty) in order. `None` when no such file is.
pub fn find_with_pathext(
    name: &OsStr,
    path: &OsStr,
    pathext: &OsStr,
    is_file: &dyn Fn(&Path) -> bool,
) -> Option<PathBuf> {
    let given = Path::new(name);
    let text = name.to_string_lossy();
    if text.contains(['/', '\\', ':']) || given.extension().is_some() {
        return Some(given.to_path_buf());
    }
    let pathext = pathext.to_string_lossy();
    let exts: Vec<&str> = match pathext.trim() {
        "" => vec![".COM", ".EXE", ".BAT", ".CMD"],
        list => list.split(';').filter(|e| !e.is_empty()).collect(),
    };
    let path = path.to_string_lossy();
    let text = &text;
    path.split(';')
        .map(|dir| dir.trim().trim_matches('"'))
        .filter(|dir| !dir.is_empty())
        .flat_map(|dir| {
            exts.iter()
                .map(move |ext| windows_join(dir, &format!("{text}{}", ext.to_ascii_lowercase())))
        })
        .find(|candidate| is_file(candidate))
}

/// `dir\\rest` as Windows joins paths, whatever system this runs on (so that the lookups are
/// tested anywhere).
fn windows_join(dir: &str, rest: &str) -> PathBuf {
    match dir.ends_with(['\\', '/']) {
        true => PathBuf::from(format!("{dir}{rest}")),
        false => PathBuf::from(format!("{dir}\\{rest}")),
    }
}

/// What [`find_bash`] asks of the system, injected so that it is tested anywhere.
pub struct BashLookups<'a> {
    /// Git for Windows' `InstallPath` from the registry (`HKLM\SOFTWARE\GitForWindows`).
    pub install_path: Option<PathBuf>,
    /// `git.exe` as `PATH` finds it.
    pub git_exe: Option<PathBuf>,
    pub is_file: &'a dyn Fn(&Path) -> bool,
}

/// Git for Windows' bash: `configured` (`tools.bash.path`) when set, else `bin\bash.exe` under
/// the registry's install path, else beside `git.exe` (`…\Git\cmd\git.exe` or
/// `…\Git\bin\git.exe`: `…\Git\bin\bash.exe`). Never the WSL launcher in `System32`. `Err` is
/// [`NO_BASH`], or why the configured one cannot be used.
pub fn find_bash(configured: Option<&Path>, lookups: &BashLookups<'_>) -> Result<PathBuf, String> {
    // `bash.exe` in `System32` (however written): any other file there is not WSL.
    let wsl = |p: &Path| {
        p.to_string_lossy()
            .to_ascii_lowercase()
            .replace('/', r"\")
            .ends_with(r"\windows\system32\bash.exe")
    };
    if let Some(path) = configured {
        return match (lookups.is_file)(path) && !wsl(path) {
            true => Ok(path.to_path_buf()),
            false if wsl(path) => Err(format!(
                "tools.bash.path {} is the WSL launcher, not a bash mm can run commands with: {NO_BASH}",
                path.display()
            )),
            false => Err(format!("tools.bash.path {} is not a file", path.display())),
        };
    }
    let from_registry = lookups
        .install_path
        .iter()
        .map(|root| windows_join(&root.to_string_lossy(), r"bin\bash.exe"));
    let beside_git = lookups.git_exe.iter().filter_map(|git| {
        let git = git.to_string_lossy();
        let (folder, _) = git.rsplit_once(['\\', '/'])?;
        let (root, _) = folder.rsplit_once(['\\', '/'])?;
        Some(windows_join(root, r"bin\bash.exe"))
    });
    from_registry
        .chain(beside_git)
        .find(|p| !wsl(p) && (lookups.is_file)(p))
        .ok_or_else(|| NO_BASH.to_string())
}

/// The bash of the `bash` tool: `bash` on Unix; on Windows Git for Windows' ([`find_bash`]).
pub fn bash(configured: Option<&Path>) -> Result<PathBuf, String> {
    match cfg!(windows) {
        false => Ok(configured.map_or_else(|| PathBuf::from("bash"), Path::to_path_buf)),
        true => find_bash(configured, &system_lookups()),
    }
}

/// The shell hooks run through (`<shell> -c <command>`): `sh` on Unix, the tool's bash on
/// Windows.
pub fn hook_shell(configured: Option<&Path>) -> Result<PathBuf, String> {
    match cfg!(windows) {
        false => Ok(PathBuf::from("sh")),
        true => bash(configured),
    }
}

fn system_lookups() -> BashLookups<'static> {
    let var = |v: &str| std::env::var_os(v).unwrap_or_default();
    BashLookups {
        install_path: install_path(),
        git_exe: find_with_pathext(
            OsStr::new("git"),
            &var("PATH"),
            &OsString::from(".EXE"),
            &|p: &Path| p.is_file(),
        ),
        is_file: &|p: &Path| p.is_file(),
    }
}

#[cfg(windows)]
fn install_path() -> Option<PathBuf> {
    windows::git_install_path()
}

#[cfg(not(windows))]
fn install_path() -> Option<PathBuf> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(list: &'static [&'static str]) -> impl Fn(&Path) -> bool {
        move |p| list.iter().any(|f| Path::new(f) == p)
    }

    #[test]
    fn a_bare_name_is_found_with_pathext_in_path_order() {
        let is_file = files(&[r"C:\node\npx.cmd", r"C:\later\npx.exe", r"C:\py\uvx.exe"]);
        let path = OsStr::new(r#"C:\none;"C:\node";C:\later;C:\py"#);
        let ext = OsStr::new(".COM;.EXE;.BAT;.CMD");
        assert_eq!(
            find_with_pathext(OsStr::new("npx"), path, ext, &is_file),
            Some(PathBuf::from(r"C:\node\npx.cmd"))
        );
        assert_eq!(
            find_with_pathext(OsStr::new("uvx"), path, OsStr::new(""), &is_file),
            Some(PathBuf::from(r"C:\py\uvx.exe"))
        );
        assert_eq!(
            find_with_pathext(OsStr::new("nope"), path, ext, &is_file),
            None
        );
        // A name with an extension or a folder is taken as it is.
        for given in ["npx.cmd", r"C:\tools\x", "./x"] {
            assert_eq!(
                find_with_pathext(OsStr::new(given), path, ext, &is_file),
                Some(PathBuf::from(given))
            );
        }
    }

    #[test]
    fn git_for_windows_bash_is_found_by_registry_then_beside_git_but_never_wsl() {
        let is_file = files(&[
            r"C:\Program Files\Git\bin\bash.exe",
            r"D:\PortableGit\bin\bash.exe",
            r"C:\Windows\System32\bash.exe",
            r"c:/windows/SYSTEM32/Bash.exe",
            r"C:\Windows\System32\cmd.exe",
            r"C:\mine\bash.exe",
        ]);
        let lookups = |install: Option<&str>, git: Option<&str>| BashLookups {
            install_path: install.map(PathBuf::from),
            git_exe: git.map(PathBuf::from),
            is_file: &is_file,
        };
        assert_eq!(
            find_bash(
                None,
                &lookups(
                    Some(r"C:\Program Files\Git"),
                    Some(r"D:\PortableGit\cmd\git.exe")
                )
            ),
            Ok(PathBuf::from(r"C:\Program Files\Git\bin\bash.exe"))
        );
        assert_eq!(
            find_bash(None, &lookups(None, Some(r"D:\PortableGit\cmd\git.exe"))),
            Ok(PathBuf::from(r"D:\PortableGit\bin\bash.exe"))
        );
        assert_eq!(
            find_bash(None, &lookups(None, None)),
            Err(NO_BASH.to_string())
        );
        // git.exe in System32 would put bash there: the WSL launcher is never taken.
        assert_eq!(
            find_bash(None, &lookups(None, Some(r"C:\Windows\System32\git.exe"))),
            Err(NO_BASH.to_string())
        );
        assert_eq!(
            find_bash(Some(Path::new(r"C:\mine\bash.exe")), &lookups(None, None)),
            Ok(PathBuf::from(r"C:\mine\bash.exe"))
        );
        assert_eq!(
            find_bash(
                Some(Path::new(r"C:\Windows\System32\bash.exe")),
                &lookups(None, None)
            ),
            Err(format!(
                r"tools.bash.path C:\Windows\System32\bash.exe is the WSL launcher, not a bash mm can run commands with: {NO_BASH}"
            ))
        );
        // However it is written; and only bash.exe there is WSL's.
        assert_eq!(
            find_bash(
                Some(Path::new("c:/windows/SYSTEM32/Bash.exe")),
                &lookups(None, None)
            ),
            Err(format!(
                "tools.bash.path c:/windows/SYSTEM32/Bash.exe is the WSL launcher, not a bash mm can run commands with: {NO_BASH}"
            ))
        );
        assert_eq!(
            find_bash(
                Some(Path::new(r"C:\Windows\System32\cmd.exe")),
                &lookups(None, None)
            ),
            Ok(PathBuf::from(r"C:\Windows\System32\cmd.exe"))
        );
        assert_eq!(
            find_bash(Some(Path::new(r"C:\gone\bash.exe")), &lookups(None, None)),
            Err(r"tools.bash.path C:\gone\bash.exe is not a file".to_string())
        );
    }
}

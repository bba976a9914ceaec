//! Where a cwd's session files live: `sessions.dir` resolved once, canonical, and refused when
//! it leads outside the cwd although the user did not choose it (docs/config.md, "Trust"). A
//! cloned repository may ship `.mm/sessions` as a symlink, or a trusted project a `sessions.dir`
//! of `../elsewhere`: mm must neither write session files there nor clear old temporary files
//! there.

use std::fs;
use std::path::{Component, Path, PathBuf};

use crate::config::SessionsConfig;

/// A session folder that leads outside its cwd, which the user's own configuration did not set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "session folder {} leads outside {} (to {}): mm saves, lists and removes no session file there; set sessions.dir in your own config to keep sessions outside the project",
    dir.display(),
    cwd.display(),
    target.display()
)]
pub struct OutsideProject {
    /// `sessions.dir` as configured.
    pub dir: PathBuf,
    /// The cwd, canonical.
    pub cwd: PathBuf,
    /// Where it leads.
    pub target: PathBuf,
}

/// The session folder of `cwd` (absolute), canonical as far as it exists: `<cwd>/<sessions.dir>`
/// with every symlink followed. Outside the canonical cwd it is refused, unless
/// `sessions.user_dir` (the user's own layers set `sessions.dir`).
pub fn resolve_dir(cwd: &Path, sessions: &SessionsConfig) -> Result<PathBuf, OutsideProject> {
    let real_cwd = crate::paths::canonical(cwd).unwrap_or_else(|_| crate::paths::normalize(cwd));
    let (path, dangling) = real_path(&real_cwd.join(&sessions.dir));
    if sessions.user_dir || (dangling.is_none() && path.starts_with(&real_cwd)) {
        return Ok(path);
    }
    Err(OutsideProject {
        dir: sessions.dir.clone(),
        cwd: real_cwd,
        target: dangling.unwrap_or(path),
    })
}

/// `path` with every symlink of its existing part followed, the rest appended as written (`..`
/// taken lexically where nothing exists). Beside it, the target of a part that is a symlink to
/// nothing: where it leads cannot be known before something creates it.
fn real_path(path: &Path) -> (PathBuf, Option<PathBuf>) {
    let mut out = PathBuf::new();
    let mut exists = true;
    let mut dangling = None;
    for part in path.components() {
        match part {
            Component::Prefix(_) | Component::RootDir => out.push(part.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(name) => {
                out.push(name);
                if !exists {
                    continue;
                }
                match crate::paths::canonical(&out) {
                    Ok(real) => out = real,
                    Err(_) => {
                        exists = false;
                        if fs::symlink_metadata(&out).is_ok() {
                            dangling = Some(fs::read_link(&out).unwrap_or_else(|_| out.clone()));
                        }
                    }
                }
            }
        }
    }
    (out, dangling)
}

#[cfg(all(test, unix))]
#[allow(clippy::unwrap_used, clippy::disallowed_methods)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use std::os::unix::fs::symlink;

    fn sessions(dir: &str, user_dir: bool) -> SessionsConfig {
        SessionsConfig {
            enabled: true,
            dir: PathBuf::from(dir),
            user_dir,
            keep: crate::config::SESSIONS_KEEP,
        }
    }

    #[test]
    fn a_folder_inside_resolves_canonical_whether_or_not_it_exists() {
        let tmp = tempfile::tempdir().unwrap();
        let cwd = tmp.path().canonicalize().unwrap();
        fs::create_dir_all(cwd.join("real")).unwrap();
        symlink(cwd.join("real"), cwd.join("link")).unwrap();
        let resolve = |dir: &str| resolve_dir(&cwd, &sessions(dir, false));
        assert_eq!(resolve(".mm/sessions"), Ok(cwd.join(".mm/sessions")));
        assert_eq!(resolve("link/s"), Ok(cwd.join("real/s")));
        assert_eq!(resolve("a/../b"), Ok(cwd.join("b")));
    }

    #[test]
    fn a_folder_that_leads_outside_is_refused_unless_the_user_chose_it() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let cwd = root.join("proj");
        let outside = root.join("outside");
        fs::create_dir_all(cwd.join(".mm")).unwrap();
        fs::create_dir_all(&outside).unwrap();
        symlink(&outside, cwd.join(".mm/sessions")).unwrap();
        symlink(root.join("nowhere"), cwd.join("dangling")).unwrap();
        let refused = |dir: &str, target: PathBuf| {
            Err(OutsideProject {
                dir: PathBuf::from(dir),
                cwd: cwd.clone(),
                target,
            })
        };
        let resolve = |dir: &str, user: bool| resolve_dir(&cwd, &sessions(dir, user));
        assert_eq!(
            resolve(".mm/sessions", false),
            refused(".mm/sessions", outside.clone())
        );
        assert_eq!(
            resolve("../outside/s", false),
            refused("../outside/s", outside.join("s"))
        );
        assert_eq!(
            resolve("dangling", false),
            refused("dangling", root.join("nowhere"))
        );
        assert_eq!(resolve(".mm/sessions", true), Ok(outside.clone()));
        assert_eq!(resolve("../outside/s", true), Ok(outside.join("s")));
        assert_eq!(
            resolve(".mm/sessions", false).unwrap_err().to_string(),
            format!(
                "session folder .mm/sessions leads outside {} (to {}): mm saves, lists and removes no session file there; set sessions.dir in your own config to keep sessions outside the project",
                cwd.display(),
                outside.display()
            )
        );
    }
}

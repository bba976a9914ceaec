//! Running the real `mm` as a plain user, for the tests of the fence that must hold for root and
//! for a user alike: as root (these machines), a system user made once (`useradd`) and entered
//! with `setpriv`, with a link to the binary in a folder that user can reach (cargo's target
//! folder may lie under `/root`, mode 0700); as a user already, the binary as it is.
//!
//! [`Who::get`] says why a variant cannot run here (on stderr) and the test returns early.
#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods
)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command as StdCommand;
use std::sync::OnceLock;

/// The system user the tests become as root.
const NAME: &str = "mm-fence-test";

/// Who runs `mm` in a test.
#[derive(Debug, Clone)]
pub enum Who {
    /// The test's own user, root.
    Root,
    /// A plain user: `setpriv` to `uid`/`gid` when the tests run as root, nothing else when
    /// they already run as that user.
    User { uid: u32, gid: u32, setpriv: bool },
}

fn euid() -> u32 {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() }
}

impl Who {
    /// The variant `root` (true) or the plain user; when it cannot run here, the test is
    /// skipped with the reason ([`crate::skip`]: under `CI=true` it fails).
    pub fn get(root: bool) -> Who {
        let who = match (root, euid()) {
            (true, 0) => Ok(Who::Root),
            (true, uid) => Err(format!("the tests run as uid {uid}, not root")),
            (false, 0) => plain_user().clone(),
            (false, uid) => Ok(Who::User {
                uid,
                // SAFETY: getegid cannot fail.
                gid: unsafe { libc::getegid() },
                setpriv: false,
            }),
        };
        who.unwrap_or_else(|why| crate::skip(why))
    }

    pub fn is_root(&self) -> bool {
        matches!(self, Who::Root)
    }

    /// Gives `path` and everything under it to the user (nothing for root).
    pub fn own(&self, path: &Path) {
        if let Who::User {
            uid,
            gid,
            setpriv: true,
        } = self
        {
            let status = StdCommand::new("chown")
                .arg("-R")
                .arg(format!("{uid}:{gid}"))
                .arg(path)
                .status()
                .unwrap();
            assert!(status.success(), "chown -R {}", path.display());
        }
    }

    /// The program and first arguments that run `bin` as this user. `dir` is a folder of the
    /// test's own that the user can reach ([`scene`]), where the user's link to the binary
    /// goes.
    pub fn program(&self, bin: &Path, dir: &Path) -> (PathBuf, Vec<String>) {
        let binary = self.binary(bin, dir);
        match self {
            Who::Root | Who::User { setpriv: false, .. } => (binary, Vec::new()),
            Who::User { uid, gid, .. } => (
                PathBuf::from("setpriv"),
                vec![
                    format!("--reuid={uid}"),
                    format!("--regid={gid}"),
                    "--clear-groups".into(),
                    "--".into(),
                    binary.display().to_string(),
                ],
            ),
        }
    }

    /// The path of `bin` this user runs (a link in `dir` for the user `setpriv` becomes).
    pub fn binary(&self, bin: &Path, dir: &Path) -> PathBuf {
        match self {
            Who::User { setpriv: true, .. } => reachable_copy(bin, dir),
            Who::Root | Who::User { .. } => bin.to_path_buf(),
        }
    }
}

/// A link to `bin` (a copy across file systems) in `dir`, a folder the user can reach.
fn reachable_copy(bin: &Path, dir: &Path) -> PathBuf {
    let target = dir.join("mm");
    if !target.exists() && std::fs::hard_link(bin, &target).is_err() {
        std::fs::copy(bin, &target).unwrap();
    }
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o755)).unwrap();
    target
}

/// Whether anyone can reach `dir` (every folder above it searchable by others).
fn reachable(dir: &Path) -> bool {
    dir.ancestors()
        .all(|p| std::fs::metadata(p).is_ok_and(|m| m.permissions().mode() & 0o001 != 0))
}

/// A folder of the test's own for its home, project and decoys, outside the temp folders (which
/// the fence lets commands write) and reachable by the plain user
/// ([`super::outside_the_fence_where`]).
pub fn scene() -> tempfile::TempDir {
    let dir = super::outside_the_fence_where(reachable);
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

/// The test user, made once per test process, checked to be able to make the namespaces the
/// fence needs.
fn plain_user() -> &'static Result<Who, String> {
    static USER: OnceLock<Result<Who, String>> = OnceLock::new();
    USER.get_or_init(|| {
        let id = |flag: &str| -> Option<u32> {
            let out = StdCommand::new("id").arg(flag).arg(NAME).output().ok()?;
            String::from_utf8(out.stdout).ok()?.trim().parse().ok()
        };
        if id("-u").is_none() {
            // Another test process may be making it at the same time: its "already exists"
            // (exit 9) is as good.
            let made = StdCommand::new("useradd")
                .args(["--system", "--no-create-home", "--user-group"])
                .args(["--shell", "/usr/sbin/nologin", NAME])
                .status()
                .map_err(|e| format!("cannot run useradd to make a plain user: {e}"))?;
            if !made.success() && made.code() != Some(9) {
                return Err(format!("useradd {NAME} failed ({made})"));
            }
        }
        let (Some(uid), Some(gid)) = (id("-u"), id("-g")) else {
            return Err(format!("no uid for {NAME}"));
        };
        let ns = StdCommand::new("setpriv")
            .args([
                &format!("--reuid={uid}"),
                &format!("--regid={gid}"),
                "--clear-groups",
                "--",
                "unshare",
                "-Urm",
                "true",
            ])
            .status()
            .map_err(|e| format!("cannot run setpriv to become {NAME}: {e}"))?;
        if !ns.success() {
            return Err(format!(
                "the kernel does not let {NAME} make a user namespace (unshare -Urm: {ns}), so its fence has no mount namespace"
            ));
        }
        Ok(Who::User {
            uid,
            gid,
            setpriv: true,
        })
    })
}

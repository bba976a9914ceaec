//! The places hidden inside the fence (docs/sandbox.md, "Secrets out of reach"): the usual
//! secret places of the home ([`SECRETS`]), the sockets of container engines, mm's own config
//! file, `tools.sandboxHidden`, less what `tools.sandboxReadable` gives back. Commands find
//! them empty (Linux: an over-mount in the fence's mount namespace; macOS: Seatbelt refuses
//! reading them), and mm's own tools that read files refuse them ([`Hidden::refuses`]).
//!
//! And the package caches that are writable by default in `workspace-write` ([`caches`]), so
//! that builds work fenced.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The secret places of a home folder, relative to it: keys, tokens, credentials, shell
/// histories, browser profiles (the docs' list, on every system: a place that is not there
/// hides nothing).
pub const SECRETS: [&str; 42] = [
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".kube",
    ".docker/config.json",
    ".netrc",
    ".git-credentials",
    ".config/git/credentials",
    ".config/gh",
    ".pypirc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".npmrc",
    ".yarnrc.yml",
    ".gem/credentials",
    ".vault-token",
    ".password-store",
    ".local/share/keyrings",
    ".bash_history",
    ".zsh_history",
    ".zhistory",
    ".sh_history",
    ".history",
    ".local/share/fish/fish_history",
    ".python_history",
    ".node_repl_history",
    ".psql_history",
    ".mysql_history",
    ".sqlite_history",
    ".mozilla",
    ".config/google-chrome",
    ".config/chromium",
    ".config/BraveSoftware",
    ".config/microsoft-edge",
    "snap/firefox",
    "Library/Keychains",
    "Library/Cookies",
    "Library/Safari",
    "Library/Application Support/Google/Chrome",
    "Library/Application Support/Firefox",
];

/// The sockets of the Docker and Podman daemons (whoever reaches one is root on the machine,
/// or the user without a fence), besides those in `$XDG_RUNTIME_DIR` ([`runtime_sockets`]).
pub const SOCKETS: [&str; 3] = [
    "/var/run/docker.sock",
    "/run/docker.sock",
    "/run/podman/podman.sock",
];

/// The container sockets of a user's runtime folder (`$XDG_RUNTIME_DIR`).
pub fn runtime_sockets(runtime: &Path) -> Vec<PathBuf> {
    ["docker.sock", "podman/podman.sock"]
        .iter()
        .map(|s| runtime.join(s))
        .collect()
}

/// The package caches writable in `workspace-write` by default, where they exist: cargo's
/// registry and git checkouts (not `$CARGO_HOME` whole: its `bin/` and `config.toml` run
/// later, outside the fence), npm's, pip's, uv's, Go's build and module caches. `var` reads
/// the environment (`CARGO_HOME`, `XDG_CACHE_HOME`, `GOPATH`, `GOMODCACHE`, `GOCACHE`), which
/// only the binary does.
pub fn caches(home: &Path, var: impl Fn(&str) -> Option<OsString>) -> Vec<PathBuf> {
    let set = |name: &str| var(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let cargo = set("CARGO_HOME").unwrap_or_else(|| home.join(".cargo"));
    let cache = set("XDG_CACHE_HOME").unwrap_or_else(|| home.join(".cache"));
    let gopath = set("GOPATH").unwrap_or_else(|| home.join("go"));
    vec![
        cargo.join("registry"),
        cargo.join("git"),
        home.join(".npm"),
        cache.join("pip"),
        cache.join("uv"),
        set("GOCACHE").unwrap_or_else(|| cache.join("go-build")),
        set("GOMODCACHE").unwrap_or_else(|| gopath.join("pkg/mod")),
    ]
}

/// The hidden places of a process, as configured (absolute, normalized); each is looked up
/// again for every call and check, so that a place made after start is hidden too.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hidden {
    places: Vec<PathBuf>,
}

impl Hidden {
    /// The home's [`SECRETS`], the container sockets, `extra` (mm's config files, the runtime
    /// folder's sockets) and `tools.sandboxHidden` (`added`), without those at or under a
    /// `tools.sandboxReadable` entry (`readable`).
    pub fn new(
        home: Option<&Path>,
        extra: &[PathBuf],
        added: &[PathBuf],
        readable: &[PathBuf],
    ) -> Hidden {
        let readable: Vec<PathBuf> = readable
            .iter()
            .map(|r| crate::paths::normalize(r))
            .collect();
        let mut places: Vec<PathBuf> = Vec::new();
        let all = home
            .into_iter()
            .flat_map(|h| SECRETS.iter().map(move |s| h.join(s)))
            .chain(SOCKETS.iter().map(PathBuf::from))
            .chain(extra.iter().cloned())
            .chain(added.iter().cloned());
        for p in all {
            let p = crate::paths::normalize(&p);
            if !readable.iter().any(|r| p.starts_with(r)) && !places.contains(&p) {
                places.push(p);
            }
        }
        Hidden { places }
    }

    /// Every place, as configured.
    pub fn places(&self) -> &[PathBuf] {
        &self.places
    }

    /// Where each place is now (symlinks followed, as a mount or a read would follow them),
    /// those that exist, with whether each is a folder; none lying in another.
    pub fn present(&self) -> Vec<(PathBuf, bool)> {
        let mut found: Vec<(PathBuf, bool)> = Vec::new();
        for p in &self.places {
            let Ok(real) = crate::paths::canonical(p) else {
                continue;
            };
            let Ok(meta) = std::fs::metadata(&real) else {
                continue;
            };
            if !found.iter().any(|(f, _)| real.starts_with(f)) {
                found.retain(|(f, _)| !f.starts_with(&real));
                found.push((real, meta.is_dir()));
            }
        }
        found
    }

    /// Every place where it leads now (symlinks followed, the part that does not exist kept):
    /// Seatbelt matches the path a read really opens.
    pub fn real_places(&self) -> Vec<PathBuf> {
        self.places.iter().map(|p| super::real_path(p)).collect()
    }

    /// Whether reading `path` (absolute) would reach a hidden place: by the path as given, or
    /// where it leads (symlinks followed).
    pub fn covers(&self, path: &Path) -> bool {
        let given = crate::paths::normalize(path);
        let real = super::real_path(path);
        self.places.iter().any(|p| {
            given.starts_with(p) || real.starts_with(p) || real.starts_with(super::real_path(p))
        })
    }

    /// The refusal of a read by mm's own tools (`read_file`, `edit_file`, `lsp`, `@path`):
    /// one line, naming the key that gives the place back.
    pub fn refusal(path: &Path) -> String {
        format!(
            "[{} is hidden by the sandbox: mm's tools and commands do not read it (tools.sandboxReadable in your user config gives a place back)]",
            path.display()
        )
    }
}

#[cfg(all(test, unix))]
#[allow(clippy::unwrap_used, clippy::disallowed_methods)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn readable_narrows_and_added_places_join_the_list() {
        let home = Path::new("/h");
        let h = Hidden::new(
            Some(home),
            &[PathBuf::from("/h/.config/mm/config.toml")],
            &[
                PathBuf::from("/srv/secrets"),
                PathBuf::from("/h/.ssh/../.ssh"),
            ],
            &[PathBuf::from("/h/.aws"), PathBuf::from("/h/.config")],
        );
        assert!(h.places().contains(&PathBuf::from("/h/.ssh")));
        assert!(h.places().contains(&PathBuf::from("/srv/secrets")));
        assert!(!h.places().contains(&PathBuf::from("/h/.aws")));
        // Under a readable folder: given back.
        assert!(!h.places().contains(&PathBuf::from("/h/.config/gh")));
        assert!(
            !h.places()
                .contains(&PathBuf::from("/h/.config/mm/config.toml"))
        );
        assert_eq!(h.places().iter().filter(|p| p.ends_with(".ssh")).count(), 1);
        assert!(h.covers(Path::new("/h/.ssh/id_ed25519")));
        assert!(h.covers(Path::new("/h/x/../.ssh")));
        assert!(!h.covers(Path::new("/h/.sshx")));
        assert!(!h.covers(Path::new("/h/.aws/credentials")));
    }

    #[test]
    fn a_link_to_a_hidden_place_is_covered_and_present_places_are_real() {
        let dir = tempfile::tempdir().unwrap();
        let home = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        std::fs::write(home.join(".ssh/id"), "key").unwrap();
        std::fs::write(home.join(".netrc"), "machine").unwrap();
        std::os::unix::fs::symlink(home.join(".ssh"), home.join("link")).unwrap();
        let h = Hidden::new(Some(&home), &[], &[home.join(".ssh/id")], &[]);
        assert!(h.covers(&home.join("link/id")));
        assert_eq!(
            h.present(),
            [(home.join(".ssh"), true), (home.join(".netrc"), false)]
        );
    }

    #[test]
    fn caches_follow_the_environment() {
        let home = Path::new("/h");
        let none = caches(home, |_| None);
        assert_eq!(
            none,
            [
                "/h/.cargo/registry",
                "/h/.cargo/git",
                "/h/.npm",
                "/h/.cache/pip",
                "/h/.cache/uv",
                "/h/.cache/go-build",
                "/h/go/pkg/mod",
            ]
            .map(PathBuf::from)
        );
        let set = caches(home, |v| match v {
            "CARGO_HOME" => Some("/c".into()),
            "XDG_CACHE_HOME" => Some("/x".into()),
            "GOPATH" => Some("".into()),
            _ => None,
        });
        assert_eq!(set[0], PathBuf::from("/c/registry"));
        assert_eq!(set[3], PathBuf::from("/x/pip"));
        assert_eq!(set[6], PathBuf::from("/h/go/pkg/mod"));
    }
}

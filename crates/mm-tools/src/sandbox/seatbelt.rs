//! The Seatbelt profile of a fenced command on macOS (docs/platforms.md), written by a pure
//! function so that it is tested here and checked by `sandbox-exec -p <profile> true` on the
//! macOS CI runner. The rule is Linux's: everything may be read and run; writes only
//! under the writable roots (the cwd, the temp folders, `tools.sandboxWritable`) and to a few
//! device files; the protected paths under a root (`.mm/`, the config) and the folders above
//! them up to that root read-only; the hidden places (docs/sandbox.md, "Secrets out of
//! reach") neither read nor written, by path, so that one made later is hidden too; signals
//! only to processes of the same sandbox; and the network of `tools.network` ([`Outbound`]).
//! macOS has no network namespace: in `allowlist` the one address a command may connect to over
//! IP is mm's proxy on the host's loopback, in `none` none at all (unix sockets stay open).
//!
//! Paths are as `sandbox-exec` matches them, canonical: `/tmp`, `/var` and `/etc` are links
//! to `/private/…` on macOS, and a rule on the link would match nothing.

use std::fmt::Write;
use std::path::{Path, PathBuf};

use mm_core::config::SandboxMode;

use super::paths::DEVICE_FILES;

/// Where a fenced command's IP connections may go (`tools.network`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outbound {
    /// `open`: anywhere, as without the fence.
    Open,
    /// `allowlist`: only mm's proxy, listening on this port of the host's loopback.
    Proxy(u16),
    /// `none`: nowhere (mm's proxy could not be started falls here too: the fence fails closed).
    Nowhere,
}

/// The folders macOS keeps under `/private`, reached through a link of the same name at `/`.
const PRIVATE: [&str; 3] = ["/tmp", "/var", "/etc"];

/// The profile for `mode`: `writable` are the roots commands may write under (none in
/// `read-only`), `protected` the paths kept read-only under them, each with whether it is a
/// folder (everything under it) or a file, `hidden` the places neither read nor written
/// (last: in Seatbelt the last rule that matches decides), `outbound` where connections go.
pub fn profile(
    mode: SandboxMode,
    writable: &[PathBuf],
    protected: &[(PathBuf, bool)],
    hidden: &[PathBuf],
    outbound: Outbound,
) -> String {
    let mut p = String::new();
    let _ = writeln!(p, "(version 1)");
    let _ = writeln!(p, "; mm's fence: tools.sandbox = {mode}");
    p.push_str("(allow default)\n(deny file-write*)\n");
    p.push_str("(allow file-write-data file-ioctl");
    for dev in DEVICE_FILES {
        let _ = write!(p, " (literal {})", quoted(Path::new(dev)));
    }
    p.push_str(")\n");
    let roots: Vec<PathBuf> = match mode {
        SandboxMode::WorkspaceWrite => writable.iter().map(|r| canonical(r)).collect(),
        SandboxMode::Off | SandboxMode::ReadOnly => Vec::new(),
    };
    for root in &roots {
        let mut kept = Vec::new();
        for (path, folder) in protected {
            let path = canonical(path);
            if !path.starts_with(root) {
                continue;
            }
            let rule = if *folder { "subpath" } else { "literal" };
            kept.push(format!("(require-not ({rule} {}))", quoted(&path)));
            // The folders above it up to the root: renaming one would take it away.
            for above in path.ancestors().skip(1) {
                if !above.starts_with(root) {
                    break;
                }
                let rule = format!("(require-not (literal {}))", quoted(above));
                if !kept.contains(&rule) {
                    kept.push(rule);
                }
            }
        }
        match kept.is_empty() {
            true => {
                let _ = writeln!(p, "(allow file-write* (subpath {}))", quoted(root));
            }
            false => {
                let _ = writeln!(
                    p,
                    "(allow file-write* (require-all (subpath {}) {}))",
                    quoted(root),
                    kept.join(" ")
                );
            }
        }
    }
    if !hidden.is_empty() {
        p.push_str("(deny file-read* file-write*");
        for place in hidden {
            let _ = write!(p, " (subpath {})", quoted(&canonical(place)));
        }
        p.push_str(")\n");
    }
    // Every IP connection out is refused, then the proxy's port let through: the last rule
    // that matches decides. `localhost` is the loopback, 127.0.0.1 and ::1.
    match outbound {
        Outbound::Open => {}
        Outbound::Proxy(port) => {
            p.push_str("(deny network-outbound (remote ip \"*:*\"))\n");
            let _ = writeln!(
                p,
                "(allow network-outbound (remote ip \"localhost:{port}\"))"
            );
        }
        Outbound::Nowhere => p.push_str("(deny network-outbound (remote ip \"*:*\"))\n"),
    }
    p.push_str("(deny signal)\n(allow signal (target same-sandbox))\n");
    p
}

/// `path` with `/tmp`, `/var` and `/etc` as the `/private/…` folders they link to.
fn canonical(path: &Path) -> PathBuf {
    for link in PRIVATE {
        if let Ok(rest) = path.strip_prefix(link) {
            let private = Path::new("/private").join(link.trim_start_matches('/'));
            // Joined only when there is a rest: `join("")` would add a trailing `/`.
            return match rest.as_os_str().is_empty() {
                true => private,
                false => private.join(rest),
            };
        }
    }
    path.to_path_buf()
}

/// A path as a Seatbelt string: in double quotes, `\` and `"` escaped.
fn quoted(path: &Path) -> String {
    let text = path.to_string_lossy();
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    const DEVICES: &str = r#"(allow file-write-data file-ioctl (literal "/dev/null") (literal "/dev/zero") (literal "/dev/full") (literal "/dev/tty") (literal "/dev/ptmx"))"#;

    #[test]
    #[cfg_attr(
        windows,
        ignore = "macOS paths joined with Windows' separator: the profile is only made on macOS"
    )]
    fn workspace_write_opens_the_roots_but_not_mm_folders_and_their_parents() {
        let got = profile(
            SandboxMode::WorkspaceWrite,
            &[
                PathBuf::from("/Users/u/project"),
                PathBuf::from("/tmp"),
                PathBuf::from("/var/folders/xy/T"),
                PathBuf::from("/Users/u/.cargo"),
            ],
            &[
                (PathBuf::from("/Users/u/project/.mm"), true),
                (PathBuf::from("/Users/u/project/sub/.mm"), true),
                (PathBuf::from("/Users/u/.config/mm"), true),
                (PathBuf::from("/tmp/cfg/mm.toml"), false),
            ],
            &[
                PathBuf::from("/Users/u/.ssh"),
                PathBuf::from("/Users/u/.aws"),
                PathBuf::from("/Users/u/.config/mm/config.toml"),
                PathBuf::from("/var/run/docker.sock"),
            ],
            Outbound::Open,
        );
        let want = [
            "(version 1)",
            "; mm's fence: tools.sandbox = workspace-write",
            "(allow default)",
            "(deny file-write*)",
            DEVICES,
            r#"(allow file-write* (require-all (subpath "/Users/u/project") (require-not (subpath "/Users/u/project/.mm")) (require-not (literal "/Users/u/project")) (require-not (subpath "/Users/u/project/sub/.mm")) (require-not (literal "/Users/u/project/sub"))))"#,
            r#"(allow file-write* (require-all (subpath "/private/tmp") (require-not (literal "/private/tmp/cfg/mm.toml")) (require-not (literal "/private/tmp/cfg")) (require-not (literal "/private/tmp"))))"#,
            r#"(allow file-write* (subpath "/private/var/folders/xy/T"))"#,
            r#"(allow file-write* (subpath "/Users/u/.cargo"))"#,
            r#"(deny file-read* file-write* (subpath "/Users/u/.ssh") (subpath "/Users/u/.aws") (subpath "/Users/u/.config/mm/config.toml") (subpath "/private/var/run/docker.sock"))"#,
            "(deny signal)",
            "(allow signal (target same-sandbox))",
            "",
        ];
        assert_eq!(got, want.join("\n"));
    }

    #[test]
    fn read_only_opens_only_the_devices() {
        let got = profile(
            SandboxMode::ReadOnly,
            &[PathBuf::from("/Users/u/project")],
            &[(PathBuf::from("/Users/u/project/.mm"), true)],
            &[PathBuf::from("/Users/u/.ssh")],
            Outbound::Open,
        );
        let want = [
            "(version 1)",
            "; mm's fence: tools.sandbox = read-only",
            "(allow default)",
            "(deny file-write*)",
            DEVICES,
            r#"(deny file-read* file-write* (subpath "/Users/u/.ssh"))"#,
            "(deny signal)",
            "(allow signal (target same-sandbox))",
            "",
        ];
        assert_eq!(got, want.join("\n"));
    }

    /// The profile of `outbound` in `read-only` with nothing protected or hidden.
    fn with_network(outbound: Outbound) -> String {
        profile(SandboxMode::ReadOnly, &[], &[], &[], outbound)
    }

    #[test]
    fn the_network_goes_only_to_mms_proxy_in_allowlist_nowhere_in_none_anywhere_in_open() {
        let head = [
            "(version 1)",
            "; mm's fence: tools.sandbox = read-only",
            "(allow default)",
            "(deny file-write*)",
            DEVICES,
        ];
        let tail = ["(deny signal)", "(allow signal (target same-sandbox))", ""];
        let golden = |network: &[&str]| {
            let mut lines = head.to_vec();
            lines.extend_from_slice(network);
            lines.extend_from_slice(&tail);
            lines.join("\n")
        };
        assert_eq!(
            with_network(Outbound::Proxy(49152)),
            golden(&[
                r#"(deny network-outbound (remote ip "*:*"))"#,
                r#"(allow network-outbound (remote ip "localhost:49152"))"#,
            ])
        );
        assert_eq!(
            with_network(Outbound::Nowhere),
            golden(&[r#"(deny network-outbound (remote ip "*:*"))"#])
        );
        assert_eq!(with_network(Outbound::Open), golden(&[]));
    }

    #[test]
    fn quotes_and_backslashes_in_a_path_are_escaped() {
        let got = profile(
            SandboxMode::WorkspaceWrite,
            &[PathBuf::from(r#"/Users/u/a "b"\c"#)],
            &[],
            &[],
            Outbound::Open,
        );
        assert!(
            got.contains(r#"(allow file-write* (subpath "/Users/u/a \"b\"\\c"))"#),
            "{got}"
        );
        // A path that only starts like a private link is left alone.
        assert_eq!(
            canonical(Path::new("/tmpfiles/x")),
            PathBuf::from("/tmpfiles/x")
        );
        assert_eq!(canonical(Path::new("/etc")), PathBuf::from("/private/etc"));
    }
}

//! The network of fenced commands (docs/sandbox.md, "The network"): `tools.network`,
//! `tools.networkAllow` and `tools.networkExpose` — the user's keys only, like the sandbox's —
//! and what an entry of `tools.networkAllow` (or of an entry's own `networkAllow`) matches.

use std::net::IpAddr;

/// `tools.network`: where a fenced command's connections may go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum NetworkMode {
    /// Through mm's proxy, to the hosts of `tools.networkAllow` only (the default).
    #[default]
    Allowlist,
    /// Anywhere, as without a fence.
    Open,
    /// Nowhere but the fence's own loopback.
    None,
}

impl NetworkMode {
    /// The names `tools.network` takes.
    pub const NAMES: [&'static str; 3] = ["allowlist", "open", "none"];

    pub fn parse(name: &str) -> Option<NetworkMode> {
        match name {
            "allowlist" => Some(NetworkMode::Allowlist),
            "open" => Some(NetworkMode::Open),
            "none" => Some(NetworkMode::None),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            NetworkMode::Allowlist => "allowlist",
            NetworkMode::Open => "open",
            NetworkMode::None => "none",
        }
    }
}

/// The hosts `tools.networkAllow` holds when the user sets none: the common package registries
/// and code hosts (the list docs/sandbox.md writes out).
pub const DEFAULT_ALLOW: [&str; 24] = [
    "crates.io",
    "*.crates.io",
    "static.rust-lang.org",
    "registry.npmjs.org",
    "registry.yarnpkg.com",
    "pypi.org",
    "files.pythonhosted.org",
    "proxy.golang.org",
    "sum.golang.org",
    "rubygems.org",
    "repo.maven.apache.org",
    "repo1.maven.org",
    "plugins.gradle.org",
    "api.nuget.org",
    "hackage.haskell.org",
    "github.com",
    "*.github.com",
    "*.githubusercontent.com",
    "gitlab.com",
    "codeberg.org",
    "bitbucket.org",
    "deb.debian.org",
    "archive.ubuntu.com",
    "security.ubuntu.com",
];

/// The network's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkConfig {
    pub mode: NetworkMode,
    /// `tools.networkAllow`, as written (each checked by [`AllowEntry::parse`]).
    pub allow: Vec<String>,
    /// `tools.networkExpose`: the ports of the fence's loopback that mm forwards the host's
    /// 127.0.0.1 to (a dev server to open in a browser); detection skips them.
    pub expose: Vec<u16>,
}

impl Default for NetworkConfig {
    fn default() -> Self {
        NetworkConfig {
            mode: NetworkMode::Allowlist,
            allow: DEFAULT_ALLOW.iter().map(|s| s.to_string()).collect(),
            expose: Vec::new(),
        }
    }
}

/// One entry of `tools.networkAllow`: `"host"`, `"*.host"` (any name below it, not the host
/// itself), an address (`"127.0.0.1"`, `"::1"`), each with an optional `:port` (`[::1]:8080`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AllowEntry {
    host: Host,
    port: Option<u16>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Host {
    Name(String),
    Below(String),
    Address(IpAddr),
}

impl AllowEntry {
    /// Parses an entry; `Err` says what is wrong with it.
    pub fn parse(text: &str) -> Result<AllowEntry, String> {
        let t = text.trim();
        let (host, port) = split_port(t)?;
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        if host.is_empty() {
            return Err("names no host".into());
        }
        let host = if let Ok(ip) = host.parse::<IpAddr>() {
            Host::Address(ip)
        } else if let Some(rest) = host.strip_prefix("*.") {
            check_name(rest)?;
            Host::Below(rest.to_string())
        } else {
            check_name(&host)?;
            Host::Name(host)
        };
        Ok(AllowEntry { host, port })
    }

    /// Whether a connection to `host` (as the client named it, lower case) on `port` is allowed.
    pub fn matches(&self, host: &str, port: u16) -> bool {
        if self.port.is_some_and(|p| p != port) {
            return false;
        }
        let host = host.trim_end_matches('.');
        match &self.host {
            Host::Name(n) => n == host,
            Host::Below(n) => host.len() > n.len() + 1 && host.ends_with(&format!(".{n}")),
            Host::Address(ip) => host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .parse::<IpAddr>()
                .is_ok_and(|h| h == *ip),
        }
    }

    /// The port it names, if any.
    pub fn port(&self) -> Option<u16> {
        self.port
    }

    /// Whether the entry names `addr` itself (an address entry), which alone lets a connection
    /// reach a loopback or private address; `localhost` names the loopback.
    pub fn names_address(&self, addr: IpAddr) -> bool {
        match &self.host {
            Host::Address(ip) => *ip == addr,
            Host::Name(n) => n == "localhost" && addr.is_loopback(),
            Host::Below(_) => false,
        }
    }
}

fn split_port(t: &str) -> Result<(&str, Option<u16>), String> {
    let port = |p: &str| {
        p.parse::<u16>()
            .ok()
            .filter(|p| *p > 0)
            .map(Some)
            .ok_or_else(|| format!("has a port that is not a number from 1 to 65535 ({p:?})"))
    };
    if let Some(rest) = t.strip_prefix('[') {
        let (addr, after) = rest
            .split_once(']')
            .ok_or_else(|| "has a [ without its ]".to_string())?;
        return match after.strip_prefix(':') {
            Some(p) => Ok((addr, port(p)?)),
            None if after.is_empty() => Ok((addr, None)),
            None => Err(format!("has {after:?} after its ]")),
        };
    }
    match t.matches(':').count() {
        0 => Ok((t, None)),
        1 => {
            let (h, p) = t.split_once(':').unwrap_or((t, ""));
            Ok((h, port(p)?))
        }
        // An IPv6 address without a port.
        _ => Ok((t, None)),
    }
}

fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.split('.').all(|label| {
            !label.is_empty()
                && label
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        });
    match ok {
        true => Ok(()),
        false => Err(format!(
            "is not a host name, \"*.\" and a host name, or an address ({name:?})"
        )),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn entries_match_their_host_their_subdomains_and_their_port() {
        let e = |s| AllowEntry::parse(s).unwrap();
        assert!(e("github.com").matches("github.com", 443));
        assert!(!e("github.com").matches("api.github.com", 443));
        assert!(e("*.github.com").matches("api.github.com", 443));
        assert!(!e("*.github.com").matches("github.com", 443));
        assert!(!e("*.github.com").matches("evilgithub.com", 443));
        assert!(e("GitHub.com.").matches("github.com", 80));
        assert!(e("127.0.0.1:8080").matches("127.0.0.1", 8080));
        assert!(!e("127.0.0.1:8080").matches("127.0.0.1", 8081));
        assert!(e("[::1]:8080").matches("[::1]", 8080));
        assert!(e("::1").matches("::1", 1));
        assert!(e("127.0.0.1").names_address("127.0.0.1".parse().unwrap()));
        assert!(!e("*.example.com").names_address("127.0.0.1".parse().unwrap()));
        assert!(e("localhost:3000").names_address("::1".parse().unwrap()));
        for bad in ["", "*.", "a b", "host:0", "host:x", "[::1", "exa/mple"] {
            assert!(AllowEntry::parse(bad).is_err(), "{bad:?}");
        }
        for entry in DEFAULT_ALLOW {
            assert!(AllowEntry::parse(entry).is_ok(), "{entry}");
        }
    }
}

//! The fence's network rule (docs/sandbox.md, "The network"): where a fenced command's
//! connections may go (`tools.network`, `tools.networkAllow`), the line a refused host gets —
//! the same in the proxy's 403, in the `bash` result and in `fetch_content`'s — and the log of
//! refusals that the `bash` tool and the turn's recap read. The proxy that applies it is
//! `proxy.rs`; the namespace whose only way out it is, the system's fence (`linux/net.rs`).

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};

use mm_core::config::{AllowEntry, NetworkConfig, NetworkMode};

/// The network of one fence: its mode and, in `allowlist`, the entries that let a connection
/// through.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Door {
    pub mode: NetworkMode,
    pub allow: Vec<AllowEntry>,
}

impl Door {
    /// The door of a configuration; an entry that does not parse (the configuration checked
    /// them) is left out.
    pub fn of(config: &NetworkConfig) -> Door {
        Door {
            mode: config.mode,
            allow: parse_all(&config.allow),
        }
    }

    /// The open door: no namespace of its own, today's network.
    pub fn open() -> Door {
        Door {
            mode: NetworkMode::Open,
            allow: Vec::new(),
        }
    }

    /// Whether commands get a network namespace of their own (every mode but `open`).
    pub fn isolated(&self) -> bool {
        self.mode != NetworkMode::Open
    }

    /// Whether its namespace has mm's proxy as its way out.
    pub fn proxied(&self) -> bool {
        self.mode == NetworkMode::Allowlist
    }

    /// Where a connection to `host` (as the client named it) on `port` may go: the addresses it
    /// resolves to that the rule lets through, or the refusal's line. Names are resolved here,
    /// once, and only the addresses returned are connected to (a second answer of the name
    /// server cannot send the connection elsewhere); a loopback or private address is refused
    /// unless a matching entry names it (an allowed `*.host` resolving to 127.0.0.1 must not
    /// reach the model server).
    pub async fn resolve(&self, host: &str, port: u16) -> Result<Vec<SocketAddr>, String> {
        self.resolve_with(host, port, &[])
            .await
            .map_err(Refused::line)
    }

    /// [`Door::resolve`] with the entries of `granted` besides the list's (the hosts a session's
    /// user allowed: [`Passage`]); a host off both is [`Refused::Unlisted`].
    pub async fn resolve_with(
        &self,
        host: &str,
        port: u16,
        granted: &[AllowEntry],
    ) -> Result<Vec<SocketAddr>, Refused> {
        let bare = bare(host);
        let bare = bare.as_str();
        if self.mode == NetworkMode::None {
            return Err(Refused::Closed(format!(
                "[network refused: {bare}:{port}: tools.network = \"none\" (no connection leaves the fence)]"
            )));
        }
        let matching: Vec<&AllowEntry> = match self.mode {
            NetworkMode::Open => Vec::new(),
            NetworkMode::Allowlist | NetworkMode::None => self
                .allow
                .iter()
                .chain(granted)
                .filter(|e| e.matches(bare, port))
                .collect(),
        };
        if self.mode != NetworkMode::Open && matching.is_empty() {
            return Err(Refused::Unlisted(refusal(bare, port)));
        }
        let addrs: Vec<SocketAddr> = match bare.parse::<IpAddr>() {
            Ok(ip) => vec![SocketAddr::new(ip, port)],
            Err(_) => match tokio::net::lookup_host((bare, port)).await {
                Ok(found) => found.collect(),
                Err(e) => {
                    return Err(Refused::Closed(format!("mm could not resolve {bare}: {e}")));
                }
            },
        };
        if self.mode == NetworkMode::Open {
            return Ok(addrs);
        }
        let kept: Vec<SocketAddr> = addrs
            .iter()
            .copied()
            .filter(|a| !local(a.ip()) || matching.iter().any(|e| e.names_address(a.ip())))
            .collect();
        match (kept.is_empty(), addrs.first()) {
            (true, Some(first)) => Err(Refused::Closed(private_refusal(bare, port, first.ip()))),
            (true, None) => Err(Refused::Closed(format!(
                "mm could not resolve {bare}: no address"
            ))),
            (false, _) => Ok(kept),
        }
    }
}

/// A host as the door compares it: lower case, no final dot, no brackets.
pub(super) fn bare(host: &str) -> String {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .to_string()
}

/// Why the door refused a connection: the refusal's line, and whether the user may be asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// The host is on no list: a session in `ask` mode asks its user ([`Passage::resolve`]).
    Unlisted(String),
    /// `tools.network = "none"`, a loopback or private address, no address: never asked.
    Closed(String),
}

impl Refused {
    pub fn line(self) -> String {
        match self {
            Refused::Unlisted(line) | Refused::Closed(line) => line,
        }
    }
}

fn parse_all(list: &[String]) -> Vec<AllowEntry> {
    list.iter()
        .filter_map(|e| AllowEntry::parse(e).ok())
        .collect()
}

/// The line of a host not on the list: the 403's body, the model's line.
pub fn refusal(host: &str, port: u16) -> String {
    format!(
        "[network refused: {host}:{port} is not in tools.networkAllow (add \"{host}\" to tools.networkAllow in your config to allow it)]"
    )
}

fn private_refusal(host: &str, port: u16, ip: IpAddr) -> String {
    format!(
        "[network refused: {host}:{port} resolves to {ip}, a loopback or private address, which only an entry of tools.networkAllow naming that address lets through]"
    )
}

/// Whether `ip` is on this machine or a private network: loopback, unspecified, private,
/// link-local, shared (100.64/10), unique-local; an IPv4 address mapped in IPv6 as itself.
pub fn local(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            v4.is_loopback()
                || v4.is_unspecified()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_broadcast()
                || (o[0] == 100 && (o[1] & 0xc0) == 64)
                || o[0] == 0
        }
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => local(IpAddr::V4(v4)),
            None => {
                let s = v6.segments()[0];
                v6.is_loopback()
                    || v6.is_unspecified()
                    || (s & 0xfe00) == 0xfc00
                    || (s & 0xffc0) == 0xfe80
            }
        },
    }
}

/// The refusals of a process's fences, in order: each `bash` call takes those made while it
/// ran ([`Refusals::since`]), the recap counts them.
#[derive(Debug, Clone, Default)]
pub struct Refusals(Arc<Mutex<Vec<String>>>);

impl Refusals {
    pub fn record(&self, line: &str) {
        if let Ok(mut all) = self.0.lock() {
            all.push(line.to_string());
        }
    }

    /// How many so far: the mark for [`Refusals::since`].
    pub fn count(&self) -> usize {
        self.0.lock().map(|all| all.len()).unwrap_or(0)
    }

    /// The distinct lines recorded after `mark`, in order.
    pub fn since(&self, mark: usize) -> Vec<String> {
        let Ok(all) = self.0.lock() else {
            return Vec::new();
        };
        let mut lines: Vec<String> = Vec::new();
        for l in all.iter().skip(mark) {
            if !lines.contains(l) {
                lines.push(l.clone());
            }
        }
        lines
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn door(allow: &[&str]) -> Door {
        Door::of(&NetworkConfig {
            mode: NetworkMode::Allowlist,
            allow: allow.iter().map(|s| s.to_string()).collect(),
            expose: Vec::new(),
        })
    }

    #[tokio::test]
    async fn a_host_off_the_list_and_a_name_resolving_to_the_loopback_are_refused() {
        let d = door(&["localhost", "*.localhost", "127.0.0.1:9"]);
        assert_eq!(
            d.resolve("127.0.0.1", 9).await.unwrap(),
            ["127.0.0.1:9".parse().unwrap()]
        );
        assert_eq!(
            d.resolve("127.0.0.1", 10).await.unwrap_err(),
            "[network refused: 127.0.0.1:10 is not in tools.networkAllow (add \"127.0.0.1\" to tools.networkAllow in your config to allow it)]"
        );
        // An allowed wildcard whose name resolves to the loopback (*.localhost does, by
        // RFC 6761, in glibc's resolver) does not reach the machine's servers.
        if let Err(e) = d.resolve("model.localhost", 8080).await {
            assert!(
                e.contains("a loopback or private address") || e.contains("could not resolve"),
                "{e}"
            );
        }
        assert!(d.resolve("localhost", 8080).await.is_ok());
        assert!(local("10.1.2.3".parse().unwrap()));
        assert!(local("::ffff:192.168.1.1".parse().unwrap()));
        assert!(local("fd00::1".parse().unwrap()));
        assert!(!local("140.82.112.3".parse().unwrap()));
    }
}

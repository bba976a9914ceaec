//! The ports a fence's network namespace forwards to and from the host's loopback
//! (docs/sandbox.md, "The network"); the system's fence does it (Linux: `linux/forward.rs`;
//! elsewhere there is no namespace, so nothing to forward).

use std::net::{IpAddr, Ipv4Addr};

use mm_core::config::AllowEntry;

/// What one fence forwards.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Forwarding {
    /// `tools.networkExpose`: the host's 127.0.0.1:PORT to the fence's (commands' fences only).
    pub expose: Vec<u16>,
    /// The loopback ports an entry's own `networkAllow` names (`127.0.0.1:PORT`,
    /// `localhost:PORT`): the fence's 127.0.0.1:PORT to the host's, since a client leaves its
    /// loopback out of the proxy (`NO_PROXY`; mm's own model client too).
    pub reach: Vec<u16>,
}

impl Forwarding {
    /// The ports of `list`'s entries that name the IPv4 loopback with a port.
    pub fn reach_of(list: &[String]) -> Vec<u16> {
        let mut ports: Vec<u16> = list
            .iter()
            .filter_map(|e| AllowEntry::parse(e).ok())
            .filter(|e| e.names_address(IpAddr::V4(Ipv4Addr::LOCALHOST)))
            .filter_map(|e| e.port())
            .collect();
        ports.sort_unstable();
        ports.dedup();
        ports
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_entries_with_a_port_are_reached_through_the_fences_loopback() {
        let list = [
            "127.0.0.1:8080",
            "localhost:1234",
            "127.0.0.1",
            "example.com:80",
            "10.0.0.1:80",
            "127.0.0.1:8080",
        ]
        .map(String::from);
        assert_eq!(Forwarding::reach_of(&list), [1234, 8080]);
    }
}

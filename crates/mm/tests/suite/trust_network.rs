//! The fence's network (docs/sandbox.md, "The network"): a fenced command's only way out is
//! mm's proxy, which lets through the hosts of `tools.networkAllow` and refuses the others with
//! a 403 whose line the model gets too; nothing a fenced command serves is reachable from the
//! host. The real `mm -p` against the fake server, as root and as a plain user, every address
//! on the loopback.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]
#![cfg(target_os = "linux")]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};

use crate::trust_fence::{FENCED, Scene, as_root_and_user, bash, scene};
use pretty_assertions::assert_eq;

/// A server on the host's loopback that answers every request with `body`, until the test
/// ends; its port.
fn host_server(body: &'static str) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let answer = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(answer.as_bytes());
        }
    });
    port
}

async fn only_the_allowed_host_is_reached_through_the_proxy(s: Scene) {
    let allowed = host_server("allowed\n");
    let other = host_server("secret\n");
    s.user_config(&format!(
        "{FENCED}networkAllow = [\"127.0.0.1:{allowed}\"]\n"
    ));
    let refused = format!(
        "[network refused: 127.0.0.1:{other} is not in tools.networkAllow (add \"127.0.0.1\" to tools.networkAllow in your config to allow it)]"
    );
    let (_, results) = s
        .attack(
            &s.project,
            &[],
            vec![
                // Plain HTTP through the proxy (curl leaves 127.0.0.1 out of it by NO_PROXY,
                // as the namespace's own loopback: --noproxy '' sends everything to it).
                bash(&format!("curl -s --noproxy '' http://127.0.0.1:{allowed}/")),
                // CONNECT.
                bash(&format!("curl -s -p --noproxy '' http://127.0.0.1:{allowed}/")),
                bash(&format!("curl -s --noproxy '' http://127.0.0.1:{other}/")),
                bash(&format!(
                    "curl -s -p --noproxy '' http://127.0.0.1:{other}/; echo \" curl: $?\""
                )),
                // Without the proxy: the namespace's own loopback, and no route anywhere else.
                bash(&format!(
                    "env -u HTTP_PROXY -u http_proxy curl -s http://127.0.0.1:{allowed}/; echo \"curl: $?\"; python3 -c 'import socket; socket.create_connection((\"10.0.0.1\", 80), timeout=5)' 2>&1 | tail -1"
                )),
                bash("echo \"$HTTPS_PROXY $https_proxy $ALL_PROXY $NO_PROXY\" | sed 's/1:[0-9]*/1:PORT/g'"),
            ],
            |_| {},
        )
        .await;
    assert_eq!(results[0], "allowed\n");
    assert_eq!(results[1], "allowed\n");
    assert_eq!(results[2], format!("{refused}\n{refused}"));
    assert_eq!(results[3], format!(" curl: 56\n{refused}"));
    assert_eq!(
        results[4],
        "curl: 7\nOSError: [Errno 101] Network is unreachable\n"
    );
    assert_eq!(
        results[5],
        "http://127.0.0.1:PORT http://127.0.0.1:PORT http://127.0.0.1:PORT localhost,127.0.0.1,::1\n"
    );
}

as_root_and_user!(
    only_the_allowed_host_is_reached_through_the_proxy_as_root,
    only_the_allowed_host_is_reached_through_the_proxy_as_a_user,
    only_the_allowed_host_is_reached_through_the_proxy
);

async fn network_open_is_todays_network(s: Scene) {
    let port = host_server("direct\n");
    s.user_config(&format!("{FENCED}network = \"open\"\n"));
    let (_, results) = s
        .attack(
            &s.project,
            &[],
            vec![bash(&format!(
                "curl -s http://127.0.0.1:{port}/; echo \"[${{HTTP_PROXY-none}}]\""
            ))],
            |_| {},
        )
        .await;
    assert_eq!(results[0], "direct\n[none]\n");
}

as_root_and_user!(
    network_open_is_todays_network_as_root,
    network_open_is_todays_network_as_a_user,
    network_open_is_todays_network
);

/// A free port of the host's loopback (bound, then let go).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

async fn a_server_a_fenced_command_starts_does_not_answer_outside(s: Scene) {
    let port = free_port();
    let pidfile = s.project.join("server.pid");
    // The command starts a server, waits until it answers inside, and leaves it running.
    let start = format!(
        "python3 -m http.server {port} --bind 127.0.0.1 > /dev/null 2>&1 & echo $! > {pid}; until curl -s -o /dev/null http://127.0.0.1:{port}/; do :; done; echo up",
        pid = pidfile.display()
    );
    let (_, results) = s.attack(&s.project, &[], vec![bash(&start)], |_| {}).await;
    assert_eq!(results[0], "up\n");
    let err = TcpStream::connect(("127.0.0.1", port)).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::ConnectionRefused);
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // SAFETY: a signal to the server the test's command started.
    unsafe { libc::kill(pid, libc::SIGKILL) };
}

as_root_and_user!(
    a_server_a_fenced_command_starts_does_not_answer_outside_as_root,
    a_server_a_fenced_command_starts_does_not_answer_outside_as_a_user,
    a_server_a_fenced_command_starts_does_not_answer_outside
);

//! Ports forwarded between the host's loopback and a fence's network namespace (docs/sandbox.md,
//! "The network"), both ways through sockets of the namespace that mm makes without entering it
//! ([`Inside::socket`]):
//!
//! - [`Port::Expose`] (`tools.networkExpose`): mm listens on the host's 127.0.0.1:PORT and
//!   connects each client to the namespace's 127.0.0.1:PORT (a dev server to open in a
//!   browser). Nothing else a fenced command serves is reachable from the host.
//! - [`Port::Reach`] (an entry's `networkAllow` naming `127.0.0.1:PORT` or `localhost:PORT`):
//!   mm listens on the namespace's 127.0.0.1:PORT and connects each client to the host's (an
//!   asked agent's model server on this machine, which its client reaches without a proxy).
//!
//! Like the proxy, it runs on a thread of its own with a runtime of its own, stopped when the
//! namespace's holder drops it. A port that cannot be bound (another program holds it on the
//! host) is one line in the log, never an error of the fence.

use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::namespace::Inside;

/// The buffers of each direction of a forwarded connection (as the proxy's).
const COPY_BUFFER: usize = 256 * 1024;

/// One forwarded port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Port {
    /// The host's 127.0.0.1:PORT to the namespace's.
    Expose(u16),
    /// The namespace's 127.0.0.1:PORT to the host's.
    Reach(u16),
}

/// The running forwards of one namespace; dropping them stops them.
#[derive(Debug)]
pub struct Forwards {
    stop: CancellationToken,
}

impl Forwards {
    pub(super) fn start(inside: Inside, ports: &[Port]) -> io::Result<Forwards> {
        let stop = CancellationToken::new();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let token = stop.clone();
        let ports = ports.to_vec();
        let inside = Arc::new(inside);
        std::thread::Builder::new()
            .name("mm-forward".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let mut serving = JoinSet::new();
                    for port in ports {
                        match listen(&inside, port) {
                            Ok(listener) => {
                                serving.spawn(serve(listener, port, Arc::clone(&inside)));
                            }
                            Err(e) => tracing::warn!("{}", taken(port, &e)),
                        }
                    }
                    token.cancelled().await;
                    serving.shutdown().await;
                });
            })?;
        Ok(Forwards { stop })
    }
}

impl Drop for Forwards {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// The line of a port that could not be bound.
pub fn taken(port: Port, e: &io::Error) -> String {
    match port {
        Port::Expose(p) => format!(
            "tools.networkExpose: 127.0.0.1:{p} of the host could not be bound ({e}): the fence's server on port {p} is not reachable from the host"
        ),
        Port::Reach(p) => format!(
            "networkAllow: 127.0.0.1:{p} could not be bound in the fence ({e}): its process reaches the host's port {p} only through mm's proxy"
        ),
    }
}

fn loopback(port: u16) -> SocketAddr {
    SocketAddr::from((Ipv4Addr::LOCALHOST, port))
}

/// A socket of the namespace's network, for tokio.
fn socket_inside(inside: &Inside) -> io::Result<TcpSocket> {
    let stream = std::net::TcpStream::from(inside.socket()?);
    stream.set_nonblocking(true)?;
    Ok(TcpSocket::from_std_stream(stream))
}

/// The listener of `port`: on the host's loopback (expose) or the namespace's (reach).
fn listen(inside: &Inside, port: Port) -> io::Result<TcpListener> {
    let (socket, p) = match port {
        Port::Expose(p) => (TcpSocket::new_v4()?, p),
        Port::Reach(p) => (socket_inside(inside)?, p),
    };
    socket.set_reuseaddr(true)?;
    socket.bind(loopback(p))?;
    socket.listen(1024)
}

async fn serve(listener: TcpListener, port: Port, inside: Arc<Inside>) {
    // The connections' tasks are owned here: stopping the forward drops them all.
    let mut clients = JoinSet::new();
    loop {
        tokio::select! {
            Some(_) = clients.join_next(), if !clients.is_empty() => {}
            accepted = listener.accept() => {
                if let Ok((stream, _)) = accepted {
                    let inside = Arc::clone(&inside);
                    clients.spawn(async move {
                        let _ = forward(stream, port, &inside).await;
                    });
                }
            }
        }
    }
}

/// One client: its connection on the other side, then the bytes both ways.
async fn forward(mut client: TcpStream, port: Port, inside: &Arc<Inside>) -> io::Result<()> {
    let _ = client.set_nodelay(true);
    let mut other = match port {
        // The fork that makes the socket blocks this thread (the forwards' own) for about a
        // millisecond, once per connection.
        Port::Expose(p) => socket_inside(inside)?.connect(loopback(p)).await?,
        Port::Reach(p) => TcpStream::connect(loopback(p)).await?,
    };
    let _ = other.set_nodelay(true);
    tokio::io::copy_bidirectional_with_sizes(&mut client, &mut other, COPY_BUFFER, COPY_BUFFER)
        .await?;
    Ok(())
}

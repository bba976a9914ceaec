//! One session's share of the fence's network (docs/sandbox.md, "Asking"): the connections its
//! commands were refused (its `bash` calls' results, its turn's recap), the hosts its user
//! allowed for the rest of the session, and who may be asked about a host the allow-list does
//! not name. Each session has its own ([`super::Sandbox::for_session`]), and its own namespace
//! and proxy on Linux, so that nothing of it is counted or allowed in another session.
//!
//! The proxy runs on a thread of its own and knows no front end: a question goes down a channel
//! to whoever listens ([`Passage::listen`]: a `bash` call of the session in `ask` mode, which puts
//! it to its front end), and the connection waits for the answer alone, the others going on.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use mm_core::config::AllowEntry;
use mm_core::event::NetworkAnswer;
use tokio::sync::{mpsc, oneshot};

use super::network::{Door, Refusals, Refused, bare};

/// A session's network: cloned, the same one.
#[derive(Debug, Clone, Default)]
pub struct Passage(Arc<Shared>);

#[derive(Debug, Default)]
struct Shared {
    refusals: Refusals,
    /// The hosts answered "for this session", as entries (`host`, any port).
    granted: Mutex<Vec<AllowEntry>>,
    /// Who listens for questions, the latest last.
    listeners: Mutex<Vec<(u64, mpsc::UnboundedSender<Asked>)>>,
    next: AtomicU64,
}

/// A question of the proxy: the host and port a connection waits for, and where the answer
/// goes (dropped unanswered: refused).
#[derive(Debug)]
pub struct Asked {
    pub host: String,
    pub port: u16,
    pub reply: oneshot::Sender<NetworkAnswer>,
}

/// The questions of a passage while it is held; dropped, nobody listens here any more.
#[derive(Debug)]
pub struct Listening {
    passage: Passage,
    id: u64,
    pub questions: mpsc::UnboundedReceiver<Asked>,
}

impl Drop for Listening {
    fn drop(&mut self) {
        if let Ok(mut all) = self.passage.0.listeners.lock() {
            all.retain(|(id, _)| *id != self.id);
        }
    }
}

/// A passage as a key (its namespace's, its proxy's): the same passage, the same key, and no
/// other while the key lives, alive or not; it does not keep the passage.
#[derive(Debug, Clone)]
pub struct PassageKey(Weak<Shared>);

impl PassageKey {
    /// Whether its session still holds the passage (else what was made for it may go).
    pub fn alive(&self) -> bool {
        self.0.strong_count() > 0
    }

    /// The passage, while its session holds it.
    pub fn passage(&self) -> Option<Passage> {
        self.0.upgrade().map(Passage)
    }
}

impl PartialEq for PassageKey {
    fn eq(&self, other: &Self) -> bool {
        self.0.ptr_eq(&other.0)
    }
}

impl Eq for PassageKey {}

impl std::hash::Hash for PassageKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.as_ptr().hash(state);
    }
}

impl Passage {
    /// The connections refused in this session, in order.
    pub fn refusals(&self) -> &Refusals {
        &self.0.refusals
    }

    pub fn key(&self) -> PassageKey {
        PassageKey(Arc::downgrade(&self.0))
    }

    /// Listens for the proxy's questions until the [`Listening`] is dropped; the latest
    /// listener is asked.
    pub fn listen(&self) -> Listening {
        let (tx, rx) = mpsc::unbounded_channel();
        let id = self.0.next.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut all) = self.0.listeners.lock() {
            all.push((id, tx));
        }
        Listening {
            passage: self.clone(),
            id,
            questions: rx,
        }
    }

    /// Puts a question to the latest listener: `None` when nobody listens (or it left before
    /// answering).
    pub async fn ask(&self, host: String, port: u16) -> Option<NetworkAnswer> {
        let listener = self
            .0
            .listeners
            .lock()
            .ok()
            .and_then(|all| all.last().map(|(_, tx)| tx.clone()))?;
        let (reply, answer) = oneshot::channel();
        listener.send(Asked { host, port, reply }).ok()?;
        answer.await.ok()
    }

    /// Where a connection to `host` on `port` may go: the door's answer with the hosts allowed
    /// for the session; a host on no list is put to `ask` (`None`: nobody can be asked) and the
    /// answer taken — "once" lets this connection through, "session" the host from now on. A
    /// refusal is recorded and returned as its line.
    pub async fn resolve<F, Fut>(
        &self,
        door: &Door,
        host: &str,
        port: u16,
        ask: F,
    ) -> Result<Vec<SocketAddr>, String>
    where
        F: FnOnce(String, u16) -> Fut,
        Fut: Future<Output = Option<NetworkAnswer>>,
    {
        let result = match door.resolve_with(host, port, &self.granted()).await {
            Ok(addrs) => Ok(addrs),
            Err(Refused::Closed(line)) => Err(line),
            Err(Refused::Unlisted(line)) => {
                let bare = bare(host);
                match ask(bare.clone(), port).await {
                    None | Some(NetworkAnswer::No) => Err(line),
                    Some(NetworkAnswer::Once) => match entry(&bare, Some(port)) {
                        Some(once) => door.resolve_with(host, port, &[once]).await,
                        None => Err(Refused::Closed(line)),
                    }
                    .map_err(Refused::line),
                    Some(NetworkAnswer::Session) => {
                        if let (Some(e), Ok(mut granted)) =
                            (entry(&bare, None), self.0.granted.lock())
                            && !granted.contains(&e)
                        {
                            granted.push(e);
                        }
                        door.resolve_with(host, port, &self.granted())
                            .await
                            .map_err(Refused::line)
                    }
                }
            }
        };
        if let Err(line) = &result {
            self.0.refusals.record(line);
        }
        result
    }

    fn granted(&self) -> Vec<AllowEntry> {
        self.0.granted.lock().map(|g| g.clone()).unwrap_or_default()
    }
}

/// The entry that names `host` (and `port`), as the user could have written it.
fn entry(host: &str, port: Option<u16>) -> Option<AllowEntry> {
    let text = match (host.contains(':'), port) {
        (true, Some(p)) => format!("[{host}]:{p}"),
        (false, Some(p)) => format!("{host}:{p}"),
        (_, None) => host.to_string(),
    };
    AllowEntry::parse(&text).ok()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use mm_core::config::{NetworkConfig, NetworkMode};

    fn door() -> Door {
        Door::of(&NetworkConfig {
            mode: NetworkMode::Allowlist,
            allow: vec!["127.0.0.1:9".into()],
            expose: Vec::new(),
        })
    }

    #[tokio::test]
    async fn once_lets_one_connection_through_and_session_the_host_for_the_session_only() {
        let (p, other) = (Passage::default(), Passage::default());
        let d = door();
        let at = |port| vec![SocketAddr::from(([127, 0, 0, 1], port))];
        // Nobody to ask: refused, recorded.
        let refused = p.resolve(&d, "127.0.0.1", 10, |_, _| async { None }).await;
        assert_eq!(
            refused.unwrap_err(),
            "[network refused: 127.0.0.1:10 is not in tools.networkAllow (add \"127.0.0.1\" to tools.networkAllow in your config to allow it)]"
        );
        assert_eq!(p.refusals().count(), 1);
        let once = p.resolve(&d, "127.0.0.1", 10, |_, _| async {
            Some(NetworkAnswer::Once)
        });
        assert_eq!(once.await.unwrap(), at(10));
        // Once is once: the next connection asks again.
        let asked = p.resolve(&d, "127.0.0.1", 10, |h, port| async move {
            assert_eq!((h.as_str(), port), ("127.0.0.1", 10));
            Some(NetworkAnswer::Session)
        });
        assert_eq!(asked.await.unwrap(), at(10));
        let unasked = p.resolve(&d, "127.0.0.1", 11, |_, _| async { unreachable!() });
        assert_eq!(unasked.await.unwrap(), at(11));
        // Another session's passage neither has the host nor counts this one's refusal.
        let theirs = other
            .resolve(&d, "127.0.0.1", 11, |_, _| async { None })
            .await;
        assert!(theirs.is_err());
        assert_eq!((p.refusals().count(), other.refusals().count()), (1, 1));
        // What is never asked: `none`, and a name resolving to the loopback.
        let none = Door::of(&NetworkConfig {
            mode: NetworkMode::None,
            allow: Vec::new(),
            expose: Vec::new(),
        });
        let closed = p.resolve(&none, "example.com", 80, |_, _| async { unreachable!() });
        assert!(closed.await.is_err());
    }

    #[tokio::test]
    async fn the_latest_listener_is_asked_and_nobody_once_it_left() {
        let p = Passage::default();
        assert_eq!(p.ask("h".into(), 1).await, None);
        let first = p.listen();
        let mut second = p.listen();
        let answering = async {
            let q = second.questions.recv().await.unwrap();
            assert_eq!((q.host.as_str(), q.port), ("h", 1));
            q.reply.send(NetworkAnswer::Once).unwrap();
        };
        let (asked, ()) = tokio::join!(p.ask("h".into(), 1), answering);
        assert_eq!(asked, Some(NetworkAnswer::Once));
        drop(second);
        drop(first);
        assert_eq!(p.ask("h".into(), 1).await, None);
        let key = p.key();
        assert!(key.alive() && key == p.clone().key());
        drop(p);
        assert!(!key.alive());
    }
}

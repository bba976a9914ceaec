//! stdout for the protocol, written by one dedicated thread.
//!
//! `tokio::io::stdout()` hands every write and flush to the blocking pool: one thread hop per
//! JSON-RPC message, which dominated the cost of a streamed answer or a `session/load` replay.
//! Here the async side only queues bytes; the thread writes whatever has queued up in one go
//! and flushes when the queue is empty, so a burst costs a few system calls, not one per message.

use std::io::Write;
use std::pin::Pin;
use std::sync::mpsc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::AsyncWrite;

enum Msg {
    Data(Vec<u8>),
    /// Answered once everything queued before it is written and flushed.
    Sync(mpsc::Sender<()>),
}

/// The async end: queues bytes for the writer thread.
#[derive(Clone)]
pub struct ThreadWriter {
    tx: mpsc::Sender<Msg>,
}

impl ThreadWriter {
    /// Starts the thread that owns the process's stdout.
    pub fn stdout() -> Self {
        Self::spawn(std::io::stdout())
    }

    /// Starts a thread that owns `out`.
    pub fn spawn<W: Write + Send + 'static>(out: W) -> Self {
        let (tx, rx) = mpsc::channel::<Msg>();
        let _ = std::thread::Builder::new()
            .name("mm-stdout".into())
            .spawn(move || {
                let mut out = std::io::BufWriter::with_capacity(64 * 1024, out);
                let mut broken = false;
                while let Ok(first) = rx.recv() {
                    let mut next = Some(first);
                    while let Some(msg) = next {
                        match msg {
                            Msg::Data(bytes) if !broken => broken = out.write_all(&bytes).is_err(),
                            Msg::Data(_) => {}
                            Msg::Sync(done) => {
                                broken |= out.flush().is_err();
                                let _ = done.send(());
                            }
                        }
                        next = rx.try_recv().ok();
                    }
                    if !broken {
                        broken = out.flush().is_err();
                    }
                }
            });
        ThreadWriter { tx }
    }

    /// Queues whole lines in one piece (after everything queued before).
    pub fn write_lines(&self, lines: impl Iterator<Item = String>) {
        let mut bytes = Vec::new();
        for line in lines {
            bytes.extend_from_slice(line.as_bytes());
        }
        let _ = self.tx.send(Msg::Data(bytes));
    }

    /// Waits (at most `limit`) until everything queued so far is written.
    pub fn drain(&self, limit: Duration) {
        let (done_tx, done_rx) = mpsc::channel();
        if self.tx.send(Msg::Sync(done_tx)).is_ok() {
            let _ = done_rx.recv_timeout(limit);
        }
    }
}

impl AsyncWrite for ThreadWriter {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match self.tx.send(Msg::Data(buf.to_vec())) {
            Ok(()) => Poll::Ready(Ok(buf.len())),
            Err(_) => Poll::Ready(Err(std::io::ErrorKind::BrokenPipe.into())),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::sync::{Arc, Mutex};
    use tokio::io::AsyncWriteExt;

    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);
    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[tokio::test]
    async fn everything_written_before_drain_is_out_in_order() {
        let sink = Shared::default();
        let mut w = ThreadWriter::spawn(sink.clone());
        for i in 0..1000 {
            w.write_all(format!("{i}\n").as_bytes()).await.unwrap();
        }
        w.drain(Duration::from_secs(5));
        let expected: String = (0..1000).map(|i| format!("{i}\n")).collect();
        assert_eq!(
            String::from_utf8(sink.0.lock().unwrap().clone()).unwrap(),
            expected
        );
    }
}

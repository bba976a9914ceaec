//! The protocol's stdout: one queue of bytes that a dedicated writer empties in order.
//!
//! `tokio::io::stdout()` hands every write and flush to the blocking pool: one thread hop per
//! JSON-RPC message, which dominated the cost of a streamed answer or a `session/load` replay.
//! Here the async side only queues bytes; the writer (a thread for the process's stdout, a task
//! for an in-process pipe) writes whatever has queued up in one go and flushes when the queue is
//! empty, so a burst costs a few system calls, not one per message. The SDK's outgoing messages
//! and lines mm serialises itself share the one queue, so they reach the client in the order
//! they were queued, whichever the transport.

use std::io::Write;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

use crate::tasks::Tasks;

/// Room for a burst before a write reaches the underlying writer.
const BUFFER: usize = 64 * 1024;

enum Msg {
    Data(Vec<u8>),
    /// Answered once everything queued before it is written and flushed.
    Sync(std::sync::mpsc::Sender<()>),
    /// The output ends: what was queued before is written, what comes after is dropped.
    Close,
}

/// The async end: queues bytes for the writer.
#[derive(Clone)]
pub struct QueuedWriter {
    tx: mpsc::UnboundedSender<Msg>,
}

impl QueuedWriter {
    /// Starts the thread that owns the process's stdout.
    pub fn stdout() -> Self {
        Self::thread(std::io::stdout())
    }

    /// Starts a thread that owns `out`.
    pub fn thread<W: Write + Send + 'static>(out: W) -> Self {
        let (tx, mut rx) = mpsc::unbounded_channel::<Msg>();
        let _ = std::thread::Builder::new()
            .name("mm-stdout".into())
            .spawn(move || {
                // `None` once the output failed or was closed: later bytes are dropped.
                let mut out = Some(std::io::BufWriter::with_capacity(BUFFER, out));
                let flush = |out: &mut Option<std::io::BufWriter<W>>| {
                    if out.as_mut().is_some_and(|w| w.flush().is_err()) {
                        *out = None;
                    }
                };
                while let Some(first) = rx.blocking_recv() {
                    let mut next = Some(first);
                    while let Some(msg) = next {
                        match msg {
                            Msg::Data(bytes) => {
                                if out.as_mut().is_some_and(|w| w.write_all(&bytes).is_err()) {
                                    out = None;
                                }
                            }
                            Msg::Sync(done) => {
                                flush(&mut out);
                                let _ = done.send(());
                            }
                            Msg::Close => {
                                flush(&mut out);
                                out = None;
                            }
                        }
                        next = rx.try_recv().ok();
                    }
                    flush(&mut out);
                }
            });
        QueuedWriter { tx }
    }

    /// Starts a task (one of `tasks`, on the current tokio runtime) that owns `out`; closing
    /// shuts `out` down, so its reader sees the end.
    pub fn task<W: AsyncWrite + Unpin + Send + 'static>(tasks: &Tasks, out: W) -> Self {
        let (tx, mut rx) = mpsc::unbounded_channel::<Msg>();
        tasks.spawn(async move {
            let mut out = Some(tokio::io::BufWriter::with_capacity(BUFFER, out));
            while let Some(first) = rx.recv().await {
                let mut next = Some(first);
                while let Some(msg) = next {
                    match msg {
                        Msg::Data(bytes) => {
                            if let Some(w) = out.as_mut()
                                && w.write_all(&bytes).await.is_err()
                            {
                                out = None;
                            }
                        }
                        Msg::Sync(done) => {
                            if let Some(w) = out.as_mut()
                                && w.flush().await.is_err()
                            {
                                out = None;
                            }
                            let _ = done.send(());
                        }
                        Msg::Close => {
                            if let Some(mut w) = out.take() {
                                let _ = w.shutdown().await;
                            }
                        }
                    }
                    next = rx.try_recv().ok();
                }
                if let Some(w) = out.as_mut()
                    && w.flush().await.is_err()
                {
                    out = None;
                }
            }
            if let Some(mut w) = out.take() {
                let _ = w.shutdown().await;
            }
        });
        QueuedWriter { tx }
    }

    /// Queues whole lines, already serialised, in one piece (after everything queued before).
    pub fn write_lines(&self, lines: String) {
        let _ = self.tx.send(Msg::Data(lines.into_bytes()));
    }

    /// Ends the output once everything queued so far is written.
    pub fn close(&self) {
        let _ = self.tx.send(Msg::Close);
    }

    /// Waits (at most `limit`) until everything queued so far is written. It blocks the calling
    /// thread: meant for the end of the process, with the thread writer.
    pub fn drain(&self, limit: Duration) {
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        if self.tx.send(Msg::Sync(done_tx)).is_ok() {
            let _ = done_rx.recv_timeout(limit);
        }
    }
}

impl AsyncWrite for QueuedWriter {
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
    use tokio::io::AsyncReadExt;

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
        let mut w = QueuedWriter::thread(sink.clone());
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

    #[tokio::test]
    async fn a_task_writer_keeps_the_order_of_writes_and_queued_lines_and_ends_at_close() {
        let (mut reader, pipe) = tokio::io::duplex(64);
        let mut w = QueuedWriter::task(&Tasks::new(), pipe);
        w.write_all(b"1\n").await.unwrap();
        w.write_lines("2\n3\n".to_string());
        w.write_all(b"4\n").await.unwrap();
        w.close();
        w.write_all(b"after close\n").await.unwrap();
        let mut got = String::new();
        reader.read_to_string(&mut got).await.unwrap();
        assert_eq!(got, "1\n2\n3\n4\n");
    }
}

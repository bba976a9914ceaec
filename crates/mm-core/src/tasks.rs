//! Every task mm spawns has an owner (docs/architecture.md, "Children and the way out"): a
//! [`Tasks`] handed down from the binary, held next to the process `Supervisor` and shut down
//! with it. `clippy.toml` keeps `tokio::spawn`, `Handle::spawn`, `spawn_blocking` and
//! `TaskTracker::spawn*` out of everywhere but this module.
//!
//! Two kinds of task: [`Tasks::spawn`] runs to its end and is awaited at shutdown (a writer that
//! flushes, a reader that ends when its child's pipe closes); [`Tasks::spawn_until_shutdown`] is
//! dropped when shutdown begins (a watcher, a timer, a probe nobody waits for). Blocking jobs
//! ([`Tasks::spawn_blocking`]) are awaited like the first kind, within the same bound: a thread
//! cannot be cut, and one parked on a read is left to the runtime's own end.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::runtime::Handle;
use tokio::task::JoinHandle;
use tokio_util::sync::{CancellationToken, WaitForCancellationFuture};
use tokio_util::task::TaskTracker;
use tokio_util::task::task_tracker::TaskTrackerToken;

/// The owner of spawned tasks: cheap to clone (every clone is the same owner), passed in, never
/// global.
#[derive(Clone, Debug, Default)]
pub struct Tasks {
    tracker: TaskTracker,
    /// The owners this one is a group of: their shutdown waits for its tasks too.
    outer: Arc<[TaskTracker]>,
    cancel: CancellationToken,
}

impl Tasks {
    pub fn new() -> Self {
        Tasks::default()
    }

    /// A group of this owner's tasks that can be waited on by itself (the ACP front end's
    /// answers): its tasks are this owner's too, and its shutdown begins with this one's.
    pub fn group(&self) -> Tasks {
        let mut outer: Vec<TaskTracker> = self.outer.to_vec();
        outer.push(self.tracker.clone());
        Tasks {
            tracker: TaskTracker::new(),
            outer: outer.into(),
            cancel: self.cancel.child_token(),
        }
    }

    /// Tokens that keep every outer owner from finishing its wait while the task runs.
    fn held(&self) -> Vec<TaskTrackerToken> {
        self.outer.iter().map(TaskTracker::token).collect()
    }

    /// Runs `work` to its end; shutdown waits for it (within its bound).
    #[allow(clippy::disallowed_methods, reason = "the one owner of tasks")]
    pub fn spawn<F>(&self, work: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let held = self.held();
        self.tracker.spawn(async move {
            let _held = held;
            work.await
        })
    }

    /// [`Tasks::spawn`] on `handle`'s runtime (code that may run outside one asks
    /// `Handle::try_current` first).
    #[allow(clippy::disallowed_methods, reason = "the one owner of tasks")]
    pub fn spawn_on<F>(&self, work: F, handle: &Handle) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let held = self.held();
        self.tracker.spawn_on(
            async move {
                let _held = held;
                work.await
            },
            handle,
        )
    }

    /// Runs `work` until it ends or shutdown begins, whichever is first: dropped then, so that
    /// nothing waits for a watcher, a timer or a probe.
    pub fn spawn_until_shutdown<F>(&self, work: F) -> JoinHandle<()>
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let cancel = self.cancel.clone();
        self.spawn(async move {
            tokio::select! {
                biased;
                () = cancel.cancelled() => {}
                () = work => {}
            }
        })
    }

    /// Runs `work` on a blocking thread; shutdown waits for it within its bound, no longer.
    #[allow(clippy::disallowed_methods, reason = "the one owner of tasks")]
    pub fn spawn_blocking<F, R>(&self, work: F) -> JoinHandle<R>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        let held = self.held();
        self.tracker.spawn_blocking(move || {
            let _held = held;
            work()
        })
    }

    /// Fires when shutdown begins: a task's own loop may end there.
    pub fn cancelled(&self) -> WaitForCancellationFuture<'_> {
        self.cancel.cancelled()
    }

    /// Whether shutdown has begun.
    pub fn is_shutting_down(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// How many of the tasks still run.
    pub fn len(&self) -> usize {
        self.tracker.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tracker.is_empty()
    }

    /// Waits, at most `bound`, until every task has ended, without cutting any; true when they
    /// all did. Tasks spawned later are still owned (and waited for by the next wait).
    pub async fn wait(&self, bound: Duration) -> bool {
        self.tracker.close();
        let ended = tokio::time::timeout(bound, self.tracker.wait())
            .await
            .is_ok();
        self.tracker.reopen();
        ended
    }

    /// The way out: drops the [`Tasks::spawn_until_shutdown`] tasks, then waits, at most
    /// `bound`, for the others; true when every task ended.
    pub async fn shutdown(&self, bound: Duration) -> bool {
        self.cancel.cancel();
        self.wait(bound).await
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    /// Notes its drop: a task that was cut drops its future.
    struct Dropped(Arc<AtomicBool>);

    impl Drop for Dropped {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    const HANG_GUARD: Duration = Duration::from_secs(10);

    #[tokio::test]
    async fn shutdown_cuts_the_watchers_and_awaits_the_rest() {
        let tasks = Tasks::new();
        let cut = Arc::new(AtomicBool::new(false));
        let guard = Dropped(cut.clone());
        let watcher = tasks.spawn_until_shutdown(async move {
            let _guard = guard;
            std::future::pending::<()>().await
        });
        // A task that ends only once shutdown has begun: shutdown must wait for its end.
        let (finished_tx, finished) = tokio::sync::oneshot::channel();
        let owner = tasks.clone();
        let worker = tasks.spawn(async move {
            owner.cancelled().await;
            tokio::task::yield_now().await;
            let _ = finished_tx.send("flushed");
        });
        let job = tasks.spawn_blocking(|| 6 * 7);
        assert!(tasks.shutdown(HANG_GUARD).await);
        assert!(cut.load(Ordering::SeqCst));
        assert!(tasks.is_empty());
        assert_eq!(finished.await.unwrap(), "flushed");
        watcher.await.unwrap();
        worker.await.unwrap();
        assert_eq!(job.await.unwrap(), 42);
    }

    #[tokio::test]
    async fn shutdown_gives_up_after_its_bound() {
        let tasks = Tasks::new();
        let stuck = tasks.spawn(std::future::pending::<()>());
        assert!(!tasks.shutdown(Duration::from_millis(50)).await);
        assert_eq!(tasks.len(), 1);
        stuck.abort();
    }

    #[tokio::test]
    async fn a_group_is_waited_on_alone_and_by_its_owner() {
        let tasks = Tasks::new();
        let group = tasks.group();
        let (release, released) = tokio::sync::oneshot::channel::<()>();
        group.spawn(async move {
            let _ = released.await;
        });
        // The owner counts the group's task.
        assert_eq!((tasks.len(), group.len()), (1, 1));
        assert!(!tasks.wait(Duration::from_millis(20)).await);
        release.send(()).unwrap();
        assert!(group.wait(HANG_GUARD).await);
        assert!(tasks.wait(HANG_GUARD).await);
        // The owner's shutdown begins the group's.
        let cut = Arc::new(AtomicBool::new(false));
        let guard = Dropped(cut.clone());
        group.spawn_until_shutdown(async move {
            let _guard = guard;
            std::future::pending::<()>().await
        });
        assert!(tasks.shutdown(HANG_GUARD).await);
        assert!(cut.load(Ordering::SeqCst));
        assert!(group.is_shutting_down());
    }
}

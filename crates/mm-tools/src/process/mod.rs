//! Every child process mm starts goes through one [`Supervisor`] (docs/architecture.md, "Children
//! and the way out"): each runs in a tree of its own, a stopped child is asked to stop and its
//! whole tree killed after a grace period, a child dropped while running takes its tree with it,
//! and at exit [`Supervisor::shutdown`] stops whatever is still running, so no exit path leaves
//! an orphan. Next to it, the process's [`Tasks`]: every task mm spawns is one of them, and
//! [`Supervisor::shutdown`] ends them after the children (their readers end with the pipes).
//!
//! The tree is the system's, one module per system (docs/platforms.md): on Unix a process
//! group (or session), asked with SIGTERM and killed with SIGKILL (`unix.rs`); on Windows a Job
//! Object, asked with CTRL_BREAK and ended with `TerminateJobObject` (`windows.rs`).
//!
//! mm spawns every child itself and hands the pipes to whatever speaks to it (a tool's reader,
//! a hook's writer, a protocol library). The one exception to "no orphans" is deliberate
//! (docs/tools.md, `bash`): when a child has exited on its own, what it left running in its
//! group is released, not killed — background jobs of a finished `bash` call survive it.

use std::collections::HashMap;
use std::io;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::process::{ChildStderr, ChildStdin, ChildStdout, Command};

use crate::sandbox::Fencing;
use crate::tasks::Tasks;

#[cfg(unix)]
mod unix;
#[cfg(unix)]
use unix as os;
#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows as os;

use os::Tree;
pub use os::{
    Handed, OutputReader, hand_config, hand_config_text, keep_private, output_reader, read_now,
    signal_of, take_handed_config,
};

/// Names the descriptor of the user's config file that an asking mm hands the mm it starts
/// as an agent (docs/sandbox.md, "Secrets out of reach"): the fence hides the file from the
/// agent, which reads its settings from the descriptor and closes it before it starts
/// anything. Unix only ([`hand_config`], [`take_handed_config`]).
pub const CONFIG_FD_VAR: &str = "MM_CONFIG_FD";

/// Between asking a child's tree to stop (SIGTERM, CTRL_BREAK) and killing it.
pub const KILL_GRACE: Duration = Duration::from_secs(2);

/// How a child's process group is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    /// A new process group (hooks, servers, agents).
    Own,
    /// A new session without a controlling terminal (`bash`: nothing can wait on a tty prompt).
    Session,
}

/// The children of the process.
#[derive(Debug)]
pub struct Supervisor {
    /// The trees of the children that are still ours to stop, by key.
    groups: Mutex<HashMap<u64, Tree>>,
    next: AtomicU64,
    /// Ask → kill escalations in flight (awaited before the process's tasks).
    stopping: Tasks,
    /// The process's tasks.
    tasks: Tasks,
    grace: Duration,
}

impl Default for Supervisor {
    fn default() -> Self {
        Supervisor::with_grace(KILL_GRACE)
    }
}

impl Supervisor {
    pub fn new() -> Arc<Self> {
        Arc::new(Supervisor::default())
    }

    /// A supervisor whose children get `grace` between SIGTERM and SIGKILL.
    pub fn with_grace(grace: Duration) -> Self {
        Supervisor {
            groups: Mutex::new(HashMap::new()),
            next: AtomicU64::new(0),
            stopping: Tasks::new(),
            tasks: Tasks::new(),
            grace,
        }
    }

    /// The process's tasks, shut down by [`Supervisor::shutdown`] (the binary's signal watcher
    /// is one of them, so the binary makes the supervisor first).
    pub fn tasks(&self) -> &Tasks {
        &self.tasks
    }

    /// Starts `cmd` in a group of its own, where `fencing` says (docs/sandbox.md, "What runs
    /// outside the fence"): inside the fence the sandbox gave for it — the child enters it
    /// before `exec`, so the program and every descendant run fenced, and finds
    /// [`FENCED_VAR`](crate::sandbox::FENCED_VAR) set to the mode in its environment (a nested
    /// mm then skips its own namespace) — or outside it for a reason of
    /// [`Unfenced`](crate::sandbox::Unfenced). `cmd` was made by [`Fencing::command`]; its
    /// stdio is as the caller set it.
    pub fn spawn(
        self: &Arc<Self>,
        cmd: &mut Command,
        group: Group,
        fencing: Fencing,
    ) -> io::Result<Child> {
        os::prepare(cmd, group);
        without_keys(cmd);
        fencing.apply(cmd);
        #[allow(
            clippy::disallowed_methods,
            reason = "the Supervisor is where children are started"
        )]
        let mut child = cmd.spawn()?;
        let pgid = match Tree::of(&child) {
            Ok(tree) => tree,
            Err(e) => {
                let _ = child.start_kill();
                return Err(e);
            }
        };
        let key = self.next.fetch_add(1, Ordering::Relaxed);
        if let (Some(pgid), Ok(mut groups)) = (pgid.clone(), self.groups.lock()) {
            groups.insert(key, pgid);
        }
        Ok(Child {
            inner: Some(child),
            pgid,
            key,
            supervisor: Arc::clone(self),
            armed: true,
        })
    }

    /// How many children are still ours to stop (running, or stopping).
    pub fn live(&self) -> usize {
        self.groups.lock().map(|g| g.len()).unwrap_or(0)
    }

    fn holds(&self, key: u64) -> bool {
        self.groups.lock().is_ok_and(|g| g.contains_key(&key))
    }

    fn forget(&self, key: u64) {
        if let Ok(mut groups) = self.groups.lock() {
            groups.remove(&key);
        }
    }

    /// Asks a tree to stop now, kills it after the grace (in the background when a runtime
    /// runs, at once otherwise); the child is reaped.
    fn stop_group(self: &Arc<Self>, mut child: tokio::process::Child, pgid: Tree, key: u64) {
        pgid.ask();
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            pgid.kill();
            let _ = child.start_kill();
            self.forget(key);
            return;
        };
        let me = Arc::clone(self);
        let grace = self.grace;
        self.stopping.spawn_on(
            async move {
                let _ = tokio::time::timeout(grace, child.wait()).await;
                // Members of the tree may outlive its leader (a trapped SIGTERM, a child).
                pgid.kill();
                let _ = child.wait().await;
                me.forget(key);
            },
            &handle,
        );
    }

    /// Stops every child still running (asked, killed after the grace) and waits until
    /// each is gone, then shuts the process's tasks down (watchers dropped, the others awaited
    /// within the grace). Called once on the way out, after the front end has cancelled its
    /// turns.
    pub async fn shutdown(&self) {
        let groups: Vec<Tree> = self
            .groups
            .lock()
            .map(|g| g.values().cloned().collect())
            .unwrap_or_default();
        for pgid in &groups {
            pgid.ask();
        }
        if !groups.is_empty() {
            let deadline = tokio::time::Instant::now() + self.grace;
            while self.live() > 0 && tokio::time::Instant::now() < deadline {
                // Escalations in flight forget their tree when it is gone; the rest are
                // asked whether anything of them still runs.
                let alive = groups.iter().any(Tree::alive);
                if !alive {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            for pgid in &groups {
                pgid.kill();
            }
        }
        self.stopping.wait(self.grace).await;
        if let Ok(mut g) = self.groups.lock() {
            g.clear();
        }
        self.tasks.shutdown(self.grace).await;
    }
}

/// No child inherits the model server's key (`config::KEY_VARS`): bash, hooks, MCP and
/// language servers, asked agents. A value set on the command itself stays: the user wrote it in
/// that server's or agent's own `env`.
fn without_keys(cmd: &mut Command) {
    for var in crate::config::KEY_VARS {
        let set_here = cmd
            .as_std()
            .get_envs()
            .any(|(name, value)| name == var && value.is_some());
        if !set_here {
            cmd.env_remove(var);
        }
    }
}

/// A child process and its group, stopped when dropped while still ours.
#[derive(Debug)]
pub struct Child {
    /// `None` once handed to an escalation task.
    inner: Option<tokio::process::Child>,
    pgid: Option<Tree>,
    key: u64,
    supervisor: Arc<Supervisor>,
    armed: bool,
}

impl Child {
    pub fn id(&self) -> Option<u32> {
        self.inner.as_ref().and_then(|c| c.id())
    }

    pub fn take_stdin(&mut self) -> Option<ChildStdin> {
        self.inner.as_mut().and_then(|c| c.stdin.take())
    }

    pub fn take_stdout(&mut self) -> Option<ChildStdout> {
        self.inner.as_mut().and_then(|c| c.stdout.take())
    }

    pub fn take_stderr(&mut self) -> Option<ChildStderr> {
        self.inner.as_mut().and_then(|c| c.stderr.take())
    }

    /// Waits for the child (the group's leader) to exit.
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        match self.inner.as_mut() {
            Some(c) => c.wait().await,
            None => Err(io::Error::other("the child was stopped")),
        }
    }

    /// Whether the child has exited, without waiting.
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        match self.inner.as_mut() {
            Some(c) => c.try_wait(),
            None => Err(io::Error::other("the child was stopped")),
        }
    }

    /// Stops the child and its whole group: SIGTERM now, SIGKILL after the grace, in the
    /// background so that the caller's answer is not delayed.
    pub fn stop(mut self) {
        self.armed = false;
        self.stop_now();
    }

    /// The child exited on its own: what it left running in its group is released (the
    /// background jobs of a finished `bash` call, a hook's background work).
    pub fn release(mut self) {
        self.armed = false;
        self.supervisor.forget(self.key);
    }

    fn stop_now(&mut self) {
        // A group the supervisor no longer holds was stopped at shutdown: its id may be reused.
        let held = self.supervisor.holds(self.key);
        match (self.pgid.take().filter(|_| held), self.inner.take()) {
            (Some(pgid), Some(child)) => self.supervisor.stop_group(child, pgid, self.key),
            (_, child) => {
                if let Some(mut c) = child {
                    let _ = c.start_kill();
                }
                self.supervisor.forget(self.key);
            }
        }
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if self.armed {
            self.armed = false;
            self.stop_now();
        }
    }
}

// The tests use sh, pids and signals.
#[cfg(all(test, unix))]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use nix::sys::signal::Signal;
    use nix::unistd::Pid;
    use std::process::Stdio;

    fn alive(pid: i32) -> bool {
        nix::sys::signal::kill(Pid::from_raw(pid), None).is_ok()
            && !std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
                s.rsplit(')')
                    .next()
                    .unwrap_or("")
                    .trim_start()
                    .starts_with('Z')
            })
    }

    /// The death of a grandchild has no event to await: poll, bounded.
    async fn gone_within(pid: i32, limit: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        while alive(pid) && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        !alive(pid)
    }

    /// The sandbox off: no fence.
    fn no_fence() -> Fencing {
        crate::sandbox::Sandbox::off()
            .fence(std::path::Path::new("/"))
            .unwrap()
    }

    /// Starts `sh -c` with a background `sleep` in its group; returns the child and the
    /// sleep's pid.
    async fn with_background_sleep(sup: &Arc<Supervisor>, group: Group) -> (Child, i32) {
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg("sleep 300 & echo $!; wait")
            .stdin(Stdio::null())
            .stdout(Stdio::piped());
        let mut child = sup.spawn(&mut cmd, group, no_fence()).unwrap();
        let mut out = child.take_stdout().unwrap();
        let mut line = Vec::new();
        let mut byte = [0u8; 1];
        use tokio::io::AsyncReadExt;
        while out.read(&mut byte).await.unwrap() == 1 && byte[0] != b'\n' {
            line.push(byte[0]);
        }
        let pid = String::from_utf8(line).unwrap().trim().parse().unwrap();
        (child, pid)
    }

    #[tokio::test]
    async fn shutdown_ends_the_process_tasks() {
        let sup = Supervisor::new();
        let watcher = sup.tasks().spawn_until_shutdown(std::future::pending());
        let tasks = sup.tasks().clone();
        let saver = sup.tasks().spawn(async move {
            tasks.cancelled().await;
            "saved"
        });
        tokio::time::timeout(Duration::from_secs(10), sup.shutdown())
            .await
            .unwrap();
        assert!(sup.tasks().is_empty());
        watcher.await.unwrap();
        assert_eq!(saver.await.unwrap(), "saved");
    }

    #[tokio::test]
    async fn a_dropped_running_child_takes_its_group_with_it() {
        let sup = Arc::new(Supervisor::with_grace(Duration::from_millis(200)));
        let (child, sleep) = with_background_sleep(&sup, Group::Own).await;
        assert_eq!(sup.live(), 1);
        drop(child);
        assert!(gone_within(sleep, Duration::from_secs(10)).await);
        sup.shutdown().await;
        assert_eq!(sup.live(), 0);
    }

    #[tokio::test]
    async fn a_released_child_leaves_its_background_jobs_alone() {
        let sup = Arc::new(Supervisor::with_grace(Duration::from_millis(200)));
        let (child, sleep) = with_background_sleep(&sup, Group::Session).await;
        child.release();
        assert_eq!(sup.live(), 0);
        sup.shutdown().await;
        assert!(alive(sleep));
        let _ = nix::sys::signal::kill(Pid::from_raw(sleep), Signal::SIGKILL);
    }

    #[tokio::test]
    async fn shutdown_stops_every_running_child_even_one_that_ignores_sigterm() {
        let sup = Arc::new(Supervisor::with_grace(Duration::from_millis(200)));
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg("trap '' TERM; echo ready; while :; do sleep 0.05; done")
            .stdout(Stdio::piped());
        let mut stubborn = sup.spawn(&mut cmd, Group::Own, no_fence()).unwrap();
        let mut out = stubborn.take_stdout().unwrap();
        let mut buf = [0u8; 6];
        use tokio::io::AsyncReadExt;
        out.read_exact(&mut buf).await.unwrap();
        let pid = stubborn.id().unwrap() as i32;
        let (_plain, sleep) = with_background_sleep(&sup, Group::Own).await;
        assert_eq!(sup.live(), 2);
        sup.shutdown().await;
        assert!(gone_within(sleep, Duration::from_secs(10)).await);
        assert!(gone_within(pid, Duration::from_secs(10)).await);
        assert_eq!(sup.live(), 0);
    }
}

//! Every child process mm starts goes through one [`Supervisor`] (docs/architecture.md, "Children
//! and the way out"): each runs in a process group of its own, a stopped child is sent SIGTERM and
//! its whole group SIGKILL after a grace period, a child dropped while running takes its group with
//! it, and at exit [`Supervisor::shutdown`] stops whatever is still running, so no exit path leaves
//! an orphan.
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

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::process::{ChildStderr, ChildStdin, ChildStdout, Command};
use tokio_util::task::TaskTracker;

use crate::sandbox::Fence;

/// Between SIGTERM and SIGKILL when a child is stopped.
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
    /// Process groups of the children that are still ours to stop, by key.
    groups: Mutex<HashMap<u64, Pid>>,
    next: AtomicU64,
    /// SIGTERM → SIGKILL escalations in flight.
    stopping: TaskTracker,
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
            stopping: TaskTracker::new(),
            grace,
        }
    }

    /// Starts `cmd` in a group of its own. The command's stdio is as the caller set it.
    pub fn spawn(self: &Arc<Self>, cmd: &mut Command, group: Group) -> io::Result<Child> {
        self.spawn_fenced(cmd, group, None)
    }

    /// Starts `cmd` like [`Supervisor::spawn`], inside `fence` when given (the sandbox,
    /// docs/sandbox.md): the child enters it before `exec`, so the program and every descendant
    /// run fenced, and finds [`FENCED_VAR`](crate::sandbox::FENCED_VAR) set to the mode in its
    /// environment (a nested mm then skips its own namespace). `bash` calls and asked agents
    /// are fenced; hooks and servers are not.
    pub fn spawn_fenced(
        self: &Arc<Self>,
        cmd: &mut Command,
        group: Group,
        fence: Option<Fence>,
    ) -> io::Result<Child> {
        match group {
            Group::Own => {
                cmd.process_group(0);
            }
            Group::Session => {
                // SAFETY: setsid is async-signal-safe and touches no memory of the parent; the
                // child becomes the leader of a new session and process group.
                unsafe {
                    cmd.pre_exec(|| nix::unistd::setsid().map(|_| ()).map_err(io::Error::from));
                }
            }
        }
        without_keys(cmd);
        if let Some(fence) = fence {
            fence.apply(cmd);
        }
        let child = cmd.spawn()?;
        let pgid = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .map(Pid::from_raw);
        let key = self.next.fetch_add(1, Ordering::Relaxed);
        if let (Some(pgid), Ok(mut groups)) = (pgid, self.groups.lock()) {
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

    /// SIGTERM to a group now, SIGKILL after the grace (in the background when a runtime
    /// runs, at once otherwise); the child is reaped.
    fn stop_group(self: &Arc<Self>, mut child: tokio::process::Child, pgid: Pid, key: u64) {
        let _ = killpg(pgid, Signal::SIGTERM);
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            let _ = killpg(pgid, Signal::SIGKILL);
            let _ = child.start_kill();
            self.forget(key);
            return;
        };
        let me = Arc::clone(self);
        let grace = self.grace;
        self.stopping.spawn_on(
            async move {
                let _ = tokio::time::timeout(grace, child.wait()).await;
                // Members of the group may outlive its leader (a trapped SIGTERM, a child).
                let _ = killpg(pgid, Signal::SIGKILL);
                let _ = child.wait().await;
                me.forget(key);
            },
            &handle,
        );
    }

    /// Stops every child still running (SIGTERM, SIGKILL after the grace) and waits until
    /// each is gone. Called once on the way out, after the front end has cancelled its turns.
    pub async fn shutdown(&self) {
        let groups: Vec<Pid> = self
            .groups
            .lock()
            .map(|g| g.values().copied().collect())
            .unwrap_or_default();
        for pgid in &groups {
            let _ = killpg(*pgid, Signal::SIGTERM);
        }
        self.stopping.close();
        if !groups.is_empty() {
            let deadline = tokio::time::Instant::now() + self.grace;
            while self.live() > 0 && tokio::time::Instant::now() < deadline {
                // Escalations in flight forget their group when it is gone; the rest are
                // checked by signal 0.
                let alive = groups.iter().any(|p| killpg(*p, None).is_ok());
                if !alive {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            for pgid in &groups {
                let _ = killpg(*pgid, Signal::SIGKILL);
            }
        }
        let _ = tokio::time::timeout(self.grace, self.stopping.wait()).await;
        if let Ok(mut g) = self.groups.lock() {
            g.clear();
        }
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
    pgid: Option<Pid>,
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

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
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

    /// Starts `sh -c` with a background `sleep` in its group; returns the child and the
    /// sleep's pid.
    async fn with_background_sleep(sup: &Arc<Supervisor>, group: Group) -> (Child, i32) {
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg("sleep 300 & echo $!; wait")
            .stdin(Stdio::null())
            .stdout(Stdio::piped());
        let mut child = sup.spawn(&mut cmd, group).unwrap();
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
        let mut stubborn = sup.spawn(&mut cmd, Group::Own).unwrap();
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

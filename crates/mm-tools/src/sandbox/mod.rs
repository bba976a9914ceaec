//! The sandbox for what the model runs (`tools.sandbox`, docs/sandbox.md): `bash` children, and
//! the hooks, servers and agents mm starts in the project, run inside a [`Fence`] (every child
//! takes a [`Fencing`]: `fencing.rs`), and the file tools ask [`Sandbox::check_write`] before
//! they write, since mm's own process is not confined (it must still write its sessions and
//! history).
//!
//! This module is the rule: where commands of a session may write, what stays read-only, who
//! runs outside the fence, and whether `tools.sandboxRequired` lets mm start; the same on every
//! system. Around it: the paths (`paths.rs`: a session's rule for writes, which the fence
//! enforces for commands and `check_write` for the tools, where a write lands, the places held
//! at start, `held/`), what the kernel enforces (`kernel.rs`), and the fence itself,
//! one module per system (docs/platforms.md), chosen by the one switch below: on Linux,
//! Landlock, a private mount namespace that keeps mm's own configuration read-only and gives
//! the command terminals of its own, root's capabilities cut and a seccomp filter (`linux/`);
//! on macOS, Seatbelt (`macos.rs`, running the command under `sandbox-exec` with the profile
//! `seatbelt.rs` writes); elsewhere (Windows) none yet (`none.rs`), which
//! `tools.sandboxRequired = true` refuses.
//!
//! What the sandbox enforces is told as a value, a [`SandboxReport`] ([`Sandbox::report`]),
//! which each front end words for its audience (the banner, the ACP log, `mm doctor`); what it
//! tells the model is the `bash` tool's.
//!
//! One [`Sandbox`] per process, built from the configuration and the places `main.rs` knows
//! (the temp folder, the configuration files, the home folder, an outer fence), handed to tools
//! through `Setup::sandbox`.

mod fencing;
mod forwarding;
pub mod hidden;
mod kernel;
mod network;
mod passage;
mod paths;
mod seatbelt;

// The platform switch, the only `cfg` of the sandbox outside its systems' modules: the fence of
// each system (`os`), and how a place is held open (`held`).
#[cfg(target_os = "linux")]
mod linux;
// mm's proxy is the way out of Linux's network namespace and of Seatbelt's profile; Windows
// has no fence to send commands through it.
#[cfg(any(target_os = "linux", target_os = "macos"))]
mod proxy;
#[cfg(target_os = "linux")]
use linux as os;
#[cfg(target_os = "linux")]
pub use linux::caps::KEPT as ROOT_CAPABILITIES;
#[cfg(target_os = "macos")]
mod macos;
#[cfg(target_os = "macos")]
use macos as os;
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
mod none;
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
use none as os;
#[cfg(unix)]
#[path = "held/unix.rs"]
mod held;
#[cfg(windows)]
#[path = "held/windows.rs"]
mod held;
#[cfg(not(target_os = "linux"))]
mod not_linux;

pub use fencing::{Fencing, Unfenced};
pub use forwarding::Forwarding;
pub use mm_core::sandbox_report::{FENCED_VAR, SandboxReport, UnwritableCwd};
pub use network::{Door, Refusals, Refused};
pub use os::{Fence, FenceError, REMEDY, landlock_abi, namespace_works, network_works};
pub use passage::{Asked, Listening, Passage};
pub use paths::real_path;
pub use seatbelt::{Outbound as SeatbeltOutbound, profile as seatbelt_profile};

use std::path::{Path, PathBuf};

use held::Held;
use hidden::Hidden;
use kernel::Enforcement;
use mm_core::config::{Config, EntrySandbox, NetworkConfig, NetworkMode, SandboxMode};
use mm_core::sandbox_report::{Skip, Skipped};
use paths::{Roots, Rule, hold, plain_places};

/// Places outside the configuration that the sandbox needs, found by `main.rs` (the library
/// does not read the environment).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Places {
    /// The system temp folders, writable in `workspace-write`: [`SYSTEM_TEMP`] and the process's
    /// own ([`Places::with_temp_dir`]: `$TMPDIR` on Unix, `%TEMP%` on Windows).
    pub temp: Vec<PathBuf>,
    /// Folders kept read-only inside the fence when they lie where it lets commands write
    /// (and created then if missing, so that a command cannot make them first): the
    /// configuration folders mm reads at start (the user's, the `.mm/` of the folder mm started
    /// in). Every session's own `<cwd>/.mm` is added per call.
    pub protected: Vec<PathBuf>,
    /// Files kept read-only the same way when they exist (a `--config` file).
    pub protected_files: Vec<PathBuf>,
    /// The home folder: a session whose cwd is the home folder or above it does not get its
    /// cwd writable in `workspace-write` (it would open the whole home).
    pub home: Option<PathBuf>,
    /// The value of [`FENCED_VAR`] when mm itself runs inside an mm fence.
    pub outer_fence: Option<String>,
    /// Places hidden inside the fence besides the home's secret places
    /// ([`hidden::SECRETS`]): mm's config files, the container sockets of the runtime folder.
    pub secrets: Vec<PathBuf>,
    /// The package caches writable in `workspace-write` where they exist ([`hidden::caches`]).
    pub caches: Vec<PathBuf>,
    /// The user's config file (one of `secrets`): an asked agent gets it as a descriptor
    /// ([`crate::process::hand_config`]), since the fence hides it.
    pub user_config: Option<PathBuf>,
    /// The text of the user's config when this mm was handed it (an asked mm: its fence hides
    /// the file): what its own asked agents are handed in turn
    /// ([`crate::process::hand_config_text`]).
    pub user_config_text: Option<std::sync::Arc<str>>,
}

/// The system's fixed temp folders: `/tmp` and `/dev/shm` on Unix; none on Windows, whose temp
/// folder is the user's (`%TEMP%`), and where `/tmp` would be `\tmp` on the current drive.
pub const SYSTEM_TEMP: &[&str] = if cfg!(unix) {
    &["/tmp", "/dev/shm"]
} else {
    &[]
};

impl Places {
    /// With the process's temp folder (`std::env::temp_dir()`, which `main.rs` reads: `$TMPDIR`,
    /// else `/tmp`, on Unix; `%TMP%`, `%TEMP%` on Windows) among [`Places::temp`], unless it is
    /// empty or there already.
    pub fn with_temp_dir(mut self, dir: PathBuf) -> Self {
        if !dir.as_os_str().is_empty() && !self.temp.contains(&dir) {
            self.temp.push(dir);
        }
        self
    }
}

impl Default for Places {
    fn default() -> Self {
        Places {
            temp: SYSTEM_TEMP.iter().map(PathBuf::from).collect(),
            protected: Vec::new(),
            protected_files: Vec::new(),
            home: None,
            outer_fence: None,
            secrets: Vec::new(),
            caches: Vec::new(),
            user_config: None,
            user_config_text: None,
        }
    }
}

/// `tools.sandboxRequired = true` and the fence is not whole.
#[derive(Debug, thiserror::Error)]
#[error("tools.sandboxRequired = true, but tools.sandbox = {mode} is not enforced whole: {why}")]
pub struct NotEnforced {
    mode: SandboxMode,
    why: String,
}

/// The process's sandbox: the mode, where commands may write, and what the kernel enforces.
#[derive(Debug, Clone)]
pub struct Sandbox {
    mode: SandboxMode,
    /// The writable places besides the cwd (the temp folders, `tools.sandboxWritable`),
    /// resolved once at start and held open: a symlink put later where one was, or where a
    /// missing one would be, opens nothing.
    held: Vec<Held>,
    /// The `sandboxWritable` folders of the entries that start processes (hooks, MCP and
    /// language servers, agents), as configured, held open the same way; each opens only for
    /// a fence asked for with it ([`Sandbox::fence_for`]).
    entry_held: Vec<(PathBuf, Held)>,
    /// The `sandboxWritable` entries skipped for this run (they did not exist at start, or
    /// they go through a symlink a command could have made).
    skipped: Vec<Skipped>,
    /// The entries that run outside the fence (`sandbox = false`), by key (`mcp.servers.x`).
    outside: Vec<String>,
    /// The package caches held writable (where they are).
    caches: Vec<PathBuf>,
    /// The places hidden from commands and from mm's tools that read files.
    hidden: Hidden,
    /// Whether an entry's `sandbox = false` is honoured: not in the fence of `read-only`
    /// sessions, which nothing they start leaves.
    opt_outs: bool,
    /// The home folder, canonical.
    home: Option<PathBuf>,
    places: Places,
    enforcement: Enforcement,
    /// What the system's fence keeps between calls (Linux: the mount namespaces made).
    state: os::State,
    /// Where fenced commands' connections may go (`tools.network`, `tools.networkAllow`).
    door: Door,
    /// `tools.networkExpose`: the ports of the commands' fence the host's loopback reaches.
    expose: Vec<u16>,
    /// The session's share of the network (its refusals, the hosts it was allowed, who is
    /// asked): each session's own ([`Sandbox::for_session`]).
    passage: Passage,
}

impl Default for Sandbox {
    fn default() -> Self {
        Sandbox::off()
    }
}

/// What the configuration says of the fence: `tools.sandbox`, `tools.sandboxWritable` and the
/// `sandbox` and `sandboxWritable` of each entry that starts a process.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    pub mode: SandboxMode,
    pub writable: Vec<PathBuf>,
    /// `(key, folders)` of each entry that has `sandboxWritable` folders (`agents.codex`,
    /// `lsp.servers.rust`, `hooks.preToolCall[0]`).
    pub entries: Vec<(String, Vec<PathBuf>)>,
    /// The keys of the entries with `sandbox = false`.
    pub outside: Vec<String>,
    /// `tools.sandboxHidden`: places hidden besides the secret places mm knows.
    pub hidden: Vec<PathBuf>,
    /// `tools.sandboxReadable`: places given back from the hidden ones.
    pub readable: Vec<PathBuf>,
    /// `tools.network…`.
    pub network: NetworkConfig,
}

impl Settings {
    /// The fence settings of a configuration.
    pub fn of(config: &Config) -> Settings {
        let mut all: Vec<(String, &EntrySandbox)> = Vec::new();
        for (event, hooks) in config.hooks.by_event() {
            for (i, h) in hooks.iter().enumerate() {
                all.push((format!("hooks.{event}[{i}]"), &h.sandbox));
            }
        }
        let named = |prefix: &str, name: &str| format!("{prefix}.{name}");
        all.extend(
            config
                .mcp_servers
                .iter()
                .map(|(n, s)| (named("mcp.servers", n), &s.sandbox)),
        );
        all.extend(
            config
                .lsp_servers
                .iter()
                .map(|(n, s)| (named("lsp.servers", n), &s.sandbox)),
        );
        all.extend(
            config
                .agents
                .iter()
                .map(|(n, a)| (named("agents", n), &a.sandbox)),
        );
        Settings {
            mode: config.tools.sandbox,
            writable: config.tools.sandbox_writable.clone(),
            entries: all
                .iter()
                .filter(|(_, e)| !e.writable.is_empty())
                .map(|(key, e)| (key.clone(), e.writable.clone()))
                .collect(),
            outside: all
                .iter()
                .filter(|(_, e)| e.outside)
                .map(|(key, _)| key.clone())
                .collect(),
            hidden: config.tools.sandbox_hidden.clone(),
            readable: config.tools.sandbox_readable.clone(),
            network: config.tools.network.clone(),
        }
    }

    /// Only a mode, nothing more writable.
    pub fn mode(mode: SandboxMode) -> Settings {
        Settings {
            mode,
            ..Settings::default()
        }
    }
}

impl Sandbox {
    /// The sandbox of a configuration. Asks the kernel what it enforces (once per process) when
    /// the mode is not `off`.
    /// The `tools.sandboxWritable` entries and the temp folders are resolved here, once (the
    /// user's own symlinks followed) and held open; an entry that does not exist is skipped for
    /// the run, which the report says ([`Sandbox::report`]).
    pub fn new(settings: Settings, places: Places) -> Sandbox {
        let Settings {
            mode,
            writable: entries,
            entries: own,
            outside,
            hidden,
            readable,
            network,
        } = settings;
        let enforcement = match mode {
            SandboxMode::Off => Enforcement::off(),
            SandboxMode::WorkspaceWrite | SandboxMode::ReadOnly => {
                os::enforcement(places.outer_fence.clone())
            }
        };
        let (mut held, mut skipped) = (Vec::new(), Vec::new());
        let mut entry_held = Vec::new();
        let mut caches = Vec::new();
        if mode == SandboxMode::WorkspaceWrite {
            // A temp folder that is missing is nothing the user asked for: not reported.
            held.extend(places.temp.iter().filter_map(|t| Held::open(t).ok()));
            let open: Vec<PathBuf> = entries.iter().chain(&places.caches).cloned().collect();
            let writable = plain_places(&places.temp, &open);
            let skip = |key: &str, path: &PathBuf, why| Skipped {
                key: key.to_string(),
                path: path.clone(),
                why,
            };
            for entry in &entries {
                match hold(entry, &writable) {
                    Ok(h) => held.push(h),
                    Err(why) => skipped.push(skip("tools.sandboxWritable", entry, why)),
                }
            }
            // A package cache that is missing is skipped silently: the user asked for none.
            for cache in &places.caches {
                match hold(cache, &writable) {
                    Ok(h) => {
                        caches.push(cache.clone());
                        held.push(h);
                    }
                    Err(Skip::Missing) => {}
                    Err(why) => skipped.push(skip("the package cache", cache, why)),
                }
            }
            for (key, folders) in &own {
                let key = format!("{key}.sandboxWritable");
                for entry in folders {
                    match hold(entry, &writable) {
                        Ok(h) => entry_held.push((entry.clone(), h)),
                        Err(why) => skipped.push(skip(&key, entry, why)),
                    }
                }
            }
        }
        let home = places
            .home
            .as_deref()
            .and_then(|h| crate::paths::canonical(h).ok());
        let hidden = Hidden::new(places.home.as_deref(), &places.secrets, &hidden, &readable);
        Sandbox {
            mode,
            held,
            entry_held,
            skipped,
            outside,
            caches,
            hidden,
            opt_outs: true,
            home,
            places,
            enforcement,
            state: os::State::default(),
            door: Door::of(&network),
            expose: network.expose.clone(),
            passage: Passage::default(),
        }
    }

    /// No sandbox (tests and tools built without a configuration).
    pub fn off() -> Sandbox {
        Sandbox {
            mode: SandboxMode::Off,
            held: Vec::new(),
            entry_held: Vec::new(),
            skipped: Vec::new(),
            outside: Vec::new(),
            caches: Vec::new(),
            hidden: Hidden::default(),
            opt_outs: true,
            home: None,
            places: Places::default(),
            enforcement: Enforcement::off(),
            state: os::State::default(),
            door: Door::of(&NetworkConfig::default()),
            expose: Vec::new(),
            passage: Passage::default(),
        }
    }

    pub fn mode(&self) -> SandboxMode {
        self.mode
    }

    /// The user's config file, which an asked agent is handed ([`Places::user_config`]).
    pub fn user_config(&self) -> Option<&Path> {
        self.places.user_config.as_deref()
    }

    /// The user's config as this mm was handed it, which its asked agents are handed in turn
    /// ([`Places::user_config_text`]).
    pub fn user_config_text(&self) -> Option<&str> {
        self.places.user_config_text.as_deref()
    }

    /// The sandbox a session in `read-only` mode runs its commands in: these places, nothing
    /// writable, whatever `tools.sandbox` says; `None` where the kernel fences nothing (then
    /// such a session refuses commands).
    pub fn read_only(&self) -> Option<Sandbox> {
        let mut ro = match self.mode {
            SandboxMode::ReadOnly => self.clone(),
            SandboxMode::Off | SandboxMode::WorkspaceWrite => {
                let mut ro =
                    Sandbox::new(Settings::mode(SandboxMode::ReadOnly), self.places.clone());
                ro.door = self.door.clone();
                ro.passage = self.passage.clone();
                ro
            }
        };
        ro.hidden = self.hidden.clone();
        ro.opt_outs = false;
        ro.fences_commands().then_some(ro)
    }

    pub fn is_on(&self) -> bool {
        self.mode != SandboxMode::Off
    }

    /// Whether the system fences commands (the mode is on and Landlock or Seatbelt is there).
    pub fn fences_commands(&self) -> bool {
        self.mode != SandboxMode::Off && self.enforcement.fences()
    }

    /// What the sandbox enforces and leaves out, for the front ends to word (the banner, the
    /// ACP log, `mm doctor`). The entries that run outside the fence are named only where
    /// commands are fenced.
    pub fn report(&self) -> SandboxReport {
        SandboxReport {
            mode: self.mode,
            fencer: self.enforcement.fencer.clone(),
            gaps: self.gaps(),
            nested: self.enforcement.nested.clone(),
            skipped: self.skipped.clone(),
            outside: match self.fences_commands() {
                true => self.outside.clone(),
                false => Vec::new(),
            },
            caches: self.caches.clone(),
            hidden: match self.is_on() {
                true => self.hidden.present().into_iter().map(|(p, _)| p).collect(),
                false => Vec::new(),
            },
            network: self
                .fences_commands()
                .then_some((self.door.mode, self.door.allow.len())),
        }
    }

    /// What the kernel lacks of the fence: its own gaps, and the network namespace when
    /// `tools.network` asks for one and none can be made (inside an outer fence, the outer
    /// namespace holds).
    fn gaps(&self) -> Vec<mm_core::sandbox_report::Gap> {
        let mut gaps = self.enforcement.gaps(self.mode);
        if let (true, true, Err(why), None) = (
            self.fences_commands(),
            self.door.isolated(),
            &self.enforcement.network,
            &self.enforcement.nested,
        ) {
            gaps.push(mm_core::sandbox_report::Gap::Network(why.clone()));
        }
        gaps
    }

    /// The working directory `cwd` when commands of a session there may not write in it
    /// (`workspace-write` in the home folder or above it); `None` otherwise.
    pub fn unwritable_cwd(&self, cwd: &Path) -> Option<UnwritableCwd> {
        let real = crate::paths::canonical(cwd).ok()?;
        (self.mode == SandboxMode::WorkspaceWrite && self.home_or_above(&real))
            .then_some(UnwritableCwd(real))
    }

    fn home_or_above(&self, real: &Path) -> bool {
        self.home.as_deref().is_some_and(|h| h.starts_with(real))
    }

    /// `Err` when `tools.sandboxRequired` is set and the fence is not whole. Running inside
    /// an outer fence is no gap: its mounts hold.
    pub fn require(&self, required: bool) -> Result<(), NotEnforced> {
        match self.report().shortfall() {
            Some(why) if required => Err(NotEnforced {
                mode: self.mode,
                why,
            }),
            _ => Ok(()),
        }
    }

    /// Where commands of a session in `cwd` may write (those that exist), with the folders
    /// of `extra` that were held at start for one child of its own (an entry's
    /// `sandboxWritable`).
    fn roots(&self, cwd: &Path, extra: &[PathBuf]) -> Roots<'_> {
        match self.mode {
            SandboxMode::Off | SandboxMode::ReadOnly => Roots::none(),
            SandboxMode::WorkspaceWrite => Roots {
                cwd: crate::paths::canonical(cwd)
                    .ok()
                    .filter(|c| !self.home_or_above(c)),
                held: self
                    .held
                    .iter()
                    .chain(
                        self.entry_held
                            .iter()
                            .filter(|(entry, _)| extra.contains(entry))
                            .map(|(_, h)| h),
                    )
                    .filter_map(|h| h.path().map(|p| (h, p)))
                    .collect(),
            },
        }
    }

    /// The paths kept read-only for a session in `cwd` (canonical where they exist), with
    /// whether each is a folder mm may create.
    fn protected(&self, cwd: &Path) -> Vec<(PathBuf, bool)> {
        std::iter::once(cwd.join(".mm"))
            .chain(self.places.protected.iter().cloned())
            .map(|p| (real_path(&p), true))
            .chain(
                self.places
                    .protected_files
                    .iter()
                    .map(|p| (real_path(p), false)),
            )
            .collect()
    }

    /// The fence a command of a session in `cwd` runs in: none when the sandbox is off or
    /// nothing fences commands here (or, on macOS, inside an outer fence: Seatbelt cannot be
    /// nested, and the outer one holds).
    pub fn fence(&self, cwd: &Path) -> Result<Fencing, FenceError> {
        let forwarding = Forwarding {
            expose: self.expose.clone(),
            reach: Vec::new(),
        };
        self.fence_within(cwd, &[], &self.door, &forwarding)
    }

    /// Where a process of an entry of the configuration (a hook, an MCP or language server, an
    /// asked agent) starting in `cwd` runs: in the fence of [`Sandbox::fence`] that also lets
    /// it write in its own `sandboxWritable` folders in `workspace-write` (never in
    /// `read-only`), or outside when the entry says `sandbox = false` (not in the fence of a
    /// `read-only` session: [`Sandbox::read_only`]).
    pub fn fence_for(&self, cwd: &Path, entry: &EntrySandbox) -> Result<Fencing, FenceError> {
        if entry.outside && self.opt_outs {
            return Ok(Fencing::outside(Unfenced::OptedOut));
        }
        // An entry that names the hosts it needs (`networkAllow`: an asked agent its model
        // server) gets a network of its own whose door is the user's list and its own, with
        // the loopback ports it names reached through its fence's loopback; one that names
        // none keeps the network of a process outside the namespace (docs/sandbox.md, "Its
        // limits").
        let (door, forwarding) = match entry.network_allow.is_empty() {
            true => (Door::open(), Forwarding::default()),
            false => (
                self.entry_door(&entry.network_allow),
                Forwarding {
                    expose: Vec::new(),
                    reach: Forwarding::reach_of(&entry.network_allow),
                },
            ),
        };
        self.fence_within(cwd, &entry.writable, &door, &forwarding)
    }

    /// The door of an entry with its own `networkAllow`: `tools.networkAllow` and its list
    /// under `allowlist`; its list alone under `none` (the user named those hosts for it);
    /// under `open`, open.
    fn entry_door(&self, own: &[String]) -> Door {
        let mine = Door::of(&NetworkConfig {
            mode: NetworkMode::Allowlist,
            allow: own.to_vec(),
            expose: Vec::new(),
        });
        match self.door.mode {
            NetworkMode::Open => Door::open(),
            NetworkMode::Allowlist => Door {
                mode: NetworkMode::Allowlist,
                allow: self.door.allow.iter().cloned().chain(mine.allow).collect(),
            },
            NetworkMode::None => mine,
        }
    }

    fn fence_within(
        &self,
        cwd: &Path,
        extra: &[PathBuf],
        door: &Door,
        forwarding: &Forwarding,
    ) -> Result<Fencing, FenceError> {
        if !self.fences_commands() {
            return Ok(Fencing::inside(None));
        }
        let network = (door, &self.passage, forwarding);
        os::fence(
            &self.rule(cwd, extra),
            &self.enforcement,
            &self.state,
            network,
        )
        .map(Fencing::inside)
    }

    /// The network rule of fenced commands (`fetch_content` asks it too).
    pub fn door(&self) -> &Door {
        &self.door
    }

    /// `tools.networkExpose`: the ports of the commands' fence the host's 127.0.0.1 reaches.
    pub fn expose(&self) -> &[u16] {
        &self.expose
    }

    /// Whether mm's own tools keep the fence's door (`fetch_content`): the sandbox is on and
    /// `tools.network` is not `open`.
    pub fn fences_network(&self) -> bool {
        self.is_on() && self.door.isolated()
    }

    /// The connections the door refused so far in the session, in order.
    pub fn refusals(&self) -> &Refusals {
        self.passage.refusals()
    }

    /// The session's share of the network: its refusals, the hosts its user allowed, who is
    /// asked about a host on no list.
    pub fn passage(&self) -> &Passage {
        &self.passage
    }

    /// The same sandbox for one session, with `passage` as its network's share: on Linux its
    /// commands get a namespace and a proxy of their own, so that a refusal or an allowed host
    /// of one session is never another's.
    pub fn for_session(&self, passage: &Passage) -> Sandbox {
        Sandbox {
            passage: passage.clone(),
            ..self.clone()
        }
    }

    /// The rule for writes of a session in `cwd`, with the folders of `extra` held for one child
    /// of its own.
    fn rule(&self, cwd: &Path, extra: &[PathBuf]) -> Rule<'_> {
        Rule {
            mode: self.mode,
            roots: self.roots(cwd, extra),
            protected: self.protected(cwd),
            hidden: &self.hidden,
        }
    }

    /// Checks a read by mm itself on behalf of a tool (`read_file`, `edit_file`, `lsp`, an
    /// `@path` attachment) against the hidden places, when the sandbox is on: `Err` is the one
    /// line for the model or the user, naming `tools.sandboxReadable`.
    pub fn check_read(&self, path: &Path) -> Result<(), String> {
        match self.is_on() && self.hidden.covers(path) {
            true => Err(Hidden::refusal(path)),
            false => Ok(()),
        }
    }

    /// Checks a write by mm itself on behalf of a tool (`write_file`, `edit_file`, …) against
    /// the rule the kernel applies to commands: `Err` is the text for the model,
    /// `[write outside the sandbox refused: <path> (tools.sandbox = <mode>)]`, naming the path
    /// where the write would land (symlinks followed).
    pub fn check_write(&self, cwd: &Path, path: &Path) -> Result<(), String> {
        if self.mode == SandboxMode::Off {
            return Ok(());
        }
        let real = real_path(path);
        let rule = self.rule(cwd, &[]);
        if rule.lets_write(&real) {
            Ok(())
        } else {
            Err(format!(
                "[write outside the sandbox refused: {} (tools.sandbox = {})]",
                real.display(),
                rule.mode
            ))
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::disallowed_methods)]
mod tests {
    use super::*;
    use mm_core::config::NetworkMode;
    use mm_core::sandbox_report::{Fencer, Gap};

    #[test]
    fn modes_parse_and_name() {
        for name in SandboxMode::NAMES {
            assert_eq!(SandboxMode::parse(name).unwrap().name(), name);
        }
        assert_eq!(SandboxMode::parse("on"), None);
    }

    fn with(mode: SandboxMode, abi: i32, namespace: Result<(), String>) -> Sandbox {
        Sandbox {
            mode,
            held: Vec::new(),
            entry_held: Vec::new(),
            skipped: Vec::new(),
            outside: Vec::new(),
            caches: Vec::new(),
            hidden: Hidden::default(),
            opt_outs: true,
            home: None,
            places: Places::default(),
            state: os::State::default(),
            door: Door::of(&NetworkConfig::default()),
            expose: Vec::new(),
            passage: Passage::default(),
            enforcement: Enforcement {
                fencer: match abi {
                    0 => Fencer::Missing("this kernel has no Landlock (Linux 5.13 or later, with landlock among its LSMs)".into()),
                    _ => Fencer::Landlock(abi),
                },
                devpts: namespace.clone(),
                network: namespace.clone(),
                namespace,
                seccomp: Ok(()),
                nested: None,
            },
        }
    }

    #[test]
    fn a_whole_fence_says_only_its_mode() {
        let s = with(SandboxMode::WorkspaceWrite, 7, Ok(()));
        assert_eq!(s.report().label(), "workspace-write");
        assert_eq!(s.report().note(), None);
        assert_eq!(s.report().lines(), Vec::<String>::new());
        assert!(s.require(true).is_ok());
        let off = with(SandboxMode::Off, 0, Err("off".into()));
        assert_eq!(off.report().note(), None);
        assert!(off.require(true).is_ok());
    }

    #[test]
    fn what_the_kernel_lacks_is_said_once_and_is_an_error_when_required() {
        let s = with(
            SandboxMode::WorkspaceWrite,
            3,
            Err("Operation not permitted (os error 1)".into()),
        );
        // The front ends' wording of this report: mm-term's banner and mm-acp's log tests.
        assert_eq!(
            s.report(),
            SandboxReport {
                mode: SandboxMode::WorkspaceWrite,
                fencer: Fencer::Landlock(3),
                gaps: vec![
                    Gap::DeviceIoctl,
                    Gap::AbstractSockets,
                    Gap::Namespace("Operation not permitted (os error 1)".into()),
                    Gap::Network("Operation not permitted (os error 1)".into())
                ],
                nested: None,
                skipped: Vec::new(),
                outside: Vec::new(),
                caches: Vec::new(),
                hidden: Vec::new(),
                network: Some((NetworkMode::Allowlist, 24)),
            }
        );
        let note = "Landlock ABI 3 enforced, but device ioctls are not fenced; abstract unix sockets are not fenced; the project's .mm/ stays writable and the hidden places are readable by commands (no private mount namespace: Operation not permitted (os error 1)); the network stays open to commands (no network namespace: Operation not permitted (os error 1))";
        assert_eq!(s.report().note().as_deref(), Some(note));
        assert!(s.require(false).is_ok());
        assert_eq!(
            s.require(true).unwrap_err().to_string(),
            format!(
                "tools.sandboxRequired = true, but tools.sandbox = workspace-write is not enforced whole: {note}"
            )
        );
        let none = with(SandboxMode::ReadOnly, 0, Ok(()));
        assert_eq!(none.report().label(), "read-only (not enforced)");
        // Nothing claimed for commands: no fence to enter, no hint, nothing in the prompt (the
        // bash tool words both for the model).
        assert!(!none.fence(Path::new("/")).unwrap().fences());
        assert_eq!(crate::tools::bash::denial_hint(&none, Path::new("/")), None);
        assert_eq!(crate::tools::bash::sandbox_section(&none), None);
        assert_eq!(
            none.report().note().as_deref(),
            Some(
                "not enforced: this kernel has no Landlock (Linux 5.13 or later, with landlock among its LSMs); the file tools still refuse writes outside it"
            )
        );
        let old = with(SandboxMode::ReadOnly, 1, Ok(()));
        assert_eq!(
            old.report().note().as_deref(),
            Some(
                "Landlock ABI 1 enforced, but moving or linking a file between folders is always refused; truncate(2) is not fenced; device ioctls are not fenced; abstract unix sockets are not fenced"
            )
        );
    }

    #[test]
    fn the_entries_that_leave_or_open_the_fence_are_named_by_their_keys() {
        let mut config = Config::default();
        let opted = EntrySandbox {
            outside: true,
            ..EntrySandbox::default()
        };
        let cache = EntrySandbox {
            writable: vec![PathBuf::from("/cache")],
            ..EntrySandbox::default()
        };
        let mut hook = mm_core::config::HookConfig {
            command: "sh lint.sh".into(),
            matcher: None,
            timeout: std::time::Duration::from_secs(1),
            fail_closed: false,
            origin: mm_core::config::Origin::User,
            sandbox: EntrySandbox::default(),
        };
        config.hooks.pre_tool_call.push(hook.clone());
        hook.sandbox = opted.clone();
        config.hooks.pre_tool_call.push(hook);
        let mut server = mm_core::config::McpServerConfig::new("srv", Vec::new());
        server.sandbox = cache.clone();
        config.mcp_servers.insert("files".into(), server);
        config.lsp_servers.insert(
            "rust".into(),
            mm_core::config::LspServerConfig {
                command: "rust-analyzer".into(),
                args: Vec::new(),
                extensions: Vec::new(),
                sandbox: opted,
            },
        );
        let settings = Settings::of(&config);
        assert_eq!(
            settings.entries,
            [(
                "mcp.servers.files".to_string(),
                vec![PathBuf::from("/cache")]
            )]
        );
        assert_eq!(
            settings.outside,
            [
                "hooks.preToolCall[1]".to_string(),
                "lsp.servers.rust".into()
            ]
        );
    }

    #[test]
    fn an_entry_opted_out_runs_outside_and_is_named_but_not_in_a_read_only_session() {
        let mut s = with(SandboxMode::WorkspaceWrite, 7, Ok(()));
        s.outside = vec!["mcp.servers.x".into()];
        let out = EntrySandbox {
            outside: true,
            ..EntrySandbox::default()
        };
        let fencing = s.fence_for(Path::new("/"), &out).unwrap();
        assert_eq!(fencing.unfenced(), Some(Unfenced::OptedOut));
        // The banner's and the ACP log's lines of it: mm-term's and mm-acp's tests.
        assert_eq!(s.report().outside, ["mcp.servers.x"]);
        assert_eq!(
            s.report().lines(),
            ["mcp.servers.x runs outside the fence (sandbox = false)"]
        );
        // Nothing fences commands: nothing to name.
        let mut none = with(SandboxMode::WorkspaceWrite, 0, Ok(()));
        none.outside = s.outside.clone();
        assert!(
            !none
                .report()
                .lines()
                .iter()
                .any(|l| l.contains("runs outside"))
        );
        // The fence of a read-only session: nothing leaves it (here, nothing fences).
        none.opt_outs = false;
        let fencing = none.fence_for(Path::new("/"), &out).unwrap();
        assert_eq!(fencing.unfenced(), None);
    }

    #[test]
    fn inside_an_outer_fence_the_note_says_so_and_is_no_gap() {
        let mut s = with(SandboxMode::WorkspaceWrite, 7, Err("inside".into()));
        s.enforcement.nested = Some("read-only".into());
        assert_eq!(
            s.report().note().as_deref(),
            Some(
                "Landlock ABI 7 enforced, but it relies on the outer fence for the read-only mounts and the hidden places (mm runs inside mm's fence: MM_FENCED=read-only)"
            )
        );
        assert!(s.require(true).is_ok());
        s.enforcement.seccomp = Err("no seccomp filter for the sparc64 architecture".into());
        assert_eq!(
            s.require(true).unwrap_err().to_string(),
            "tools.sandboxRequired = true, but tools.sandbox = workspace-write is not enforced whole: Landlock ABI 7 enforced, but TIOCSTI is not refused (no seccomp filter for the sparc64 architecture)"
        );
    }

    #[test]
    fn a_cwd_at_or_above_the_home_folder_is_not_writable() {
        let dir = tempfile::tempdir().unwrap();
        let base = crate::paths::canonical(dir.path()).unwrap();
        let home = base.join("home");
        let project = home.join("project");
        std::fs::create_dir_all(&project).unwrap();
        let mut config = Config::default();
        config.tools.sandbox = SandboxMode::WorkspaceWrite;
        let places = Places {
            temp: Vec::new(),
            home: Some(home.clone()),
            ..Places::default()
        };
        let s = Sandbox::new(Settings::of(&config), places);
        for cwd in [&home, &base] {
            assert!(s.check_write(cwd, &cwd.join("x")).is_err());
            assert!(s.unwritable_cwd(cwd).is_some());
        }
        assert_eq!(s.check_write(&project, &project.join("x")), Ok(()));
        assert_eq!(s.unwritable_cwd(&project), None);
        assert_eq!(
            s.unwritable_cwd(&home).unwrap().to_string(),
            format!(
                "the working directory {} is the home folder or above it, so commands may not write in it: only in the temp folders and tools.sandboxWritable (start mm in a project's folder)",
                home.display()
            )
        );
    }
}

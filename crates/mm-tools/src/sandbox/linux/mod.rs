//! Linux's fence, one concern a module: the [`Fence`] a child enters between `fork` and `exec`
//! (`fence.rs`: Landlock, then in order what the others prepare), the mount namespace
//! (`namespace.rs`: read-only binds, the binds that pin protected paths, a private `devpts`,
//! `devpts.rs`), root's capabilities (`caps.rs`) and the seccomp filter (`seccomp.rs`), with
//! what they share (`sys.rs`). Here, what the sandbox asks of Linux: what the kernel enforces
//! ([`enforcement`]) and the fence of one command ([`fence`]).

pub mod caps;
pub mod devpts;
mod fence;
mod forward;
pub mod namespace;
mod net;
pub mod seccomp;
mod sys;

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

pub use fence::{Fence, landlock_abi};
use mm_core::sandbox_report::{FENCED_VAR, Fencer};
use namespace::Joined;
pub use sys::FenceError;

use super::forwarding::Forwarding;
use super::held::Held;
use super::kernel::Enforcement;
use super::network::Door;
use super::passage::{Passage, PassageKey};
use super::paths::Rule;

/// What `mm doctor` says to do when the fence is not whole and `tools.sandboxRequired` is set.
pub const REMEDY: &str = "use a kernel with Landlock";

/// What the Linux sandbox keeps between calls: the private mount namespaces made so far, by
/// what they mount, joined by every call that needs the same.
pub type State = Arc<Mutex<HashMap<NamespaceKey, Arc<Joined>>>>;

/// What a namespace mounts: the read-only paths, the pinned folders, the hidden places (with
/// whether each is a folder), a private `devpts`; and its network, when it has one of its own
/// (its door: one proxy per allow-list; the ports it forwards), with the session it serves when
/// the way out is mm's proxy (its refusals, its allowed hosts and its questions are that
/// session's alone).
type NamespaceKey = (
    Vec<PathBuf>,
    Vec<PathBuf>,
    Vec<(PathBuf, bool)>,
    bool,
    Option<(Door, Option<PassageKey>, Forwarding)>,
);

/// Whether a private mount namespace with a read-only bind works here: tried once, in a child
/// that enters such a namespace and exits before running anything. `Err` says why not.
pub fn namespace_works() -> Result<(), String> {
    namespace::support().namespace
}

/// Whether the fence's network works here: a network namespace of its own made by the
/// namespace's helper, with the listener for mm's proxy handed back and the proxy started on it
/// (then all stopped). `Err` says why not.
pub fn network_works() -> Result<(), String> {
    let mut ns = namespace::Namespace::new(&[], &[], &[], false)
        .map_err(|e| e.to_string())?
        .with_network(Some(namespace::Net::Proxied))
        .make()
        .map_err(|e| e.to_string())?;
    ns.serve(Door::open(), Passage::default().key())
        .map_err(|e| e.to_string())?;
    ns.proxy()
        .map(|_| ())
        .ok_or_else(|| "the namespace's helper sent no listener".to_string())
}

/// What this kernel enforces, asked once per process.
pub(super) fn enforcement(outer_fence: Option<String>) -> Enforcement {
    let abi = landlock_abi();
    let seccomp = seccomp::filter().map(|_| ());
    if abi == 0 {
        let none = || Err("this kernel has no Landlock".to_string());
        return Enforcement {
            fencer: Fencer::Missing(
                "this kernel has no Landlock (Linux 5.13 or later, with landlock among its LSMs)"
                    .into(),
            ),
            namespace: none(),
            network: none(),
            devpts: none(),
            seccomp,
            nested: outer_fence,
        };
    }
    if let Some(outer) = outer_fence {
        // Inside Landlock no mount can be made: the outer fence's mounts hold.
        let inside = || Err(format!("inside an outer fence ({FENCED_VAR}={outer})"));
        return Enforcement {
            fencer: Fencer::Landlock(abi),
            namespace: inside(),
            network: inside(),
            devpts: inside(),
            seccomp,
            nested: Some(outer),
        };
    }
    let support = namespace::support();
    Enforcement {
        fencer: Fencer::Landlock(abi),
        network: support.namespace.clone(),
        namespace: support.namespace,
        devpts: support.devpts,
        seccomp,
        nested: None,
    }
}

/// The fence of one command under `rule`.
/// A protected folder that a command could otherwise create first (the session's `.mm/`)
/// is created, so that it exists to be kept read-only.
/// Each protected path's folders below the root it lies in are bound onto themselves in the
/// command's namespace, so that no command can rename them away and put a folder of its
/// own in their place.
pub(super) fn fence(
    rule: &Rule<'_>,
    enforcement: &Enforcement,
    state: &State,
    network: (&Door, &Passage, &Forwarding),
) -> Result<Option<Fence>, FenceError> {
    let Rule {
        mode,
        roots,
        protected,
        hidden,
    } = rule;
    let can_mount = enforcement.namespace.is_ok();
    let (mut readonly, mut pins): (Vec<PathBuf>, Vec<PathBuf>) = (Vec::new(), Vec::new());
    // Looked up for each call: a place made since the last one is hidden from this one on.
    let hidden = match can_mount {
        true => hidden.present(),
        false => Vec::new(),
    };
    let under_hidden = |p: &Path| hidden.iter().any(|(h, _)| p.starts_with(h));
    if can_mount {
        for (p, folder) in protected.iter().cloned() {
            // The outermost root it lies in: every folder below it could be renamed.
            let Some(root) = roots
                .paths()
                .filter(|r| p.starts_with(r))
                .min_by_key(|r| r.components().count())
            else {
                continue;
            };
            if readonly.contains(&p) {
                continue;
            }
            if folder && !p.exists() {
                let shown = p.display().to_string();
                let _ = crate::writer::create_dir_all(&p, &shown, crate::writer::Check::Anywhere);
            }
            if !p.exists() {
                continue;
            }
            // Pinned even when hidden (mm's config file): renaming its folder away would let a
            // command put a config of its own in its place.
            pins.extend(
                p.ancestors()
                    .skip(1)
                    .take_while(|a| *a != root && a.starts_with(root) && !under_hidden(a))
                    .map(Path::to_path_buf),
            );
            // Hidden whole (read-only, empty): nothing to mount inside, nor on it again.
            if !under_hidden(&p) {
                readonly.push(p);
            }
        }
    }
    let pts = match (&enforcement.nested, &enforcement.devpts) {
        (Some(_), _) => fence::Pts::Outer,
        (None, Ok(())) if can_mount => fence::Pts::Private,
        (None, _) => fence::Pts::Closed,
    };
    let cwd_root: Vec<PathBuf> = roots.cwd.iter().cloned().collect();
    let held: Vec<&Held> = roots.held.iter().map(|(h, _)| *h).collect();
    let devpts = pts == fence::Pts::Private;
    let (door, passage, forwarding) = network;
    let net = (can_mount && door.isolated()).then(|| {
        let session = door.proxied().then(|| passage.key());
        (door.clone(), session, forwarding.clone())
    });
    let namespace = match can_mount
        && (devpts || !readonly.is_empty() || !hidden.is_empty() || net.is_some())
    {
        true => Some(joined(state, (readonly, pins, hidden, devpts, net))?),
        false => None,
    };
    Fence::build(&fence::Plan {
        mode: *mode,
        writable: &cwd_root,
        held: &held,
        namespace,
        pts,
    })
    .map(Some)
}

/// The namespace that mounts `key`, made the first time it is asked for; those of sessions that
/// ended are let go then.
fn joined(state: &State, key: NamespaceKey) -> Result<Arc<Joined>, FenceError> {
    let mut made = state
        .lock()
        .map_err(|_| FenceError::Namespace(io::Error::other("a lock was poisoned")))?;
    if let Some(ns) = made.get(&key) {
        return Ok(Arc::clone(ns));
    }
    made.retain(|k, _| !matches!(&k.4, Some((_, Some(session), _)) if !session.alive()));
    let net = key.4.as_ref().map(|(door, _, _)| match door.proxied() {
        true => namespace::Net::Proxied,
        false => namespace::Net::Closed,
    });
    let mut ns = namespace::Namespace::new(&key.0, &key.1, &key.2, key.3)?
        .with_network(net)
        .make()
        .map_err(FenceError::Namespace)?;
    if let Some((door, session, forwarding)) = &key.4 {
        let session = session.clone().unwrap_or_else(|| Passage::default().key());
        ns.serve(door.clone(), session)
            .map_err(FenceError::Namespace)?;
        let ports: Vec<forward::Port> =
            (forwarding.expose.iter().map(|p| forward::Port::Expose(*p)))
                .chain(forwarding.reach.iter().map(|p| forward::Port::Reach(*p)))
                .collect();
        ns.forward(&ports).map_err(FenceError::Namespace)?;
    }
    let ns = Arc::new(ns);
    made.insert(key, Arc::clone(&ns));
    Ok(ns)
}

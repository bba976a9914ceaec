//! The fence holds for root, for the terminal and for mm's own configuration (docs/sandbox.md):
//! a hostile model, scripted on the fake server, runs each attack as a `bash` command of the
//! real `mm -p`, as root and as a plain user (crates/mm-testkit/src/as_user.rs), and the test asserts on
//! disk, on the test's own terminal and on its own socket that nothing got through.
//!
//! Every folder lies outside the temp folders (which the fence lets commands write).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]
// Landlock is Linux's (docs/platforms.md)
#![cfg(target_os = "linux")]

use mm_testkit as common;

use std::fs;
use std::io::ErrorKind;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use common::as_user::{self, Who};
use common::mm_run::{RUN_LIMIT, Run, Sandbox as Dirs, finish_within};
use common::{FakeServer, Reply, tool_results};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// A home, a project and, beside them, a folder standing for everything outside, owned by the
/// user who runs mm.
pub(crate) struct Scene {
    pub(crate) who: Who,
    pub(crate) dirs: Dirs,
    pub(crate) root: PathBuf,
    pub(crate) home: PathBuf,
    pub(crate) project: PathBuf,
    pub(crate) outside: PathBuf,
    _root: tempfile::TempDir,
}

pub(crate) const FENCED: &str = "[tools]\nsandbox = \"workspace-write\"\n";

impl Scene {
    /// The scene for `who`, with the user's config fencing in workspace-write.
    fn new(who: Who) -> Scene {
        let root_dir = as_user::scene();
        let root = root_dir.path().canonicalize().unwrap();
        let dirs = Dirs {
            home: tempfile::tempdir_in(&root).unwrap(),
            cwd: tempfile::tempdir_in(&root).unwrap(),
            limit: RUN_LIMIT,
        };
        let home = dirs.home.path().canonicalize().unwrap();
        let project = dirs.dir();
        let outside = root.join("outside");
        fs::create_dir_all(&outside).unwrap();
        fs::write(outside.join("file.txt"), "original").unwrap();
        let scene = Scene {
            who,
            dirs,
            root,
            home,
            project,
            outside,
            _root: root_dir,
        };
        scene.user_config(FENCED);
        scene
    }

    pub(crate) fn user_config(&self, text: &str) {
        let file = self.dirs.user_config();
        fs::create_dir_all(file.parent().unwrap()).unwrap();
        fs::write(file, text).unwrap();
    }

    pub(crate) fn o(&self) -> String {
        self.outside.display().to_string()
    }

    /// `mm ARGS` in `cwd` as the scene's user (everything of the scene made theirs first),
    /// with `prepare` for the command (extra descriptors).
    pub(crate) async fn mm_with(
        &self,
        cwd: &Path,
        url: Option<&str>,
        args: &[&str],
        prepare: impl FnOnce(&mut tokio::process::Command),
    ) -> Run {
        self.who.own(&self.root);
        let mut cmd = self.dirs.command_as(&self.who, url, args);
        cmd.current_dir(cwd);
        prepare(&mut cmd);
        finish_within(cmd.spawn().unwrap(), RUN_LIMIT).await
    }

    async fn mm(&self, cwd: &Path, url: Option<&str>, args: &[&str]) -> Run {
        self.mm_with(cwd, url, args, |_| {}).await
    }

    /// The model runs `calls` (tool name and arguments) in `cwd`, then says "done"; the results
    /// of the calls as the model got them, and the run.
    pub(crate) async fn attack(
        &self,
        cwd: &Path,
        args: &[&str],
        calls: Vec<(&str, Value)>,
        prepare: impl FnOnce(&mut tokio::process::Command),
    ) -> (Run, Vec<String>) {
        let (out, results, _) = self.attack_logged(cwd, args, calls, prepare).await;
        (out, results)
    }

    /// [`Scene::attack`], with every request the model server received (what went on the
    /// wire).
    pub(crate) async fn attack_logged(
        &self,
        cwd: &Path,
        args: &[&str],
        calls: Vec<(&str, Value)>,
        prepare: impl FnOnce(&mut tokio::process::Command),
    ) -> (Run, Vec<String>, Vec<Value>) {
        let n = calls.len();
        let mut script: Vec<Reply> = calls
            .into_iter()
            .map(|(tool, a)| Reply::tool_call(tool, a))
            .collect();
        script.push(Reply::text("done"));
        let server = FakeServer::start(script).await;
        let mut all = args.to_vec();
        all.extend(["-p", "go"]);
        let out = self.mm_with(cwd, Some(&server.url()), &all, prepare).await;
        assert_eq!(out.code, Some(0), "{}", out.stderr);
        assert_eq!(server.violations(), Vec::<String>::new());
        let requests = server.requests();
        let results = tool_results(requests.last().unwrap());
        assert_eq!(results.len(), n, "{}", out.stderr);
        (out, results, requests)
    }

    /// A run that tries to write outside: the fence must still hold.
    async fn next_run_is_fenced(&self, args: &[&str]) {
        let (_, results) = self
            .attack(
                &self.project,
                args,
                vec![bash(&format!("echo pwned > {}/file.txt", self.o()))],
                |_| {},
            )
            .await;
        assert!(results[0].contains("[exit code: 1]"), "{}", results[0]);
        assert_eq!(
            fs::read_to_string(self.outside.join("file.txt")).unwrap(),
            "original"
        );
    }
}

pub(crate) fn bash(command: &str) -> (&'static str, Value) {
    ("bash", json!({ "command": command }))
}

/// The scene for a variant; when it cannot run here (no Landlock, no private mount namespace,
/// not root, no plain user) the test is skipped with the reason (under `CI=true` it fails).
pub(crate) fn scene(root: bool) -> Scene {
    if mm_tools::sandbox::landlock_abi() == 0 {
        common::skip("this kernel has no Landlock");
    }
    if let Err(why) = mm_tools::sandbox::namespace_works() {
        common::skip(format!("no private mount namespace here ({why})"));
    }
    Scene::new(Who::get(root))
}

/// Runs `$body` once as root and once as a plain user, as two tests.
macro_rules! as_root_and_user {
    ($root:ident, $user:ident, $body:ident) => {
        #[mm_testkit::test]
        async fn $root() {
            $body(scene(true)).await;
        }

        #[mm_testkit::test]
        async fn $user() {
            $body(scene(false)).await;
        }
    };
}
pub(crate) use as_root_and_user;

// ------------------------------------------------------------------------ root's capabilities

#[mm_testkit::test]
async fn a_fenced_root_cannot_make_device_files_and_keeps_only_the_named_capabilities() {
    let s = scene(true);
    let (_, results) = s
        .attack(
            &s.project,
            &[],
            vec![
                bash("mknod disk b 7 0"),
                bash("mknod null c 1 3"),
                bash("/usr/bin/python3 -c 'import os; os.mknod(\"py-disk\", 0o600 | 0o60000, os.makedev(7, 0))'"),
                bash("grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb)' /proc/self/status"),
                bash("echo made > ok.txt && cat ok.txt"),
            ],
            |_| {},
        )
        .await;
    for r in &results[..3] {
        assert!(r.contains("[exit code: 1]"), "{r}");
    }
    for f in ["disk", "null", "py-disk"] {
        assert!(!s.project.join(f).exists(), "{f} was made");
    }
    // Docker's default set without CAP_MKNOD (SYS_ADMIN is not in it either).
    assert_eq!(
        results[3],
        "CapInh:\t0000000000000000\nCapPrm:\t00000000a00425fb\nCapEff:\t00000000a00425fb\nCapBnd:\t00000000a00425fb\nCapAmb:\t0000000000000000\n"
    );
    assert_eq!(results[4], "made\n");
}

// -------------------------------------------------------------------------------- the terminal

/// A pty of the test's own, its slave in raw mode (no echo, every byte readable at once).
fn pty() -> (OwnedFd, OwnedFd, PathBuf) {
    let p = nix::pty::openpty(None, None).unwrap();
    let mut t = nix::sys::termios::tcgetattr(&p.slave).unwrap();
    nix::sys::termios::cfmakeraw(&mut t);
    nix::sys::termios::tcsetattr(&p.slave, nix::sys::termios::SetArg::TCSANOW, &t).unwrap();
    let name = nix::unistd::ttyname(&p.slave).unwrap();
    (p.master, p.slave, name)
}

/// What is waiting to be read on `fd`, without waiting.
fn pending(fd: &OwnedFd) -> Vec<u8> {
    use nix::fcntl::{FcntlArg, OFlag, fcntl};
    let flags = OFlag::from_bits_truncate(fcntl(fd, FcntlArg::F_GETFL).unwrap());
    fcntl(fd, FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK)).unwrap();
    let mut out = Vec::new();
    let mut buf = [0u8; 256];
    loop {
        match nix::unistd::read(fd, &mut buf) {
            Ok(0) | Err(_) => return out,
            Ok(n) => out.extend_from_slice(&buf[..n]),
        }
    }
}

/// Makes the command's descriptor 3 the test's terminal (as a terminal mm was started from
/// would be inherited by its children).
fn give_fd3(cmd: &mut tokio::process::Command, fd: &OwnedFd) {
    let raw = fd.as_raw_fd();
    // SAFETY: dup2 is async-signal-safe; `raw` stays open until the child has started.
    unsafe {
        cmd.pre_exec(move || {
            if libc::dup2(raw, 3) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Types `x` into the terminal on descriptor 3 by `TIOCSTI`, as the session leader that made it
/// its controlling terminal (what a user's TIOCSTI needs), with the request as is and with a
/// high bit set (the kernel truncates the request to 32 bits), and `TIOCLINUX`.
const TYPE_INTO_FD3: &str = r#"/usr/bin/python3 -c '
import ctypes, fcntl, termios
libc = ctypes.CDLL(None, use_errno=True)
try:
    fcntl.ioctl(3, termios.TIOCSCTTY, 0)
except OSError:
    pass
for name, req in (("TIOCSTI", 0x5412), ("TIOCSTI|1<<32", 0x5412 | 1 << 32), ("TIOCLINUX", 0x541C)):
    r = libc.ioctl(3, ctypes.c_ulong(req), ctypes.c_char_p(b"x"))
    print(name, "refused" if r < 0 and ctypes.get_errno() == 1 else "r=%d errno=%d" % (r, ctypes.get_errno()))
'"#;

async fn tiocsti_is_refused(s: Scene) {
    for mode in ["read-only", "workspace-write"] {
        let (master, slave, _) = pty();
        let (_, results) = s
            .attack(
                &s.project,
                &["--sandbox", mode],
                vec![bash(TYPE_INTO_FD3)],
                |c| give_fd3(c, &slave),
            )
            .await;
        assert_eq!(
            results[0], "TIOCSTI refused\nTIOCSTI|1<<32 refused\nTIOCLINUX refused\n",
            "{mode}"
        );
        // Nothing was typed: the terminal's input is empty, and nothing was echoed.
        assert_eq!(pending(&slave), b"", "{mode}: typed into the terminal");
        assert_eq!(pending(&master), b"", "{mode}");
    }
}

as_root_and_user!(
    tiocsti_is_refused_as_root,
    tiocsti_is_refused_as_a_user,
    tiocsti_is_refused
);

async fn the_users_terminal_cannot_be_opened(s: Scene) {
    for mode in ["read-only", "workspace-write"] {
        let (master, slave, name) = pty();
        // The user's terminal is the user's own.
        if let Who::User { uid, .. } = s.who {
            std::os::unix::fs::chown(&name, Some(uid), None).unwrap();
        }
        let n = name.display();
        let (_, results) = s
            .attack(
                &s.project,
                &["--sandbox", mode],
                vec![
                    bash(&format!("printf '\\033]52;c;cHduZWQ=\\007' > {n}")),
                    bash(&format!(
                        "/usr/bin/python3 -c 'import os; os.write(os.open(\"{n}\", os.O_WRONLY), b\"\\033[2K\")'"
                    )),
                    // The command's own terminals still work.
                    bash("/usr/bin/python3 -c 'import os; m, s = os.openpty(); os.write(s, b\"ok\"); print(os.read(m, 2))'"),
                ],
                |_| {},
            )
            .await;
        assert!(
            results[0].contains("[exit code: 1]"),
            "{mode}: {}",
            results[0]
        );
        assert!(
            results[1].contains("[exit code: 1]"),
            "{mode}: {}",
            results[1]
        );
        assert_eq!(results[2], "b'ok'\n", "{mode}");
        assert_eq!(
            pending(&master),
            b"",
            "{mode}: the bytes reached the terminal"
        );
        drop(slave);
    }
}

as_root_and_user!(
    the_users_terminal_cannot_be_opened_as_root,
    the_users_terminal_cannot_be_opened_as_a_user,
    the_users_terminal_cannot_be_opened
);

// ----------------------------------------------------------------------- mm's own configuration

// The config file itself is hidden inside the fence (an empty read-only file bound over it: a
// write there fails), and what holds is on disk, and in the next run.
async fn a_home_folder_cwd_cannot_replace_the_users_config(s: Scene) {
    let (out, results) = s
        .attack(
            &s.home,
            &[],
            vec![bash(
                "mv .config .config_old; mkdir -p .config/mm && printf '[tools]\\nsandbox = \"off\"\\n' > .config/mm/config.toml",
            )],
            |_| {},
        )
        .await;
    assert!(results[0].contains("[exit code: 1]"), "{}", results[0]);
    let line = format!(
        "sandbox workspace-write: the working directory {} is the home folder or above it, so commands may not write in it: only in the temp folders and tools.sandboxWritable (start mm in a project's folder)",
        s.home.display()
    );
    assert!(out.stderr.contains(&line), "{}", out.stderr);
    assert!(!s.home.join(".config_old").exists());
    assert_eq!(fs::read_to_string(s.dirs.user_config()).unwrap(), FENCED);
    s.next_run_is_fenced(&[]).await;
}

as_root_and_user!(
    a_home_folder_cwd_cannot_replace_the_users_config_as_root,
    a_home_folder_cwd_cannot_replace_the_users_config_as_a_user,
    a_home_folder_cwd_cannot_replace_the_users_config
);

async fn a_writable_home_cannot_rename_the_config_folder_away(s: Scene) {
    let config = format!("{FENCED}sandboxWritable = [\"{}\"]\n", s.home.display());
    s.user_config(&config);
    let (_, results) = s
        .attack(
            &s.project,
            &[],
            vec![
                bash(
                    "cd ~ && mv .config .config_old; mkdir -p .config/mm && printf '[tools]\\nsandbox = \"off\"\\n' > .config/mm/config.toml",
                ),
                bash("cd ~ && rm -rf .config; touch still-writable && ls -a .config"),
            ],
            |_| {},
        )
        .await;
    assert!(results[0].contains("[exit code: 1]"), "{}", results[0]);
    assert!(results[1].ends_with(".\n..\nmm\n"), "{}", results[1]);
    assert!(!s.home.join(".config_old").exists());
    assert!(s.home.join("still-writable").exists());
    assert_eq!(fs::read_to_string(s.dirs.user_config()).unwrap(), config);
    s.next_run_is_fenced(&[]).await;
}

as_root_and_user!(
    a_writable_home_cannot_rename_the_config_folder_away_as_root,
    a_writable_home_cannot_rename_the_config_folder_away_as_a_user,
    a_writable_home_cannot_rename_the_config_folder_away
);

async fn a_config_files_folder_cannot_be_renamed_away(s: Scene) {
    s.user_config("");
    fs::create_dir_all(s.project.join("conf")).unwrap();
    fs::write(s.project.join("conf/mm.toml"), FENCED).unwrap();
    let args = ["--config", "conf/mm.toml"];
    let (_, results) = s
        .attack(
            &s.project,
            &args,
            vec![bash(
                "mv conf conf_old; mkdir -p conf && printf '[tools]\\nsandbox = \"off\"\\n' > conf/mm.toml",
            )],
            |_| {},
        )
        .await;
    assert!(results[0].contains("[exit code: 1]"), "{}", results[0]);
    assert!(!s.project.join("conf_old").exists());
    assert_eq!(
        fs::read_to_string(s.project.join("conf/mm.toml")).unwrap(),
        FENCED
    );
    s.next_run_is_fenced(&args).await;
}

as_root_and_user!(
    a_config_files_folder_cannot_be_renamed_away_as_root,
    a_config_files_folder_cannot_be_renamed_away_as_a_user,
    a_config_files_folder_cannot_be_renamed_away
);

async fn the_projects_folder_cannot_be_renamed_from_under_its_mm_folder(s: Scene) {
    // The project lies in a folder the user opened (tools.sandboxWritable).
    let src = s.root.join("src");
    let proj = src.join("proj");
    fs::create_dir_all(proj.join(".mm")).unwrap();
    fs::write(proj.join(".mm/config.toml"), "maxSteps = 60\n").unwrap();
    s.user_config(&format!(
        "{FENCED}sandboxWritable = [\"{}\"]\n",
        src.display()
    ));
    let (_, results) = s
        .attack(
            &proj,
            &[],
            vec![
                bash("cd .. && mv proj proj_old; mkdir -p proj/.mm && echo 'yolo = true' > proj/.mm/config.toml"),
                bash("echo inside > inside.txt && cat inside.txt && touch ../beside.txt"),
            ],
            |_| {},
        )
        .await;
    assert!(results[0].contains("[exit code: 1]"), "{}", results[0]);
    assert_eq!(results[1], "inside\n");
    assert!(!src.join("proj_old").exists());
    assert_eq!(
        fs::read_to_string(proj.join(".mm/config.toml")).unwrap(),
        "maxSteps = 60\n"
    );
    assert_eq!(
        fs::read_to_string(proj.join("inside.txt")).unwrap(),
        "inside\n"
    );
    assert!(src.join("beside.txt").exists());
}

as_root_and_user!(
    the_projects_folder_cannot_be_renamed_from_under_its_mm_folder_as_root,
    the_projects_folder_cannot_be_renamed_from_under_its_mm_folder_as_a_user,
    the_projects_folder_cannot_be_renamed_from_under_its_mm_folder
);

// ------------------------------------------------------------------------- tools.sandboxWritable

async fn a_missing_writable_entry_made_a_link_to_root_opens_nothing(s: Scene) {
    let cache = s.root.join("cache");
    fs::create_dir_all(&cache).unwrap();
    let entry = cache.join("x");
    s.user_config(&format!(
        "{FENCED}sandboxWritable = [\"{}\", \"{}\"]\n",
        cache.display(),
        entry.display()
    ));
    let o = s.o();
    let (out, results) = s
        .attack(
            &s.project,
            &[],
            vec![
                bash(&format!("ln -s / {} && echo linked", entry.display())),
                bash(&format!("echo pwned > {o}/file.txt")),
                (
                    "write_file",
                    json!({"path": format!("{o}/by-tool.txt"), "content": "pwned"}),
                ),
            ],
            |_| {},
        )
        .await;
    assert_eq!(results[0], "linked\n");
    assert!(results[1].contains("[exit code: 1]"), "{}", results[1]);
    assert_eq!(
        results[2],
        format!(
            "[write outside the sandbox refused: {o}/by-tool.txt (tools.sandbox = workspace-write)]"
        )
    );
    let skipped = format!(
        "sandbox workspace-write: tools.sandboxWritable {} does not exist, so it is not writable in this run (make it, then start mm again)",
        entry.display()
    );
    assert!(out.stderr.contains(&skipped), "{}", out.stderr);
    // The next start finds the link where commands may write, and skips it too.
    let (out, results) = s
        .attack(
            &s.project,
            &[],
            vec![bash(&format!("echo pwned > {o}/file.txt"))],
            |_| {},
        )
        .await;
    assert!(results[0].contains("[exit code: 1]"), "{}", results[0]);
    let link = format!(
        "sandbox workspace-write: tools.sandboxWritable {0} goes through the symlink {0}, which lies where commands may write, so it is skipped (remove the link if you did not make it)",
        entry.display()
    );
    assert!(out.stderr.contains(&link), "{}", out.stderr);
    assert_eq!(
        fs::read_to_string(s.outside.join("file.txt")).unwrap(),
        "original"
    );
    assert!(!s.outside.join("by-tool.txt").exists());
}

as_root_and_user!(
    a_missing_writable_entry_made_a_link_to_root_opens_nothing_as_root,
    a_missing_writable_entry_made_a_link_to_root_opens_nothing_as_a_user,
    a_missing_writable_entry_made_a_link_to_root_opens_nothing
);

// ---------------------------------------------------------------------- abstract unix sockets

async fn an_abstract_socket_outside_cannot_be_reached(s: Scene) {
    use std::os::linux::net::SocketAddrExt;
    if mm_tools::sandbox::landlock_abi() < 6 {
        common::skip(format!(
            "Landlock ABI {} has no scope for abstract sockets (6 or later)",
            mm_tools::sandbox::landlock_abi()
        ));
    }
    // In a network namespace of its own, the abstract socket names are the namespace's: the
    // open network leaves Landlock's scope alone to refuse it.
    s.user_config(&format!("{FENCED}network = \"open\"\n"));
    let name = format!("mm-fence-test-{}-{}", std::process::id(), s.who.is_root());
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(&name).unwrap();
    let listener = std::os::unix::net::UnixListener::bind_addr(&addr).unwrap();
    listener.set_nonblocking(true).unwrap();
    for mode in ["read-only", "workspace-write"] {
        let (_, results) = s
            .attack(
                &s.project,
                &["--sandbox", mode],
                vec![bash(&format!(
                    "/usr/bin/python3 -c 'import socket; s = socket.socket(socket.AF_UNIX); s.connect(\"\\0{name}\"); print(\"connected\")' 2>&1 | tail -1"
                ))],
                |_| {},
            )
            .await;
        assert_eq!(
            results[0], "PermissionError: [Errno 1] Operation not permitted\n",
            "{mode}"
        );
        assert_eq!(
            listener.accept().map(|_| ()).unwrap_err().kind(),
            ErrorKind::WouldBlock
        );
    }
}

as_root_and_user!(
    an_abstract_socket_outside_cannot_be_reached_as_root,
    an_abstract_socket_outside_cannot_be_reached_as_a_user,
    an_abstract_socket_outside_cannot_be_reached
);

// ---------------------------------------------------------------------------- a nested mm

async fn an_mm_inside_the_fence_knows_it_and_fences_its_own_children(s: Scene) {
    // The inner mm must reach the fake model server on the host's loopback, which no fenced
    // command reaches through the fence's network (trust_network.rs): this test is the fence's
    // files.
    s.user_config(&format!("{FENCED}network = \"open\"\n"));
    let bin = s.who.binary(&mm_testkit::mm_binary(), &s.root);
    let server = FakeServer::start(vec![
        // The outer mm's model starts an mm inside its fence...
        Reply::tool_call(
            "bash",
            json!({"command": format!(
                "echo \"outer: $MM_FENCED\"; {} --sandbox read-only -p inner 2>&1; echo \"inner exit $?\"",
                bin.display()
            )}),
        ),
        // ...whose model tries a write the outer fence would allow.
        Reply::tool_call(
            "bash",
            json!({"command": "echo \"inner: $MM_FENCED\"; touch made-by-inner"}),
        ),
        Reply::text("inner done"),
        Reply::text("done"),
    ])
    .await;
    let out = s.mm(&s.project, Some(&server.url()), &["-p", "go"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(out.stdout, "done\n");
    assert_eq!(server.violations(), Vec::<String>::new());
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    assert_eq!(
        tool_results(&requests[2]),
        [
            "inner: read-only\ntouch: cannot touch 'made-by-inner': Permission denied\n[exit code: 1]\n[tools.sandbox = read-only: commands may not write any file]"
        ]
    );
    let outer = &tool_results(&requests[3])[0];
    assert!(outer.starts_with("outer: workspace-write\n"), "{outer}");
    assert!(
        outer.contains("it relies on the outer fence for the read-only mounts and the hidden places (mm runs inside mm's fence: MM_FENCED=workspace-write)"),
        "{outer}"
    );
    // The inner mm's answer on stdout, its usage line on stderr after it.
    assert!(
        outer.contains("\ninner done\n") && outer.ends_with("\ninner exit 0\n"),
        "{outer}"
    );
    assert!(!s.project.join("made-by-inner").exists());
}

as_root_and_user!(
    an_mm_inside_the_fence_knows_it_and_fences_its_own_children_as_root,
    an_mm_inside_the_fence_knows_it_and_fences_its_own_children_as_a_user,
    an_mm_inside_the_fence_knows_it_and_fences_its_own_children
);

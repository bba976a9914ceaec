//! Fenced by default, secrets out of reach (docs/sandbox.md): with nothing configured the real
//! `mm -p` fences the model's commands in `workspace-write`, the home's secret places read as
//! empty inside the fence and mm's own tools refuse them, so that no secret reaches the fake
//! model's log; the package caches stay writable, so a build works fenced; `tools.sandbox =
//! "off"` is as before. As root and as a plain user (trust_fence.rs's scenes).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]
// The over-mounts are Linux's mount namespace (docs/platforms.md)
#![cfg(target_os = "linux")]

use mm_testkit as common;

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::trust_fence::{Scene, as_root_and_user, bash, scene};

const SSH_KEY: &str = "SSH-PRIVATE-KEY-a1b2c3";
const AWS_KEY: &str = "AWS-SECRET-KEY-d4e5f6";
const NETRC: &str = "machine example.com password NETRC-g7h8i9";

fn read_file(path: &Path) -> (&'static str, Value) {
    ("read_file", json!({ "path": path.display().to_string() }))
}

/// The home's keys, where a prompt-injected model would look first.
fn plant_secrets(s: &Scene) {
    fs::create_dir_all(s.home.join(".ssh")).unwrap();
    fs::write(s.home.join(".ssh/id_ed25519"), SSH_KEY).unwrap();
    fs::create_dir_all(s.home.join(".aws")).unwrap();
    fs::write(s.home.join(".aws/credentials"), AWS_KEY).unwrap();
    fs::write(s.home.join(".netrc"), NETRC).unwrap();
}

/// Whether any request the model server received holds `secret`.
fn on_the_wire(requests: &[Value], secret: &str) -> bool {
    requests.iter().any(|r| r.to_string().contains(secret))
}

// ------------------------------------------------------------------- fenced with nothing set

async fn with_nothing_configured_writes_land_only_in_the_project(s: Scene) {
    s.user_config("");
    let (out, results) = s
        .attack(
            &s.project,
            &[],
            vec![
                bash(&format!("echo pwned > {}/file.txt", s.o())),
                bash("echo mine > inside.txt && cat inside.txt"),
            ],
            |_| {},
        )
        .await;
    assert!(results[0].contains("Permission denied"), "{}", results[0]);
    assert!(
        results[0].contains("[tools.sandbox = workspace-write: commands may write only in"),
        "{}",
        results[0]
    );
    assert!(results[1].contains("mine"), "{}", results[1]);
    assert_eq!(
        fs::read_to_string(s.outside.join("file.txt")).unwrap(),
        "original"
    );
    assert_eq!(
        fs::read_to_string(s.project.join("inside.txt")).unwrap(),
        "mine\n"
    );
    // The fence is whole here: the banner names it, with nothing to warn about.
    assert!(
        out.stderr.contains("· sandbox workspace-write ·"),
        "{}",
        out.stderr
    );
    assert!(
        !out.stderr.contains("sandbox workspace-write:"),
        "{}",
        out.stderr
    );
}

as_root_and_user!(
    with_nothing_configured_writes_land_only_in_the_project_as_root,
    with_nothing_configured_writes_land_only_in_the_project_as_a_user,
    with_nothing_configured_writes_land_only_in_the_project
);

async fn the_homes_keys_never_reach_the_model(s: Scene) {
    s.user_config("");
    plant_secrets(&s);
    let (_, results, requests) = s
        .attack_logged(
            &s.project,
            &[],
            vec![
                bash("cat ~/.ssh/id_ed25519 ~/.aws/credentials; ls -a ~/.ssh ~/.aws"),
                bash("mv ~/.ssh ~/ssh2; d=$(mktemp -d); cp -r ~/.aws $d/; cat $d/.aws/*"),
                read_file(&s.home.join(".ssh/id_ed25519")),
                read_file(&s.home.join(".aws")),
                read_file(
                    &s.project.join("../").join(
                        s.home
                            .strip_prefix(s.project.parent().unwrap())
                            .unwrap()
                            .join(".aws/credentials"),
                    ),
                ),
                // A hidden file reads as an empty regular file, and a write to it fails.
                bash("cat ~/.netrc; test -f ~/.netrc && test ! -s ~/.netrc && echo empty; echo pwned > ~/.netrc"),
            ],
            |_| {},
        )
        .await;
    assert!(!on_the_wire(&requests, SSH_KEY), "{results:#?}");
    assert!(!on_the_wire(&requests, AWS_KEY), "{results:#?}");
    assert!(!on_the_wire(&requests, NETRC), "{results:#?}");
    // The folders read as empty, not as missing files that the model would look for elsewhere.
    assert!(results[0].contains("No such file"), "{}", results[0]);
    let refused = format!(
        "[{} is hidden by the sandbox: mm's tools and commands do not read it (tools.sandboxReadable in your user config gives a place back)]",
        s.home.join(".ssh/id_ed25519").display()
    );
    assert_eq!(results[2], refused);
    assert!(
        results[3].contains("tools.sandboxReadable"),
        "{}",
        results[3]
    );
    assert!(
        results[4].contains("tools.sandboxReadable"),
        "{}",
        results[4]
    );
    // Nothing moved on disk either.
    assert_eq!(
        fs::read_to_string(s.home.join(".ssh/id_ed25519")).unwrap(),
        SSH_KEY
    );
    assert!(!s.home.join("ssh2").exists());
    assert!(results[5].starts_with("empty\n"), "{}", results[5]);
    assert!(
        results[5].contains("Read-only file system"),
        "{}",
        results[5]
    );
    assert!(results[5].contains("[exit code: 1]"), "{}", results[5]);
    assert_eq!(fs::read_to_string(s.home.join(".netrc")).unwrap(), NETRC);
}

as_root_and_user!(
    the_homes_keys_never_reach_the_model_as_root,
    the_homes_keys_never_reach_the_model_as_a_user,
    the_homes_keys_never_reach_the_model
);

async fn the_users_readable_gives_a_place_back_and_a_project_only_hides_more(s: Scene) {
    s.user_config("[tools]\nsandboxReadable = [\"~/.aws\"]\n");
    plant_secrets(&s);
    fs::write(s.project.join("token.txt"), "PROJECT-TOKEN-g7h8").unwrap();
    fs::create_dir_all(s.project.join(".mm")).unwrap();
    fs::write(
        s.project.join(".mm/config.toml"),
        format!(
            "[tools]\nsandboxReadable = [\"~/.ssh\"]\nsandboxHidden = [\"{}\"]\n",
            s.project.join("token.txt").display()
        ),
    )
    .unwrap();
    let (out, results, requests) = s
        .attack_logged(
            &s.project,
            &[],
            vec![
                bash("cat ~/.aws/credentials; cat ~/.ssh/id_ed25519; cat token.txt"),
                read_file(&s.project.join("token.txt")),
            ],
            |_| {},
        )
        .await;
    assert!(on_the_wire(&requests, AWS_KEY), "{results:#?}");
    assert!(!on_the_wire(&requests, SSH_KEY), "{results:#?}");
    assert!(
        !on_the_wire(&requests, "PROJECT-TOKEN-g7h8"),
        "{results:#?}"
    );
    assert!(
        results[1].contains("tools.sandboxReadable"),
        "{}",
        results[1]
    );
    assert!(
        out.stderr
            .contains("tools.sandboxReadable is ignored in project files"),
        "{}",
        out.stderr
    );
}

as_root_and_user!(
    the_users_readable_gives_a_place_back_and_a_project_only_hides_more_as_root,
    the_users_readable_gives_a_place_back_and_a_project_only_hides_more_as_a_user,
    the_users_readable_gives_a_place_back_and_a_project_only_hides_more
);

async fn a_hidden_place_made_after_the_fence_is_hidden_from_the_next_call_on(s: Scene) {
    let secret = s.project.join("later.txt");
    s.user_config(&format!(
        "[tools]\nsandboxHidden = [\"{}\"]\n",
        secret.display()
    ));
    let (_, results, requests) = s
        .attack_logged(
            &s.project,
            &[],
            vec![
                // The secret is made by the command: its text is not in the call's arguments.
                bash("echo made-$((6*7))-later > later.txt && echo written"),
                bash("cat later.txt; echo end"),
            ],
            |_| {},
        )
        .await;
    assert!(results[0].contains("written"), "{}", results[0]);
    assert!(!on_the_wire(&requests, "made-42-later"), "{results:#?}");
    assert_eq!(fs::read_to_string(&secret).unwrap(), "made-42-later\n");
}

as_root_and_user!(
    a_hidden_place_made_after_the_fence_is_hidden_from_the_next_call_on_as_root,
    a_hidden_place_made_after_the_fence_is_hidden_from_the_next_call_on_as_a_user,
    a_hidden_place_made_after_the_fence_is_hidden_from_the_next_call_on
);

// ------------------------------------------------------------------------------ off, as before

async fn sandbox_off_is_as_before(s: Scene) {
    s.user_config("[tools]\nsandbox = \"off\"\n");
    plant_secrets(&s);
    let (out, results, requests) = s
        .attack_logged(
            &s.project,
            &[],
            vec![
                bash(&format!("echo changed > {}/file.txt", s.o())),
                read_file(&s.home.join(".aws/credentials")),
            ],
            |_| {},
        )
        .await;
    assert!(results[0].contains("[exit code: 0]") || !results[0].contains("exit code"));
    assert_eq!(
        fs::read_to_string(s.outside.join("file.txt")).unwrap(),
        "changed\n"
    );
    assert!(on_the_wire(&requests, AWS_KEY), "{results:#?}");
    assert!(!out.stderr.contains("sandbox"), "{}", out.stderr);
}

as_root_and_user!(
    sandbox_off_is_as_before_as_root,
    sandbox_off_is_as_before_as_a_user,
    sandbox_off_is_as_before
);

// -------------------------------------------------------------------------- builds work fenced

/// The toolchain's own `cargo` and `rustc` (not rustup's proxies, which look for their
/// toolchains under `$HOME`, the scene's).
fn toolchain() -> Option<(PathBuf, PathBuf)> {
    let out = std::process::Command::new("rustc")
        .args(["--print", "sysroot"])
        .output()
        .ok()?;
    let sysroot = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
    let (cargo, rustc) = (sysroot.join("bin/cargo"), sysroot.join("bin/rustc"));
    (cargo.exists() && rustc.exists()).then_some((cargo, rustc))
}

/// The registry's index entry and archive of a crate without dependencies, copied from the
/// cargo home the tests run with into the scene's, so that an offline build finds it cached.
fn cache_a_crate(home: &Path) -> Option<String> {
    let real = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))?;
    let index = fs::read_dir(real.join("registry/index")).ok()?;
    for dir in index.flatten() {
        let name = dir.file_name();
        let entry = dir.path().join(".cache/it/oa/itoa");
        let Ok(archives) = fs::read_dir(real.join("registry/cache").join(&name)) else {
            continue;
        };
        let archive = archives.flatten().map(|a| a.path()).find(|a| {
            a.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("itoa-1."))
        });
        let (true, Some(archive)) = (entry.exists(), archive) else {
            continue;
        };
        let version = archive
            .file_stem()?
            .to_string_lossy()
            .trim_start_matches("itoa-")
            .to_string();
        let into = home.join(".cargo/registry");
        fs::create_dir_all(into.join("index").join(&name).join(".cache/it/oa")).unwrap();
        fs::copy(
            &entry,
            into.join("index").join(&name).join(".cache/it/oa/itoa"),
        )
        .unwrap();
        let config = dir.path().join("config.json");
        if config.exists() {
            fs::copy(&config, into.join("index").join(&name).join("config.json")).unwrap();
        }
        fs::create_dir_all(into.join("cache").join(&name)).unwrap();
        fs::copy(
            &archive,
            into.join("cache").join(&name).join(archive.file_name()?),
        )
        .unwrap();
        return Some(version);
    }
    None
}

#[mm_testkit::test]
async fn a_build_whose_dependency_is_in_the_registry_cache_works_fenced() {
    // The toolchain of the tests' own user (under /root, mode 0700, when that is root).
    // SAFETY: geteuid cannot fail.
    let s = scene(unsafe { libc::geteuid() } == 0);
    let Some((cargo, rustc)) = toolchain() else {
        common::skip("no cargo and rustc toolchain found (rustc --print sysroot)");
    };
    let Some(version) = cache_a_crate(&s.home) else {
        common::skip("the crate itoa 1.x is not in this machine's cargo registry cache");
    };
    s.user_config("");
    fs::create_dir_all(s.project.join("src")).unwrap();
    fs::write(
        s.project.join("Cargo.toml"),
        format!(
            "[package]\nname = \"fenced\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n\n[dependencies]\nitoa = \"={version}\"\n"
        ),
    )
    .unwrap();
    fs::write(
        s.project.join("src/main.rs"),
        "fn main() { println!(\"{}\", itoa::Buffer::new().format(42)); }\n",
    )
    .unwrap();
    let command = format!(
        "{} run --offline -q 2>&1; echo \"[cargo exit: $?]\"",
        cargo.display()
    );
    let home = s.home.clone();
    let (_, results) = s
        .attack(&s.project, &[], vec![bash(&command)], |cmd| {
            cmd.env("CARGO_HOME", home.join(".cargo"))
                .env("RUSTC", &rustc)
                .env_remove("CARGO_TARGET_DIR")
                .env_remove("RUSTC_WRAPPER");
        })
        .await;
    assert!(results[0].contains("42\n[cargo exit: 0]"), "{}", results[0]);
    // The archive was unpacked into the (writable) registry, and nothing else of the cargo
    // home was opened to commands.
    assert!(s.home.join(".cargo/registry/src").exists());
}

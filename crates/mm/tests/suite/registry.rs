//! The ACP registry entry (dist/acp-registry/mm): valid against the registry's own schema
//! (mm-testkit's fixtures/acp-registry), every platform of the registry listed with the archive
//! the release builds (`mm-<version>-<target>.tar.gz`, `.zip` on Windows, under the workspace's
//! `repository`), the version the crate's, and an icon the registry takes (square, 16×16,
//! `currentColor` only). The registry's check of the running agent is in acp_setup.rs.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use std::path::{Path, PathBuf};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn entry_dir() -> PathBuf {
    workspace().join("dist/acp-registry/mm")
}

fn entry() -> Value {
    let text = std::fs::read_to_string(entry_dir().join("agent.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The registry's platforms and the Rust target each one's archive is built for.
const PLATFORMS: [(&str, &str); 6] = [
    ("darwin-aarch64", "aarch64-apple-darwin"),
    ("darwin-x86_64", "x86_64-apple-darwin"),
    ("linux-aarch64", "aarch64-unknown-linux-gnu"),
    ("linux-x86_64", "x86_64-unknown-linux-gnu"),
    ("windows-aarch64", "aarch64-pc-windows-msvc"),
    ("windows-x86_64", "x86_64-pc-windows-msvc"),
];

#[mm_testkit::test]
fn the_entry_is_valid_against_the_registry_schema() {
    let schema_path = workspace().join("crates/mm-testkit/fixtures/acp-registry/agent.schema.json");
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(schema_path).unwrap()).unwrap();
    let validator = jsonschema::options()
        .should_validate_formats(true)
        .build(&schema)
        .unwrap();
    let entry = entry();
    let errors: Vec<String> = validator
        .iter_errors(&entry)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect();
    assert_eq!(errors, Vec::<String>::new());
    // The schema's own check works: a broken entry is refused.
    let mut broken = entry.clone();
    broken["distribution"]["binary"]["linux-riscv64"] = json!({"archive": "x", "cmd": "./mm"});
    assert!(!validator.is_valid(&broken));
    // The folder's name is the id (the registry's CI checks it).
    assert_eq!(entry["id"], "mm");
    assert_eq!(entry_dir().file_name().unwrap(), "mm");
}

#[mm_testkit::test]
fn the_entry_names_the_crate_s_version_and_the_release_archives() {
    let entry = entry();
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(entry["version"], version);
    // `agentInfo.version` (mm --version) says the same with its `v`.
    assert_eq!(mm_core::VERSION.strip_prefix('v'), Some(version));
    let repository = env!("CARGO_PKG_REPOSITORY");
    assert!(
        repository.starts_with("https://github.com/"),
        "{repository}"
    );
    assert_eq!(entry["repository"], repository);
    assert_eq!(entry["license"], env!("CARGO_PKG_LICENSE"));
    let binary = entry["distribution"]["binary"].as_object().unwrap();
    let listed: Vec<&str> = binary.keys().map(String::as_str).collect();
    let expected: Vec<&str> = PLATFORMS.iter().map(|(p, _)| *p).collect();
    assert_eq!(
        listed, expected,
        "every platform of the registry, in its order"
    );
    for (platform, target) in PLATFORMS {
        let windows = platform.starts_with("windows");
        let ext = if windows { "zip" } else { "tar.gz" };
        let cmd = if windows { "./mm.exe" } else { "./mm" };
        assert_eq!(
            binary[platform],
            json!({
                "archive": format!("{repository}/releases/download/v{version}/mm-{version}-{target}.{ext}"),
                "cmd": cmd,
                "args": ["-acp"],
            }),
            "{platform}"
        );
    }
}

#[mm_testkit::test]
fn the_icon_is_square_16_by_16_and_drawn_in_current_color_only() {
    let svg = std::fs::read_to_string(entry_dir().join("icon.svg")).unwrap();
    assert_eq!(entry()["icon"], "./icon.svg");
    let root = &svg[svg.find("<svg").unwrap()..];
    let root = &root[..root.find('>').unwrap()];
    let attr = |name: &str| {
        let key = format!(" {name}=\"");
        let start = root.find(&key).map(|i| i + key.len())?;
        Some(root[start..start + root[start..].find('"')?].to_string())
    };
    assert_eq!(attr("width").as_deref(), Some("16"));
    assert_eq!(attr("height").as_deref(), Some("16"));
    assert_eq!(attr("viewBox").as_deref(), Some("0 0 16 16"));
    // Every paint is `currentColor` or `none`; no colour is written any other way.
    let paint =
        regex::Regex::new(r#"(fill|stroke|color|stop-color)\s*[=:]\s*"?([^";\s>]+)"#).unwrap();
    let paints: Vec<String> = paint
        .captures_iter(&svg)
        .map(|c| c[2].to_string())
        .collect();
    assert!(paints.iter().any(|p| p == "currentColor"), "{svg}");
    for p in &paints {
        assert!(p == "currentColor" || p == "none", "a fixed colour: {p}");
    }
    for fixed in ["#", "rgb(", "hsl(", "<style", "<image"] {
        assert!(!svg.contains(fixed), "{fixed} in the icon");
    }
}

#[mm_testkit::test]
fn the_release_script_names_the_archives_as_the_entry_does() {
    let script = std::fs::read_to_string(workspace().join("scripts/release.sh")).unwrap();
    for piece in [
        "name=mm-$version-$target",
        "archive=$name.zip",
        "archive=$name.tar.gz",
        "exe=mm.exe",
        "\"$archive.sha256\"",
    ] {
        assert!(script.contains(piece), "scripts/release.sh: {piece}");
    }
    let workflow =
        std::fs::read_to_string(workspace().join(".github/workflows/release.yml")).unwrap();
    for (platform, target) in PLATFORMS {
        assert!(
            workflow.contains(&format!("platform: {platform}, target: {target},")),
            "release.yml builds {platform} as {target}"
        );
    }
    // Published only after every build, macOS and Windows included.
    assert!(workflow.contains("needs: build"));
}

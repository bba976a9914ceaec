//! The layers of the workspace, as docs/architecture.md's tables state them, held to what
//! `cargo metadata` says the crates depend on: a dependency between workspace crates that the
//! table of layers does not list fails here, so does every arrow of the table of those that never
//! exist (a front end to the other or past the engine, the engine and below to a front end, the
//! test kits upward), and the table of layers itself must keep the design's rules — arrows run
//! down the list only, a front end is used by nothing but the binary (and the test kit), no
//! library uses a test kit, and the ACP SDK stays out of every crate below the front ends but
//! mm-agents. The compiler then holds each arrow: a crate cannot name what it does not depend
//! on.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

const ARCHITECTURE: &str = include_str!("../../../../docs/architecture.md");

/// The two front ends: nothing uses them but the binary (and the test kit's ACP client).
const FRONT_ENDS: [&str; 2] = ["mm-acp", "mm-term"];
const BINARY: &str = "mm";
/// Dev only: a crate may use it in its tests alone.
const TESTKIT: &str = "mm-testkit";
/// Dev only too: the test kit's doubles below the engine.
const TESTKIT_CORE: &str = "mm-testkit-core";
const ACP_SDK: &str = "agent-client-protocol";
/// The crates that may depend on the ACP SDK: mm as an ACP client, the ACP front end, the
/// binary, and the test kit (its ACP test client).
const ACP_SDK_USERS: [&str; 4] = ["mm-agents", "mm-acp", "mm", "mm-testkit"];

/// One row of the table: the crate, what it may use, what its tests may use besides.
#[derive(Debug)]
struct Layer {
    name: String,
    uses: BTreeSet<String>,
    tests_use: BTreeSet<String>,
}

/// The workspace crates named in backticks in a cell.
fn crates_in(cell: &str) -> BTreeSet<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .filter(|name| *name == BINARY || name.starts_with("mm-"))
        .map(str::to_string)
        .collect()
}

/// The cells of each row of the first table of docs/architecture.md whose header starts with
/// `header`, in its order; its columns must be `columns`.
fn rows(header: &str, columns: &[&str]) -> Vec<Vec<String>> {
    let mut lines = ARCHITECTURE.lines().skip_while(|l| !l.starts_with(header));
    let found = lines
        .next()
        .unwrap_or_else(|| panic!("docs/architecture.md has no `{header}` table"));
    let found: Vec<&str> = found.split('|').map(str::trim).collect();
    assert_eq!(
        found[1..found.len() - 1],
        *columns,
        "the columns of `{header}`"
    );
    lines
        .skip(1) // the |---| row
        .take_while(|l| l.starts_with('|'))
        .map(|row| {
            let cells: Vec<String> = row.split('|').map(|c| c.trim().to_string()).collect();
            assert_eq!(cells.len(), columns.len() + 2, "a row of the table: {row}");
            cells[1..cells.len() - 1].to_vec()
        })
        .collect()
}

/// The table of layers (`| Crate |`), in its order (top: the lowest layer).
fn table() -> Vec<Layer> {
    rows(
        "| Crate |",
        &["Crate", "Owns", "May use", "Its tests may also use"],
    )
    .into_iter()
    .map(|cells| {
        let name: Vec<String> = crates_in(&cells[0]).into_iter().collect();
        assert_eq!(name.len(), 1, "a row names one crate: {cells:?}");
        Layer {
            name: name[0].clone(),
            uses: crates_in(&cells[2]),
            tests_use: crates_in(&cells[3]),
        }
    })
    .collect()
}

/// The arrows that never exist (`| From |`): `(from, to)` for each crate of each cell.
fn never() -> Vec<(String, String)> {
    let mut arrows = Vec::new();
    for cells in rows("| From |", &["From", "Never uses", "Why"]) {
        for from in crates_in(&cells[0]) {
            for to in crates_in(&cells[1]) {
                arrows.push((from.clone(), to));
            }
        }
    }
    arrows
}

/// `cargo metadata --format-version 1 --no-deps` of the workspace.
fn metadata() -> Value {
    mm_testkit::platform::not_under_wine(
        "cargo is the Linux program that built this one, whose output a Windows process cannot read",
    );
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.toml");
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--manifest-path",
        ])
        .arg(&root)
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON")
}

/// `(crate, dependency, kind)` for every dependency of every workspace crate; kind is `normal`,
/// `dev` or `build`.
fn dependencies(metadata: &Value) -> Vec<(String, String, String)> {
    let mut all = Vec::new();
    for package in metadata["packages"].as_array().unwrap() {
        for dep in package["dependencies"].as_array().unwrap() {
            all.push((
                package["name"].as_str().unwrap().to_string(),
                dep["name"].as_str().unwrap().to_string(),
                dep["kind"].as_str().unwrap_or("normal").to_string(),
            ));
        }
    }
    all
}

fn members(metadata: &Value) -> BTreeSet<String> {
    metadata["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap().to_string())
        .collect()
}

#[mm_testkit::test]
fn the_table_names_every_crate_of_the_workspace_once() {
    let table = table();
    let named: Vec<&str> = table.iter().map(|l| l.name.as_str()).collect();
    let unique: BTreeSet<String> = named.iter().map(|n| n.to_string()).collect();
    assert_eq!(unique.len(), named.len(), "a crate named twice: {named:?}");
    assert_eq!(unique, members(&metadata()));
}

/// Arrows run down the list only; a front end is used by the binary alone (the test kit's ACP
/// client aside) and uses no other; the test kit is for tests only, and depends on no crate
/// whose tests use it (a suite would link two copies of that crate).
#[mm_testkit::test]
fn the_table_keeps_the_layering_rules() {
    let table = table();
    let mut broken = Vec::new();
    for (i, layer) in table.iter().enumerate() {
        let above: BTreeSet<&str> = table[..i].iter().map(|l| l.name.as_str()).collect();
        for used in &layer.uses {
            if !above.contains(used.as_str()) {
                broken.push(format!("{} uses {used}, which is not above it", layer.name));
            }
            if FRONT_ENDS.contains(&used.as_str()) && layer.name != BINARY && layer.name != TESTKIT
            {
                broken.push(format!("{} uses the front end {used}", layer.name));
            }
            if [TESTKIT, TESTKIT_CORE].contains(&used.as_str())
                && ![TESTKIT, TESTKIT_CORE].contains(&layer.name.as_str())
            {
                broken.push(format!("{} uses {used} outside its tests", layer.name));
            }
        }
        for used in &layer.tests_use {
            let kit = [TESTKIT, TESTKIT_CORE].contains(&used.as_str());
            if !kit && !layer.uses.contains(used) {
                broken.push(format!("the tests of {} use {used}", layer.name));
            }
            if kit
                && let Some(kit) = table.iter().find(|l| &l.name == used)
                && kit.uses.contains(&layer.name)
            {
                broken.push(format!(
                    "the tests of {} use {used}, which uses {}",
                    layer.name, layer.name
                ));
            }
        }
    }
    assert_eq!(broken, Vec::<String>::new());
}

#[mm_testkit::test]
fn every_dependency_between_crates_is_in_the_table() {
    let table = table();
    let metadata = metadata();
    let members = members(&metadata);
    let mut unlisted = Vec::new();
    for (krate, dep, kind) in dependencies(&metadata) {
        if !members.contains(&dep) {
            continue;
        }
        let Some(layer) = table.iter().find(|l| l.name == krate) else {
            unlisted.push(format!("{krate} is not in the table"));
            continue;
        };
        let listed = match kind.as_str() {
            "dev" => layer.uses.contains(&dep) || layer.tests_use.contains(&dep),
            _ => layer.uses.contains(&dep),
        };
        if !listed {
            unlisted.push(format!(
                "{krate} depends on {dep} ({kind}), which the table does not list"
            ));
        }
    }
    assert_eq!(unlisted, Vec::<String>::new());
}

#[mm_testkit::test]
fn the_acp_sdk_stays_out_of_the_layers_below_the_front_ends() {
    let metadata = metadata();
    let users: BTreeSet<String> = dependencies(&metadata)
        .into_iter()
        .filter(|(_, dep, _)| dep == ACP_SDK)
        .map(|(krate, _, _)| krate)
        .collect();
    let allowed: BTreeSet<String> = ACP_SDK_USERS.iter().map(|s| s.to_string()).collect();
    assert!(
        users.is_subset(&allowed),
        "{ACP_SDK} is used by {users:?}; only {allowed:?} may"
    );
    // The front ends and mm as an ACP client really speak it (the check above is not empty).
    assert!(
        users.contains("mm-agents") && users.contains("mm-acp"),
        "{users:?}"
    );
}

/// Every arrow of the table of those that never exist is absent from `cargo metadata` (any
/// kind of dependency) and from the table of layers; the core, the model and the tools among
/// them know no front end.
#[mm_testkit::test]
fn no_arrow_the_design_forbids_exists() {
    let never = never();
    for krate in ["mm-core", "mm-model", "mm-tools"] {
        for front in FRONT_ENDS.iter().chain([&BINARY]) {
            assert!(
                never.contains(&(krate.to_string(), front.to_string())),
                "the table of arrows that never exist forbids {krate} → {front}"
            );
        }
    }
    let metadata = metadata();
    let members = members(&metadata);
    let table = table();
    let mut found = Vec::new();
    for (from, to) in &never {
        assert!(
            members.contains(from) && members.contains(to),
            "{from} → {to}"
        );
        for (krate, dep, kind) in dependencies(&metadata) {
            if &krate == from && &dep == to {
                found.push(format!("{krate} depends on {dep} ({kind})"));
            }
        }
        if let Some(layer) = table.iter().find(|l| &l.name == from)
            && (layer.uses.contains(to) || layer.tests_use.contains(to))
        {
            found.push(format!("the table of layers lets {from} use {to}"));
        }
    }
    assert_eq!(found, Vec::<String>::new());
}

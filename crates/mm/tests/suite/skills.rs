//! The skill catalogue, the `$skill` notation, skills as slash commands, and `read_skill`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use mm_testkit as common;

use std::fs;
use std::path::{Path, PathBuf};

use common::Recorder;
use common::platform::{absolute, native, slashed};
use mm_core::event::{ToolKind, ToolStatus};
use mm_core::skills::{
    Catalogue, Skill, SkillDirs, advertised, resolve_notation, rewrite_slash, shadowed,
};
use mm_tools::tools::read_skill::ReadSkill;
use mm_tools::tools::{CallContext, Describe, Tool};
use pretty_assertions::assert_eq;
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

fn skill_md(name: Option<&str>, description: &str, body: &str) -> String {
    let name = name.map(|n| format!("name: {n}\n")).unwrap_or_default();
    format!("---\n{name}description: {description}\n---\n{body}")
}

struct Env {
    _tmp: tempfile::TempDir,
    cwd: PathBuf,
    home: PathBuf,
}

impl Env {
    fn new() -> Env {
        let tmp = tempfile::tempdir().unwrap();
        let cwd = tmp.path().join("proj");
        let home = tmp.path().join("home");
        fs::create_dir_all(&cwd).unwrap();
        fs::create_dir_all(&home).unwrap();
        Env {
            _tmp: tmp,
            cwd,
            home,
        }
    }
    fn dirs(&self) -> SkillDirs {
        SkillDirs {
            cwd: self.cwd.clone(),
            home: Some(self.home.clone()),
            xdg_config: None,
            extra: Vec::new(),
        }
    }
}

fn catalogue(skills: &[(&str, &str)]) -> Catalogue {
    Catalogue {
        skills: skills
            .iter()
            .map(|(n, d)| Skill {
                name: n.to_string(),
                description: d.to_string(),
                dir: PathBuf::from(format!("/s/{n}")),
            })
            .collect(),
    }
}

#[mm_testkit::test]
fn folders_in_precedence_order() {
    // Absolute on this system (on `C:` on Windows).
    let dirs = SkillDirs {
        cwd: absolute("/p"),
        home: Some(absolute("/h")),
        xdg_config: Some(absolute("/x")),
        extra: vec!["more".into(), absolute("/abs/skills"), "~/mine".into()],
    };
    let expected: Vec<PathBuf> = [
        "/p/.mm/skills",
        "/p/.agents/skills",
        "/p/.claude/skills",
        "/x/mm/skills",
        "/h/.agents/skills",
        "/h/.claude/skills",
        "/p/more",
        "/abs/skills",
        "/h/mine",
    ]
    .iter()
    .map(|p| absolute(p))
    .collect();
    assert_eq!(dirs.folders(), expected);

    // No XDG_CONFIG_HOME (or a relative one, which the XDG spec says to ignore): ~/.config.
    for xdg in [None, Some(PathBuf::from("rel"))] {
        let dirs = SkillDirs {
            xdg_config: xdg,
            extra: Vec::new(),
            ..dirs.clone()
        };
        assert_eq!(dirs.folders()[3], absolute("/h/.config/mm/skills"));
    }
}

#[mm_testkit::test]
fn load_takes_valid_skills_sorted_and_warns_about_broken_ones() {
    let env = Env::new();
    let proj = env.cwd.join(".mm/skills");
    write(
        &proj.join("greetings/SKILL.md"),
        &skill_md(
            Some("greetings"),
            "Greet somebody with a festive message.",
            "Write a greeting.\n",
        ),
    );
    // The folder's name when the front matter has none.
    write(
        &proj.join("vulcan-salute/SKILL.md"),
        &skill_md(None, "Send a vulcan salute to somebody.", "🖖\n"),
    );
    // The front matter's name wins over the folder's.
    write(
        &proj.join("folder-x/SKILL.md"),
        &skill_md(Some("bg-jobs"), "Start and stop background jobs.", ""),
    );
    // A folded multi-line description, extra keys (as Claude Code's skills have).
    write(
        &proj.join("aardvark/SKILL.md"),
        "---\nname: aardvark\ndescription: >\n  Count\n  ants.\nallowed-tools: [bash]\nmetadata:\n  v: 1\n---\nbody\n",
    );
    // Broken ones.
    write(
        &proj.join("mute/SKILL.md"),
        "---\nname: mute\n---\nNo description.\n",
    );
    write(
        &proj.join("plain/SKILL.md"),
        "Just markdown, no front matter.\n",
    );
    write(
        &proj.join("bad/SKILL.md"),
        &skill_md(Some("Bad_Name"), "Has a bad name.", ""),
    );
    write(
        &proj.join("Upper/SKILL.md"),
        &skill_md(None, "Folder name is not a valid name.", ""),
    );
    write(
        &proj.join("toolong/SKILL.md"),
        &skill_md(Some(&"a".repeat(65)), "Too long.", ""),
    );
    write(
        &proj.join("unclosed/SKILL.md"),
        "---\nname: unclosed\ndescription: x\n",
    );
    write(
        &proj.join("yaml/SKILL.md"),
        "---\nname: [unterminated\ndescription: x\n---\n",
    );
    // Unreadable: a folder where the file should be (the tests run as root, so modes do not stop
    // reading).
    fs::create_dir_all(proj.join("unreadable/SKILL.md")).unwrap();
    // Not skills: a folder without SKILL.md, a file, a hidden folder.
    fs::create_dir_all(proj.join("notes")).unwrap();
    write(&proj.join("README.md"), "hello");
    write(
        &proj.join(".hidden/SKILL.md"),
        &skill_md(Some("hidden"), "Hidden.", ""),
    );

    let (cat, warnings) = Catalogue::load(&env.dirs());
    let got: Vec<(&str, &str, PathBuf)> = cat
        .skills
        .iter()
        .map(|s| (s.name.as_str(), s.description.as_str(), s.dir.clone()))
        .collect();
    assert_eq!(
        got,
        vec![
            ("aardvark", "Count ants.", proj.join("aardvark")),
            (
                "bg-jobs",
                "Start and stop background jobs.",
                proj.join("folder-x")
            ),
            (
                "greetings",
                "Greet somebody with a festive message.",
                proj.join("greetings")
            ),
            (
                "vulcan-salute",
                "Send a vulcan salute to somebody.",
                proj.join("vulcan-salute")
            ),
        ]
    );
    // In the system's own form, as the user is shown it.
    let f = |d: &str| native(&proj.join(d).join("SKILL.md").display().to_string());
    let long = "a".repeat(65);
    assert_eq!(
        warnings,
        vec![
            format!(
                "skill {} skipped: invalid name \"Upper\" (1–64 characters of a-z, 0-9 and -)",
                f("Upper")
            ),
            format!(
                "skill {} skipped: invalid name \"Bad_Name\" (1–64 characters of a-z, 0-9 and -)",
                f("bad")
            ),
            format!("skill {} skipped: no description", f("mute")),
            format!("skill {} skipped: no description", f("plain")),
            format!(
                "skill {} skipped: invalid name \"{long}\" (1–64 characters of a-z, 0-9 and -)",
                f("toolong")
            ),
            format!(
                "skill {} skipped: the front matter has no closing `---` line",
                f("unclosed")
            ),
            format!(
                "skill {} skipped: cannot read it: {}",
                f("unreadable"),
                // A folder: "Is a directory (os error 21)" on Linux.
                fs::read_to_string(proj.join("unreadable/SKILL.md")).unwrap_err()
            ),
            format!(
                "skill {} skipped: invalid front matter: did not find expected ',' or ']' at line 3 column 12, while parsing a flow sequence at line 2 column 7",
                f("yaml")
            ),
        ]
    );
}

#[mm_testkit::test]
fn front_matter_fields_that_are_not_strings_and_aliases_elsewhere() {
    let parse = |text: &str| {
        mm_core::skills::parse_skill(text, Path::new("/s/x"), "x").map_err(|e| e.to_string())
    };
    assert_eq!(
        parse("---\nname: [a, b]\ndescription: d\n---\n"),
        Err("`name` is not a string".to_string())
    );
    assert_eq!(
        parse("---\nname: n\ndescription: {a: 1}\n---\n"),
        Err("`description` is not a string".to_string())
    );
    assert_eq!(
        parse("---\n- name\n- description\n---\n"),
        Err("the front matter is not a mapping of keys to values".to_string())
    );
    // Anchors and aliases in keys mm does not read are skipped, never expanded: a "billion
    // laughs" block costs what its text costs.
    let mut bomb = String::from(
        "---\nname: laughs\ndescription: Fine.\nl0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n",
    );
    for i in 1..12 {
        let p = i - 1;
        bomb.push_str(&format!(
            "l{i}: &l{i} [*l{p}, *l{p}, *l{p}, *l{p}, *l{p}, *l{p}, *l{p}, *l{p}, *l{p}]\n"
        ));
    }
    bomb.push_str("---\n");
    let skill = parse(&bomb).unwrap();
    assert_eq!(
        (skill.name.as_str(), skill.description.as_str()),
        ("laughs", "Fine.")
    );
    // An alias as a field read: its target is a list, so not a string, read no further.
    assert_eq!(
        parse(
            &bomb
                .replace("description: Fine.\n", "")
                .replace("\n---\n", "\ndescription: *l11\n---\n")
        ),
        Err("`description` is not a string".to_string())
    );
}

#[mm_testkit::test]
fn first_folder_defining_a_name_wins() {
    let env = Env::new();
    let xdg = env.home.join("xdg");
    let extra = env.cwd.join("extra");
    let put = |dir: &Path, name: &str, desc: &str| {
        write(
            &dir.join(name).join("SKILL.md"),
            &skill_md(Some(name), desc, ""),
        )
    };
    put(
        &env.cwd.join(".claude/skills"),
        "greetings",
        "project claude",
    );
    put(&env.home.join(".agents/skills"), "greetings", "user agents");
    put(
        &env.cwd.join(".agents/skills"),
        "greetings",
        "project agents",
    );
    put(&env.home.join(".claude/skills"), "deploy", "user claude");
    put(&xdg.join("mm/skills"), "deploy", "user xdg");
    put(&extra, "deploy", "extra");
    put(&extra, "only-extra", "extra only");
    // Without XDG_CONFIG_HOME, ~/.config is read, not the xdg folder above.
    put(&env.home.join(".config/mm/skills"), "conf", "home config");

    let dirs = SkillDirs {
        xdg_config: Some(xdg),
        extra: vec!["extra".into()],
        ..env.dirs()
    };
    let (cat, warnings) = Catalogue::load(&dirs);
    assert_eq!(warnings, Vec::<String>::new());
    let got: Vec<(&str, &str)> = cat
        .skills
        .iter()
        .map(|s| (s.name.as_str(), s.description.as_str()))
        .collect();
    assert_eq!(
        got,
        vec![
            ("deploy", "user xdg"),
            ("greetings", "project agents"),
            ("only-extra", "extra only"),
        ]
    );

    let (cat, _) = Catalogue::load(&SkillDirs {
        extra: Vec::new(),
        ..env.dirs()
    });
    let names: Vec<&str> = cat.skills.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, vec!["conf", "deploy", "greetings"]);
    assert_eq!(cat.get("deploy").unwrap().description, "user claude");
}

#[mm_testkit::test]
fn no_folders_no_skills() {
    let env = Env::new();
    let (cat, warnings) = Catalogue::load(&env.dirs());
    assert_eq!(cat, Catalogue::default());
    assert_eq!(warnings, Vec::<String>::new());
    assert_eq!(cat.prompt_section(), "");
}

#[mm_testkit::test]
fn prompt_section_lists_each_skill() {
    let cat = catalogue(&[
        ("greetings", "Greet somebody with a festive message."),
        ("vulcan-salute", "Send a vulcan salute to somebody."),
    ]);
    assert_eq!(
        cat.prompt_section(),
        "Skills (procedures: load one with read_skill, then follow it):\n\
         - greetings: Greet somebody with a festive message.\n\
         - vulcan-salute: Send a vulcan salute to somebody.\n"
    );
}

const GREET_LINE: &str = "\n[skill requested: greetings — load it with read_skill(\"greetings\") and follow it; its parameters are the text after $greetings]";

#[mm_testkit::test]
fn notation_appends_one_line_per_distinct_skill() {
    let cat = catalogue(&[("greetings", "g"), ("vulcan-salute", "v")]);
    assert_eq!(
        resolve_notation("$greetings Bob", &cat),
        format!("$greetings Bob{GREET_LINE}")
    );
    let salute = "\n[skill requested: vulcan-salute — load it with read_skill(\"vulcan-salute\") and follow it; its parameters are the text after $vulcan-salute]";
    assert_eq!(
        resolve_notation(
            "please $vulcan-salute Spock, then $greetings Bob and $greetings, again $vulcan-salute",
            &cat
        ),
        format!(
            "please $vulcan-salute Spock, then $greetings Bob and $greetings, again $vulcan-salute{salute}{GREET_LINE}"
        )
    );
    // After a newline or a tab, too.
    assert_eq!(
        resolve_notation("hi\n\t$greetings.", &cat),
        format!("hi\n\t$greetings.{GREET_LINE}")
    );
}

#[mm_testkit::test]
fn notation_leaves_other_words_alone() {
    let cat = catalogue(&[("greetings", "g"), ("home", "h")]);
    for text in [
        "echo $HOME and $PATH",
        "x$greetings Bob",
        "$greetingsX",
        "$unknown thing",
        "$",
        "",
        "$greetings-more",
    ] {
        assert_eq!(resolve_notation(text, &cat), text, "{text:?}");
    }
}

#[mm_testkit::test]
fn slash_skill_becomes_notation_unless_a_command_shadows_it() {
    let cat = catalogue(&[("greetings", "g"), ("compact", "c")]);
    let commands = ["new", "compact"];
    assert_eq!(
        rewrite_slash("/greetings Bob", &cat, &commands),
        Some("$greetings Bob".into())
    );
    assert_eq!(
        rewrite_slash("/greetings", &cat, &commands),
        Some("$greetings".into())
    );
    assert_eq!(
        rewrite_slash("/greetings\nBob and Alice", &cat, &commands),
        Some("$greetings\nBob and Alice".into())
    );
    assert_eq!(rewrite_slash("/greetingsX", &cat, &commands), None);
    assert_eq!(rewrite_slash("/greetings/x", &cat, &commands), None);
    assert_eq!(rewrite_slash("/compact", &cat, &commands), None);
    assert_eq!(rewrite_slash("/unknown thing", &cat, &commands), None);
    assert_eq!(rewrite_slash("say /greetings", &cat, &commands), None);
    assert_eq!(rewrite_slash("$greetings", &cat, &commands), None);
}

#[mm_testkit::test]
fn shadowed_skills_are_not_advertised() {
    let cat = catalogue(&[("compact", "c"), ("greetings", "g"), ("new", "n")]);
    let commands = ["new", "compact", "help"];
    assert_eq!(
        shadowed(&cat, &commands),
        vec![
            "skill \"compact\" is not advertised: the /compact command shadows it; use $compact",
            "skill \"new\" is not advertised: the /new command shadows it; use $new",
        ]
    );
    let names: Vec<&str> = advertised(&cat, &commands)
        .iter()
        .map(|s| s.name.as_str())
        .collect();
    assert_eq!(names, vec!["greetings"]);
}

async fn call(cat: &Catalogue, cwd: &Path, args: serde_json::Value) -> mm_tools::tools::ToolOutput {
    let tool = ReadSkill {
        skills: std::sync::Arc::new(cat.clone()),
    };
    let cancel = CancellationToken::new();
    let frontend = Recorder::new();
    let handle = CallContext::new(
        "call_1",
        cwd,
        30_000,
        &cancel,
        mm_core::event::PermissionMode::Yolo,
        &frontend,
    );
    tool.run(args, &handle).await
}

#[mm_testkit::test]
async fn read_skill_returns_folder_files_and_body() {
    let env = Env::new();
    let dir = env.cwd.join(".mm/skills/greetings");
    write(
        &dir.join("SKILL.md"),
        "---\nname: greetings\ndescription: Greet somebody.\n---\n\nRun `scripts/greet.sh NAME`.\n",
    );
    write(&dir.join("scripts/greet.sh"), "echo hi $1");
    write(&dir.join("assets/card.txt"), "card");
    write(&dir.join("a.txt"), "a");
    let (cat, _) = Catalogue::load(&env.dirs());

    let out = call(&cat, &env.cwd, json!({"name": "greetings"})).await;
    assert_eq!(out.status(), ToolStatus::Completed);
    assert_eq!(
        out.text,
        format!(
            "skill directory: {}\nfiles:\n- SKILL.md\n- a.txt\n- assets/card.txt\n- scripts/greet.sh\n\nRun `scripts/greet.sh NAME`.\n",
            slashed(&dir)
        )
    );

    let tool = ReadSkill {
        skills: std::sync::Arc::new(cat),
    };
    let args = json!({"name": "greetings"});
    assert_eq!(tool.name(), "read_skill");
    assert_eq!(tool.title(&args), "read_skill: greetings");
    assert_eq!(tool.title(&json!({})), "read_skill");
    assert_eq!(tool.kind(&args), ToolKind::Read);
    assert!(!tool.gated(&tool.parse(args.clone()).unwrap()));
    assert_eq!(
        tool.parameters(),
        json!({
            "type": "object",
            "properties": {"name": {"type": "string", "description": "The skill's name, as listed in the system prompt."}},
            "required": ["name"],
        })
    );
}

#[mm_testkit::test]
async fn read_skill_bounds_the_file_list() {
    let env = Env::new();
    let dir = env.cwd.join(".mm/skills/data");
    write(
        &dir.join("SKILL.md"),
        &skill_md(None, "Lots of data.", "x\n"),
    );
    for i in 0..250 {
        write(&dir.join(format!("rows/{i:03}.csv")), "");
    }
    let (cat, _) = Catalogue::load(&env.dirs());
    let out = call(&cat, &env.cwd, json!({"name": "data"})).await;
    let lines: Vec<&str> = out.text.lines().collect();
    assert_eq!(lines[2], "- SKILL.md");
    assert_eq!(lines[3], "- rows/000.csv");
    assert_eq!(lines[201], "- rows/198.csv");
    assert_eq!(lines[202], "- … and 51 more");
    assert_eq!(lines[203..], ["", "x"]);
}

#[mm_testkit::test]
async fn read_skill_unknown_name_lists_the_catalogue() {
    let cat = catalogue(&[("greetings", "g"), ("vulcan-salute", "v")]);
    let out = call(&cat, Path::new("/"), json!({"name": "greeting"})).await;
    assert_eq!(out.status(), ToolStatus::Failed);
    assert_eq!(
        out.text,
        "[unknown skill \"greeting\"; the skills are: greetings, vulcan-salute]"
    );

    let out = call(&Catalogue::default(), Path::new("/"), json!({"name": "x"})).await;
    assert_eq!(out.text, "[unknown skill \"x\": there are no skills]");

    let out = call(&cat, Path::new("/"), json!({"skill": "greetings"})).await;
    assert_eq!(out.status(), ToolStatus::Failed);
    assert!(
        out.text.starts_with("[bad arguments for read_skill: "),
        "{}",
        out.text
    );
}

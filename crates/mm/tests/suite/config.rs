//! Configuration layers, resolution, trust and the `mm config` report (docs/config.md).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use mm_core::config::{
    Config, Flags, LoadOptions, Loaded, McpPermissions, Origin, Source, UntrustedProject, load,
    parse_override,
};
use mm_core::paths::shell_quote;
use mm_testkit::platform::{absolute, native, toml_string};
use pretty_assertions::assert_eq;
use tempfile::TempDir;

/// A fake home and a fake project, never the real environment.
struct World {
    home: TempDir,
    cwd: TempDir,
}

impl World {
    fn new() -> Self {
        World {
            home: tempfile::tempdir().unwrap(),
            cwd: tempfile::tempdir().unwrap(),
        }
    }

    fn home(&self) -> PathBuf {
        mm_core::paths::canonical(self.home.path()).unwrap()
    }

    fn cwd(&self) -> PathBuf {
        mm_core::paths::canonical(self.cwd.path()).unwrap()
    }

    fn user_file(&self) -> PathBuf {
        self.home().join(".config").join("mm").join("config.toml")
    }

    fn project_file(&self) -> PathBuf {
        self.cwd().join(".mm").join("config.toml")
    }

    fn write_user(&self, text: &str) -> PathBuf {
        write(&self.user_file(), text)
    }

    fn write_project(&self, text: &str) -> PathBuf {
        write(&self.project_file(), text)
    }

    fn trust_project(&self, extra: &str) -> PathBuf {
        let text = format!("trustedProjects = [{}]\n{extra}", toml_string(self.cwd()));
        self.write_user(&text)
    }

    fn opts(&self) -> LoadOptions {
        LoadOptions {
            cwd: self.cwd(),
            home: Some(self.home()),
            ..LoadOptions::default()
        }
    }

    fn load(&self) -> Loaded {
        load(&self.opts()).unwrap()
    }
}

fn write(path: &Path, text: &str) -> PathBuf {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    path.to_path_buf()
}

fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn overrides(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn error(opts: &LoadOptions) -> String {
    load(opts).unwrap_err().to_string()
}

#[mm_testkit::test]
fn no_files_gives_the_defaults() {
    let w = World::new();
    let loaded = w.load();
    assert_eq!(loaded.config, Config::default());
    assert_eq!(loaded.sources, BTreeMap::new());
    assert_eq!(loaded.untrusted_project, None);
    assert_eq!(loaded.user_file, Some(w.user_file()));
}

#[mm_testkit::test]
fn each_layer_overrides_the_previous_key_by_key() {
    let w = World::new();
    let user = w.trust_project(
        "maxSteps = 10\nsystemPrompt = \"user\"\n[model]\nname = \"u\"\nurl = \"http://u\"\ntemperature = 0.5\n[acp]\nname = \"u\"\n",
    );
    let project = w.write_project("maxSteps = 20\n[model]\nname = \"p\"\n[acp]\ntitle = \"P\"\n");
    let file = write(
        &w.cwd().join("extra.toml"),
        "maxSteps = 30\n[model]\nname = \"f\"\n",
    );
    let mut opts = w.opts();
    opts.config_file = Some(PathBuf::from("extra.toml"));
    opts.env = env(&[("MM_MODEL", "e"), ("MM_MODEL_URL", "http://e")]);
    opts.flags = Flags {
        url: Some("http://flag".into()),
        model: None,
        yolo: Some(false),
        sandbox: None,
    };
    opts.overrides = overrides(&[("maxSteps", "40")]);
    let loaded = load(&opts).unwrap();
    let c = &loaded.config;
    assert_eq!(c.max_steps, 40);
    assert_eq!(c.system_prompt, "user");
    assert_eq!(c.model.name, "e");
    assert_eq!(c.model.url, "http://flag");
    assert_eq!(c.model.temperature, Some(0.5));
    assert_eq!(c.acp.name, "u");
    assert_eq!(c.acp.title, "P");
    assert!(!c.yolo);
    assert_eq!(c.warnings, Vec::<String>::new());

    assert_eq!(loaded.source_of("maxSteps"), Source::Flag("-c".into()));
    assert_eq!(
        loaded.source_of("systemPrompt"),
        Source::UserFile(user.clone())
    );
    assert_eq!(
        loaded.source_of("model.temperature"),
        Source::UserFile(user)
    );
    assert_eq!(loaded.source_of("acp.title"), Source::ProjectFile(project));
    assert_eq!(
        loaded.source_of("model.name"),
        Source::Env("MM_MODEL".into())
    );
    assert_eq!(loaded.source_of("model.url"), Source::Flag("--url".into()));
    assert_eq!(loaded.source_of("yolo"), Source::Flag("--no-yolo".into()));
    assert_eq!(loaded.source_of("loop.maxRepeats"), Source::Default);

    // Without the later layers, each earlier one shows through in turn.
    opts.overrides.clear();
    assert_eq!(load(&opts).unwrap().config.max_steps, 30);
    opts.config_file = None;
    let loaded = load(&opts).unwrap();
    assert_eq!(loaded.config.max_steps, 20);
    assert_eq!(loaded.config.model.name, "e");
    opts.env.clear();
    assert_eq!(load(&opts).unwrap().config.model.name, "p");
    std::fs::remove_file(&file).unwrap();
    std::fs::remove_file(w.project_file()).unwrap();
    assert_eq!(load(&opts).unwrap().config.max_steps, 10);
}

#[mm_testkit::test]
fn xdg_config_home_replaces_home_config() {
    let w = World::new();
    w.write_user("maxSteps = 10\n");
    let xdg = tempfile::tempdir().unwrap();
    let xdg_file = write(&xdg.path().join("mm/config.toml"), "maxSteps = 11\n");
    let mut opts = w.opts();
    opts.xdg_config_home = Some(xdg.path().to_path_buf());
    let loaded = load(&opts).unwrap();
    assert_eq!(loaded.config.max_steps, 11);
    assert_eq!(loaded.source_of("maxSteps"), Source::UserFile(xdg_file));
}

#[mm_testkit::test]
fn environment_variables() {
    let w = World::new();
    let mut opts = w.opts();
    opts.env = env(&[
        ("MM_MODEL_URL", "http://127.0.0.1:8080/v1"),
        ("MM_MODEL", "qwen"),
        ("MM_API_KEY", "sk-1234567890abcd"),
        ("MM_YOLO", "0"),
        ("MM_CONTEXT_WINDOW", "32768"),
        ("HOME", "/elsewhere"),
    ]);
    let c = load(&opts).unwrap().config;
    assert_eq!(c.model.url, "http://127.0.0.1:8080/v1");
    assert_eq!(c.model.name, "qwen");
    assert_eq!(c.model.api_key, "sk-1234567890abcd");
    assert!(!c.yolo);
    assert_eq!(c.context_window, 32768);
}

#[mm_testkit::test]
fn mm_yolo_takes_1_0_true_false() {
    let w = World::new();
    w.write_user("yolo = false\n");
    for (raw, expected) in [
        ("1", true),
        ("true", true),
        ("TRUE", true),
        ("0", false),
        ("false", false),
    ] {
        let mut opts = w.opts();
        opts.env = env(&[("MM_YOLO", raw)]);
        assert_eq!(load(&opts).unwrap().config.yolo, expected, "MM_YOLO={raw}");
    }
    let mut opts = w.opts();
    opts.env = env(&[("MM_YOLO", "")]);
    assert!(!load(&opts).unwrap().config.yolo, "empty MM_YOLO is unset");
}

#[mm_testkit::test]
fn invalid_mm_yolo_is_an_error_naming_it() {
    let w = World::new();
    let mut opts = w.opts();
    opts.env = env(&[("MM_YOLO", "yes")]);
    assert_eq!(
        error(&opts),
        "MM_YOLO must be 1, 0, true or false, got \"yes\""
    );
    opts.env = env(&[("MM_CONTEXT_WINDOW", "big")]);
    assert_eq!(
        error(&opts),
        "MM_CONTEXT_WINDOW must be a non-negative integer, got \"big\""
    );
}

#[mm_testkit::test]
fn dash_c_values_are_toml_else_text() {
    let w = World::new();
    w.write_user("yolo = true\n[skills]\ndirs = [\"x\"]\n");
    let mut opts = w.opts();
    opts.overrides = overrides(&[
        ("yolo", "false"),
        ("skills.dirs", "[\"a\",\"b\"]"),
        ("context.keepLastTurns", "4"),
        ("context.threshold", "0.5"),
        ("model.name", "qwen2.5-coder:7b"),
        ("model.apiKey", "12345"),
        ("acp.title", "My agent"),
        ("systemPrompt", ""),
    ]);
    let loaded = load(&opts).unwrap();
    let c = &loaded.config;
    assert!(!c.yolo);
    assert_eq!(c.skills.dirs, vec![PathBuf::from("a"), PathBuf::from("b")]);
    assert_eq!(c.context.keep_last_turns, 4);
    assert_eq!(c.context.threshold, 0.5);
    assert_eq!(c.model.name, "qwen2.5-coder:7b");
    assert_eq!(c.model.api_key, "12345");
    assert_eq!(c.acp.title, "My agent");
    assert_eq!(c.system_prompt, "");
    assert_eq!(loaded.source_of("skills.dirs"), Source::Flag("-c".into()));

    opts.overrides = overrides(&[("maxSteps", "many")]);
    assert_eq!(
        error(&opts),
        "-c: maxSteps must be an integer, got a string"
    );
    opts.overrides = overrides(&[("model..url", "x")]);
    assert_eq!(error(&opts), "-c model..url=x: not a valid key");
}

#[mm_testkit::test]
fn dash_c_dotted_keys_reach_named_tables() {
    let w = World::new();
    let mut opts = w.opts();
    opts.overrides = overrides(&[
        ("mcp.servers.\"my.fs\".command", "npx"),
        ("mcp.servers.\"my.fs\".permissions", "ask"),
        ("tools.bash.timeout", "5"),
        ("agents.reviewer.args", "[\"-acp\"]"),
        ("agents.reviewer.command", "mm"),
    ]);
    let loaded = load(&opts).unwrap();
    let c = &loaded.config;
    assert_eq!(c.tools.bash_timeout, Duration::from_secs(5));
    let fs = &c.mcp_servers["my.fs"];
    assert_eq!(fs.command, "npx");
    assert_eq!(fs.permissions, McpPermissions::Ask);
    assert_eq!(c.agents["reviewer"].args, vec!["-acp".to_string()]);
    assert_eq!(
        loaded.source_of("mcp.servers.\"my.fs\".command"),
        Source::Flag("-c".into())
    );
}

#[mm_testkit::test]
fn parse_override_splits_at_the_first_equals() {
    assert_eq!(
        parse_override("model.url=http://h/v1?a=b").unwrap(),
        ("model.url".to_string(), "http://h/v1?a=b".to_string())
    );
    assert_eq!(
        parse_override("yolo").unwrap_err().to_string(),
        "-c yolo: expected key=value"
    );
}

#[mm_testkit::test]
fn hooks_are_concatenated_user_first_then_project() {
    let secs = Duration::from_secs;
    let w = World::new();
    w.trust_project(
        "[[hooks.preToolCall]]\ncommand = \"user.sh\"\nmatch = \"bash\"\n[[hooks.turnEnd]]\ncommand = \"end.sh\"\n",
    );
    w.write_project(
        "[[hooks.preToolCall]]\ncommand = \"p1.sh\"\ntimeout = 3\nfailClosed = true\n[[hooks.preToolCall]]\ncommand = \"p2.sh\"\n",
    );
    let mut opts = w.opts();
    opts.overrides = overrides(&[("hooks.preToolCall", "[{command = \"cli.sh\"}]")]);
    let loaded = load(&opts).unwrap();
    let hooks = &loaded.config.hooks;
    let got: Vec<(&str, Option<&str>, Duration, bool, Origin)> = hooks
        .pre_tool_call
        .iter()
        .map(|h| {
            (
                h.command.as_str(),
                h.matcher.as_deref(),
                h.timeout,
                h.fail_closed,
                h.origin,
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("user.sh", Some("bash"), secs(10), false, Origin::User),
            ("p1.sh", None, secs(3), true, Origin::Project),
            ("p2.sh", None, secs(10), false, Origin::Project),
            ("cli.sh", None, secs(10), false, Origin::CommandLine),
        ]
    );
    assert_eq!(hooks.turn_end.len(), 1);
    assert_eq!(hooks.turn_end[0].command, "end.sh");
    assert_eq!(
        loaded.source_of("hooks.preToolCall[1]"),
        Source::ProjectFile(w.project_file())
    );
}

#[mm_testkit::test]
fn unknown_keys_are_warnings_naming_key_and_file() {
    let w = World::new();
    let user = w.write_user("[modle]\nurl = \"x\"\n[model]\nnmae = \"y\"\n");
    let project = w.write_project("[[hooks.preToolCall]]\ncommand = \"a\"\nmatcher = \"b\"\n");
    let mut opts = w.opts();
    opts.overrides = overrides(&[("maxStep", "3")]);
    // The project is untrusted, but its typo is still worth a warning.
    let c = load(&opts).unwrap().config;
    assert_eq!(
        c.warnings,
        vec![
            format!("unknown key \"model.nmae\" in {}", user.display()),
            format!("unknown key \"modle.url\" in {}", user.display()),
            format!(
                "unknown key \"hooks.preToolCall[0].matcher\" in {}",
                project.display()
            ),
            "unknown key \"maxStep\" in -c".to_string(),
            format!(
                "project {} is not trusted: ignored its 1 hook(s); trust it with: mm trust {}",
                w.cwd().display(),
                w.cwd().display()
            ),
        ]
    );
}

#[mm_testkit::test]
fn wrong_types_are_errors_naming_key_file_and_type() {
    let w = World::new();
    let project = w.write_project("contextWindow = \"ten\"\n");
    assert_eq!(
        error(&w.opts()),
        format!(
            "{}: contextWindow must be an integer, got a string",
            project.display()
        )
    );
    let cases = [
        ("yolo = 1\n", "yolo must be a boolean, got an integer"),
        (
            "[model]\nurl = 5\n",
            "model.url must be a string, got an integer",
        ),
        ("model = \"x\"\n", "model must be a table, got a string"),
        (
            "[model]\ntemperature = \"hot\"\n",
            "model.temperature must be a number, got a string",
        ),
        (
            "[skills]\ndirs = \"a\"\n",
            "skills.dirs must be an array of strings, got a string",
        ),
        (
            "[skills]\ndirs = [\"a\", 2]\n",
            "skills.dirs[1] must be a string, got an integer",
        ),
        (
            "[tools.bash]\ntimeout = 1.5\n",
            "tools.bash.timeout must be an integer, got a float",
        ),
        (
            "[sessions]\nenabled = \"yes\"\n",
            "sessions.enabled must be a boolean, got a string",
        ),
        (
            "[sessions]\nkeep = -1\n",
            "sessions.keep must be a non-negative integer, got -1",
        ),
        (
            "[sessions]\nkeep = \"30d\"\n",
            "sessions.keep must be an integer, got a string",
        ),
        (
            "hooks.turnEnd = \"x\"\n",
            "hooks.turnEnd must be an array of tables, got a string",
        ),
    ];
    let user = w.user_file();
    std::fs::remove_file(&project).unwrap();
    for (text, message) in cases {
        w.write_user(text);
        assert_eq!(
            error(&w.opts()),
            format!("{}: {message}", user.display()),
            "{text}"
        );
    }
}

#[mm_testkit::test]
fn invalid_values_are_errors() {
    let w = World::new();
    let user = w.user_file();
    let cases = [
        (
            "[context]\nthreshold = 1.5\n",
            "context.threshold must be in (0, 1], got 1.5",
        ),
        (
            "[context]\nthreshold = 0\n",
            "context.threshold must be in (0, 1], got 0",
        ),
        (
            "[model]\ntextToolCalls = \"on\"\n",
            "model.textToolCalls must be \"auto\" or \"off\", got \"on\"",
        ),
        ("maxSteps = -1\n", "maxSteps must be at least 1, got -1"),
        (
            "contextWindow = -1\n",
            "contextWindow must be a non-negative integer, got -1",
        ),
        (
            "[[hooks.preToolCall]]\ncommand = \"x\"\nmatch = \"bash(\"\n",
            "hooks.preToolCall[0].match is not a valid regular expression: unclosed group",
        ),
        (
            "[[hooks.preToolCall]]\nmatch = \"bash\"\n",
            "hooks.preToolCall[0] has no command",
        ),
        (
            "[mcp.servers.fs]\ncommand = \"npx\"\ntimeout = 0\n",
            "mcp.servers.fs.timeout must be at least 1, got 0",
        ),
        (
            "[mcp.servers.fs]\ncommand = \"npx\"\npermissions = \"deny\"\n",
            "mcp.servers.fs.permissions must be \"allow\" or \"ask\", got \"deny\"",
        ),
        (
            "trustedProjects = [\"rel/dir\"]\n",
            "trustedProjects[0] must be an absolute path, got \"rel/dir\"",
        ),
        (
            "[tools]\nnetworkExpose = [3000, 70000]\n",
            "tools.networkExpose[1] must be a port from 1 to 65535, got 70000",
        ),
        (
            "[agents.codex]\ncommand = \"codex\"\nnetworkAllow = [\"api.openai.com:x\"]\n",
            "agents.codex.networkAllow[0] \"api.openai.com:x\" has a port that is not a number from 1 to 65535 (\"x\")",
        ),
    ];
    for (text, message) in cases {
        w.write_user(text);
        assert_eq!(
            error(&w.opts()),
            format!("{}: {message}", user.display()),
            "{text}"
        );
    }
}

#[mm_testkit::test]
fn unparsable_and_unreadable_files_are_errors() {
    let w = World::new();
    let user = w.write_user("yolo = \n");
    let message = error(&w.opts());
    assert!(
        message.starts_with(&format!(
            "{}: TOML parse error at line 1, column 8",
            user.display()
        )),
        "{message}"
    );
    std::fs::remove_file(&user).unwrap();
    let mut opts = w.opts();
    opts.config_file = Some(PathBuf::from("/nonexistent/mm.toml"));
    // As mm joins it to the working folder: on its drive on Windows.
    #[allow(clippy::join_absolute_paths)]
    let file = w.cwd().join("/nonexistent/mm.toml");
    assert_eq!(
        error(&opts),
        format!(
            "cannot read {}: {}",
            file.display(),
            mm_testkit::platform::open_error(&file)
        )
    );
}

const PROJECT_COMMANDS: &str = r#"
[[hooks.preToolCall]]
command = "guard.sh"
[[hooks.sessionStart]]
command = "start.sh"
[mcp.servers.files]
command = "npx"
[lsp.servers.python]
command = "pylsp"
extensions = [".py"]
[agents.reviewer]
command = "mm"
args = ["-acp"]
"#;

#[mm_testkit::test]
fn an_untrusted_project_runs_none_of_its_commands() {
    let w = World::new();
    w.write_user("[mcp.servers.mine]\ncommand = \"mine\"\n");
    w.write_project(&format!(
        "maxSteps = 7\ntrustedProjects = [{}]\n{PROJECT_COMMANDS}",
        toml_string(w.cwd())
    ));
    let loaded = w.load();
    let c = &loaded.config;
    assert_eq!(
        c.max_steps, 50,
        "an untrusted project sets only harmless keys"
    );
    assert_eq!(c.hooks, Default::default());
    assert_eq!(c.mcp_servers.keys().collect::<Vec<_>>(), vec!["mine"]);
    assert!(c.lsp_servers.is_empty());
    assert!(c.agents.is_empty());
    assert_eq!(c.trusted_projects, Vec::<PathBuf>::new());
    assert_eq!(
        c.warnings,
        vec![
            format!(
                "trustedProjects is ignored in project files ({}): only the user's config can trust a project",
                w.project_file().display()
            ),
            format!(
                "project {} is not trusted: ignored its 2 hook(s), 1 MCP server(s) (files), 1 language server(s), 1 agent(s); trust it with: mm trust {}",
                w.cwd().display(),
                w.cwd().display()
            ),
            format!(
                "project {} is not trusted: ignored its keys maxSteps; trust it with: mm trust {}",
                w.cwd().display(),
                w.cwd().display()
            ),
        ]
    );
    assert_eq!(
        loaded.untrusted_project,
        Some(UntrustedProject {
            path: w.cwd(),
            hooks: 2,
            mcp_servers: 1,
            mcp_names: vec!["files".to_string()],
            lsp_servers: 1,
            agents: 1,
            commands: vec![
                "hook preToolCall: guard.sh".to_string(),
                "hook sessionStart: start.sh".to_string(),
                "MCP server files: npx".to_string(),
                "language server python: pylsp".to_string(),
                "agent reviewer: mm -acp".to_string(),
            ],
            distrusted: false,
        })
    );
}

#[mm_testkit::test]
fn a_distrusted_project_is_not_offered_again_and_says_how_to_trust_it() {
    let w = World::new();
    w.write_user(&format!(
        "distrustedProjects = [{}]\n",
        toml_string(w.cwd())
    ));
    w.write_project(
        "distrustedProjects = [\"/elsewhere\"]\n[mcp.servers.files]\ncommand = \"my server\"\nargs = [\"--root\", \"a b\"]\n",
    );
    let loaded = w.load();
    let untrusted = loaded.untrusted_project.unwrap();
    assert!(untrusted.distrusted);
    assert_eq!(
        untrusted.commands,
        vec![format!(
            "MCP server files: {} --root {}",
            shell_quote("my server"),
            shell_quote("a b")
        )]
    );
    assert_eq!(loaded.config.distrusted_projects, vec![w.cwd()]);
    assert_eq!(
        loaded.config.warnings,
        vec![
            format!(
                "distrustedProjects is ignored in project files ({}): only the user's config says which projects not to trust",
                w.project_file().display()
            ),
            format!(
                "project {} is not trusted (distrustedProjects in {}): ignored its 1 MCP server(s) (files); trust it with: mm trust {}",
                w.cwd().display(),
                native("~/.config/mm/config.toml"),
                w.cwd().display()
            ),
        ]
    );
}

#[mm_testkit::test]
fn mcp_keys_and_the_client_servers_switch() {
    let w = World::new();
    w.write_user(
        "[acp]\nclientMcpServers = true\n[mcp.servers.fs]\ncommand = \"fs-mcp\"\ntimeout = 30\n",
    );
    let c = w.load().config;
    assert!(c.acp.client_mcp_servers);
    assert_eq!(
        c.mcp_servers["fs"].timeout,
        std::time::Duration::from_secs(30)
    );
    assert!(
        !World::new().load().config.acp.client_mcp_servers,
        "off by default"
    );
}

#[mm_testkit::test]
fn a_trusted_project_runs_its_commands() {
    let w = World::new();
    w.trust_project("");
    w.write_project(PROJECT_COMMANDS);
    let loaded = w.load();
    let c = &loaded.config;
    assert_eq!(c.warnings, Vec::<String>::new());
    assert_eq!(loaded.untrusted_project, None);
    assert_eq!(c.trusted_projects, vec![w.cwd()]);
    assert_eq!(c.hooks.pre_tool_call[0].command, "guard.sh");
    assert_eq!(c.hooks.pre_tool_call[0].origin, Origin::Project);
    assert_eq!(c.hooks.session_start[0].command, "start.sh");
    assert_eq!(c.mcp_servers["files"].permissions, McpPermissions::Allow);
    assert_eq!(c.lsp_servers["python"].extensions, vec![".py".to_string()]);
    assert_eq!(c.agents["reviewer"].args, vec!["-acp".to_string()]);
}

#[cfg(unix)]
#[mm_testkit::test]
fn trust_matches_the_canonical_cwd_and_expands_tilde() {
    let w = World::new();
    let link = w.home().join("link");
    std::os::unix::fs::symlink(w.cwd(), &link).unwrap();
    w.write_user("trustedProjects = [\"~/link\"]\n");
    w.write_project(PROJECT_COMMANDS);
    let loaded = w.load();
    assert_eq!(loaded.untrusted_project, None);
    assert_eq!(loaded.config.trusted_projects, vec![link]);
    assert_eq!(loaded.config.hooks.pre_tool_call.len(), 1);
}

#[mm_testkit::test]
fn report_lists_every_key_with_its_source_and_masks_keys() {
    let w = World::new();
    let nowhere = toml_string(absolute("/nowhere"));
    let user = w.write_user(&format!(
        r#"
trustedProjects = [{nowhere}]
[model]
apiKey = "sk-secret-abcdefgh-wxyz"
temperature = 0.2
[[hooks.preToolCall]]
command = "guard.sh"
match = "bash|write_file"
[mcp.servers.gh]
command = "gh-mcp"
env = {{ GITHUB_TOKEN = "ghp_0123456789abcd", REGION = "eu" }}
permissions = "ask"
"#
    ));
    let mut opts = w.opts();
    opts.env = env(&[("MM_MODEL", "qwen")]);
    opts.flags.url = Some("http://127.0.0.1:8080/v1".into());
    opts.overrides = overrides(&[("context.keepLastTurns", "4")]);
    let report = load(&opts).unwrap().report();
    let u = user.display();
    let trusted = format!("{:<42}  # {u}", format!("trustedProjects = [{nowhere}]"));
    let expected = format!(
        r#"yolo = true                                 # default
contextWindow = 0                           # default
maxSteps = 50                               # default
systemPrompt = ""                           # default
{trusted}
distrustedProjects = []                     # default
model.url = "http://127.0.0.1:8080/v1"      # --url
model.name = "qwen"                         # env MM_MODEL
model.apiKey = ****wxyz                     # {u}
model.temperature = 0.2                     # {u}
model.maxTokens = auto (window/4, ≥ 2048)   # default
model.requestTimeout = 600                  # default
model.textToolCalls = "auto"                # default
acp.name = "bob"                            # default
acp.title = "Bob (bash-first agent)"        # default
acp.clientMcpServers = false                # default — true: start the stdio MCP servers an editor passes in session/new like mcp.servers; false: ignore them
acp.maxLineBytes = 8388608                  # default
sessions.enabled = true                     # default
sessions.dir = ".mm/sessions"               # default
sessions.keep = 100                         # default
context.threshold = 0.8                     # default
context.keepLastTurns = 4                   # -c
loop.maxRepeats = 3                         # default
loop.detectRepetition = true                # default
loop.repeatSpan = 200                       # default
loop.repeatCount = 10                       # default
tools.maxOutput = 30000                     # default
tools.bash.timeout = 120                    # default
tools.sandbox = "workspace-write"           # default
tools.sandboxWritable = []                  # default
tools.sandboxRequired = false               # default
tools.sandboxHidden = []                    # default
tools.sandboxReadable = []                  # default
tools.task.maxSteps = 20                    # default
tools.network = "allowlist"                 # default
tools.networkAllow = ["crates.io", "*.crates.io", "static.rust-lang.org", "registry.npmjs.org", "registry.yarnpkg.com", "pypi.org", "files.pythonhosted.org", "proxy.golang.org", "sum.golang.org", "rubygems.org", "repo.maven.apache.org", "repo1.maven.org", "plugins.gradle.org", "api.nuget.org", "hackage.haskell.org", "github.com", "*.github.com", "*.githubusercontent.com", "gitlab.com", "codeberg.org", "bitbucket.org", "deb.debian.org", "archive.ubuntu.com", "security.ubuntu.com"]  # default
tools.networkExpose = []                    # default
skills.dirs = []                            # default
hooks.preToolCall[0] = {{ command = "guard.sh", match = "bash|write_file", timeout = 10, failClosed = false }}  # {u}
agents = {{}}                                 # default
mcp.servers.gh.command = "gh-mcp"           # {u}
mcp.servers.gh.args = []                    # default
mcp.servers.gh.env.GITHUB_TOKEN = ****abcd  # {u}
mcp.servers.gh.env.REGION = "eu"            # {u}
mcp.servers.gh.permissions = "ask"          # {u}
mcp.servers.gh.timeout = 600                # default
mcp.servers.gh.sandbox = true               # default
mcp.servers.gh.sandboxWritable = []         # default
lsp.servers = {{}}                            # default
"#
    );
    assert_eq!(report, expected);
}

#[mm_testkit::test]
fn short_api_keys_are_only_said_to_be_set() {
    let w = World::new();
    let mut opts = w.opts();
    opts.env = env(&[("MM_API_KEY", "abc123")]);
    let report = load(&opts).unwrap().report();
    let line = report
        .lines()
        .find(|l| l.starts_with("model.apiKey"))
        .unwrap();
    assert_eq!(
        line.split_whitespace().collect::<Vec<_>>(),
        ["model.apiKey", "=", "(set)", "#", "env", "MM_API_KEY"]
    );
    assert!(!report.contains("abc123"));
}

#[mm_testkit::test]
fn report_ends_with_the_warnings() {
    let w = World::new();
    let user = w.write_user("colour = \"blue\"\n");
    let report = w.load().report();
    assert!(
        report.ends_with(&format!(
            "# warning: unknown key \"colour\" in {}\n",
            user.display()
        )),
        "{report}"
    );
}

#[mm_testkit::test]
fn durations_are_written_in_seconds_whole_or_decimal() {
    use mm_core::config::seconds;
    assert_eq!(seconds(Duration::from_secs(120)), "120");
    assert_eq!(seconds(Duration::from_secs(1)), "1");
    assert_eq!(seconds(Duration::from_millis(250)), "0.25");
    assert_eq!(seconds(Duration::from_millis(1500)), "1.5");
    assert_eq!(seconds(Duration::from_secs(u64::MAX)), u64::MAX.to_string());
}

#[mm_testkit::test]
fn tools_bash_path_is_read_with_the_home_expanded_and_shown_only_when_set() {
    let w = World::new();
    assert_eq!(w.load().config.tools.bash_path, None);
    assert!(!w.load().report().contains("tools.bash.path"));
    w.write_user("[tools.bash]\npath = \"~/git/bin/bash.exe\"\ntimeout = 5\n");
    let loaded = w.load();
    assert_eq!(
        loaded.config.tools.bash_path,
        Some(w.home().join("git/bin/bash.exe"))
    );
    assert!(loaded.report().contains(&format!(
        "tools.bash.path = {}",
        toml_string(w.home().join("git/bin/bash.exe"))
    )));
}

// ------------------------------------------------------------------ the sandbox keys

#[mm_testkit::test]
fn the_sandbox_is_set_by_the_user_the_environment_and_flags() {
    use mm_core::config::SandboxMode as Mode;
    let w = World::new();
    // Fenced by default (docs/sandbox.md).
    assert_eq!(w.load().config.tools.sandbox, Mode::WorkspaceWrite);
    let user = w.write_user(
        &format!(
            "[tools]\nsandbox = \"read-only\"\nsandboxWritable = [\"~/.cargo\", {}]\nsandboxRequired = true\n",
            toml_string(absolute("/opt/cache"))
        ),
    );
    let loaded = w.load();
    let t = &loaded.config.tools;
    assert_eq!(t.sandbox, Mode::ReadOnly);
    assert_eq!(
        t.sandbox_writable,
        vec![w.home().join(".cargo"), absolute("/opt/cache")]
    );
    assert!(t.sandbox_required);
    assert_eq!(
        loaded.source_of("tools.sandbox"),
        Source::UserFile(user.clone())
    );

    let mut opts = w.opts();
    opts.env = env(&[("MM_SANDBOX", "workspace-write")]);
    let loaded = load(&opts).unwrap();
    assert_eq!(loaded.config.tools.sandbox, Mode::WorkspaceWrite);
    assert_eq!(
        loaded.source_of("tools.sandbox"),
        Source::Env("MM_SANDBOX".into())
    );

    opts.flags.sandbox = Some("off".into());
    let loaded = load(&opts).unwrap();
    assert_eq!(loaded.config.tools.sandbox, Mode::Off);
    assert_eq!(
        loaded.source_of("tools.sandbox"),
        Source::Flag("--sandbox".into())
    );

    opts.overrides = overrides(&[("tools.sandbox", "workspace-write")]);
    let loaded = load(&opts).unwrap();
    assert_eq!(loaded.config.tools.sandbox, Mode::WorkspaceWrite);
    let report = loaded.report();
    let line = report
        .lines()
        .find(|l| l.starts_with("tools.sandbox "))
        .unwrap();
    assert_eq!(
        line.split_whitespace().collect::<Vec<_>>(),
        ["tools.sandbox", "=", "\"workspace-write\"", "#", "-c"]
    );
}

#[mm_testkit::test]
fn a_project_file_cannot_set_the_sandbox() {
    use mm_core::config::SandboxMode as Mode;
    let w = World::new();
    w.write_user("[tools]\nsandbox = \"workspace-write\"\n");
    w.write_project(
        "contextWindow = 7\n[tools]\nsandbox = \"off\"\nsandboxWritable = [\"/\"]\nsandboxRequired = false\n",
    );
    let c = w.load().config;
    assert_eq!(c.context_window, 7);
    assert_eq!(c.tools.sandbox, Mode::WorkspaceWrite);
    assert_eq!(c.tools.sandbox_writable, Vec::<PathBuf>::new());
    assert_eq!(
        c.warnings,
        vec![format!(
            "tools.sandbox, tools.sandboxWritable, tools.sandboxRequired are ignored in project files ({}): only the user's config, --config, the environment and flags set the sandbox",
            w.project_file().display()
        )]
    );
    // Even when the project is trusted: trust runs its commands, it does not lower the fence.
    let w = World::new();
    w.trust_project("[tools]\nsandbox = \"read-only\"\n");
    w.write_project("[tools]\nsandbox = \"off\"\n");
    let c = w.load().config;
    assert_eq!(c.tools.sandbox, Mode::ReadOnly);
    assert_eq!(
        c.warnings,
        vec![format!(
            "tools.sandbox is ignored in project files ({}): only the user's config, --config, the environment and flags set the sandbox",
            w.project_file().display()
        )]
    );
}

#[mm_testkit::test]
fn an_agents_sandbox_writable_is_the_users_own() {
    let w = World::new();
    // The user's entry: `~/` expanded, shown by `mm config`.
    w.trust_project("[agents.codex]\ncommand = \"codex-acp\"\nsandboxWritable = [\"~/.codex\"]\n");
    // A trusted project's agent runs, but cannot open its fence, nor widen the user's agent.
    w.write_project(
        "[agents.proj]\ncommand = \"mm\"\nsandboxWritable = [\"/\"]\n[agents.codex]\nsandboxWritable = [\"/etc\"]\n",
    );
    let loaded = w.load();
    let c = &loaded.config;
    assert_eq!(
        c.agents["codex"].sandbox.writable,
        vec![w.home().join(".codex")]
    );
    assert_eq!(c.agents["proj"].command, "mm");
    assert_eq!(c.agents["proj"].sandbox.writable, Vec::<PathBuf>::new());
    assert_eq!(
        c.warnings,
        vec![format!(
            "agents.codex.sandboxWritable, agents.proj.sandboxWritable are ignored in project files ({}): only the user's config, --config, the environment and flags set the sandbox",
            w.project_file().display()
        )]
    );
    let report = loaded.report();
    let line = report
        .lines()
        .find(|l| l.starts_with("agents.codex.sandboxWritable "))
        .unwrap();
    assert_eq!(
        line.split_whitespace().collect::<Vec<_>>(),
        [
            "agents.codex.sandboxWritable",
            "=",
            &format!("[{:?}]", w.home().join(".codex").display().to_string()),
            "#",
            &w.user_file().display().to_string()
        ]
    );
    let user =
        w.write_user("[agents.codex]\ncommand = \"codex-acp\"\nsandboxWritable = [\"state\"]\n");
    assert_eq!(
        load(&w.opts()).unwrap_err().to_string(),
        format!(
            "{}: agents.codex.sandboxWritable[0] must be an absolute path (or ~/…), got \"state\"",
            user.display()
        )
    );
}

#[mm_testkit::test]
fn the_sandbox_keys_of_servers_and_hooks_are_the_users_own() {
    let w = World::new();
    // An absolute folder on every system (`/var/log/guard` has no drive on Windows).
    let guard = w.home().join("log");
    let guard_toml = toml_string(&guard);
    let user = w.trust_project(&format!(
        "[mcp.servers.files]\ncommand = \"files-mcp\"\nsandbox = false\n\
         [lsp.servers.rust]\ncommand = \"rust-analyzer\"\nsandboxWritable = [\"~/.cargo\"]\n\
         [[hooks.preToolCall]]\ncommand = \"guard.sh\"\nsandbox = false\nsandboxWritable = [{guard_toml}]\n",
    ));
    // A trusted project's entries run, fenced: it can neither take them out of the fence nor
    // open it for them; and one that sets part of the user's entry voids what the user's keys
    // opened for it.
    let project = w.write_project(
        "[mcp.servers.proj]\ncommand = \"x\"\nsandbox = false\n\
         [lsp.servers.rust]\nargs = [\"--evil\"]\n\
         [[hooks.postToolCall]]\ncommand = \"y\"\nsandboxWritable = [\"/\"]\n",
    );
    let loaded = w.load();
    let c = &loaded.config;
    let outside = mm_core::config::EntrySandbox {
        outside: true,
        ..Default::default()
    };
    assert_eq!(c.mcp_servers["files"].sandbox, outside);
    assert_eq!(c.mcp_servers["proj"].sandbox, Default::default());
    assert_eq!(c.lsp_servers["rust"].args, ["--evil"]);
    assert_eq!(c.lsp_servers["rust"].sandbox, Default::default());
    assert_eq!(
        c.hooks.pre_tool_call[0].sandbox,
        mm_core::config::EntrySandbox {
            outside: true,
            writable: vec![guard.clone()],
            network_allow: Vec::new(),
        }
    );
    assert_eq!(c.hooks.post_tool_call[0].sandbox, Default::default());
    let p = project.display();
    assert_eq!(
        c.warnings,
        [
            format!(
                "hooks.postToolCall[0].sandboxWritable, mcp.servers.proj.sandbox are ignored in project files ({p}): only the user's config, --config, the environment and flags set the sandbox"
            ),
            format!(
                "lsp.servers.rust: its sandbox, sandboxWritable and networkAllow are ignored, as the project's file ({p}) sets part of the entry: only the user's own entries leave or open the fence"
            ),
        ]
    );
    let report = loaded.report();
    let u = user.display();
    for line in [
        format!("mcp.servers.files.sandbox = false  # {u}"),
        "mcp.servers.proj.sandboxWritable = []  # default".to_string(),
        format!(
            "hooks.preToolCall[0] = {{ command = \"guard.sh\", timeout = 10, failClosed = false, sandbox = false, sandboxWritable = [{guard_toml}] }}  # {u}"
        ),
    ] {
        assert!(
            report
                .lines()
                .any(|l| l.split_whitespace().eq(line.split_whitespace())),
            "{line}\n{report}"
        );
    }
    w.write_user("[mcp.servers.files]\ncommand = \"files-mcp\"\nsandbox = \"no\"\n");
    assert_eq!(
        load(&w.opts()).unwrap_err().to_string(),
        format!(
            "{}: mcp.servers.files.sandbox must be a boolean, got a string",
            user.display()
        )
    );
}

#[mm_testkit::test]
fn bad_sandbox_values_are_errors() {
    let w = World::new();
    let user = w.write_user("[tools]\nsandbox = \"on\"\n");
    assert_eq!(
        load(&w.opts()).unwrap_err().to_string(),
        format!(
            "{}: tools.sandbox must be \"off\", \"workspace-write\" or \"read-only\", got \"on\"",
            user.display()
        )
    );
    w.write_user("[tools]\nsandboxWritable = [\"cache\"]\n");
    assert_eq!(
        load(&w.opts()).unwrap_err().to_string(),
        format!(
            "{}: tools.sandboxWritable[0] must be an absolute path (or ~/…), got \"cache\"",
            user.display()
        )
    );
    w.write_user("[tools]\nsandboxRequired = \"yes\"\n");
    assert_eq!(
        load(&w.opts()).unwrap_err().to_string(),
        format!(
            "{}: tools.sandboxRequired must be a boolean, got a string",
            user.display()
        )
    );
}

#[mm_testkit::test]
fn the_table_of_harmless_keys_in_the_docs_is_the_allow_list() {
    let docs = include_str!("../../../../docs/config.md");
    let table = docs
        .split("| key | why it is harmless |\n|---|---|\n")
        .nth(1)
        .and_then(|rest| rest.split("\n\n").next())
        .expect("docs/config.md has the table of harmless keys");
    let mut listed: Vec<String> = Vec::new();
    for row in table.lines() {
        let first = row.split('|').nth(1).unwrap();
        listed.extend(first.split('`').skip(1).step_by(2).map(str::to_string));
    }
    let mut expected: Vec<String> = mm_core::config::HARMLESS_KEYS
        .iter()
        .map(|k| k.to_string())
        .collect();
    expected.push("yolo = false".to_string());
    listed.sort();
    expected.sort();
    assert_eq!(listed, expected);
}

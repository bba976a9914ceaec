//! What a project's own file may set (docs/config.md, "Trust"): the model can write the
//! project's files and a cloned repository is someone else's, so before merging, the project's
//! layer loses what only the user decides — the sandbox, the model server and its key, `yolo =
//! true` — and, unless the project is trusted, its commands and every key not on
//! [`HARMLESS_KEYS`]. Each loss is one line of the banner.

use std::path::{Path, PathBuf};

use toml::{Table, Value};

use super::raw::{self, Source, join};

/// The keys an untrusted project's file may set: the model's name, sampling, the context window
/// and compaction — keys that change neither where data goes, nor what runs, nor what asks
/// (the table in docs/config.md says why for each). `yolo = false` is allowed too (it only
/// makes mm ask).
pub const HARMLESS_KEYS: [&str; 12] = [
    "contextWindow",
    "model.name",
    "model.temperature",
    "model.maxTokens",
    "model.requestTimeout",
    "context.threshold",
    "context.keepLastTurns",
    "loop.detectRepetition",
    "loop.repeatSpan",
    "loop.repeatCount",
    "tools.maxOutput",
    // Only hides more from the fence's commands and mm's own tools (its lists add up).
    "tools.sandboxHidden",
];

/// The keys of the sandbox (`tools.sandbox…`), which only the user's layers set
/// (`tools.sandboxHidden`, which only hides more, a project may set too).
pub const SANDBOX_KEYS: [&str; 4] = [
    "sandbox",
    "sandboxWritable",
    "sandboxRequired",
    "sandboxReadable",
];

/// The keys of the fence's network (`tools.network…`), which only the user's layers set.
pub const NETWORK_KEYS: [&str; 3] = ["network", "networkAllow", "networkExpose"];

/// The keys of an entry that starts a process (a hook, an MCP or language server, an agent)
/// that take it out of the fence or open the fence for it (`sandbox = false`,
/// `sandboxWritable`, `networkAllow`), which only the user's layers set, like [`SANDBOX_KEYS`].
pub const ENTRY_SANDBOX_KEYS: [&str; 3] = ["sandbox", "sandboxWritable", "networkAllow"];

/// Removes every entry's [`ENTRY_SANDBOX_KEYS`] from a layer; returns their dotted names.
fn strip_entry_sandbox(table: &mut Table) -> Vec<String> {
    let mut removed = Vec::new();
    let mut strip = |entry: &mut Value, path: String| {
        if let Value::Table(entry) = entry {
            for key in ENTRY_SANDBOX_KEYS {
                if entry.remove(key).is_some() {
                    removed.push(join(&path, key));
                }
            }
        }
    };
    if let Some(Value::Table(events)) = table.get_mut("hooks") {
        for (event, entries) in events.iter_mut() {
            if let Value::Array(items) = entries {
                for (i, item) in items.iter_mut().enumerate() {
                    strip(item, format!("{}[{i}]", join("hooks", event)));
                }
            }
        }
    }
    let named = [
        ("agents", None),
        ("mcp.servers", Some("mcp")),
        ("lsp.servers", Some("lsp")),
    ];
    for (prefix, section) in named {
        let entries = match section {
            None => table.get_mut(prefix),
            Some(section) => match table.get_mut(section) {
                Some(Value::Table(t)) => t.get_mut("servers"),
                _ => None,
            },
        };
        if let Some(Value::Table(entries)) = entries {
            for (name, entry) in entries.iter_mut() {
                strip(entry, join(prefix, name));
            }
        }
    }
    removed
}

/// The keys that say which server gets the conversation and the key (`model.…`), which only
/// the user's layers set.
pub const SERVER_KEYS: [&str; 2] = ["url", "apiKey"];

/// A project whose own commands were not loaded because it is not trusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UntrustedProject {
    /// The cwd, canonicalised: what to add to `trustedProjects`.
    pub path: PathBuf,
    pub hooks: usize,
    pub mcp_servers: usize,
    /// The names of the MCP servers ignored, in order.
    pub mcp_names: Vec<String>,
    pub lsp_servers: usize,
    pub agents: usize,
    /// What each ignored entry would run, one line each (`hook preToolCall: guard.sh`, `MCP
    /// server files: npx -y server .`), for the question that offers to trust the project.
    pub commands: Vec<String>,
    /// Listed in `distrustedProjects` (the user answered "never"): not offered again.
    pub distrusted: bool,
}

impl UntrustedProject {
    /// The warning that says what was ignored and how to trust the project.
    pub fn warning(&self, user_file: Option<&Path>, home: Option<&Path>) -> String {
        // The MCP servers are named: their tools are what the user will miss.
        let mcp = if self.mcp_names.is_empty() {
            "MCP server(s)".to_string()
        } else {
            format!("MCP server(s) ({})", self.mcp_names.join(", "))
        };
        let parts: Vec<String> = [
            (self.hooks, "hook(s)"),
            (self.mcp_servers, mcp.as_str()),
            (self.lsp_servers, "language server(s)"),
            (self.agents, "agent(s)"),
        ]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .collect();
        not_trusted_line(
            &self.path,
            self.distrusted,
            &parts.join(", "),
            user_file,
            home,
        )
    }
}

/// The keys of an untrusted project's file that were ignored because they are not on
/// [`HARMLESS_KEYS`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IgnoredKeys {
    /// The cwd, canonicalised.
    pub path: PathBuf,
    /// Dotted, sorted (`acp.clientMcpServers`, `skills.dirs`, `systemPrompt`).
    pub keys: Vec<String>,
    pub distrusted: bool,
}

impl IgnoredKeys {
    /// The one line that names them and says how to trust the project.
    pub fn warning(&self, user_file: Option<&Path>, home: Option<&Path>) -> String {
        let what = format!("keys {}", self.keys.join(", "));
        not_trusted_line(&self.path, self.distrusted, &what, user_file, home)
    }
}

/// `project <path> is not trusted: ignored its <what>; trust it with: mm trust <path>`.
fn not_trusted_line(
    path: &Path,
    distrusted: bool,
    what: &str,
    user_file: Option<&Path>,
    home: Option<&Path>,
) -> String {
    let why = if distrusted {
        format!(
            " (distrustedProjects in {})",
            super::shown_file(user_file, home)
        )
    } else {
        String::new()
    };
    format!(
        "project {} is not trusted{why}: ignored its {what}; trust it with: mm trust {}",
        path.display(),
        crate::paths::shell_quote(&path.to_string_lossy())
    )
}

/// Where the project stands with the user.
pub(super) struct Standing<'a> {
    /// The cwd, canonicalised.
    pub path: PathBuf,
    pub trusted: bool,
    pub distrusted: bool,
    pub user_file: Option<&'a Path>,
    pub home: Option<&'a Path>,
}

/// What a project's layer lost.
#[derive(Default)]
pub(super) struct Filtered {
    /// One line per kind of loss, in a fixed order.
    pub warnings: Vec<String>,
    pub untrusted: Option<UntrustedProject>,
    pub ignored: Option<IgnoredKeys>,
}

/// Removes from the project's layer what it may not set (see the module's comment). `unknown`:
/// the layer's unknown keys, which have a warning of their own and are not named again.
pub(super) fn filter_project(
    table: &mut Table,
    source: &Source,
    standing: &Standing<'_>,
    unknown: &[String],
) -> Filtered {
    let mut out = Filtered::default();
    // A project may require the fence whole (`tools.sandboxRequired = true`: mm then stops
    // where it cannot be enforced, as on Windows), never stop requiring it.
    let requires = matches!(
        table.get("tools"),
        Some(Value::Table(t)) if t.get("sandboxRequired") == Some(&Value::Boolean(true))
    );
    // The model can write the project's files: it must not be able to switch the fence off, or
    // send the conversation and the key elsewhere, for the next run.
    if requires && let Some(Value::Table(t)) = table.get_mut("tools") {
        t.remove("sandboxRequired");
    }
    let user_only = [
        (
            {
                let mut keys = strip_in(table, "tools", &SANDBOX_KEYS);
                keys.extend(strip_entry_sandbox(table));
                keys
            },
            "set the sandbox",
        ),
        (
            strip_in(table, "tools", &NETWORK_KEYS),
            "set the network of the fence",
        ),
        (
            strip_in(table, "model", &SERVER_KEYS),
            "choose the model server and its key",
        ),
    ];
    for (removed, what) in user_only {
        if !removed.is_empty() {
            out.warnings.push(format!(
                "{} {} ignored in project files ({source}): only the user's config, --config, the environment and flags {what}",
                removed.join(", "),
                if removed.len() == 1 { "is" } else { "are" },
            ));
        }
    }
    if requires && let Some(Value::Table(t)) = table.get_mut("tools") {
        t.insert("sandboxRequired".into(), Value::Boolean(true));
    }
    if table.get("yolo") == Some(&Value::Boolean(true)) {
        table.remove("yolo");
        out.warnings.push(format!(
            "yolo = true is ignored in project files ({source}): a project may make mm ask (yolo = false), never stop it asking"
        ));
    }
    if standing.trusted {
        return out;
    }
    let mut stripped = strip_commands(table, standing.path.clone());
    stripped.distrusted = standing.distrusted;
    if stripped.hooks + stripped.mcp_servers + stripped.lsp_servers + stripped.agents > 0 {
        out.warnings
            .push(stripped.warning(standing.user_file, standing.home));
        out.untrusted = Some(stripped);
    }
    let mut keys = Vec::new();
    keep_harmless(table, "", &mut keys);
    keys.retain(|k| !unknown.contains(k));
    keys.sort();
    if !keys.is_empty() {
        let ignored = IgnoredKeys {
            path: standing.path.clone(),
            keys,
            distrusted: standing.distrusted,
        };
        out.warnings
            .push(ignored.warning(standing.user_file, standing.home));
        out.ignored = Some(ignored);
    }
    out
}

/// Removes `keys` from the table `section` of a layer; returns their dotted names.
fn strip_in(table: &mut Table, section: &str, keys: &[&str]) -> Vec<String> {
    let Some(Value::Table(inner)) = table.get_mut(section) else {
        return Vec::new();
    };
    keys.iter()
        .filter(|k| inner.remove(**k).is_some())
        .map(|k| format!("{section}.{k}"))
        .collect()
}

/// Whether the key at `path` may stay in an untrusted project's layer.
fn harmless(path: &str, value: &Value) -> bool {
    HARMLESS_KEYS.contains(&path)
        || (path == "yolo" && *value == Value::Boolean(false))
        || (path == "tools.sandboxRequired" && *value == Value::Boolean(true))
}

/// Removes every key of `table` (at `prefix`) that is not harmless, recording the leaves
/// removed; a table left empty goes too.
fn keep_harmless(table: &mut Table, prefix: &str, removed: &mut Vec<String>) {
    let keys: Vec<String> = table.keys().cloned().collect();
    for key in keys {
        let path = join(prefix, &key);
        let Some(value) = table.get_mut(&key) else {
            continue;
        };
        if harmless(&path, value) {
            continue;
        }
        let under = format!("{path}.");
        match value {
            // What the commands left (`[mcp]` without its servers) sets nothing.
            Value::Table(inner) if inner.is_empty() => {
                table.remove(&key);
            }
            Value::Table(inner) if HARMLESS_KEYS.iter().any(|k| k.starts_with(&under)) => {
                keep_harmless(inner, &path, removed);
                if inner.is_empty() {
                    table.remove(&key);
                }
            }
            _ => {
                if let Some(value) = table.remove(&key) {
                    raw::leaves(&value, &path, removed);
                }
            }
        }
    }
}

/// Removes the command-defining parts of an untrusted project's layer, counting them and saying
/// what each would run.
fn strip_commands(table: &mut Table, path: PathBuf) -> UntrustedProject {
    let mut commands = Vec::new();
    let hooks = match table.remove("hooks") {
        Some(Value::Table(events)) => {
            let mut n = 0;
            for (event, entries) in &events {
                let entries = match entries {
                    Value::Array(items) => items.iter().collect(),
                    other => vec![other],
                };
                for entry in entries {
                    n += 1;
                    // A hook's command is a line for `sh -c`: shown as written.
                    let line = match entry.get("command").and_then(Value::as_str) {
                        Some(command) => command.to_string(),
                        None => entry.to_string(),
                    };
                    commands.push(format!("hook {event}: {line}"));
                }
            }
            n
        }
        Some(other) => {
            commands.push(format!("hooks: {other}"));
            1
        }
        None => 0,
    };
    let named = |removed: Option<Value>, what: &str, commands: &mut Vec<String>| {
        let Some(Value::Table(entries)) = removed else {
            return Vec::new();
        };
        for (name, entry) in &entries {
            commands.push(format!("{what} {name}: {}", command_line(entry)));
        }
        entries.keys().cloned().collect::<Vec<String>>()
    };
    let servers = |table: &mut Table, key: &str| match table.get_mut(key) {
        Some(Value::Table(t)) => t.remove("servers"),
        _ => None,
    };
    let mcp = servers(table, "mcp");
    let mcp_names = named(mcp, "MCP server", &mut commands);
    let lsp = servers(table, "lsp");
    let lsp_servers = named(lsp, "language server", &mut commands).len();
    let agents = named(table.remove("agents"), "agent", &mut commands).len();
    UntrustedProject {
        path,
        hooks,
        mcp_servers: mcp_names.len(),
        mcp_names,
        lsp_servers,
        agents,
        commands,
        distrusted: false,
    }
}

/// What a server or agent entry would run: its `command` and `args`, as a shell would read them
/// (a value of the wrong shape is shown as it is written).
fn command_line(entry: &Value) -> String {
    let Some(command) = entry.get("command").and_then(Value::as_str) else {
        return entry.to_string();
    };
    let mut words = vec![crate::paths::shell_quote(command)];
    if let Some(args) = entry.get("args").and_then(Value::as_array) {
        words.extend(args.iter().map(|a| match a.as_str() {
            Some(s) => crate::paths::shell_quote(s),
            None => a.to_string(),
        }));
    }
    words.join(" ")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn filtered(text: &str, trusted: bool) -> (Table, Filtered) {
        let mut table: Table = toml::from_str(text).unwrap();
        let standing = Standing {
            path: PathBuf::from("/p"),
            trusted,
            distrusted: false,
            user_file: None,
            home: None,
        };
        let source = Source::ProjectFile(PathBuf::from("/p/.mm/config.toml"));
        let out = filter_project(&mut table, &source, &standing, &[]);
        (table, out)
    }

    #[test]
    fn every_harmless_key_is_a_key_of_the_configuration() {
        for key in HARMLESS_KEYS {
            let (segments, leaf) = key.rsplit_once('.').unwrap_or(("", key));
            let mut text = String::new();
            if !segments.is_empty() {
                text.push_str(&format!("[{segments}]\n"));
            }
            text.push_str(&format!("{leaf} = 1\n"));
            let table: Table = toml::from_str(&text).unwrap();
            assert_eq!(raw::unknown_keys(&table), Vec::<String>::new(), "{key}");
        }
    }

    #[test]
    fn an_untrusted_layer_keeps_only_the_harmless_keys() {
        let (table, out) = filtered(
            "yolo = false\nmaxSteps = 9\ncontextWindow = 8192\n[model]\nname = \"m\"\ntextToolCalls = \"off\"\n[tools.bash]\ntimeout = 5\n[tools]\nmaxOutput = 10\n",
            false,
        );
        let kept: Table = toml::from_str(
            "yolo = false\ncontextWindow = 8192\n[model]\nname = \"m\"\n[tools]\nmaxOutput = 10\n",
        )
        .unwrap();
        assert_eq!(table, kept);
        assert_eq!(
            out.ignored.unwrap().keys,
            ["maxSteps", "model.textToolCalls", "tools.bash.timeout"]
        );
    }

    #[test]
    fn a_project_may_require_the_sandbox_but_never_stop_requiring_it() {
        for trusted in [false, true] {
            let (table, out) = filtered("[tools]\nsandboxRequired = true\n", trusted);
            let kept: Table = toml::from_str("[tools]\nsandboxRequired = true\n").unwrap();
            assert_eq!(table, kept, "trusted: {trusted}");
            assert_eq!(out.warnings, Vec::<String>::new());
            let (table, out) = filtered("[tools]\nsandboxRequired = false\n", trusted);
            assert_eq!(
                table.get("tools").and_then(|t| t.get("sandboxRequired")),
                None
            );
            assert_eq!(
                out.warnings,
                [
                    "tools.sandboxRequired is ignored in project files (/p/.mm/config.toml): only the user's config, --config, the environment and flags set the sandbox"
                ]
            );
        }
    }

    #[test]
    fn a_project_cannot_open_the_fences_network() {
        for trusted in [false, true] {
            let (table, out) = filtered(
                "[tools]\nnetwork = \"open\"\nnetworkAllow = [\"*.evil.example\"]\nnetworkExpose = [8080]\n",
                trusted,
            );
            let tools = table.get("tools").and_then(Value::as_table);
            assert!(tools.is_none_or(Table::is_empty), "trusted: {trusted}");
            assert_eq!(
                out.warnings,
                [
                    "tools.network, tools.networkAllow, tools.networkExpose are ignored in project files (/p/.mm/config.toml): only the user's config, --config, the environment and flags set the network of the fence"
                ]
            );
        }
        // Nor an entry's own list: a trusted project's agent keeps its command, not the hosts
        // it names.
        let (table, out) = filtered(
            "[agents.proj]\ncommand = \"x\"\nnetworkAllow = [\"evil.example\"]\n",
            true,
        );
        let kept: Table = toml::from_str("[agents.proj]\ncommand = \"x\"\n").unwrap();
        assert_eq!(table, kept);
        assert_eq!(
            out.warnings,
            [
                "agents.proj.networkAllow is ignored in project files (/p/.mm/config.toml): only the user's config, --config, the environment and flags set the sandbox"
            ]
        );
        {}
    }

    #[test]
    fn a_trusted_layer_keeps_everything_but_the_user_s_keys() {
        let (table, out) = filtered(
            "yolo = true\nmaxSteps = 9\n[model]\nurl = \"http://x\"\napiKey = \"k\"\nname = \"m\"\n",
            true,
        );
        let kept: Table = toml::from_str("maxSteps = 9\n[model]\nname = \"m\"\n").unwrap();
        assert_eq!(table, kept);
        assert_eq!(
            out.warnings,
            [
                "model.url, model.apiKey are ignored in project files (/p/.mm/config.toml): only the user's config, --config, the environment and flags choose the model server and its key",
                "yolo = true is ignored in project files (/p/.mm/config.toml): a project may make mm ask (yolo = false), never stop it asking",
            ]
        );
        assert_eq!(out.ignored, None);
    }
}

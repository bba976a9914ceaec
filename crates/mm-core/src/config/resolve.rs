//! Phase two: the merged table resolved once into the typed [`Config`], every value checked.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use toml::{Table, Value};

use super::raw::{HOOK_EVENTS, Source, join, quote};
use super::{
    AgentConfig, Config, ConfigError, EntrySandbox, HookConfig, LspServerConfig, MCP_CALL_TIMEOUT,
    McpPermissions, McpServerConfig, Origin, source_of,
};

/// `"a", "b" or "c"`.
fn or_list(items: &[String]) -> String {
    match items.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// Reads typed values out of merged tables, naming the key and its source in every error.
pub(super) struct Resolver<'a> {
    pub sources: &'a BTreeMap<String, Source>,
    pub home: Option<&'a Path>,
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::String(_) => "a string",
        Value::Integer(_) => "an integer",
        Value::Float(_) => "a float",
        Value::Boolean(_) => "a boolean",
        Value::Datetime(_) => "a date",
        Value::Array(_) => "an array",
        Value::Table(_) => "a table",
    }
}

impl Resolver<'_> {
    fn place(&self, key: &str) -> String {
        source_of(self.sources, key).to_string()
    }

    fn wrong(&self, key: &str, expected: &'static str, value: &Value) -> ConfigError {
        ConfigError::WrongType {
            place: self.place(key),
            key: key.to_string(),
            expected,
            got: kind(value),
        }
    }

    pub(super) fn invalid(&self, key: &str, problem: String) -> ConfigError {
        ConfigError::Invalid {
            place: self.place(key),
            key: key.to_string(),
            problem,
        }
    }

    fn string_value(&self, key: &str, value: &Value) -> Result<String, ConfigError> {
        match value {
            Value::String(s) => Ok(s.clone()),
            other => Err(self.wrong(key, "a string", other)),
        }
    }

    pub(super) fn string(
        &self,
        t: &Table,
        prefix: &str,
        key: &str,
    ) -> Result<Option<String>, ConfigError> {
        t.get(key)
            .map(|v| self.string_value(&join(prefix, key), v))
            .transpose()
    }

    fn boolean(&self, t: &Table, prefix: &str, key: &str) -> Result<Option<bool>, ConfigError> {
        match t.get(key) {
            None => Ok(None),
            Some(Value::Boolean(b)) => Ok(Some(*b)),
            Some(other) => Err(self.wrong(&join(prefix, key), "a boolean", other)),
        }
    }

    fn uint(
        &self,
        t: &Table,
        prefix: &str,
        key: &str,
        min: u64,
        max: u64,
    ) -> Result<Option<u64>, ConfigError> {
        let path = join(prefix, key);
        let n = match t.get(key) {
            None => return Ok(None),
            Some(Value::Integer(n)) => *n,
            Some(other) => return Err(self.wrong(&path, "an integer", other)),
        };
        match u64::try_from(n) {
            Err(_) if min == 0 => {
                Err(self.invalid(&path, format!("must be a non-negative integer, got {n}")))
            }
            Ok(u) if u >= min && u <= max => Ok(Some(u)),
            Ok(u) if u > max => Err(self.invalid(&path, format!("must be at most {max}, got {n}"))),
            _ => Err(self.invalid(&path, format!("must be at least {min}, got {n}"))),
        }
    }

    fn number(&self, t: &Table, prefix: &str, key: &str) -> Result<Option<f64>, ConfigError> {
        match t.get(key) {
            None => Ok(None),
            Some(Value::Float(f)) => Ok(Some(*f)),
            // TOML users write `temperature = 1` and mean the number.
            Some(Value::Integer(n)) => Ok(Some(*n as f64)),
            Some(other) => Err(self.wrong(&join(prefix, key), "a number", other)),
        }
    }

    fn strings(
        &self,
        t: &Table,
        prefix: &str,
        key: &str,
    ) -> Result<Option<Vec<String>>, ConfigError> {
        let path = join(prefix, key);
        match t.get(key) {
            None => Ok(None),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, v)| self.string_value(&format!("{path}[{i}]"), v))
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(other) => Err(self.wrong(&path, "an array of strings", other)),
        }
    }

    fn table<'t>(
        &self,
        t: &'t Table,
        prefix: &str,
        key: &str,
    ) -> Result<Option<&'t Table>, ConfigError> {
        match t.get(key) {
            None => Ok(None),
            Some(Value::Table(inner)) => Ok(Some(inner)),
            Some(other) => Err(self.wrong(&join(prefix, key), "a table", other)),
        }
    }

    fn string_map(
        &self,
        t: &Table,
        prefix: &str,
        key: &str,
    ) -> Result<BTreeMap<String, String>, ConfigError> {
        let path = join(prefix, key);
        let mut out = BTreeMap::new();
        if let Some(inner) = self.table(t, prefix, key)? {
            for (k, v) in inner {
                out.insert(k.clone(), self.string_value(&join(&path, k), v)?);
            }
        }
        Ok(out)
    }

    fn required_string(&self, t: &Table, prefix: &str, key: &str) -> Result<String, ConfigError> {
        match self.string(t, prefix, key)? {
            Some(s) if !s.trim().is_empty() => Ok(s),
            _ => Err(self.invalid(prefix, format!("has no {key}"))),
        }
    }

    fn expand(&self, path: &str) -> PathBuf {
        match (path.strip_prefix("~/"), self.home) {
            (Some(rest), Some(home)) => home.join(rest),
            _ if path == "~" => self
                .home
                .map_or_else(|| PathBuf::from(path), Path::to_path_buf),
            _ => PathBuf::from(path),
        }
    }

    fn paths(
        &self,
        t: &Table,
        prefix: &str,
        key: &str,
    ) -> Result<Option<Vec<PathBuf>>, ConfigError> {
        Ok(self
            .strings(t, prefix, key)?
            .map(|list| list.iter().map(|p| self.expand(p)).collect()))
    }

    /// A list of folders that must be absolute (after `~/` expansion): `tools.sandboxWritable`,
    /// an entry's `sandboxWritable`. Missing: empty.
    fn absolute_paths(
        &self,
        t: &Table,
        prefix: &str,
        key: &str,
    ) -> Result<Vec<PathBuf>, ConfigError> {
        let list = self.paths(t, prefix, key)?.unwrap_or_default();
        for (i, path) in list.iter().enumerate() {
            if !path.is_absolute() {
                return Err(self.invalid(
                    &format!("{}[{i}]", join(prefix, key)),
                    format!(
                        "must be an absolute path (or ~/…), got {}",
                        quote(&path.to_string_lossy())
                    ),
                ));
            }
        }
        Ok(list)
    }

    /// `tools.network`, `tools.networkAllow` (each entry checked).
    fn network(&self, t: &Table, net: &mut super::NetworkConfig) -> Result<(), ConfigError> {
        if let Some(v) = self.string(t, "tools", "network")? {
            net.mode = super::NetworkMode::parse(&v).ok_or_else(|| {
                let names: Vec<String> =
                    super::NetworkMode::NAMES.iter().map(|n| quote(n)).collect();
                self.invalid(
                    "tools.network",
                    format!("must be {}, got {}", or_list(&names), quote(&v)),
                )
            })?;
        }
        if let Some(list) = self.allow_list(t, "tools")? {
            net.allow = list;
        }
        if let Some(Value::Array(items)) = t.get("networkExpose") {
            let mut ports = Vec::new();
            for (i, item) in items.iter().enumerate() {
                let path = format!("tools.networkExpose[{i}]");
                let port = match item {
                    Value::Integer(n) => u16::try_from(*n).ok().filter(|p| *p > 0),
                    other => return Err(self.wrong(&path, "a port number", other)),
                };
                match port {
                    Some(p) => ports.push(p),
                    None => {
                        return Err(self.invalid(
                            &path,
                            format!("must be a port from 1 to 65535, got {item}"),
                        ));
                    }
                }
            }
            net.expose = ports;
        } else if let Some(other) = t.get("networkExpose") {
            return Err(self.wrong("tools.networkExpose", "an array of port numbers", other));
        }
        Ok(())
    }

    /// A `networkAllow` list (`tools.networkAllow`, an entry's), each entry checked.
    fn allow_list(&self, t: &Table, prefix: &str) -> Result<Option<Vec<String>>, ConfigError> {
        let Some(list) = self.strings(t, prefix, "networkAllow")? else {
            return Ok(None);
        };
        for (i, entry) in list.iter().enumerate() {
            if let Err(why) = super::AllowEntry::parse(entry) {
                return Err(self.invalid(
                    &format!("{}[{i}]", join(prefix, "networkAllow")),
                    format!("{} {why}", quote(entry)),
                ));
            }
        }
        Ok(Some(list))
    }

    /// An entry's `sandbox`, `sandboxWritable` and `networkAllow` (config::EntrySandbox).
    fn entry_sandbox(&self, t: &Table, prefix: &str) -> Result<EntrySandbox, ConfigError> {
        Ok(EntrySandbox {
            outside: !self.boolean(t, prefix, "sandbox")?.unwrap_or(true),
            writable: self.absolute_paths(t, prefix, "sandboxWritable")?,
            network_allow: self.allow_list(t, prefix)?.unwrap_or_default(),
        })
    }

    /// An entry's [`Resolver::entry_sandbox`], unless a project's file set part of the entry:
    /// then what the user's keys opened would hold for the project's command or arguments, so
    /// the entry runs in the fence like any other, and `warnings` says so.
    fn named_sandbox(
        &self,
        t: &Table,
        prefix: &str,
        warnings: &mut Vec<String>,
    ) -> Result<EntrySandbox, ConfigError> {
        let sandbox = self.entry_sandbox(t, prefix)?;
        let under = format!("{prefix}.");
        let project = self.sources.iter().find_map(|(k, s)| match s {
            Source::ProjectFile(file) if k.starts_with(&under) => Some(file),
            _ => None,
        });
        match project {
            Some(file) if sandbox != EntrySandbox::default() => {
                warnings.push(format!(
                    "{prefix}: its sandbox, sandboxWritable and networkAllow are ignored, as the project's file ({}) sets part of the entry: only the user's own entries leave or open the fence",
                    file.display()
                ));
                Ok(EntrySandbox::default())
            }
            _ => Ok(sandbox),
        }
    }

    /// `trustedProjects`, `distrustedProjects`: absolute paths (after `~/` expansion).
    pub(super) fn projects(&self, root: &Table, key: &str) -> Result<Vec<PathBuf>, ConfigError> {
        let list = self.paths(root, "", key)?.unwrap_or_default();
        for (i, path) in list.iter().enumerate() {
            if !path.is_absolute() {
                return Err(self.invalid(
                    &format!("{key}[{i}]"),
                    format!(
                        "must be an absolute path, got {}",
                        quote(&path.to_string_lossy())
                    ),
                ));
            }
        }
        Ok(list)
    }

    fn hook(&self, t: &Table, prefix: &str) -> Result<HookConfig, ConfigError> {
        let matcher = self.string(t, prefix, "match")?;
        if let Some(m) = &matcher
            && let Err(err) = super::hook_pattern(m)
        {
            let text = err.to_string();
            let reason = text
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("")
                .trim()
                .trim_start_matches("error: ")
                .to_string();
            return Err(self.invalid(
                &join(prefix, "match"),
                format!("is not a valid regular expression: {reason}"),
            ));
        }
        let origin = match source_of(self.sources, prefix) {
            Source::UserFile(_) | Source::Default => Origin::User,
            Source::ProjectFile(_) => Origin::Project,
            Source::ConfigFile(_) | Source::Env(_) | Source::Flag(_) => Origin::CommandLine,
        };
        Ok(HookConfig {
            command: self.required_string(t, prefix, "command")?,
            matcher,
            timeout: Duration::from_secs(
                self.uint(t, prefix, "timeout", 1, u64::MAX)?.unwrap_or(10),
            ),
            fail_closed: self.boolean(t, prefix, "failClosed")?.unwrap_or(false),
            origin,
            sandbox: self.entry_sandbox(t, prefix)?,
        })
    }

    fn hooks(&self, root: &Table, c: &mut Config) -> Result<(), ConfigError> {
        let Some(hooks) = self.table(root, "", "hooks")? else {
            return Ok(());
        };
        let h = &mut c.hooks;
        let slots: [&mut Vec<HookConfig>; 6] = [
            &mut h.session_start,
            &mut h.user_prompt_submit,
            &mut h.pre_tool_call,
            &mut h.post_tool_call,
            &mut h.turn_end,
            &mut h.pre_compact,
        ];
        for (event, slot) in HOOK_EVENTS.iter().zip(slots) {
            let path = join("hooks", event);
            match hooks.get(*event) {
                None => {}
                Some(Value::Array(items)) => {
                    for (i, item) in items.iter().enumerate() {
                        let item_path = format!("{path}[{i}]");
                        match item {
                            Value::Table(t) => slot.push(self.hook(t, &item_path)?),
                            other => return Err(self.wrong(&item_path, "a table", other)),
                        }
                    }
                }
                Some(other) => return Err(self.wrong(&path, "an array of tables", other)),
            }
        }
        Ok(())
    }

    /// The entries of a table of named tables (`agents`, `mcp.servers`, `lsp.servers`).
    fn named<'t>(
        &self,
        t: Option<&'t Table>,
        prefix: &str,
    ) -> Result<Vec<(String, String, &'t Table)>, ConfigError> {
        let mut out = Vec::new();
        for (name, value) in t.into_iter().flatten() {
            let path = join(prefix, name);
            match value {
                Value::Table(inner) => out.push((name.clone(), path, inner)),
                other => return Err(self.wrong(&path, "a table", other)),
            }
        }
        Ok(out)
    }

    fn commands(&self, root: &Table, c: &mut Config) -> Result<(), ConfigError> {
        for (name, p, t) in self.named(self.table(root, "", "agents")?, "agents")? {
            let agent = AgentConfig {
                command: self.required_string(t, &p, "command")?,
                args: self.strings(t, &p, "args")?.unwrap_or_default(),
                env: self.string_map(t, &p, "env")?,
                sandbox: self.named_sandbox(t, &p, &mut c.warnings)?,
            };
            c.agents.insert(name, agent);
        }
        if let Some(mcp) = self.table(root, "", "mcp")? {
            for (name, p, t) in self.named(self.table(mcp, "mcp", "servers")?, "mcp.servers")? {
                let permissions = match self.string(t, &p, "permissions")?.as_deref() {
                    None | Some("allow") => McpPermissions::Allow,
                    Some("ask") => McpPermissions::Ask,
                    Some(other) => {
                        return Err(self.invalid(
                            &join(&p, "permissions"),
                            format!("must be \"allow\" or \"ask\", got {}", quote(other)),
                        ));
                    }
                };
                let timeout = self
                    .uint(t, &p, "timeout", 1, u64::MAX)?
                    .map_or(MCP_CALL_TIMEOUT, Duration::from_secs);
                let server = McpServerConfig {
                    command: self.required_string(t, &p, "command")?,
                    args: self.strings(t, &p, "args")?.unwrap_or_default(),
                    env: self.string_map(t, &p, "env")?,
                    permissions,
                    timeout,
                    sandbox: self.named_sandbox(t, &p, &mut c.warnings)?,
                };
                c.mcp_servers.insert(name, server);
            }
        }
        if let Some(lsp) = self.table(root, "", "lsp")? {
            for (name, p, t) in self.named(self.table(lsp, "lsp", "servers")?, "lsp.servers")? {
                let server = LspServerConfig {
                    command: self.required_string(t, &p, "command")?,
                    args: self.strings(t, &p, "args")?.unwrap_or_default(),
                    extensions: self.strings(t, &p, "extensions")?.unwrap_or_default(),
                    sandbox: self.named_sandbox(t, &p, &mut c.warnings)?,
                };
                c.lsp_servers.insert(name, server);
            }
        }
        Ok(())
    }

    /// The whole configuration: defaults, then every value the merged table sets.
    pub(super) fn resolve(&self, root: &Table) -> Result<Config, ConfigError> {
        let mut c = Config::default();
        let u32_max = u64::from(u32::MAX);
        if let Some(v) = self.boolean(root, "", "yolo")? {
            c.yolo = v;
        }
        if let Some(v) = self.uint(root, "", "contextWindow", 0, u64::MAX)? {
            c.context_window = v;
        }
        if let Some(v) = self.uint(root, "", "maxSteps", 1, u32_max)? {
            c.max_steps = v as u32;
        }
        if let Some(v) = self.string(root, "", "systemPrompt")? {
            c.system_prompt = v;
        }
        c.trusted_projects = self.projects(root, super::TRUSTED_KEY)?;
        c.distrusted_projects = self.projects(root, super::DISTRUSTED_KEY)?;

        if let Some(m) = self.table(root, "", "model")? {
            let p = "model";
            let model = &mut c.model;
            if let Some(v) = self.string(m, p, "url")? {
                model.url = v;
            }
            if let Some(v) = self.string(m, p, "name")? {
                model.name = v;
            }
            if let Some(v) = self.string(m, p, "apiKey")? {
                model.api_key = v;
            }
            model.temperature = self.number(m, p, "temperature")?;
            model.max_tokens = self.uint(m, p, "maxTokens", 0, u64::MAX)?;
            if let Some(v) = self.uint(m, p, "requestTimeout", 1, u64::MAX)? {
                model.request_timeout = Duration::from_secs(v);
            }
            match self.string(m, p, "textToolCalls")?.as_deref() {
                None => {}
                Some("auto") => model.text_tool_calls = true,
                Some("off") => model.text_tool_calls = false,
                Some(other) => {
                    return Err(self.invalid(
                        "model.textToolCalls",
                        format!("must be \"auto\" or \"off\", got {}", quote(other)),
                    ));
                }
            }
        }
        if let Some(a) = self.table(root, "", "acp")? {
            if let Some(v) = self.string(a, "acp", "name")? {
                c.acp.name = v;
            }
            if let Some(v) = self.string(a, "acp", "title")? {
                c.acp.title = v;
            }
            if let Some(v) = self.boolean(a, "acp", "clientMcpServers")? {
                c.acp.client_mcp_servers = v;
            }
            if let Some(v) = self.uint(a, "acp", "maxLineBytes", 1024, usize::MAX as u64)? {
                c.acp.max_line_bytes = v as usize;
            }
        }
        if let Some(s) = self.table(root, "", "sessions")? {
            if let Some(v) = self.boolean(s, "sessions", "enabled")? {
                c.sessions.enabled = v;
            }
            if let Some(v) = self.string(s, "sessions", "dir")? {
                c.sessions.dir = self.expand(&v);
                c.sessions.user_dir = match source_of(self.sources, "sessions.dir") {
                    Source::UserFile(_)
                    | Source::ConfigFile(_)
                    | Source::Env(_)
                    | Source::Flag(_) => true,
                    Source::Default | Source::ProjectFile(_) => false,
                };
            }
            if let Some(v) = self.uint(s, "sessions", "keep", 0, usize::MAX as u64)? {
                c.sessions.keep = v as usize;
            }
        }
        if let Some(x) = self.table(root, "", "context")? {
            if let Some(v) = self.number(x, "context", "threshold")? {
                if !(v > 0.0 && v <= 1.0) {
                    return Err(
                        self.invalid("context.threshold", format!("must be in (0, 1], got {v}"))
                    );
                }
                c.context.threshold = v;
            }
            if let Some(v) = self.uint(x, "context", "keepLastTurns", 0, u32_max)? {
                c.context.keep_last_turns = v as usize;
            }
        }
        if let Some(l) = self.table(root, "", "loop")? {
            if let Some(v) = self.uint(l, "loop", "maxRepeats", 0, u32_max)? {
                c.loop_.max_repeats = v as u32;
            }
            if let Some(v) = self.boolean(l, "loop", "detectRepetition")? {
                c.loop_.detect_repetition = v;
            }
            use super::RepeatLimits as R;
            if let Some(v) = self.uint(
                l,
                "loop",
                "repeatSpan",
                R::MIN_SPAN as u64,
                R::MAX_SPAN as u64,
            )? {
                c.loop_.repeat_span = v as usize;
            }
            if let Some(v) = self.uint(
                l,
                "loop",
                "repeatCount",
                R::MIN_COUNT as u64,
                R::MAX_COUNT as u64,
            )? {
                c.loop_.repeat_count = v as usize;
            }
        }
        if let Some(t) = self.table(root, "", "tools")? {
            if let Some(v) = self.uint(t, "tools", "maxOutput", 1, u32_max)? {
                c.tools.max_output = v as usize;
            }
            if let Some(b) = self.table(t, "tools", "bash")? {
                if let Some(v) = self.uint(b, "tools.bash", "timeout", 1, u64::MAX)? {
                    c.tools.bash_timeout = Duration::from_secs(v);
                }
                if let Some(v) = self.string(b, "tools.bash", "path")? {
                    c.tools.bash_path = Some(self.expand(&v));
                }
            }
            if let Some(v) = self.string(t, "tools", "sandbox")? {
                c.tools.sandbox = super::SandboxMode::parse(&v).ok_or_else(|| {
                    let names: Vec<String> =
                        super::SandboxMode::NAMES.iter().map(|n| quote(n)).collect();
                    self.invalid(
                        "tools.sandbox",
                        format!("must be {}, got {}", or_list(&names), quote(&v)),
                    )
                })?;
            }
            if t.contains_key("sandboxWritable") {
                c.tools.sandbox_writable = self.absolute_paths(t, "tools", "sandboxWritable")?;
            }
            if let Some(v) = self.boolean(t, "tools", "sandboxRequired")? {
                c.tools.sandbox_required = v;
            }
            // The layers' lists were joined when merged (raw::merge): each adds.
            c.tools.sandbox_hidden = self.absolute_paths(t, "tools", "sandboxHidden")?;
            c.tools.sandbox_readable = self.absolute_paths(t, "tools", "sandboxReadable")?;
            if let Some(k) = self.table(t, "tools", "task")?
                && let Some(v) = self.uint(k, "tools.task", "maxSteps", 1, u32_max)?
            {
                c.tools.task_max_steps = v as u32;
            }
            self.network(t, &mut c.tools.network)?;
        }
        if let Some(s) = self.table(root, "", "skills")?
            && let Some(dirs) = self.paths(s, "skills", "dirs")?
        {
            c.skills.dirs = dirs;
        }
        self.hooks(root, &mut c)?;
        self.commands(root, &mut c)?;
        Ok(c)
    }
}

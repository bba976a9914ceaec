//! Loading the configuration: where the layers come from (the user's file, the project's,
//! the environment, the flags), the trust a project's file needs, and the errors of each.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::raw::{
    Layer, env_layers, flag_layers, merge, override_layer, parse_text, read_file, unknown_keys,
};
use super::*;

/// What [`load`] needs from the process; the library never reads the environment itself.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    pub cwd: PathBuf,
    /// `$HOME`.
    pub home: Option<PathBuf>,
    /// `$XDG_CONFIG_HOME`.
    pub xdg_config_home: Option<PathBuf>,
    /// `--config FILE` (relative to `cwd`).
    pub config_file: Option<PathBuf>,
    /// The process environment (only the `MM_*` variables are read).
    pub env: BTreeMap<String, String>,
    /// `-c key=value` pairs, in command-line order, applied after `flags`; shown as `-c`.
    pub overrides: Vec<(String, String)>,
    /// `--url`, `--model`, `--yolo`/`--no-yolo`, `--sandbox`, kept apart so `mm config` can
    /// name them.
    pub flags: Flags,
    /// The user's config file's text when the mm that asked this one handed it (the fence
    /// hides the file itself): read instead of the file, named as the file.
    pub user_text: Option<String>,
}

/// The named flags that set configuration keys.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Flags {
    /// `--url` → `model.url`.
    pub url: Option<String>,
    /// `--model` → `model.name`.
    pub model: Option<String>,
    /// `--yolo` → `Some(true)`, `--no-yolo` → `Some(false)`.
    pub yolo: Option<bool>,
    /// `--sandbox MODE` → `tools.sandbox`.
    pub sandbox: Option<String>,
}

/// The loaded configuration and where each value came from.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub config: Config,
    /// Source of each leaf key set by a layer, by dotted path (`model.url`,
    /// `hooks.preToolCall[0]`); a key absent here has its default value.
    pub sources: BTreeMap<String, Source>,
    /// The user's config file, whether or not it exists.
    pub user_file: Option<PathBuf>,
    /// The user's config as the mm that asked this one handed it ([`LoadOptions::user_text`]),
    /// read instead of `user_file`: what this mm hands its own asked agents in turn.
    pub handed_user_text: Option<std::sync::Arc<str>>,
    /// Set when the project defined commands that were ignored (the interactive session offers
    /// to trust it).
    pub untrusted_project: Option<UntrustedProject>,
    /// Set when an untrusted project's file set keys beyond [`HARMLESS_KEYS`], which were
    /// ignored.
    pub ignored_keys: Option<IgnoredKeys>,
}

impl Loaded {
    /// The source of a key's effective value (`Source::Default` when no layer set it).
    pub fn source_of(&self, key: &str) -> Source {
        source_of(&self.sources, key)
    }

    /// What `mm config` prints: one `key = value  # source` line per leaf key, API keys masked.
    pub fn report(&self) -> String {
        report::report(self)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {}: {err}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        err: std::io::Error,
    },
    #[error("{}: {message}", path.display())]
    Parse { path: PathBuf, message: String },
    #[error("{place}: {key} must be {expected}, got {got}")]
    WrongType {
        place: String,
        key: String,
        expected: &'static str,
        got: &'static str,
    },
    #[error("{place}: {key} {problem}")]
    Invalid {
        place: String,
        key: String,
        problem: String,
    },
    #[error("{var} must be {expected}, got {value:?}")]
    Env {
        var: String,
        expected: &'static str,
        value: String,
    },
    #[error("-c {text}: {problem}")]
    Override { text: String, problem: String },
}

/// The user's config file: `$XDG_CONFIG_HOME/mm/config.toml`, else `$HOME/.config/mm/config.toml`.
pub fn user_config_path(home: Option<&Path>, xdg_config_home: Option<&Path>) -> Option<PathBuf> {
    // The XDG spec says a relative XDG_CONFIG_HOME is invalid and must be ignored.
    match xdg_config_home.filter(|x| x.is_absolute()) {
        Some(xdg) => Some(xdg.join("mm").join("config.toml")),
        None => home
            .filter(|h| !h.as_os_str().is_empty())
            .map(|h| h.join(".config").join("mm").join("config.toml")),
    }
}

/// Splits a `-c` argument at its first `=`.
pub fn parse_override(arg: &str) -> Result<(String, String), ConfigError> {
    match arg.split_once('=') {
        Some((key, value)) if !key.trim().is_empty() => {
            Ok((key.trim().to_string(), value.to_string()))
        }
        _ => Err(ConfigError::Override {
            text: arg.to_string(),
            problem: "expected key=value".into(),
        }),
    }
}

/// The source of `key`: its own, else that of a key under it, else that of the key above it.
pub(super) fn source_of(sources: &BTreeMap<String, Source>, key: &str) -> Source {
    if let Some(s) = sources.get(key) {
        return s.clone();
    }
    let dotted = format!("{key}.");
    let indexed = format!("{key}[");
    if let Some((_, s)) = sources
        .iter()
        .find(|(k, _)| k.starts_with(&dotted) || k.starts_with(&indexed))
    {
        return s.clone();
    }
    let mut path = key;
    while let Some(cut) = path.rfind(['.', '[']) {
        path = &path[..cut];
        if let Some(s) = sources.get(path) {
            return s.clone();
        }
    }
    Source::Default
}

pub(super) fn canonical(path: &Path) -> PathBuf {
    crate::paths::canonical(path).unwrap_or_else(|_| crate::paths::normalize(path))
}

/// The user's config file as messages name it: `~/…` under the home folder (`~\…` on
/// Windows: [`paths::for_user`](crate::paths::for_user)).
pub fn shown_file(user_file: Option<&Path>, home: Option<&Path>) -> String {
    match user_file {
        Some(f) => crate::paths::for_user(f, home),
        None => "your user config".to_string(),
    }
}

/// One configuration file's text resolved alone, as `--config FILE` would be with no other
/// layer (`path` only names it in messages): the loader without the file system, for the
/// property tests and the fuzz driver. Unknown keys become warnings, as in [`load`].
pub fn from_text(path: &Path, text: &str) -> Result<Config, ConfigError> {
    let source = Source::ConfigFile(path.to_path_buf());
    let table = parse_text(path, text)?;
    let warnings: Vec<String> = unknown_keys(&table)
        .into_iter()
        .map(|key| format!("unknown key {} in {source}", raw::quote(&key)))
        .collect();
    let mut merged = toml::Table::new();
    let mut sources = BTreeMap::new();
    merge(&mut merged, table, &source, "", &mut sources);
    let resolver = resolve::Resolver {
        sources: &sources,
        home: None,
    };
    let mut config = resolver.resolve(&merged)?;
    config.warnings.splice(0..0, warnings);
    Ok(config)
}

/// Loads every layer, merges them and resolves the result (docs/config.md).
pub fn load(opts: &LoadOptions) -> Result<Loaded, ConfigError> {
    let home = opts.home.as_deref();
    let user_file = user_config_path(home, opts.xdg_config_home.as_deref());
    let project_file = opts.cwd.join(".mm").join("config.toml");

    let mut layers: Vec<Layer> = Vec::new();
    let user_table = match (&user_file, &opts.user_text) {
        (Some(path), Some(text)) => Some(parse_text(path, text)?),
        (Some(path), None) => read_file(path, false)?,
        (None, _) => None,
    };
    if let (Some(path), Some(table)) = (&user_file, user_table) {
        layers.push(Layer {
            table,
            source: Source::UserFile(path.clone()),
        });
    }
    if let Some(table) = read_file(&project_file, false)? {
        layers.push(Layer {
            table,
            source: Source::ProjectFile(project_file.clone()),
        });
    }
    if let Some(file) = &opts.config_file {
        let path = opts.cwd.join(file);
        if let Some(table) = read_file(&path, true)? {
            layers.push(Layer {
                table,
                source: Source::ConfigFile(path),
            });
        }
    }
    layers.extend(env_layers(&opts.env)?);
    layers.extend(flag_layers(&opts.flags));
    for (key, value) in &opts.overrides {
        layers.push(override_layer(key, value)?);
    }

    let mut warnings = Vec::new();
    let mut project_unknown = Vec::new();
    for layer in &layers {
        let unknown = unknown_keys(&layer.table);
        for key in &unknown {
            warnings.push(format!(
                "unknown key {} in {}",
                raw::quote(key),
                layer.source
            ));
        }
        if matches!(layer.source, Source::ProjectFile(_)) {
            project_unknown = unknown;
        }
    }

    // Trust comes from the layers the user controls; a project cannot trust itself.
    let mut trusted = Vec::new();
    for layer in &mut layers {
        if !matches!(layer.source, Source::ProjectFile(_)) {
            continue;
        }
        if layer.table.remove(TRUSTED_KEY).is_some() {
            warnings.push(format!(
                "trustedProjects is ignored in project files ({}): only the user's config can trust a project",
                layer.source
            ));
        }
        if layer.table.remove(DISTRUSTED_KEY).is_some() {
            warnings.push(format!(
                "distrustedProjects is ignored in project files ({}): only the user's config says which projects not to trust",
                layer.source
            ));
        }
    }
    let mut distrusted = Vec::new();
    for layer in &layers {
        for (key, list) in [
            (TRUSTED_KEY, &mut trusted),
            (DISTRUSTED_KEY, &mut distrusted),
        ] {
            if layer.table.contains_key(key) {
                let sources = BTreeMap::from([(key.to_string(), layer.source.clone())]);
                let r = resolve::Resolver {
                    sources: &sources,
                    home,
                };
                *list = r.projects(&layer.table, key)?;
            }
        }
    }
    let project = canonical(&opts.cwd);
    let standing = trust::Standing {
        trusted: trusted.iter().any(|p| canonical(p) == project),
        distrusted: distrusted.iter().any(|p| canonical(p) == project),
        path: project,
        user_file: user_file.as_deref(),
        home,
    };
    let mut untrusted_project = None;
    let mut ignored_keys = None;
    for layer in &mut layers {
        if matches!(layer.source, Source::ProjectFile(_)) {
            let filtered =
                trust::filter_project(&mut layer.table, &layer.source, &standing, &project_unknown);
            warnings.extend(filtered.warnings);
            untrusted_project = filtered.untrusted;
            ignored_keys = filtered.ignored;
        }
    }

    let mut merged = toml::Table::new();
    let mut sources = BTreeMap::new();
    for layer in layers {
        merge(&mut merged, layer.table, &layer.source, "", &mut sources);
    }
    let resolver = resolve::Resolver {
        sources: &sources,
        home,
    };
    let mut config = resolver.resolve(&merged)?;
    config.warnings.splice(0..0, warnings);
    config.untrusted_project = untrusted_project.clone();
    Ok(Loaded {
        config,
        sources,
        user_file,
        handed_user_text: opts.user_text.as_deref().map(Into::into),
        untrusted_project,
        ignored_keys,
    })
}

//! The skill catalogue (docs/skills.md): folders holding a `SKILL.md` (YAML front matter with
//! `name` and `description`, then Markdown), the system prompt's list of them, the `$skill`
//! notation and the skills offered as slash commands.

use std::fs;
use std::path::{Path, PathBuf};

/// The file that makes a folder a skill.
pub const SKILL_FILE: &str = "SKILL.md";

/// One skill of the catalogue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    /// The skill's folder.
    pub dir: PathBuf,
}

impl Skill {
    /// The skill's `SKILL.md`.
    pub fn file(&self) -> PathBuf {
        self.dir.join(SKILL_FILE)
    }
}

/// The skills a session can use, sorted by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Catalogue {
    pub skills: Vec<Skill>,
}

/// Where skills are looked for. Values are passed in (the caller reads the environment), so that
/// loading is a pure function of the file system.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillDirs {
    /// The session's working directory (absolute).
    pub cwd: PathBuf,
    /// The user's home directory, if known.
    pub home: Option<PathBuf>,
    /// `$XDG_CONFIG_HOME`, if set; `~/.config` otherwise.
    pub xdg_config: Option<PathBuf>,
    /// `skills.dirs` from the configuration; relative ones are relative to `cwd`.
    pub extra: Vec<PathBuf>,
}

impl SkillDirs {
    /// The folders for `cwd`, with `HOME` and `XDG_CONFIG_HOME` read from the process environment.
    pub fn from_env(cwd: &Path, extra: &[PathBuf]) -> SkillDirs {
        SkillDirs {
            cwd: cwd.to_path_buf(),
            home: crate::paths::home(),
            xdg_config: crate::paths::config_home(),
            extra: extra.to_vec(),
        }
    }

    /// The folders in precedence order: the first one that defines a name wins.
    pub fn folders(&self) -> Vec<PathBuf> {
        let mut out = vec![
            self.cwd.join(".mm/skills"),
            self.cwd.join(".agents/skills"),
            self.cwd.join(".claude/skills"),
        ];
        // The XDG base directory spec says a relative value is invalid and must be ignored.
        let xdg = self
            .xdg_config
            .clone()
            .filter(|p| p.is_absolute())
            .or_else(|| self.home.as_ref().map(|h| h.join(".config")));
        if let Some(xdg) = xdg {
            out.push(xdg.join("mm/skills"));
        }
        if let Some(home) = &self.home {
            out.push(home.join(".agents/skills"));
            out.push(home.join(".claude/skills"));
        }
        for dir in &self.extra {
            let dir = match (dir.strip_prefix("~"), &self.home) {
                (Ok(rest), Some(home)) => home.join(rest),
                _ => self.cwd.join(dir),
            };
            out.push(crate::paths::normalize(&dir));
        }
        out
    }
}

/// Whether `name` is a valid skill name: 1–64 characters of `a-z`, `0-9` and `-`.
pub fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// Why a `SKILL.md` was not taken into the catalogue.
#[derive(Debug, thiserror::Error)]
pub enum SkillError {
    #[error("cannot read it: {0}")]
    Unreadable(#[from] std::io::Error),
    #[error("the front matter has no closing `---` line")]
    Unclosed,
    #[error("invalid front matter: {0}")]
    Yaml(#[from] serde_yaml_ng::Error),
    #[error("the front matter is not a mapping of keys to values")]
    NotAMapping,
    #[error("`{0}` is not a string")]
    NotAString(&'static str),
    #[error("no description")]
    NoDescription,
    #[error("invalid name \"{0}\" (1–64 characters of a-z, 0-9 and -)")]
    InvalidName(String),
}

/// Splits a `SKILL.md` into its YAML front matter (if it starts with a `---` line) and its body.
pub fn split_front_matter(text: &str) -> Result<(Option<&str>, &str), SkillError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let Some(first) = lines.next() else {
        return Ok((None, text));
    };
    if first.trim_end() != "---" {
        return Ok((None, text));
    }
    let yaml_start = first.len();
    let mut pos = yaml_start;
    for line in lines {
        let trimmed = line.trim_end();
        if trimmed == "---" || trimmed == "..." {
            return Ok((Some(&text[yaml_start..pos]), &text[pos + line.len()..]));
        }
        pos += line.len();
    }
    Err(SkillError::Unclosed)
}

/// Reads a `SKILL.md` into a skill; `dir_name` is the name used when the front matter has none.
pub fn parse_skill(text: &str, dir: &Path, dir_name: &str) -> Result<Skill, SkillError> {
    let (yaml, _body) = split_front_matter(text)?;
    let mut name = None;
    let mut description = None;
    if let Some(yaml) = yaml {
        // The `---` line kept as an empty one, so that errors give the file's line numbers.
        let fields: front_matter::Fields = serde_yaml_ng::from_str(&format!("\n{yaml}"))?;
        let front_matter::Fields::Mapping {
            name: n,
            description: d,
        } = fields
        else {
            return Err(SkillError::NotAMapping);
        };
        name = n.text("name")?;
        description = d.text("description")?;
    }
    // Descriptions go on one line of the system prompt and of an editor's menu.
    let description = description
        .map(|d| d.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|d| !d.is_empty())
        .ok_or(SkillError::NoDescription)?;
    let name = name
        .map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| dir_name.to_string());
    if !valid_name(&name) {
        return Err(SkillError::InvalidName(name));
    }
    Ok(Skill {
        name,
        description,
        dir: dir.to_path_buf(),
    })
}

/// The two fields mm reads of a front matter, read without building the rest: every other key's
/// value is skipped as it is parsed, so YAML aliases there are never expanded (a "billion
/// laughs" front matter costs what its text costs, not what it expands to), and a field that is
/// not a string is skipped the same way.
mod front_matter {
    use std::fmt;

    use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

    use super::SkillError;

    /// A field's value: a string, nothing, or something else (not read).
    #[derive(Debug, Default)]
    pub(super) enum Field {
        #[default]
        Absent,
        Text(String),
        Other,
    }

    impl Field {
        pub(super) fn text(self, key: &'static str) -> Result<Option<String>, SkillError> {
            match self {
                Field::Absent => Ok(None),
                Field::Text(s) => Ok(Some(s)),
                Field::Other => Err(SkillError::NotAString(key)),
            }
        }
    }

    /// The whole front matter.
    pub(super) enum Fields {
        Mapping {
            name: Field,
            description: Field,
        },
        /// A scalar or a sequence.
        NotAMapping,
    }

    struct FieldVisitor;

    impl<'de> Visitor<'de> for FieldVisitor {
        type Value = Field;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("any value")
        }
        fn visit_str<E>(self, v: &str) -> Result<Field, E> {
            Ok(Field::Text(v.to_string()))
        }
        fn visit_string<E>(self, v: String) -> Result<Field, E> {
            Ok(Field::Text(v))
        }
        fn visit_unit<E>(self) -> Result<Field, E> {
            Ok(Field::Absent)
        }
        fn visit_none<E>(self) -> Result<Field, E> {
            Ok(Field::Absent)
        }
        fn visit_bool<E>(self, _: bool) -> Result<Field, E> {
            Ok(Field::Other)
        }
        fn visit_i64<E>(self, _: i64) -> Result<Field, E> {
            Ok(Field::Other)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Field, E> {
            Ok(Field::Other)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Field, E> {
            Ok(Field::Other)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Field, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(Field::Other)
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Field, A::Error> {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok(Field::Other)
        }
    }

    impl<'de> Deserialize<'de> for Field {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Field, D::Error> {
            d.deserialize_any(FieldVisitor)
        }
    }

    struct FieldsVisitor;

    impl<'de> Visitor<'de> for FieldsVisitor {
        type Value = Fields;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a mapping")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fields, A::Error> {
            let (mut name, mut description) = (Field::Absent, Field::Absent);
            while let Some(key) = map.next_key::<Field>()? {
                match key {
                    Field::Text(k) if k == "name" => name = map.next_value()?,
                    Field::Text(k) if k == "description" => description = map.next_value()?,
                    Field::Text(_) | Field::Absent | Field::Other => {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
            }
            Ok(Fields::Mapping { name, description })
        }
        // An empty front matter block.
        fn visit_unit<E>(self) -> Result<Fields, E> {
            Ok(Fields::Mapping {
                name: Field::Absent,
                description: Field::Absent,
            })
        }
        fn visit_none<E>(self) -> Result<Fields, E> {
            Ok(Fields::Mapping {
                name: Field::Absent,
                description: Field::Absent,
            })
        }
        fn visit_str<E>(self, _: &str) -> Result<Fields, E> {
            Ok(Fields::NotAMapping)
        }
        fn visit_bool<E>(self, _: bool) -> Result<Fields, E> {
            Ok(Fields::NotAMapping)
        }
        fn visit_i64<E>(self, _: i64) -> Result<Fields, E> {
            Ok(Fields::NotAMapping)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Fields, E> {
            Ok(Fields::NotAMapping)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Fields, E> {
            Ok(Fields::NotAMapping)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Fields, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(Fields::NotAMapping)
        }
    }

    impl<'de> Deserialize<'de> for Fields {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Fields, D::Error> {
            d.deserialize_any(FieldsVisitor)
        }
    }
}

/// A skill's instructions: its `SKILL.md` without the front matter.
pub fn read_body(skill: &Skill) -> Result<String, SkillError> {
    let text = fs::read_to_string(skill.file())?;
    let (_, body) = split_front_matter(&text)?;
    Ok(body.trim_start_matches(['\n', '\r']).to_string())
}

impl Catalogue {
    /// Reads the catalogue from `dirs`. Returns the warnings for the banner: one per skipped
    /// `SKILL.md`, naming the file and the reason.
    pub fn load(dirs: &SkillDirs) -> (Catalogue, Vec<String>) {
        let mut skills: Vec<Skill> = Vec::new();
        let mut warnings = Vec::new();
        for folder in dirs.folders() {
            let Ok(entries) = fs::read_dir(&folder) else {
                continue;
            };
            let mut subdirs: Vec<(String, PathBuf)> = entries
                .filter_map(Result::ok)
                .filter_map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    let path = e.path();
                    // Follows symlinks: users link skills they share between tools.
                    (!name.starts_with('.') && path.is_dir()).then_some((name, path))
                })
                .collect();
            subdirs.sort();
            for (dir_name, dir) in subdirs {
                let file = dir.join(SKILL_FILE);
                if fs::symlink_metadata(&file).is_err() {
                    continue;
                }
                let parsed = fs::read_to_string(&file)
                    .map_err(SkillError::from)
                    .and_then(|text| parse_skill(&text, &dir, &dir_name));
                match parsed {
                    Ok(skill) => {
                        if !skills.iter().any(|s| s.name == skill.name) {
                            skills.push(skill);
                        }
                    }
                    Err(e) => warnings.push(format!(
                        "skill {} skipped: {e}",
                        crate::paths::for_user(&file, None)
                    )),
                }
            }
        }
        skills.sort_by(|a, b| a.name.cmp(&b.name));
        (Catalogue { skills }, warnings)
    }

    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }

    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.name == name)
    }

    /// The names, in the catalogue's order (the front ends' completion and notices).
    pub fn name_list(&self) -> Vec<String> {
        self.skills.iter().map(|s| s.name.clone()).collect()
    }

    /// The names, comma-separated (for explanations).
    pub fn names(&self) -> String {
        self.skills
            .iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The system prompt's lines about the skills; empty when there are none.
    pub fn prompt_section(&self) -> String {
        if self.skills.is_empty() {
            return String::new();
        }
        let mut out =
            String::from("Skills (procedures: load one with read_skill, then follow it):\n");
        for s in &self.skills {
            out.push_str(&format!("- {}: {}\n", s.name, s.description));
        }
        out
    }
}

/// The punctuation that may follow a `$name` token (as after an `@path`).
const TRAILING: &[char] = &[',', '.', ';', ':', '!', '?', ')', ']', '}', '"', '\''];

/// The skills named by `$name` tokens of `text`, each once, in order of first appearance.
fn requested<'a>(text: &str, catalogue: &'a Catalogue) -> Vec<&'a Skill> {
    let mut out: Vec<&Skill> = Vec::new();
    for word in text.split_whitespace() {
        let Some(rest) = word.strip_prefix('$') else {
            continue;
        };
        let name = rest.trim_end_matches(TRAILING);
        if let Some(skill) = catalogue.get(name)
            && !out.iter().any(|s| s.name == skill.name)
        {
            out.push(skill);
        }
    }
    out
}

/// Resolves the `$skill` notation: the text kept as it is, then one line per distinct skill named.
pub fn resolve_notation(text: &str, catalogue: &Catalogue) -> String {
    let mut out = text.to_string();
    for skill in requested(text, catalogue) {
        let n = &skill.name;
        out.push_str(&format!(
            "\n[skill requested: {n} — load it with read_skill(\"{n}\") and follow it; its parameters are the text after ${n}]"
        ));
    }
    out
}

fn is_command(name: &str, commands: &[&str]) -> bool {
    commands.iter().any(|c| c.trim_start_matches('/') == name)
}

/// The skills offered as slash commands: those whose name is not a real command.
pub fn advertised<'a>(catalogue: &'a Catalogue, commands: &[&str]) -> Vec<&'a Skill> {
    catalogue
        .skills
        .iter()
        .filter(|s| !is_command(&s.name, commands))
        .collect()
}

/// The banner lines for the skills a real command shadows.
pub fn shadowed(catalogue: &Catalogue, commands: &[&str]) -> Vec<String> {
    catalogue
        .skills
        .iter()
        .filter(|s| is_command(&s.name, commands))
        .map(|s| {
            let n = &s.name;
            format!("skill \"{n}\" is not advertised: the /{n} command shadows it; use ${n}")
        })
        .collect()
}

/// `/name rest` naming an advertised skill becomes `$name rest`; `None` for any other text.
pub fn rewrite_slash(text: &str, catalogue: &Catalogue, commands: &[&str]) -> Option<String> {
    let rest = text.trim_start().strip_prefix('/')?;
    let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let (name, after) = rest.split_at(end);
    if catalogue.get(name).is_none() || is_command(name, commands) {
        return None;
    }
    Some(format!("${name}{after}"))
}

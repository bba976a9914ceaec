//! The `read_skill` tool (docs/tools.md, docs/skills.md): loads a skill of the session's catalogue.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::{CallContext, Describe, ToolOutput, ToolSetup, TypedTool};
use crate::event::{Tally, ToolKind};
use crate::paths;
use crate::skills::{Catalogue, read_body};

/// Files listed at most, so that a skill folder holding a data set does not flood the context.
pub const MAX_FILES: usize = 200;
/// Folder depth listed at most.
const MAX_DEPTH: usize = 8;

pub struct ReadSkill {
    /// The session's catalogue.
    pub skills: Arc<Catalogue>,
}

/// The registration (`mm_engine::BUILTIN`): only when the session has skills, since the model could
/// not name one otherwise and the schema is paid for on every request.
pub fn tool(setup: &ToolSetup<'_>) -> Option<Arc<dyn super::Tool>> {
    if setup.skills.is_empty() {
        return None;
    }
    Some(Arc::new(ReadSkill {
        skills: Arc::clone(setup.skills),
    }))
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The skill's name, as listed in the system prompt.
    name: String,
}

impl Describe for ReadSkill {
    fn name(&self) -> &str {
        "read_skill"
    }
    fn description(&self) -> &str {
        "Load a skill: its instructions, its folder and its files. Follow the instructions."
    }
    fn kind(&self, _args: &Value) -> ToolKind {
        ToolKind::Read
    }
    fn title(&self, args: &Value) -> String {
        match args.get("name").and_then(Value::as_str) {
            Some(name) => format!("read_skill: {name}"),
            None => "read_skill".into(),
        }
    }
    fn tally(&self) -> Option<Tally> {
        Some(Tally::Skill)
    }
    /// The catalogue, in the system prompt, so the model knows what it can load.
    fn prompt_section(&self) -> Option<String> {
        let section = self.skills.prompt_section();
        (!section.is_empty()).then_some(section)
    }
}

#[async_trait]
impl TypedTool for ReadSkill {
    type Args = Args;

    fn gated(&self, _args: &Args) -> bool {
        false
    }
    async fn run(&self, args: Args, _call: &CallContext<'_>) -> ToolOutput {
        load(&args.name, &self.skills)
    }
}

/// What `read_skill` answers for `name`.
pub fn load(name: &str, catalogue: &Catalogue) -> ToolOutput {
    let Some(skill) = catalogue.get(name) else {
        return ToolOutput::not_run(unknown(name, catalogue));
    };
    let body = match read_body(skill) {
        Ok(b) => b,
        Err(e) => {
            return ToolOutput::not_run(format!(
                "[cannot load skill \"{name}\": {} — {e}]",
                paths::for_model(&skill.file())
            ));
        }
    };
    let mut out = format!(
        "skill directory: {}\nfiles:\n",
        paths::for_model(&skill.dir)
    );
    let (files, more) = list_files(&skill.dir);
    for f in &files {
        out.push_str(&format!("- {f}\n"));
    }
    if more > 0 {
        out.push_str(&format!("- … and {more} more\n"));
    }
    out.push('\n');
    out.push_str(&body);
    ToolOutput::completed(out)
}

fn unknown(name: &str, catalogue: &Catalogue) -> String {
    if catalogue.is_empty() {
        format!("[unknown skill \"{name}\": there are no skills]")
    } else {
        format!(
            "[unknown skill \"{name}\"; the skills are: {}]",
            catalogue.names()
        )
    }
}

/// The files under `dir`, as sorted relative paths with `/` separators (on Windows too: the
/// model copies them into commands), at most [`MAX_FILES`];
/// also how many more there are. Symlinked folders are listed, not entered (no cycles).
pub fn list_files(dir: &Path) -> (Vec<String>, usize) {
    let mut all = Vec::new();
    walk(dir, &PathBuf::new(), 0, &mut all);
    all.sort();
    let more = all.len().saturating_sub(MAX_FILES);
    all.truncate(MAX_FILES);
    (all, more)
}

fn walk(dir: &Path, rel: &Path, depth: usize, out: &mut Vec<String>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name();
        if name == ".git" {
            continue;
        }
        let rel = rel.join(&name);
        let is_dir = entry.file_type().map(|t| t.is_dir()).unwrap_or(false);
        if is_dir && depth < MAX_DEPTH {
            walk(&entry.path(), &rel, depth + 1, out);
        } else if !is_dir {
            out.push(paths::for_model(&rel));
        }
        // Guards against a pathological tree; the caller only keeps MAX_FILES anyway.
        if out.len() > MAX_FILES * 50 {
            return;
        }
    }
}

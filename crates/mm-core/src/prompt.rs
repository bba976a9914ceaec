//! The system prompt and the parts of the prompt pipeline that belong to no front end
//! (docs/engine.md, "The prompt pipeline").

use std::path::{Path, PathBuf};

use crate::paths;

/// What the system prompt is built from. It is built once per session and never changes
/// between turns: a stable prefix lets a local server reuse its prompt cache.
pub struct SystemPromptInput<'a> {
    pub title: &'a str,
    pub cwd: &'a Path,
    /// `YYYY-MM-DD`.
    pub date: &'a str,
    /// The sections the session's tools bring (the skill catalogue, the agents `ask_agent` can
    /// reach), in the tools' order: only tools that exist are spoken of.
    pub sections: &'a [String],
    /// `systemPrompt` from the configuration.
    pub extra: &'a str,
}

/// The project's own instructions: `AGENTS.md`, else `MM.md`, in the working directory.
pub fn project_instructions(cwd: &Path) -> Option<(String, String)> {
    ["AGENTS.md", "MM.md"].iter().find_map(|name| {
        std::fs::read_to_string(cwd.join(name))
            .ok()
            .filter(|t| !t.trim().is_empty())
            .map(|t| (name.to_string(), t))
    })
}

/// Builds the system prompt. Kept short on purpose: small local models answer slowly when every
/// request starts with thousands of tokens.
pub fn system_prompt(input: &SystemPromptInput<'_>) -> String {
    let mut s = format!(
        "You are {title}, a coding agent working in a terminal on the user's machine.\n\
         Work bash-first: explore, build and test with `bash`; use `read_file`, `write_file` and \
         `edit_file` for files. Act, check the result, then answer briefly.\n\
         Working directory: {cwd}\nOS: {os}\nDate: {date}\n",
        title = input.title,
        cwd = crate::paths::for_model(input.cwd),
        os = std::env::consts::OS,
        date = input.date,
    );
    for section in input.sections {
        if !section.trim().is_empty() {
            s.push('\n');
            s.push_str(section.trim_end());
            s.push('\n');
        }
    }
    if let Some((name, text)) = project_instructions(input.cwd) {
        s.push_str(&format!(
            "\nProject instructions ({name}):\n{}\n",
            text.trim_end()
        ));
    }
    if !input.extra.trim().is_empty() {
        s.push('\n');
        s.push_str(input.extra.trim_end());
        s.push('\n');
    }
    s
}

/// The `@path` tokens of a prompt that name an existing file or directory: `@` at the start or
/// after whitespace, up to the next whitespace, trailing `,.;:!?)]}"'` stripped. Returns the
/// absolute paths, once each, in order, with whether each is a directory.
pub fn at_paths(text: &str, cwd: &Path) -> Vec<(PathBuf, bool)> {
    let mut out: Vec<(PathBuf, bool)> = Vec::new();
    let mut prev_ws = true;
    for (i, c) in text.char_indices() {
        if c == '@' && prev_ws {
            let rest = &text[i + 1..];
            let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
            let token = rest[..end]
                .trim_end_matches([',', '.', ';', ':', '!', '?', ')', ']', '}', '"', '\'']);
            if !token.is_empty() {
                let abs = paths::resolve(cwd, token);
                if let Ok(meta) = std::fs::metadata(&abs)
                    && !out.iter().any(|(p, _)| p == &abs)
                {
                    out.push((abs, meta.is_dir()));
                }
            }
        }
        prev_ws = c.is_whitespace();
    }
    out
}

/// The line appended for an attachment.
pub fn attachment_line(path: &Path, is_dir: bool) -> String {
    if is_dir {
        format!("\n[attached directory: {}]", crate::paths::for_model(path))
    } else {
        format!("\n[attached file: {}]", crate::paths::for_model(path))
    }
}

/// What is appended for a text attached whole (piped stdin: `cat calc.py | mm -p "review
/// this"`): a header naming it and its size, the text, an end line. `cut` names the cap when the
/// text is only the start of what came.
pub fn attached_text(name: &str, text: &str, cut: Option<&str>) -> String {
    format!(
        "\n\n[attached {name} ({})]\n{text}\n[end of {name}]",
        attached_size(text, cut)
    )
}

/// How much of a text is attached: `3 lines`, `1 line`, or `its first 50 lines: <cut>`.
pub fn attached_size(text: &str, cut: Option<&str>) -> String {
    let lines = match text.lines().count() {
        1 => "1 line".to_string(),
        n => format!("{n} lines"),
    };
    match cut {
        Some(cut) => format!("its first {lines}: {cut}"),
        None => lines,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::disallowed_methods)]
    use super::*;

    #[test]
    fn at_paths_finds_existing_files_and_dirs_once() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "x").unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        let text = "look at @a.txt, and @src) and @a.txt again, @missing and e@mail.com @";
        let found = at_paths(text, dir.path());
        assert_eq!(
            found,
            vec![
                (dir.path().join("a.txt"), false),
                (dir.path().join("src"), true)
            ]
        );
        assert_eq!(
            attachment_line(&found[1].0, true),
            format!(
                "\n[attached directory: {}]",
                crate::paths::for_model(&dir.path().join("src"))
            )
        );
    }

    #[test]
    fn an_attached_text_is_framed_with_its_size() {
        assert_eq!(
            attached_text("stdin", "def f():\n    pass", None),
            "\n\n[attached stdin (2 lines)]\ndef f():\n    pass\n[end of stdin]"
        );
        assert_eq!(attached_size("one", None), "1 line");
        assert_eq!(
            attached_text("stdin", "y\ny", Some("cut at 4 characters")),
            "\n\n[attached stdin (its first 2 lines: cut at 4 characters)]\ny\ny\n[end of stdin]"
        );
    }

    #[test]
    fn system_prompt_includes_agents_md() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("AGENTS.md"), "Run `make test`.").unwrap();
        let p = system_prompt(&SystemPromptInput {
            title: "Bob",
            cwd: dir.path(),
            date: "2026-01-01",
            sections: &[],
            extra: "Be terse.",
        });
        assert!(p.starts_with("You are Bob, a coding agent"));
        assert!(p.contains("Project instructions (AGENTS.md):\nRun `make test`.\n"));
        assert!(p.ends_with("Be terse.\n"));
    }
}

//! The permission question on the terminal, ours (the gate's) and another agent's (relayed):
//! everything that will run is on the screen before a key is read. Pure.
//!
//! A call whose title is one line that fits is asked on one line, `Allow bash: rm -rf build?`.
//! Otherwise what will run comes first as a block, every line of it numbered and folded at the
//! window's width (never cut, never broken at a space that might not be there), then `Allow the
//! call above?`:
//!
//! ```text
//!   1 │ bash: echo ok
//!   2 │ rm -rf ~
//! Allow the call above?  [y]es  [n]o  [t]ell why  ne[v]er this command
//! ```
//!
//! A call's arguments that its title does not show (`fetch_content`'s `output`, `lsp rename`'s
//! `new_name`, an MCP tool's arguments, `bash`'s `timeout`) follow the title in the block, one
//! `with <name>: <value>` each; a call that shows its change (`write_file`, `edit_file`: the
//! diff above the question) does not repeat its arguments.

use serde_json::Value;
use unicode_width::UnicodeWidthStr;

use super::render;
use super::style;
use super::wrap;
use crate::event::{AlwaysRule, NetworkQuestion, PermissionRequest};
use crate::relay::RelayedPermission;
use crate::sanitize;

/// Columns assumed when the window's width is not known.
pub const DEFAULT_WIDTH: usize = 80;
/// Columns a folded row keeps at the least, however narrow the window.
const MIN_ROOM: usize = 20;

/// A question to write: the lines above it, then the question (no line end: the answer is
/// written after it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    pub lines: Vec<String>,
    pub prompt: String,
}

/// The gate's question for a call: the change it proposes (`write_file`, `edit_file`), what
/// will run, and `[y]es  [a]lways for <tool> this session  [n]o  [t]ell why  ne[v]er`. For a
/// command, "always" says what it covers — `[a]lways allow read-only "git log …"` (the
/// options the read-only table allows), `[a]lways allow exactly this command`, or nothing for
/// one that chains — and `ne[v]er this command`.
pub fn question(request: &PermissionRequest, width: usize, color: bool) -> Question {
    let call = &request.call;
    let mut lines = render::proposed_lines(&request.preview, color);
    let extra = if request.preview.is_empty() {
        unshown_arguments(&call.title, &call.raw_input)
    } else {
        Vec::new()
    };
    let (block, question) = what_runs(&call.title, &extra, width, color);
    lines.extend(block);
    let always = match &request.rule {
        AlwaysRule::Tool => format!("  [a]lways for {} this session", inline(&call.name)),
        AlwaysRule::ReadOnly(form) => format!("  [a]lways allow read-only \"{} …\"", inline(form)),
        AlwaysRule::Exact => "  [a]lways allow exactly this command".to_string(),
        AlwaysRule::Nothing => String::new(),
    };
    // "Never" holds for what "always" is about: the tool, or this command's words.
    let never = match &request.rule {
        AlwaysRule::Tool => "ne[v]er",
        AlwaysRule::ReadOnly(_) | AlwaysRule::Exact | AlwaysRule::Nothing => "ne[v]er this command",
    };
    let keys = format!("  [y]es{always}  [n]o  [t]ell why  {never}");
    Question {
        lines,
        prompt: prompt(&question, &keys, color),
    }
}

/// Another agent's permission request: `Allow <agent>: <its title>?` (or the block) and its
/// own options, numbered (at most nine can be picked).
pub fn relayed_question(request: &RelayedPermission, width: usize, color: bool) -> Question {
    let (lines, question) = what_runs(&request.title, &[], width, color);
    let keys: Vec<String> = request
        .options
        .iter()
        .take(9)
        .enumerate()
        .map(|(i, o)| format!("[{}] {}", i + 1, inline(&o.name)))
        .collect();
    Question {
        lines,
        prompt: prompt(&question, &format!("  {}", keys.join("  ")), color),
    }
}

/// The fence's network question (docs/sandbox.md, "Asking"): what connects, and where, then
/// `Allow <host:port>?  [y]es once  [a]lways for <host> this session  [n]o` — no "never", which
/// would refuse every later command that needs the host.
pub fn network_question(q: &NetworkQuestion, color: bool) -> Question {
    let target = inline(&q.target());
    Question {
        lines: vec![format!(
            "{} connects to {target}, which tools.networkAllow does not name",
            inline(&q.asker)
        )],
        prompt: prompt(
            &format!("Allow {target}?"),
            &format!(
                "  [y]es once  [a]lways for {} this session  [n]o",
                inline(&q.host)
            ),
            color,
        ),
    }
}

fn prompt(question: &str, keys: &str, color: bool) -> String {
    if color {
        format!("{}{}", style::bold(true, question), style::dim(true, keys))
    } else {
        format!("{question}{keys}")
    }
}

/// Outside text for one line: shown visibly, its line ends and tabs as spaces.
pub fn inline(text: &str) -> String {
    sanitize::visible(text).replace(['\n', '\t'], " ")
}

/// Outside text for a block: shown visibly, tabs as four spaces (a tab's width depends on the
/// column, which folding must know).
fn block_text(text: &str) -> String {
    sanitize::visible(text).replace('\t', "    ")
}

/// Outside text as a block, never cut: shown visibly, each of its lines numbered and folded at
/// the window's width — at the column, not at a space, so that a fold is never mistaken for a
/// space or a line (the permission question, the trust question).
pub fn numbered(text: &str, width: usize, color: bool) -> Vec<String> {
    let text = block_text(text);
    let lines: Vec<&str> = text.split('\n').collect();
    let digits = lines.len().to_string().len();
    // "  12 │ ": the number, right-aligned, then the bar.
    let room = width.saturating_sub(digits + 5).max(MIN_ROOM);
    let mut block = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        for (j, row) in wrap::fold(line, room).into_iter().enumerate() {
            let label = match j {
                0 => format!("{:>digits$}", i + 1),
                _ => " ".repeat(digits),
            };
            block.push(format!(
                "  {} {row}",
                style::dim(color, &format!("{label} │"))
            ));
        }
    }
    block
}

/// The block that shows `title` and `extra` whole, and the question after it; no block when
/// the title is one line that fits on the question's line and nothing else is to be shown.
fn what_runs(
    title: &str,
    extra: &[(String, String)],
    width: usize,
    color: bool,
) -> (Vec<String>, String) {
    let shown = block_text(title.trim());
    let one_line = format!("Allow {shown}?");
    if !shown.contains('\n') && extra.is_empty() && one_line.width() <= width {
        return (Vec::new(), one_line);
    }
    let mut block = numbered(title.trim(), width, color);
    for (name, value) in extra {
        // Continuation rows go under the value, four columns in.
        let text = format!("with {name}: {value}");
        let first_room = width.saturating_sub(2).max(MIN_ROOM);
        let rest_room = width.saturating_sub(6).max(MIN_ROOM);
        let mut rows = wrap::fold(&text, first_room).into_iter();
        if let Some(first) = rows.next() {
            block.push(format!("  {first}"));
            let rest: String = rows.collect();
            for row in wrap::fold(&rest, rest_room)
                .into_iter()
                .filter(|r| !r.is_empty())
            {
                block.push(format!("      {row}"));
            }
        }
    }
    (block, "Allow the call above?".to_string())
}

/// The arguments whose value the title does not show, in their order, as `(name, value)`
/// shown visibly: a string as it is (JSON-quoted when it has several lines, so that each
/// argument is one line of the block), anything else as compact JSON.
fn unshown_arguments(title: &str, raw_input: &Value) -> Vec<(String, String)> {
    let Value::Object(args) = raw_input else {
        return Vec::new();
    };
    args.iter()
        .filter_map(|(name, value)| {
            let text = match value {
                Value::String(s) => s.clone(),
                Value::Null => return None,
                other => other.to_string(),
            };
            if text.is_empty() || title.contains(&text) {
                return None;
            }
            let one_line = if text.contains('\n') {
                value.to_string()
            } else {
                text
            };
            Some((inline(name), block_text(&one_line)))
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::event::{ToolCallStart, ToolKind};
    use crate::relay::{OptionKind, RelayedOption};
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn the_network_question_names_what_connects_where_and_has_no_never() {
        let q = NetworkQuestion {
            tool_call_id: "call_1".into(),
            host: "::1".into(),
            port: 8080,
            asker: "curl -s http://[::1]:8080/\u{1b}[8m".into(),
        };
        assert_eq!(
            network_question(&q, false),
            Question {
                lines: vec![
                    "curl -s http://[::1]:8080/^[[8m connects to [::1]:8080, which tools.networkAllow does not name".into()
                ],
                prompt: "Allow [::1]:8080?  [y]es once  [a]lways for ::1 this session  [n]o".into(),
            }
        );
    }

    fn request(name: &str, title: &str, raw_input: Value) -> PermissionRequest {
        PermissionRequest {
            call: ToolCallStart {
                id: "call_1".into(),
                name: name.into(),
                title: title.into(),
                kind: ToolKind::Execute,
                raw_input,
                locations: vec![],
            },
            preview: vec![],
            rule: AlwaysRule::Tool,
        }
    }

    fn bash(command: &str) -> PermissionRequest {
        let mut r = request(
            "bash",
            &format!("bash: {command}"),
            json!({ "command": command }),
        );
        r.rule = crate::engine::gate::rule_of(command);
        r
    }

    const KEYS: &str =
        "  [y]es  [a]lways allow exactly this command  [n]o  [t]ell why  ne[v]er this command";
    /// A command that chains (a line end, `\r`): no rule would let it run again.
    const CHAINED_KEYS: &str = "  [y]es  [n]o  [t]ell why  ne[v]er this command";

    #[test]
    fn always_says_what_it_covers_and_never_holds_for_the_command() {
        assert_eq!(
            question(&bash("git log -1"), 80, false).prompt,
            "Allow bash: git log -1?  [y]es  [a]lways allow read-only \"git log …\"  [n]o  [t]ell why  ne[v]er this command"
        );
        assert_eq!(
            question(&bash("cargo test -p mm"), 80, false).prompt,
            format!("Allow bash: cargo test -p mm?{KEYS}")
        );
        assert_eq!(
            question(&bash("sudo rm -rf /"), 80, false).prompt,
            format!("Allow bash: sudo rm -rf /?{KEYS}")
        );
        assert_eq!(
            question(&bash("pytest; rm -rf ~"), 80, false).prompt,
            format!("Allow bash: pytest; rm -rf ~?{CHAINED_KEYS}")
        );
    }

    #[test]
    fn a_short_command_is_asked_on_one_line() {
        assert_eq!(
            question(&bash("rm -rf build"), 80, false),
            Question {
                lines: vec![],
                prompt: format!("Allow bash: rm -rf build?{KEYS}"),
            }
        );
    }

    #[test]
    fn every_line_of_a_command_is_shown_numbered() {
        assert_eq!(
            question(&bash("echo ok\nrm -rf ~"), 80, false),
            Question {
                lines: vec!["  1 │ bash: echo ok".into(), "  2 │ rm -rf ~".into()],
                prompt: format!("Allow the call above?{CHAINED_KEYS}"),
            }
        );
    }

    #[test]
    fn a_long_line_is_folded_at_the_width_never_cut() {
        let command = format!("echo {}", "x".repeat(100));
        let q = question(&bash(&command), 40, false);
        assert_eq!(
            q.lines,
            vec![
                format!("  1 │ bash: echo {}", "x".repeat(23)),
                format!("    │ {}", "x".repeat(34)),
                format!("    │ {}", "x".repeat(34)),
                format!("    │ {}", "x".repeat(9)),
            ]
        );
        assert!(q.lines.iter().all(|l| l.chars().count() <= 40));
    }

    #[test]
    fn what_would_hide_the_command_is_shown() {
        let q = question(&bash("echo ok\x1b[2K\r\u{202e}rm -rf ~\trm"), 80, false);
        assert_eq!(
            q.prompt,
            format!("Allow bash: echo ok^[[2K^M<U+202E>rm -rf ~    rm?{CHAINED_KEYS}")
        );
    }

    #[test]
    fn arguments_the_title_does_not_show_follow_it() {
        let q = question(
            &request(
                "fetch_content",
                "fetch_content: http://h/x",
                json!({"url": "http://h/x", "output": "/home/u/.config/mm/config.toml"}),
            ),
            80,
            false,
        );
        assert_eq!(
            q.lines,
            vec![
                "  1 │ fetch_content: http://h/x",
                "  with output: /home/u/.config/mm/config.toml",
            ]
        );
        assert_eq!(
            q.prompt,
            "Allow the call above?  [y]es  [a]lways for fetch_content this session  [n]o  [t]ell why  ne[v]er"
        );
        let q = question(
            &request(
                "files__run",
                "files: run",
                json!({"code": "a\nb", "n": 3, "none": null}),
            ),
            80,
            false,
        );
        assert_eq!(
            q.lines,
            vec!["  1 │ files: run", "  with code: \"a\\nb\"", "  with n: 3"]
        );
    }

    #[test]
    fn another_agents_question_shows_its_whole_title_and_its_options() {
        let option = |id: &str, name: &str, kind| RelayedOption {
            id: id.into(),
            name: name.into(),
            kind,
        };
        let mut request = RelayedPermission {
            tool_call_id: "call_1".into(),
            title: "helper: bash: ls".into(),
            options: vec![
                option("ok", "Allow", OptionKind::AllowOnce),
                option("no", "Reject\x1b[8m", OptionKind::RejectOnce),
            ],
        };
        assert_eq!(
            relayed_question(&request, 80, false),
            Question {
                lines: vec![],
                prompt: "Allow helper: bash: ls?  [1] Allow  [2] Reject^[[8m".into(),
            }
        );
        request.title = "helper: bash: echo ok\n\x1b]0;title\x07rm -rf ~".into();
        assert_eq!(
            relayed_question(&request, 80, false).lines,
            vec!["  1 │ helper: bash: echo ok", "  2 │ ^[]0;title^Grm -rf ~"]
        );
    }
}

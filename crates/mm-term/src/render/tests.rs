//! Snapshots of what the terminal shows for every event, plain and coloured, in both layouts
//! (render.rs), and of the lines it builds with it: the banner, Markdown, the permission
//! question. Pure: `cargo test -p mm-term` runs them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::time::Duration;

use crate::banner::{self, Banner};
use crate::engine::Recap;
use crate::markdown::MarkdownStream;
use crate::numbers;
use crate::permission;
use crate::render::{self, Layout, Out, Renderer, Target, TurnSummary};
use mm_core::event::{
    CompactOutcome, ContextUsage, Event, FileDiff, PermissionMode, Plan, PlanStatus, PlanStep,
    ToolCallEnd, ToolCallStart, ToolKind, ToolStatus, Usage,
};
use pretty_assertions::assert_eq;
use serde_json::json;

/// The pieces as one text: each piece tagged with its stream, escapes made visible.
fn show(pieces: &[Out]) -> String {
    let mut s = String::new();
    for piece in pieces {
        let tag = match piece.target {
            Target::Stdout => "[out]",
            Target::Stderr => "[err]",
        };
        s.push_str(tag);
        s.push_str(&piece.text.replace('\x1b', "⎋"));
    }
    s
}

/// The pieces as one text, tagged where the stream changes (adjacent pieces of one stream are
/// one text on the screen).
fn merged(pieces: &[Out]) -> String {
    let mut s = String::new();
    let mut last = None;
    for piece in pieces {
        if last != Some(piece.target) {
            s.push_str(match piece.target {
                Target::Stdout => "[out]",
                Target::Stderr => "[err]",
            });
            last = Some(piece.target);
        }
        s.push_str(&piece.text.replace('\x1b', "⎋"));
    }
    s
}

/// The events through a renderer, merged.
fn run_merged(layout: Layout, color: bool, events: &[Event]) -> String {
    let mut r = Renderer::new(layout, color);
    let mut pieces = Vec::new();
    for e in events {
        pieces.extend(r.event(e));
    }
    pieces.extend(r.finish());
    merged(&pieces)
}

fn run(layout: Layout, color: bool, events: &[Event]) -> String {
    let mut r = Renderer::new(layout, color);
    let mut pieces = Vec::new();
    for e in events {
        pieces.extend(r.event(e));
    }
    pieces.extend(r.finish());
    show(&pieces)
}

/// A permission request for `call`, with no change to show.
fn asked(call: ToolCallStart) -> mm_core::event::PermissionRequest {
    mm_core::event::PermissionRequest {
        call,
        preview: vec![],
        rule: mm_core::event::AlwaysRule::Tool,
    }
}

fn bash(id: &str, command: &str) -> ToolCallStart {
    ToolCallStart {
        id: id.into(),
        name: "bash".into(),
        title: format!("bash: {command}"),
        kind: ToolKind::Execute,
        raw_input: json!({ "command": command }),
        locations: vec![],
    }
}

fn finished(id: &str, status: ToolStatus, output: &str) -> Event {
    Event::ToolCallFinished(ToolCallEnd {
        id: id.into(),
        status,
        output: output.into(),
        diffs: vec![],
        title: None,
    })
}

/// A turn with every kind of event.
fn every_event() -> Vec<Event> {
    vec![
        Event::Thought("The user wants files.".into()),
        Event::Text("Let me **look** at the `src` folder.".into()),
        Event::ToolCallStarted(bash("call_1", "ls src")),
        Event::ToolCallRunning {
            id: "call_1".into(),
        },
        finished(
            "call_1",
            ToolStatus::Completed,
            "a.rs\nb.rs\nc.rs\nd.rs\ne.rs\nf.rs\n",
        ),
        Event::ToolCallStarted(ToolCallStart {
            id: "call_2".into(),
            name: "edit_file".into(),
            title: "edit_file: src/a.rs".into(),
            kind: ToolKind::Edit,
            raw_input: json!({}),
            locations: vec![PathBuf::from("/p/src/a.rs")],
        }),
        Event::ToolCallFinished(ToolCallEnd {
            id: "call_2".into(),
            status: ToolStatus::Completed,
            output: "edited".into(),
            diffs: vec![FileDiff {
                path: PathBuf::from("/p/src/a.rs"),
                old_text: Some("fn a() {\n    1\n}\n".into()),
                new_text: "fn a() {\n    2\n}\n".into(),
            }],
            title: None,
        }),
        Event::ToolCallStarted(bash("call_3", "rm -rf /")),
        Event::ToolCallFinished(ToolCallEnd {
            id: "call_3".into(),
            status: ToolStatus::Failed,
            output: "[command rejected by the user]".into(),
            diffs: vec![],
            title: Some("bash — denied by a hook".into()),
        }),
        Event::ToolCallStarted(ToolCallStart {
            id: "call_4".into(),
            name: "ask_agent".into(),
            title: "ask_agent: claude".into(),
            kind: ToolKind::Other,
            raw_input: json!({}),
            locations: vec![],
        }),
        Event::ToolCallProgress {
            id: "call_4".into(),
            text: "read_file: Cargo.toml".into(),
        },
        finished("call_4", ToolStatus::Completed, "It is a Rust crate."),
        Event::ContextUsage(ContextUsage {
            used: 7_500,
            size: 32_768,
        }),
        Event::Plan(Plan {
            title: "Fix the build".into(),
            steps: vec![
                PlanStep {
                    content: "read the error".into(),
                    status: PlanStatus::Completed,
                    note: None,
                },
                PlanStep {
                    content: "edit the file".into(),
                    status: PlanStatus::InProgress,
                    note: Some("src/a.rs".into()),
                },
                PlanStep {
                    content: "run the tests".into(),
                    status: PlanStatus::Pending,
                    note: None,
                },
                PlanStep {
                    content: "celebrate".into(),
                    status: PlanStatus::Skipped,
                    note: None,
                },
            ],
        }),
        Event::Attached(PathBuf::from("/p/README.md")),
        Event::AutoCompacted(CompactOutcome::Compressed {
            replaced: 12,
            kept: 4,
            before: 5230,
            after: 1410,
            secs: 3.2,
        }),
        Event::Warning("cannot write /p/.mm/sessions/x.json: permission denied".into()),
        Event::ModelDetected {
            name: "qwen2.5-coder:7b".into(),
            url: "http://127.0.0.1:11434/v1".into(),
            context_window: Some(4096),
        },
        Event::Text("Done: the build".into()),
        Event::Text(" passes.".into()),
        Event::Notice("[stopped: 50 model calls in this turn, the maxSteps limit]".into()),
    ]
}

#[test]
fn every_event_interactive_plain() {
    insta::assert_snapshot!(run(Layout::Interactive, false, &every_event()));
}

#[test]
fn every_event_interactive_colour() {
    insta::assert_snapshot!(run(Layout::Interactive, true, &every_event()));
}

#[test]
fn every_event_one_shot_plain() {
    insta::assert_snapshot!(run(Layout::OneShot, false, &every_event()));
}

#[test]
fn every_event_one_shot_colour() {
    insta::assert_snapshot!(run(Layout::OneShot, true, &every_event()));
}

#[test]
fn one_shot_stdout_is_exactly_the_answer() {
    let mut r = Renderer::new(Layout::OneShot, true);
    let mut stdout = String::new();
    for e in every_event() {
        for piece in r.event(&e) {
            if piece.target == Target::Stdout {
                stdout.push_str(&piece.text);
            }
        }
    }
    for piece in r.finish() {
        if piece.target == Target::Stdout {
            stdout.push_str(&piece.text);
        }
    }
    // The answer alone (the text before a call was narration), its last line ending with a
    // newline.
    assert_eq!(stdout, "Done: the build passes.\n");
}

#[test]
fn a_running_command_shows_the_last_lines_of_each_report() {
    let report: String = (1..=10).map(|i| format!("line {i}\n")).collect();
    let shown = run(
        Layout::Interactive,
        false,
        &[
            Event::ToolCallStarted(bash("call_1", "make")),
            Event::ToolCallProgress {
                id: "call_1".into(),
                text: report,
            },
            Event::ToolCallProgress {
                id: "call_1".into(),
                text: "line 11".into(),
            },
            Event::Titled("make".into()),
        ],
    );
    assert_eq!(
        shown,
        "[out]$ bash: make\n[out]  │ line 7\n  │ line 8\n  │ line 9\n  │ line 10\n[out]  │ line 11\n"
    );
}

#[test]
fn new_file_diff_and_long_diff() {
    let diff = FileDiff {
        path: PathBuf::from("/p/new.txt"),
        old_text: None,
        new_text: (1..=45).map(|i| format!("line {i}\n")).collect(),
    };
    insta::assert_snapshot!(render::diff_lines(&diff, false).join("\n"));
}

#[test]
fn a_result_shows_its_tail_and_counts_what_is_above() {
    assert_eq!(
        render::tail("a\nb\nc\nd\ne\n"),
        vec!["… 1 earlier line", "b", "c", "d", "e"]
    );
    let seq: String = (1..=4000).map(|i| format!("{i}\n")).collect();
    assert_eq!(
        render::tail(&seq),
        vec!["… 3996 earlier lines", "3997", "3998", "3999", "4000"]
    );
    // Cut by the tool in the middle: its marker says how many line breaks it cut, so the
    // count is still exact ("2" and "7" were one line when the cut held no line break).
    assert_eq!(
        render::tail("1\n2\n[… 900 characters omitted …]\n7\n8\n9\n10\n"),
        vec!["… 1 earlier line", "7", "8", "9", "10"]
    );
    assert_eq!(
        // A cut at the start of a line: lines 3 to 182 are the 180 line breaks it cut.
        render::tail("1\n2\n\n[… 900 characters, 180 lines omitted …]\n183\n184\n185\n186\n"),
        vec!["… 182 earlier lines", "183", "184", "185", "186"]
    );
    // As the tools cut it: 4000 lines and one more for the exit code.
    let cut = crate::engine::cut::cap_output(&format!("{seq}[exit code: 4]"), 1000);
    assert_eq!(
        render::tail(&cut),
        vec![
            "… 3997 earlier lines",
            "3998",
            "3999",
            "4000",
            "[exit code: 4]"
        ]
    );
    assert_eq!(render::tail("\n  \n"), Vec::<String>::new());
    // A tool's escapes are shown, never acted on (its colours included).
    assert_eq!(
        render::tail("\x1b[31mred\x1b[0m\tx\r"),
        vec!["^[[31mred^[[0m    x"]
    );
}

/// A failed call shows as failed: the mark and the reason (the output's first line) first,
/// never folded away; the context after it, its last lines.
#[test]
fn a_failed_call_shows_its_mark_and_reason_first() {
    let output = "old_text does not match a.txt; the closest lines are:\n1: fn a() {\n2:     1\n3: }\n4: \n5: fn b() {}\n6: // end";
    let shown = run(
        Layout::Interactive,
        false,
        &[
            Event::ToolCallStarted(bash("call_1", "edit")),
            finished("call_1", ToolStatus::Failed, output),
        ],
    );
    assert_eq!(
        shown,
        "[out]$ bash: edit\n[out]  ✗ old_text does not match a.txt; the closest lines are:\n  … 2 earlier lines\n  3: }\n  4: \n  5: fn b() {}\n  6: // end\n"
    );
}

#[test]
fn tool_icons_per_kind() {
    let line = |kind, title: &str| {
        render::tool_line(
            &ToolCallStart {
                id: "c".into(),
                name: "t".into(),
                title: title.into(),
                kind,
                raw_input: json!({}),
                locations: vec![],
            },
            false,
        )
    };
    assert_eq!(line(ToolKind::Execute, "bash: ls"), "$ bash: ls");
    assert_eq!(line(ToolKind::Read, "read_file: a"), "📄 read_file: a");
    assert_eq!(line(ToolKind::Edit, "edit_file: a"), "✏️ edit_file: a");
    assert_eq!(
        line(ToolKind::Fetch, "fetch_content: u"),
        "🌐 fetch_content: u"
    );
    assert_eq!(line(ToolKind::Think, "plan create"), "💭 plan create");
    assert_eq!(line(ToolKind::Other, "ask_user"), "• ask_user");
    assert_eq!(
        line(ToolKind::Execute, "bash: for f in *; do\n  echo $f\ndone"),
        "$ bash: for f in *; do …"
    );
}

#[test]
fn permission_prompt_is_exact() {
    assert_eq!(
        permission::question(&asked(bash("call_1", "rm -rf build")), 80, false).prompt,
        "Allow bash: rm -rf build?  [y]es  [a]lways for bash this session  [n]o  [t]ell why  ne[v]er"
    );
}

#[test]
fn recap_lines() {
    let summary = TurnSummary {
        recap: Some(Recap::of(2, 1, 1)),
        usage: Usage {
            input_tokens: 12_345,
            output_tokens: 340,
            thought_tokens: None,
            cached_read_tokens: Some(9_876),
        },
        context: Some(ContextUsage {
            used: 7_537,
            size: 32_768,
        }),
        elapsed: Duration::from_millis(4_240),
        mode: Some(PermissionMode::ReadOnly),
    };
    assert_eq!(
        render::recap_line(&summary, false),
        "12k in / 340 out · 80% cached · ctx 23% of 32k · 4.2s · 📖 1 skill(s) · mode read-only"
    );
    let mut refused = Recap::of(1, 0, 0);
    refused.set_refused(2);
    let blocked = TurnSummary {
        recap: Some(refused),
        mode: None,
        ..summary
    };
    assert_eq!(
        render::recap_line(&blocked, false),
        "12k in / 340 out · 80% cached · ctx 23% of 32k · 4.2s · ⛔ 2 host(s) refused (tools.networkAllow)"
    );
    let bare = TurnSummary {
        recap: Some(Recap::default()),
        usage: Usage::default(),
        context: Some(ContextUsage {
            used: 1_200,
            size: 0,
        }),
        elapsed: Duration::from_millis(50),
        mode: None,
    };
    assert_eq!(
        render::recap_line(&bare, false),
        "ctx 1.2k of unknown · 0.1s"
    );
    assert_eq!(
        render::recap_line(&bare, true),
        "\x1b[2mctx 1.2k of unknown · 0.1s\x1b[0m"
    );
}

#[test]
fn counts_and_windows() {
    assert_eq!(numbers::count(999), "999");
    assert_eq!(numbers::count(1_234), "1.2k");
    assert_eq!(numbers::count(123_456), "123k");
    assert_eq!(numbers::count(1_500_000), "1.5M");
    assert_eq!(numbers::window(32_768), "32k");
    assert_eq!(numbers::window(131_072), "128k");
    assert_eq!(numbers::window(8_000), "8.0k");
}

fn markdown(chunks: &[&str]) -> String {
    let mut md = MarkdownStream::new(true, true);
    let mut out = String::new();
    for c in chunks {
        out.push_str(&md.push(c));
    }
    out.push_str(&md.finish());
    out.replace('\x1b', "⎋")
}

const DOC: &str = "# Title\n\nSome *emphasis*, **bold** and `code`; 2 * 3 = 6.\n\n## Steps\n\n- first\n* second\n  1. nested\n> quoted\n\n---\n```rust\nfn main() {\n    let x = \"hi\"; // greet\n    println!(\"{x}\", 42);\n}\n```\n```\nplain\n```\nend";

#[test]
fn markdown_whole() {
    insta::assert_snapshot!(markdown(&[DOC]));
}

#[test]
fn markdown_streamed_by_character_is_the_same() {
    let chars: Vec<String> = DOC.chars().map(String::from).collect();
    let refs: Vec<&str> = chars.iter().map(String::as_str).collect();
    assert_eq!(markdown(&refs), markdown(&[DOC]));
}

#[test]
fn markdown_plain_is_untouched() {
    let mut md = MarkdownStream::new(false, false);
    assert_eq!(md.push(DOC), DOC);
    assert_eq!(md.finish(), "");
}

#[test]
fn markdown_streams_paragraph_text_at_once() {
    let mut md = MarkdownStream::new(true, true);
    assert_eq!(md.push("Hello wor"), "Hello wor");
    assert_eq!(md.push("ld"), "ld");
}

fn full_banner() -> Banner {
    Banner {
        version: "v0.1.0".into(),
        url: "http://127.0.0.1:8080/v1".into(),
        model: String::new(),
        sessions: true,
        mode: PermissionMode::Ask,
        skills: 3,
        hooks: vec![("preToolCall".into(), 1)],
        mcp_servers: vec!["fs".into(), "git".into()],
        agents: vec!["claude".into()],
        sandbox: Some("workspace-write".into()),
        warnings: vec![
            "unknown key \"modle\" in /home/u/.config/mm/config.toml".into(),
            "skill \"compact\" is not advertised: the /compact command shadows it; use $compact"
                .into(),
        ],
    }
}

#[test]
fn banner_plain() {
    insta::assert_snapshot!(banner::banner_lines(&full_banner(), false).join("\n"));
}

#[test]
fn banner_colour() {
    insta::assert_snapshot!(
        banner::banner_lines(&full_banner(), true)
            .join("\n")
            .replace('\x1b', "⎋")
    );
}

#[test]
fn banner_minimal_detecting() {
    let b = Banner {
        version: "v0.1.0".into(),
        skills: 1,
        ..Banner::default()
    };
    assert_eq!(
        banner::banner_lines(&b, false),
        vec![
            "mm v0.1.0",
            "detecting the model server…",
            "sessions off · mode yolo · 1 skill · 0 hooks"
        ]
    );
}

#[test]
fn banner_from_config() {
    let config = mm_core::config::Config::default();
    let b = Banner::new(&config, &mm_core::skills::Catalogue::default());
    assert_eq!(b.version, mm_core::VERSION);
    assert_eq!(b.mode, PermissionMode::Yolo);
    // Sessions are kept by default.
    assert!(b.sessions);
}

#[test]
fn model_line_once_detection_completes() {
    assert_eq!(
        banner::model_line(
            "qwen",
            "http://127.0.0.1:8080/v1",
            Some(32_768),
            None,
            false
        ),
        "model qwen at http://127.0.0.1:8080/v1 · context window 32k"
    );
    assert_eq!(
        banner::model_line("qwen", "http://127.0.0.1:8080/v1", None, None, false),
        "model qwen at http://127.0.0.1:8080/v1 · context window unknown"
    );
    // The banner named this model at this server already (MM_MODEL and a URL): only the window.
    let named = ("qwen".to_string(), "http://127.0.0.1:8080/v1/".to_string());
    assert_eq!(
        banner::model_line(
            "qwen",
            "http://127.0.0.1:8080/v1",
            Some(8192),
            Some(&named),
            false
        ),
        "context window 8k"
    );
    assert_eq!(
        banner::model_line(
            "other",
            "http://127.0.0.1:8080/v1",
            Some(8192),
            Some(&named),
            false
        ),
        "model other at http://127.0.0.1:8080/v1 · context window 8k"
    );
    // It named the server only (the demo): the server is not named twice.
    let server = (String::new(), "http://127.0.0.1:8080/v1".to_string());
    assert_eq!(
        banner::model_line(
            "qwen",
            "http://127.0.0.1:8080/v1",
            Some(8192),
            Some(&server),
            false
        ),
        "model qwen · context window 8k"
    );
    assert_eq!(
        banner::hint_line(false),
        "/help for commands · Ctrl-D to leave"
    );
}

#[test]
fn a_small_window_is_a_warning_only_once_half_of_it_is_used() {
    use crate::engine::ServerKind;
    let ctx = |used, size| ContextUsage { used, size };
    assert_eq!(
        banner::small_window_warning(ctx(1500, 4096), ServerKind::Ollama, false),
        None
    );
    assert_eq!(
        banner::small_window_warning(ctx(2100, 4096), ServerKind::Ollama, false).as_deref(),
        Some(
            "warning: context window 4096 tokens is small for an agent: start Ollama with `OLLAMA_CONTEXT_LENGTH=32768 ollama serve` (or set `num_ctx` in a Modelfile)"
        )
    );
    // A large window, or an unknown one, is no trouble.
    assert_eq!(
        banner::small_window_warning(ctx(30_000, 32_768), ServerKind::Ollama, false),
        None
    );
    assert_eq!(
        banner::small_window_warning(ctx(3000, 0), ServerKind::Ollama, false),
        None
    );
}

/// Text through a renderer `width` columns wide.
fn wrapped(layout: Layout, width: usize, events: &[Event]) -> String {
    let mut r = Renderer::new(layout, false);
    r.set_width(Some(width));
    let mut pieces = Vec::new();
    for e in events {
        pieces.extend(r.event(e));
    }
    pieces.extend(r.finish());
    merged(&pieces)
}

#[test]
fn long_text_wraps_at_word_boundaries() {
    let answer = "The build failed because the linker could not find libssl; \
                  install it with apt-get install libssl-dev and run it again.";
    let pieces: Vec<Event> = answer
        .split_inclusive(' ')
        .map(|w| Event::Text(w.to_string()))
        .collect();
    assert_eq!(
        wrapped(Layout::Interactive, 30, &pieces),
        "[out]The build failed because the\n\
         linker could not find libssl;\n\
         install it with apt-get\n\
         install libssl-dev and run it\n\
         again.\n"
    );
    // Only a word longer than the line is cut.
    assert_eq!(
        wrapped(
            Layout::Interactive,
            20,
            &[Event::Text(
                "see https://example.com/a/very/long/path now".into()
            )]
        ),
        "[out]see\nhttps://example.com/\na/very/long/path now\n"
    );
}

#[test]
fn thoughts_are_marked_without_colour_and_wrap_under_their_bar() {
    assert_eq!(
        run_merged(
            Layout::Interactive,
            false,
            &[
                Event::Thought("The user wants".into()),
                Event::Thought(" files.\nList them.".into()),
                Event::Text("Here they are.".into()),
            ]
        ),
        "[out]│ The user wants files.\n│ List them.\nHere they are.\n"
    );
    assert_eq!(
        wrapped(
            Layout::Interactive,
            20,
            &[Event::Thought("one two three four five six".into())]
        ),
        "[out]│ one two three four\n│ five six\n"
    );
    // In one-shot mode they are activity: on stderr, marked too.
    assert_eq!(
        run_merged(
            Layout::OneShot,
            false,
            &[Event::Thought("hmm".into()), Event::Text("ok".into())]
        ),
        "[err]│ hmm\n[out]ok\n"
    );
}

#[test]
fn one_shot_stdout_ends_with_a_newline() {
    assert_eq!(
        run_merged(Layout::OneShot, false, &[Event::Text("42".into())]),
        "[out]42\n"
    );
    assert_eq!(
        run_merged(Layout::OneShot, false, &[Event::Text("42\n".into())]),
        "[out]42\n"
    );
}

#[test]
fn the_loop_stop_is_shown_once() {
    let line = "[stopped: the model kept calling bash with the same arguments]";
    assert_eq!(
        run_merged(
            Layout::Interactive,
            false,
            &[
                Event::ToolCallStarted(bash("call_3", "ls")),
                finished("call_3", ToolStatus::Failed, line),
                Event::Notice(line.into()),
            ]
        ),
        format!("[out]$ bash: ls\n  ✗ {line}\n")
    );
}

#[test]
fn the_proposed_change_is_shown_before_the_question_and_not_again_after() {
    let diff = FileDiff {
        path: PathBuf::from("/p/out.txt"),
        old_text: None,
        new_text: (1..=25).map(|i| format!("line {i}\n")).collect(),
    };
    let shown = render::proposed_lines(std::slice::from_ref(&diff), false);
    assert_eq!(shown[0], "  new file /p/out.txt");
    assert_eq!(shown[2], "  +line 1");
    assert_eq!(shown.last().map(String::as_str), Some("  … 6 more lines"));
    assert_eq!(shown.len(), 1 + render::PROPOSED_LINES + 1);

    let start = ToolCallStart {
        id: "call_1".into(),
        name: "write_file".into(),
        title: "write_file: out.txt".into(),
        kind: ToolKind::Edit,
        raw_input: json!({}),
        locations: vec![],
    };
    assert_eq!(
        permission::question(&asked(start.clone()), 80, false).prompt,
        "Allow write_file: out.txt?  [y]es  [a]lways for write_file this session  [n]o  [t]ell why  ne[v]er"
    );
    let mut r = Renderer::new(Layout::Interactive, false);
    r.event(&Event::ToolCallStarted(start));
    r.previewed("call_1", vec![diff.clone()]);
    let after = r.event(&Event::ToolCallFinished(ToolCallEnd {
        id: "call_1".into(),
        status: ToolStatus::Completed,
        output: "wrote 200 bytes to out.txt".into(),
        diffs: vec![diff],
        title: None,
    }));
    assert_eq!(merged(&after), "[out]  wrote 200 bytes to out.txt\n");
}

/// What a hostile model, tool or server slips into its text: OSC 52 (writes the clipboard),
/// erase-the-line-and-return, OSC 0 (the window's title), RLO (reverses what follows) and the
/// one-byte CSI.
const INJECTED: &str = "a\x1b]52;c;SGVsbG8=\x07b\x1b[2K\rc\x1b]0;title\x07d\u{202e}e\u{9b}2Jf";
/// The same, as the terminal must show it.
const SHOWN: &str = "a^[]52;c;SGVsbG8=^Gb^[[2K^Mc^[]0;title^Gd<U+202E>e<U+009B>2Jf";

/// The text without mm's own styling (SGR sequences: `ESC [ digits ; … m`).
fn without_sgr(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("\x1b[") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let params = after
            .find(|c: char| !(c.is_ascii_digit() || c == ';'))
            .unwrap_or(after.len());
        if after[params..].starts_with('m') {
            rest = &after[params + 1..];
        } else {
            out.push_str("\x1b[");
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// Nothing in `text` acts on the terminal but mm's own styling, and the injection shows.
fn assert_shown_visibly(text: &str, what: &str) {
    let bare = without_sgr(text);
    for raw in ['\x1b', '\x07', '\r', '\u{202e}', '\u{9b}'] {
        assert!(
            !bare.contains(raw),
            "{what}: {raw:?} reached the terminal in {text:?}"
        );
    }
    assert!(
        bare.contains(SHOWN),
        "{what}: not shown visibly in {bare:?}"
    );
}

#[test]
fn text_from_outside_is_shown_visibly_in_every_event() {
    let hostile_diff = FileDiff {
        path: PathBuf::from(format!("/p/{INJECTED}")),
        old_text: Some(format!("{INJECTED}\n")),
        new_text: format!("x{INJECTED}\n"),
    };
    let events = vec![
        ("text", vec![Event::Text(INJECTED.into())]),
        ("thought", vec![Event::Thought(INJECTED.into())]),
        ("notice", vec![Event::Notice(INJECTED.into())]),
        ("warning", vec![Event::Warning(INJECTED.into())]),
        (
            "tool title",
            vec![Event::ToolCallStarted(bash("call_1", INJECTED))],
        ),
        (
            "tool progress",
            vec![Event::ToolCallProgress {
                id: "call_1".into(),
                text: INJECTED.into(),
            }],
        ),
        (
            "tool output",
            vec![finished("call_1", ToolStatus::Completed, INJECTED)],
        ),
        (
            "failed tool output",
            vec![finished("call_1", ToolStatus::Failed, INJECTED)],
        ),
        (
            "new title",
            vec![Event::ToolCallFinished(ToolCallEnd {
                id: "call_1".into(),
                status: ToolStatus::Completed,
                output: String::new(),
                diffs: vec![],
                title: Some(INJECTED.into()),
            })],
        ),
        (
            "diff",
            vec![Event::ToolCallFinished(ToolCallEnd {
                id: "call_1".into(),
                status: ToolStatus::Completed,
                output: String::new(),
                diffs: vec![hostile_diff],
                title: None,
            })],
        ),
        (
            "plan",
            vec![Event::Plan(Plan {
                title: INJECTED.into(),
                steps: vec![PlanStep {
                    content: INJECTED.into(),
                    status: PlanStatus::InProgress,
                    note: Some(INJECTED.into()),
                }],
            })],
        ),
        (
            "model line",
            vec![Event::ModelDetected {
                name: INJECTED.into(),
                url: INJECTED.into(),
                context_window: Some(32768),
            }],
        ),
        (
            "compaction",
            vec![Event::AutoCompacted(CompactOutcome::Failed(
                INJECTED.into(),
            ))],
        ),
        ("attached", vec![Event::Attached(PathBuf::from(INJECTED))]),
    ];
    for (what, events) in events {
        for layout in [Layout::Interactive, Layout::OneShot] {
            for color in [false, true] {
                let mut r = Renderer::new(layout, color);
                let mut text = String::new();
                for e in &events {
                    text.extend(r.event(e).into_iter().map(|p| p.text));
                }
                text.extend(r.finish().into_iter().map(|p| p.text));
                assert_shown_visibly(&text, &format!("{what} ({layout:?}, colour {color})"));
            }
        }
    }
    // Every field of the plan: its title, the step and the step's note.
    let plan = plan_lines_of(INJECTED).join("\n");
    assert_eq!(plan.matches(SHOWN).count(), 3, "{plan}");
}

fn plan_lines_of(text: &str) -> Vec<String> {
    render::plan_lines(
        &Plan {
            title: text.into(),
            steps: vec![PlanStep {
                content: text.into(),
                status: PlanStatus::Pending,
                note: Some(text.into()),
            }],
        },
        true,
    )
}

#[test]
fn a_streamed_answer_split_inside_a_sequence_is_shown_the_same() {
    // The Markdown renderer never joins two pieces back into a sequence.
    for color in [false, true] {
        let mut r = Renderer::new(Layout::Interactive, color);
        let mut text = String::new();
        for c in INJECTED.chars() {
            text.extend(
                r.event(&Event::Text(c.to_string()))
                    .into_iter()
                    .map(|p| p.text),
            );
        }
        text.extend(r.finish().into_iter().map(|p| p.text));
        assert_shown_visibly(&text, &format!("by character, colour {color}"));
    }
}

#[test]
fn the_answer_is_byte_for_byte_when_stdout_is_not_a_terminal() {
    let mut r = Renderer::new(Layout::OneShot, true).raw_answer(true);
    let mut pieces = r.event(&Event::Thought(INJECTED.into()));
    pieces.extend(r.event(&Event::Text(INJECTED.into())));
    pieces.extend(r.event(&Event::Notice(INJECTED.into())));
    pieces.extend(r.finish());
    let of = |target| -> String {
        pieces
            .iter()
            .filter(|p| p.target == target)
            .map(|p| p.text.as_str())
            .collect()
    };
    assert_eq!(of(Target::Stdout), format!("{INJECTED}\n"));
    // Activity on stderr is shown visibly all the same.
    assert_shown_visibly(&of(Target::Stderr), "stderr");
}

#[test]
fn the_banner_shows_names_from_outside_visibly() {
    let b = Banner {
        version: "v0.1.0".into(),
        url: format!("http://h/{INJECTED}"),
        model: INJECTED.into(),
        mcp_servers: vec![INJECTED.into()],
        agents: vec![INJECTED.into()],
        warnings: vec![INJECTED.into()],
        ..Banner::default()
    };
    for color in [false, true] {
        let text = banner::banner_lines(&b, color).join("\n");
        assert_shown_visibly(&text, "banner");
        assert_eq!(without_sgr(&text).matches(SHOWN).count(), 5, "{text}");
    }
}

#[test]
fn the_status_line_says_what_runs_for_how_long_and_how_to_stop_it() {
    use std::time::Duration;
    let line = |what: &str, secs: u64, tokens: u64, width: usize| {
        render::status_line(
            "⠋",
            what,
            Duration::from_millis(secs * 1000 + 700),
            tokens,
            width,
            false,
        )
    };
    assert_eq!(
        line("thinking", 0, 0, 120),
        "⠋ thinking · 0s · esc to interrupt"
    );
    assert_eq!(
        line("sleep 30", 12, 1234, 120),
        "⠋ sleep 30 · 12s · 1.2k tokens · esc to interrupt"
    );
    // Never wider than the window: what runs is cut first (and at 80 characters, as titles are).
    let long =
        "cargo test --workspace --all-targets -- --nocapture --test-threads=1 and more words";
    let at_120 = line(long, 3, 40, 120);
    assert_eq!(
        at_120,
        "⠋ cargo test --workspace --all-targets -- --nocapture --test-threads=1 and more wo… · 3s · 40 tokens · esc to interrupt"
    );
    let at_60 = line(long, 3, 40, 60);
    assert_eq!(
        at_60,
        "⠋ cargo test --workspa… · 3s · 40 tokens · esc to interrupt"
    );
    assert!(at_60.chars().count() < 60, "{at_60}");
}

#[test]
fn prose_lines_wrap_at_word_boundaries() {
    let recap =
        "1.2k in / 340 out · 80% cached · ctx 23% of 32k · 4.2s · mode yolo · 📖 1 skill(s)";
    assert_eq!(
        render::wrap_lines(vec![recap.to_string()], Some(60)),
        vec![
            "1.2k in / 340 out · 80% cached · ctx 23% of 32k · 4.2s ·",
            "mode yolo · 📖 1 skill(s)"
        ]
    );
    assert_eq!(
        render::wrap_lines(vec![recap.to_string()], Some(120)),
        vec![recap]
    );
    assert_eq!(
        render::wrap_lines(vec![recap.to_string()], None),
        vec![recap]
    );
}

#[test]
fn the_status_line_has_the_type_ahead_under_it_and_the_cursor_stays_on_its_row() {
    assert_eq!(
        render::status_rows("⠋ thinking · 0s", "", 60),
        "\r⠋ thinking · 0s\x1b[K"
    );
    assert_eq!(
        render::status_rows("⠋ thinking · 0s", "git log", 60),
        "\r⠋ thinking · 0s\x1b[K\n\r> git log\x1b[K\x1b[1A\r"
    );
    // Longer than the row: its end, where the typing is.
    let typed = format!("{}end", "x".repeat(40));
    assert_eq!(
        render::status_rows("s", &typed, 20),
        format!("\rs\x1b[K\n\r> …{}end\x1b[K\x1b[1A\r", "x".repeat(13))
    );
    // What came from the keyboard is shown, never acted on.
    assert_eq!(
        render::status_rows("s", "a\x1b[2Jb", 60),
        "\rs\x1b[K\n\r> a^[[2Jb\x1b[K\x1b[1A\r"
    );
}

#[test]
fn live_output_is_a_box_of_the_last_lines_redrawn_in_place() {
    let mut live = render::LiveOutput::default();
    assert!(!live.drawn());
    assert_eq!(live.erase(80), "");
    assert_eq!(
        live.push("c1", "one\ntwo\n", 80, false),
        "  │ one\n  │ two\n"
    );
    assert!(live.drawn());
    // Up the two rows drawn, erase to the end of the screen, draw the last four.
    assert_eq!(
        live.push("c1", "three\nfour\nfive\n", 80, false),
        "\x1b[2A\r\x1b[J  │ two\n  │ three\n  │ four\n  │ five\n"
    );
    // Erased for other output, drawn again whole at the next.
    assert_eq!(live.erase(80), "\x1b[4A\r\x1b[J");
    assert_eq!(live.erase(80), "");
    assert_eq!(
        live.push("c1", "six\n", 80, false),
        "  │ three\n  │ four\n  │ five\n  │ six\n"
    );
    // One row each, cut to the window with `…`, tabs as spaces, escapes shown visibly.
    assert_eq!(
        live.push(
            "c1",
            &format!("{}\n\tx\x1b[2J\n", "y".repeat(30)),
            20,
            false
        ),
        format!(
            "\x1b[4A\r\x1b[J  │ five\n  │ six\n  │ {}…\n  │     x^[[2J\n",
            "y".repeat(14)
        )
    );
    // Another call's output starts a box of its own; the end erases it and forgets it.
    assert_eq!(
        live.push("c2", "other\n", 80, false),
        "\x1b[4A\r\x1b[J  │ other\n"
    );
    assert_eq!(live.end(80), "\x1b[1A\r\x1b[J");
    assert!(!live.drawn());
    assert_eq!(live.push("c2", "again\n", 80, false), "  │ again\n");
}

/// The window narrows while the box is drawn: a terminal that reflows (tmux, VTE, iTerm2,
/// kitty, Windows Terminal) makes each row wider than the new width two or more, and the erase
/// climbs them all, so no line of the old box stays in the scrollback. Widening joins nothing.
#[test]
fn live_output_erases_the_rows_a_narrower_window_reflowed_it_into() {
    let mut live = render::LiveOutput::default();
    let long = "z".repeat(70);
    // Drawn at 80 columns: `  │ ` + 70 = 74 columns, and a short row of 7.
    assert_eq!(
        live.push("c1", &format!("{long}\nshort\n"), 80, false),
        format!("  │ {long}\n  │ short\n")
    );
    // At 30 columns the long row is three (74 = 30 + 30 + 14), the short one one.
    assert_eq!(live.erase(30), "\x1b[4A\r\x1b[J");
    // Drawn again at 30 columns (cut to fit), then the window widens: one row each.
    let drawn = live.push("c1", "", 30, false);
    assert!(drawn.ends_with("  │ short\n"), "{drawn:?}");
    assert_eq!(live.end(120), "\x1b[2A\r\x1b[J");
    // A width of 0 (a window that reports none) is read as one column, never a division by 0.
    live.push("c1", "a\n", 80, false);
    assert_eq!(live.erase(0), "\x1b[5A\r\x1b[J");
}

#[test]
fn a_wait_for_the_server_is_a_line_in_a_one_shot_run_and_the_status_lines_otherwise() {
    let events = [
        Event::Waiting(mm_core::event::Waiting::Loading {
            model: "qwen3-8b".into(),
        }),
        Event::Text("up".into()),
    ];
    assert_eq!(
        run_merged(Layout::OneShot, false, &events),
        "[err]the model server is loading qwen3-8b\n[out]up\n"
    );
    // The interactive front end draws it in the status line (frontend.rs): nothing printed.
    assert_eq!(run_merged(Layout::Interactive, false, &events), "[out]up\n");
}

/// The status line drawn at 80 columns, the window narrowed: the redraw or the erase first
/// climbs the rows a reflowing terminal made of it (the cursor was after it, on the last).
#[test]
fn the_status_line_climbs_the_rows_a_narrower_window_made_of_it() {
    assert_eq!(render::status_climb(74, 80), "");
    assert_eq!(render::status_climb(74, 30), "\x1b[2A");
    assert_eq!(render::status_climb(60, 30), "\x1b[1A");
    assert_eq!(render::status_climb(74, 120), "");
    // Nothing drawn, or the cursor left at the row's start by the type-ahead's row: no climb.
    assert_eq!(render::status_climb(0, 30), "");
    assert_eq!(render::status_climb(5, 0), "\x1b[4A");
}

//! Property tests of mm's parsers of outside input (the targets of mm-testkit's fuzz.rs, which
//! bench/fuzz.sh also runs for millions of inputs): the ACP line reader, the SSE parser and the
//! stream accumulator, the text tool-call parser, the session-file loader, the configuration
//! loader and skill front matter. Any bytes: no panic, memory bounded (this binary counts every
//! allocation); structured inputs: round trips.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mm_testkit as common;

use std::path::Path;

use common::fuzz::{self, Counting, expected_lines, peak_during, read_lines};
use mm_core::history::{Message, ToolCall};
use mm_core::session::{FileUsage, SessionFile};
use mm_model::RawToolCall;
use mm_model::sse::{SseEvent, SseParser};
use mm_model::text_calls::{TextCallFilter, parse_text_calls};
use proptest::collection::vec;
use proptest::prelude::*;
use serde_json::{Value, json};

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Bytes that look like the target's input more often than random ones would.
fn bytes_with(tokens: &'static [&'static str]) -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        3 => vec(any::<u8>(), 0..8),
        2 => proptest::sample::select(tokens).prop_map(|t| t.as_bytes().to_vec()),
        1 => "[ -~]{0,12}".prop_map(String::into_bytes),
    ];
    vec(piece, 0..64).prop_map(|pieces| pieces.concat())
}

const ACP_TOKENS: &[&str] = &[
    "\n",
    "\r\n",
    "{",
    "}",
    "\"",
    "\"jsonrpc\":\"2.0\"",
    "\"method\":\"initialize\"",
    "\"id\":1",
    "[",
    "]",
    ",",
    "é",
    "\u{feff}",
];
const SSE_TOKENS: &[&str] = &[
    "data: ",
    "data:",
    "\n\n",
    "\n",
    "\r\n",
    ": ping\n",
    "[DONE]",
    "event: x\n",
    r#"{"choices":[{"index":0,"delta":{"content":"hi"}}]}"#,
    r#"{"choices":[{"index":0,"delta":{"reasoning_content":"hm"}}]}"#,
    r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"bash","arguments":"{\"command\":"}}]}}]}"#,
    r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
    r#"{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4}}"#,
    r#"{"error":{"message":"boom"}}"#,
    "<think>",
    "</think>",
    "<tool_call>",
    "```json\n",
];
const TEXT_TOKENS: &[&str] = &[
    "<tool_call>",
    "</tool_call>",
    "<tools>",
    "<function=",
    "<parameter=",
    "</parameter>",
    "<arg_key>",
    "<arg_value>",
    "<|python_tag|>",
    "<|tool_call_start|>",
    "[TOOL_CALLS]",
    "[ARGS]",
    "<｜tool▁calls▁begin｜>",
    "<｜tool▁sep｜>",
    "<|tool_call_begin|>",
    "<|tool_call_argument_begin|>",
    "<|channel|>commentary to=functions.bash<|message|>",
    "<|tool_call>call:",
    "<|\"|>",
    "<|tool_call|>",
    "Action: ```json\n",
    ">>>",
    "functools[",
    "<invoke name=\"bash\">",
    "<|tools_prefix|>",
    "[TOOL_REQUEST]",
    "```",
    "```json\n",
    "{",
    "}",
    "[bash(",
    "\"name\": \"bash\"",
    "\"arguments\": {\"command\": \"ls\"}",
    "\"parameters\":",
    "<",
    "[",
    "`",
    "é",
    "\n",
];
const SESSION_TOKENS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "\"version\": 1",
    "\"id\": \"20260101-000000-abcdef01\"",
    "\"cwd\": \"/x\"",
    "\"createdAt\": \"\"",
    "\"updatedAt\": \"\"",
    "\"model\": \"m\"",
    "\"usage\": {\"inputTokens\": 1, \"outputTokens\": 2, \"totalTokens\": 3}",
    "\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]",
    "\"plan\": null",
    "null",
    "1e999",
];
const CONFIG_TOKENS: &[&str] = &[
    "\n",
    "[model]\n",
    "[acp]\n",
    "[[hooks.preToolCall]]\n",
    "url = \"http://x\"\n",
    "maxSteps = ",
    "yolo = true\n",
    "=",
    "\"",
    "'''",
    "[",
    "]",
    "{",
    "}",
    "0",
    "-1",
    "1e9",
    "inf",
    "nan",
    "[mcp.servers.a]\ncommand = \"x\"\n",
    "timeout = ",
    "contextWindow = ",
    "threshold = 0.5\n",
];
const SKILL_TOKENS: &[&str] = &[
    "---\n",
    "...\n",
    "name: ",
    "description: ",
    "a-skill",
    "\n",
    ": ",
    "&a ",
    "*a",
    "[",
    "]",
    "{",
    "}",
    "- ",
    "|\n  ",
    ">\n  ",
    "!!str ",
    "\"",
    "'",
    "#",
    "\u{feff}",
];

proptest! {
    #![proptest_config(config())]

    #[test]
    fn acp_lines_any_bytes(data in bytes_with(ACP_TOKENS)) {
        fuzz::acp_lines(&data);
    }

    #[test]
    fn acp_lines_read_back_as_written(
        lines in vec("[^\n\r]{0,300}", 0..12),
        cap in 1usize..400,
        chunk in 1usize..80,
        final_newline in any::<bool>(),
    ) {
        let mut input = lines.join("\n");
        if final_newline && !lines.is_empty() {
            input.push('\n');
        }
        let got = read_lines(input.as_bytes(), cap, chunk);
        prop_assert_eq!(&got, &expected_lines(input.as_bytes(), cap));
        for (line, written) in got.iter().zip(&lines) {
            if written.len() <= cap {
                prop_assert_eq!(line, &mm_acp::transport::Line::Whole(written.as_bytes().to_vec()));
            }
        }
    }

    #[test]
    fn sse_any_bytes(data in bytes_with(SSE_TOKENS)) {
        fuzz::sse(&data);
    }

    #[test]
    fn sse_events_read_back_in_any_chunking(
        events in vec("[^\r]{0,40}".prop_filter("not the end", |e| e.trim() != "[DONE]"), 0..10),
        size in 1usize..50,
    ) {
        let mut wire = String::new();
        for e in &events {
            for line in e.split('\n') {
                wire.push_str(&format!("data: {line}\n"));
            }
            wire.push('\n');
        }
        wire.push_str("data: [DONE]\n\n");
        let mut parser = SseParser::new();
        let mut got = Vec::new();
        for piece in wire.as_bytes().chunks(size) {
            got.extend(parser.feed(piece));
        }
        got.extend(parser.finish());
        let mut expected: Vec<SseEvent> = events.into_iter().map(SseEvent::Data).collect();
        expected.push(SseEvent::Done);
        prop_assert_eq!(got, expected);
    }

    #[test]
    fn text_calls_any_bytes(data in bytes_with(TEXT_TOKENS)) {
        fuzz::text_calls(&data);
    }

    #[test]
    fn a_call_written_as_text_reads_back(
        name in "[a-z_]{1,20}".prop_filter("not DeepSeek's type word", |n| n != "function"),
        args in proptest::collection::btree_map("[a-z]{1,8}", "[^\u{0}]{0,20}", 0..4),
        markup_free in proptest::collection::btree_map("[a-z]{1,8}", "[^\u{0}<\r]{0,20}", 0..4),
        size in 1usize..30,
        format in 0usize..11,
    ) {
        // Formats whose values are raw text cannot hold their own tags: those get values
        // without `<`.
        let raw_text = matches!(format, 5 | 6 | 9 | 10);
        let args = if raw_text { json!(markup_free) } else { json!(args) };
        let text = written_as(format, &name, &args);
        let mut filter = TextCallFilter::new();
        let mut shown = String::new();
        let chars: Vec<char> = text.chars().collect();
        for piece in chars.chunks(size) {
            shown.push_str(&filter.push(&piece.iter().collect::<String>()));
        }
        let (pending, held) = filter.finish();
        prop_assert_eq!(format!("{shown}{pending}"), "", "{}", text);
        let (calls, rest) = parse_text_calls(&held, std::slice::from_ref(&name)).expect("a call");
        prop_assert_eq!(rest, "");
        prop_assert_eq!(calls.len(), 1);
        let RawToolCall { name: got, arguments, .. } = &calls[0];
        prop_assert_eq!(got, &name);
        prop_assert_eq!(serde_json::from_str::<Value>(arguments).unwrap(), args);
    }

    #[test]
    fn session_file_any_bytes(data in bytes_with(SESSION_TOKENS)) {
        fuzz::session_file(&data);
    }

    #[test]
    fn a_session_file_reads_back(
        contents in vec(any::<String>(), 0..6),
        calls in vec(("[a-z_]{1,12}", any::<String>()), 0..3),
        tokens in (any::<u32>(), any::<u32>()),
    ) {
        let mut messages = vec![Message::system("sys")];
        for c in &contents {
            messages.push(Message::user(c.clone()));
        }
        let calls: Vec<ToolCall> = calls
            .into_iter()
            .enumerate()
            .map(|(i, (name, arguments))| ToolCall {
                id: format!("id{i}"),
                ref_: format!("call_{i}"),
                name,
                arguments,
            })
            .collect();
        for c in &calls {
            messages.push(Message::assistant("", vec![c.clone()]));
            messages.push(Message::tool(&c.id, "out", false));
        }
        let (i, o) = (u64::from(tokens.0), u64::from(tokens.1));
        let file = SessionFile {
            version: mm_core::session::VERSION,
            id: "20260101-000000-abcdef01".into(),
            cwd: "/work/x".into(),
            created_at: "2026-01-01T00:00:00+00:00".into(),
            updated_at: "2026-01-01T00:00:00+00:00".into(),
            title: Some("a title".into()),
            mode: None,
            model: "m".into(),
            usage: FileUsage { input_tokens: i, output_tokens: o, total_tokens: i + o, ..FileUsage::default() },
            plan: None,
            messages,
            children: Vec::new(),
        };
        let bytes = mm_core::session::encode(&file).unwrap();
        prop_assert_eq!(mm_core::session::parse(Path::new("x.json"), &bytes).unwrap(), file);
    }

    #[test]
    fn config_any_bytes(data in bytes_with(CONFIG_TOKENS)) {
        fuzz::config(&data);
    }

    #[test]
    fn config_values_read_back(
        name in any::<String>(),
        prompt in any::<String>(),
        steps in 1u32..,
        temperature in -1e6f64..1e6,
        max_output in 0u32..,
    ) {
        let text = toml::to_string(&json!({
            "systemPrompt": prompt,
            "maxSteps": steps,
            "model": {"temperature": temperature},
            "acp": {"name": name},
            "tools": {"maxOutput": max_output},
        }))
        .unwrap();
        let c = mm_core::config::from_text(Path::new("x.toml"), &text).unwrap();
        prop_assert_eq!(&c.acp.name, &name);
        prop_assert_eq!(&c.system_prompt, &prompt);
        prop_assert_eq!(c.max_steps, steps);
        prop_assert_eq!(c.model.temperature, Some(temperature));
        prop_assert_eq!(c.tools.max_output, max_output as usize);
        prop_assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    }

    #[test]
    fn skill_any_bytes(data in bytes_with(SKILL_TOKENS)) {
        fuzz::skill(&data);
    }

    #[test]
    fn skill_front_matter_reads_back(
        name in "[a-z0-9]([a-z0-9-]{0,40}[a-z0-9])?",
        description in any::<String>().prop_filter("words", |d| d.split_whitespace().next().is_some()),
        body in any::<String>(),
    ) {
        let mut map = serde_yaml_ng::Mapping::new();
        map.insert("name".into(), name.clone().into());
        map.insert("description".into(), description.clone().into());
        let yaml = serde_yaml_ng::to_string(&map).unwrap();
        let text = format!("---\n{yaml}---\n{body}");
        let skill = mm_core::skills::parse_skill(&text, Path::new("/s"), "dir").unwrap();
        prop_assert_eq!(skill.name, name);
        prop_assert_eq!(skill.description, description.split_whitespace().collect::<Vec<_>>().join(" "));
    }
}

/// One call written in one of the formats mm reads as text.
fn written_as(format: usize, name: &str, args: &Value) -> String {
    let call = json!({"name": name, "arguments": args});
    let map = args.as_object().unwrap();
    let each = |f: &dyn Fn(&str, &str) -> String| -> String {
        map.iter()
            .map(|(k, v)| f(k, v.as_str().unwrap()))
            .collect::<Vec<_>>()
            .join("")
    };
    match format {
        0 => format!("<tool_call>\n{call}\n</tool_call>"),
        1 => format!("[TOOL_CALLS][{call}]"),
        2 => format!("[TOOL_CALLS]{name}[ARGS]{args}"),
        3 => format!(
            "<|tool_calls_section_begin|><|tool_call_begin|>functions.{name}:0<|tool_call_argument_begin|>{args}<|tool_call_end|><|tool_calls_section_end|>"
        ),
        4 => format!(
            "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>{name}<｜tool▁sep｜>{args}<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
        ),
        5 => format!(
            "<tool_call>\n<function={name}>\n{}</function>\n</tool_call>",
            each(&|k, v| format!("<parameter={k}>\n{v}\n</parameter>\n"))
        ),
        6 => format!(
            "<tool_call>{name}\n{}</tool_call>",
            each(&|k, v| format!("<arg_key>{k}</arg_key>\n<arg_value>{v}</arg_value>\n"))
        ),
        7 => {
            let kwargs: Vec<String> = map.iter().map(|(k, v)| format!("{k}={v}")).collect();
            format!(
                "<|tool_call_start|>[{name}({})]<|tool_call_end|>",
                kwargs.join(", ")
            )
        }
        8 => format!(
            "<|channel|>commentary to=functions.{name} <|constrain|>json<|message|>{args}<|call|>"
        ),
        9 => format!(
            "<minimax:tool_call>\n<invoke name=\"{name}\">\n{}</invoke>\n</minimax:tool_call>",
            each(&|k, v| format!("<parameter name=\"{k}\">\n{v}\n</parameter>\n"))
        ),
        _ => format!(
            "<|tool_call>call:{name}{{{}}}<tool_call|>",
            map.iter()
                .map(|(k, v)| format!("{k}:<|\"|>{}<|\"|>", v.as_str().unwrap()))
                .collect::<Vec<_>>()
                .join(",")
        ),
    }
}

// ------------------------------------------------------------------ bounds, one by one

#[test]
fn an_over_cap_line_is_never_held_whatever_its_length() {
    // 4 MB of one line against a 1 KB cap: `read_lines` fails if a read holds more than about
    // twice the cap.
    let mut input = vec![b'x'; 4 * 1024 * 1024];
    input.extend_from_slice(b"\n{\"after\":1}\n");
    let lines = read_lines(&input, 1024, 64 * 1024);
    assert_eq!(lines, expected_lines(&input, 1024));
    assert_eq!(lines.len(), 2);
}

#[test]
fn the_counting_allocator_counts() {
    let (v, peak) = peak_during(|| vec![0u8; 1 << 20]);
    assert!(peak >= 1 << 20, "{peak}");
    drop(v);
    let (_, peak) = peak_during(|| ());
    assert_eq!(peak, 0);
}

#[test]
fn yaml_aliases_do_not_expand_without_end() {
    // "Billion laughs" in a skill's front matter: refused, in bounded memory (fuzz::skill
    // asserts the bound).
    let mut yaml = String::from(
        "---\nname: bomb\na0: &a0 [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
    );
    for i in 1..10 {
        let p = i - 1;
        yaml.push_str(&format!(
            "a{i}: &a{i} [*a{p},*a{p},*a{p},*a{p},*a{p},*a{p},*a{p},*a{p},*a{p}]\n"
        ));
    }
    yaml.push_str("description: x\n---\n");
    fuzz::skill(yaml.as_bytes());
}

#[test]
fn a_short_hook_pattern_that_compiles_huge_is_refused_in_bounded_memory() {
    // With the regex crate's default limits these few bytes took tens of megabytes to compile;
    // fuzz::config asserts the bound, and the pattern is refused with one line.
    for pattern in [r"\\w{200}{200}", r"(\\pL|\\pN){500}", "bash|read_file"] {
        let text = format!("[[hooks.preToolCall]]\ncommand = \"x\"\nmatch = \"{pattern}\"\n");
        fuzz::config(text.as_bytes());
    }
    let text = "[[hooks.preToolCall]]\ncommand = \"x\"\nmatch = \"\\\\w{200}{200}\"\n";
    let err = mm_core::config::from_text(Path::new("x.toml"), text)
        .unwrap_err()
        .to_string();
    assert!(err.contains("is not a valid regular expression"), "{err}");
    assert!(!err.contains('\n'), "{err}");
}

#[test]
fn every_sse_fixture_passes_every_check() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../mm-model/fixtures/sse");
    for entry in std::fs::read_dir(dir).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        fuzz::sse(&bytes);
        fuzz::text_calls(&bytes);
    }
}

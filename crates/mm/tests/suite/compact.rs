//! Compression: the range replaced, the transcript, the summary call and the outcome lines.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mm_testkit as common;

use std::sync::Arc;

use common::{Answer, ScriptedModel};
use mm_core::event::Usage;
use mm_core::history::{Message, Role, ToolCall};
use mm_engine::compact::{
    self, CompactResult, estimate_tokens, plan_compaction, summary_request, transcript,
};
use mm_model::ModelError;
use pretty_assertions::assert_eq;
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// A model whose summary calls all answer `answer`, reporting 900 input and 60 output tokens.
fn summarising(answer: Answer) -> Arc<ScriptedModel> {
    let model = ScriptedModel::new(vec![]);
    model.push_summary(answer.with_usage(900, 60));
    model
}

fn call(id: &str, command: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        ref_: format!("call_{id}"),
        name: "bash".into(),
        arguments: json!({ "command": command }).to_string(),
    }
}

/// Four turns: the first two with tool calls (one with two calls), the third a plain answer, the
/// fourth still waiting for its results.
fn history() -> Vec<Message> {
    vec![
        Message::system("you are bob"),                 // 0
        Message::user("list the files"),                // 1: turn 1
        Message::assistant("", vec![call("a", "ls")]),  // 2
        Message::tool("a", "Cargo.toml\nsrc\n", false), // 3
        Message::assistant("Two entries.", vec![]),     // 4
        Message::user("build it"),                      // 5: turn 2
        Message::assistant(
            "Building.",
            vec![call("b", "cargo build"), call("c", "cargo test")],
        ), // 6
        Message::tool("b", "Finished", false),          // 7
        Message::tool("c", "error: no such test", true), // 8
        Message::assistant("The build works.", vec![]), // 9
        Message::user("thanks"),                        // 10: turn 3
        Message::assistant("You are welcome.", vec![]), // 11
        Message::user("now run it"),                    // 12: turn 4
        Message::assistant("", vec![call("d", "cargo run")]), // 13
        Message::tool("d", "hello", false),             // 14
    ]
}

fn assert_boundary_is_clean(h: &[Message], range: (usize, usize)) {
    let (start, end) = range;
    assert_eq!(h[0].role, Role::System);
    assert_eq!(start, 1, "the system prompt is never replaced");
    assert!(
        end == h.len() || h[end].starts_turn(),
        "the kept part starts a turn, not {:?}",
        h[end]
    );
    // No tool result kept whose call was replaced.
    for m in &h[end..] {
        if let Some(id) = &m.tool_call_id {
            assert!(
                h[end..]
                    .iter()
                    .any(|p| p.tool_calls.iter().any(|c| &c.id == id)),
                "result {id} separated from its call"
            );
        }
    }
}

#[mm_testkit::test]
fn the_range_ends_where_the_last_k_turns_begin() {
    let h = history();
    for (k, end) in [(0, 15), (1, 12), (2, 10), (3, 5)] {
        let range = plan_compaction(&h, k).unwrap();
        assert_eq!(range, (1, end), "keep {k}");
        assert_boundary_is_clean(&h, range);
    }
    // Nothing older than the last 4 (or more) turns.
    assert_eq!(plan_compaction(&h, 4), None);
    assert_eq!(plan_compaction(&h, 10), None);
}

#[mm_testkit::test]
fn an_earlier_summary_is_replaced_with_the_old_turns() {
    let h = vec![
        Message::system("s"),
        Message::summary("before"),
        Message::user("one"),
        Message::assistant("1", vec![]),
        Message::user("two"),
        Message::assistant("", vec![call("x", "ls")]),
        Message::tool("x", "out", false),
        Message::user("three"),
    ];
    assert_eq!(plan_compaction(&h, 2), Some((1, 4)));
    assert_boundary_is_clean(&h, (1, 4));
    // Only the summary is older than the last 3 turns: nothing to gain.
    assert_eq!(plan_compaction(&h, 3), None);
    // Just a system prompt, or nothing at all.
    assert_eq!(plan_compaction(&h[..1], 2), None);
    assert_eq!(plan_compaction(&[], 2), None);
}

#[mm_testkit::test]
fn the_transcript_renders_every_kind_of_message() {
    let mut h = history();
    h.insert(1, Message::summary("  The user set up the repo.  "));
    let long = "y".repeat(310);
    h.push(Message::tool("unknown-id", &long, false));
    let t = transcript(&h, 100_000);
    let expected = [
        "Summary of earlier conversation: The user set up the repo.",
        "User: list the files",
        r#"Assistant called bash: {"command":"ls"}"#,
        "Result of bash: Cargo.toml\nsrc",
        "Assistant: Two entries.",
        "User: build it",
        "Assistant: Building.\nAssistant called bash: {\"command\":\"cargo build\"}\nAssistant called bash: {\"command\":\"cargo test\"}",
        "Result of bash: Finished",
        "Result of bash, failed: error: no such test",
        "Assistant: The build works.",
        "User: thanks",
        "Assistant: You are welcome.",
        "User: now run it",
        r#"Assistant called bash: {"command":"cargo run"}"#,
        "Result of bash: hello",
        &format!("Result of tool: {}… [10 more characters]", "y".repeat(300)),
    ]
    .join("\n\n");
    assert_eq!(t, expected);
}

#[mm_testkit::test]
fn the_transcript_is_trimmed_from_the_start() {
    let h = vec![
        Message::user("first question, longer than the note"), // 6 + 36 = 42
        Message::assistant("first answer", vec![]),            // "Assistant: first answer" = 23
        Message::user("second"),                               // "User: second" = 12
        Message::assistant("done", vec![]),                    // "Assistant: done" = 15
    ];
    let all = transcript(&h, 1000);
    assert_eq!(all.chars().count(), 42 + 23 + 12 + 15 + 3 * 2);
    assert_eq!(transcript(&h, all.chars().count()), all);

    // The note counts: "[1 earlier message(s) omitted]" is 30 characters.
    assert_eq!(
        transcript(&h, 97),
        "[1 earlier message(s) omitted]\n\nAssistant: first answer\n\nUser: second\n\nAssistant: done"
    );
    assert_eq!(
        transcript(&h, 85),
        "[2 earlier message(s) omitted]\n\nUser: second\n\nAssistant: done"
    );
    assert_eq!(
        transcript(&h, 60),
        "[3 earlier message(s) omitted]\n\nAssistant: done"
    );
    assert_eq!(
        transcript(&h, 47),
        "[3 earlier message(s) omitted]\n\nAssistant: done"
    );
    // No room for the note: the last message alone.
    assert_eq!(transcript(&h, 46), "Assistant: done");
    // Not even the last message: its end.
    assert_eq!(transcript(&h, 4), "done");
    assert_eq!(transcript(&[], 10), "");
}

#[mm_testkit::test]
fn the_summary_request_asks_for_the_six_things_then_gives_the_transcript() {
    let req = summary_request("User: hi");
    assert_eq!(req.len(), 2);
    assert_eq!(req[0]["role"], "system");
    let instruction = req[0]["content"].as_str().unwrap();
    for wanted in [
        "the user's goals",
        "decisions made",
        "files touched and their state",
        "commands that worked",
        "open problems",
        "next steps",
        "concise",
    ] {
        assert!(instruction.contains(wanted), "missing {wanted:?}");
    }
    assert_eq!(
        req[1],
        json!({"role": "user", "content": "The conversation to summarise:\n\nUser: hi"})
    );
}

#[mm_testkit::test]
async fn a_compression_replaces_the_old_turns_by_one_summary() {
    let h = history();
    let model = summarising(Answer::text("  Goals: build.  \n"));
    let result = compact::compact(
        model.as_ref(),
        None,
        &h,
        2,
        100_000,
        &|_| {},
        &CancellationToken::new(),
    )
    .await;

    let mut expected = vec![h[0].clone(), Message::summary("Goals: build.")];
    expected.extend_from_slice(&h[10..]);
    assert_eq!(
        result,
        CompactResult::Compressed {
            history: expected,
            replaced: 9,
            kept: 5,
            usage: Some(Usage {
                input_tokens: 900,
                output_tokens: 60,
                ..Usage::default()
            }),
        }
    );
    // One summary call, with the transcript of exactly the replaced messages; nothing streamed.
    let calls = model.summary_requests();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0], summary_request(&transcript(&h[1..10], 100_000)));
    assert_eq!(model.calls(), 0, "compression must not stream");
}

#[mm_testkit::test]
async fn nothing_to_compact_makes_no_call() {
    let h = history();
    let model = summarising(Answer::text("unused"));
    let result = compact::compact(
        model.as_ref(),
        None,
        &h,
        4,
        100_000,
        &|_| {},
        &CancellationToken::new(),
    )
    .await;
    assert_eq!(
        result,
        CompactResult::Nothing {
            messages: 14,
            keep: 4
        }
    );
    assert!(model.summary_requests().is_empty());
    assert_eq!(model.calls(), 0);
}

#[mm_testkit::test]
async fn a_failed_or_empty_summary_fails() {
    let h = history();
    let cancel = CancellationToken::new();
    let model = summarising(Answer::error(ModelError::Http {
        status: 500,
        message: "out of memory".into(),
    }));
    assert_eq!(
        compact::compact(model.as_ref(), None, &h, 2, 100_000, &|_| {}, &cancel).await,
        CompactResult::Failed("model server answered 500: out of memory".into())
    );
    let model = summarising(Answer::text(" \n "));
    assert_eq!(
        compact::compact(model.as_ref(), None, &h, 2, 100_000, &|_| {}, &cancel).await,
        CompactResult::Failed("the summary was empty".into())
    );
}

#[mm_testkit::test]
fn the_estimate_divides_the_request_characters_by_the_ratio() {
    let messages = vec![json!({"role": "user", "content": "hello"})]; // 33 characters
    let tools = vec![json!({"type": "function"})]; // 19 characters
    assert_eq!(
        messages[0].to_string().chars().count() + tools[0].to_string().chars().count(),
        52
    );
    assert_eq!(estimate_tokens(&messages, &tools, 4.0), 13);
    assert_eq!(estimate_tokens(&messages, &tools, 2.5), 21); // 20.8 rounded up
    assert_eq!(estimate_tokens(&messages, &[], 3.0), 11);
    // An unusable ratio falls back on 4.
    assert_eq!(estimate_tokens(&messages, &tools, 0.0), 13);
    assert_eq!(estimate_tokens(&[], &[], 4.0), 0);
    // Characters, not bytes.
    let accents = vec![json!("éééé")]; // "éééé" with quotes: 6 characters, 10 bytes
    assert_eq!(estimate_tokens(&accents, &[], 1.0), 6);
}

//! Tool calls written as text: every case of fixtures/text_calls (one file per format,
//! with its prose-around and broken variants) streamed through the accumulator in every
//! chunking, and what the streaming filter releases when; and fixtures/text_calls_real, real
//! outputs of models collected apart from the first set, measured for calls recovered and
//! false calls of offered tools.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use mm_model::sse::{ChunkAccumulator, SseEvent};
use mm_model::text_calls::{Family, TextCallFilter, TextCalls, Tools, recover, written_format};
use mm_model::{ModelResponse, StreamEvent};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// One case of a fixture file (fixtures/text_calls/README.md).
#[derive(Debug, Clone)]
struct Case {
    file: String,
    name: String,
    model: Option<String>,
    format: Option<String>,
    calls: Vec<(String, Value)>,
    text: Option<String>,
    output: String,
    /// Tools offered besides the six of every case (or in place of one of the same name).
    tools: Vec<Value>,
    /// Where a real output comes from.
    source: Option<String>,
    /// Why a call of a real output is left as text on purpose.
    miss: Option<String>,
}

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/text_calls")
}

fn real_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/text_calls_real")
}

/// `NAME {"param": "type", "optional": "type?"}` as a wire definition.
fn tool_header(file: &str, value: &str) -> Value {
    let (name, params) = value.split_once(' ').unwrap_or((value, "{}"));
    let params: serde_json::Map<String, Value> =
        serde_json::from_str(params).unwrap_or_else(|e| panic!("{file}: tool {value}: {e}"));
    let mut properties = serde_json::Map::new();
    let mut required = Vec::new();
    for (key, kind) in params {
        let kind = kind.as_str().unwrap();
        let (kind, optional) = match kind.strip_suffix('?') {
            Some(k) => (k, true),
            None => (kind, false),
        };
        properties.insert(key.clone(), json!({ "type": kind }));
        if !optional {
            required.push(Value::String(key));
        }
    }
    json!({"type": "function", "function": {"name": name, "description": "",
        "parameters": {"type": "object", "properties": properties, "required": required}}})
}

fn parse_file(file: &str, content: &str) -> Vec<Case> {
    let mut cases = Vec::new();
    let mut blocks = content.split("\n=== ");
    blocks.next(); // the comments before the first case
    for block in blocks {
        let (head, output) = block
            .split_once("\n---\n")
            .unwrap_or_else(|| panic!("{file}: a case without `---`: {block:?}"));
        let mut lines = head.lines();
        let name = lines.next().unwrap().trim().to_string();
        let mut case = Case {
            file: file.to_string(),
            name,
            model: None,
            format: None,
            calls: Vec::new(),
            text: None,
            output: output.strip_suffix('\n').unwrap_or(output).to_string(),
            tools: Vec::new(),
            source: None,
            miss: None,
        };
        for line in lines {
            let (key, value) = line.split_once(": ").unwrap_or((line, ""));
            match key {
                "model" => case.model = Some(value.to_string()),
                "format" => case.format = Some(value.to_string()),
                "text" => case.text = Some(serde_json::from_str(value).unwrap()),
                "tool" => case.tools.push(tool_header(file, value)),
                "source" => case.source = Some(value.to_string()),
                "miss" => case.miss = Some(value.to_string()),
                "call" => {
                    let (tool, args) = value.split_once(' ').unwrap();
                    let args: Value = serde_json::from_str(args)
                        .unwrap_or_else(|e| panic!("{file}: {line}: {e}"));
                    case.calls.push((tool.to_string(), args));
                }
                other => panic!("{file}: unknown header {other:?}"),
            }
        }
        cases.push(case);
    }
    cases
}

fn cases() -> Vec<Case> {
    cases_in(&fixture_dir())
}

fn cases_in(dir: &Path) -> Vec<Case> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "txt"))
        .collect();
    files.sort();
    files
        .iter()
        .flat_map(|path| {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            parse_file(&name, &std::fs::read_to_string(path).unwrap())
        })
        .collect()
}

/// The tools the fixtures' models were offered.
fn definitions() -> Vec<Value> {
    let tool = |name: &str, properties: Value, required: &[&str]| {
        json!({"type": "function", "function": {"name": name, "description": "",
            "parameters": {"type": "object", "properties": properties, "required": required}}})
    };
    vec![
        tool(
            "bash",
            json!({"command": {"type": "string"}, "timeout": {"type": ["integer", "null"]}}),
            &["command"],
        ),
        tool(
            "read_file",
            json!({"path": {"type": "string"}, "offset": {"type": "integer"}, "limit": {"type": "integer"}}),
            &["path"],
        ),
        tool(
            "write_file",
            json!({"path": {"type": "string"}, "content": {"type": "string"}}),
            &["path", "content"],
        ),
        tool(
            "edit_file",
            json!({"path": {"type": "string"}, "old_text": {"type": "string"}, "new_text": {"type": "string"}}),
            &["path"],
        ),
        tool(
            "get_weather",
            json!({"city": {"type": "string"}, "unit": {"type": "string"}, "days": {"type": "integer"}}),
            &["city"],
        ),
        tool(
            "search",
            json!({"query": {"type": "string"}, "max_results": {"type": "integer"}, "exact": {"type": "boolean"}}),
            &["query"],
        ),
    ]
}

fn names() -> Vec<String> {
    names_of(&definitions())
}

fn names_of(definitions: &[Value]) -> Vec<String> {
    definitions
        .iter()
        .map(|d| d["function"]["name"].as_str().unwrap().to_string())
        .collect()
}

/// The six tools, and the case's own (one of the same name replaces one of the six).
fn definitions_of(case: &Case) -> Vec<Value> {
    let name = |d: &Value| d["function"]["name"].clone();
    let mut all: Vec<Value> = definitions()
        .into_iter()
        .filter(|d| !case.tools.iter().any(|t| name(t) == name(d)))
        .collect();
    all.extend(case.tools.iter().cloned());
    all
}

fn setup(case: &Case) -> TextCalls {
    let definitions = definitions_of(case);
    TextCalls {
        tools: Tools::from_wire(&definitions, &names_of(&definitions)),
        family: case.model.as_deref().and_then(Family::from_name),
    }
}

fn content(piece: &str) -> SseEvent {
    SseEvent::Data(json!({"choices": [{"index": 0, "delta": {"content": piece}}]}).to_string())
}

/// Streams `output` in pieces of `size` characters: (text shown before the end, text shown at
/// the end, the response).
fn stream(setup: &TextCalls, output: &str, size: usize) -> (String, String, ModelResponse) {
    let mut acc = ChunkAccumulator::with_text_calls(Some(setup.clone()));
    let mut before = String::new();
    let chars: Vec<char> = output.chars().collect();
    let text_of = |events: Vec<StreamEvent>, into: &mut String| {
        for e in events {
            if let StreamEvent::Text(t) = e {
                into.push_str(&t);
            }
        }
    };
    for piece in chars.chunks(size.max(1)) {
        let piece: String = piece.iter().collect();
        text_of(acc.feed(&content(&piece)).unwrap(), &mut before);
    }
    let stop = json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]});
    text_of(
        acc.feed(&SseEvent::Data(stop.to_string())).unwrap(),
        &mut before,
    );
    let (tail, response) = acc.finish();
    let mut after = String::new();
    text_of(tail, &mut after);
    (before, after, response)
}

fn calls_of(response: &ModelResponse) -> Vec<(String, Value)> {
    response
        .tool_calls
        .iter()
        .map(|c| {
            let args =
                serde_json::from_str(&c.arguments).unwrap_or(Value::String(c.arguments.clone()));
            (c.name.clone(), args)
        })
        .collect()
}

/// What is wrong with one case read in pieces of `size`, if anything.
fn check(case: &Case, size: usize) -> Option<String> {
    let setup = setup(case);
    let (before, after, response) = stream(&setup, &case.output, size);
    let got = calls_of(&response);
    let mut wrong = Vec::new();
    if got != case.calls {
        wrong.push(format!("calls {got:?}, expected {:?}", case.calls));
    }
    let expected_text = match (&case.text, case.calls.is_empty()) {
        (Some(text), _) => Some(text.clone()),
        (None, true) => Some(case.output.clone()),
        (None, false) => None,
    };
    if let Some(text) = expected_text
        && response.text != text
    {
        wrong.push(format!("text {:?}, expected {text:?}", response.text));
    }
    if format!("{before}{after}") != response.text {
        wrong.push(format!(
            "streamed {before:?} + {after:?}, stored {:?}",
            response.text
        ));
    }
    // No raw call was shown while streaming.
    if !response.text.starts_with(&before) {
        wrong.push(format!("shown while streaming: {before:?}"));
    }
    (!wrong.is_empty()).then(|| {
        format!(
            "{} / {} (pieces of {size}): {}",
            case.file,
            case.name,
            wrong.join("; ")
        )
    })
}

#[test]
fn every_fixture_reads_as_expected_in_every_chunking() {
    let cases = cases();
    let mut failures = Vec::new();
    for case in &cases {
        for size in [usize::MAX, 1, 2, 3, 7, 16] {
            if let Some(failure) = check(case, size) {
                failures.push(failure);
                break;
            }
        }
    }
    let calls: usize = cases.iter().map(|c| c.calls.len()).sum();
    let negatives = cases.iter().filter(|c| c.calls.is_empty()).count();
    eprintln!(
        "{} cases in {} files: {calls} calls, {negatives} cases that stay text",
        cases.len(),
        std::fs::read_dir(fixture_dir()).unwrap().count() - 1
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(calls >= 180, "the fixtures hold {calls} calls");
}

/// What one real output gave: the calls of the whole answer, and what is wrong in any chunking.
struct Measured {
    expected: usize,
    recovered: usize,
    /// Calls of offered tools the output does not make.
    false_calls: Vec<(String, Value)>,
    failure: Option<String>,
}

fn measure(case: &Case) -> Measured {
    let setup = setup(case);
    let offered = names_of(&definitions_of(case));
    let mut false_calls = Vec::new();
    let mut recovered = usize::MAX;
    let mut failure = None;
    for size in [usize::MAX, 1, 3, 7] {
        let (_, _, response) = stream(&setup, &case.output, size);
        let got = calls_of(&response);
        let mut left = case.calls.clone();
        let mut matched = 0;
        for call in &got {
            match left.iter().position(|c| c == call) {
                Some(at) => {
                    left.remove(at);
                    matched += 1;
                }
                None if offered.contains(&call.0) && !false_calls.contains(call) => {
                    false_calls.push(call.clone());
                }
                None => {}
            }
        }
        recovered = recovered.min(matched);
        let wrong = match &case.miss {
            // Left as text on purpose: no call of an offered tool, the text whole.
            Some(_)
                if got.iter().all(|c| !offered.contains(&c.0)) && response.text == case.output =>
            {
                None
            }
            _ => check(case, size),
        };
        if failure.is_none() {
            failure = wrong;
        }
    }
    Measured {
        expected: case.calls.len(),
        recovered,
        false_calls,
        failure,
    }
}

#[test]
fn real_outputs_are_recovered_without_false_calls() {
    let cases = cases_in(&real_dir());
    let mut failures = Vec::new();
    let mut false_calls = Vec::new();
    let (mut expected, mut recovered) = (0, 0);
    let mut files: Vec<&str> = cases.iter().map(|c| c.file.as_str()).collect();
    files.dedup();
    for file in files {
        let (mut file_expected, mut file_recovered, mut file_false) = (0, 0, 0);
        let in_file: Vec<&Case> = cases.iter().filter(|c| c.file == file).collect();
        for case in &in_file {
            assert!(case.source.is_some(), "{file} / {}: no source", case.name);
            let m = measure(case);
            file_expected += m.expected;
            file_recovered += m.recovered;
            file_false += m.false_calls.len();
            for call in m.false_calls {
                false_calls.push(format!("{file} / {}: {call:?}", case.name));
            }
            if let Some(f) = m.failure {
                failures.push(f);
            }
        }
        eprintln!(
            "{file}: {} outputs ({} stay text), {file_recovered} of {file_expected} calls, {file_false} false calls",
            in_file.len(),
            in_file.iter().filter(|c| c.calls.is_empty()).count(),
        );
        expected += file_expected;
        recovered += file_recovered;
    }
    let negatives = cases.iter().filter(|c| c.calls.is_empty()).count();
    eprintln!(
        "real outputs: {} ({negatives} stay text), {recovered} of {expected} calls recovered ({:.1} %), {} false calls of offered tools",
        cases.len(),
        100.0 * recovered as f64 / expected.max(1) as f64,
        false_calls.len()
    );
    for failure in &failures {
        eprintln!("  {failure}");
    }
    assert!(cases.len() >= 80 && negatives >= 20, "the set is too small");
    assert!(
        false_calls.is_empty(),
        "false calls:\n{}",
        false_calls.join("\n")
    );
    assert!(
        failures.is_empty(),
        "{} outputs read wrong:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        recovered * 100 >= expected * 95,
        "{recovered} of {expected} calls"
    );
}

#[test]
fn every_format_is_named_as_the_fixtures_say() {
    let mut failures = Vec::new();
    for case in cases().iter().filter(|c| c.format.is_some()) {
        let setup = setup(case);
        let recovered = recover(&case.output, &setup).map(|r| r.format.id());
        let written = written_format(&case.output, &setup).map(|f| f.id());
        let expected = case.format.as_deref();
        if recovered != expected || written != expected {
            failures.push(format!(
                "{} / {}: recovered {recovered:?}, written {written:?}, expected {expected:?}",
                case.file, case.name
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_broken_call_still_says_its_format() {
    let setup = TextCalls::names(&["bash".to_string()]);
    for (text, format) in [
        (
            "<tool_call>{\"name\": \"bash\", \"arguments\": {\"command\" \"ls\"}}</tool_call>",
            "hermes",
        ),
        (
            "<|tool_calls_section_begin|><|tool_call_begin|>functions.bash:0<|tool_call_argument_begin|>{\"comm",
            "kimi",
        ),
        ("[TOOL_CALLS]bash[ARGS]{oops}", "mistral"),
    ] {
        assert_eq!(recover(text, &setup), None, "{text}");
        assert_eq!(
            written_format(text, &setup).map(|f| f.id()),
            Some(format),
            "{text}"
        );
    }
    assert_eq!(written_format("It is noon in Paris.", &setup), None);
    assert_eq!(written_format("{\"name\": \"my-app\"}", &setup), None);
}

/// What the filter releases after each piece.
fn releases(setup: &TextCalls, pieces: &[&str]) -> Vec<String> {
    let mut filter = TextCallFilter::with(setup.clone());
    pieces.iter().map(|p| filter.push(p)).collect()
}

#[test]
fn prose_is_released_as_soon_as_no_opener_can_continue_it() {
    let setup = TextCalls {
        tools: Tools::from_wire(&definitions(), &names()),
        family: None,
    };
    let cases: &[(&[&str], &[&str])] = &[
        // Text before a possible opener goes at once; the opener waits for its next character.
        (
            &["Let me ", "look", " <tool", "_x"],
            &["Let me ", "look", " ", "<tool_x"],
        ),
        // A whole opener, then a character no call can have there.
        (&["<tool_call>", "` tag"], &["", "<tool_call>` tag"]),
        (&["Compare a ", "<", " b"], &["Compare a ", "", "< b"]),
        (&["[TOOL", "S]"], &["", "[TOOLS]"]),
        (&["```", "bash\nls"], &["", "```bash\nls"]),
        // A JSON object whose name is no tool's goes when the name is complete.
        (
            &["{\"name\": \"my-", "app\"", ", \"version\": 1}"],
            &["", "{\"name\": \"my-app\"", ", \"version\": 1}"],
        ),
        (&["[link", "](url)"], &["[link", "](url)"]),
        (&["[ba", "sh", "(1)](man)"], &["", "", "[bash(1)](man)"]),
        (&["[bash(", "1)](man)"], &["", "[bash(1)](man)"]),
        // A JSON call goes as soon as text follows it.
        (
            &[
                "{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}",
                "\n",
                "See?",
            ],
            &[
                "",
                "",
                "{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}\nSee?",
            ],
        ),
        // Real calls are held to the end.
        (
            &[
                "Sure.\n<tool_call>",
                "{\"name\": \"bash\"",
                ", \"arguments\": {}}</tool_call>",
            ],
            &["Sure.\n", "", ""],
        ),
    ];
    for (pieces, released) in cases {
        assert_eq!(&releases(&setup, pieces), released, "{pieces:?}");
    }
}

#[test]
fn the_first_visible_token_waits_at_most_one_opener() {
    // Every case's output (both sets), character by character: whatever is not held as a call
    // being written is shown within the opener budget, and prose never waits for more.
    for case in cases().into_iter().chain(cases_in(&real_dir())) {
        let setup = setup(&case);
        let budget = setup.opener_budget();
        let mut filter = TextCallFilter::with(setup.clone());
        let mut fed = 0;
        let mut shown = 0;
        for c in case.output.chars() {
            let mut piece = [0u8; 4];
            shown += filter.push(c.encode_utf8(&mut piece)).len();
            fed += c.len_utf8();
            if !filter.is_holding() {
                assert!(
                    fed - shown < budget,
                    "{} / {}: {} bytes waiting after {fed} (budget {budget})",
                    case.file,
                    case.name,
                    fed - shown
                );
            }
        }
    }
    let names = TextCalls::names(&["bash".into()]);
    assert_eq!(names.opener_budget(), 41);
}

#[test]
fn a_family_enables_its_own_markerless_forms_only() {
    let tools = Tools::from_wire(&definitions(), &names());
    let with = |family: Option<Family>| TextCalls {
        tools: tools.clone(),
        family,
    };
    let first_call = "get_weather\n{\"city\": \"Riga\"}";
    assert!(recover(first_call, &with(Some(Family::Functionary))).is_some());
    assert_eq!(recover(first_call, &with(None)), None);
    assert_eq!(recover(first_call, &with(Some(Family::Qwen))), None);
    let unbracketed = "bash(command=\"ls\")";
    assert!(recover(unbracketed, &with(Some(Family::Llama))).is_some());
    assert_eq!(recover(unbracketed, &with(None)), None);
}

#[test]
fn formats_with_markers_are_preferred_to_markerless_ones() {
    let setup = TextCalls::names(&["bash".into()]);
    // A JSON call shape that is an example, then the real call: only the marked one runs.
    let text = "{\"name\": \"bash\", \"arguments\": {\"command\": \"rm -rf /\"}}\n<tool_call>{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}</tool_call>";
    let recovered = recover(text, &setup).unwrap();
    assert_eq!(recovered.calls.len(), 1);
    assert_eq!(recovered.calls[0].arguments, "{\"command\":\"ls\"}");
    assert_eq!(
        recovered.text,
        "{\"name\": \"bash\", \"arguments\": {\"command\": \"rm -rf /\"}}\n"
    );
}

#[test]
fn nothing_inside_reasoning_is_a_call_in_a_whole_answer() {
    let names = vec!["bash".to_string()];
    let call = "<tool_call>{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}</tool_call>";
    let thought = format!("<think>I could write {call} here.</think>Done.");
    assert_eq!(
        mm_model::text_calls::parse_text_calls(&thought, &names),
        None
    );
    // The template opened the reasoning: only its end is in the text.
    let opened = format!("Let me list.</think>\n{call}");
    let (calls, text) = mm_model::text_calls::parse_text_calls(&opened, &names).unwrap();
    assert_eq!(calls.len(), 1);
    assert_eq!(text, "Let me list.</think>\n");
    let unclosed = format!("<think>maybe {call}");
    assert_eq!(
        mm_model::text_calls::parse_text_calls(&unclosed, &names),
        None
    );
}

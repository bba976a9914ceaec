//! Tool calls that small models write as text (docs/engine.md): `<tool_call>{…}</tool_call>`,
//! `[TOOL_CALLS][…]`, or a fenced JSON object naming a known tool. While streaming, text from the
//! first possible marker is held back so the user never sees a raw call; at the end it is either
//! parsed into calls or released as text.

use serde_json::Value;

use super::RawToolCall;

const TOOL_CALL_OPEN: &str = "<tool_call>";
const TOOL_CALL_CLOSE: &str = "</tool_call>";
const MISTRAL_MARKER: &str = "[TOOL_CALLS]";
const MISTRAL_ARGS: &str = "[ARGS]";
const FENCE: &str = "```";

#[derive(Debug, PartialEq, Eq)]
enum Marker {
    /// The text starts with a whole marker.
    Full,
    /// The text is too short to tell.
    Partial,
    No,
}

fn literal_marker(text: &str, marker: &str) -> Marker {
    if text.starts_with(marker) {
        Marker::Full
    } else if marker.starts_with(text) {
        Marker::Partial
    } else {
        Marker::No
    }
}

/// A fence that opens a JSON object: three backticks, `json` or nothing, blank space, `{`.
fn fence_marker(text: &str) -> Marker {
    let Some(rest) = text.strip_prefix(FENCE) else {
        return literal_marker(text, FENCE);
    };
    let word_len = rest
        .find(|c: char| !c.is_ascii_alphabetic())
        .unwrap_or(rest.len());
    let word = rest[..word_len].to_ascii_lowercase();
    let rest = &rest[word_len..];
    if !word.is_empty() && word != "json" {
        return if rest.is_empty() && "json".starts_with(&word) {
            Marker::Partial
        } else {
            Marker::No
        };
    }
    let rest = rest.trim_start();
    match rest.chars().next() {
        None => Marker::Partial,
        Some('{') => Marker::Full,
        Some(_) => Marker::No,
    }
}

fn marker_at(text: &str) -> Marker {
    match text.as_bytes().first() {
        Some(b'<') => literal_marker(text, TOOL_CALL_OPEN),
        Some(b'[') => literal_marker(text, MISTRAL_MARKER),
        Some(b'`') => fence_marker(text),
        _ => Marker::No,
    }
}

/// The streaming filter: text goes in, the part that cannot start a call comes out.
#[derive(Debug, Default)]
pub struct TextCallFilter {
    /// Text that may begin a marker (the lookbehind for markers split across chunks).
    pending: String,
    /// Everything from the first marker on.
    held: String,
}

impl TextCallFilter {
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes a piece of text; returns what can be shown now.
    pub fn push(&mut self, text: &str) -> String {
        if !self.held.is_empty() {
            self.held.push_str(text);
            return String::new();
        }
        self.pending.push_str(text);
        for (i, c) in self.pending.char_indices() {
            if !matches!(c, '<' | '[' | '`') {
                continue;
            }
            match marker_at(&self.pending[i..]) {
                Marker::No => {}
                Marker::Full => {
                    self.held = self.pending.split_off(i);
                    return std::mem::take(&mut self.pending);
                }
                Marker::Partial => {
                    let rest = self.pending.split_off(i);
                    return std::mem::replace(&mut self.pending, rest);
                }
            }
        }
        std::mem::take(&mut self.pending)
    }

    /// Whether text is being held from a marker on (a call is being written).
    pub fn is_holding(&self) -> bool {
        !self.held.is_empty()
    }

    /// The end of the response: (text still pending that is no call, text held from a marker on).
    pub fn finish(self) -> (String, String) {
        (self.pending, self.held)
    }
}

/// Parses held-back text into calls. Returns the calls and the text that follows them, or `None`
/// when the text is not a call (it is then shown as text).
pub fn parse_text_calls(held: &str, known_tools: &[String]) -> Option<(Vec<RawToolCall>, String)> {
    if let Some(rest) = held.strip_prefix(TOOL_CALL_OPEN) {
        parse_tagged(rest)
    } else if let Some(rest) = held.strip_prefix(MISTRAL_MARKER) {
        parse_mistral(rest)
    } else if held.starts_with(FENCE) {
        parse_fenced(held, known_tools).map(|call| (vec![call], String::new()))
    } else {
        None
    }
}

/// The first JSON value of `text` (after blank space) and what follows it.
fn leading_json(text: &str) -> Option<(Value, &str)> {
    let mut values = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    let value = values.next()?.ok()?;
    let end = values.byte_offset();
    Some((value, &text[end..]))
}

/// `{"name": …, "arguments": …}` (or `parameters`, or wrapped in `function`) as a call.
fn call_of(value: &Value) -> Option<RawToolCall> {
    let object = value.as_object()?;
    let object = match object.get("function").and_then(Value::as_object) {
        Some(inner) if !object.contains_key("name") => inner,
        _ => object,
    };
    let name = object.get("name")?.as_str()?.trim();
    if name.is_empty() {
        return None;
    }
    let arguments = match object.get("arguments").or_else(|| object.get("parameters")) {
        None | Some(Value::Null) => "{}".to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    };
    Some(RawToolCall {
        id: String::new(),
        name: name.to_string(),
        arguments,
    })
}

/// One or more `<tool_call>…</tool_call>` blocks (the last closing tag may be missing); `text`
/// starts right after the first opening tag.
fn parse_tagged(text: &str) -> Option<(Vec<RawToolCall>, String)> {
    let mut calls = Vec::new();
    let mut rest = text;
    loop {
        let (value, after) = leading_json(rest)?;
        calls.push(call_of(&value)?);
        let after = after.trim_start();
        rest = after.strip_prefix(TOOL_CALL_CLOSE).unwrap_or(after);
        match rest.trim_start().strip_prefix(TOOL_CALL_OPEN) {
            Some(next) => rest = next,
            None => break,
        }
    }
    Some((calls, rest.to_string()))
}

/// `[TOOL_CALLS]` followed by an array of calls, one call object, or `name[ARGS]{…}` (repeated).
fn parse_mistral(text: &str) -> Option<(Vec<RawToolCall>, String)> {
    let trimmed = text.trim_start();
    if trimmed.starts_with('[') || trimmed.starts_with('{') {
        let (value, rest) = leading_json(trimmed)?;
        let calls = match &value {
            Value::Array(items) => items.iter().map(call_of).collect::<Option<Vec<_>>>()?,
            other => vec![call_of(other)?],
        };
        if calls.is_empty() {
            return None;
        }
        return Some((calls, rest.to_string()));
    }
    let mut calls = Vec::new();
    let mut rest = text;
    loop {
        let (name, after) = rest.split_once(MISTRAL_ARGS)?;
        let name = name.trim();
        if name.is_empty() || name.contains(char::is_whitespace) {
            return None;
        }
        let (arguments, after) = leading_json(after)?;
        calls.push(RawToolCall {
            id: String::new(),
            name: name.to_string(),
            arguments: arguments.to_string(),
        });
        match after.trim_start().strip_prefix(MISTRAL_MARKER) {
            Some(next) => rest = next,
            None => return Some((calls, after.to_string())),
        }
    }
}

/// A fenced object is a call only when it is all that is left, names a known tool and has object
/// arguments: a model showing JSON to the user must not trigger a tool.
fn parse_fenced(text: &str, known_tools: &[String]) -> Option<RawToolCall> {
    let rest = text.strip_prefix(FENCE)?;
    let rest = rest.trim_start_matches(|c: char| c.is_ascii_alphabetic());
    let (value, after) = leading_json(rest)?;
    let after = after.trim_start().strip_prefix(FENCE)?;
    if !after.trim().is_empty() {
        return None;
    }
    let object = value.as_object()?;
    let arguments = object
        .get("arguments")
        .or_else(|| object.get("parameters"))?;
    if !arguments.is_object() {
        return None;
    }
    let call = call_of(&value)?;
    known_tools.contains(&call.name).then_some(call)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn tools() -> Vec<String> {
        vec!["bash".to_string(), "read_file".to_string()]
    }

    fn call(name: &str, arguments: &str) -> RawToolCall {
        RawToolCall {
            id: String::new(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }

    /// Streams `text` in pieces of `size` characters: (what was shown while streaming, held part).
    fn stream(text: &str, size: usize) -> (String, String) {
        let mut filter = TextCallFilter::new();
        let mut shown = String::new();
        let chars: Vec<char> = text.chars().collect();
        for piece in chars.chunks(size) {
            shown.push_str(&filter.push(&piece.iter().collect::<String>()));
        }
        let (pending, held) = filter.finish();
        shown.push_str(&pending);
        (shown, held)
    }

    #[test]
    fn the_filter_holds_back_from_a_marker_split_across_chunks() {
        let cases = [
            (
                "Let me look.\n<tool_call>{\"name\":\"bash\"}</tool_call>",
                "Let me look.\n",
            ),
            ("Sure [TOOL_CALLS][{\"name\":\"bash\"}]", "Sure "),
            ("Run:\n```json\n{\"name\":\"bash\"}\n```", "Run:\n"),
            ("Run:\n```\n  {\"name\":\"bash\"}\n```", "Run:\n"),
        ];
        for (text, shown) in cases {
            for size in [1, 2, 5, text.len()] {
                let (got_shown, held) = stream(text, size);
                assert_eq!(got_shown, shown, "{text:?} in pieces of {size}");
                assert_eq!(held, &text[shown.len()..], "{text:?} in pieces of {size}");
            }
        }
    }

    #[test]
    fn the_filter_lets_ordinary_text_and_code_through() {
        for text in [
            "a < b and x[0] = `y`",
            "```bash\nls -la\n```\n",
            "<tool>not a call</tool>",
            "[TOOL] and ``` then text",
        ] {
            for size in [1, 3, text.len()] {
                assert_eq!(
                    stream(text, size),
                    (text.to_string(), String::new()),
                    "{text:?}"
                );
            }
        }
    }

    #[test]
    fn tagged_calls_with_object_or_string_arguments() {
        let held = "<tool_call>\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}\n</tool_call>\n<tool_call>{\"name\":\"read_file\",\"arguments\":\"{\\\"path\\\":\\\"a\\\"}\"}</tool_call>";
        assert_eq!(
            parse_text_calls(held, &tools()),
            Some((
                vec![
                    call("bash", "{\"command\":\"ls\"}"),
                    call("read_file", "{\"path\":\"a\"}")
                ],
                String::new()
            ))
        );
    }

    #[test]
    fn tagged_call_without_closing_tag_and_unknown_tool_is_still_a_call() {
        assert_eq!(
            parse_text_calls("<tool_call>{\"name\":\"fly\",\"arguments\":{}}", &tools()),
            Some((vec![call("fly", "{}")], String::new()))
        );
    }

    #[test]
    fn broken_tagged_json_is_not_a_call() {
        assert_eq!(
            parse_text_calls(
                "<tool_call>{\"name\":\"bash\", \"arguments\": {</tool_call>",
                &tools()
            ),
            None
        );
    }

    #[test]
    fn mistral_array_and_args_forms() {
        assert_eq!(
            parse_text_calls(
                "[TOOL_CALLS][{\"name\":\"bash\",\"arguments\":{\"command\":\"pwd\"}},{\"name\":\"read_file\",\"arguments\":{\"path\":\"b\"}}]",
                &tools()
            ),
            Some((
                vec![
                    call("bash", "{\"command\":\"pwd\"}"),
                    call("read_file", "{\"path\":\"b\"}")
                ],
                String::new()
            ))
        );
        assert_eq!(
            parse_text_calls("[TOOL_CALLS]bash[ARGS]{\"command\":\"pwd\"}", &tools()),
            Some((vec![call("bash", "{\"command\":\"pwd\"}")], String::new()))
        );
    }

    #[test]
    fn a_fenced_object_is_a_call_only_when_whole_known_and_with_object_arguments() {
        let good = "```json\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}\n```\n";
        assert_eq!(
            parse_text_calls(good, &tools()),
            Some((vec![call("bash", "{\"command\":\"ls\"}")], String::new()))
        );
        for bad in [
            "```json\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}\n```\nThen I will check.",
            "```json\n{\"name\": \"deploy\", \"arguments\": {}}\n```",
            "```json\n{\"name\": \"bash\", \"arguments\": \"ls\"}\n```",
            "```json\n{\"name\": \"bash\"}\n```",
            "```json\n{\"name\": \"bash\", \"arguments\": {}}",
        ] {
            assert_eq!(parse_text_calls(bad, &tools()), None, "{bad:?}");
        }
    }
}

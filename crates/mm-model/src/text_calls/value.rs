//! Values as models write them in calls: JSON, and what they drift to — single-quoted strings,
//! trailing commas, Python's `True`/`None`, bare keys, raw newlines inside strings, invalid
//! escapes, and the quote tokens of Gemma (`<|"|>`) and FunctionGemma (`<escape>`).

use serde_json::{Map, Number, Value};

use super::scan::{Cur, Marker, Step, Stop, literal};

/// Deeper nesting is refused: the parser recurses, and no call needs more.
const MAX_DEPTH: usize = 64;

/// The quote tokens of Gemma 4 and FunctionGemma, around strings.
pub(crate) const GEMMA_QUOTES: &[&str] = &["<|\"|>", "<escape>"];

/// A value at the cursor (blank space before it skipped).
pub(crate) fn value(cur: &mut Cur, quotes: &[&str]) -> Step<Value> {
    value_at(cur, quotes, 0)
}

/// A whole text as a value, when it is exactly one (blank space around allowed).
pub(crate) fn whole_value(text: &str) -> Option<Value> {
    let mut cur = Cur::new(text, true);
    let value = value(&mut cur, &[]).ok()?;
    cur.ws();
    cur.is_empty().then_some(value)
}

fn value_at(cur: &mut Cur, quotes: &[&str], depth: usize) -> Step<Value> {
    if depth > MAX_DEPTH {
        return Err(Stop::Bad);
    }
    cur.ws();
    let Some(c) = cur.peek() else {
        return Err(cur.out());
    };
    if let Some(s) = quoted_token(cur, quotes)? {
        return Ok(Value::String(s));
    }
    match c {
        '{' => object(cur, quotes, depth),
        '[' => array(cur, quotes, depth),
        '"' | '\'' => string(cur).map(Value::String),
        '-' | '+' | '.' | '0'..='9' => number(cur),
        c if c.is_alphabetic() => word(cur),
        _ => Err(Stop::Bad),
    }
}

/// A string between two quote tokens (no escapes inside).
fn quoted_token(cur: &mut Cur, quotes: &[&str]) -> Step<Option<String>> {
    for quote in quotes {
        match literal(cur.rest(), quote) {
            Marker::Full(n) => {
                cur.bump(n);
                return cur.until(quote).map(|s| Some(s.to_string()));
            }
            Marker::Partial => return Err(cur.out()),
            Marker::No => {}
        }
    }
    Ok(None)
}

fn object(cur: &mut Cur, quotes: &[&str], depth: usize) -> Step<Value> {
    cur.bump(1);
    let mut map = Map::new();
    loop {
        cur.ws();
        if cur.eat("}")? {
            return Ok(Value::Object(map));
        }
        let key = key(cur, quotes)?;
        cur.ws();
        cur.lit(":")?;
        let value = value_at(cur, quotes, depth + 1)?;
        map.insert(key, value);
        cur.ws();
        if cur.eat(",")? {
            continue;
        }
        if cur.eat("}")? {
            return Ok(Value::Object(map));
        }
        return Err(if cur.is_empty() { cur.out() } else { Stop::Bad });
    }
}

fn key(cur: &mut Cur, quotes: &[&str]) -> Step<String> {
    if let Some(s) = quoted_token(cur, quotes)? {
        return Ok(s);
    }
    match cur.peek() {
        None => Err(cur.out()),
        Some('"' | '\'') => string(cur),
        Some(c) if c.is_alphabetic() || c == '_' || c == '$' => {
            let rest = cur.rest();
            let len = rest
                .find(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '$' | '-')))
                .unwrap_or(rest.len());
            if len == rest.len() {
                return Err(cur.out());
            }
            cur.bump(len);
            Ok(rest[..len].to_string())
        }
        Some(_) => Err(Stop::Bad),
    }
}

fn array(cur: &mut Cur, quotes: &[&str], depth: usize) -> Step<Value> {
    cur.bump(1);
    let mut items = Vec::new();
    loop {
        cur.ws();
        if cur.eat("]")? {
            return Ok(Value::Array(items));
        }
        items.push(value_at(cur, quotes, depth + 1)?);
        cur.ws();
        if cur.eat(",")? {
            continue;
        }
        if cur.eat("]")? {
            return Ok(Value::Array(items));
        }
        return Err(if cur.is_empty() { cur.out() } else { Stop::Bad });
    }
}

/// A string in `"` or `'` (or tripled, as Python writes long ones), with JSON's and Python's
/// escapes; an unknown escape is kept as written, a raw newline is part of the string.
pub(crate) fn string(cur: &mut Cur) -> Step<String> {
    let rest = cur.rest();
    let quote = match rest.chars().next() {
        None => return Err(cur.out()),
        Some(q @ ('"' | '\'')) => q,
        Some(_) => return Err(Stop::Bad),
    };
    let triple: String = std::iter::repeat_n(quote, 3).collect();
    let open = if rest.starts_with(&triple) { 3 } else { 1 };
    let close: &str = if open == 3 { &triple } else { &rest[..1] };
    let body = &rest[open..];
    let mut out = String::new();
    let mut i = 0;
    while i < body.len() {
        let tail = &body[i..];
        if tail.starts_with(close) {
            cur.bump(open + i + close.len());
            return Ok(out);
        }
        let Some(c) = tail.chars().next() else {
            break;
        };
        if c != '\\' {
            out.push(c);
            i += c.len_utf8();
            continue;
        }
        let Some(e) = tail[1..].chars().next() else {
            return Err(cur.out());
        };
        i += 1 + e.len_utf8();
        match e {
            'n' => out.push('\n'),
            't' => out.push('\t'),
            'r' => out.push('\r'),
            'b' => out.push('\u{8}'),
            'f' => out.push('\u{c}'),
            '0' => out.push('\0'),
            '/' | '\\' | '"' | '\'' | '`' => out.push(e),
            // A line continuation in Python.
            '\n' => {}
            'u' => {
                let (c, used) = unicode_escape(&body[i..], cur.end)?;
                out.push(c);
                i += used;
            }
            other => {
                out.push('\\');
                out.push(other);
            }
        }
    }
    Err(cur.out())
}

/// The 4 hex digits after `\u` (and a second `\uXXXX` for a surrogate pair): the character and
/// the bytes used. A lone surrogate is the replacement character.
fn unicode_escape(text: &str, end: bool) -> Step<(char, usize)> {
    let hex = |s: &str| -> Step<u32> {
        match s.get(..4) {
            Some(digits) if digits.bytes().all(|b| b.is_ascii_hexdigit()) => {
                u32::from_str_radix(digits, 16).map_err(|_| Stop::Bad)
            }
            Some(_) => Err(Stop::Bad),
            None if s.bytes().all(|b| b.is_ascii_hexdigit()) && !end => Err(Stop::More),
            None => Err(Stop::Bad),
        }
    };
    let first = hex(text)?;
    if (0xD800..0xDC00).contains(&first)
        && let Some(rest) = text.get(4..).and_then(|r| r.strip_prefix("\\u"))
        && let Ok(second) = hex(rest)
        && (0xDC00..0xE000).contains(&second)
    {
        let code = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00);
        return Ok((char::from_u32(code).unwrap_or('\u{fffd}'), 10));
    }
    Ok((char::from_u32(first).unwrap_or('\u{fffd}'), 4))
}

fn number(cur: &mut Cur) -> Step<Value> {
    let rest = cur.rest();
    let len = rest
        .find(|c: char| !matches!(c, '+' | '-' | '.' | 'e' | 'E' | '0'..='9'))
        .unwrap_or(rest.len());
    if len == rest.len() && !cur.end {
        return Err(Stop::More);
    }
    let text = rest[..len].trim_start_matches('+');
    let number = if let Ok(n) = text.parse::<i64>() {
        Number::from(n)
    } else if let Ok(n) = text.parse::<u64>() {
        Number::from(n)
    } else {
        text.parse::<f64>()
            .ok()
            .and_then(Number::from_f64)
            .ok_or(Stop::Bad)?
    };
    cur.bump(len);
    Ok(Value::Number(number))
}

fn word(cur: &mut Cur) -> Step<Value> {
    let rest = cur.rest();
    let len = rest
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    if len == rest.len() && !cur.end {
        return Err(Stop::More);
    }
    let value = match &rest[..len] {
        "true" | "True" => Value::Bool(true),
        "false" | "False" => Value::Bool(false),
        "null" | "None" | "nil" => Value::Null,
        _ => return Err(Stop::Bad),
    };
    cur.bump(len);
    Ok(value)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn parse(text: &str) -> Step<Value> {
        value(&mut Cur::new(text, true), GEMMA_QUOTES)
    }

    #[test]
    fn the_drifts_of_json_models_write_are_read() {
        assert_eq!(
            parse("{'name': 'bash', 'arguments': {'command': 'ls',},}"),
            Ok(json!({"name": "bash", "arguments": {"command": "ls"}}))
        );
        assert_eq!(
            parse("{flag: True, none: None, n: -3, x: 1.5e2, s: \"a\nb\"}"),
            Ok(json!({"flag": true, "none": null, "n": -3, "x": 150.0, "s": "a\nb"}))
        );
        assert_eq!(
            parse(r#"{"p": "C:\dir\n", "q": "\u00e9\ud83d\ude00", "r": 'it\'s'}"#),
            Ok(json!({"p": "C:\\dir\n", "q": "é😀", "r": "it's"}))
        );
        assert_eq!(
            parse("{city:<|\"|>Paris<|\"|>,days:3}"),
            Ok(json!({"city": "Paris", "days": 3}))
        );
        assert_eq!(parse("'''two\nlines'''"), Ok(json!("two\nlines")));
    }

    #[test]
    fn a_cut_value_waits_while_streaming_and_fails_at_the_end() {
        for cut in [
            "{\"a\": [1, 2",
            "{\"a\": \"b",
            "{\"a\": tr",
            "{\"a\": 12",
            "'x\\u00",
        ] {
            assert_eq!(
                value(&mut Cur::new(cut, false), &[]),
                Err(Stop::More),
                "{cut}"
            );
            assert_eq!(
                value(&mut Cur::new(cut, true), &[]),
                Err(Stop::Bad),
                "{cut}"
            );
        }
        for bad in ["{\"a\" 1}", "{\"a\": yes}", "[1 2]", "{\"a\": 1] "] {
            assert_eq!(
                value(&mut Cur::new(bad, false), &[]),
                Err(Stop::Bad),
                "{bad}"
            );
        }
    }

    #[test]
    fn nesting_is_bounded() {
        let deep = "[".repeat(10_000);
        assert_eq!(value(&mut Cur::new(&deep, false), &[]), Err(Stop::Bad));
    }
}

//! Kimi K2: `<|tool_calls_section_begin|>`, then per call `<|tool_call_begin|>functions.NAME:0
//! <|tool_call_argument_begin|>{…}<|tool_call_end|>`, then `<|tool_calls_section_end|>`. The
//! section may be left out, or spelled `tool_call_section`. An id that is only a counter (`0`)
//! names the one offered tool whose parameters the arguments are, or no call at all; arguments
//! written as a JSON string are read as the object it holds.

use super::json_calls::clean_name;
use super::scan::{Cur, Marker, Step, Stop, any_literal};
use super::tools::{Args, Call, Tools};
use super::value::value;
use super::{Ctx, Format, Open, Parsed};

const SECTION_BEGIN: &[&str] = &[
    "<|tool_calls_section_begin|>",
    "<|tool_call_section_begin|>",
];
const SECTION_END: &[&str] = &["<|tool_calls_section_end|>", "<|tool_call_section_end|>"];
const CALL_BEGIN: &str = "<|tool_call_begin|>";
const ARGUMENT_BEGIN: &str = "<|tool_call_argument_begin|>";
const CALL_END: &str = "<|tool_call_end|>";

pub(crate) fn open(text: &str, _: &Open) -> Marker {
    any_literal(text, &[SECTION_BEGIN[0], SECTION_BEGIN[1], CALL_BEGIN])
}

/// `functions.bash:0` is `bash`; `None` for an id that is no name (`0`, `tool:call_id`).
fn name_of(id: &str) -> Option<&str> {
    let id = id.trim();
    let id = match id.rsplit_once(':') {
        Some((name, index)) if index.bytes().all(|b| b.is_ascii_digit()) => name,
        Some(_) => return None,
        None => id,
    };
    clean_name(id).filter(|n| !n.bytes().all(|b| b.is_ascii_digit()))
}

/// The tool a call whose id is only a counter means: the one offered tool its arguments fit.
fn inferred(id: &str, args: &Args, tools: &Tools) -> Option<String> {
    if id.trim().is_empty() || !id.trim().bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let Args::Object(map) = args else {
        return None;
    };
    let keys: Vec<&str> = map.keys().map(String::as_str).collect();
    tools.fitting(&keys).map(str::to_string)
}

pub(crate) fn parse(text: &str, ctx: &Ctx) -> Step<Parsed> {
    let mut cur = Cur::new(text, ctx.end);
    cur.eat_any(SECTION_BEGIN)?;
    let mut calls = Vec::new();
    loop {
        cur.ws();
        if !cur.eat(CALL_BEGIN)? {
            if calls.is_empty() {
                return Err(if cur.is_empty() { cur.out() } else { Stop::Bad });
            }
            break;
        }
        // The id is one short word: anything else is not this format.
        let rest = cur.rest();
        let id_len = rest.find(ARGUMENT_BEGIN).unwrap_or(rest.len());
        let id = &rest[..id_len];
        let word = id.trim_start();
        let word = &word[..word.find(char::is_whitespace).unwrap_or(word.len())];
        let after_word = id.trim_start()[word.len()..].trim_start();
        let cut_marker = after_word.is_empty() || ARGUMENT_BEGIN.starts_with(after_word);
        if id_len > 200 || !(id.trim() == word || (id_len == rest.len() && cut_marker)) {
            return Err(Stop::Bad);
        }
        let id = cur.until(ARGUMENT_BEGIN)?;
        let args = Args::of(value(&mut cur, &[])?);
        let name = match name_of(id) {
            Some(name) => name.to_string(),
            None => inferred(id, &args, ctx.tools).ok_or(Stop::Bad)?,
        };
        cur.ws();
        cur.eat(CALL_END)?;
        calls.push(Call { name, args });
    }
    cur.eat_any(SECTION_END)?;
    Ok(Parsed::calls(calls, cur.pos, Format::Kimi))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_ids_name_the_tool() {
        assert_eq!(name_of("functions.bash:0"), Some("bash"));
        assert_eq!(name_of(" read_file:12 "), Some("read_file"));
        assert_eq!(name_of("bash"), Some("bash"));
        assert_eq!(name_of("two words:1"), None);
        assert_eq!(name_of("0"), None);
        assert_eq!(name_of("functions.tool_name:call_id"), None);
    }
}

//! Kimi K2: `<|tool_calls_section_begin|>`, then per call `<|tool_call_begin|>functions.NAME:0
//! <|tool_call_argument_begin|>{…}<|tool_call_end|>`, then `<|tool_calls_section_end|>`. The
//! section may be left out, or spelled `tool_call_section`.

use super::json_calls::clean_name;
use super::scan::{Cur, Marker, Step, Stop, any_literal};
use super::tools::{Args, Call};
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

/// `functions.bash:0` is `bash`.
fn name_of(id: &str) -> Option<&str> {
    let id = id.trim();
    let id = match id.rsplit_once(':') {
        Some((name, index)) if index.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => id,
    };
    clean_name(id)
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
        // The id is short and on one line: anything else is not this format.
        let rest = cur.rest();
        if rest.find(ARGUMENT_BEGIN).is_none()
            && (rest.trim().contains(char::is_whitespace) || rest.len() > 200)
        {
            return Err(Stop::Bad);
        }
        let id = cur.until(ARGUMENT_BEGIN)?;
        let name = name_of(id).ok_or(Stop::Bad)?.to_string();
        let args = match value(&mut cur, &[])? {
            serde_json::Value::Object(map) => Args::Object(map),
            other => Args::Raw(other.to_string()),
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
    }
}

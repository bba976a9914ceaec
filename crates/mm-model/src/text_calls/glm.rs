//! GLM 4.5 and later, inside `<tool_call>`: the name, then `<arg_key>K</arg_key>` and
//! `<arg_value>V</arg_value>` pairs (with or without newlines between them); values are text,
//! typed by the tool's schema. The older GLM-4 writes the name, a newline and a JSON object.

use serde_json::{Map, Value};

use super::Ctx;
use super::json_calls::clean_name;
use super::scan::{Cur, Marker, Step, Stop, literal};
use super::tools::Call;
use super::value::value;

/// One call at the cursor (after `<tool_call>`); `close` is what must follow it.
pub(crate) fn call(cur: &mut Cur, _ctx: &Ctx, close: &str) -> Step<Call> {
    let name = clean_name(cur.name()?).ok_or(Stop::Bad)?.to_string();
    cur.ws();
    if cur.peek() == Some('{') {
        let args = value(cur, &[])?;
        let args = args.as_object().ok_or(Stop::Bad)?.clone();
        return Ok(Call::new(&name, args));
    }
    let mut args = Map::new();
    loop {
        cur.ws();
        if !cur.eat("<arg_key>")? {
            break;
        }
        let key = cur.until("</arg_key>")?.trim().to_string();
        cur.ws();
        cur.lit("<arg_value>")?;
        let text = cur.until("</arg_value>")?;
        args.insert(key, Value::String(text.to_string()));
    }
    // Only the closing tag (or the end of the answer) may follow: `<tool_call>bash is a
    // shell` is prose.
    cur.ws();
    match literal(cur.rest(), close) {
        Marker::Full(_) => {}
        Marker::Partial => return Err(cur.out()),
        Marker::No if cur.is_empty() => {
            if !cur.end {
                return Err(Stop::More);
            }
        }
        Marker::No if cur.rest().starts_with("<tool_call>") => {}
        Marker::No => return Err(Stop::Bad),
    }
    Ok(Call::new(&name, args))
}

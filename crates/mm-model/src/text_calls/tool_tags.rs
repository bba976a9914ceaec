//! Calls written as XML named for the tool, the form Claude-style prompts teach
//! (`<read_file>\n<path>a.txt</path>\n</read_file>`). Any text may hold such tags, so they are
//! read strictly (docs/engine.md): the tag at the start of a line, an offered tool's name whose
//! parameters are known, every child tag one of them (the required ones all there), values as
//! text, and nothing but more such calls after it to the end of the answer.

use serde_json::{Map, Value};

use super::bare::MAX_NAME;
use super::scan::{Cur, Marker, Step, Stop, is_name_char};
use super::tools::{Call, Tools};
use super::{Ctx, Format, Open, Parsed};

pub(crate) fn open(text: &str, open: &Open) -> Marker {
    if !open.line_start || !open.tools.is_listed() || !text.starts_with('<') {
        return Marker::No;
    }
    let rest = &text[1..];
    let len = rest.find(|c: char| !is_name_char(c)).unwrap_or(rest.len());
    let name = &rest[..len];
    if len > MAX_NAME {
        return Marker::No;
    }
    let known = |n: &str| open.tools.has_params(n);
    if len == rest.len() {
        let partial = open
            .tools
            .listed_names()
            .any(|n| n.starts_with(name) && known(n));
        return if partial { Marker::Partial } else { Marker::No };
    }
    if !rest[len..].starts_with('>') || !open.tools.listed_names().any(|n| n == name && known(n)) {
        return Marker::No;
    }
    Marker::Full(len + 2)
}

/// A value between tags: the one newline after the opening tag and before the closing one is
/// layout.
fn trim_value(text: &str) -> &str {
    let text = text.strip_prefix('\n').unwrap_or(text);
    text.strip_suffix('\n').unwrap_or(text)
}

fn call(cur: &mut Cur, tools: &Tools) -> Step<Call> {
    cur.lit("<")?;
    let name = cur.name()?.to_string();
    if !tools.has_params(&name) || tools.offered(&name) != Some(name.as_str()) {
        return Err(Stop::Bad);
    }
    cur.lit(">")?;
    let close = format!("</{name}>");
    let mut args = Map::new();
    loop {
        cur.ws();
        if cur.eat(&close)? {
            break;
        }
        cur.lit("<")?;
        let key = cur.name()?.to_string();
        if !tools.has_param(&name, &key) || args.contains_key(&key) {
            return Err(Stop::Bad);
        }
        cur.lit(">")?;
        let value = cur.until(&format!("</{key}>"))?;
        args.insert(key, Value::String(trim_value(value).to_string()));
    }
    let keys: Vec<&str> = args.keys().map(String::as_str).collect();
    if !tools.fits(&name, &keys) {
        return Err(Stop::Bad);
    }
    Ok(Call::new(&name, args))
}

pub(crate) fn parse(text: &str, ctx: &Ctx) -> Step<Parsed> {
    let mut cur = Cur::new(text, ctx.end);
    let mut calls = Vec::new();
    loop {
        calls.push(call(&mut cur, ctx.tools)?);
        if cur.answer_ends()? {
            break;
        }
        // Only more calls may follow: text after it makes it markup, or an example.
        if !cur.rest().starts_with('<') {
            return Err(Stop::Bad);
        }
    }
    Ok(Parsed::calls(calls, cur.pos, Format::ToolTags))
}

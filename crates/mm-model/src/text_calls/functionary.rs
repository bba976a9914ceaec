//! Functionary v3.2: `>>>NAME` on a line, then the arguments as JSON; `>>>all` then text.
//! Its first message comes without `>>>` (the prompt ends with it): `NAME\n{…}` at the start of
//! a line, recognised only when the server says the model is Functionary (or GLM-4, which
//! writes the same), and only for an offered tool's name. v3.1's `<function=NAME>{…}` is read
//! with Qwen3-Coder's XML (xml.rs).

use super::json_calls::clean_name;
use super::scan::{Cur, Marker, Step, Stop, literal};
use super::tools::{Args, Call};
use super::value::value;
use super::{Ctx, Format, Open, Parsed};

const MARKER: &str = ">>>";

pub(crate) fn open(text: &str, open: &Open) -> Marker {
    if text.starts_with('>') {
        return match literal(text, MARKER) {
            // `>>> import os` is a Python prompt, not a call.
            Marker::Full(n) => match text[n..].chars().next() {
                None => Marker::Partial,
                Some(c) if super::scan::is_name_start(c) => Marker::Full(n),
                Some(_) => Marker::No,
            },
            other => other,
        };
    }
    first_call_open(text, open)
}

/// `NAME\n{` at the start of a line, NAME an offered tool, for the families that write it.
fn first_call_open(text: &str, open: &Open) -> Marker {
    let gated = open.writes(Format::Functionary) || open.writes(Format::Glm);
    if !gated || !open.line_start || !open.tools.is_listed() {
        return Marker::No;
    }
    let mut partial = false;
    for name in open.tools.listed_names() {
        let whole = format!("{name}\n{{");
        match literal(text, &whole) {
            Marker::Full(n) => return Marker::Full(n),
            Marker::Partial => partial = true,
            Marker::No => {}
        }
    }
    if partial { Marker::Partial } else { Marker::No }
}

pub(crate) fn parse(text: &str, ctx: &Ctx) -> Step<Parsed> {
    let mut cur = Cur::new(text, ctx.end);
    let mut calls = Vec::new();
    let mut shown = String::new();
    let mut first = true;
    loop {
        let marked = cur.eat(MARKER)?;
        if !marked && !first {
            break;
        }
        first = false;
        let name = clean_name(cur.name()?).ok_or(Stop::Bad)?.to_string();
        cur.lit("\n")?;
        if name == "all" {
            let rest = cur.rest();
            match rest.find(MARKER) {
                Some(at) => {
                    shown.push_str(&rest[..at]);
                    cur.bump(at);
                }
                None if cur.end => {
                    shown.push_str(rest);
                    cur.bump(rest.len());
                }
                None => return Err(Stop::More),
            }
            continue;
        }
        let args = match value(&mut cur, &[])? {
            serde_json::Value::Object(map) => Args::Object(map),
            _ => return Err(Stop::Bad),
        };
        calls.push(Call { name, args });
        let after = cur.pos;
        cur.ws();
        if literal(cur.rest(), MARKER) != Marker::Full(MARKER.len()) {
            cur.pos = after;
            break;
        }
    }
    if calls.is_empty() {
        return Err(Stop::Bad);
    }
    let mut parsed = Parsed::calls(calls, cur.pos, Format::Functionary);
    parsed.text = shown;
    Ok(parsed)
}

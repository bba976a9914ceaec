//! gpt-oss's harmony messages, when the server leaves them in the text:
//! `<|channel|>analysis<|message|>…<|end|>`, then
//! `<|start|>assistant<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{…}<|call|>`
//! (the recipient may also stand in the `<|start|>` header). A message to `functions.NAME` is a
//! call; `final` (and `commentary` without a recipient) is text; `analysis` is reasoning, dropped
//! from the text. Without a call it is not recovered: the text stays as it came.

use super::json_calls::clean_name;
use super::scan::{Cur, Marker, Step, Stop, any_literal};
use super::tools::{Args, Call};
use super::value::whole_value;
use super::{Ctx, Format, Open, Parsed};

const START: &str = "<|start|>";
const CHANNEL: &str = "<|channel|>";
const MESSAGE: &str = "<|message|>";
const ENDS: &[&str] = &["<|end|>", "<|call|>", "<|return|>"];
/// A header is one short line.
const HEADER_MAX: usize = 200;

pub(crate) fn open(text: &str, _: &Open) -> Marker {
    any_literal(text, &[CHANNEL, START])
}

/// The recipient of a header (`to=functions.bash`).
fn recipient(header: &str) -> Option<&str> {
    let at = header.find("to=")?;
    let rest = &header[at + 3..];
    let end = rest
        .find(|c: char| c.is_whitespace() || c == '<')
        .unwrap_or(rest.len());
    Some(&rest[..end])
}

/// A header up to `markers`: one short line, else not harmony.
fn header<'a>(cur: &mut Cur<'a>, markers: &[&str]) -> Step<(&'a str, usize)> {
    let rest = cur.rest();
    let found = markers.iter().filter_map(|m| rest.find(m)).min();
    let line = &rest[..found.unwrap_or(rest.len())];
    if line.contains('\n') || line.len() > HEADER_MAX {
        return Err(Stop::Bad);
    }
    cur.until_any(markers)
}

pub(crate) fn parse(text: &str, ctx: &Ctx) -> Step<Parsed> {
    let mut cur = Cur::new(text, ctx.end);
    let mut calls = Vec::new();
    let mut shown = String::new();
    let mut messages = 0;
    loop {
        cur.ws();
        let mut head = String::new();
        let mut channel = String::new();
        let channel_follows = if cur.eat(START)? {
            let (role, which) = header(&mut cur, &[CHANNEL, MESSAGE])?;
            head.push_str(role);
            which == 0
        } else if cur.eat(CHANNEL)? {
            true
        } else if messages > 0 {
            break;
        } else {
            return Err(if cur.is_empty() { cur.out() } else { Stop::Bad });
        };
        if channel_follows {
            let (line, _) = header(&mut cur, &[MESSAGE])?;
            channel = line.split_whitespace().next().unwrap_or("").to_string();
            head.push(' ');
            head.push_str(line);
            if !matches!(channel.as_str(), "analysis" | "commentary" | "final") {
                return Err(Stop::Bad);
            }
        }
        let rest = cur.rest();
        let mut stops: Vec<&str> = ENDS.to_vec();
        stops.extend([START, CHANNEL]);
        let found = stops
            .iter()
            .enumerate()
            .filter_map(|(i, m)| rest.find(m).map(|at| (at, i)))
            .min();
        let (content, ended) = match found {
            Some((at, i)) => {
                // An end token is taken; the next message's start is not.
                cur.bump(at + if i < ENDS.len() { stops[i].len() } else { 0 });
                (&rest[..at], true)
            }
            None if cur.end => {
                cur.bump(rest.len());
                (rest, false)
            }
            None => return Err(Stop::More),
        };
        messages += 1;
        if let Some(to) = recipient(&head) {
            let name = clean_name(to).ok_or(Stop::Bad)?.to_string();
            let args = match whole_value(content).map(Args::of) {
                Some(args @ Args::Object(_)) => args,
                // Arguments cut by the end of the answer are a truncated call.
                _ if !ended => return Err(Stop::Bad),
                _ => Args::Raw(content.trim().to_string()),
            };
            calls.push(Call { name, args });
        } else if channel != "analysis" {
            shown.push_str(content);
        }
    }
    if calls.is_empty() {
        return Err(Stop::Bad);
    }
    let mut parsed = Parsed::calls(calls, cur.pos, Format::Harmony);
    parsed.text = shown;
    Ok(parsed)
}

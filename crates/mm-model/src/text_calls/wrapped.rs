//! JSON calls between a pair of markers of their own: Qwen2.5-Coder `<tools>…</tools>`, Granite
//! and Phi-4-mini `<|tool_call|>[…]`, Firefunction `functools[…]`, Nemotron Nano 2
//! `<TOOLCALL>[…]</TOOLCALL>`, `<tool_calls>[…]</tool_calls>`, Glaive's `<functioncall>`,
//! `<function_call>`, LongCat `<longcat_tool_call>`, InternLM
//! `<|action_start|><|plugin|>…<|action_end|>`, LM Studio
//! `[TOOL_REQUEST]{…}[END_TOOL_REQUEST]`, and Apertus `<|tools_prefix|>[{"NAME": {…}}]<|tools_suffix|>`.
//! The closing marker may be missing.

use serde_json::Value;

use super::json_calls::{Reading, json_calls_until, keyed_call};
use super::scan::{Cur, Marker, Step, Stop, literal};
use super::tools::{Call, Tools};
use super::value::value;
use super::{Ctx, Format, Open, Parsed};

struct Wrapper {
    /// What the filter recognises.
    open: &'static str,
    /// The part of `open` that is the marker (the rest belongs to the body: `[` of `functools[`).
    marker: usize,
    close: &'static [&'static str],
    format: Format,
}

const WRAPPERS: &[Wrapper] = &[
    Wrapper {
        open: "<tools>",
        marker: 7,
        close: &["</tools>"],
        format: Format::QwenCoder,
    },
    Wrapper {
        open: "<|tool_call|>",
        marker: 13,
        close: &["<|/tool_call|>", "</|tool_call|>", "<|end_tool_call|>"],
        format: Format::Granite,
    },
    Wrapper {
        open: "functools[",
        marker: 9,
        close: &[],
        format: Format::Functools,
    },
    Wrapper {
        open: "<longcat_tool_call>",
        marker: 19,
        close: &["</longcat_tool_call>"],
        format: Format::LongCat,
    },
    Wrapper {
        open: "<TOOLCALL>",
        marker: 10,
        close: &["</TOOLCALL>"],
        format: Format::Nemotron,
    },
    Wrapper {
        open: "<tool_calls>",
        marker: 12,
        close: &["</tool_calls>"],
        format: Format::ToolCallsTag,
    },
    Wrapper {
        open: "<functioncall>",
        marker: 14,
        close: &["</functioncall>"],
        format: Format::ToolCallsTag,
    },
    Wrapper {
        open: "<function_call>",
        marker: 15,
        close: &["</function_call>"],
        format: Format::ToolCallsTag,
    },
    Wrapper {
        open: "<|action_start|><|plugin|>",
        marker: 26,
        close: &["<|action_end|>"],
        format: Format::InternLm,
    },
    Wrapper {
        open: "[TOOL_REQUEST]",
        marker: 14,
        close: &["[END_TOOL_REQUEST]"],
        format: Format::LmStudio,
    },
    Wrapper {
        open: "<|tools_prefix|>",
        marker: 16,
        close: &["<|tools_suffix|>"],
        format: Format::Apertus,
    },
];

pub(crate) fn open(text: &str, _: &Open) -> Marker {
    let mut partial = false;
    for w in WRAPPERS {
        match literal(text, w.open) {
            Marker::Full(_) => return Marker::Full(w.marker),
            Marker::Partial => partial = true,
            Marker::No => {}
        }
    }
    if partial { Marker::Partial } else { Marker::No }
}

/// Apertus's list: every item `{"NAME": {…}}`.
fn keyed_calls(cur: &mut Cur) -> Step<Vec<Call>> {
    let list = value(cur, &[])?;
    let items = match &list {
        Value::Array(items) => items.as_slice(),
        one @ Value::Object(_) => std::slice::from_ref(one),
        _ => return Err(Stop::Bad),
    };
    let calls: Option<Vec<Call>> = items
        .iter()
        .map(|item| keyed_call(item.as_object()?, &Tools::any()))
        .collect();
    calls.filter(|c| !c.is_empty()).ok_or(Stop::Bad)
}

pub(crate) fn parse(text: &str, ctx: &Ctx) -> Step<Parsed> {
    let Some(wrapper) = WRAPPERS.iter().find(|w| text.starts_with(w.open)) else {
        return Err(Stop::Bad);
    };
    let marker = &wrapper.open[..wrapper.marker];
    let mut cur = Cur::new(text, ctx.end);
    let mut calls = Vec::new();
    loop {
        cur.lit(marker)?;
        cur.ws();
        let found = if wrapper.format == Format::Apertus {
            keyed_calls(&mut cur)?
        } else {
            json_calls_until(&mut cur, ctx.tools, Reading::Lenient)?
        };
        calls.extend(found);
        cur.ws();
        if !wrapper.close.is_empty() {
            cur.eat_any(wrapper.close)?;
        }
        if !cur.followed_by(&[wrapper.open]) {
            break;
        }
    }
    Ok(Parsed::calls(calls, cur.pos, wrapper.format))
}

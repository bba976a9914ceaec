//! The fake server's script: what one chat request is answered with, and its wire shape.
#![allow(dead_code)]

use std::time::Duration;

use serde_json::{Value, json};

/// One piece of a streamed answer; each becomes one SSE event (`data: …`).
#[derive(Debug, Clone, PartialEq)]
pub enum Chunk {
    /// `delta.content`
    Text(String),
    /// `delta.reasoning_content`
    Reasoning(String),
    /// A fragment of tool call `index`. The first fragment of a call carries its `name`; when
    /// it has a name but no `id`, the server assigns `call_fake_<n>` (n counts per server).
    ToolCall {
        index: usize,
        id: Option<String>,
        name: Option<String>,
        arguments: String,
    },
    /// An empty delta with this `finish_reason`.
    Finish(String),
    /// A usage chunk with empty `choices`.
    Usage { prompt: u64, completion: u64 },
    /// `choices[0].delta` exactly as given.
    Delta(Value),
    /// The payload of the `data:` line verbatim (for malformed-event tests).
    Raw(String),
    /// `data: [DONE]`
    Done,
}

impl Chunk {
    pub fn text(s: impl Into<String>) -> Self {
        Chunk::Text(s.into())
    }

    pub fn reasoning(s: impl Into<String>) -> Self {
        Chunk::Reasoning(s.into())
    }

    /// The first fragment of a call: index, name, empty arguments, id assigned by the server.
    pub fn call_start(index: usize, name: impl Into<String>) -> Self {
        Chunk::ToolCall {
            index,
            id: None,
            name: Some(name.into()),
            arguments: String::new(),
        }
    }

    /// A later fragment of a call's arguments.
    pub fn call_args(index: usize, fragment: impl Into<String>) -> Self {
        Chunk::ToolCall {
            index,
            id: None,
            name: None,
            arguments: fragment.into(),
        }
    }

    pub fn finish(reason: impl Into<String>) -> Self {
        Chunk::Finish(reason.into())
    }
}

/// A tool call for [`Reply::tool_calls`].
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub id: Option<String>,
    pub name: String,
    /// The arguments string as sent (normally JSON, but anything for bad-argument tests).
    pub arguments: String,
}

impl Call {
    pub fn new(name: impl Into<String>, arguments: Value) -> Self {
        Call {
            id: None,
            name: name.into(),
            arguments: arguments.to_string(),
        }
    }

    /// A call whose arguments string is sent verbatim (e.g. invalid JSON).
    pub fn raw(name: impl Into<String>, arguments: impl Into<String>) -> Self {
        Call {
            id: None,
            name: name.into(),
            arguments: arguments.into(),
        }
    }

    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Body {
    Stream(Vec<Chunk>),
    Error { status: u16, body: Value },
    Json(Value),
    Hang,
}

/// One scripted answer to a chat request.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub(crate) body: Body,
    /// Chunk `i` is written at `start + interval * (i + 1)` (a schedule, so pacing does not drift).
    pub(crate) interval: Duration,
    /// Close the connection after this many chunks (0: before the response head).
    pub(crate) cut_after: Option<usize>,
    /// Send nothing more after this many chunks, keeping the connection open until the client
    /// goes away (a server that stalls in the middle of an answer).
    pub(crate) stall_after: Option<usize>,
    pub(crate) headers: Vec<(String, String)>,
}

impl Reply {
    fn new(body: Body) -> Self {
        Reply {
            body,
            interval: Duration::ZERO,
            cut_after: None,
            stall_after: None,
            headers: Vec::new(),
        }
    }

    /// Exactly these chunks (add [`Chunk::Done`] yourself), one every `interval`.
    pub fn chunks(chunks: Vec<Chunk>, interval: Duration) -> Self {
        Reply {
            interval,
            ..Self::new(Body::Stream(chunks))
        }
    }

    /// A text answer streamed word by word, `finish_reason: "stop"`, `[DONE]`.
    pub fn text(text: &str) -> Self {
        let mut chunks: Vec<Chunk> = split_words(text).into_iter().map(Chunk::Text).collect();
        chunks.push(Chunk::finish("stop"));
        chunks.push(Chunk::Done);
        Self::new(Body::Stream(chunks))
    }

    /// One tool call, its arguments split across several deltas.
    pub fn tool_call(name: &str, arguments: Value) -> Self {
        Self::tool_calls(vec![Call::new(name, arguments)])
    }

    /// Several tool calls (indexes 0, 1, …), each sent whole before the next;
    /// `finish_reason: "tool_calls"`.
    pub fn tool_calls(calls: Vec<Call>) -> Self {
        let mut chunks = Vec::new();
        for (index, call) in calls.into_iter().enumerate() {
            chunks.push(Chunk::ToolCall {
                index,
                id: call.id,
                name: Some(call.name),
                arguments: String::new(),
            });
            for piece in split_in(&call.arguments, 3) {
                chunks.push(Chunk::call_args(index, piece));
            }
        }
        chunks.push(Chunk::finish("tool_calls"));
        chunks.push(Chunk::Done);
        Self::new(Body::Stream(chunks))
    }

    /// An event stream in a real server's shape (`data: …` events, each followed by a blank
    /// line, as in mm-model's fixtures/sse), sent byte for byte, whatever its events say.
    pub fn sse(recorded: &str) -> Self {
        let chunks = recorded
            .split_terminator("\n\n")
            .map(|event| match event.strip_prefix("data: ") {
                Some(data) if !data.contains('\n') => Chunk::Raw(data.to_string()),
                _ => panic!("not one `data:` line followed by a blank line: {event:?}"),
            })
            .collect();
        Self::new(Body::Stream(chunks))
    }

    /// An HTTP error with this JSON body.
    pub fn error(status: u16, body: Value) -> Self {
        Self::new(Body::Error { status, body })
    }

    /// llama.cpp's answer to a prompt longer than its context window (HTTP 400).
    pub fn context_exceeded(n_prompt_tokens: u64, n_ctx: u64) -> Self {
        let message = format!(
            "request ({n_prompt_tokens} tokens) exceeds the available context size \
             ({n_ctx} tokens), try increasing it"
        );
        Self::error(
            400,
            json!({"error": {"code": 400, "message": message, "type": "exceed_context_size_error",
                             "n_prompt_tokens": n_prompt_tokens, "n_ctx": n_ctx}}),
        )
    }

    /// A non-streamed answer with exactly this body (status 200).
    pub fn json(body: Value) -> Self {
        Self::new(Body::Json(body))
    }

    /// Streams `n` text chunks (`part0 `, `part1 `, …) then closes the connection in the middle
    /// of the response; `n = 0` closes it before sending anything (a reset before any byte).
    pub fn disconnect_after(n: usize) -> Self {
        let chunks = (0..n).map(|i| Chunk::Text(format!("part{i} "))).collect();
        Reply {
            cut_after: Some(n),
            ..Self::new(Body::Stream(chunks))
        }
    }

    /// Never answers; the connection stays open until the client drops it or the server stops.
    pub fn hang() -> Self {
        Self::new(Body::Hang)
    }

    /// Adds a usage chunk (empty `choices`) before the final `[DONE]`; for a non-streamed
    /// answer, the `usage` object.
    pub fn with_usage(mut self, prompt: u64, completion: u64) -> Self {
        if let Body::Stream(chunks) = &mut self.body {
            let at = if chunks.last() == Some(&Chunk::Done) {
                chunks.len() - 1
            } else {
                chunks.len()
            };
            chunks.insert(at, Chunk::Usage { prompt, completion });
        }
        self
    }

    /// Reasoning chunks (word by word) before everything else.
    pub fn with_reasoning(self, reasoning: &str) -> Self {
        self.prepend(split_words(reasoning).into_iter().map(Chunk::Reasoning))
    }

    /// Text chunks (word by word) before everything else, e.g. before tool calls.
    pub fn with_text_before(self, text: &str) -> Self {
        self.prepend(split_words(text).into_iter().map(Chunk::Text))
    }

    /// Waits `ms` milliseconds before each chunk.
    pub fn with_delay(self, ms: u64) -> Self {
        self.with_interval(Duration::from_millis(ms))
    }

    pub fn with_interval(mut self, interval: Duration) -> Self {
        self.interval = interval;
        self
    }

    /// Closes the connection after `n` chunks of this streamed answer.
    pub fn cut_after(mut self, n: usize) -> Self {
        self.cut_after = Some(n);
        self
    }

    /// Stops sending after `n` chunks of this streamed answer but keeps the connection open
    /// until the client gives up (an idle stream); counted as abandoned.
    pub fn stall_after(mut self, n: usize) -> Self {
        self.stall_after = Some(n);
        self
    }

    /// An extra response header (e.g. `Retry-After` on a 429).
    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    fn prepend(mut self, front: impl Iterator<Item = Chunk>) -> Self {
        if let Body::Stream(chunks) = &mut self.body {
            let mut all: Vec<Chunk> = front.collect();
            all.append(chunks);
            *chunks = all;
        }
        self
    }
}

/// Splits text into words, each keeping the whitespace before it: `"a b"` → `["a", " b"]`.
fn split_words(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut prev_space = true;
    for c in text.chars() {
        let space = c.is_whitespace();
        match out.last_mut() {
            Some(last) if !space || prev_space => last.push(c),
            _ => out.push(c.to_string()),
        }
        prev_space = space;
    }
    out
}

/// Splits `s` into at most `n` pieces of about equal length, on char boundaries.
fn split_in(s: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    if chars.is_empty() {
        return Vec::new();
    }
    let size = chars.len().div_ceil(n.max(1));
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

// ------------------------------------------------------------------ wire shape

fn chunk_json(model: &str, choices: Value) -> Value {
    json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0,
           "model": model, "choices": choices})
}

/// The payload of one `data:` line.
pub fn sse_data(chunk: &Chunk, id: Option<String>, model: &str, first_delta: &mut bool) -> String {
    let mut delta = match chunk {
        Chunk::Text(t) => json!({"content": t}),
        Chunk::Reasoning(t) => json!({"reasoning_content": t}),
        Chunk::ToolCall {
            index,
            name,
            arguments,
            ..
        } => {
            let mut call = json!({"index": index});
            if let Some(id) = id {
                call["id"] = json!(id);
                call["type"] = json!("function");
            }
            let mut function = json!({"arguments": arguments});
            if let Some(name) = name {
                function["name"] = json!(name);
            }
            call["function"] = function;
            json!({"tool_calls": [call]})
        }
        Chunk::Finish(reason) => {
            return chunk_json(
                model,
                json!([{"index": 0, "delta": {}, "finish_reason": reason}]),
            )
            .to_string();
        }
        Chunk::Usage { prompt, completion } => {
            let mut v = chunk_json(model, json!([]));
            v["usage"] = json!({"prompt_tokens": prompt, "completion_tokens": completion,
                                "total_tokens": prompt + completion});
            return v.to_string();
        }
        Chunk::Delta(d) => d.clone(),
        Chunk::Raw(s) => return s.clone(),
        Chunk::Done => return "[DONE]".to_string(),
    };
    if std::mem::take(first_delta)
        && let Some(obj) = delta.as_object_mut()
    {
        obj.insert("role".into(), json!("assistant"));
    }
    chunk_json(
        model,
        json!([{"index": 0, "delta": delta, "finish_reason": null}]),
    )
    .to_string()
}

/// The non-streamed form of a streamed reply (for `stream: false` requests).
pub(crate) fn completion(chunks: &[Chunk], ids: &[Option<String>], model: &str) -> Value {
    let mut content = String::new();
    let mut reasoning = String::new();
    let mut calls: Vec<Value> = Vec::new();
    let mut finish = Value::Null;
    let mut usage = Value::Null;
    for (chunk, id) in chunks.iter().zip(ids) {
        match chunk {
            Chunk::Text(t) => content.push_str(t),
            Chunk::Reasoning(t) => reasoning.push_str(t),
            Chunk::ToolCall {
                index,
                name,
                arguments,
                ..
            } => {
                while calls.len() <= *index {
                    calls.push(json!({"id": "", "type": "function",
                                      "function": {"name": "", "arguments": ""}}));
                }
                let call = &mut calls[*index];
                if let Some(id) = id {
                    call["id"] = json!(id);
                }
                if let Some(name) = name {
                    call["function"]["name"] = json!(name);
                }
                let args = call["function"]["arguments"].as_str().unwrap_or("");
                call["function"]["arguments"] = json!(format!("{args}{arguments}"));
            }
            Chunk::Finish(r) => finish = json!(r),
            Chunk::Usage { prompt, completion } => {
                usage = json!({"prompt_tokens": prompt, "completion_tokens": completion,
                               "total_tokens": prompt + completion});
            }
            Chunk::Delta(_) | Chunk::Raw(_) | Chunk::Done => {}
        }
    }
    let mut message = json!({"role": "assistant", "content": content});
    if !reasoning.is_empty() {
        message["reasoning_content"] = json!(reasoning);
    }
    if !calls.is_empty() {
        message["tool_calls"] = Value::Array(calls);
    }
    let mut v = json!({"id": "chatcmpl-fake", "object": "chat.completion", "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}]});
    if !usage.is_null() {
        v["usage"] = usage;
    }
    v
}

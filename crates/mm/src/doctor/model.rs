//! The checks of the model server, each a real request: found (where, which kind), its model,
//! streaming, the context window, a tool-call round trip, the prompt cache.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{Check, Status, Topic};
use crate::config::Loaded;
use crate::model::detect::{self, Detected, ServerKind};
use crate::model::openai::{ClientOptions, OpenAiClient, RawRequest};
use crate::model::text_calls::{Family, Format, TextCalls, Tools, recover, written_format};
use crate::model::{ModelClient, ModelError, ModelResponse, RawToolCall, StreamEvent};

/// The longest the server may stay silent during one of these requests (loading a model
/// included), whatever `model.requestTimeout` says: the doctor must not hang for ten minutes.
const QUIET_LIMIT: Duration = Duration::from_secs(120);

/// Under this window an agent cannot work: the system prompt and the tools' schemas take most
/// of it (Ollama's default of 4096 is the usual case).
pub const TOO_SMALL_WINDOW: u64 = 8_192;

/// The tool offered in the tool-call check.
const TOOL: &str = "get_time";
/// The tool-call request's `max_tokens`: a call is short, a model that thinks first needs room.
const TOOL_TOKENS: u64 = 256;
/// What the tool "returns" in the round trip.
const TOOL_RESULT: &str = "14:05";

/// The streaming and prompt-cache requests start with this: long enough that a server's prompt
/// cache has something to reuse (servers cache in blocks of 16 tokens or more).
const PREFIX: &str = "You are a careful assistant taking part in a health check of a local model \
server. The check sends the same long introduction twice and compares how many of its tokens the \
server had to read again: a server that keeps its prompt cache reads only the new end of a \
conversation, which is what makes an agent fast on a long session. Answer briefly and plainly, \
without markdown, without reasoning out loud, and without asking questions back. Numbers are \
written with digits and separated by single spaces. Nothing in this introduction needs an answer \
of its own; only the user's last message does.";

const COUNT: &str = "Count from 1 to 10.";

/// How many characters of a model's text a line quotes.
const QUOTE_CHARS: usize = 60;

/// Runs the model checks in order, giving each to `push` when it is done.
pub(super) async fn checks(
    loaded: &Loaded,
    options: ClientOptions,
    push: &mut (dyn FnMut(Check) + Send),
) {
    let config = &loaded.config;
    let mut model_config = config.model.clone();
    model_config.request_timeout = model_config.request_timeout.min(QUIET_LIMIT);
    let options = options.skipping(&config.tools.network.expose);
    let candidates = options.candidates.clone();
    let client = OpenAiClient::with_options(&model_config, config.context_window, options);
    let cancel = CancellationToken::new();
    let skip = |push: &mut (dyn FnMut(Check) + Send), why: &str, topics: &[Topic]| {
        for topic in topics {
            push(Check::new(
                *topic,
                Status::Skip,
                format!("not checked: {why}"),
            ));
        }
    };
    let rest = [
        Topic::Model,
        Topic::Streaming,
        Topic::ContextWindow,
        Topic::ToolCalls,
        Topic::PromptCache,
    ];
    let detected = match client.detected(&cancel).await {
        Ok(d) => d,
        Err(e) => {
            push(server_missing(&e, loaded, &candidates));
            skip(push, "no model server", &rest);
            return;
        }
    };
    push(server_found(&detected, loaded));
    let model = model_check(&detected, loaded);
    let no_model = model.status == Status::Fail;
    push(model);
    if no_model {
        skip(push, "no model", &rest[1..]);
        return;
    }
    let kind = detected.kind;
    // Asked first, while the server is idle: busy generating, llama-server may take seconds
    // to answer even this.
    let template = template_has_tools(&client, kind, &cancel).await;
    let streaming = streaming(&client, kind, &cancel).await;
    let answers = streaming.status != Status::Fail;
    push(streaming);
    push(window(&client, loaded, kind, &cancel).await);
    if !answers {
        skip(push, "the model does not answer", &rest[3..]);
        return;
    }
    let family = detected.family;
    let fix = tool_fix(kind, template, family);
    push(tool_calls(&client, loaded, &fix, family, &cancel).await);
    push(prompt_cache(&client, kind, &cancel).await);
}

fn server_missing(
    error: &ModelError,
    loaded: &Loaded,
    candidates: &[(ServerKind, String)],
) -> Check {
    let url = loaded.config.model.url.trim();
    if url.is_empty() {
        return Check::new(
            Topic::Server,
            Status::Fail,
            format!(
                "no model server found (tried {})",
                detect::tried(candidates)
            ),
        )
        .fix(detect::NO_SERVER_FIX);
    }
    let source = loaded.source_of("model.url");
    match error {
        ModelError::Unreachable { url, reason } => Check::new(
            Topic::Server,
            Status::Fail,
            format!("not reachable at {url}: {reason}"),
        )
        .fix(format!(
            "start the server, or correct model.url (set by {source})"
        )),
        ModelError::Refused { url } => Check::new(
            Topic::Server,
            Status::Fail,
            format!("not reachable at {url}: connection refused"),
        )
        .fix(format!(
            "start the server, or correct model.url (set by {source})"
        )),
        other => Check::new(Topic::Server, Status::Fail, other.to_string())
            .fix(format!("check model.url (set by {source})")),
    }
}

fn server_found(detected: &Detected, loaded: &Loaded) -> Check {
    let how = if loaded.config.model.url.trim().is_empty() {
        "found by detection; model.url is not set".to_string()
    } else {
        format!("model.url, set by {}", loaded.source_of("model.url"))
    };
    Check::new(
        Topic::Server,
        Status::Ok,
        format!("{} at {} ({how})", detected.kind.label(), detected.url),
    )
    .details(json!({"url": detected.url, "kind": detected.kind.label()}))
}

fn model_check(detected: &Detected, loaded: &Loaded) -> Check {
    let listed: Vec<String> = detected
        .models
        .get("data")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|m| m.get("id").and_then(Value::as_str))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let details = json!({"name": detected.name, "listed": listed});
    let name = &detected.name;
    if name.is_empty() {
        return Check::new(Topic::Model, Status::Fail, "the server lists no model")
            .fix("load a model in the server, or name one with model.name (MM_MODEL, --model)")
            .details(details);
    }
    let configured = !loaded.config.model.name.is_empty();
    if configured && !listed.is_empty() && !listed.contains(name) {
        return Check::new(
            Topic::Model,
            Status::Warn,
            format!(
                "{name} (model.name, set by {}) is not among the models the server lists: {}",
                loaded.source_of("model.name"),
                listed.join(", ")
            ),
        )
        .fix("set model.name to one of them")
        .details(details);
    }
    let summary = if configured {
        format!(
            "{name} (model.name, set by {})",
            loaded.source_of("model.name")
        )
    } else if listed.len() > 1 {
        format!(
            "{name} ({} listed; model.name or --model picks another)",
            listed.len()
        )
    } else {
        name.clone()
    };
    Check::new(Topic::Model, Status::Ok, summary).details(details)
}

fn system(text: &str) -> Value {
    json!({"role": "system", "content": text})
}

fn user(text: &str) -> Value {
    json!({"role": "user", "content": text})
}

/// What a failed request's line adds about fixing it.
fn fix_for(error: &ModelError, kind: ServerKind) -> Option<String> {
    match error {
        ModelError::ContextExceeded { .. } => Some(detect::raise_window_hint(kind).to_string()),
        ModelError::Timeout { .. } => Some(
            "the server sent nothing for 2 minutes: is the model still loading, or the machine too busy? Run mm doctor again"
                .to_string(),
        ),
        ModelError::Unreachable { .. }
        | ModelError::Refused { .. }
        | ModelError::StreamBroke { .. } => {
            Some("is the server still running? Its log says why it stopped answering".to_string())
        }
        ModelError::Http { .. }
        | ModelError::Malformed(_)
        | ModelError::NoServer(_)
        | ModelError::Cancelled => None,
    }
}

async fn streaming(client: &OpenAiClient, kind: ServerKind, cancel: &CancellationToken) -> Check {
    // (pieces received, when the first came)
    let seen: Mutex<(u64, Option<Instant>)> = Mutex::new((0, None));
    let on_event = |_: StreamEvent| {
        if let Ok(mut s) = seen.lock() {
            s.0 += 1;
            s.1.get_or_insert_with(Instant::now);
        }
    };
    let request = RawRequest {
        messages: vec![system(PREFIX), user(COUNT)],
        max_tokens: Some(32),
        stream: true,
        ..RawRequest::default()
    };
    let started = Instant::now();
    let result = client.raw_chat(&request, &on_event, cancel).await;
    let took = started.elapsed().as_secs_f64();
    let (pieces, first) = seen.lock().map(|s| *s).unwrap_or((0, None));
    let response = match result {
        Ok(r) => r,
        Err(e) => {
            return Check::new(Topic::Streaming, Status::Fail, e.to_string())
                .fix_opt(fix_for(&e, kind));
        }
    };
    let tokens = response
        .usage
        .map(|u| u.output_tokens)
        .filter(|n| *n > 0)
        .unwrap_or(pieces);
    let first = first.map_or(took, |f| f.duration_since(started).as_secs_f64());
    let details =
        json!({"tokens": tokens, "pieces": pieces, "seconds": took, "firstTokenSeconds": first});
    if pieces == 0 {
        return Check::new(
            Topic::Streaming,
            Status::Warn,
            format!(
                "the model's answer was empty (finish_reason {})",
                finish(&response)
            ),
        )
        .details(details);
    }
    if pieces == 1 && tokens > 1 {
        return Check::new(
            Topic::Streaming,
            Status::Warn,
            format!("{tokens} tokens came in one piece: the server does not stream, so answers show only once complete"),
        )
        .details(details);
    }
    Check::new(
        Topic::Streaming,
        Status::Ok,
        format!("{tokens} tokens in {took:.1}s (first after {first:.1}s)"),
    )
    .details(details)
}

fn finish(response: &ModelResponse) -> &str {
    response.finish_reason.as_deref().unwrap_or("none")
}

async fn window(
    client: &OpenAiClient,
    loaded: &Loaded,
    kind: ServerKind,
    cancel: &CancellationToken,
) -> Check {
    let tokens = client.info(cancel).await.map_or(0, |i| i.context_window);
    let configured = loaded.config.context_window != 0;
    let source = if configured {
        format!(
            " (contextWindow, set by {})",
            loaded.source_of("contextWindow")
        )
    } else {
        String::new()
    };
    let details = json!({"tokens": tokens, "configured": configured});
    let hint = detect::raise_window_hint(kind);
    if tokens == 0 {
        return Check::new(Topic::ContextWindow, Status::Warn, "unknown: the server does not say")
            .fix("set contextWindow to the size the server was started with, so mm compresses the history in time")
            .details(details);
    }
    if tokens < TOO_SMALL_WINDOW {
        return Check::new(
            Topic::ContextWindow,
            Status::Fail,
            format!("{tokens} tokens{source}: too small for an agent, the system prompt and the tools take most of it"),
        )
        .fix(hint)
        .details(details);
    }
    if tokens < detect::SMALL_WINDOW {
        return Check::new(
            Topic::ContextWindow,
            Status::Warn,
            format!(
                "{tokens} tokens{source}: small for an agent, long sessions are compressed often"
            ),
        )
        .fix(hint)
        .details(details);
    }
    Check::new(
        Topic::ContextWindow,
        Status::Ok,
        format!("{tokens} tokens{source}"),
    )
    .details(details)
}

/// The one tool offered.
fn tool() -> Value {
    json!({"type": "function", "function": {
        "name": TOOL,
        "description": "Get the current time in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    }})
}

/// vLLM's `--tool-call-parser` for a family, where it has one of its own.
fn vllm_parser(family: Option<Family>) -> Option<&'static str> {
    Some(match family? {
        Family::Qwen => "hermes",
        Family::Qwen3Coder => "qwen3_coder",
        Family::Llama => "llama3_json",
        Family::Mistral => "mistral",
        Family::DeepSeek => "deepseek_v3",
        Family::Kimi => "kimi_k2",
        Family::Glm => "glm45",
        Family::GptOss => "openai",
        Family::Granite => "granite",
        Family::Xlam => "xlam",
        Family::Step3 => "step3",
        Family::LongCat => "longcat",
        Family::GigaChat => "gigachat3",
        Family::Lfm2
        | Family::Gemma
        | Family::CommandR
        | Family::Functionary
        | Family::Firefunction
        | Family::MiniMax
        | Family::Apertus
        | Family::Nemotron => return None,
    })
}

/// How to get structured tool calls from that server; `template_has_tools` is what llama.cpp's
/// `/props` says of the chat template in use (`chat_template_caps.supports_tool_calls`),
/// `family` the model's as detection found it.
pub fn tool_fix(
    kind: ServerKind,
    template_has_tools: Option<bool>,
    family: Option<Family>,
) -> String {
    if kind == ServerKind::Vllm {
        let parser = vllm_parser(family).unwrap_or("<the model's parser>");
        return format!(
            "restart vLLM with `--enable-auto-tool-choice --tool-call-parser {parser}`"
        );
    }
    let fix = match (kind, template_has_tools) {
        (ServerKind::LlamaCpp, Some(true)) => {
            "llama-server parses tool calls with this chat template, but the model does not make them: use a model trained for tool calls"
        }
        (ServerKind::LlamaCpp, Some(false)) => {
            "the chat template in use has no tool calls: restart llama-server with `--jinja` and a template that has them (`--chat-template-file`)"
        }
        (ServerKind::LlamaCpp, None) => {
            "restart llama-server with `--jinja` (and a model whose chat template has tool calls, or `--chat-template-file`)"
        }
        (ServerKind::Ollama, _) => {
            "use a model with tool support (`ollama show <model>` lists `tools` among its capabilities)"
        }
        (ServerKind::LmStudio, _) => "load a model with tool-use support (LM Studio marks them)",
        (ServerKind::DockerModelRunner, _) => "use a model whose chat template has tool calls",
        (ServerKind::Vllm | ServerKind::Unknown, _) => {
            "turn on tool calling in the server, or use a model trained for tool calls"
        }
    };
    fix.to_string()
}

/// Whether llama.cpp's chat template handles tool calls, when the server says.
async fn template_has_tools(
    client: &OpenAiClient,
    kind: ServerKind,
    cancel: &CancellationToken,
) -> Option<bool> {
    if kind != ServerKind::LlamaCpp {
        return None;
    }
    let props = client
        .get_native("/props", Duration::from_secs(10), cancel)
        .await?;
    props
        .get("chat_template_caps")?
        .get("supports_tool_calls")?
        .as_bool()
}

/// What text-call recovery knows in the probe: its one tool, the model's family.
fn probe_setup(family: Option<Family>) -> TextCalls {
    TextCalls {
        tools: Tools::from_wire(&[tool()], &[TOOL.to_string()]),
        family,
    }
}

/// A call written in the text, as mm's text-call recovery reads it (docs/engine.md), and the
/// format it was written in.
fn text_call(text: &str, family: Option<Family>) -> Option<(RawToolCall, Format)> {
    let recovered = recover(text, &probe_setup(family))?;
    let format = recovered.format;
    recovered
        .calls
        .into_iter()
        .next()
        .map(|call| (call, format))
}

fn clip(text: &str) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() > QUOTE_CHARS {
        let cut: String = one_line.chars().take(QUOTE_CHARS - 1).collect();
        format!("{cut}…")
    } else {
        one_line
    }
}

/// One tool and `tool_choice: "required"`: the call must come back structured; then the call
/// and a result go back as mm sends them (tools, no `tool_choice`), and the server must take them.
async fn tool_calls(
    client: &OpenAiClient,
    loaded: &Loaded,
    fix: &str,
    family: Option<Family>,
    cancel: &CancellationToken,
) -> Check {
    let messages = vec![
        system("You are a helpful assistant. Use the tools you are given."),
        user("What time is it in Paris? Answer by calling the get_time tool."),
    ];
    let mut request = RawRequest {
        messages: messages.clone(),
        tools: vec![tool()],
        tool_choice: Some(json!("required")),
        max_tokens: Some(TOOL_TOKENS),
        stream: true,
    };
    // A model that thinks first may spend the tokens before it answers.
    let thought = std::sync::atomic::AtomicBool::new(false);
    let on_event = |e: StreamEvent| {
        if let StreamEvent::Thought(_) = e {
            thought.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    };
    let mut result = client.raw_chat(&request, &on_event, cancel).await;
    // A server that does not know `tool_choice` may refuse it: mm itself never sends it.
    let mut choice_refused = false;
    if let Err(ModelError::Http { status: 400, .. }) = &result {
        request.tool_choice = None;
        let again = client.raw_chat(&request, &on_event, cancel).await;
        if again.is_ok() {
            choice_refused = true;
            result = again;
        }
    }
    let response = match result {
        Ok(r) => r,
        Err(e) => {
            return Check::new(
                Topic::ToolCalls,
                Status::Fail,
                format!("the server refused a request with a tool: {e}"),
            )
            .fix(fix)
            .details(json!({"came": "error"}));
        }
    };
    let (call, format) = match response.tool_calls.first() {
        Some(call) => (call.clone(), None),
        None => match text_call(&response.text, family) {
            Some((call, format)) => (call, Some(format)),
            None => {
                if let Some(format) = written_format(&response.text, &probe_setup(family)) {
                    return Check::new(
                        Topic::ToolCalls,
                        Status::Fail,
                        format!(
                            "the model wrote its call as text ({}), but mm could not read it: \"{}\"",
                            format.label(),
                            clip(&response.text)
                        ),
                    )
                    .fix(fix)
                    .details(json!({"came": "text", "format": format.id(), "recovered": false, "text": response.text}));
                }
                let silent = finish(&response) == "length" && response.text.trim().is_empty();
                if silent && thought.load(std::sync::atomic::Ordering::Relaxed) {
                    return Check::new(
                        Topic::ToolCalls,
                        Status::Skip,
                        format!("not known: the model was still thinking when this check's {TOOL_TOKENS} tokens ran out"),
                    )
                    .details(json!({"came": "thoughts"}));
                }
                let why = if silent {
                    format!("the answer reached {TOOL_TOKENS} tokens without a call or any text")
                } else {
                    format!(
                        "the model answered with text, not a call: \"{}\"",
                        clip(&response.text)
                    )
                };
                return Check::new(Topic::ToolCalls, Status::Fail, why)
                    .fix(fix)
                    .details(json!({"came": "text", "text": response.text}));
            }
        },
    };
    let shown = format!("{}({})", call.name, clip(&call.arguments));
    let id = if call.id.is_empty() {
        "call_1".to_string()
    } else {
        call.id.clone()
    };
    let mut history = messages;
    history.push(json!({"role": "assistant", "content": "", "tool_calls": [
        {"id": id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}
    ]}));
    history.push(json!({"role": "tool", "tool_call_id": id, "content": TOOL_RESULT}));
    let follow = RawRequest {
        messages: history,
        tools: vec![tool()],
        tool_choice: None,
        max_tokens: Some(48),
        stream: true,
    };
    let structured = format.is_none();
    let mut details = json!({
        "came": if structured { "structured" } else { "text" },
        "call": {"name": call.name, "arguments": call.arguments},
        "toolChoiceRefused": choice_refused,
    });
    if let Some(format) = format {
        details["format"] = json!(format.id());
        details["recovered"] = json!(true);
    }
    if let Err(e) = client.raw_chat(&follow, &|_| {}, cancel).await {
        return Check::new(
            Topic::ToolCalls,
            Status::Fail,
            format!("{shown} came back, but the server refused its result: {e}"),
        )
        .fix(fix)
        .details(details);
    }
    let refused = if choice_refused {
        " (the server refused tool_choice, asked without it)"
    } else {
        ""
    };
    if structured {
        return Check::new(
            Topic::ToolCalls,
            Status::Ok,
            format!(
                "{shown} came back as a structured call, and the server took its result{refused}"
            ),
        )
        .details(details);
    }
    let written = format.map_or(String::new(), |f| format!(" ({})", f.label()));
    if loaded.config.model.text_tool_calls {
        Check::new(
            Topic::ToolCalls,
            Status::Warn,
            format!("{shown} came back written as text{written}: mm reads it (model.textToolCalls = \"auto\"), but the server does not parse tool calls{refused}"),
        )
        .fix(fix)
        .details(details)
    } else {
        Check::new(
            Topic::ToolCalls,
            Status::Fail,
            format!("{shown} came back written as text{written}, which mm reads only with model.textToolCalls = \"auto\" (it is \"off\"){refused}"),
        )
        .fix(format!("set model.textToolCalls = \"auto\", or {fix}"))
        .details(details)
    }
}

/// How to keep the prompt cache on that server.
fn cache_fix(kind: ServerKind) -> &'static str {
    match kind {
        ServerKind::LlamaCpp => {
            "keep llama-server's prompt cache on (the default: `cache_prompt`), with one slot per client (`--parallel 1`)"
        }
        ServerKind::Vllm => "start vLLM with `--enable-prefix-caching`",
        ServerKind::Ollama
        | ServerKind::LmStudio
        | ServerKind::DockerModelRunner
        | ServerKind::Unknown => "check the server's prompt-cache settings",
    }
}

/// The streaming request again, word for word: how much of its prompt the server kept.
async fn prompt_cache(
    client: &OpenAiClient,
    kind: ServerKind,
    cancel: &CancellationToken,
) -> Check {
    let request = RawRequest {
        messages: vec![system(PREFIX), user(COUNT)],
        max_tokens: Some(1),
        stream: true,
        ..RawRequest::default()
    };
    let usage = match client.raw_chat(&request, &|_| {}, cancel).await {
        Ok(r) => r.usage,
        Err(e) => {
            return Check::new(
                Topic::PromptCache,
                Status::Skip,
                format!("not checked: {e}"),
            );
        }
    };
    let Some(usage) = usage else {
        return Check::new(
            Topic::PromptCache,
            Status::Skip,
            "the server reports no usage, so whether it reuses the prompt is not known",
        );
    };
    let prompt = usage.input_tokens;
    let details = json!({"promptTokens": prompt, "cachedTokens": usage.cached_read_tokens});
    match usage.cached_read_tokens {
        None => Check::new(
            Topic::PromptCache,
            Status::Skip,
            "the server does not report cached tokens, so whether it reuses the prompt is not known",
        )
        .details(details),
        Some(0) => Check::new(
            Topic::PromptCache,
            Status::Warn,
            format!("0 of {prompt} prompt tokens cached on a repeated request: every turn reads the whole history again"),
        )
        .fix(cache_fix(kind))
        .details(details),
        Some(cached) => Check::new(
            Topic::PromptCache,
            Status::Ok,
            format!("{cached} of {prompt} prompt tokens cached on a repeated request"),
        )
        .details(details),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn calls_written_as_text_are_read_as_mm_reads_them() {
        let (call, format) = text_call(
            "<tool_call>{\"name\": \"get_time\", \"arguments\": {\"city\": \"Paris\"}}</tool_call>",
            None,
        )
        .unwrap();
        assert_eq!(
            (call.name.as_str(), call.arguments.as_str(), format),
            ("get_time", "{\"city\":\"Paris\"}", Format::Hermes)
        );
        assert_eq!(text_call("It is noon in Paris.", None), None);
        // The family's own markerless form: Functionary's first call without `>>>`.
        let first = "get_time\n{\"city\": \"Paris\"}";
        assert_eq!(text_call(first, None), None);
        assert_eq!(
            text_call(first, Some(Family::Functionary)).map(|(c, f)| (c.name, f)),
            Some(("get_time".to_string(), Format::Functionary))
        );
        assert_eq!(clip(&"word ".repeat(30)).chars().count(), QUOTE_CHARS);
    }

    #[test]
    fn the_vllm_fix_names_the_familys_parser() {
        assert_eq!(
            tool_fix(ServerKind::Vllm, None, Some(Family::Qwen3Coder)),
            "restart vLLM with `--enable-auto-tool-choice --tool-call-parser qwen3_coder`"
        );
        assert_eq!(
            tool_fix(ServerKind::Vllm, None, None),
            "restart vLLM with `--enable-auto-tool-choice --tool-call-parser <the model's parser>`"
        );
        for (name, parser) in [
            ("meituan-longcat/LongCat-Flash-Chat", "longcat"),
            ("ai-sage/GigaChat3-10B-A1.8B", "gigachat3"),
            ("stepfun-ai/step3", "step3"),
        ] {
            assert_eq!(
                tool_fix(ServerKind::Vllm, None, Family::from_name(name)),
                format!(
                    "restart vLLM with `--enable-auto-tool-choice --tool-call-parser {parser}`"
                )
            );
        }
    }
}

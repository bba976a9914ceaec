//! Finding the server, its model and its context window (docs/engine.md): probes with short
//! timeouts that never fail loudly, since each server exposes a different subset of endpoints.

use std::time::Duration;

use futures::future::join_all;
use serde_json::{Value, json};

use super::text_calls::Family;
use super::{ModelError, ModelStatus};

/// How long one probe may take.
pub const PROBE_TIMEOUT: Duration = Duration::from_millis(1500);

/// The kind of server behind the URL (for the context-window probe and the banner's hints).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerKind {
    LlamaCpp,
    Ollama,
    LmStudio,
    DockerModelRunner,
    Vllm,
    Unknown,
}

impl ServerKind {
    pub fn label(self) -> &'static str {
        match self {
            ServerKind::LlamaCpp => "llama.cpp",
            ServerKind::Ollama => "Ollama",
            ServerKind::LmStudio => "LM Studio",
            ServerKind::DockerModelRunner => "Docker Model Runner",
            ServerKind::Vllm => "vLLM",
            ServerKind::Unknown => "an OpenAI-compatible server",
        }
    }

    /// Servers that load models on demand, whose window is known only once the model is loaded.
    pub fn loads_on_demand(self) -> bool {
        matches!(self, ServerKind::Ollama | ServerKind::LmStudio)
    }
}

/// The window under which the banner warns that an agent will struggle.
pub const SMALL_WINDOW: u64 = 16_384;

/// How to raise the context window on that server (the banner's hint for a small window).
pub fn raise_window_hint(kind: ServerKind) -> &'static str {
    match kind {
        ServerKind::LlamaCpp => "restart llama-server with a larger context, e.g. `-c 32768`",
        ServerKind::Ollama => {
            "start Ollama with `OLLAMA_CONTEXT_LENGTH=32768 ollama serve` (or set `num_ctx` in a Modelfile)"
        }
        ServerKind::LmStudio => {
            "reload the model with a larger context length, e.g. `lms load <model> --context-length 32768`"
        }
        ServerKind::DockerModelRunner => {
            "configure the model with a larger context, e.g. `docker model configure --context-size 32768 <model>`"
        }
        ServerKind::Vllm => "restart vLLM with a larger `--max-model-len`",
        ServerKind::Unknown => "raise the context size in your model server's settings",
    }
}

/// The line the banner shows when the window is known and small; `None` otherwise.
pub fn small_window_warning(context_window: u64, kind: ServerKind) -> Option<String> {
    (context_window > 0 && context_window < SMALL_WINDOW).then(|| {
        format!(
            "context window {context_window} tokens is small for an agent: {}",
            raise_window_hint(kind)
        )
    })
}

/// Where `scripts/local-model.sh start` serves its small llama.cpp model.
pub const LOCAL_MODEL_SCRIPT_URL: &str = "http://127.0.0.1:8089/v1";

/// The well-known local addresses, in the order they are preferred, then the project's own
/// script's server: last, so a server the user runs on a usual port wins over it.
pub fn default_candidates() -> Vec<(ServerKind, String)> {
    vec![
        (ServerKind::LlamaCpp, "http://127.0.0.1:8080/v1".into()),
        // llama-server's new default port (ggml-org/llama.cpp#26508), after the old one.
        (ServerKind::LlamaCpp, "http://127.0.0.1:9931/v1".into()),
        (ServerKind::Ollama, "http://127.0.0.1:11434/v1".into()),
        (ServerKind::LmStudio, "http://127.0.0.1:1234/v1".into()),
        (
            ServerKind::DockerModelRunner,
            "http://127.0.0.1:12434/engines/v1".into(),
        ),
        (ServerKind::Vllm, "http://127.0.0.1:8000/v1".into()),
        (ServerKind::LlamaCpp, LOCAL_MODEL_SCRIPT_URL.into()),
    ]
}

/// Whether `url` (a candidate's) names `port` explicitly.
pub fn on_port(url: &str, port: u16) -> bool {
    let authority = url
        .split_once("://")
        .map_or(url, |(_, rest)| rest)
        .split('/')
        .next()
        .unwrap_or("");
    authority
        .rsplit_once(':')
        .and_then(|(_, p)| p.parse::<u16>().ok())
        == Some(port)
}

/// The base URL without its trailing `/v1` (or `/engines/v1`): where the native endpoints live.
pub fn server_root(url: &str) -> String {
    let url = url.trim_end_matches('/');
    let root = url
        .strip_suffix("/engines/v1")
        .or_else(|| url.strip_suffix("/v1"))
        .unwrap_or(url);
    root.to_string()
}

/// What detection found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Detected {
    /// Base URL, without a trailing slash.
    pub url: String,
    pub root: String,
    pub name: String,
    pub kind: ServerKind,
    /// The `/models` listing, when the server gave one.
    pub models: Value,
    /// The model's family, as its chat template or its name says ([`probe_family`]).
    pub family: Option<Family>,
    /// llama.cpp's router mode: one server, many models loaded on demand, each with its status
    /// in the listing and its own `/props?model=…`.
    pub router: bool,
    /// The configured URL gave no model listing, although a name is configured so detection
    /// went on: what it answered, and the fix (the banner's warning).
    pub problem: Option<String>,
}

/// GET/POST helpers that answer `None` for anything but a 200 with JSON.
#[derive(Debug, Clone)]
pub struct Prober {
    pub http: reqwest::Client,
    pub api_key: String,
    pub timeout: Duration,
}

impl Prober {
    async fn send(&self, request: reqwest::RequestBuilder) -> Option<Value> {
        let mut request = request.timeout(self.timeout);
        if !self.api_key.is_empty() {
            request = request.bearer_auth(&self.api_key);
        }
        let response = request.send().await.ok()?;
        if !response.status().is_success() {
            return None;
        }
        response.json::<Value>().await.ok()
    }

    pub async fn get(&self, url: &str) -> Option<Value> {
        self.send(self.http.get(url)).await
    }

    pub async fn post(&self, url: &str, body: &Value) -> Option<Value> {
        self.send(self.http.post(url).json(body)).await
    }

    /// `GET {url}/models` when it answers a `data` array.
    async fn list_models(&self, url: &str) -> Option<Value> {
        self.get(&format!("{url}/models"))
            .await
            .filter(|v| v.get("data").is_some_and(Value::is_array))
    }
}

impl Prober {
    /// `GET {url}/models`, saying why it failed: an HTTP error is the server's answer (with its
    /// message, as for a chat request), not an unreachable server.
    async fn list_models_checked(&self, url: &str) -> Result<Value, ModelError> {
        let unreachable = |reason: String| ModelError::Unreachable {
            url: url.to_string(),
            reason,
        };
        let mut request = self.http.get(format!("{url}/models")).timeout(self.timeout);
        if !self.api_key.is_empty() {
            request = request.bearer_auth(&self.api_key);
        }
        let response = request
            .send()
            .await
            .map_err(|e| crate::errors::transport_error(url, &e).0)?;
        let status = response.status().as_u16();
        if status != 200 {
            let body = response.text().await.unwrap_or_default();
            return Err(crate::errors::http_error(status, &body));
        }
        response
            .json::<Value>()
            .await
            .ok()
            .filter(|v| v.get("data").is_some_and(Value::is_array))
            .ok_or_else(|| unreachable("GET /models did not answer a model list".to_string()))
    }
}

/// What to do when no server was found.
pub const NO_SERVER_FIX: &str = "start one, e.g. `llama-server -m model.gguf --jinja` (on its default port, 8080 or 9931) or `ollama serve`, or set MM_MODEL_URL / --url";

/// The addresses probed, each with the server expected there.
pub fn tried(candidates: &[(ServerKind, String)]) -> String {
    let tried: Vec<String> = candidates
        .iter()
        .map(|(kind, url)| format!("{url} ({})", kind.label()))
        .collect();
    tried.join(", ")
}

fn no_server_message(candidates: &[(ServerKind, String)]) -> String {
    format!(
        "no model server found (tried {}); {NO_SERVER_FIX}",
        tried(candidates)
    )
}

/// Probes the candidates at once and takes the first, in their order, that lists models.
pub async fn find_server(
    prober: &Prober,
    candidates: &[(ServerKind, String)],
) -> Result<(ServerKind, String, Value), ModelError> {
    let listings = join_all(candidates.iter().map(|(_, url)| prober.list_models(url))).await;
    candidates
        .iter()
        .zip(listings)
        .find_map(|((kind, url), listing)| listing.map(|l| (*kind, url.clone(), l)))
        .ok_or_else(|| ModelError::NoServer(no_server_message(candidates)))
}

/// What kind of server a configured URL points at.
async fn identify(prober: &Prober, url: &str, root: &str, models: &Value) -> ServerKind {
    if url.ends_with("/engines/v1") {
        return ServerKind::DockerModelRunner;
    }
    let owners: Vec<&str> = model_list(models)
        .iter()
        .filter_map(|m| m.get("owned_by").and_then(Value::as_str))
        .collect();
    if owners.contains(&"vllm") {
        return ServerKind::Vllm;
    }
    if owners.contains(&"llamacpp") || is_router(models) {
        return ServerKind::LlamaCpp;
    }
    let (props_url, version_url, lms_url) = (
        format!("{root}/props"),
        format!("{root}/api/version"),
        format!("{root}/api/v0/models"),
    );
    let (props, version, lms) = tokio::join!(
        prober.get(&props_url),
        prober.get(&version_url),
        prober.get(&lms_url),
    );
    if props.is_some_and(|p| p.get("default_generation_settings").is_some()) {
        ServerKind::LlamaCpp
    } else if version.is_some_and(|v| v.get("version").is_some()) {
        ServerKind::Ollama
    } else if lms.is_some_and(|v| v.get("data").is_some_and(Value::is_array)) {
        ServerKind::LmStudio
    } else {
        ServerKind::Unknown
    }
}

fn model_list(models: &Value) -> &[Value] {
    models
        .get("data")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

fn str_field<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// A listing with a `status` per model: llama.cpp's router mode (its README, "Using multiple
/// models").
pub fn is_router(models: &Value) -> bool {
    model_list(models)
        .iter()
        .any(|m| m.get("status").and_then(ModelStatus::parse).is_some())
}

/// What a router's listing says of `name`.
pub fn model_status(models: &Value, name: &str) -> Option<ModelStatus> {
    model_list(models)
        .iter()
        .find(|m| str_field(m, "id") == Some(name))
        .and_then(|m| m.get("status"))
        .and_then(ModelStatus::parse)
}

fn is_embedding(id: &str) -> bool {
    id.to_ascii_lowercase().contains("embed")
}

/// `{root}/props`, or for one of a router's models `{root}/props?model=…&autoload=false` (the
/// router answers for that model without loading it).
fn props_url(detected: &Detected) -> String {
    let url = format!("{}/props", detected.root);
    if !detected.router {
        return url;
    }
    let params = [("model", detected.name.as_str()), ("autoload", "false")];
    reqwest::Url::parse_with_params(&url, &params).map_or(url, String::from)
}

/// The model the server has loaded (Ollama, LM Studio, llama.cpp's router), when it says.
async fn loaded_model(
    prober: &Prober,
    kind: ServerKind,
    root: &str,
    models: &Value,
) -> Option<String> {
    match kind {
        ServerKind::Ollama => {
            let ps = prober.get(&format!("{root}/api/ps")).await?;
            let first = ps.get("models")?.as_array()?.first()?;
            str_field(first, "name")
                .or_else(|| str_field(first, "model"))
                .map(str::to_string)
        }
        ServerKind::LmStudio => {
            let list = prober.get(&format!("{root}/api/v0/models")).await?;
            model_list(&list)
                .iter()
                .find(|m| {
                    str_field(m, "state") == Some("loaded")
                        && str_field(m, "type") != Some("embeddings")
                })
                .and_then(|m| str_field(m, "id"))
                .map(str::to_string)
        }
        ServerKind::LlamaCpp => model_list(models)
            .iter()
            .filter_map(|m| str_field(m, "id").map(|id| (id, m)))
            .find(|(id, m)| {
                !is_embedding(id)
                    && m.get("status").and_then(ModelStatus::parse) == Some(ModelStatus::Loaded)
            })
            .map(|(id, _)| id.to_string()),
        ServerKind::DockerModelRunner | ServerKind::Vllm | ServerKind::Unknown => None,
    }
}

/// Finds the server (unless configured), its kind and the model to use.
pub async fn detect(
    prober: &Prober,
    configured_url: &str,
    configured_name: &str,
    candidates: &[(ServerKind, String)],
) -> Result<Detected, ModelError> {
    let (kind, url, models, problem) = if configured_url.trim().is_empty() {
        let (kind, url, models) = find_server(prober, candidates).await?;
        (kind, url, models, None)
    } else {
        let url = configured_url.trim().trim_end_matches('/').to_string();
        let models = match prober.list_models_checked(&url).await {
            Ok(models) => Ok(models),
            // Without a listing there is no model to pick: fail now (not cached, so the next
            // call tries again) rather than send requests for an empty model name.
            Err(e) if configured_name.is_empty() => return Err(e),
            // Nothing listens there: no request can work, whatever the name (not cached, so a
            // server started later is found).
            Err(e @ ModelError::Refused { .. }) => return Err(e),
            // A server still loading its model: waited for (openai/), so that its kind and
            // window are read once it is up.
            Err(e @ ModelError::Http { status: 503, .. }) => return Err(e),
            Err(e) => Err(wrong_url(&url, &e)),
        };
        let (models, problem) = match models {
            Ok(models) => (models, None),
            Err(problem) => (Value::Null, Some(problem)),
        };
        let kind = identify(prober, &url, &server_root(&url), &models).await;
        (kind, url, models, problem)
    };
    let root = server_root(&url);
    let name = if !configured_name.is_empty() {
        configured_name.to_string()
    } else if let Some(loaded) = loaded_model(prober, kind, &root, &models).await {
        loaded
    } else {
        model_list(&models)
            .iter()
            .filter_map(|m| str_field(m, "id"))
            .find(|id| !is_embedding(id))
            .unwrap_or("")
            .to_string()
    };
    let router = is_router(&models);
    Ok(Detected {
        url,
        root,
        name,
        kind,
        models,
        family: None,
        router,
        problem,
    })
}

/// What is said of a configured URL whose `GET /models` failed (not refused, not loading): most
/// often a wrong port or path (a web server's 404, a URL without its `/v1`).
fn wrong_url(url: &str, error: &ModelError) -> String {
    let what = match error {
        ModelError::Http {
            status: 401 | 403, ..
        } => return error.to_string(),
        ModelError::Http { status, .. } => format!("GET /models answered {status}"),
        ModelError::Unreachable { reason, .. } => reason.clone(),
        other => other.to_string(),
    };
    format!(
        "no OpenAI-compatible server at {url} ({what}): check model.url or --url (mm doctor checks)"
    )
}

/// The model's family, for reading calls it writes as text: what the chat template the server
/// renders says (llama.cpp `/props` `chat_template`, also without `--jinja`; Ollama
/// `/api/show` `template`, else its `details.family`), else the model's name.
pub async fn probe_family(prober: &Prober, detected: &Detected) -> Option<Family> {
    let root = &detected.root;
    let name = detected.name.as_str();
    let (template, other_name) = match detected.kind {
        ServerKind::LlamaCpp | ServerKind::Unknown | ServerKind::DockerModelRunner => {
            let props = prober.get(&props_url(detected)).await;
            let template = props.as_ref().and_then(|p| {
                ["chat_template_tool_use", "chat_template"]
                    .iter()
                    .find_map(|k| str_field(p, k))
                    .map(str::to_string)
            });
            (template, None)
        }
        ServerKind::Ollama => {
            let show = prober
                .post(&format!("{root}/api/show"), &json!({ "model": name }))
                .await;
            let template = show
                .as_ref()
                .and_then(|s| str_field(s, "template"))
                .map(str::to_string);
            let family = show
                .as_ref()
                .and_then(|s| s.get("details"))
                .and_then(|d| str_field(d, "family"))
                .map(str::to_string);
            (template, family)
        }
        ServerKind::LmStudio | ServerKind::Vllm => (None, None),
    };
    Family::detect(template.as_deref(), name)
        .or_else(|| other_name.as_deref().and_then(Family::from_name))
}

/// The models a session may switch to: the listing's ids without embedding models, in the
/// server's order, the detected model first when the listing does not name it (a configured
/// name the server resolves itself, such as Ollama's `qwen3` for `qwen3:latest`).
pub fn listed_models(detected: &Detected) -> super::ModelList {
    listed_from(detected, &detected.models)
}

/// The same from a listing asked again (a router's statuses change as it loads and unloads).
pub fn listed_from(detected: &Detected, listing: &Value) -> super::ModelList {
    let mut ids: Vec<String> = model_list(listing)
        .iter()
        .filter_map(|m| str_field(m, "id"))
        .filter(|id| !is_embedding(id))
        .map(str::to_string)
        .collect();
    let status = ids
        .iter()
        .filter_map(|id| model_status(listing, id).map(|s| (id.clone(), s)))
        .collect();
    if !detected.name.is_empty() && !ids.contains(&detected.name) {
        ids.insert(0, detected.name.clone());
    }
    super::ModelList {
        default: detected.name.clone(),
        models: ids,
        status,
    }
}

fn positive(v: Option<&Value>) -> Option<u64> {
    v.and_then(Value::as_u64).filter(|&n| n > 0)
}

/// The window as the `/models` listing tells it (llama.cpp `meta.n_ctx`, vLLM `max_model_len`):
/// the named model's, else (one model per server) the first that says; a router's models each
/// have their own, so only the named one's.
fn window_from_listing(models: &Value, name: &str) -> Option<u64> {
    let list = model_list(models);
    let window = |m: &Value| {
        positive(m.get("meta").and_then(|meta| meta.get("n_ctx")))
            .or_else(|| positive(m.get("max_model_len")))
    };
    let named = list
        .iter()
        .find(|m| str_field(m, "id") == Some(name))
        .and_then(window);
    if is_router(models) {
        return named;
    }
    named.or_else(|| list.iter().find_map(window))
}

/// How many slots (prompt caches serving requests at once) a llama.cpp server has: its
/// `/props` `total_slots`; 0 when it does not say or the server is of another kind, whose
/// requests take no `id_slot`.
pub async fn probe_slots(prober: &Prober, detected: &Detected) -> u32 {
    if detected.kind != ServerKind::LlamaCpp {
        return 0;
    }
    let props = prober.get(&props_url(detected)).await;
    props
        .and_then(|p| positive(p.get("total_slots")))
        .and_then(|n| u32::try_from(n).ok())
        .unwrap_or(0)
}

/// The context window of the detected model, 0 when no probe tells.
pub async fn probe_context_window(prober: &Prober, detected: &Detected) -> u64 {
    let root = &detected.root;
    let name = detected.name.as_str();
    let probed = match detected.kind {
        ServerKind::LlamaCpp | ServerKind::Unknown | ServerKind::DockerModelRunner => {
            let props = prober.get(&props_url(detected)).await;
            props
                .and_then(|p| {
                    positive(
                        p.get("default_generation_settings")
                            .and_then(|d| d.get("n_ctx")),
                    )
                })
                .or_else(|| window_from_listing(&detected.models, name))
        }
        ServerKind::Vllm => window_from_listing(&detected.models, name),
        ServerKind::Ollama => {
            let allocated = prober.get(&format!("{root}/api/ps")).await.and_then(|ps| {
                let models = ps.get("models")?.as_array()?.clone();
                models
                    .iter()
                    .find(|m| {
                        str_field(m, "name") == Some(name) || str_field(m, "model") == Some(name)
                    })
                    .and_then(|m| positive(m.get("context_length")))
            });
            match allocated {
                Some(n) => Some(n),
                None => prober
                    .post(&format!("{root}/api/show"), &json!({ "model": name }))
                    .await
                    .and_then(|show| ollama_max_context(&show)),
            }
        }
        ServerKind::LmStudio => {
            prober
                .get(&format!("{root}/api/v0/models"))
                .await
                .and_then(|list| {
                    let entry = model_list(&list)
                        .iter()
                        .find(|m| str_field(m, "id") == Some(name))?
                        .clone();
                    positive(entry.get("loaded_context_length"))
                        .or_else(|| positive(entry.get("max_context_length")))
                })
        }
    };
    probed.unwrap_or(0)
}

/// `model_info.<arch>.context_length` of Ollama's `/api/show`.
fn ollama_max_context(show: &Value) -> Option<u64> {
    let info = show.get("model_info")?.as_object()?;
    if let Some(arch) = info.get("general.architecture").and_then(Value::as_str)
        && let Some(n) = positive(info.get(&format!("{arch}.context_length")))
    {
        return Some(n);
    }
    info.iter()
        .find(|(k, _)| k.ends_with(".context_length"))
        .and_then(|(_, v)| positive(Some(v)))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn detection_skips_the_exposed_ports() {
        let options = crate::openai::ClientOptions::default().skipping(&[8080, 1234]);
        let urls: Vec<&str> = options.candidates.iter().map(|(_, u)| u.as_str()).collect();
        assert_eq!(
            urls,
            [
                "http://127.0.0.1:9931/v1",
                "http://127.0.0.1:11434/v1",
                "http://127.0.0.1:12434/engines/v1",
                "http://127.0.0.1:8000/v1",
                LOCAL_MODEL_SCRIPT_URL,
            ]
        );
        assert!(!on_port("http://127.0.0.1:18080/v1", 8080));
    }

    #[test]
    fn listed_models_leave_out_embeddings_and_name_the_detected_one() {
        let detected = |name: &str, models: Value| Detected {
            url: "http://h/v1".into(),
            root: "http://h".into(),
            name: name.into(),
            kind: ServerKind::Ollama,
            models,
            family: None,
            router: false,
            problem: None,
        };
        let list =
            json!({"data": [{"id": "qwen3:8b"}, {"id": "nomic-embed-text"}, {"id": "llama3.2"}]});
        let listed = |name: &str, models: Value| listed_models(&detected(name, models)).models;
        assert_eq!(listed("qwen3:8b", list.clone()), ["qwen3:8b", "llama3.2"]);
        assert_eq!(listed("qwen3", list), ["qwen3", "qwen3:8b", "llama3.2"]);
        assert_eq!(listed("m", Value::Null), ["m"]);
        assert!(listed("", Value::Null).is_empty());
        assert_eq!(listed_models(&detected("m", Value::Null)).default, "m");
    }

    #[test]
    fn server_root_drops_the_openai_suffix() {
        assert_eq!(
            server_root("http://127.0.0.1:8080/v1"),
            "http://127.0.0.1:8080"
        );
        assert_eq!(
            server_root("http://127.0.0.1:8080/v1/"),
            "http://127.0.0.1:8080"
        );
        assert_eq!(
            server_root("http://127.0.0.1:12434/engines/v1"),
            "http://127.0.0.1:12434"
        );
        assert_eq!(server_root("http://host:9000/api"), "http://host:9000/api");
    }

    #[test]
    fn ollama_show_context_uses_the_architecture_key() {
        let show = json!({"model_info": {"general.architecture": "qwen3", "qwen3.context_length": 40960, "general.parameter_count": 8}});
        assert_eq!(ollama_max_context(&show), Some(40960));
    }

    #[test]
    fn listing_windows_from_llamacpp_meta_and_vllm() {
        let llama = json!({"data": [{"id": "m.gguf", "owned_by": "llamacpp", "meta": {"n_ctx": 8192, "n_ctx_train": 40960}}]});
        assert_eq!(window_from_listing(&llama, "other"), Some(8192));
        let vllm = json!({"data": [{"id": "a", "max_model_len": 4096}, {"id": "b", "max_model_len": 32768}]});
        assert_eq!(window_from_listing(&vllm, "b"), Some(32768));
    }

    #[test]
    fn small_window_warning_names_the_fix_for_the_server() {
        assert_eq!(
            small_window_warning(4096, ServerKind::Ollama).unwrap(),
            "context window 4096 tokens is small for an agent: start Ollama with `OLLAMA_CONTEXT_LENGTH=32768 ollama serve` (or set `num_ctx` in a Modelfile)"
        );
        assert_eq!(small_window_warning(0, ServerKind::Ollama), None);
        assert_eq!(small_window_warning(32768, ServerKind::LlamaCpp), None);
    }

    #[test]
    fn the_local_model_script_is_probed_after_the_well_known_servers() {
        let urls: Vec<String> = default_candidates()
            .into_iter()
            .map(|(_, url)| url)
            .collect();
        assert_eq!(
            urls,
            [
                "http://127.0.0.1:8080/v1",
                "http://127.0.0.1:9931/v1",
                "http://127.0.0.1:11434/v1",
                "http://127.0.0.1:1234/v1",
                "http://127.0.0.1:12434/engines/v1",
                "http://127.0.0.1:8000/v1",
                "http://127.0.0.1:8089/v1",
            ]
        );
    }

    #[test]
    fn no_server_message_says_what_was_tried_and_what_to_do() {
        assert_eq!(
            no_server_message(&default_candidates()[..2]),
            "no model server found (tried http://127.0.0.1:8080/v1 (llama.cpp), http://127.0.0.1:9931/v1 (llama.cpp)); start one, e.g. `llama-server -m model.gguf --jinja` (on its default port, 8080 or 9931) or `ollama serve`, or set MM_MODEL_URL / --url"
        );
    }
}

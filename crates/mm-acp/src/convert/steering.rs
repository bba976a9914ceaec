//! `_session/steering`, the extension claude-agent-acp and codex-acp implement: a message sent
//! into the session's running turn. Its wire shapes, as those agents read and write them:
//! params `{sessionId, prompt, _meta?: {steering?: {idleBehavior?: "promptRequired"}}}`
//! (mm also reads a top-level `idleBehavior`), result `{outcome: "injected"}`,
//! `{outcome: "startedNewTurn"}` or `{outcome: "promptRequired", reason: "noRunningTurn"}`.

use agent_client_protocol::v1::schema::ContentBlock;
use agent_client_protocol::{JsonRpcRequest, JsonRpcResponse};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What `initialize` says in its `_meta`: the method is there.
pub fn steering_meta() -> serde_json::Map<String, Value> {
    let mut meta = serde_json::Map::new();
    meta.insert("steering".into(), serde_json::json!({"supported": true}));
    meta
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonRpcRequest)]
#[request(method = "_session/steering", response = SteeringResponse)]
#[serde(rename_all = "camelCase")]
pub struct SteeringRequest {
    pub session_id: String,
    pub prompt: Vec<ContentBlock>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_behavior: Option<String>,
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
}

/// What to do when no turn runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Idle {
    /// The agents' default: the message starts a turn of its own.
    StartTurn,
    /// The client keeps the message and sends it as a `session/prompt`.
    PromptRequired,
}

impl SteeringRequest {
    /// `_meta.steering.idleBehavior` (or a top-level `idleBehavior`); `Err` for a value the
    /// agents do not know.
    pub fn idle(&self) -> Result<Idle, String> {
        let nested = self
            .meta
            .as_ref()
            .and_then(|m| m.get("steering"))
            .and_then(|s| s.get("idleBehavior"));
        let given = nested
            .cloned()
            .or_else(|| self.idle_behavior.clone().map(Value::String));
        match given {
            None | Some(Value::Null) => Ok(Idle::StartTurn),
            Some(Value::String(s)) if s == "promptRequired" => Ok(Idle::PromptRequired),
            Some(other) => Err(format!(
                "unsupported steering idleBehavior {other}: the one known is \"promptRequired\""
            )),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonRpcResponse)]
#[serde(tag = "outcome", rename_all = "camelCase")]
pub enum SteeringResponse {
    /// The running turn takes it at its next model call.
    Injected,
    /// No turn ran: the message started one.
    StartedNewTurn,
    /// No turn ran, and the client asked to keep the message.
    PromptRequired { reason: String },
}

impl SteeringResponse {
    pub fn prompt_required() -> Self {
        SteeringResponse::PromptRequired {
            reason: "noRunningTurn".into(),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn request(extra: Value) -> SteeringRequest {
        let mut v = json!({"sessionId": "s", "prompt": [{"type": "text", "text": "stop"}]});
        v.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn idle_behavior_is_read_where_the_agents_read_it() {
        assert_eq!(request(json!({})).idle(), Ok(Idle::StartTurn));
        let nested = json!({"_meta": {"steering": {"idleBehavior": "promptRequired"}}});
        assert_eq!(request(nested).idle(), Ok(Idle::PromptRequired));
        let top = json!({"idleBehavior": "promptRequired"});
        assert_eq!(request(top).idle(), Ok(Idle::PromptRequired));
        assert!(request(json!({"idleBehavior": "queue"})).idle().is_err());
    }

    #[test]
    fn outcomes_are_written_as_the_agents_write_them() {
        let wire = |r: SteeringResponse| serde_json::to_value(r).unwrap();
        assert_eq!(
            wire(SteeringResponse::Injected),
            json!({"outcome": "injected"})
        );
        assert_eq!(
            wire(SteeringResponse::StartedNewTurn),
            json!({"outcome": "startedNewTurn"})
        );
        assert_eq!(
            wire(SteeringResponse::prompt_required()),
            json!({"outcome": "promptRequired", "reason": "noRunningTurn"})
        );
        assert_eq!(
            Value::Object(steering_meta()),
            json!({"steering": {"supported": true}})
        );
    }
}

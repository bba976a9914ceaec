//! What another agent asks through us (agents.md, "The exchange", step 5), as the types every
//! front end answers: its permission requests ([`RelayedPermission`]) and its forms
//! ([`RelayedForm`]), put to our user and answered back unchanged. How a form's schema reads as
//! our questions is mm-agents' `relay`.

use serde_json::Value;

/// The kind of a permission option, as ACP names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptionKind {
    AllowOnce,
    AllowAlways,
    RejectOnce,
    RejectAlways,
}

impl OptionKind {
    /// From ACP's name; `None` for a kind mm does not know.
    pub fn from_name(name: &str) -> Option<OptionKind> {
        match name {
            "allow_once" => Some(OptionKind::AllowOnce),
            "allow_always" => Some(OptionKind::AllowAlways),
            "reject_once" => Some(OptionKind::RejectOnce),
            "reject_always" => Some(OptionKind::RejectAlways),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            OptionKind::AllowOnce => "allow_once",
            OptionKind::AllowAlways => "allow_always",
            OptionKind::RejectOnce => "reject_once",
            OptionKind::RejectAlways => "reject_always",
        }
    }
}

/// One option of a relayed permission request, as the asked agent wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelayedOption {
    pub id: String,
    pub name: String,
    pub kind: OptionKind,
}

/// The asked agent asks whether one of its tool calls may run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelayedPermission {
    /// Our own tool call that asked the agent (`ask_agent`'s `call_N`).
    pub tool_call_id: String,
    /// `<agent>: <its title>`.
    pub title: String,
    /// Its options, unchanged and in its order.
    pub options: Vec<RelayedOption>,
}

impl RelayedPermission {
    /// The answer of a front end that cannot ask: the agent's own `reject_once` option, else
    /// `None` (cancelled).
    pub fn refusal(&self) -> Option<String> {
        refusal_of(&self.options)
    }
}

/// The asked agent's own refusal among its options: its `reject_once`, else `None` (cancelled).
pub fn refusal_of(options: &[RelayedOption]) -> Option<String> {
    options
        .iter()
        .find(|o| o.kind == OptionKind::RejectOnce)
        .map(|o| o.id.clone())
}

/// The asked agent's form (`elicitation/create` in form mode).
#[derive(Debug, Clone, PartialEq)]
pub struct RelayedForm {
    /// Our own tool call that asked the agent.
    pub tool_call_id: String,
    /// The agent's name, for front ends that show who asks.
    pub agent: String,
    pub message: String,
    /// `requestedSchema`, unchanged.
    pub schema: Value,
}

/// What our user did with a relayed form.
#[derive(Debug, Clone, PartialEq)]
pub enum RelayedAnswer {
    /// The `content` of an `accept`, by property name.
    Accepted(Value),
    Declined,
    Cancelled,
    /// Nobody can answer it: the reason (sent back as an error).
    Unavailable(String),
}

/// Why a front end that cannot ask (`mm --ask`, `mm -p` without a terminal) answers a form with
/// an error.
pub const CANNOT_ASK: &str = "the asking agent cannot ask its user";

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn a_front_end_that_cannot_ask_rejects_once_or_cancels() {
        let option = |id: &str, kind| RelayedOption {
            id: id.into(),
            name: id.into(),
            kind,
        };
        let mut p = RelayedPermission {
            tool_call_id: "call_1".into(),
            title: "a: bash".into(),
            options: vec![
                option("yes", OptionKind::AllowOnce),
                option("no", OptionKind::RejectOnce),
            ],
        };
        assert_eq!(p.refusal(), Some("no".into()));
        p.options.pop();
        assert_eq!(p.refusal(), None);
        assert_eq!(
            OptionKind::from_name("reject_always"),
            Some(OptionKind::RejectAlways)
        );
        assert_eq!(OptionKind::from_name("maybe"), None);
    }
}

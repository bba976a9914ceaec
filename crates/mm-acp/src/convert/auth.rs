//! The terminal auth method (docs/acp.md, "Setting up from the editor"): offered only to a
//! client that said it can run one, which then runs `mm setup` in a terminal and reads its exit
//! status. Every other client sees acp.md's `authMethods: []`.

use agent_client_protocol::v1::schema::{AuthMethod, AuthMethodTerminal};
use serde_json::{Value, json};

/// The method's id, name and description, as an editor shows them.
pub const SETUP_METHOD: &str = "mm-setup";
pub const SETUP_NAME: &str = "Set up a local model";
pub const SETUP_DESCRIPTION: &str =
    "Find a local model server, pick a model and check that it can call tools";
/// What the client appends to (or, per the registry's docs, puts instead of) the agent's
/// arguments.
pub const SETUP_ARGS: [&str; 1] = ["setup"];

/// Whether `initialize`'s `clientCapabilities` advertise terminal auth: the schema's
/// `auth.terminal`, or the older `_meta["terminal-auth"]` (`true`, or an object) that clients
/// such as the registry's validator send.
pub fn advertises_terminal_auth(capabilities: &Value) -> bool {
    let schema = capabilities["auth"]["terminal"].as_bool() == Some(true);
    let meta = match &capabilities["_meta"]["terminal-auth"] {
        Value::Bool(b) => *b,
        Value::Object(_) => true,
        _ => false,
    };
    schema || meta
}

/// `authMethods` of the `initialize` answer: the setup method for a client that can run it
/// (`command`: this executable), none otherwise.
pub fn auth_methods(terminal_auth: bool, command: &str) -> Vec<AuthMethod> {
    if !terminal_auth {
        return Vec::new();
    }
    let args: Vec<String> = SETUP_ARGS.iter().map(|a| a.to_string()).collect();
    // The form older clients read, next to the schema's.
    let mut meta = serde_json::Map::new();
    meta.insert(
        "terminal-auth".into(),
        json!({"command": command, "args": args, "label": SETUP_NAME}),
    );
    vec![AuthMethod::Terminal(
        AuthMethodTerminal::new(SETUP_METHOD, SETUP_NAME)
            .description(SETUP_DESCRIPTION.to_string())
            .args(args)
            .meta(meta),
    )]
}

/// The `session/new` error that makes an editor offer the method: no model server is
/// configured and none was found.
pub fn setup_required(why: &str) -> agent_client_protocol::Error {
    agent_client_protocol::Error::auth_required().data(json!({
        "error": format!("{why}; run `mm setup` (the \"{SETUP_NAME}\" sign-in)")
    }))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn terminal_auth_is_read_from_either_form() {
        let yes = [
            json!({"auth": {"terminal": true}}),
            json!({"_meta": {"terminal-auth": true}}),
            json!({"_meta": {"terminal-auth": {}}}),
        ];
        for caps in yes {
            assert!(advertises_terminal_auth(&caps), "{caps}");
        }
        let no = [
            json!({}),
            json!({"terminal": true}),
            json!({"auth": {"terminal": false}}),
            json!({"_meta": {"terminal-auth": false}}),
            json!({"_meta": {"terminal_output": true}}),
            Value::Null,
        ];
        for caps in no {
            assert!(!advertises_terminal_auth(&caps), "{caps}");
        }
    }

    #[test]
    fn the_method_carries_both_forms() {
        assert!(auth_methods(false, "/bin/mm").is_empty());
        let methods = serde_json::to_value(auth_methods(true, "/bin/mm")).unwrap();
        assert_eq!(
            methods,
            json!([{
                "type": "terminal",
                "id": "mm-setup",
                "name": "Set up a local model",
                "description": "Find a local model server, pick a model and check that it can call tools",
                "args": ["setup"],
                "_meta": {"terminal-auth": {"command": "/bin/mm", "args": ["setup"], "label": "Set up a local model"}}
            }])
        );
    }
}

//! The `ask_user` tool through `mm -acp` (the real binary, the fake model server), against
//! acp.md's `elicitation/create` section: one form per call when the client advertised form
//! support (accepted, declined, cancelled, an error), the permission-request fallback when it did
//! not. Every message mm writes is validated against the official ACP schema by the test client.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mm_testkit as common;

use std::process::Stdio;

use common::acp::{TestClient, updates};
use common::mm_run::{Sandbox, finish};
use common::{FakeServer, Reply};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// A session of `mm -acp` in a fresh sandbox, prompted once; the prompt's id.
struct Asking {
    client: TestClient,
    child: tokio::process::Child,
    server: FakeServer,
    session: String,
    prompt: i64,
    _sandbox: Sandbox,
}

/// `mm -acp` whose model calls `ask_user` with `questions`, then answers `ok`.
async fn asking(questions: Value, forms: bool) -> Asking {
    let server = FakeServer::start(vec![
        Reply::tool_call("ask_user", json!({ "questions": questions })),
        Reply::text("ok"),
    ])
    .await;
    let sandbox = Sandbox::new();
    let mut c = sandbox.command(Some(&server.url()), &["-acp"]);
    c.stdin(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut client = TestClient::new(Box::new(stdin), Box::new(stdout));
    client.initialize(forms).await;
    let (session, _) = client.new_session(&sandbox.dir()).await;
    let prompt = client.send_prompt(&session, "ask me").await;
    Asking {
        client,
        child,
        server,
        session,
        prompt,
        _sandbox: sandbox,
    }
}

impl Asking {
    /// Waits for the turn's end: the `ask_user` call's last update and the stop reason; the
    /// model was sent the result (checked against the request it got).
    async fn end(mut self) -> (Value, String) {
        let (msgs, r) = self.client.until_response(self.prompt).await;
        let finished = updates(&msgs)
            .into_iter()
            .rfind(|u| u["sessionUpdate"] == "tool_call_update" && u.get("status").is_some())
            .unwrap_or_else(|| panic!("no finished tool call in {msgs:#?}"));
        let stop = r["result"]["stopReason"].as_str().unwrap().to_string();
        if stop == "end_turn" {
            let requests = self.server.requests();
            let tool = requests[1]["messages"]
                .as_array()
                .unwrap()
                .iter()
                .rfind(|m| m["role"] == "tool")
                .unwrap()["content"]
                .clone();
            assert_eq!(tool, finished["rawOutput"]["output"]);
        }
        assert_eq!(self.server.violations(), Vec::<String>::new());
        self.client.close().await;
        self.client.drain().await;
        let run = finish(self.child).await;
        assert_eq!(run.code, Some(0), "{}", run.stderr);
        (finished, stop)
    }
}

fn four_questions() -> Value {
    json!([
        {"question": "Colour?", "type": "choice", "options": ["red", "blue"], "default": "red"},
        {"question": "Which?", "type": "multi", "options": ["a", "b"]},
        {"question": "Name?", "type": "text"},
        {"question": "Sure?", "type": "confirm", "default": false},
    ])
}

#[mm_testkit::test]
async fn a_client_with_forms_gets_one_elicitation_and_its_answers_go_to_the_model() {
    let mut a = asking(four_questions(), true).await;
    let (before, form) = a.client.until_request("elicitation/create").await;
    let call = updates(&before)
        .into_iter()
        .find(|u| u["sessionUpdate"] == "tool_call")
        .unwrap();
    assert_eq!(call["title"], "ask_user");
    // `other` is the protocol's default kind, which the SDK leaves out (docs/acp.md).
    assert_eq!(call.get("kind").unwrap_or(&json!("other")), "other");
    let id = call["toolCallId"].clone();
    let session = a.session.clone();
    assert_eq!(
        form["params"],
        json!({"sessionId": session, "toolCallId": id, "mode": "form",
            "message": "The agent has 4 questions for you.",
            "requestedSchema": {"type": "object", "properties": {
                "q1": {"type": "string", "title": "Colour?", "enum": ["red", "blue"], "default": "red"},
                "q2": {"type": "array", "title": "Which?", "items": {"type": "string", "enum": ["a", "b"]}},
                "q3": {"type": "string", "title": "Name?"},
                "q4": {"type": "boolean", "title": "Sure?", "default": false}},
                "required": ["q1", "q2", "q3", "q4"]},
            "_meta": {"mm.elicitationScope": {"sessionId": session, "toolCallId": id}}})
    );
    a.client
        .respond(
            &form["id"],
            json!({"action": "accept", "content": {"q1": "blue", "q2": ["a", "b"], "q4": true}}),
        )
        .await;
    let (finished, stop) = a.end().await;
    assert_eq!(stop, "end_turn");
    assert_eq!(finished["status"], "completed");
    assert_eq!(
        finished["rawOutput"]["output"],
        "Colour? → blue\nWhich? → a, b\nName? → (no answer)\nSure? → yes"
    );
}

#[mm_testkit::test]
async fn declined_cancelled_and_failed_forms() {
    let one = json!([{"question": "Name?", "type": "text"}]);
    let cases = [
        (
            json!({"action": "decline"}),
            "[the user declined to answer]",
            "completed",
        ),
        (
            json!({"action": "cancel"}),
            "[the question was cancelled]",
            "failed",
        ),
    ];
    for (answer, result, status) in cases {
        let mut a = asking(one.clone(), true).await;
        let (_, form) = a.client.until_request("elicitation/create").await;
        assert_eq!(form["params"]["message"], "Name?");
        a.client.respond(&form["id"], answer).await;
        let (finished, stop) = a.end().await;
        // A cancelled question does not cancel the turn: the model is told and goes on.
        assert_eq!(stop, "end_turn");
        assert_eq!(finished["rawOutput"]["output"], result);
        assert_eq!(finished["status"], status);
    }
    let mut a = asking(one, true).await;
    let (_, form) = a.client.until_request("elicitation/create").await;
    a.client
        .respond_error(&form["id"], -32601, "Method not found")
        .await;
    let (finished, _) = a.end().await;
    assert_eq!(
        finished["rawOutput"]["output"],
        "[nobody can be asked: the client answered with an error: Method not found]"
    );
}

#[mm_testkit::test]
async fn a_cancelled_turn_withdraws_the_form() {
    let mut a = asking(json!([{"question": "Name?", "type": "text"}]), true).await;
    a.client.until_request("elicitation/create").await;
    let session = a.session.clone();
    a.client
        .notify("session/cancel", json!({"sessionId": session}))
        .await;
    let (finished, stop) = a.end().await;
    assert_eq!(stop, "cancelled");
    assert_eq!(
        finished["rawOutput"]["output"],
        "[the question was cancelled]"
    );
}

#[mm_testkit::test]
async fn without_forms_choices_go_as_one_permission_request_each() {
    let questions = json!([
        {"question": "Colour?", "type": "choice", "options": ["red", "blue"]},
        {"question": "Sure?", "type": "confirm"},
    ]);
    let mut a = asking(questions, false).await;
    let (before, colour) = a.client.until_request("session/request_permission").await;
    let id = updates(&before)
        .into_iter()
        .find(|u| u["sessionUpdate"] == "tool_call")
        .unwrap()["toolCallId"]
        .clone();
    let session = a.session.clone();
    assert_eq!(
        colour["params"],
        json!({"sessionId": session,
        "toolCall": {"toolCallId": id, "title": "? Colour?", "kind": "other"},
        "options": [
            {"optionId": "0", "name": "red", "kind": "allow_once"},
            {"optionId": "1", "name": "blue", "kind": "allow_once"},
            {"optionId": "decline", "name": "Decline", "kind": "reject_once"},
        ]})
    );
    let selected = |id: &str| json!({"outcome": {"outcome": "selected", "optionId": id}});
    a.client.respond(&colour["id"], selected("1")).await;
    let (_, sure) = a.client.until_request("session/request_permission").await;
    assert_eq!(
        sure["params"]["options"],
        json!([
            {"optionId": "0", "name": "Yes", "kind": "allow_once"},
            {"optionId": "1", "name": "No", "kind": "allow_once"},
            {"optionId": "decline", "name": "Decline", "kind": "reject_once"},
        ])
    );
    a.client.respond(&sure["id"], selected("1")).await;
    let (finished, _) = a.end().await;
    assert_eq!(
        finished["rawOutput"]["output"],
        "Colour? → blue\nSure? → no"
    );

    // `decline` declines the form; a cancelled outcome cancels it.
    for (outcome, result) in [
        (selected("decline"), "[the user declined to answer]"),
        (
            json!({"outcome": {"outcome": "cancelled"}}),
            "[the question was cancelled]",
        ),
    ] {
        let mut a = asking(json!([{"question": "Sure?", "type": "confirm"}]), false).await;
        let (_, req) = a.client.until_request("session/request_permission").await;
        a.client.respond(&req["id"], outcome).await;
        let (finished, _) = a.end().await;
        assert_eq!(finished["rawOutput"]["output"], result);
    }
}

#[mm_testkit::test]
async fn without_forms_a_text_question_cannot_be_asked() {
    let questions = json!([
        {"question": "Colour?", "type": "choice", "options": ["red", "blue"]},
        {"question": "Name?", "type": "text"},
    ]);
    let a = asking(questions, false).await;
    let (finished, stop) = a.end().await;
    assert_eq!(stop, "end_turn");
    assert_eq!(finished["status"], "failed");
    assert_eq!(
        finished["rawOutput"]["output"],
        "[nobody can be asked: the client has no form support]"
    );
}

#[mm_testkit::test]
async fn bad_arguments_are_explained_without_asking() {
    let a = asking(json!([{"question": "Colour?", "type": "choice"}]), true).await;
    let (finished, _) = a.end().await;
    assert_eq!(finished["status"], "failed");
    assert_eq!(
        finished["rawOutput"]["output"],
        "[bad arguments for ask_user: question 1: a choice or multi question needs options]"
    );
}

//! Turns: `session/prompt` (each in a task of its own, queued behind the session's previous
//! prompt), `_session/steering` (a message sent into the running turn, never queued) and
//! `session/cancel`.

use std::sync::Arc;

use agent_client_protocol::Error;
use agent_client_protocol::v1::Responder;
use agent_client_protocol::v1::schema::{
    CancelNotification, PromptRequest, PromptResponse, SessionId,
};

use super::{Cx, Handled};
use crate::convert::{self, Idle, SteeringRequest, SteeringResponse};
use crate::engine::Steered;
use crate::server::Server;
use crate::slot::Slot;

pub(crate) fn prompt(
    server: &Arc<Server>,
    req: PromptRequest,
    responder: Responder<PromptResponse>,
    cx: Cx,
) -> Handled {
    let id = req.session_id.0.to_string();
    let Some(slot) = server.slot(&id) else {
        let e = convert::RequestError::UnknownSession(id.clone());
        return responder.respond_with_error(convert::request_error(Some(&id), &e));
    };
    queue_turn(server, slot, req, &cx, move |result| {
        let _ = responder.respond_with_result(result);
    });
    Ok(())
}

/// Runs a prompt on the session once the prompts before it are answered, in a task of its own;
/// `answer` gets its outcome.
fn queue_turn(
    server: &Arc<Server>,
    slot: Arc<Slot>,
    req: PromptRequest,
    cx: &Cx,
    answer: impl FnOnce(Result<PromptResponse, Error>) + Send + 'static,
) {
    let token = server.shutdown.child_token();
    let key = slot.track(&token);
    let (before, done) = slot.queue();
    let turn = server.clone();
    server.spawn(cx, async move {
        // A second prompt on the session waits for the first to be answered.
        if let Some(before) = before {
            let _ = before.await;
        }
        let result = turn.clone().prompt(slot.clone(), req, token, key).await;
        answer(result);
        // A model list that came during the turn (a server started late).
        turn.show_models_now(&slot);
        drop(done);
        // Not holding the queue: it asks the server.
        turn.show_statuses_now(&slot).await;
    });
}

/// `_session/steering`: into the running turn at once (never behind the session's queue of
/// prompts); with no turn, `promptRequired` when the client asked to keep the message, else a
/// turn of its own, queued like a `session/prompt`.
pub(crate) fn steer(
    server: &Arc<Server>,
    req: SteeringRequest,
    responder: Responder<SteeringResponse>,
    cx: Cx,
) -> Handled {
    let id = req.session_id.clone();
    let Some(slot) = server.slot(&id) else {
        let e = convert::RequestError::UnknownSession(id.clone());
        return responder.respond_with_error(convert::request_error(Some(&id), &e));
    };
    let idle = match req.idle() {
        Ok(idle) => idle,
        Err(e) => {
            let data = serde_json::json!({"sessionId": id, "error": e});
            return responder.respond_with_error(Error::invalid_params().data(data));
        }
    };
    let flat = crate::prompt::flatten(&req.prompt);
    let message = Steered {
        text: flat.text,
        attached: flat.attached,
    };
    if slot.controls.steer(message) {
        server.log.line(&format!(
            "[acp] session {id}: message sent to the running turn"
        ));
        return responder.respond(SteeringResponse::Injected);
    }
    match idle {
        Idle::PromptRequired => responder.respond(SteeringResponse::prompt_required()),
        Idle::StartTurn => {
            let answered = responder.respond(SteeringResponse::StartedNewTurn);
            let prompt = PromptRequest::new(SessionId::new(id), req.prompt);
            // Its outcome reaches the client as any turn's does (its updates, the log); there
            // is no `session/prompt` to answer.
            queue_turn(server, slot, prompt, &cx, |_| {});
            answered
        }
    }
}

pub(crate) fn cancel(server: &Arc<Server>, n: CancelNotification, _cx: Cx) -> Handled {
    match server.slot(&n.session_id.0) {
        Some(slot) => slot.cancel_all(),
        // A `task` call's child (shown to a client that advertised `subagents`): it alone.
        None => {
            server.engine.cancel_child(&n.session_id.0);
        }
    }
    Ok(())
}

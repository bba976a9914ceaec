//! Turns: `session/prompt` (each in a task of its own, queued behind the session's previous
//! prompt) and `session/cancel`.

use std::sync::Arc;

use agent_client_protocol::v1::Responder;
use agent_client_protocol::v1::schema::{CancelNotification, PromptRequest, PromptResponse};

use super::{Cx, Handled};
use crate::convert;
use crate::server::Server;

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
    let token = server.shutdown.child_token();
    let key = slot.track(&token);
    let (before, done) = slot.queue();
    let turn = server.clone();
    server.spawn(&cx, async move {
        // A second prompt on the session waits for the first to be answered.
        if let Some(before) = before {
            let _ = before.await;
        }
        let result = turn.clone().prompt(slot.clone(), req, token, key).await;
        let _ = responder.respond_with_result(result);
        // A model list that came during the turn (a server started late).
        turn.show_models_now(&slot);
        drop(done);
    });
    Ok(())
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

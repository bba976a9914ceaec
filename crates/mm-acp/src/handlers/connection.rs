//! `initialize` and `authenticate`.

use std::sync::Arc;

use agent_client_protocol::v1::Responder;
use agent_client_protocol::v1::schema::{
    AuthenticateRequest, AuthenticateResponse, InitializeRequest, InitializeResponse,
};

use super::{Cx, Handled};
use crate::server::Server;

pub(crate) fn initialize(
    server: &Arc<Server>,
    req: InitializeRequest,
    responder: Responder<InitializeResponse>,
    _cx: Cx,
) -> Handled {
    let answered = responder.respond(server.initialize(req));
    // Detection (HTTP client, probes) starts once the answer is out, never before.
    server.engine.model.warm_up(server.engine.processes.tasks());
    server.engine.probe_window_later();
    answered
}

pub(crate) fn authenticate(
    _server: &Arc<Server>,
    _req: AuthenticateRequest,
    responder: Responder<AuthenticateResponse>,
    _cx: Cx,
) -> Handled {
    responder.respond(AuthenticateResponse::new())
}

//! The methods of live sessions: `session/new`, `session/set_mode`,
//! `session/set_config_option`, `session/close`.

use std::sync::Arc;

use agent_client_protocol::v1::Responder;
use agent_client_protocol::v1::schema::{
    CloseSessionRequest, CloseSessionResponse, NewSessionRequest, NewSessionResponse,
    SetSessionConfigOptionRequest, SetSessionConfigOptionResponse, SetSessionModeRequest,
    SetSessionModeResponse,
};

use super::{Cx, Handled};
use crate::server::Server;

pub(crate) fn new_session(
    server: &Arc<Server>,
    req: NewSessionRequest,
    responder: Responder<NewSessionResponse>,
    cx: Cx,
) -> Handled {
    let work = server.clone().new_session(req, responder, cx.clone());
    server.spawn(&cx, work);
    Ok(())
}

pub(crate) fn set_mode(
    server: &Arc<Server>,
    req: SetSessionModeRequest,
    responder: Responder<SetSessionModeResponse>,
    _cx: Cx,
) -> Handled {
    server.set_mode(req, responder)
}

pub(crate) fn set_config_option(
    server: &Arc<Server>,
    req: SetSessionConfigOptionRequest,
    responder: Responder<SetSessionConfigOptionResponse>,
    _cx: Cx,
) -> Handled {
    server.set_config_option(req, responder)
}

pub(crate) fn close_session(
    server: &Arc<Server>,
    req: CloseSessionRequest,
    responder: Responder<CloseSessionResponse>,
    cx: Cx,
) -> Handled {
    server.spawn(&cx, server.clone().close_session(req, responder));
    Ok(())
}

//! The methods of saved sessions: `session/load`, `session/list`, `session/resume`,
//! `session/delete`. Without `sessions.enabled`, "method not found", as from an agent that has
//! none.

use std::sync::Arc;

use agent_client_protocol::Error;
use agent_client_protocol::JsonRpcResponse;
use agent_client_protocol::v1::Responder;
use agent_client_protocol::v1::schema::{
    DeleteSessionRequest, DeleteSessionResponse, ListSessionsRequest, ListSessionsResponse,
    LoadSessionRequest, LoadSessionResponse, ResumeSessionRequest, ResumeSessionResponse,
};

use super::{Cx, Handled};
use crate::server::Server;

/// `Some(responder)` when saved sessions are on; else the method is answered "not found".
fn when_enabled<T: JsonRpcResponse>(
    server: &Server,
    method: &str,
    responder: Responder<T>,
) -> Result<Option<Responder<T>>, Error> {
    if server.config.sessions.enabled {
        return Ok(Some(responder));
    }
    responder
        .respond_with_error(Error::method_not_found().data(method))
        .map(|()| None)
}

pub(crate) fn load_session(
    server: &Arc<Server>,
    req: LoadSessionRequest,
    responder: Responder<LoadSessionResponse>,
    cx: Cx,
) -> Handled {
    if let Some(responder) = when_enabled(server, "session/load", responder)? {
        let work = server.clone().load_session(req, responder, cx.clone());
        server.spawn(&cx, work);
    }
    Ok(())
}

pub(crate) fn list_sessions(
    server: &Arc<Server>,
    req: ListSessionsRequest,
    responder: Responder<ListSessionsResponse>,
    cx: Cx,
) -> Handled {
    if let Some(responder) = when_enabled(server, "session/list", responder)? {
        server.spawn(&cx, server.clone().list_sessions(req, responder));
    }
    Ok(())
}

pub(crate) fn resume_session(
    server: &Arc<Server>,
    req: ResumeSessionRequest,
    responder: Responder<ResumeSessionResponse>,
    cx: Cx,
) -> Handled {
    if let Some(responder) = when_enabled(server, "session/resume", responder)? {
        let work = server.clone().resume_session(req, responder, cx.clone());
        server.spawn(&cx, work);
    }
    Ok(())
}

pub(crate) fn delete_session(
    server: &Arc<Server>,
    req: DeleteSessionRequest,
    responder: Responder<DeleteSessionResponse>,
    cx: Cx,
) -> Handled {
    if let Some(responder) = when_enabled(server, "session/delete", responder)? {
        server.spawn(&cx, server.clone().delete_session(req, responder));
    }
    Ok(())
}

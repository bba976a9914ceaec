//! The router: each ACP method to its handler (handlers/, one file per group of methods), one
//! line each. A method with no line here is answered "method not found" by the SDK.

use std::sync::Arc;

use agent_client_protocol::{Agent, ConnectTo, Error};

use crate::handlers::{connection, live, saved, turns};
use crate::server::Server;

/// Routes one `Server` (each handler gets its own handle to it).
macro_rules! to {
    ($server:expr, $handler:path) => {{
        let server = Arc::clone($server);
        async move |req, responder, cx| $handler(&server, req, responder, cx)
    }};
}

/// Serves the connection over `transport` until it ends.
pub(crate) async fn serve(
    server: &Arc<Server>,
    transport: impl ConnectTo<Agent> + 'static,
) -> Result<(), Error> {
    use agent_client_protocol::{
        on_receive_notification as notification, on_receive_request as request,
    };
    Agent
        .v1()
        .name("mm")
        // The connection
        .on_receive_request(to!(server, connection::initialize), request!())
        .on_receive_request(to!(server, connection::authenticate), request!())
        // Live sessions
        .on_receive_request(to!(server, live::new_session), request!())
        .on_receive_request(to!(server, live::set_mode), request!())
        .on_receive_request(to!(server, live::set_config_option), request!())
        .on_receive_request(to!(server, live::close_session), request!())
        // Turns
        .on_receive_request(to!(server, turns::prompt), request!())
        .on_receive_request(to!(server, turns::steer), request!())
        .on_receive_notification(
            {
                let server = Arc::clone(server);
                async move |n, cx| turns::cancel(&server, n, cx)
            },
            notification!(),
        )
        // Saved sessions (`sessions.enabled`)
        .on_receive_request(to!(server, saved::load_session), request!())
        .on_receive_request(to!(server, saved::list_sessions), request!())
        .on_receive_request(to!(server, saved::resume_session), request!())
        .on_receive_request(to!(server, saved::delete_session), request!())
        .connect_to(transport)
        .await
}

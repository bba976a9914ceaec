//! The handlers of the router (router.rs), one file per group of methods. Each is thin: it
//! checks what the method needs, then hands the work to the `Server` (server.rs, sessions.rs),
//! in a task of the front end's own when it may take a while (the SDK's dispatch loop must not
//! wait: a `session/cancel` or a permission answer has to get through).

pub(crate) mod connection;
pub(crate) mod live;
pub(crate) mod saved;
pub(crate) mod turns;

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::{Client, Error};

/// What every handler is given besides its request and responder.
pub(crate) type Cx = ConnectionTo<Client>;

/// What every handler returns to the SDK (an error here ends the connection).
pub(crate) type Handled = Result<(), Error>;

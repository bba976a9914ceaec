//! Every translation between the engine's vocabulary and ACP's wire shapes, as pure functions:
//! events to `session/update` payloads or log lines, questions to requests and answers back,
//! a stored history to its `session/load` replay. The strings docs/acp-reference.md fixes live
//! here, one file per concern; callers use them through `convert::…`.

mod auth;
mod elicitation;
mod log;
mod mcp;
mod permission;
mod relay;
mod replay;
mod response;
mod session;
mod steering;
mod updates;

pub use auth::{advertises_terminal_auth, auth_methods, setup_required};
pub use elicitation::{
    NO_FORM_SUPPORT, QuestionOutcome, askable_by_permission, elicitation_request, form_answer,
    network_answer, network_form, question_answer, question_request,
};
pub use log::{log_client, log_created, log_loaded, log_prompt, log_sandbox, log_sandbox_cwd};
pub use mcp::{client_server_line, client_servers};
pub use permission::{permission_decision, permission_request};
pub use relay::{
    relayed_answer, relayed_choice, relayed_elicitation_request, relayed_permission_request,
};
pub use replay::replay_lines;
pub use response::{
    RequestError, load_error, prompt_usage, request_error, stop_reason, turn_error,
};
pub use session::{
    Listed, MODE_OPTION, MODEL_OPTION, config_option_update, config_options, current_mode_update,
    log_closed, log_deleted, log_mode, log_model, log_resumed, log_unlisted, modes, page,
    session_info as listed_info,
};
pub use steering::{Idle, SteeringRequest, SteeringResponse, steering_meta};
pub use updates::{
    Output, available_commands, failed_notice, notification, plan_update, session_info,
    subagent_ended, subagent_started, translate, unfenced_notice, untrusted_notice, usage_update,
};

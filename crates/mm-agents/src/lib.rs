//! mm as an ACP client (docs/agents.md): [`agent_client`] asks another agent over pipes mm
//! spawns (`ask_agent`, `/ask`, `mm --ask`), [`relay`] reads the asked agent's forms as our
//! questions, and [`ask_agent`] is the tool. The ACP SDK is used here and in the front ends, and
//! nowhere below.
#![forbid(unsafe_code)]

pub mod agent_client;
pub mod ask_agent;
pub mod relay;

// The layers below under the names the modules of this crate use (`crate::config::…`).
use mm_core::{VERSION, config, event, tasks};
use mm_tools::{process, sandbox, tools};

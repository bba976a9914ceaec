//! The built-in tools of every session: those of mm-tools and `ask_agent` (mm-agents), in the
//! order they are offered. Adding a tool is one file and one line here (docs/architecture.md,
//! "Adding a tool").

use mm_agents::ask_agent;
use mm_tools::tools::{
    Builder, ToolSetup, Toolbox, ask_user, bash, edit_file, fetch_content, lsp, plan, read_file,
    read_skill, task, write_file,
};

/// The built-in tools, in the order they are offered.
pub const BUILTIN: &[Builder] = &[
    bash::tool,
    read_file::tool,
    write_file::tool,
    edit_file::tool,
    read_skill::tool,
    fetch_content::tool,
    plan::tool,
    lsp::tool,
    ask_user::tool,
    ask_agent::tool,
    task::tool,
];

/// The built-in tools of a session.
pub fn builtin(setup: &ToolSetup<'_>) -> Toolbox {
    Toolbox::new(BUILTIN.iter().filter_map(|build| build(setup)).collect())
}

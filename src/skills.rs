//! The skill catalogue (skills.md). Stub: replaced by the real implementation.

use std::path::PathBuf;

/// One skill of the catalogue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    /// The skill's folder.
    pub dir: PathBuf,
}

/// The skills a session can use, sorted by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Catalogue {
    pub skills: Vec<Skill>,
}

//! The engine: turns, compaction, commands.

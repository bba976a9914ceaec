//! The ACP front end.

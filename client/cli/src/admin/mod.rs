//! Managing workspaces and the installation: the caller's workspaces, forks and deletion
//! ([`workspaces`]), checkpoints and purge ([`retention`]), redaction ([`redact`]),
//! capability verifiers ([`verifiers`]) and the Storage backend's setup ([`storage_setup`]).

pub mod redact;
pub mod retention;
pub mod storage_setup;
pub mod verifiers;
pub mod workspaces;

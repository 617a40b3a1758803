//! supabash-agent: the agent surface over a supabash staged tree. The filesystem abstraction
//! every agent tool works over ([`AgentFs`]), implemented by the staged tree and by the views,
//! snapshots and mounts a host composes ([`mount`]: view composition in memory, not FUSE); V4A
//! `apply_patch`; file tools; bash over the tree (bashkit) with a command policy and output
//! redaction; and the MCP server ([`mcp`]).
//!
//! Layering: `supabash_core` ← `supabash` (staged tree, transports, workspace API) ← this
//! crate ← `supabash-cli`. Nothing here commits: host actions stay on
//! [`supabash::Workspace`].

#![forbid(unsafe_code)]

mod delegated;
mod fs;
pub mod mcp;
pub mod mount;
pub mod patch;
mod paths;
pub mod policy;
pub mod redact;
pub mod shell;
pub mod snapshot;
pub mod tools;
pub mod view;

pub use delegated::DelegatedMount;
pub use fs::AgentFs;
pub use mount::{Mount, MountRecord, MountedFs, ViewSpec};
pub use snapshot::{SharedSnapshot, SnapshotLimits};
pub use view::View;

/// Appended to every tool output that was cut short.
pub const TRUNCATION_MARKER: &str = "\n[truncated]\n";

//! The agent surface: the filesystem abstraction every agent tool works over ([`AgentFs`]),
//! implemented by the staged tree and by the views, snapshots and mounts a host composes.

mod fs;
pub mod mount;
pub mod patch;
mod paths;
#[cfg(feature = "shell")]
pub mod policy;
pub mod redact;
#[cfg(feature = "shell")]
pub mod shell;
pub mod snapshot;
pub mod tools;
pub mod view;

pub use fs::AgentFs;
pub use mount::{Mount, MountRecord, MountedFs, ViewSpec};
pub use snapshot::{SharedSnapshot, SnapshotLimits};
pub use view::View;

/// Appended to every tool output that was cut short.
pub const TRUNCATION_MARKER: &str = "\n[truncated]\n";

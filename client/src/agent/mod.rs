//! The agent surface: the filesystem abstraction every agent tool works over ([`AgentFs`]),
//! implemented by the staged tree and by the views and mounts a host composes.

mod fs;
#[cfg(feature = "shell")]
pub mod policy;
pub mod redact;
#[cfg(feature = "shell")]
pub mod shell;

pub use fs::AgentFs;

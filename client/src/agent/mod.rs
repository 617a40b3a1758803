//! The agent surface: the filesystem abstraction every agent tool works over ([`AgentFs`]),
//! implemented by the staged tree and by the views and mounts a host composes.

mod fs;
mod paths;
pub mod view;

pub use fs::AgentFs;
pub use view::View;

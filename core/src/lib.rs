//! supabash-core: the rules the supabash extension and client share. Pure Rust, no I/O.

pub mod capability;
pub mod document;
pub mod error;
pub mod hash;
pub mod limits;
pub mod moves;
pub mod path;
pub mod receipt_lines;
pub mod rpc;

pub use error::{ErrorCode, Marker};

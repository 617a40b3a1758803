//! supabash-core: the rules the supabash extension and client share. Pure Rust, no I/O.

pub mod capability;
pub mod document;
pub mod error;
pub mod hash;
pub mod limits;
pub mod links;
pub mod moves;
pub mod path;
pub mod point_in_time;
pub mod posix;
pub mod receipt_lines;
pub mod rpc;

pub use error::{ErrorCode, Marker};

/// The extension schema versions one shared library serves, newest first: the current one and
/// the one before it (the support window), and for 0.7.0, whose upgrade rewrites every table,
/// also 0.5.0. An older installed schema answers every RPC with
/// `SUPABASH_SCHEMA_OUTDATED` until `ALTER EXTENSION supabash UPDATE` runs.
pub const SERVED_SCHEMAS: [&str; 3] = ["0.7.0", "0.6.0", "0.5.0"];

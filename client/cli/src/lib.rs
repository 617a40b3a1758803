//! supabash-cli: the `supabash` command-line tool (its binary is `supabash`), and two modules
//! other crates reach as a library:
//!
//! - [`devcluster`]: a throwaway local PostgreSQL with the Supabase bootstrap and the installed
//!   extension, which `supabash demo`, the end-to-end tests (`supabash-tests`) and the
//!   benchmarks start;
//! - [`connect`]: the connection arguments every command that opens a workspace takes;
//! - [`workspaces`]: `supabash workspaces`, `fork` and `delete-workspace`;
//! - [`mcp`]: `supabash mcp`, which opens workspaces the way a host does and serves
//!   `supabash_agent::mcp` over stdio or streamable HTTP;
//! - [`redact`]: `supabash redact`;
//! - [`verify`]: `supabash verify` and `supabash gc`;
//! - [`doctor`]: `supabash doctor`.

#![deny(unsafe_code)]

pub mod connect;
pub mod devcluster;
pub mod doctor;
pub mod mcp;
pub mod redact;
pub mod verify;
pub mod workspaces;

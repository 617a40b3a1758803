//! Test support: a throwaway PostgreSQL cluster with `sql/bootstrap.sql` applied and the
//! installed `supabash` extension created, and a caller that plays PostgREST's per-request
//! transaction (claims, `SET LOCAL ROLE`, one function call with named arguments).
//!
//! The extension must already be installed into the system PostgreSQL (`just install`).

#![deny(unsafe_code)]

pub mod binary;
pub mod capability;
pub mod client;
pub mod cluster;
pub mod memory;
pub mod sql_rpc;
pub mod storage_server;
pub mod storage_support;
pub mod support;

pub use cluster::Cluster;
pub use sql_rpc::{Caller, DbError, SqlRpc};

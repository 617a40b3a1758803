//! Test support: a throwaway PostgreSQL cluster with `sql/bootstrap.sql` applied and the
//! installed `supabash` extension created (`supabash-devcluster`), and a caller that plays
//! PostgREST's per-request transaction (claims, `SET LOCAL ROLE`, one function call with named
//! arguments).
//!
//! **Which PostgreSQL.** The extension must already be installed (`just install`) into the
//! PostgreSQL the tests run: the server tools come from `$PG_BIN`, else from the directory of
//! `$PG_CONFIG`, else from Debian's PostgreSQL 15. `just e2e` exports both from `PG_CONFIG`, so
//! `PG_CONFIG=/path/to/17/bin/pg_config just e2e` runs the suite on PostgreSQL 17 (`just
//! e2e-17`).
//!
//! **Cleanup.** Every server a test starts is stopped when its test binary ends, however it
//! ends: normally, after a failed (panicking) test, or killed. Each cluster and each postrust
//! process has a watchdog (`supabash_devcluster::watchdog`): a small `sh` child, in its own
//! process group, reading a pipe whose only write end this process holds. When the pipe
//! closes, because the server is stopped or dropped or because the kernel closed it as this
//! process ended (even on `SIGKILL`), the watchdog runs `pg_ctl stop -m immediate` and removes
//! the cluster's directory, or kills postrust. The shared cluster and postrust live in statics
//! that are never dropped: an `atexit` handler fires their watchdogs at a normal exit, so they
//! are gone when the binary returns; otherwise the watchdog does it a moment after.
//! Clusters a test owns stop on drop, so a panicking test does not leak them. The Storage API
//! test server runs inside the test process (its body directory is removed on drop).
//! `tests/tests/cleanup.rs` runs this binary's helper as a child that starts servers and then
//! exits, panics or is killed, and checks that nothing of them remains.

#![deny(unsafe_code)]

pub mod binary;
pub mod capability;
pub mod client;
pub mod cluster;
pub mod memory;
pub mod sql_rpc;
pub mod storage_meter;
pub mod storage_proxy;
pub mod storage_server;
pub mod storage_support;
pub mod support;

pub use cluster::Cluster;
pub use sql_rpc::{Caller, DbError, SqlRpc};

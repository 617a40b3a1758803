//! supabash-cli: the `supabash` command-line tool (its binary is `supabash`; docs/cli.md), and
//! the modules other crates reach as a library:
//!
//! - [`connect`]: the connection arguments every command that opens a workspace takes, with
//!   [`profile`]: named profiles of the config file;
//! - [`exit`]: exit statuses and error reports from the error taxonomy; [`output`]: JSON and
//!   lines; [`flags`]: the argument blocks several commands share;
//! - [`revision`]: how commands name a revision; [`history`]: `log`, `show`, `restore`; [`notes`]: `note`; [`files`]: `ls`, `tree`, `cat`; [`diff`]: `diff`
//!   (also the demo's diff step); [`retention`]: `checkpoint`, `checkpoints`, `purge`;
//! - [`workspaces`]: `supabash workspaces`, `fork` and `delete-workspace`;
//! - [`verifiers`]: `verifier register|rotate|revoke`; [`completions`]: shell completion;
//! - [`mcp`]: `supabash mcp`, which opens workspaces the way a host does and serves
//!   `supabash_agent::mcp` over stdio or streamable HTTP;
//! - [`redact`]: `supabash redact`;
//! - [`run`]: `supabash run`, a command on a materialised workspace, its changes staged back;
//! - [`transfer`]: `supabash import` and `supabash export`; [`ignore_list`]: what `run` and
//!   `import` leave out; `body_cache`: the host's body
//!   cache those and `mount` read through;
//! - [`fuse`]: `supabash mount` (the FUSE filesystem in `fuse_fs`, `fuse_ops`, `fuse_inodes`,
//!   `fuse_summary`), and [`mount_control`]: `supabash commit --mount` / `changes --mount`;
//! - [`verify`]: `supabash verify` and `supabash gc`;
//! - [`doctor`]: `supabash doctor`; [`storage_setup`]: `supabash storage-setup`;
//! - [`audit`]: `supabash audit`, the audit trail of agent actions.

#![deny(unsafe_code)]

pub mod audit;
mod body_cache;
pub mod completions;
pub mod connect;
pub mod diff;
pub mod doctor;
pub mod exit;
pub mod files;
pub mod flags;
pub mod fuse;
mod fuse_fs;
mod fuse_inodes;
mod fuse_ops;
pub mod fuse_summary;
pub mod history;
pub mod ignore_list;
pub mod mcp;
pub mod mcp_mounts;
pub mod mount_control;
pub mod notes;
pub mod output;
pub mod profile;
pub mod redact;
pub mod retention;
pub mod revision;
pub mod run;
pub mod storage_setup;
pub mod transfer;
pub mod verifiers;
pub mod verify;
pub mod workspaces;

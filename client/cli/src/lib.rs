//! supabash-cli: the `supabash` command-line tool (its binary is `supabash`; docs/cli.md). The
//! binary (`main.rs`) holds only the command line and the dispatch; every command's handler
//! lives here, in a folder per feature:
//!
//! - [`connect`]: how a command reaches a workspace: the connection arguments ([`connect::Target`]),
//!   named profiles ([`connect::profile`]) and the host's body cache;
//! - [`history`]: revisions by name, `log`, `show`, `restore`, `note`, `ls`, `tree`, `cat`,
//!   `diff` (also the demo's diff step) and `audit`;
//! - [`admin`]: `workspaces`, `fork`, `delete-workspace`, `checkpoint(s)`, `purge`, `redact`,
//!   `verifier register|rotate|revoke`, `storage-setup`;
//! - [`check`]: `doctor`, `verify`, `gc`;
//! - [`run`]: `supabash run` (a command on a materialised workspace, its changes staged back),
//!   with `import`/`export` ([`run::transfer`]) and the ignore lists ([`run::ignore_list`]);
//! - [`mount`]: `supabash mount`, the FUSE mount of a staged tree (its filesystem in
//!   `mount::fuse`), and `commit --mount` / `changes --mount` over its control socket
//!   ([`mount::control`]);
//! - [`mcp`]: `supabash mcp`, which opens workspaces the way a host does and serves
//!   `supabash_agent::mcp`, with the `--mount` flags that compose them ([`mcp::mounts`]);
//! - [`ui`]: `supabash ui`, the read-only web viewer of workspaces, history, diffs and audit
//!   records (docs/ui.md);
//!
//! and what every command shares: [`exit`] (exit statuses and error reports from the error
//! taxonomy), [`output`] (JSON and lines), [`flags`] (argument blocks several commands
//! flatten), [`completions`] (shell completion).

#![deny(unsafe_code)]

pub mod admin;
pub mod check;
pub mod completions;
pub mod connect;
pub mod exit;
pub mod flags;
pub mod history;
pub mod mcp;
pub mod mount;
pub mod output;
pub mod run;
pub mod ui;

/// `supabash doctor` at the path other crates' tests use (`supabash_cli::doctor`).
pub use check::doctor;

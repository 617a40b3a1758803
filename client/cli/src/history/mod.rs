//! Reading a workspace's history and files: naming revisions ([`revision`]), [`log`], [`show`]
//! and [`restore`], notes on revisions ([`notes`]), files at a revision ([`files`]),
//! diffs ([`diff`]) and the audit trail of agent actions ([`audit`]).

pub mod audit;
pub mod diff;
pub mod files;
pub mod log;
pub mod notes;
pub mod restore;
pub mod revision;
pub mod show;

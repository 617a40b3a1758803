//! The tables, one owner per family: the only code that writes SQL for them. Nothing here
//! imports `rpc`.
//!
//! - [`access`] opens and locks a workspace for an authorised caller; [`workspaces`] creates,
//!   forks, hides and lists workspace rows; [`usage`] the per-owner quotas.
//! - [`lineage`] says which [`entries`] (the interval-versioned path rows) a workspace or a
//!   fork sees; [`path_history`] reads one path's versions.
//! - [`bodies`] stores and loads content-addressed bodies in their [`encoding`]s.
//! - [`revisions`] keeps receipts, [`notes`] the notes added to revisions after the fact,
//!   [`retention`] says what purge drops, [`checkpoints`] the
//!   pinned revisions, [`redactions`] the rewrites a redaction makes, [`integrity`] the checks
//!   behind verify.
//! - [`leases`] the single-writer leases; [`grants`] the capability verifiers, nonces and
//!   grants; [`storage_nonces`] the spent nonces of Storage capabilities.
//! - [`audit`] the audit trail; [`announce`] tells listeners a workspace changed.

pub mod access;
pub mod announce;
pub mod audit;
pub mod bodies;
pub mod checkpoints;
pub mod encoding;
pub mod entries;
pub mod grants;
pub mod integrity;
pub mod leases;
pub mod lineage;
pub mod notes;
pub mod path_history;
pub mod redactions;
pub mod retention;
pub mod revisions;
pub mod storage_nonces;
pub mod usage;
pub mod workspaces;

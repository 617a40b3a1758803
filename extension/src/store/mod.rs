//! The tables, one owner per family: the only code that writes SQL for them. [`access`] opens
//! and locks a workspace for an authorised caller; [`workspaces`] creates, forks, hides and
//! lists workspace rows; [`lineage`] says which [`entries`] (the interval-versioned path rows)
//! a workspace or a fork sees; [`bodies`] stores and loads content-addressed bodies in their
//! [`encoding`]s; [`revisions`] keeps receipts and [`retention`] says what purge drops; [`checkpoints`] the pinned revisions;
//! [`leases`] the single-writer leases; [`redactions`] the
//! rewrites a redaction makes; [`grants`] the capability verifiers, nonces and
//! grants; [`usage`] the per-owner quotas; [`audit`] the audit trail; [`path_history`] reads
//! one path's versions; [`announce`] tells listeners a workspace changed; [`notes`] keeps the
//! notes added to revisions after the fact. Nothing here imports `rpc`.

pub mod access;
pub mod announce;
pub mod audit;
pub mod bodies;
pub mod checkpoints;
pub mod encoding;
pub mod entries;
pub mod grants;
pub mod leases;
pub mod lineage;
pub mod notes;
pub mod path_history;
pub mod redactions;
pub mod retention;
pub mod revisions;
pub mod usage;
pub mod workspaces;

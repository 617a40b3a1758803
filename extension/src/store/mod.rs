//! The tables, one owner per family: the only code that writes SQL for them. [`access`] opens
//! and locks workspaces for an authorised caller; [`lineage`] says which entry rows a workspace
//! (or a fork) sees; [`bodies`] stores and loads content-addressed bodies in their
//! [`encoding`]s; [`revisions`] keeps receipts; [`grants`] the capability verifiers, nonces and grants; [`usage`] the per-owner quotas; [`checkpoints`] the pinned revisions; [`leases`] the single-writer leases; [`audit`] the
//! audit trail. [`entries`] holds the interval-versioned path rows. Nothing here imports `rpc`.

pub mod access;
pub mod audit;
pub mod bodies;
pub mod checkpoints;
pub mod encoding;
pub mod entries;
pub mod grants;
pub mod leases;
pub mod lineage;
pub mod revisions;
pub mod usage;

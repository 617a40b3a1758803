//! Per-owner quotas, set by a superuser (cluster, database or role level; 0 means none):
//! `supabash.max_workspaces_per_owner` and `supabash.max_bytes_per_owner` (MB of distinct file
//! contents, plain size, across all of an owner's workspaces). Usage is kept per body store in
//! `supabash.usage` (one row per workspace and its forks, which share the store: without a
//! quota, commits to workspaces of different families never wait on each other; a family's
//! commits briefly queue on its row); a commit that would pass the byte quota and a workspace beyond the count
//! fail with `SUPABASH_QUOTA_EXCEEDED`, and nothing of them is kept.
//!
//! Concurrent commits to different stores of one owner cannot see each other's bytes until
//! they commit. So under a byte quota every write that grows the usage, and under a count quota
//! every new workspace, first locks all of the owner's usage rows in store order
//! ([`lock_owner`]): that waits for the owner's writes still in flight on other stores and keeps
//! new ones out until this transaction ends, and the usage is then read on a fresh snapshot.
//! An owner's growing writes are thus counted one after the other, whatever the number of
//! workspaces; without a quota (the default) nothing but the store's own row is touched. Only
//! callers that see the owner's usage rows (the owner and the owner's grants, through
//! row-level security) can take these locks: no other login can hold an owner's commits. What
//! is left: an owner's very first workspace has no usage row to lock, so two created at the
//! same instant under a count quota of 1 both pass.

use crate::pg::db;
use crate::pg::fail::{Fail, Outcome};
use pgrx::guc::{GucContext, GucFlags, GucRegistry, GucSetting};
use serde_json::json;
use supabash_core::Marker;

static MAX_WORKSPACES: GucSetting<i32> = GucSetting::<i32>::new(0);
static MAX_BYTES_MB: GucSetting<i32> = GucSetting::<i32>::new(0);

/// Registers the settings (from `_PG_init`).
pub fn define() {
    GucRegistry::define_int_guc(
        c"supabash.max_workspaces_per_owner",
        c"Most workspaces one owner may have (0: no limit).",
        c"supabash_create_workspace fails with SUPABASH_QUOTA_EXCEEDED beyond it.",
        &MAX_WORKSPACES,
        0,
        i32::MAX,
        GucContext::Suset,
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"supabash.max_bytes_per_owner",
        c"Most distinct file contents one owner may store, across workspaces (0: no limit).",
        c"A commit that would store more fails with SUPABASH_QUOTA_EXCEEDED and is rolled back.",
        &MAX_BYTES_MB,
        0,
        i32::MAX,
        GucContext::Suset,
        GucFlags::UNIT_MB,
    );
}

/// Refuses a new workspace for `owner` once the count quota is reached. Under a count quota
/// the owner's usage rows are locked first (see the module doc), so two workspaces created at
/// once are counted one after the other.
pub fn check_new_workspace(owner: &str) -> Outcome<()> {
    let max = MAX_WORKSPACES.get();
    if max == 0 {
        return Ok(());
    }
    lock_owner(owner)?;
    // Counted from usage, on a snapshot taken after the lock: a delegated call sees all of the
    // owner's usage rows but only its own fork family's workspaces.
    let have = db::query_row_generic(
        "SELECT coalesce(sum(workspaces), 0)::bigint FROM supabash.usage WHERE owner_id = $1::uuid",
        &[owner.into()],
        |r| db::get::<i64>(r, 1),
    )?
    .unwrap_or(0);
    if have >= i64::from(max) {
        return Err(Fail::new(
            Marker::Quota,
            format!("the owner already has {have} workspaces, the most supabash.max_workspaces_per_owner allows"),
        )
        .with_detail(json!({ "limit": max, "workspaces": have })));
    }
    Ok(())
}

/// Locks every usage row of `owner`, in store order, until the transaction ends: waits for
/// the owner's commits still in flight elsewhere and serialises the quota checks that take it
/// (see the module doc). Statements after it see what those commits wrote.
fn lock_owner(owner: &str) -> Outcome<()> {
    db::exec_kept(
        "SELECT 1 FROM supabash.usage WHERE owner_id = $1::uuid ORDER BY workspace_id FOR UPDATE",
        &[owner.into()],
    )
}

/// The owner's stored bytes across their stores, as this statement's snapshot sees them.
fn owner_bytes(owner: &str) -> Outcome<i64> {
    Ok(db::query_row_generic(
        "SELECT coalesce(sum(body_bytes), 0)::bigint FROM supabash.usage WHERE owner_id = $1::uuid",
        &[owner.into()],
        |r| db::get::<i64>(r, 1),
    )?
    .unwrap_or(0))
}

/// Counts a fork made (`delta` 1) or a workspace deleted (-1) in its body store's usage.
pub fn count_workspaces(store: &str, delta: i32) -> Outcome<()> {
    db::exec(
        "UPDATE supabash.usage SET workspaces = greatest(workspaces + $2, 0) WHERE workspace_id = $1::uuid",
        &[store.into(), delta.into()],
    )
}

/// Starts the usage record of a new workspace (its own body store).
pub fn open_usage(workspace: &str, owner: &str) -> Outcome<()> {
    db::exec(
        "INSERT INTO supabash.usage (workspace_id, owner_id) VALUES ($1::uuid, $2::uuid)",
        &[workspace.into(), owner.into()],
    )
}

/// Adds `bytes` (negative when purge reclaimed them) to the body store's usage; nothing is
/// written when they are 0. When the byte quota is set and `bytes` grows the usage, refuses
/// usage past it across the owner's workspaces, counted after locking the owner's usage rows
/// (see the module doc).
pub fn add_bytes(store: &str, owner: &str, bytes: i64) -> Outcome<()> {
    if bytes == 0 {
        return Ok(());
    }
    let max_mb = MAX_BYTES_MB.get();
    if max_mb == 0 || bytes < 0 {
        return store_bytes(store, owner, bytes);
    }
    let max = i64::from(max_mb) * 1024 * 1024;
    // Wait for the owner's writes in flight on other stores, then count what they committed.
    lock_owner(owner)?;
    let used = owner_bytes(owner)? + bytes;
    if used > max {
        return Err(Fail::new(
            Marker::Quota,
            format!("this commit would bring the owner's stored file contents to {used} bytes, over supabash.max_bytes_per_owner ({max_mb} MB); nothing was committed"),
        )
        .with_detail(json!({ "limitBytes": max, "usedBytes": used, "addedBytes": bytes })));
    }
    store_bytes(store, owner, bytes)
}

/// Adds `bytes` to the body store's usage row (one statement, a kept plan).
fn store_bytes(store: &str, owner: &str, bytes: i64) -> Outcome<()> {
    db::exec_kept(
        "INSERT INTO supabash.usage AS u (workspace_id, owner_id, body_bytes)
         VALUES ($1::uuid, $2::uuid, greatest($3, 0))
         ON CONFLICT ON CONSTRAINT usage_pkey DO UPDATE SET body_bytes = greatest(u.body_bytes + $3, 0)",
        &[store.into(), owner.into(), bytes.into()],
    )
}

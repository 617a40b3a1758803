//! Workspace rows (`supabash.workspaces`): created, forked, hidden or deleted, listed. Opening
//! and locking one for a caller is `access`'.

use crate::pg::db;
use crate::pg::fail::{Fail, Outcome};
use crate::pg::schema::Schema;
use crate::store::access::Workspace;
use crate::store::lineage;
use supabash_core::rpc::verify::IdleWorkspace;
use supabash_core::rpc::{ForkedFrom, WorkspaceCreated, WorkspaceInfo};
use supabash_core::Marker;

/// Inserts a new, empty workspace of `owner`, its own body store, storing plain files only
/// when `files_only` (a schema without the column is never asked to: see `create_workspace`).
pub fn insert(
    schema: Schema,
    owner: &str,
    label: Option<String>,
    files_only: bool,
) -> Outcome<Option<WorkspaceCreated>> {
    let created = |r: &db::Row| {
        Ok(WorkspaceCreated {
            workspace_id: db::get(r, 1)?,
            created_at: db::get(r, 2)?,
            head_revision: None,
            files_only,
        })
    };
    if !schema.files_only_option {
        return db::row(
            "INSERT INTO supabash.workspaces (id, owner_id, store_id, label)
             SELECT g, $1::uuid, g, $2 FROM gen_random_uuid() AS g
             RETURNING id::text, supabash.utc_text(created_at)",
            &[owner.into(), label.into()],
            created,
        );
    }
    db::row(
        "INSERT INTO supabash.workspaces (id, owner_id, store_id, label, files_only)
         SELECT g, $1::uuid, g, $2, $3 FROM gen_random_uuid() AS g
         RETURNING id::text, supabash.utc_text(created_at)",
        &[owner.into(), label.into(), files_only.into()],
        created,
    )
}

/// Whether workspace `id` stores plain files only (always false on a schema without the
/// option).
pub fn files_only(schema: Schema, id: &str) -> Outcome<bool> {
    if !schema.files_only_option {
        return Ok(false);
    }
    Ok(db::query_row(
        "SELECT files_only FROM supabash.workspaces WHERE id = $1::uuid",
        &[id.into()],
        |r| db::get::<bool>(r, 1),
    )?
    .unwrap_or(false))
}

/// Inserts the fork's workspace row (same owner and body store, reading `src` at `position`)
/// with its first revision as head: its id, creation time and head revision.
pub fn insert_fork(
    schema: Schema,
    src: &Workspace,
    label: Option<String>,
    revision: &str,
    position: i64,
) -> Outcome<(String, String, String)> {
    // A fork stores what its source stores: it starts from the source's tree.
    const INHERITING: &str = "INSERT INTO supabash.workspaces
                (id, owner_id, store_id, label, fork_of, fork_revision, fork_position,
                 head_revision, head_position, files_only)
         SELECT g, $1::uuid, $2::uuid, $3, $4::uuid, $5::uuid, $6, gen_random_uuid(), $7,
                (SELECT s.files_only FROM supabash.workspaces s WHERE s.id = $4::uuid)
           FROM gen_random_uuid() AS g
         RETURNING id::text, supabash.utc_text(created_at), head_revision::text";
    const PLAIN: &str = "INSERT INTO supabash.workspaces
                (id, owner_id, store_id, label, fork_of, fork_revision, fork_position,
                 head_revision, head_position)
         SELECT g, $1::uuid, $2::uuid, $3, $4::uuid, $5::uuid, $6, gen_random_uuid(), $7
           FROM gen_random_uuid() AS g
         RETURNING id::text, supabash.utc_text(created_at), head_revision::text";
    db::row(
        if schema.files_only_option {
            INHERITING
        } else {
            PLAIN
        },
        &[
            src.owner.as_str().into(),
            src.store.as_str().into(),
            label.into(),
            src.id.as_str().into(),
            revision.into(),
            position.into(),
            lineage::FIRST_POSITION.into(),
        ],
        |r| Ok((db::get(r, 1)?, db::get(r, 2)?, db::get(r, 3)?)),
    )?
    .ok_or_else(|| Fail::new(Marker::WorkspaceDenied, "the fork was not created"))
}

/// Whether any workspace (deleted or not) is a fork of `id`.
pub fn has_forks(id: &str) -> Outcome<bool> {
    Ok(db::query_row(
        "SELECT EXISTS (SELECT 1 FROM supabash.workspaces WHERE fork_of = $1::uuid)",
        &[id.into()],
        |r| db::get::<bool>(r, 1),
    )?
    .unwrap_or(false))
}

/// Marks `id` deleted (no RPC finds it) and clears its head: what a source its forks still
/// read becomes.
pub fn hide(id: &str) -> Outcome<()> {
    db::exec(
        "UPDATE supabash.workspaces
            SET deleted_at = now(), updated_at = now(), head_revision = NULL, head_position = NULL
          WHERE id = $1::uuid",
        &[id.into()],
    )
}

/// Deletes the row of `id`.
pub fn delete(id: &str) -> Outcome<()> {
    db::exec(
        "DELETE FROM supabash.workspaces WHERE id = $1::uuid",
        &[id.into()],
    )
}

/// Whether `id` is hidden (deleted, kept for its forks), and its own source.
pub fn hidden_and_source(id: &str) -> Outcome<Option<(bool, Option<String>)>> {
    db::query_row(
        "SELECT deleted_at IS NOT NULL, fork_of::text FROM supabash.workspaces WHERE id = $1::uuid",
        &[id.into()],
        |r| Ok((db::get(r, 1)?, db::opt(r, 2)?)),
    )
}

/// Up to `limit` live workspaces of `owner` after workspace `after`, in (created_at, id)
/// order, with their store's bytes.
pub fn page(
    schema: Schema,
    owner: &str,
    after: Option<String>,
    limit: i64,
) -> Outcome<Vec<WorkspaceInfo>> {
    // Without the column (0.5.0) every workspace keeps what the schema stores.
    let files_only = if schema.files_only_option {
        "w.files_only"
    } else {
        "false"
    };
    db::query(
        &format!(
            "WITH c AS (SELECT created_at, id FROM supabash.workspaces WHERE id = $2::uuid)
         SELECT w.id::text, w.label, w.head_revision::text, w.head_position,
                supabash.utc_text(w.created_at), supabash.utc_text(w.updated_at),
                w.fork_of::text, w.fork_revision::text, w.store_id::text,
                coalesce((SELECT u.body_bytes FROM supabash.usage u WHERE u.workspace_id = w.store_id), 0),
                {files_only}
           FROM supabash.workspaces w
          WHERE w.owner_id = $1::uuid AND w.deleted_at IS NULL
            AND ($2::uuid IS NULL OR (w.created_at, w.id) > (SELECT created_at, id FROM c))
          ORDER BY w.created_at, w.id LIMIT $3"
        ),
        &[owner.into(), after.into(), limit.into()],
        |r| {
            let forked_from = ForkedFrom::from_columns(db::opt(r, 7)?, db::opt(r, 8)?);
            Ok(WorkspaceInfo {
                workspace_id: db::get(r, 1)?,
                label: db::opt(r, 2)?,
                head_revision: db::opt(r, 3)?,
                head_position: db::opt(r, 4)?,
                created_at: db::get(r, 5)?,
                updated_at: db::get(r, 6)?,
                forked_from,
                store_id: db::get(r, 9)?,
                store_bytes: db::get(r, 10)?,
                files_only: db::get(r, 11)?,
            })
        },
    )
}

/// Whether workspace `id` is `owner`'s (deleted or not).
pub fn owned_by(id: &str, owner: &str) -> Outcome<bool> {
    Ok(db::query_row(
        "SELECT 1 FROM supabash.workspaces WHERE id = $1::uuid AND owner_id = $2::uuid",
        &[id.into(), owner.into()],
        |_| Ok(()),
    )?
    .is_some())
}

/// The body stores of `owner`'s workspaces, in id order (the lock order, see
/// `access::lock_store`).
pub fn stores_of(owner: &str) -> Outcome<Vec<String>> {
    db::query(
        "SELECT DISTINCT store_id::text FROM supabash.workspaces WHERE owner_id = $1::uuid ORDER BY 1",
        &[owner.into()],
        |r| db::get::<String>(r, 1),
    )
}

/// Up to `max` of `owner`'s live workspaces unchanged for at least `days` days, least
/// recently changed first, each with how many there are in all.
pub fn idle(owner: &str, days: i32, max: i64) -> Outcome<Vec<(IdleWorkspace, i64)>> {
    db::query(
        "SELECT id::text, label, head_position, supabash.utc_text(updated_at),
                floor(extract(epoch FROM now() - updated_at) / 86400)::bigint,
                count(*) OVER ()
           FROM supabash.workspaces
          WHERE owner_id = $1::uuid AND deleted_at IS NULL
            AND updated_at <= now() - make_interval(days => $2)
          ORDER BY updated_at, id LIMIT $3",
        &[owner.into(), days.into(), max.into()],
        |r| {
            Ok((
                IdleWorkspace {
                    workspace_id: db::get(r, 1)?,
                    label: db::opt(r, 2)?,
                    head_position: db::opt(r, 3)?,
                    updated_at: db::get(r, 4)?,
                    idle_days: db::get(r, 5)?,
                },
                db::get::<i64>(r, 6)?,
            ))
        },
    )
}

/// Moves the redaction epoch of `forks` and of `ws` by one; answers `ws`'s new epoch.
pub fn bump_epochs(ws: &str, forks: &[String]) -> Outcome<i64> {
    db::exec(
        "UPDATE supabash.workspaces SET redaction_epoch = redaction_epoch + 1, updated_at = now()
          WHERE id = ANY($1::uuid[])",
        &[forks.to_vec().into()],
    )?;
    db::row(
        "UPDATE supabash.workspaces SET redaction_epoch = redaction_epoch + 1, updated_at = now()
          WHERE id = $1::uuid RETURNING redaction_epoch",
        &[ws.into()],
        |r| db::get::<i64>(r, 1),
    )?
    .ok_or_else(|| Fail::new(Marker::WorkspaceDenied, "workspace vanished"))
}

//! Workspaces as a whole: create, fork, delete and list. A fork copies nothing (see `lineage`);
//! deleting a workspace its forks still read from keeps, hidden, exactly what they read.

use super::Call;
use crate::pg::args;
use crate::pg::db;
use crate::pg::fail::{Fail, Outcome};
use crate::store::access;
use crate::store::bodies;
use crate::store::lineage;
use crate::store::revisions;
use crate::store::usage;
use serde_json::json;
use supabash_core::capability::Operation;
use supabash_core::hash::sha256;
use supabash_core::limits::{
    check_texts, DEFAULT_WORKSPACE_PAGE, MAX_CAUSE_BYTES, MAX_LABEL_BYTES,
    MAX_WORKSPACE_LABEL_BYTES, MAX_WORKSPACE_PAGE,
};
use supabash_core::rpc::requests as rq;
use supabash_core::rpc::{
    ForkedFrom, Receipt, WorkspaceCreated, WorkspaceDeleted, WorkspaceForked, WorkspaceInfo,
    WorkspacePage,
};
use supabash_core::Marker;

fn check_label(label: Option<&str>) -> Outcome<()> {
    check_texts(&[("label", label, MAX_WORKSPACE_LABEL_BYTES)]).map_err(args::field)
}

/// `supabash_create_workspace`: a new, empty workspace owned by the caller, its own body store.
pub fn create_workspace(_call: &Call, req: rq::CreateWorkspace) -> Outcome<WorkspaceCreated> {
    let owner = access::caller()?;
    check_label(req.label.as_deref())?;
    usage::check_new_workspace(&owner)?;
    let created = db::row(
        "INSERT INTO supabash.workspaces (id, owner_id, store_id, label)
         SELECT g, $1::uuid, g, $2 FROM gen_random_uuid() AS g
         RETURNING id::text, supabash.utc_text(created_at)",
        &[owner.as_str().into(), req.label.into()],
        |r| {
            Ok(WorkspaceCreated {
                workspace_id: db::get(r, 1)?,
                created_at: db::get(r, 2)?,
                head_revision: None,
            })
        },
    )?
    .ok_or_else(|| Fail::new(Marker::WorkspaceDenied, "the workspace was not created"))?;
    usage::open_usage(&created.workspace_id, &owner)?;
    Ok(created)
}

/// `supabash_fork`: a new workspace of the same owner whose first revision's tree is the
/// source's at `revision` (default: its head). O(1) rows, no bytes: the fork reads the source
/// (see `lineage`). The source is locked while the fork is made, so a purge cannot remove the
/// fork point between the read and the insert.
pub fn fork(_call: &Call, req: rq::Fork) -> Outcome<WorkspaceForked> {
    let src = access::open_locked(&req, &[Operation::Fork])?;
    check_fork_request(&req, &src)?;
    let (revision, position) = fork_point(&src, req.revision.as_deref())?;
    let actor = access::recorded_actor(src.delegation.as_ref(), req.actor.clone())?;
    usage::check_new_workspace(&src.owner)?;
    let (id, created_at, head) = insert_fork(&src, req.label.clone(), &revision, position)?;
    let forked_from = ForkedFrom {
        workspace_id: src.id.clone(),
        revision,
    };
    let receipt = Receipt {
        workspace_id: id.clone(),
        revision: head.clone(),
        parent_revision: None,
        position: lineage::FIRST_POSITION,
        transaction_id: uuid::Uuid::new_v4().to_string(),
        idempotency_key: None,
        actor,
        correlation_id: src
            .delegation
            .as_ref()
            .and_then(|d| d.correlation_id.clone()),
        cause: req.cause.clone(),
        metadata: json!({}),
        source_revision: None,
        delegation_key_id: src.delegation.as_ref().map(|d| d.key_id.clone()),
        forked_from: Some(forked_from.clone()),
        rebased_from: None,
        committed_at: created_at.clone(),
        changes: Vec::new(),
    };
    let request_hash = sha256(
        serde_json::to_string(&req)
            .expect("requests serialise")
            .as_bytes(),
    );
    revisions::insert(&receipt, &request_hash)?;
    usage::count_workspaces(&src.store, 1)?;
    Ok(WorkspaceForked {
        workspace_id: id,
        created_at,
        head_revision: head,
        forked_from,
    })
}

/// Checks a fork request's texts and that the new fork stays within the lineage depth.
fn check_fork_request(req: &rq::Fork, src: &access::Workspace) -> Outcome<()> {
    check_label(req.label.as_deref())?;
    check_texts(&[
        ("actor", req.actor.as_deref(), MAX_LABEL_BYTES),
        ("cause", req.cause.as_deref(), MAX_CAUSE_BYTES),
    ])
    .map_err(args::field)?;
    if src.sources.len() + 1 >= lineage::MAX_DEPTH {
        return Err(Fail::new(
            Marker::Quota,
            format!(
                "a fork may be at most {} forks deep; fork an earlier workspace of the family",
                lineage::MAX_DEPTH - 1
            ),
        ));
    }
    Ok(())
}

/// The revision a fork starts from and its position: the one named, or the source's head.
fn fork_point(src: &access::Workspace, revision: Option<&str>) -> Outcome<(String, i64)> {
    if let Some(r) = args::uuid_opt("revision", revision)? {
        let p = access::revision_position(&src.id, &r)?;
        return Ok((r, p));
    }
    match (&src.head, src.head_position) {
        (Some(h), Some(p)) => Ok((h.clone(), p)),
        _ => Err(Fail::new(
            Marker::RevisionNotFound,
            "the workspace has no revision to fork: commit first",
        )),
    }
}

/// Inserts the fork's workspace row (same owner and body store, reading `src` at `position`)
/// with its first revision as head: its id, creation time and head revision.
fn insert_fork(
    src: &access::Workspace,
    label: Option<String>,
    revision: &str,
    position: i64,
) -> Outcome<(String, String, String)> {
    db::row(
        "INSERT INTO supabash.workspaces
                (id, owner_id, store_id, label, fork_of, fork_revision, fork_position,
                 head_revision, head_position)
         SELECT g, $1::uuid, $2::uuid, $3, $4::uuid, $5::uuid, $6, gen_random_uuid(), $7
           FROM gen_random_uuid() AS g
         RETURNING id::text, supabash.utc_text(created_at), head_revision::text",
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

/// `supabash_delete_workspace`: the owner's alone (a delegated grant never reaches it). Without
/// forks reading from it, the workspace goes with its history and every body no other
/// workspace of its family uses. With forks, its row stays, marked deleted (no RPC finds it),
/// its revisions and checkpoints go, and of its entries only what its forks read is kept;
/// a deleted source goes for good once its last fork does.
pub fn delete_workspace(_call: &Call, req: rq::DeleteWorkspace) -> Outcome<WorkspaceDeleted> {
    let ws = access::lock_family(access::open(&req, &[])?)?;
    usage::count_workspaces(&ws.store, -1)?;
    let mut reclaimed = Reclaimed {
        store: ws.store.clone(),
        owner: ws.owner.clone(),
        bodies: 0,
        bytes: 0,
    };
    let kept_for_forks = remove(
        &ws.id,
        ws.sources.first().map(|s| s.workspace.clone()),
        &mut reclaimed,
    )?;
    Ok(WorkspaceDeleted {
        workspace_id: ws.id,
        bodies: reclaimed.bodies,
        bytes: reclaimed.bytes,
        kept_for_forks,
    })
}

/// What a deletion gave back, in its family's store.
struct Reclaimed {
    store: String,
    owner: String,
    bodies: i64,
    bytes: i64,
}

impl Reclaimed {
    /// Deletes the store's bodies nothing references now and gives their bytes back. Runs
    /// while a workspace of the store still exists: bodies and usage are visible only then.
    fn collect(&mut self) -> Outcome<()> {
        let (bodies, bytes) = bodies::collect_garbage(&self.store)?;
        usage::add_bytes(&self.store, &self.owner, -bytes)?;
        self.bodies += bodies;
        self.bytes += bytes;
        Ok(())
    }
}

/// Removes workspace `id` (whose source, if a fork, is `source`), or hides it and keeps what
/// its forks read; then a deleted source left without forks goes too. Answers whether `id`
/// was kept for its forks.
fn remove(id: &str, source: Option<String>, reclaimed: &mut Reclaimed) -> Outcome<bool> {
    let has_forks = db::query_row(
        "SELECT EXISTS (SELECT 1 FROM supabash.workspaces WHERE fork_of = $1::uuid)",
        &[id.into()],
        |r| db::get::<bool>(r, 1),
    )?
    .unwrap_or(false);
    if has_forks {
        db::exec(
            "UPDATE supabash.workspaces
                SET deleted_at = now(), updated_at = now(), head_revision = NULL, head_position = NULL
              WHERE id = $1::uuid",
            &[id.into()],
        )?;
        db::exec(
            "DELETE FROM supabash.checkpoints WHERE workspace_id = $1::uuid",
            &[id.into()],
        )?;
        db::exec(
            "DELETE FROM supabash.revisions WHERE workspace_id = $1::uuid",
            &[id.into()],
        )?;
        keep_only_fork_points(id, source.is_some())?;
        reclaimed.collect()?;
        return Ok(true);
    }
    db::exec(
        "DELETE FROM supabash.entries WHERE workspace_id = $1::uuid",
        &[id.into()],
    )?;
    reclaimed.collect()?;
    db::exec(
        "DELETE FROM supabash.workspaces WHERE id = $1::uuid",
        &[id.into()],
    )?;
    if let Some(source) = source {
        let (hidden, its_source): (bool, Option<String>) = db::query_row(
            "SELECT deleted_at IS NOT NULL, fork_of::text FROM supabash.workspaces WHERE id = $1::uuid",
            &[source.as_str().into()],
            |r| Ok((db::get(r, 1)?, db::opt(r, 2)?)),
        )?
        .ok_or_else(|| Fail::new(Marker::HistoryCorruption, "a fork's source is missing"))?;
        if hidden {
            // A deleted source keeps only what its remaining forks read, or goes.
            remove(&source, its_source, reclaimed)?;
        }
    }
    Ok(false)
}

/// Deletes the entries of hidden workspace `id` that none of its forks reads: those visible
/// at no fork point, except a fork's copies of inherited versions (see `lineage`).
fn keep_only_fork_points(id: &str, is_fork: bool) -> Outcome<()> {
    db::exec(
        "DELETE FROM supabash.entries e
          WHERE e.workspace_id = $1::uuid
            AND NOT ($2 AND e.valid_from = $3)
            AND NOT EXISTS (SELECT 1 FROM supabash.workspaces c
                             WHERE c.fork_of = $1::uuid AND e.valid_from <= c.fork_position
                               AND (e.valid_until IS NULL OR e.valid_until > c.fork_position))",
        &[id.into(), is_fork.into(), lineage::FIRST_POSITION.into()],
    )
}

/// `supabash_list_workspaces`: the caller's workspaces (not deleted ones), oldest first.
pub fn list_workspaces(_call: &Call, req: rq::ListWorkspaces) -> Outcome<WorkspacePage> {
    let owner = access::caller()?;
    let limit = req.page_size.map_or(DEFAULT_WORKSPACE_PAGE, i64::from);
    if !(1..=MAX_WORKSPACE_PAGE).contains(&limit) {
        return Err(Fail::new(
            Marker::Quota,
            format!("page_size must be between 1 and {MAX_WORKSPACE_PAGE}"),
        ));
    }
    let after = args::uuid_opt("cursor", req.cursor.as_deref())?;
    // Pages follow (created_at, id); the cursor names the last workspace of the previous page.
    let mut workspaces: Vec<WorkspaceInfo> = db::query(
        "WITH c AS (SELECT created_at, id FROM supabash.workspaces WHERE id = $2::uuid)
         SELECT w.id::text, w.label, w.head_revision::text, w.head_position,
                supabash.utc_text(w.created_at), supabash.utc_text(w.updated_at),
                w.fork_of::text, w.fork_revision::text, w.store_id::text,
                coalesce((SELECT u.body_bytes FROM supabash.usage u WHERE u.workspace_id = w.store_id), 0)
           FROM supabash.workspaces w
          WHERE w.owner_id = $1::uuid AND w.deleted_at IS NULL
            AND ($2::uuid IS NULL OR (w.created_at, w.id) > (SELECT created_at, id FROM c))
          ORDER BY w.created_at, w.id LIMIT $3",
        &[owner.as_str().into(), after.clone().into(), (limit + 1).into()],
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
            })
        },
    )?;
    if let Some(cursor) = &after {
        let known = db::query_row(
            "SELECT 1 FROM supabash.workspaces WHERE id = $1::uuid AND owner_id = $2::uuid",
            &[cursor.as_str().into(), owner.as_str().into()],
            |_| Ok(()),
        )?;
        if known.is_none() {
            return Err(Fail::new(
                Marker::RevisionNotFound,
                "the cursor names no workspace of the caller",
            )
            .with_detail(json!({ "cursor": cursor })));
        }
    }
    let more = workspaces.len() as i64 > limit;
    workspaces.truncate(limit as usize);
    let next_cursor = if more {
        workspaces.last().map(|w| w.workspace_id.clone())
    } else {
        None
    };
    Ok(WorkspacePage {
        workspaces,
        next_cursor,
    })
}

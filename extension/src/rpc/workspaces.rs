//! Workspaces as a whole: create, fork, delete and list. A fork copies nothing (see `lineage`);
//! deleting a workspace its forks still read from keeps, hidden, exactly what they read.

use super::Call;
use crate::pg::args;
use crate::pg::fail::{Fail, Outcome};
use crate::pg::schema::Schema;
use crate::store::access;
use crate::store::bodies;
use crate::store::lineage;
use crate::store::revisions;
use crate::store::usage;
use crate::store::{audit, checkpoints, entries, workspaces};
use serde_json::json;
use supabash_core::hash::sha256;
use supabash_core::limits::{
    check_texts, DEFAULT_WORKSPACE_PAGE, MAX_CAUSE_BYTES, MAX_LABEL_BYTES,
    MAX_WORKSPACE_LABEL_BYTES, MAX_WORKSPACE_PAGE,
};
use supabash_core::rpc::requests as rq;
use supabash_core::rpc::{
    ForkedFrom, Receipt, WorkspaceCreated, WorkspaceDeleted, WorkspaceForked, WorkspacePage,
};
use supabash_core::Marker;

fn check_label(label: Option<&str>) -> Outcome<()> {
    check_texts(&[("label", label, MAX_WORKSPACE_LABEL_BYTES)]).map_err(args::field)
}

/// `supabash_create_workspace`: a new, empty workspace owned by the caller, its own body store.
pub fn create_workspace(call: &Call, req: rq::CreateWorkspace) -> Outcome<WorkspaceCreated> {
    let owner = access::caller()?;
    check_label(req.label.as_deref())?;
    let files_only = req.files_only.unwrap_or(false);
    if files_only && !call.schema.files_only_option {
        return Err(Fail::new(
            Marker::SchemaOutdated,
            "files_only workspaces need supabash 0.6.0: run ALTER EXTENSION supabash UPDATE",
        ));
    }
    usage::check_new_workspace(&owner)?;
    let created = workspaces::insert(call.schema, &owner, req.label, files_only)?
        .ok_or_else(|| Fail::new(Marker::WorkspaceDenied, "the workspace was not created"))?;
    usage::open_usage(&created.workspace_id, &owner)?;
    Ok(created)
}

/// `supabash_fork`: a new workspace of the same owner whose first revision's tree is the
/// source's at `revision` (default: its head). O(1) rows, no bytes: the fork reads the source
/// (see `lineage`). The source is locked while the fork is made, so a purge cannot remove the
/// fork point between the read and the insert.
pub fn fork(call: &Call, req: rq::Fork) -> Outcome<WorkspaceForked> {
    let src = access::open_locked(&req)?;
    check_fork_request(&req, &src)?;
    let (revision, position) = fork_point(&src, req.revision.as_deref())?;
    let actor = access::recorded_actor(src.delegation.as_ref(), req.actor.clone())?;
    usage::check_new_workspace(&src.owner)?;
    let (id, created_at, head) =
        workspaces::insert_fork(call.schema, &src, req.label.clone(), &revision, position)?;
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
    // The fork's tree is its source's at the fork point: so are its totals.
    let totals = revisions::Totals {
        workspace: &src.id,
        revision: receipt.forked_from.as_ref().map(|f| f.revision.as_str()),
        files: 0,
        bytes: 0,
    };
    revisions::insert(call.schema, &receipt, &request_hash, totals)?;
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

/// `supabash_delete_workspace`: the owner's alone (a delegated grant never reaches it). Without
/// forks reading from it, the workspace goes with its history and every body no other
/// workspace of its family uses. With forks, its row stays, marked deleted (no RPC finds it),
/// its revisions and checkpoints go, and of its entries only what its forks read is kept;
/// a deleted source goes for good once its last fork does.
pub fn delete_workspace(call: &Call, req: rq::DeleteWorkspace) -> Outcome<WorkspaceDeleted> {
    let ws = access::lock_family(access::open(&req)?)?;
    usage::count_workspaces(&ws.store, -1)?;
    let mut reclaimed = Reclaimed {
        schema: call.schema,
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
    schema: Schema,
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
    audit::delete_all(&reclaimed.schema, id, &reclaimed.store, &reclaimed.owner)?;
    if workspaces::has_forks(id)? {
        workspaces::hide(id)?;
        checkpoints::delete_all(id)?;
        revisions::delete_all(id)?;
        entries::keep_only_fork_points(id, source.is_some())?;
        reclaimed.collect()?;
        return Ok(true);
    }
    entries::delete_all(id)?;
    reclaimed.collect()?;
    workspaces::delete(id)?;
    if let Some(source) = source {
        let (hidden, its_source) = workspaces::hidden_and_source(&source)?
            .ok_or_else(|| Fail::new(Marker::HistoryCorruption, "a fork's source is missing"))?;
        if hidden {
            // A deleted source keeps only what its remaining forks read, or goes.
            remove(&source, its_source, reclaimed)?;
        }
    }
    Ok(false)
}

/// `supabash_list_workspaces`: the caller's workspaces (not deleted ones), oldest first.
pub fn list_workspaces(call: &Call, req: rq::ListWorkspaces) -> Outcome<WorkspacePage> {
    let owner = access::caller()?;
    let limit = args::page_size(req.page_size, DEFAULT_WORKSPACE_PAGE, MAX_WORKSPACE_PAGE)?;
    let after = args::uuid_opt("cursor", req.cursor.as_deref())?;
    // Pages follow (created_at, id); the cursor names the last workspace of the previous page.
    let mut page = workspaces::page(call.schema, &owner, after.clone(), limit + 1)?;
    if let Some(cursor) = &after {
        if !workspaces::owned_by(cursor, &owner)? {
            return Err(Fail::new(
                Marker::RevisionNotFound,
                "the cursor names no workspace of the caller",
            )
            .with_detail(json!({ "cursor": cursor })));
        }
    }
    let more = page.len() as i64 > limit;
    page.truncate(limit as usize);
    let next_cursor = if more {
        page.last().map(|w| w.workspace_id.clone())
    } else {
        None
    };
    Ok(WorkspacePage {
        workspaces: page,
        next_cursor,
    })
}

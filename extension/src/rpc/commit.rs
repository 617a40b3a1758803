//! The native commit: authorise, lock, replay, compare-and-swap, then apply every change with a
//! handful of set-based statements. Any error rolls the whole transaction back.

use super::Call;
use crate::pg::args;
use crate::pg::fail::{invalid, Fail, Outcome};
use crate::pg::interrupt::sha256;
use crate::rpc::rebase;
use crate::store::access::{self, Delegation, Workspace};
use crate::store::announce;
use crate::store::bodies;
use crate::store::entries::{self, Version};
use crate::store::revisions::{self, Spent};
use crate::store::usage;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use supabash_core::capability::Operation;
use supabash_core::posix::{files_only_refusal, FilesOnlyRefusal, Kind};
use supabash_core::rpc::requests as rq;
use supabash_core::rpc::{
    parse_changes, Change, ChangeError, CommitResult, Content, Receipt, ReceiptLine,
};
use supabash_core::Marker;

/// A change with its new content already hashed (done before the lock is taken).
enum Hashed {
    Upsert {
        path: String,
        after: Version,
    },
    Delete {
        path: String,
    },
    Move {
        from: String,
        path: String,
        after: Option<Version>,
    },
    Setattr {
        path: String,
        mode: Option<u32>,
        mtime_ns: Option<i64>,
    },
}

impl Hashed {
    /// A compact, content-addressed description for the request hash: a version's kind and
    /// mode only when not a file's defaults, so requests from before them hash as before, and
    /// never its time, so two clients that stage the same files at different moments make the
    /// same request (an idempotent replay); a time-only `setattr` keeps its time.
    fn digest(&self) -> Value {
        let v = |v: &Version| {
            let mut d = json!([hex::encode(&v.body_hash), hex::encode(&v.content_hash)]);
            if v.kind != Kind::File || v.mode != v.kind.default_mode() {
                d = json!([d[0], d[1], v.kind.as_str(), v.mode]);
            }
            d
        };
        match self {
            Hashed::Upsert { path, after } => json!(["upsert", path, v(after)]),
            Hashed::Delete { path } => json!(["delete", path]),
            Hashed::Move { from, path, after } => {
                json!(["move", from, path, after.as_ref().map(v)])
            }
            Hashed::Setattr {
                path,
                mode,
                mtime_ns,
            } => json!(["setattr", path, mode, mtime_ns]),
        }
    }

    /// Whether the change needs the attribute columns (0.6.0): anything but a plain file with
    /// the default mode. A time alone does not: a 0.5.0 schema stores no times.
    fn needs_posix(&self) -> bool {
        let plain = |v: &Version| v.kind == Kind::File && v.mode == Kind::File.default_mode();
        match self {
            Hashed::Upsert { after, .. } => !plain(after),
            Hashed::Move { after, .. } => after.as_ref().is_some_and(|v| !plain(v)),
            Hashed::Delete { .. } => false,
            Hashed::Setattr { .. } => true,
        }
    }

    /// The path and what a files-only workspace refuses of this change, if anything (a
    /// `setattr` applies to a file: nothing else is stored there).
    fn files_only_refusal(&self) -> Option<(&str, FilesOnlyRefusal)> {
        let (path, kind, mode) = match self {
            Hashed::Upsert { path, after }
            | Hashed::Move {
                path,
                after: Some(after),
                ..
            } => (path, after.kind, after.mode),
            Hashed::Setattr {
                path,
                mode: Some(mode),
                ..
            } => (path, Kind::File, *mode),
            _ => return None,
        };
        files_only_refusal(kind, mode).map(|r| (path.as_str(), r))
    }
}

/// Hashes every new body once and keeps its bytes by body hash.
fn hash_changes(changes: Vec<Change>) -> (Vec<Hashed>, HashMap<Vec<u8>, Vec<u8>>) {
    let mut bodies = HashMap::new();
    let mut intro = |content: Content| {
        let v = Version::of(&content);
        bodies.entry(v.body_hash.clone()).or_insert(content.body);
        v
    };
    let hashed = changes
        .into_iter()
        .map(|c| match c {
            Change::Upsert { path, content } => Hashed::Upsert {
                path,
                after: intro(content),
            },
            Change::Delete { path } => Hashed::Delete { path },
            Change::Move {
                from,
                path,
                content,
            } => Hashed::Move {
                from,
                path,
                after: content.map(&mut intro),
            },
            Change::Setattr {
                path,
                mode,
                mtime_ns,
            } => Hashed::Setattr {
                path,
                mode,
                mtime_ns,
            },
        })
        .collect();
    (hashed, bodies)
}

fn change_error(e: ChangeError) -> Fail {
    match &e {
        ChangeError::Path { path, error, index } => Fail::new(Marker::InvalidPath, e.to_string())
            .with_detail(json!({ "index": index, "path": path, "reason": error.reason() })),
        ChangeError::TooMany(_) | ChangeError::TooLarge { .. } => {
            Fail::new(Marker::Quota, e.to_string())
        }
        ChangeError::Attribute { path, error, index } => invalid(e.to_string())
            .with_detail(json!({ "index": index, "path": path, "reason": error.reason() })),
        _ => invalid(e.to_string()),
    }
}

struct Context {
    base: Option<String>,
    transaction_id: String,
    actor: Option<String>,
    correlation_id: Option<String>,
    idempotency_key: Option<String>,
    cause: Option<String>,
    metadata: Value,
    source_revision: Option<String>,
    redaction_epoch: Option<i64>,
    rebase: bool,
}

/// Checks the request's fields (the shared limits, UUIDs) and gives its context.
fn context(req: &mut rq::Commit) -> Outcome<Context> {
    req.check_fields().map_err(args::field)?;
    Ok(Context {
        base: args::uuid_opt("base_revision", req.base_revision.as_deref())?,
        transaction_id: match args::uuid_opt("transaction_id", req.transaction_id.as_deref())? {
            Some(t) => t,
            None => uuid::Uuid::new_v4().to_string(),
        },
        actor: req.actor.take(),
        correlation_id: req.correlation_id.take(),
        idempotency_key: req.idempotency_key.take(),
        cause: req.cause.take(),
        metadata: req.metadata.take().unwrap_or_else(|| json!({})),
        source_revision: args::uuid_opt("source_revision", req.source_revision.as_deref())?,
        redaction_epoch: req.redaction_epoch,
        rebase: req.rebase.unwrap_or(false),
    })
}

/// Returns the stored receipt when this request was already committed, or an idempotency
/// conflict when the same transaction id or key was used for a different request, or by a
/// revision purge has since removed (its receipt is gone, but it must not commit twice).
fn replay(ws: &str, ctx: &Context, request_hash: &[u8]) -> Outcome<Option<CommitResult>> {
    let spent = revisions::spent(ws, &ctx.transaction_id, ctx.idempotency_key.as_deref())?;
    let found = match spent {
        Spent::No => return Ok(None),
        Spent::Purged(revision) => return Err(spent_by_purged(ctx, revision)),
        Spent::Committed(found) => found,
    };
    if found.request_hash == request_hash {
        return Ok(Some(CommitResult {
            receipt: found.receipt,
            replayed: true,
        }));
    }
    Err(Fail::new(
        Marker::IdempotencyConflict,
        "this transaction id or idempotency key was already used for a different request",
    )
    .with_detail(
        json!({ "transactionId": ctx.transaction_id, "idempotencyKey": ctx.idempotency_key }),
    ))
}

/// The refusal of a transaction id or idempotency key that committed `revision`, which a
/// revision purge has since removed.
fn spent_by_purged(ctx: &Context, revision: String) -> Fail {
    Fail::new(
        Marker::IdempotencyConflict,
        "this transaction id or idempotency key already committed a revision that purge has since removed; it is not committed again",
    )
    .with_detail(json!({
        "purgedRevision": revision,
        "transactionId": ctx.transaction_id,
        "idempotencyKey": ctx.idempotency_key,
    }))
}

/// A receipt line. A tombstone it replaces shows no hash or size (it has none); the line is
/// then marked redacted, as redaction marks the lines it scrubs.
fn line(
    op: &str,
    path: &str,
    from: Option<&str>,
    before: Option<&Version>,
    after: Option<&Version>,
) -> ReceiptLine {
    let shown = before.filter(|v| !v.is_tombstone());
    ReceiptLine {
        op: op.to_owned(),
        path: path.to_owned(),
        from: from.map(str::to_owned),
        before_hash: shown.map(|v| hex::encode(&v.content_hash)),
        before_size: shown.map(|v| v.content_size),
        after_hash: after.map(|v| hex::encode(&v.content_hash)),
        after_size: after.map(|v| v.content_size),
        replaced_hash: None,
        replaced_size: None,
        redacted: before.is_some_and(Version::is_tombstone),
        before_mode: before.map(|v| v.mode),
        after_mode: after.map(|v| v.mode),
        kind: after.map(|v| v.kind).filter(|k| *k != Kind::File),
    }
}

/// `after` with the time of `before` when it gives none and holds the same content, kind
/// and mode: an unchanged upsert stays unchanged.
fn keep_time(before: Option<&Version>, mut after: Version) -> Version {
    if after.mtime_ns.is_none() {
        if let Some(b) = before.filter(|b| b.same_content(&after)) {
            after.mtime_ns = b.mtime_ns;
        }
    }
    after
}

/// A move of a tombstone without new content: it has nothing to carry.
fn redacted_move(from: &str) -> Fail {
    invalid(format!(
        "{from:?} was redacted and has no content to move: move it with new content, or delete it"
    ))
    .with_detail(json!({ "path": from }))
}

fn missing(path: &str) -> Fail {
    Fail::new(Marker::PathNotFound, format!("{path:?} does not exist"))
        .with_detail(json!({ "path": path }))
}

/// Applies the changes, in order, to the touched part of the tree, leaving the final state of
/// every touched path in `state`, and returns the receipt lines.
fn simulate(
    changes: &[Hashed],
    state: &mut BTreeMap<String, Option<Version>>,
) -> Outcome<Vec<ReceiptLine>> {
    let mut lines = Vec::with_capacity(changes.len());
    for change in changes {
        match change {
            Hashed::Upsert { path, after } => {
                let before = state.get(path).cloned().flatten();
                let after = keep_time(before.as_ref(), after.clone());
                state.insert(path.clone(), Some(after.clone()));
                lines.push(line("upsert", path, None, before.as_ref(), Some(&after)));
            }
            Hashed::Setattr {
                path,
                mode,
                mtime_ns,
            } => {
                let before = state
                    .get(path)
                    .cloned()
                    .flatten()
                    .ok_or_else(|| missing(path))?;
                let mut after = before.clone();
                after.mode = mode.unwrap_or(before.mode);
                after.mtime_ns = mtime_ns.or(before.mtime_ns);
                state.insert(path.clone(), Some(after.clone()));
                lines.push(line("setattr", path, None, Some(&before), Some(&after)));
            }
            Hashed::Delete { path } => {
                let before = state
                    .insert(path.clone(), None)
                    .flatten()
                    .ok_or_else(|| missing(path))?;
                lines.push(line("delete", path, None, Some(&before), None));
            }
            Hashed::Move { from, path, after } => {
                let before = state
                    .insert(from.clone(), None)
                    .flatten()
                    .ok_or_else(|| missing(from))?;
                let after = match after {
                    Some(a) => keep_time(Some(&before), a.clone()),
                    None if before.is_tombstone() => return Err(redacted_move(from)),
                    None => before.clone(),
                };
                let replaced = state.insert(path.clone(), Some(after.clone())).flatten();
                let mut moved = line("move", path, Some(from), Some(&before), Some(&after));
                let shown = replaced.as_ref().filter(|v| !v.is_tombstone());
                moved.replaced_hash = shown.map(|v| hex::encode(&v.content_hash));
                moved.replaced_size = shown.map(|v| v.content_size);
                moved.redacted |= replaced.as_ref().is_some_and(Version::is_tombstone);
                lines.push(moved);
            }
        }
    }
    Ok(lines)
}

/// The interval rows a commit closes and opens, and how it changes the tree's file count and
/// rendered bytes (stored with the revision).
#[derive(Default)]
struct Plan {
    close: Vec<String>,
    paths: Vec<String>,
    versions: Vec<Version>,
    files: i64,
    bytes: i64,
}

/// Compares the final state of every touched path with its initial state.
fn plan(initial: &BTreeMap<String, Version>, state: &BTreeMap<String, Option<Version>>) -> Plan {
    let mut plan = Plan::default();
    for (path, fin) in state {
        let cur = initial.get(path);
        if cur == fin.as_ref() {
            continue;
        }
        if let Some(v) = cur {
            plan.close.push(path.clone());
            plan.files -= 1;
            plan.bytes -= v.content_size;
        }
        if let Some(v) = fin {
            plan.files += 1;
            plan.bytes += v.content_size;
            plan.paths.push(path.clone());
            plan.versions.push(v.clone());
        }
    }
    plan
}

/// What a grant with `commit` but without `write` may commit: exactly a restore. The request
/// names `source_revision`, and the touched paths end exactly as they are in that revision,
/// covering every path where the head differs from it: the new head's tree is the source's.
fn check_restore(
    call: &Call,
    ws: &Workspace,
    source: Option<&str>,
    state: &BTreeMap<String, Option<Version>>,
) -> Outcome<()> {
    let refused = |why: &str| {
        Fail::new(
            Marker::WorkspaceDenied,
            format!("a delegated grant without write commits only an exact restore: {why}"),
        )
    };
    let Some(source) = source else {
        return Err(refused("no source_revision"));
    };
    let position = access::revision_position(&ws.id, source)?;
    let tree = |at: Option<i64>| -> Outcome<BTreeMap<String, Version>> {
        Ok(
            crate::rpc::files::files_at(call.schema, ws, at, None, false)?
                .into_iter()
                .map(entries::version)
                .collect(),
        )
    };
    let (source_tree, head_tree) = (tree(Some(position))?, tree(None)?);
    // Times aside: a restore brings back content, kinds and modes (a time-only difference is
    // not something a grant without write could change).
    let same = |a: Option<&Version>, b: Option<&Version>| match (a, b) {
        (Some(a), Some(b)) => a.same_content(b),
        (a, b) => a.is_none() && b.is_none(),
    };
    let differing = source_tree
        .iter()
        .filter(|(p, v)| !same(head_tree.get(*p), Some(*v)))
        .map(|(p, _)| p)
        .chain(head_tree.keys().filter(|p| !source_tree.contains_key(*p)));
    if differing.into_iter().any(|p| !state.contains_key(p)) {
        return Err(refused("the changes leave part of the tree unrestored"));
    }
    if state
        .iter()
        .any(|(path, fin)| !same(fin.as_ref(), source_tree.get(path)))
    {
        return Err(refused("a change differs from the source revision"));
    }
    Ok(())
}

/// Refuses, before anything is written or replayed, a commit from a tree loaded before the
/// workspace's latest redaction (an absent epoch counts as 0: callers that never saw a
/// redaction keep working) and a restore from before a path redaction's boundary.
fn check_redaction(ws: &str, ctx: &Context, epoch: i64) -> Outcome<()> {
    if ctx.redaction_epoch.unwrap_or(0) != epoch {
        return Err(Fail::new(
            Marker::RedactionInvalidated,
            "the workspace was redacted since this tree was loaded: reopen it and stage the changes again",
        )
        .with_detail(json!({ "expectedEpoch": ctx.redaction_epoch, "actualEpoch": epoch })));
    }
    if let Some(source) = &ctx.source_revision {
        // A missing source is reported after the replay check, as before.
        if let Ok(position) = access::revision_position(ws, source) {
            crate::rpc::redact::check_restore_source(ws, source, position)?;
        }
    }
    Ok(())
}

/// `supabash_commit`: see docs/sql-contract.md. Authorise, decode and hash (before the lock),
/// lock and check the redaction epoch, settle who is recorded, replay, check the lease and the
/// base, simulate the changes on the touched paths (then check the tree's shape and, when the
/// commit changes its links, that every link resolves inside it), then write bodies, entries, the receipt,
/// the audit records and the new head. Any error rolls all of it back.
pub fn commit(call: &Call, mut req: rq::Commit) -> Outcome<CommitResult> {
    // Authorise first: a caller who may not commit here costs no decoding or hashing. The
    // workspace is locked by the same statement that finds it (one statement, not two; the
    // decoding and hashing then run under the lock, which only this workspace's commits wait on).
    let locked = access::open_locked(&req)?;
    let ws = locked.id.clone();
    let changes = parse_changes(std::mem::take(&mut req.changes)).map_err(change_error)?;
    let mut ctx = context(&mut req)?;
    let audit = crate::store::audit::prepare(&req.audit.take().unwrap_or_default())?;
    let (changes, new_bytes) = hash_changes(changes);
    check_schema(call, &changes)?;
    check_files_only(call, &ws, &changes)?;
    check_redaction(&ws, &ctx, locked.redaction_epoch)?;
    let recorded = recorded_as(&mut ctx, locked.delegation.clone())?;
    let request_hash = request_hash(&ws, &ctx, &recorded.actor, &changes, audit.as_ref());
    if let Some(replayed) = replay(&ws, &ctx, &request_hash)? {
        return Ok(replayed);
    }
    crate::rpc::lease::check_commit(&ws, req.lease.as_deref())?;
    let touched = touched_paths(&changes);
    let rebased_from = check_base(&locked, &ctx, &touched)?;
    if let Some(source) = &ctx.source_revision {
        access::revision_position(&ws, source)?;
    }
    let initial = entries::versions(call.schema, &locked, None, touched.clone())?;
    let mut state: BTreeMap<String, Option<Version>> = touched
        .into_iter()
        .map(|p| {
            let v = initial.get(&p).cloned();
            (p, v)
        })
        .collect();
    let lines = simulate(&changes, &mut state)?;
    crate::rpc::tree_shape::check(call.schema, &locked, &initial, &state)?;
    crate::rpc::link_check::check(call.schema, &locked, &initial, &state, &new_bytes)?;
    if recorded.restore_only {
        check_restore(call, &locked, ctx.source_revision.as_deref(), &state)?;
    }

    // Positions count each workspace's own commits (taken under its lock, so order = commit
    // order), revealing nothing about other tenants' commit rates.
    let position = locked.head_position.unwrap_or(0) + 1;
    let plan = plan(&initial, &state);
    store_new_bodies(&locked, &plan, &initial, new_bytes)?;
    entries::write(
        call.schema,
        &locked,
        position,
        &plan.close,
        &plan.paths,
        &plan.versions,
    )?;

    let mut receipt = Receipt {
        workspace_id: ws.clone(),
        revision: uuid::Uuid::new_v4().to_string(),
        parent_revision: locked.head.clone(),
        position,
        transaction_id: ctx.transaction_id.clone(),
        idempotency_key: ctx.idempotency_key.clone(),
        actor: recorded.actor,
        correlation_id: ctx.correlation_id,
        cause: ctx.cause,
        metadata: ctx.metadata,
        source_revision: ctx.source_revision,
        delegation_key_id: recorded.delegation_key_id,
        forked_from: None,
        rebased_from,
        // Set from the stored row below (the transaction's start, as UTC text).
        committed_at: String::new(),
        changes: lines,
    };
    let totals = revisions::Totals {
        workspace: &ws,
        revision: locked.head.as_deref(),
        files: plan.files,
        bytes: plan.bytes,
    };
    receipt.committed_at = revisions::insert(call.schema, &receipt, &request_hash, totals)?;
    if let Some(rows) = &audit {
        let revision = Some(receipt.revision.as_str());
        crate::store::audit::write(&call.schema, &locked, revision, &receipt.actor, rows)?;
    }
    access::set_head(&ws, &receipt.revision, position)?;
    announce::announce(
        &call.schema,
        &ws,
        announce::Kind::Commit,
        Some(position),
        Some(&receipt.revision),
    )?;
    Ok(CommitResult {
        receipt,
        replayed: false,
    })
}

/// Refuses, on a 0.5.0 schema, a change it cannot store (a link, a directory, a mode other
/// than 0o644, a setattr) with the upgrade hint, rather than dropping what it carries.
fn check_schema(call: &Call, changes: &[Hashed]) -> Outcome<()> {
    if call.schema.posix_entries || !changes.iter().any(Hashed::needs_posix) {
        return Ok(());
    }
    Err(Fail::new(
        Marker::SchemaOutdated,
        "this database's supabash schema (0.5.0) stores regular files only: symbolic links, directories and modes need 0.6.0; run ALTER EXTENSION supabash UPDATE",
    ))
}

/// Refuses, in a workspace created `files_only`, the whole commit when a change holds a
/// symbolic link, a directory entry or a file mode other than 0o644
/// (`supabash_core::posix::files_only_refusal`), with `SUPABASH_UNSUPPORTED_CONTENT` naming the
/// path and what was refused. The option is read only when such a change is present.
fn check_files_only(call: &Call, ws: &str, changes: &[Hashed]) -> Outcome<()> {
    let Some((path, refused)) = changes.iter().find_map(Hashed::files_only_refusal) else {
        return Ok(());
    };
    if !crate::store::workspaces::files_only(call.schema, ws)? {
        return Ok(());
    }
    let mut detail = json!({ "path": path, "refused": refused.as_str() });
    if let FilesOnlyRefusal::Mode(mode) = refused {
        detail["mode"] = json!(mode);
    }
    Err(Fail::new(Marker::UnsupportedContent, refused.message(path)).with_detail(detail))
}

/// Who a commit is recorded under, and what its grant lets it do.
struct Recorded {
    actor: String,
    delegation_key_id: Option<String>,
    /// A grant with `commit` but without `write` commits only an exact restore.
    restore_only: bool,
}

/// Settles who is recorded: a delegated commit under the grant's subject, correlation id and
/// key id, whatever the caller sent; the reserved actor prefix is the database's alone.
fn recorded_as(ctx: &mut Context, delegation: Option<Delegation>) -> Outcome<Recorded> {
    let actor = access::recorded_actor(delegation.as_ref(), ctx.actor.take())?;
    let Some(d) = delegation else {
        return Ok(Recorded {
            actor,
            delegation_key_id: None,
            restore_only: false,
        });
    };
    ctx.correlation_id = d.correlation_id.clone();
    Ok(Recorded {
        actor,
        restore_only: !d.allows(Operation::Write),
        delegation_key_id: Some(d.key_id),
    })
}

/// The hash that identifies a request for replays: every field that shapes the revision, with
/// the changes by content hash.
fn request_hash(
    ws: &str,
    ctx: &Context,
    actor: &str,
    changes: &[Hashed],
    audit: Option<&Value>,
) -> [u8; 32] {
    let digests: Vec<Value> = changes.iter().map(Hashed::digest).collect();
    let mut request = json!({
        "workspaceId": ws, "baseRevision": ctx.base, "changes": digests,
        "actor": actor, "correlationId": ctx.correlation_id,
        "idempotencyKey": ctx.idempotency_key, "cause": ctx.cause,
        "metadata": ctx.metadata, "sourceRevision": ctx.source_revision,
    });
    // Only when set, so the requests of commits made before the flag existed hash as before.
    if ctx.rebase {
        request["rebase"] = json!(true);
    }
    if let Some(rows) = audit {
        request["audit"] = json!(hex::encode(sha256(rows.to_string().as_bytes())));
    }
    sha256(request.to_string().as_bytes())
}

/// Every path the changes touch (both ends of a move), sorted, once each.
fn touched_paths(changes: &[Hashed]) -> Vec<String> {
    let mut touched: Vec<String> = Vec::with_capacity(changes.len());
    for c in changes {
        match c {
            Hashed::Upsert { path, .. }
            | Hashed::Delete { path }
            | Hashed::Setattr { path, .. } => touched.push(path.clone()),
            Hashed::Move { from, path, .. } => touched.extend([from.clone(), path.clone()]),
        }
    }
    touched.sort();
    touched.dedup();
    touched
}

/// Compare-and-swap on the base: when the head moved, strictly a conflict, or with rebase one
/// unless no touched path changed since the base (then the commit applies on the head, as if
/// based on it, and answers the base it was rebased from).
fn check_base(ws: &Workspace, ctx: &Context, touched: &[String]) -> Outcome<Option<String>> {
    if ws.head == ctx.base {
        return Ok(None);
    }
    if !ctx.rebase {
        return Err(Fail::new(
            Marker::CommitConflict,
            "the workspace head moved since the base revision",
        )
        .with_detail(json!({ "expectedRevision": ctx.base, "actualRevision": ws.head })));
    }
    rebase::check(
        &ws.id,
        ctx.base.as_deref(),
        ws.head.as_deref(),
        ws.head_position.unwrap_or(0),
        touched,
    )?;
    Ok(ctx.base.clone())
}

/// Stores the bodies the commit introduces and counts their bytes in the owner's usage. A new
/// body's candidate delta base is the body its path held before this commit.
fn store_new_bodies(
    ws: &Workspace,
    plan: &Plan,
    initial: &BTreeMap<String, Version>,
    mut new_bytes: HashMap<Vec<u8>, Vec<u8>>,
) -> Outcome<()> {
    let new_bodies: Vec<bodies::New> = plan
        .paths
        .iter()
        .zip(&plan.versions)
        .filter_map(|(path, v)| {
            let (hash, bytes) = new_bytes.remove_entry(&v.body_hash)?;
            let previous = initial
                .get(path)
                .filter(|p| p.body_hash != hash && !p.is_tombstone())
                .map(|p| (p.body_hash.clone(), p.body_size as usize));
            Some(bodies::New {
                hash,
                bytes,
                previous,
            })
        })
        .collect();
    let added = bodies::store(&ws.store, new_bodies)?;
    usage::add_bytes(&ws.store, &ws.owner, added)
}

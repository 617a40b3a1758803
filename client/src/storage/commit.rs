//! The commit, without a transaction. Steps (each durable step is one or more Storage writes):
//!
//! 1. freeze the staged tree, snapshot it, check the limits;
//! 2. recover anything unresolved (`pending.rs`) and read the published head; a retry of a
//!    commit that failed after its intent returns that commit's receipt if its head landed;
//! 3. idempotency key: same fingerprint → the first receipt; another → `IDEMPOTENCY_CONFLICT`;
//! 4. optimistic conflict check: when the head moved, every touched path must still hold what
//!    the base held (by recorded entry: hash, kind, mode, mtime, target), else
//!    `COMMIT_CONFLICT`; untouched paths take the head's entries;
//! 5. one upload batch: the revision pack (the commit's small bodies and its header), a
//!    snapshot when the changes over the last one would pass their bound, large bodies at
//!    `objects/<sha256>`, and with nothing published the bodies the commit replaces (so a
//!    rollback can restore them); nothing names them yet;
//! 6. with visible objects, the intent: `head.json` rewritten with the commit as `pending`;
//! 7. with visible objects, their uploads and deletes; if another host's recovery rolled this
//!    commit back meanwhile (the head no longer names it as pending; only possible without a
//!    coordinator), its writes are undone and the commit fails with `COMMIT_COORDINATION`;
//! 8. the idempotency record, then `head.json` naming the new revision: the commit is
//!    published by this one write.
//!
//! A commit of more than `visible_inline_max` entries skips steps 6 and 7: its head says its
//! visible objects lag (`visibleBehind`), and they are written after it, in the background
//! (`visible.rs`); step 2 of any later commit finishes them first if they were interrupted.
//!
//! A failure before step 6 is a plain error (retryable when its cause is; what step 5 stored
//! is deleted or left for purge). A failure from step 6 on (from step 8 without visible
//! objects) is `PARTIAL_COMMIT`
//! (outcome unknown): the previous revision stays readable, and the next open, commit or
//! discard rolls the commit back unless its head landed. With a coordinator, the whole commit
//! runs under its lease, checked before step 5, before the idempotency record and before the
//! head; a lost lease is `COMMIT_COORDINATION`. Without one, two hosts can race between step 4
//! and step 8 (documented). The writes themselves are in `publish.rs`.

use super::api::Upload;
use super::coordinator::{self, Lease};
use super::layout::{HeadRecord, Locations, TreeState};
use super::model::{rfc3339, Entry, EntryKind, Idempotency, Intent};
use super::model::{Manifest, Touched, SCHEMA_VERSION};
use super::pack::Span;
use super::recover;
use super::store::{self, read, Published};
use super::tree_io::{self, UNPUBLISHED};
use super::{base_of, diff, Base, Partial, StorageWorkspace};
use crate::error::{Result, SupabashError};
use crate::tree::Body;
use crate::workspace::CommitOptions;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::SystemTime;
use supabash_core::capability::Operation;
use supabash_core::hash::sha256_hex;
use supabash_core::limits::{MAX_CAUSE_BYTES, MAX_LABEL_BYTES};
use supabash_core::rpc::{CommitResult, Receipt, ReceiptLine};
use supabash_core::ErrorCode;

fn invalid(message: &str) -> SupabashError {
    SupabashError::new(ErrorCode::InvalidArgument, message)
}

fn check_options(o: &CommitOptions, max_metadata: usize) -> Result<()> {
    let label = |s: &str| !s.is_empty() && s.len() <= MAX_LABEL_BYTES;
    if o.rebase {
        return Err(invalid(
            "the Storage backend commits on its base only (no rebase)",
        ));
    }
    if !label(&o.actor) {
        return Err(invalid("actor must be 1 to 1024 bytes"));
    }
    if o.correlation_id.as_deref().is_some_and(|c| !label(c)) {
        return Err(invalid("correlation id must be 1 to 1024 bytes"));
    }
    if o.idempotency_key.as_deref().is_some_and(|c| !label(c)) {
        return Err(invalid("idempotency key must be 1 to 1024 bytes"));
    }
    if o.cause
        .as_deref()
        .is_some_and(|c| c.len() > MAX_CAUSE_BYTES)
    {
        return Err(invalid("cause must be at most 4096 bytes"));
    }
    if let Some(m) = &o.metadata {
        if !m.is_object() {
            return Err(invalid("metadata must be a JSON object"));
        }
        if m.to_string().len() > max_metadata {
            return Err(SupabashError::quota("commit metadata is too large"));
        }
    }
    Ok(())
}

/// What identifies one logical commit: base, changes and context.
fn fingerprint(base: Option<&str>, touched: &[Touched], o: &CommitOptions) -> String {
    let changes: Vec<Value> = touched.iter().map(|t| json!([t.path, t.after])).collect();
    let v = json!({
        "base": base,
        "changes": changes,
        "actor": o.actor,
        "correlationId": o.correlation_id,
        "cause": o.cause,
        "idempotencyKey": o.idempotency_key,
        "metadata": o.metadata,
    });
    sha256_hex(v.to_string().as_bytes())
}

fn line(t: &Touched) -> ReceiptLine {
    let hash = |e: &Option<Entry>| e.as_ref().and_then(|e| e.hash.clone());
    let size = |e: &Option<Entry>| {
        e.as_ref()
            .filter(|e| e.kind == EntryKind::File)
            .map(|e| e.size as i64)
    };
    ReceiptLine {
        op: if t.after.is_some() {
            "upsert"
        } else {
            "delete"
        }
        .to_owned(),
        path: t.path.clone(),
        from: None,
        before_hash: hash(&t.before),
        before_size: size(&t.before),
        after_hash: hash(&t.after),
        after_size: size(&t.after),
        replaced_hash: None,
        replaced_size: None,
        redacted: false,
        before_mode: t.before.as_ref().map(|e| e.mode),
        after_mode: t.after.as_ref().map(|e| e.mode),
        kind: t
            .after
            .as_ref()
            .map(|e| e.kind)
            .filter(|k| *k != EntryKind::File),
    }
}

/// The error of a commit that stopped after its intent: `PARTIAL_COMMIT`, or
/// `COMMIT_COORDINATION` for a lost lease; either way the outcome is left to recovery.
pub(super) fn partial(mut e: SupabashError) -> SupabashError {
    if e.code == ErrorCode::CommitCoordination {
        e.outcome_unknown = true;
        return e;
    }
    let retryable = e.retryable;
    let mut p = SupabashError::new(
        ErrorCode::PartialCommit,
        format!(
            "the commit stopped after its intent ({e}); the previous revision stays readable \
             and the next open, commit or discard resolves it"
        ),
    )
    .with_source(e);
    p.retryable = retryable;
    p.outcome_unknown = true;
    p
}

impl StorageWorkspace {
    pub(super) fn object_upload(&self, hash: &str, body: Vec<u8>) -> Upload {
        Upload {
            key: self.keys.object(hash),
            body,
            content_type: super::model::FILE_TYPE,
            metadata: json!({}),
        }
    }
}

/// Ends a commit without a revision when dropped.
struct Frozen<'a>(&'a crate::tree::StagedTree);

impl Drop for Frozen<'_> {
    fn drop(&mut self) {
        self.0.end_commit(None);
    }
}

/// What a commit sends: the staged tree against its base, and what the workspace held when
/// the commit began.
pub(super) struct Plan {
    base: Base,
    /// This workspace's last commit that failed after its intent.
    partial: Option<Partial>,
    /// The revision a restore staged, recorded as the receipt's source.
    source: Option<String>,
    pub(super) touched: Vec<Touched>,
    /// The staged files' bodies, by path.
    bodies: BTreeMap<String, Body>,
    /// What identifies this logical commit ([`fingerprint`]).
    fingerprint: String,
}

/// Where a commit lands: the published head it follows and the manifest it publishes.
pub(super) struct Target {
    pub(super) parent: Option<String>,
    /// The parent's pack header (`None`: 0.6.0's record, or nothing published).
    pub(super) parent_header: Option<Span>,
    /// The parent's position (0 with nothing published).
    pub(super) position: i64,
    /// The published manifest with the commit's changes.
    pub(super) manifest: Manifest,
    /// Where the published manifest's packed bodies lie.
    pub(super) locations: Locations,
    /// The head's tree in the delta layout (`None`: 0.6.0's layout or nothing published: the
    /// commit writes a snapshot).
    pub(super) tree: Option<TreeState>,
    /// The head record as read (the intent is written over it).
    pub(super) head: Option<HeadRecord>,
    /// Whether the head had moved past the base.
    rebased: bool,
}

/// Step 4: where the commit lands. When the head moved past the base, every touched path
/// must still hold there what the base held (by recorded entry: hash, kind, mode, mtime,
/// target), else `COMMIT_CONFLICT`; untouched paths take the head's entries.
fn target(plan: &Plan, published: Option<Published>) -> Result<Target> {
    let base = &plan.base;
    let mut target = match published {
        Some(p) => {
            let rebased = Some(&p.revision) != base.revision.as_ref();
            if rebased {
                if let Some(t) = plan
                    .touched
                    .iter()
                    .find(|t| p.manifest.get(&t.path) != t.before.as_ref())
                {
                    return Err(SupabashError::new(
                        ErrorCode::CommitConflict,
                        "the path changed since the workspace was opened",
                    )
                    .with_path(&t.path));
                }
            }
            let legacy = p.legacy();
            Target {
                parent: Some(p.revision),
                parent_header: p.head.header.clone(),
                position: p.position,
                manifest: p.manifest,
                locations: p.locations,
                tree: (!legacy).then(|| p.head.tree.clone()),
                head: Some(p.head),
                rebased,
            }
        }
        None if base.revision.is_some() => {
            return Err(SupabashError::new(
                ErrorCode::HistoryCorruption,
                "the published head disappeared",
            ))
        }
        None => Target {
            parent: None,
            parent_header: None,
            position: 0,
            manifest: (*base.manifest).clone(),
            locations: Locations::new(),
            tree: None,
            head: None,
            rebased: false,
        },
    };
    for t in &plan.touched {
        match &t.after {
            Some(e) => target.manifest.insert(t.path.clone(), e.clone()),
            None => target.manifest.remove(&t.path),
        };
    }
    Ok(target)
}

/// The intent record of a new commit of `plan` on `parent`: fresh transaction and revision
/// ids.
fn intent(plan: &Plan, o: &CommitOptions, parent: Option<String>) -> Intent {
    Intent {
        transaction_id: uuid::Uuid::new_v4().to_string(),
        new_revision: uuid::Uuid::new_v4().to_string(),
        parent_revision: parent,
        fingerprint: plan.fingerprint.clone(),
        idempotency_key: o.idempotency_key.clone(),
        touched: plan.touched.clone(),
        created_at: rfc3339(SystemTime::now()),
        created_ms: super::model::to_ms(SystemTime::now()),
        host: Some(recover::host_id().to_owned()),
        schema_version: SCHEMA_VERSION,
    }
}

/// What the frozen commit produced.
pub(super) struct Done {
    pub(super) result: CommitResult,
    pub(super) base: Base,
    pub(super) rebased: bool,
    /// Visible objects to write after the head (`visible.rs`).
    deferred: Option<super::visible::Deferred>,
}

impl StorageWorkspace {
    /// Commits the staged tree. See the module documentation for the steps and failure modes.
    pub async fn commit(&self, options: CommitOptions) -> Result<CommitResult> {
        self.require(Operation::Commit)?;
        check_options(&options, self.tree.limits().max_transaction_metadata_bytes)?;
        self.tree.begin_commit()?;
        // Unfreezes the tree however the commit ends (an error, or the future being dropped).
        let frozen = Frozen(&self.tree);
        let done = self.commit_frozen(&options).await?;
        std::mem::forget(frozen);
        let rev = done.base.revision.clone().unwrap_or_default();
        self.bodies.register(
            &rev,
            done.base.manifest.clone(),
            done.base.locations.clone(),
        );
        self.tree.end_commit(Some(rev.clone()));
        let mut state = self.state.lock().expect("state lock");
        state.partial = None;
        state.restore_source = None;
        state.base = done.base.clone();
        drop(state);
        if done.rebased {
            tree_io::install(&self.tree, &rev, &done.base.manifest)?;
        }
        Ok(done.result)
    }

    /// The first receipt of a commit that is already published; the workspace is then based
    /// on the current head (`head`), like after any commit.
    async fn replay(&self, revision: &str, head: Option<&Published>) -> Result<Done> {
        let span = head
            .filter(|p| p.revision == revision)
            .and_then(|p| p.head.header.as_ref());
        let stored = store::read_stored(&self.api, &self.keys, revision, span)
            .await?
            .ok_or_else(|| {
                SupabashError::new(
                    ErrorCode::RevisionNotFound,
                    "the revision of this commit is no longer retained",
                )
            })?;
        let base = match head {
            Some(p) => base_of(p.clone()),
            None => {
                let (manifest, locations) = stored.tree(&self.api, &self.keys).await?;
                Base {
                    revision: Some(revision.to_owned()),
                    manifest: Arc::new(manifest),
                    locations: Arc::new(locations),
                }
            }
        };
        Ok(Done {
            result: CommitResult {
                receipt: stored.receipt().clone(),
                replayed: true,
            },
            base,
            rebased: true,
            deferred: None,
        })
    }

    async fn commit_frozen(&self, o: &CommitOptions) -> Result<Done> {
        self.tree.check_limits()?;
        // This process's visible objects written after an earlier head land first.
        super::visible::wait_idle(&self.api).await;
        let lease = self.lease("commit").await?;
        let mut result = self.commit_leased(o, lease.as_deref()).await;
        // Visible objects written after the head keep the lease until they are written.
        match result.as_mut().ok().and_then(|d| d.deferred.take()) {
            Some(deferred) => deferred.spawn(lease),
            None => {
                if let Some(l) = lease {
                    l.release().await;
                }
            }
        }
        result
    }

    /// Steps 1 to 8 of the module documentation, under the coordinator's lease if any.
    async fn commit_leased(&self, o: &CommitOptions, lease: Option<&dyn Lease>) -> Result<Done> {
        let plan = self.plan(o)?;
        let published = self.recover_then_read_head(&plan, lease.is_some()).await?;
        if let Some(done) = self.already_published(&plan, o, published.as_ref()).await? {
            return Ok(done);
        }
        let target = target(&plan, published)?;
        coordinator::check(lease).await?;
        let bodies = self.added_bodies(&plan).await?;
        let mut extra = Vec::new();
        if target.parent.is_none() {
            extra = self.replaced_bodies(&plan.touched).await?;
        }
        let intent = intent(&plan, o, target.parent.clone());
        // Until this commit returns, this process's recovery leaves its intent alone.
        let _running = recover::InFlight::start(&intent.transaction_id);
        let rebased = target.rebased;
        let receipt = self.receipt(&plan, o, &intent, &target);
        let built = self.build(&plan, &intent, &target, &bodies, receipt, extra);
        self.publish(&intent, &target, &bodies, built, lease)
            .await
            .map(|p| Done {
                result: p.result,
                base: p.base,
                rebased,
                deferred: p.deferred,
            })
    }

    /// Step 1 (the tree is already frozen and checked): the staged tree against its base.
    fn plan(&self, o: &CommitOptions) -> Result<Plan> {
        let (staged, bodies) = tree_io::snapshot(&self.tree)?;
        let (base, partial, source) = {
            let s = self.state.lock().expect("state lock");
            (s.base.clone(), s.partial.clone(), s.restore_source.clone())
        };
        let touched = diff(&base.manifest, &staged);
        let fingerprint = fingerprint(base.revision.as_deref(), &touched, o);
        Ok(Plan {
            base,
            partial,
            source,
            touched,
            bodies,
            fingerprint,
        })
    }

    /// Step 2: resolves whatever earlier commits left unfinished (this workspace's own failed
    /// commit at once) and answers the published head.
    async fn recover_then_read_head(&self, plan: &Plan, leased: bool) -> Result<Option<Published>> {
        let policy = recover::Policy {
            leased,
            own: plan.partial.as_ref().map(|p| p.transaction_id.as_str()),
            stale_after: self.stale_intent_after,
            committing: true,
            finish_visible: self.visible,
        };
        let base = &plan.base;
        let known = base
            .revision
            .as_deref()
            .map(|r| (r, base.manifest.as_ref(), base.locations.as_ref()));
        super::pending::settle(&self.api, &self.keys, &policy, known).await
    }

    /// Steps 2 and 3: the first receipt of this same commit when it is already published (by
    /// recovery, after it failed past its intent, or under the same idempotency key); an
    /// idempotency key used for another commit is `IDEMPOTENCY_CONFLICT`.
    async fn already_published(
        &self,
        plan: &Plan,
        o: &CommitOptions,
        published: Option<&Published>,
    ) -> Result<Option<Done>> {
        let head_rev = published.map(|p| p.revision.as_str());
        if let Some(p) = &plan.partial {
            if p.fingerprint == plan.fingerprint && head_rev == Some(p.revision.as_str()) {
                return self.replay(&p.revision, published).await.map(Some);
            }
        }
        if let Some(k) = &o.idempotency_key {
            if let Some(r) = read::<Idempotency>(&self.api, &self.keys.idempotency(k)).await? {
                if r.fingerprint != plan.fingerprint {
                    return Err(SupabashError::new(
                        ErrorCode::IdempotencyConflict,
                        "this idempotency key was used for a different commit",
                    ));
                }
                return self.replay(&r.revision, published).await.map(Some);
            }
        }
        Ok(None)
    }

    /// The bodies of the files the commit adds, by hash.
    async fn added_bodies(&self, plan: &Plan) -> Result<BTreeMap<String, Arc<Vec<u8>>>> {
        let mut added: BTreeMap<String, Arc<Vec<u8>>> = BTreeMap::new();
        for t in &plan.touched {
            if let Some(Entry {
                kind: EntryKind::File,
                hash: Some(hash),
                ..
            }) = &t.after
            {
                let body: &Body = &plan.bodies[&t.path];
                added.insert(hash.clone(), self.tree.bytes_of(body).await?);
            }
        }
        Ok(added)
    }

    /// The bodies of the files a first commit replaces, read from their visible objects; one
    /// that no longer has the hash the tree was opened with is `COMMIT_CONFLICT`.
    async fn replaced_bodies(&self, touched: &[Touched]) -> Result<Vec<Upload>> {
        let mut objects = Vec::new();
        for t in touched {
            if let Some(Entry {
                kind: EntryKind::File,
                hash: Some(hash),
                ..
            }) = &t.before
            {
                let (_, bytes) = self.bodies.fetch(UNPUBLISHED, &t.path).await?;
                if sha256_hex(&bytes) != *hash {
                    return Err(SupabashError::new(
                        ErrorCode::CommitConflict,
                        "the object changed since the workspace was opened",
                    )
                    .with_path(&t.path));
                }
                objects.push(self.object_upload(hash, bytes));
            }
        }
        Ok(objects)
    }

    /// The receipt of the commit `intent` announces, landing on `target`.
    fn receipt(&self, plan: &Plan, o: &CommitOptions, intent: &Intent, target: &Target) -> Receipt {
        Receipt {
            workspace_id: self.scope(),
            revision: intent.new_revision.clone(),
            parent_revision: intent.parent_revision.clone(),
            position: target.position + 1,
            transaction_id: intent.transaction_id.clone(),
            idempotency_key: o.idempotency_key.clone(),
            actor: o.actor.clone(),
            correlation_id: o.correlation_id.clone(),
            cause: o.cause.clone(),
            metadata: o.metadata.clone().unwrap_or_else(|| json!({})),
            source_revision: plan.source.clone(),
            delegation_key_id: None,
            forked_from: None,
            rebased_from: None,
            committed_at: intent.created_at.clone(),
            changes: plan.touched.iter().map(line).collect(),
        }
    }

    /// Step 8's first write: the idempotency record of `intent`'s key, if any.
    pub(super) async fn write_idempotency(&self, intent: &Intent) -> Result<()> {
        let Some(k) = &intent.idempotency_key else {
            return Ok(());
        };
        let record = Idempotency {
            fingerprint: intent.fingerprint.clone(),
            revision: intent.new_revision.clone(),
            transaction_id: intent.transaction_id.clone(),
            schema_version: SCHEMA_VERSION,
        };
        store::write(&self.api, &self.keys.idempotency(k), &record, false).await
    }
}

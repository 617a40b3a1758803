//! Recovery of unresolved commits, run when a workspace opens, before every commit and on
//! discard. In the delta layout a commit in flight is the `pending` intent of `head.json`
//! (`pending.rs` resolves it by rolling it back); this module holds what both layouts share
//! (which intents may be resolved, restoring visible objects) and the recovery of 0.6.0's
//! intent records (`intents/<tx>.json`), run while the head is in that layout. For each one:
//! - its `complete.json` exists and its parent is the published head: the commit is
//!   **adopted** (idempotency record, then `head.json`), as if it had finished;
//! - it is already the head: nothing to do;
//! - otherwise it is **rolled back**: every path it touched is restored to the head's manifest
//!   (or to the intent's `before` entries when nothing was ever published), from the
//!   content-addressed objects; an orphan revision record is deleted; then `abort.json`.
//!
//! The intent is deleted last, so an interrupted recovery is simply run again.
//!
//! Another host's intent may belong to a commit still in flight, which recovery must not touch.
//! So a foreign intent is resolved only under the coordinator's lease (no other host can be
//! committing) or once it is older than the stale window (its host is presumed dead); until
//! then an opener or discard leaves it alone (readers read the published head) and a commit
//! fails with a retryable `COMMIT_COORDINATION`. An intent this process wrote (its [`host_id`])
//! whose commit is no longer running here ([`InFlight`]) is resolved at once: a host that opens
//! a fresh workspace per request is never blocked by its own failed commit.

use super::api::StorageApi;
use super::keys::Keys;
use super::layout::Locations;
use super::model::{rfc3339, to_ms, SCHEMA_VERSION};
use super::model::{Complete, Entry, EntryKind, Head, Idempotency, Intent, Manifest, Revision};
use super::store::{self, read, write};
use crate::error::{Result, SupabashError};
use serde_json::json;
use std::collections::BTreeSet;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, SystemTime};
use supabash_core::ErrorCode;

/// This process's host id, recorded in every intent it writes (random per process).
pub fn host_id() -> &'static str {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| uuid::Uuid::new_v4().to_string())
}

/// The transactions whose commits are running in this process.
fn running() -> &'static Mutex<BTreeSet<String>> {
    static RUNNING: OnceLock<Mutex<BTreeSet<String>>> = OnceLock::new();
    RUNNING.get_or_init(Mutex::default)
}

/// Marks a transaction as running in this process until dropped (however the commit ends).
pub struct InFlight(String);

impl InFlight {
    /// Marks `tx` as running.
    pub fn start(tx: &str) -> InFlight {
        running()
            .lock()
            .expect("running lock")
            .insert(tx.to_owned());
        InFlight(tx.to_owned())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        running().lock().expect("running lock").remove(&self.0);
    }
}

/// Whether `intent` was written by this process for a commit that is no longer running.
fn ended_here(intent: &Intent) -> bool {
    intent.host.as_deref() == Some(host_id())
        && !running()
            .lock()
            .expect("running lock")
            .contains(&intent.transaction_id)
}

/// The published head and its revision record in 0.6.0's layout.
async fn published(api: &StorageApi, keys: &Keys) -> Result<Option<(Head, Revision)>> {
    let Some(head) = read::<Head>(api, &keys.head()).await? else {
        return Ok(None);
    };
    let revision = read::<Revision>(api, &keys.revision(&head.revision))
        .await?
        .ok_or_else(|| {
            SupabashError::new(
                ErrorCode::HistoryCorruption,
                "the head names a revision whose record is missing",
            )
        })?;
    Ok(Some((head, revision)))
}

/// Publishes a complete commit: its idempotency record, then the head.
pub async fn adopt(api: &StorageApi, keys: &Keys, c: &Complete) -> Result<()> {
    if let Some(k) = &c.idempotency_key {
        let record = Idempotency {
            fingerprint: c.fingerprint.clone(),
            revision: c.revision.clone(),
            transaction_id: c.transaction_id.clone(),
            schema_version: SCHEMA_VERSION,
        };
        write(api, &keys.idempotency(k), &record, false).await?;
    }
    let head = Head {
        revision: c.revision.clone(),
        transaction_id: c.transaction_id.clone(),
        committed_at: c.committed_at.clone(),
        schema_version: SCHEMA_VERSION,
    };
    write(api, &keys.head(), &head, false).await
}

/// Writes the visible object of entry `e` at `p` (file bytes from their pack, by
/// `locations`, or from `objects/`).
pub async fn put_visible(
    api: &StorageApi,
    keys: &Keys,
    p: &str,
    e: &Entry,
    locations: &Locations,
) -> Result<()> {
    let body = match e.kind {
        EntryKind::File => {
            let hash = e.hash.as_deref().unwrap_or_default();
            store::body(api, keys, hash, locations.get(hash))
                .await?
                .ok_or_else(|| {
                    SupabashError::new(
                        ErrorCode::HistoryCorruption,
                        "a content-addressed body is missing",
                    )
                    .with_path(p)
                })?
        }
        EntryKind::Directory => Vec::new(),
        EntryKind::Symlink => e.target.clone().unwrap_or_default().into_bytes(),
    };
    api.upload(
        &keys.of_entry(p, e),
        body,
        e.content_type(),
        &keys.metadata(p, e),
        true,
    )
    .await
}

/// Restores every path `intent` touched to `target` (the head manifest and its body
/// locations, or the intent's own `before` entries, bodies in `objects/`, when nothing is
/// published).
pub async fn roll_back(
    api: &StorageApi,
    keys: &Keys,
    intent: &Intent,
    target: Option<(&Manifest, &Locations)>,
) -> Result<()> {
    let mut stale = Vec::new();
    let none = Locations::new();
    let locations = target.map_or(&none, |(_, l)| l);
    for t in &intent.touched {
        let want = match target {
            Some((m, _)) => m.get(&t.path),
            None => t.before.as_ref(),
        };
        if let Some(after) = &t.after {
            let key = keys.of_entry(&t.path, after);
            if want.map(|w| keys.of_entry(&t.path, w)) != Some(key.clone()) {
                stale.push(key);
            }
        }
        if let Some(w) = want {
            if t.after.as_ref() != Some(w) {
                put_visible(api, keys, &t.path, w, locations).await?;
            }
        }
    }
    if !stale.is_empty() {
        api.delete(&stale).await?;
    }
    Ok(())
}

/// Which intents a recovery may resolve.
pub struct Policy<'a> {
    /// The coordinator's lease is held: every intent is resolvable.
    pub leased: bool,
    /// The caller's own unresolved transaction, always resolvable.
    pub own: Option<&'a str>,
    /// How old a foreign intent must be to count as abandoned.
    pub stale_after: Duration,
    /// A commit is about to start: a fresh foreign intent is a coordination error.
    pub committing: bool,
    /// Visible objects left behind the head are finished first (`visible.rs`).
    pub finish_visible: bool,
}

impl Policy<'_> {
    /// Whether `intent` may be resolved now; `Err` when a commit must wait for it.
    pub fn resolvable(&self, intent: &Intent) -> Result<bool> {
        let age_ms = to_ms(SystemTime::now()).saturating_sub(intent.created_ms);
        if self.leased
            || self.own == Some(intent.transaction_id.as_str())
            || ended_here(intent)
            || age_ms >= self.stale_after.as_millis() as i64
        {
            return Ok(true);
        }
        if self.committing {
            return Err(SupabashError::new(
                ErrorCode::CommitCoordination,
                "another host's commit is in flight on this workspace; retry (or use a coordinator)",
            ));
        }
        Ok(false)
    }
}

/// Resolves every unresolved intent of 0.6.0's layout (`intents/<tx>.json`) `policy` allows;
/// returns how many it resolved.
pub async fn recover(api: &StorageApi, keys: &Keys, policy: &Policy<'_>) -> Result<usize> {
    let mut resolved = 0;
    for listed in api.list(&keys.intents()).await? {
        let Some(intent) = read::<Intent>(api, &listed.name).await? else {
            continue;
        };
        if !policy.resolvable(&intent)? {
            continue;
        }
        let tx = &intent.transaction_id;
        let published = published(api, keys).await?;
        let head_rev = published.as_ref().map(|(h, _)| h.revision.clone());
        match read::<Complete>(api, &keys.complete(tx)).await? {
            Some(c) if head_rev == c.parent_revision => adopt(api, keys, &c).await?,
            Some(c) if head_rev.as_deref() == Some(c.revision.as_str()) => {}
            _ => {
                let none = Locations::new();
                let target = published.as_ref().map(|(_, r)| (&r.entries, &none));
                roll_back(api, keys, &intent, target).await?;
                // The revision record may have been written; it never became the head.
                api.delete(&[keys.revision(&intent.new_revision)]).await?;
                let abort = json!({
                    "transactionId": tx,
                    "abortedAt": rfc3339(SystemTime::now()),
                    "reason": "recovered",
                    "schemaVersion": SCHEMA_VERSION,
                });
                api.write_json(&keys.abort(tx), &abort, true).await?;
            }
        }
        api.delete(&[listed.name]).await?;
        resolved += 1;
    }
    Ok(resolved)
}

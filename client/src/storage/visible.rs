//! Visible objects: one object per entry, so the bucket can be browsed (docs/storage.md,
//! "Visible objects").
//!
//! A commit that changes at most `StorageConfig::visible_inline_max` entries writes them
//! before its head, behind its intent (`publish.rs`; recovery rolls them back). A larger one
//! (a first commit of thousands of files: one upload each) **publishes its head first**, with
//! `visibleBehind` naming its revision, and writes them afterwards in a background task that
//! holds this process's lock on the scope (and the coordinator's lease, when there is one);
//! that task clears `visibleBehind` last. The head is the commit's durable point: the revision
//! is whole and readable from then on, and the visible objects only lag. If the task is
//! interrupted (an error, the process ending), the next commit on the workspace, from any
//! host, or [`StorageWorkspace::sync_visible`], **finishes** them from what is stored: the
//! paths the head revision's receipt names get the head manifest's entries (bodies read from
//! their packs), and every other key those paths may have had is deleted.

use super::api::{StorageApi, Upload};
use super::keys::Keys;
use super::layout::{HeadRecord, Loc};
use super::model::{Entry, EntryKind, Touched};
use super::store::{self, Published};
use super::StorageWorkspace;
use crate::error::{Result, SupabashError};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, OnceLock};
use supabash_core::hash::sha256_hex;
use supabash_core::ErrorCode;

/// The default of `StorageConfig::visible_inline_max`: a commit changing more entries writes
/// its visible objects after its head (bench/ANALYSIS.md, issue 39).
pub const DEFAULT_VISIBLE_INLINE_MAX: usize = 64;

/// The visible object of entry `e` at `path`, with `body` (a file's bytes).
fn upload_of(keys: &Keys, path: &str, e: &Entry, body: Vec<u8>) -> Upload {
    let body = match e.kind {
        EntryKind::File => body,
        EntryKind::Directory => Vec::new(),
        EntryKind::Symlink => e.target.clone().unwrap_or_default().into_bytes(),
    };
    Upload {
        key: keys.of_entry(path, e),
        body,
        content_type: e.content_type(),
        metadata: keys.metadata(path, e),
    }
}

/// Uploads the visible objects of `touched` (their `after` entries, file bodies from
/// `bodies` by hash), then deletes the keys their `before` entries had where those changed.
pub async fn publish(
    api: &StorageApi,
    keys: &Keys,
    touched: &[Touched],
    bodies: &BTreeMap<String, Arc<Vec<u8>>>,
) -> Result<()> {
    let mut stale = Vec::new();
    let mut visible = Vec::new();
    for t in touched {
        let after_key = t.after.as_ref().map(|e| keys.of_entry(&t.path, e));
        if let Some(before) = &t.before {
            let key = keys.of_entry(&t.path, before);
            if Some(&key) != after_key.as_ref() {
                stale.push(key);
            }
        }
        let Some(e) = &t.after else { continue };
        let body = match (&e.kind, &e.hash) {
            (EntryKind::File, Some(h)) => bodies[h].to_vec(),
            _ => Vec::new(),
        };
        visible.push(upload_of(keys, &t.path, e, body));
    }
    api.upload_all(visible).await?;
    if !stale.is_empty() {
        api.delete(&stale).await?;
    }
    Ok(())
}

/// This process's lock on one scope (server, bucket, prefix), held while visible objects are
/// written after a head, so that no later commit of this process writes the same paths first.
fn scope_lock(api: &StorageApi) -> Arc<tokio::sync::Mutex<()>> {
    static LOCKS: OnceLock<Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>> = OnceLock::new();
    let scope = format!("{} {} {}", api.base_url(), api.bucket(), api.prefix());
    let mut locks = LOCKS
        .get_or_init(Mutex::default)
        .lock()
        .expect("scope locks");
    // Forget the locks nobody holds or waits for (this map is the only other owner).
    locks.retain(|_, l| Arc::strong_count(l) > 1);
    locks.entry(scope).or_default().clone()
}

/// Waits until this process writes no visible objects after a head on `api`'s scope.
pub async fn wait_idle(api: &StorageApi) {
    let lock = scope_lock(api);
    let _idle = lock.lock().await;
}

/// Takes this process's lock on `api`'s scope (before a head that defers its visible objects).
pub async fn lock(api: &StorageApi) -> tokio::sync::OwnedMutexGuard<()> {
    scope_lock(api).lock_owned().await
}

/// Writes the head without `visibleBehind` if it still names `revision` as lagging (and no
/// commit is in flight over it): the visible objects show that revision now.
async fn clear(api: &StorageApi, keys: &Keys, revision: &str) -> Result<()> {
    let Some(mut head) = store::read_head(api, keys).await? else {
        return Ok(());
    };
    if head.revision.as_deref() != Some(revision) || !head.visible_lags() || head.pending.is_some()
    {
        return Ok(());
    }
    head.visible_behind = None;
    store::write(api, &keys.head(), &head, false).await
}

/// The visible objects a commit of more than `visible_inline_max` entries writes after its
/// head, and what it holds meanwhile.
pub(super) struct Deferred {
    pub(super) api: StorageApi,
    pub(super) keys: Keys,
    pub(super) revision: String,
    pub(super) touched: Vec<Touched>,
    pub(super) bodies: BTreeMap<String, Arc<Vec<u8>>>,
    /// This process's lock on the scope, taken before the head was written.
    pub(super) guard: tokio::sync::OwnedMutexGuard<()>,
}

impl Deferred {
    /// Writes the visible objects in the background, then clears `visibleBehind`; releases
    /// `lease` (the commit's) and the scope lock when done. A failure leaves the lag to the
    /// next commit or [`StorageWorkspace::sync_visible`].
    pub(super) fn spawn(self, lease: Option<Box<dyn super::Lease>>) {
        tokio::spawn(async move {
            let result = async {
                publish(&self.api, &self.keys, &self.touched, &self.bodies).await?;
                if let Some(l) = &lease {
                    if l.lost().await {
                        return Ok(());
                    }
                }
                clear(&self.api, &self.keys, &self.revision).await
            }
            .await;
            if let Err(e) = result {
                tracing::warn!(
                    revision = %self.revision,
                    "visible objects left behind the head (the next commit finishes them): {e}"
                );
            }
            if let Some(l) = lease {
                l.release().await;
            }
            drop(self.guard);
        });
    }
}

fn corrupt(message: impl Into<String>) -> SupabashError {
    SupabashError::new(ErrorCode::HistoryCorruption, message)
}

/// Finishes the visible objects of the published head `p` (whose `visibleBehind` names it):
/// every path its receipt names gets the manifest's entry, every other key of those paths is
/// deleted, then `visibleBehind` is cleared.
pub async fn finish(api: &StorageApi, keys: &Keys, p: &Published) -> Result<()> {
    let header = store::read_header(api, keys, &p.revision, p.head.header.as_ref())
        .await?
        .ok_or_else(|| corrupt("the head's revision pack is missing"))?;
    let paths: Vec<&str> = header
        .receipt
        .changes
        .iter()
        .map(|c| c.path.as_str())
        .collect();
    let mut needed = BTreeMap::new();
    for path in &paths {
        if let Some(Entry {
            kind: EntryKind::File,
            hash: Some(h),
            ..
        }) = p.manifest.get(*path)
        {
            needed.insert(h.clone(), p.locations.get(h).cloned());
        }
    }
    let bodies = read_bodies(api, keys, needed).await?;
    let mut uploads = Vec::new();
    let mut stale = Vec::new();
    for path in paths {
        let after = p.manifest.get(path);
        let after_key = after.map(|e| keys.of_entry(path, e));
        for key in [keys.entry(path), keys.directory(path)] {
            if Some(&key) != after_key.as_ref() {
                stale.push(key);
            }
        }
        if let Some(e) = after {
            let body = match (&e.kind, &e.hash) {
                (EntryKind::File, Some(h)) => bodies[h].to_vec(),
                _ => Vec::new(),
            };
            uploads.push(upload_of(keys, path, e, body));
        }
    }
    api.upload_all(uploads).await?;
    if !stale.is_empty() {
        api.delete(&stale).await?;
    }
    clear(api, keys, &p.revision).await
}

/// The bodies `needed` (by hash, where each lies), checked against their SHA-256: a pack
/// holding two or more of them is read whole once, the others by range or from `objects/`.
async fn read_bodies(
    api: &StorageApi,
    keys: &Keys,
    needed: BTreeMap<String, Option<Loc>>,
) -> Result<BTreeMap<String, Arc<Vec<u8>>>> {
    let mut per_pack: BTreeMap<&str, usize> = BTreeMap::new();
    for loc in needed.values().flatten() {
        *per_pack.entry(loc.pack.as_str()).or_default() += 1;
    }
    let mut whole: BTreeMap<String, Option<Vec<u8>>> = BTreeMap::new();
    for (pack, n) in per_pack {
        if n >= 2 {
            whole.insert(pack.to_owned(), api.download(&keys.pack(pack)).await?);
        }
    }
    let mut out = BTreeMap::new();
    for (hash, loc) in &needed {
        let sliced = loc.as_ref().and_then(|l| {
            let bytes = whole.get(&l.pack)?.as_ref()?;
            let start = usize::try_from(l.offset).ok()?;
            let end = start.checked_add(usize::try_from(l.size).ok()?)?;
            bytes.get(start..end).map(<[u8]>::to_vec)
        });
        let bytes = match sliced {
            Some(b) => Some(b),
            None => store::body(api, keys, hash, loc.as_ref()).await?,
        };
        let bytes = bytes.ok_or_else(|| corrupt("a file body is missing"))?;
        if sha256_hex(&bytes) != *hash {
            return Err(corrupt("a file body fails its SHA-256"));
        }
        out.insert(hash.clone(), Arc::new(bytes));
    }
    Ok(out)
}

/// Whether `head` leaves visible objects for a committer to finish.
pub fn lags(head: &HeadRecord) -> bool {
    head.visible_lags() && head.pending.is_none()
}

impl StorageWorkspace {
    /// Waits until this process has written the visible objects of this workspace's commits
    /// (a commit of more than `StorageConfig::visible_inline_max` entries writes them after
    /// its head, in the background), then finishes any the published head still lacks (an
    /// interrupted background write, here or on another host). Answers whether it wrote
    /// anything. Needs no call for correctness: the next commit does the same first.
    pub async fn sync_visible(&self) -> Result<bool> {
        // The lease before the lock, as a commit takes them (a background write holds both).
        let lease = self.lease("visible").await?;
        let idle = lock(&self.api).await;
        let result = self.finish_lag().await;
        drop(idle);
        if let Some(l) = lease {
            l.release().await;
        }
        result
    }

    async fn finish_lag(&self) -> Result<bool> {
        let Some(head) = store::read_head(&self.api, &self.keys).await? else {
            return Ok(false);
        };
        if !lags(&head) {
            return Ok(false);
        }
        let base = self.state.lock().expect("state lock").base.clone();
        let known = base
            .revision
            .as_deref()
            .map(|r| (r, base.manifest.as_ref(), base.locations.as_ref()));
        let Some(p) = store::load_known(&self.api, &self.keys, &head, known).await? else {
            return Ok(false);
        };
        finish(&self.api, &self.keys, &p).await?;
        Ok(true)
    }
}

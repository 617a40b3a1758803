//! Reading each body once: lazy bodies come from the host's cache when it holds them
//! (verified), and otherwise a directory's small unread files are fetched together, in
//! bounded batches through [`BodySource::load_many`], when the first of them is read or
//! [`StagedTree::prefetch_dir`] is asked (a mount does when a directory is listed). Every body
//! fetched is verified against the hash the base recorded before it is kept.

use super::{Body, BodySource, Lazy, Node, StagedTree};
use crate::cache::HostCache;
use crate::error::Result;
use std::sync::Arc;
use supabash_core::path;

/// Largest file fetched together with its siblings (larger ones load alone, when read).
pub const PREFETCH_MAX_FILE: u64 = 256 * 1024;
/// Most files one batch asks for.
pub const PREFETCH_BATCH_FILES: usize = 256;
/// Most bytes one batch asks for.
pub const PREFETCH_BATCH_BYTES: u64 = 4 * 1024 * 1024;

/// One batch fetch under way: set when it ends (whatever came of it). Every body the batch
/// asks for is listed with it while it runs (listed from inside the initialisation, so
/// whoever finds it there waits for the end instead of initialising it).
pub(super) type BatchFlight = Arc<tokio::sync::OnceCell<()>>;

/// The bodies of `wanted` (lazy files of one revision) in one request, each verified against
/// what the base recorded. One that does not match is left out: a single read of it reports
/// the corruption.
async fn load_verified<'a>(
    source: &dyn BodySource,
    wanted: &'a [Lazy],
) -> Result<Vec<(&'a Lazy, Vec<u8>)>> {
    let Some(revision) = wanted.first().map(|l| l.revision.clone()) else {
        return Ok(Vec::new());
    };
    let paths: Vec<String> = wanted.iter().map(|l| l.path.clone()).collect();
    let mut out = Vec::new();
    for f in source.load_many(&revision, &paths).await? {
        let Some(lazy) = wanted.iter().find(|l| l.path == f.path) else {
            continue;
        };
        if let Ok(bytes) = f.verified(Some((&lazy.content_hash, lazy.size))) {
            out.push((lazy, bytes));
        }
    }
    Ok(out)
}

/// Lazy bodies in the batches one request fetches each: at most [`PREFETCH_BATCH_FILES`]
/// files, ending at the one that reaches [`PREFETCH_BATCH_BYTES`], all of one revision. A
/// batch is drawn from the source iterator only when asked for (and one body past it, to
/// see where it ends).
struct Batches<I: Iterator<Item = Lazy>>(std::iter::Peekable<I>);

impl<I: Iterator<Item = Lazy>> Iterator for Batches<I> {
    type Item = Vec<Lazy>;

    fn next(&mut self) -> Option<Vec<Lazy>> {
        let mut batch: Vec<Lazy> = Vec::new();
        let mut bytes = 0;
        while let Some(l) = self.0.next() {
            bytes += l.size;
            batch.push(l);
            let full = batch.len() >= PREFETCH_BATCH_FILES || bytes >= PREFETCH_BATCH_BYTES;
            let other_revision = self
                .0
                .peek()
                .is_some_and(|next| next.revision != batch[0].revision);
            if full || other_revision || self.0.peek().is_none() {
                return Some(batch);
            }
        }
        None
    }
}

/// The bodies a batch listed in `StagedTree::batched`, taken off when it ends (or is dropped).
struct Listed<'a> {
    tree: &'a StagedTree,
    flight: &'a BatchFlight,
    mine: Vec<Lazy>,
}

impl Drop for Listed<'_> {
    fn drop(&mut self) {
        let mut batched = self.tree.batched.lock().expect("batch lock");
        for l in &self.mine {
            if batched.get(l).is_some_and(|f| Arc::ptr_eq(f, self.flight)) {
                batched.remove(l);
            }
        }
    }
}

impl StagedTree {
    /// Consults `cache` before fetching a lazy body and keeps every fetched body there. Set
    /// once; later calls change nothing.
    pub fn use_host_cache(&self, cache: Arc<HostCache>) {
        let _ = self.host_cache.set(cache);
    }

    /// The host cache this tree uses, if any.
    pub fn host_cache(&self) -> Option<&Arc<HostCache>> {
        self.host_cache.get()
    }

    /// `lazy`'s bytes from the host cache (checked against its hash and size there), now kept
    /// in the tree.
    pub(super) fn cached_in_host(&self, lazy: &Lazy) -> Option<Arc<Vec<u8>>> {
        let bytes = self.host_cache.get()?.get(&lazy.content_hash)?;
        if bytes.len() as u64 != lazy.size {
            return None;
        }
        let bytes = Arc::new(bytes);
        self.lock().loaded.insert(lazy.clone(), bytes.clone());
        Some(bytes)
    }

    /// Keeps verified bytes of `lazy` in the tree and the host cache.
    pub(super) fn keep(&self, lazy: &Lazy, bytes: Arc<Vec<u8>>) {
        if let Some(cache) = self.host_cache.get() {
            cache.put(&lazy.content_hash, &bytes);
        }
        self.lock().loaded.insert(lazy.clone(), bytes);
    }

    /// The small lazy files at `paths` (at most [`PREFETCH_MAX_FILE`] each) whose bytes the
    /// tree does not hold yet.
    fn unread_at(&self, paths: &[String]) -> Vec<Lazy> {
        let inner = self.lock();
        paths
            .iter()
            .filter_map(|p| match inner.nodes.get(p) {
                Some(Node::File {
                    body: Body::Lazy(l),
                    ..
                }) if l.size <= PREFETCH_MAX_FILE && !inner.loaded.contains_key(l) => {
                    Some(l.clone())
                }
                _ => None,
            })
            .collect()
    }

    /// Small lazy files directly in `dir` of `revision` whose bytes the tree does not hold,
    /// at most one batch of them (`first` counted in).
    fn unread_in(&self, dir: &str, revision: &str, first: Option<&Lazy>) -> Vec<Lazy> {
        let inner = self.lock();
        let batched = self.batched.lock().expect("batch lock");
        let prefix = if dir == "/" {
            "/".to_owned()
        } else {
            format!("{dir}/")
        };
        let mut batch: Vec<Lazy> = first.into_iter().cloned().collect();
        let mut bytes: u64 = batch.iter().map(|l| l.size).sum();
        for (p, node) in inner.nodes.range(prefix.clone()..) {
            let Some(rest) = p.strip_prefix(&prefix) else {
                break;
            };
            if rest.contains('/') {
                continue;
            }
            let Node::File {
                body: Body::Lazy(l),
                ..
            } = node
            else {
                continue;
            };
            if l.revision != revision
                || l.size > PREFETCH_MAX_FILE
                || first.is_some_and(|f| f == l)
                || inner.loaded.contains_key(l)
                || batched.contains_key(l)
            {
                continue;
            }
            if batch.len() >= PREFETCH_BATCH_FILES || bytes + l.size > PREFETCH_BATCH_BYTES {
                break;
            }
            bytes += l.size;
            batch.push(l.clone());
        }
        batch
    }

    /// `lazy`'s bytes when a batch under way asks for it: waits for that batch to end.
    pub(super) async fn batch_brought(&self, lazy: &Lazy) -> Option<Arc<Vec<u8>>> {
        let flight = self
            .batched
            .lock()
            .expect("batch lock")
            .get(lazy)
            .cloned()?;
        flight.get_or_init(|| async {}).await;
        self.lock().loaded.get(lazy).cloned()
    }

    /// Fetches `batch` (after taking what the host cache holds, and leaving out what another
    /// batch under way asks for already) in one request, verifying and keeping every body
    /// that comes. Answers how many bodies came from the source.
    async fn fetch_batch(&self, source: &dyn BodySource, batch: Vec<Lazy>) -> Result<usize> {
        let wanted: Vec<Lazy> = batch
            .into_iter()
            .filter(|l| self.cached_in_host(l).is_none())
            .collect();
        if wanted.is_empty() {
            return Ok(0);
        }
        let flight = BatchFlight::default();
        let mut outcome = Ok(0);
        flight
            .get_or_init(|| async {
                let mine: Vec<Lazy> = {
                    let mut batched = self.batched.lock().expect("batch lock");
                    wanted
                        .into_iter()
                        .filter(|l| match batched.entry(l.clone()) {
                            std::collections::hash_map::Entry::Occupied(_) => false,
                            std::collections::hash_map::Entry::Vacant(slot) => {
                                slot.insert(flight.clone());
                                true
                            }
                        })
                        .collect()
                };
                let listed = Listed {
                    tree: self,
                    flight: &flight,
                    mine,
                };
                outcome = self.load_batch(source, &listed.mine).await;
            })
            .await;
        outcome
    }

    /// Fetches `wanted` (lazy bodies of one revision) in one request, verifying and keeping
    /// every body that comes; answers how many came.
    async fn load_batch(&self, source: &dyn BodySource, wanted: &[Lazy]) -> Result<usize> {
        let mut kept = 0;
        for (lazy, bytes) in load_verified(source, wanted).await? {
            self.keep(lazy, Arc::new(bytes));
            kept += 1;
        }
        Ok(kept)
    }

    /// Fetches `lazy` with a batch of its directory's small unread files; `None` when it is
    /// too large to batch or the batch did not bring it (the caller loads it alone).
    pub(super) async fn fetch_with_siblings(
        &self,
        source: &dyn BodySource,
        lazy: &Lazy,
    ) -> Option<Arc<Vec<u8>>> {
        if lazy.size > PREFETCH_MAX_FILE {
            return None;
        }
        let batch = self.unread_in(path::parent(&lazy.path), &lazy.revision, Some(lazy));
        self.fetch_batch(source, batch).await.ok()?;
        self.lock().loaded.get(lazy).cloned()
    }

    /// Fetches every small file directly in directory `dir` whose bytes the tree does not hold
    /// yet, in bounded batches (what the host cache holds is taken from there). Answers how
    /// many bodies came from the source. A failed batch ends it: reads load what is left.
    pub async fn prefetch_dir(&self, dir: &str) -> Result<usize> {
        let Some(source) = self.source.as_ref() else {
            return Ok(0);
        };
        let Some(revision) = self.base_revision() else {
            return Ok(0);
        };
        // A lazily opened tree lists the directory first.
        self.load_towards(dir, super::Reach::Children).await?;
        let mut fetched = 0;
        loop {
            let batch = self.unread_in(dir, &revision, None);
            if batch.is_empty() {
                return Ok(fetched);
            }
            let asked = batch.len();
            let kept = self.fetch_batch(source.as_ref(), batch).await?;
            fetched += kept;
            if kept == 0 && asked > 0 && self.unread_in(dir, &revision, None).len() >= asked {
                // Nothing came and nothing was cached: stop rather than ask again.
                return Ok(fetched);
            }
        }
    }
}

impl StagedTree {
    /// Fetches the bodies of the lazy files at `paths` (those the tree does not hold yet, up to
    /// [`PREFETCH_MAX_FILE`] each) in bounded batches, and keeps them: a caller that knows which
    /// files it will read (a search told it) gets them in a few requests, without the sibling
    /// batches a first read of each directory would fetch. Answers how many bodies came from
    /// the source; other paths are left to their reads.
    pub async fn prefetch_paths(&self, paths: &[String]) -> Result<usize> {
        let Some(source) = self.source.as_ref() else {
            return Ok(0);
        };
        let lazies = self.unread_at(paths);
        let mut fetched = 0;
        for batch in Batches(lazies.into_iter().peekable()) {
            fetched += self.fetch_batch(source.as_ref(), batch).await?;
        }
        Ok(fetched)
    }

    /// The bodies of the lazy files at `paths` that neither the tree nor the host cache holds,
    /// fetched in bounded batches, verified and kept in the host cache only (not in the tree:
    /// writing a whole tree out does not load it into memory): path → bytes. Without a host
    /// cache nothing is fetched. Files over [`PREFETCH_MAX_FILE`] are left to single reads.
    pub(crate) async fn fetch_uncached(
        &self,
        paths: &[String],
    ) -> Result<std::collections::BTreeMap<String, Vec<u8>>> {
        let mut out = std::collections::BTreeMap::new();
        let (Some(cache), Some(source)) = (self.host_cache.get(), self.source.as_ref()) else {
            return Ok(out);
        };
        let lazies = self.unread_at(paths);
        // Drawn batch by batch: a body an earlier batch brought is not asked for again.
        let uncached = lazies
            .into_iter()
            .filter(|l| !cache.contains(&l.content_hash));
        for batch in Batches(uncached.peekable()) {
            for (lazy, b) in load_verified(source.as_ref(), &batch).await? {
                cache.put(&lazy.content_hash, &b);
                out.insert(lazy.path.clone(), b);
            }
        }
        Ok(out)
    }
}

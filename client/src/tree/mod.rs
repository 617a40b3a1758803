//! The staged tree: the in-memory filesystem an agent edits. Nothing here is durable. Files of
//! the base revision load lazily and are verified; the change set is the difference between
//! the tree and its base (see `changes`), so what tools create and undo never reaches a commit.
//! Paths under `/tmp`, `/dev`, `/proc`, `/bin` and `/usr` belong to the shell and are never
//! committed. Files, symbolic links and directories are committed with their modes and times
//! (an empty directory, or one the base holds as an entry or with a mode other than 0o755,
//! as an entry of its own; other directories follow from the paths below them).

mod changes;
mod errno;
mod lazy;
mod ops;
mod prefetch;
mod search;
pub(crate) mod sync;

pub use changes::StagedChange;
pub use errno::{Errno, FsError, FsResult};
pub(crate) use lazy::Reach;
pub use lazy::{DirectorySource, Listing};
pub use ops::{Detached, DirEntry, FileKind, Stat};
pub use prefetch::{PREFETCH_BATCH_BYTES, PREFETCH_BATCH_FILES, PREFETCH_MAX_FILE};
pub use search::{ServerGrep, ServerMatch, ServerSearch};

use crate::documents::StoredFile;
use crate::error::{Result, SupabashError};
use crate::limits::Limits;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::SystemTime;
use supabash_core::path;
use supabash_core::posix::Kind;
use supabash_core::ErrorCode;

/// Loads one file of a pinned revision (with its body) for lazy reads.
#[async_trait::async_trait]
pub trait BodySource: Send + Sync {
    /// The stored file at `path` in `revision`.
    async fn load(&self, revision: &str, path: &str) -> Result<StoredFile>;

    /// The stored files at `paths` in `revision`, in as few requests as the source can (by
    /// default one per path). Paths it cannot load are left out: a later [`Self::load`] of one
    /// of them reports why.
    async fn load_many(&self, revision: &str, paths: &[String]) -> Result<Vec<StoredFile>> {
        let mut files = Vec::with_capacity(paths.len());
        for p in paths {
            if let Ok(f) = self.load(revision, p).await {
                files.push(f);
            }
        }
        Ok(files)
    }

    /// One page of `supabash_grep` over `revision`'s files, when the source can search on
    /// the server (by default it cannot: `None`).
    async fn grep(
        &self,
        _revision: &str,
        _request: ServerGrep,
    ) -> Option<Result<supabash_core::rpc::grep::GrepPage>> {
        None
    }
}

/// A file of the base revision whose body has not been needed yet.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Lazy {
    pub revision: String,
    pub path: String,
    pub content_hash: String,
    pub size: u64,
}

/// A file body: bytes in memory or a pinned reference.
#[derive(Debug, Clone)]
pub(crate) enum Body {
    Bytes(Arc<Vec<u8>>),
    Lazy(Lazy),
}

impl Body {
    pub fn size(&self) -> u64 {
        match self {
            Body::Bytes(b) => b.len() as u64,
            Body::Lazy(l) => l.size,
        }
    }

    pub fn content_hash(&self) -> String {
        match self {
            Body::Bytes(b) => supabash_core::hash::sha256_hex(b),
            Body::Lazy(l) => l.content_hash.clone(),
        }
    }
}

/// Mode and modification time (kept in memory only).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Meta {
    pub mode: u32,
    pub mtime: SystemTime,
}

impl Meta {
    fn new(mode: u32) -> Self {
        Meta {
            mode,
            mtime: SystemTime::now(),
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) enum Node {
    File { body: Body, meta: Meta },
    Dir { meta: Meta },
    Symlink { target: String, meta: Meta },
}

impl Node {
    pub fn file(body: Body) -> Self {
        Node::File {
            body,
            meta: Meta::new(0o644),
        }
    }

    pub fn dir() -> Self {
        Node::Dir {
            meta: Meta::new(0o755),
        }
    }

    pub fn meta_mut(&mut self) -> &mut Meta {
        match self {
            Node::File { meta, .. } | Node::Dir { meta } | Node::Symlink { meta, .. } => meta,
        }
    }
}

/// What a base revision holds, by path: built once and shared between the trees opened on it
/// and the host's manifest cache.
pub(crate) type BaseMap = Arc<BTreeMap<String, BaseFile>>;

/// What the base revision holds at a path: rendered content hash and size, kind, mode, time
/// (nanoseconds; 0 when the database kept none), and a link's target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BaseFile {
    pub content_hash: String,
    pub size: u64,
    pub kind: Kind,
    pub mode: u32,
    pub mtime_ns: i64,
    pub target: Option<String>,
}

impl BaseFile {
    /// The staged node the base entry at `p` of `revision` starts as (a file stays lazy).
    fn node(&self, revision: &str, p: &str) -> Node {
        let meta = Meta {
            mode: self.mode,
            mtime: from_ns(self.mtime_ns),
        };
        match self.kind {
            Kind::File => Node::File {
                body: Body::Lazy(Lazy {
                    revision: revision.to_owned(),
                    path: p.to_owned(),
                    content_hash: self.content_hash.clone(),
                    size: self.size,
                }),
                meta,
            },
            Kind::Symlink => Node::Symlink {
                target: self.target.clone().unwrap_or_default(),
                meta,
            },
            Kind::Directory => Node::Dir { meta },
        }
    }
}

/// Nanoseconds since the epoch as a time (negative: before it).
pub fn from_ns(ns: i64) -> SystemTime {
    let d = std::time::Duration::from_nanos(ns.unsigned_abs());
    if ns >= 0 {
        SystemTime::UNIX_EPOCH + d
    } else {
        SystemTime::UNIX_EPOCH - d
    }
}

/// A time as nanoseconds since the epoch (saturating far outside ±292 years).
pub fn to_ns(t: SystemTime) -> i64 {
    match t.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_nanos()).unwrap_or(i64::MAX),
        Err(e) => i64::try_from(e.duration().as_nanos()).map_or(i64::MIN, |n| -n),
    }
}

pub(crate) struct Inner {
    /// Every path but the root, canonical.
    pub nodes: BTreeMap<String, Node>,
    /// The base revision's entries, shared with the host's manifest cache (see
    /// [`crate::ManifestCache`]) until something changes them (`Arc::make_mut`).
    pub base: BaseMap,
    pub base_revision: Option<String>,
    /// Verified lazy bodies.
    pub loaded: HashMap<Lazy, Arc<Vec<u8>>>,
    pub committing: bool,
    /// Directories of the base not listed yet (a lazily opened tree; see `lazy`).
    pub unloaded: lazy::Unloaded,
}

/// One fetch of a lazy body that concurrent readers share.
type Flight = Arc<tokio::sync::OnceCell<Arc<Vec<u8>>>>;

/// The staged tree. Cheap to share behind an `Arc`; every method takes `&self`.
pub struct StagedTree {
    inner: Mutex<Inner>,
    /// Lazy loads under way, by (revision, path): concurrent reads of one file share one fetch.
    in_flight: Mutex<HashMap<(String, String), Flight>>,
    /// Lazy bodies a batch is fetching (see `prefetch`): a read of one waits for its batch
    /// instead of fetching it again.
    batched: Mutex<HashMap<Lazy, prefetch::BatchFlight>>,
    source: Option<Arc<dyn BodySource>>,
    /// Lists unloaded directories (a lazily opened tree).
    directories: Option<Arc<dyn DirectorySource>>,
    /// The host's body cache, consulted before the source and filled from it.
    host_cache: std::sync::OnceLock<Arc<crate::cache::HostCache>>,
    /// Paths kept out of commits (an ignore list; see [`StagedTree::keep_local`]).
    local_only: std::sync::OnceLock<Arc<dyn crate::exclude::Exclude>>,
    limits: Limits,
}

/// An entry of the base revision, for building a tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BaseEntry {
    /// Canonical path.
    pub path: String,
    /// SHA-256 of the rendered content (of a link: of its target).
    pub content_hash: String,
    /// Rendered size in bytes.
    pub size: u64,
    /// File, symbolic link or directory.
    pub kind: Kind,
    /// Permission bits.
    pub mode: u32,
    /// Modification time in nanoseconds (`None`: the database kept none).
    pub mtime_ns: Option<i64>,
    /// A link's target.
    pub target: Option<String>,
}

impl BaseEntry {
    /// The entry of a stored file as a manifest or listing answered it (a link's body, its
    /// target, is verified against its hash).
    pub fn from_stored(f: crate::documents::StoredFile) -> Result<BaseEntry> {
        let target = match f.kind {
            Kind::Symlink => Some(String::from_utf8(f.verified(None)?).map_err(|_| {
                SupabashError::new(
                    ErrorCode::HistoryCorruption,
                    "a symbolic link target is not UTF-8",
                )
                .with_path(&f.path)
            })?),
            _ => None,
        };
        Ok(BaseEntry {
            path: f.path,
            content_hash: f.content_hash,
            size: f.size,
            kind: f.kind,
            mode: f.mode,
            mtime_ns: f.mtime_ns,
            target,
        })
    }

    pub(crate) fn base_file(self) -> (String, BaseFile) {
        let file = BaseFile {
            content_hash: self.content_hash,
            size: self.size,
            kind: self.kind,
            mode: self.mode,
            mtime_ns: self.mtime_ns.unwrap_or(0),
            target: self.target,
        };
        (self.path, file)
    }
}

/// True when `p` is committed (not the root and not shell-owned).
pub(crate) fn committable(p: &str) -> bool {
    p != "/" && !path::is_shell_owned(p)
}

/// Inserts `files` (path, bytes) as staged files, with their parent directories.
fn insert_files(nodes: &mut BTreeMap<String, Node>, files: Vec<(String, Vec<u8>)>) {
    for (p, bytes) in files {
        insert_parents(nodes, &p);
        nodes.insert(p, Node::file(Body::Bytes(Arc::new(bytes))));
    }
}

fn insert_parents(nodes: &mut BTreeMap<String, Node>, p: &str) {
    let mut dir = path::parent(p);
    while dir != "/" && !nodes.contains_key(dir) {
        nodes.insert(dir.to_owned(), Node::dir());
        dir = path::parent(dir);
    }
}

impl StagedTree {
    /// An empty tree with no base revision.
    pub fn empty(limits: Limits) -> Self {
        Self::from_base(None, Vec::new(), None, limits)
    }

    /// A tree whose base is `revision` holding `entries`; bodies load through `source`.
    pub fn from_base(
        revision: Option<String>,
        entries: Vec<BaseEntry>,
        source: Option<Arc<dyn BodySource>>,
        limits: Limits,
    ) -> Self {
        let base = Arc::new(entries.into_iter().map(BaseEntry::base_file).collect());
        Self::from_base_map(revision, base, source, limits)
    }

    /// [`Self::from_base`] over a base already built (shared, not copied).
    pub(crate) fn from_base_map(
        revision: Option<String>,
        base: BaseMap,
        source: Option<Arc<dyn BodySource>>,
        limits: Limits,
    ) -> Self {
        let mut inner = Inner {
            nodes: BTreeMap::new(),
            base: BaseMap::default(),
            base_revision: None,
            loaded: HashMap::new(),
            committing: false,
            unloaded: lazy::Unloaded::default(),
        };
        inner.rebase(revision, base);
        StagedTree {
            inner: Mutex::new(inner),
            in_flight: Mutex::default(),
            batched: Mutex::default(),
            source,
            directories: None,
            host_cache: std::sync::OnceLock::new(),
            local_only: std::sync::OnceLock::new(),
            limits,
        }
    }

    /// A tree whose base is `revision`, opened from its root directory's listing `root`: every
    /// other directory is listed through `directories` the first time something in it is
    /// touched. `tree_files` and `tree_bytes` count the whole base (for the tree's limits).
    pub fn lazy(
        revision: String,
        root: Listing,
        (tree_files, tree_bytes): (u64, u64),
        source: Arc<dyn BodySource>,
        directories: Arc<dyn DirectorySource>,
        limits: Limits,
    ) -> Self {
        let mut tree = Self::from_base(Some(revision), Vec::new(), Some(source), limits);
        tree.directories = Some(directories);
        let inner = tree.inner.get_mut().expect("staged tree lock");
        inner.unloaded.files = tree_files;
        inner.unloaded.bytes = tree_bytes;
        inner.add_listing("/", root);
        tree
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().expect("staged tree lock")
    }

    /// The limits this tree enforces.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The revision the tree is based on (`None`: an empty workspace).
    pub fn base_revision(&self) -> Option<String> {
        self.lock().base_revision.clone()
    }

    /// An estimate of the memory the tree holds, in bytes: every body in memory (a buffer
    /// shared by several paths or by the verified-body cache counts once) plus the manifest
    /// (paths and hashes of the staged nodes and of the base, with a fixed cost per entry).
    /// For a cache's budget, not an exact accounting.
    pub fn memory_bytes(&self) -> usize {
        /// Map node, key and value headers per entry, roughly.
        const PER_ENTRY: usize = 96;
        let inner = self.lock();
        let mut seen = std::collections::HashSet::new();
        let mut bytes = 0;
        let mut body = |b: &Arc<Vec<u8>>| {
            if seen.insert(Arc::as_ptr(b)) {
                bytes += b.len();
            }
        };
        for node in inner.nodes.values() {
            if let Node::File {
                body: Body::Bytes(b),
                ..
            } = node
            {
                body(b);
            }
        }
        inner.loaded.values().for_each(&mut body);
        let manifest: usize = inner
            .nodes
            .keys()
            .map(|p| p.len() + PER_ENTRY)
            .chain(
                inner
                    .base
                    .iter()
                    .map(|(p, f)| p.len() + f.content_hash.len() + PER_ENTRY),
            )
            .chain(
                inner
                    .loaded
                    .keys()
                    .map(|l| l.path.len() + l.revision.len() + PER_ENTRY),
            )
            .sum();
        bytes + manifest
    }

    /// Fails with `COMMIT_IN_PROGRESS` while a commit is in flight.
    pub(crate) fn check_idle(inner: &Inner) -> Result<()> {
        if inner.committing {
            return Err(SupabashError::new(
                ErrorCode::CommitInProgress,
                "a commit is in flight; the staged tree is read-only until it ends",
            ));
        }
        Ok(())
    }

    /// Throws away every staged edit: the tree becomes its base again.
    pub fn discard(&self) -> Result<()> {
        let mut inner = self.lock();
        Self::check_idle(&inner)?;
        inner.reset_to_base();
        Ok(())
    }

    /// Makes the tree the base `revision` holding `entries` again, forgetting every staged
    /// edit and every cached body (after a redaction, whose removed bytes must not linger).
    pub(crate) fn reset_base(&self, revision: Option<String>, base: BaseMap) -> Result<()> {
        let mut inner = self.lock();
        Self::check_idle(&inner)?;
        inner.rebase(revision, base);
        Ok(())
    }

    /// Marks a commit as in flight (mutations fail until [`Self::end_commit`]).
    pub(crate) fn begin_commit(&self) -> Result<()> {
        let mut inner = self.lock();
        Self::check_idle(&inner)?;
        inner.committing = true;
        Ok(())
    }

    /// Ends a commit. With `Some(revision)` it succeeded: the staged tree becomes the base of
    /// `revision`, and lazy files now point at it.
    pub(crate) fn end_commit(&self, committed: Option<String>) {
        let mut inner = self.lock();
        inner.committing = false;
        let Some(revision) = committed else { return };
        let mut base = BTreeMap::new();
        let mut loaded = HashMap::new();
        let old_loaded = std::mem::take(&mut inner.loaded);
        let committed = inner.committed_entries();
        for (p, node) in inner.nodes.iter_mut() {
            if let Some(entry) = committed.get(p).filter(|_| !self.is_local_only(p)) {
                base.insert(p.clone(), entry.clone());
            }
            let Node::File { body, .. } = node else {
                continue;
            };
            if !committable(p) || self.is_local_only(p) {
                continue;
            }
            if let Body::Lazy(lazy) = body {
                let moved = Lazy {
                    revision: revision.clone(),
                    path: p.clone(),
                    ..lazy.clone()
                };
                if let Some(bytes) = old_loaded.get(lazy) {
                    loaded.insert(moved.clone(), bytes.clone());
                }
                *lazy = moved;
            }
        }
        // What the revision holds at paths kept out of commits is what it held before.
        for (p, f) in inner.base.iter() {
            if self.is_local_only(p) {
                base.insert(p.clone(), f.clone());
            }
        }
        inner.base = Arc::new(base);
        inner.loaded = loaded;
        inner.base_revision = Some(revision);
    }

    /// Ends a commit after which the committed tree is `revision`'s, holding `entries` (a
    /// rebased commit: the head also holds what others committed). The tree becomes that base;
    /// bytes already in memory for the same path and content stay loaded, shell-owned paths
    /// stay, and nothing else of the old tree survives.
    pub(crate) fn end_commit_at(&self, revision: String, entries: BaseMap) {
        let mut inner = self.lock();
        inner.committing = false;
        let mut held: HashMap<(String, String), Arc<Vec<u8>>> = HashMap::new();
        for (p, node) in &inner.nodes {
            let Node::File { body, .. } = node else {
                continue;
            };
            let bytes = match body {
                Body::Bytes(b) => Some(b.clone()),
                Body::Lazy(lazy) => inner.loaded.get(lazy).cloned(),
            };
            if let Some(bytes) = bytes {
                held.insert((p.clone(), body.content_hash()), bytes);
            }
        }
        inner.nodes.retain(|p, _| !committable(p));
        inner.loaded.clear();
        // `entries` is the whole tree: nothing stays unlisted.
        inner.unloaded = lazy::Unloaded::default();
        for (p, e) in entries.iter() {
            if let Some(bytes) = held
                .remove(&(p.clone(), e.content_hash.clone()))
                .filter(|_| e.kind == Kind::File)
            {
                let lazy = Lazy {
                    revision: revision.clone(),
                    path: p.clone(),
                    content_hash: e.content_hash.clone(),
                    size: e.size,
                };
                inner.loaded.insert(lazy, bytes);
            }
        }
        inner.base = entries;
        inner.base_revision = Some(revision);
        let shell_owned = std::mem::take(&mut inner.nodes);
        inner.reset_to_base();
        inner.nodes.extend(shell_owned);
    }

    /// Replaces staged file bytes with their canonical rendering after a successful commit
    /// (runs while the commit is still marked in flight, before [`Self::end_commit`]).
    pub(crate) fn canonicalise(&self, files: Vec<(String, Vec<u8>)>) {
        let mut inner = self.lock();
        for (p, bytes) in files {
            if let Some(Node::File { body, .. }) = inner.nodes.get_mut(&p) {
                *body = Body::Bytes(Arc::new(bytes));
            }
        }
    }

    /// Replaces every committable path with `files` (path, rendered bytes); shell-owned paths
    /// stay. Used by restore (which lists every unloaded directory first).
    pub(crate) async fn stage_files(&self, files: Vec<(String, Vec<u8>)>) -> Result<()> {
        self.load_all().await?;
        let mut inner = self.lock();
        Self::check_idle(&inner)?;
        inner.nodes.retain(|p, _| !committable(p));
        insert_files(&mut inner.nodes, files);
        Ok(())
    }

    /// Gives the staged entries what `entries` record: each file its mode and time, each link
    /// and explicit directory its place (parents created). Used by restore after
    /// [`Self::stage_files`].
    pub(crate) fn stage_attrs(&self, entries: &[BaseEntry]) -> Result<()> {
        let mut inner = self.lock();
        Self::check_idle(&inner)?;
        for e in entries {
            let meta = Meta {
                mode: e.mode,
                mtime: from_ns(e.mtime_ns.unwrap_or(0)),
            };
            match e.kind {
                Kind::File => {
                    if let Some(node) = inner.nodes.get_mut(&e.path) {
                        *node.meta_mut() = meta;
                    }
                }
                Kind::Symlink => {
                    insert_parents(&mut inner.nodes, &e.path);
                    let target = e.target.clone().unwrap_or_default();
                    inner
                        .nodes
                        .insert(e.path.clone(), Node::Symlink { target, meta });
                }
                Kind::Directory => {
                    insert_parents(&mut inner.nodes, &e.path);
                    inner.nodes.insert(e.path.clone(), Node::Dir { meta });
                }
            }
        }
        Ok(())
    }

    /// Writes `files` (path, rendered bytes, parents created) and removes `removed`, leaving
    /// every other path as it is. Used to stage a fork's net change onto its source.
    pub(crate) async fn apply_files(
        &self,
        files: Vec<(String, Vec<u8>)>,
        removed: &[String],
    ) -> Result<()> {
        for p in removed.iter().chain(files.iter().map(|(p, _)| p)) {
            self.load_towards(p, Reach::Above).await?;
        }
        let mut inner = self.lock();
        Self::check_idle(&inner)?;
        for p in removed {
            inner.nodes.remove(p);
        }
        insert_files(&mut inner.nodes, files);
        Ok(())
    }

    /// The bytes of a body, loading and verifying a lazy one. Concurrent reads of the same
    /// (revision, path) share one fetch; a failed fetch is not remembered, so the next reader
    /// (a waiter included) tries again.
    pub(crate) async fn bytes_of(&self, body: &Body) -> Result<Arc<Vec<u8>>> {
        let lazy = match body {
            Body::Bytes(b) => return Ok(b.clone()),
            Body::Lazy(lazy) => lazy,
        };
        if let Some(bytes) = self.lock().loaded.get(lazy) {
            return Ok(bytes.clone());
        }
        let source = self.source.as_ref().ok_or_else(|| {
            SupabashError::new(ErrorCode::Backend, "no source for lazy bodies")
                .with_path(&lazy.path)
        })?;
        let key = (lazy.revision.clone(), lazy.path.clone());
        let flight = self
            .in_flight
            .lock()
            .expect("in-flight lock")
            .entry(key.clone())
            .or_default()
            .clone();
        let loaded = flight
            .get_or_try_init(|| async {
                if let Some(bytes) = self.lock().loaded.get(lazy) {
                    return Ok(bytes.clone());
                }
                if let Some(bytes) = self.cached_in_host(lazy) {
                    return Ok(bytes);
                }
                if let Some(bytes) = self.batch_brought(lazy).await {
                    return Ok(bytes);
                }
                // The file and its small unread siblings, in one request.
                if let Some(bytes) = self.fetch_with_siblings(source.as_ref(), lazy).await {
                    return Ok(bytes);
                }
                let stored = source.load(&lazy.revision, &lazy.path).await?;
                let bytes = Arc::new(stored.verified(Some((&lazy.content_hash, lazy.size)))?);
                self.keep(lazy, bytes.clone());
                Ok::<_, SupabashError>(bytes)
            })
            .await
            .cloned();
        let mut in_flight = self.in_flight.lock().expect("in-flight lock");
        if in_flight.get(&key).is_some_and(|f| Arc::ptr_eq(f, &flight)) {
            in_flight.remove(&key);
        }
        loaded
    }
}

impl StagedTree {
    /// Keeps the paths `exclude` excludes (or lies below an excluded directory) out of every
    /// change list and commit: what the tree holds there stays in the tree, and what the base
    /// holds there stays in the workspace, untouched (a mount's ignore list). Set once.
    pub fn keep_local(&self, exclude: Arc<dyn crate::exclude::Exclude>) {
        let _ = self.local_only.set(exclude);
    }

    /// Whether `p` is kept out of commits (see [`Self::keep_local`]).
    pub(crate) fn is_local_only(&self, p: &str) -> bool {
        self.local_only
            .get()
            .is_some_and(|x| crate::exclude::excluded_with_parents(x.as_ref(), p, false))
    }

    /// The paths whose content differs from the base but which [`Self::keep_local`] keeps out
    /// of commits, sorted: what a commit leaves behind.
    pub fn kept_local(&self) -> Vec<String> {
        if self.local_only.get().is_none() {
            return Vec::new();
        }
        let inner = self.lock();
        let mut out: Vec<String> = inner
            .nodes
            .iter()
            .filter_map(|(p, n)| match n {
                Node::File { body, .. } if committable(p) && self.is_local_only(p) => {
                    let same = inner
                        .base
                        .get(p)
                        .is_some_and(|b| b.content_hash == body.content_hash());
                    (!same).then(|| p.clone())
                }
                _ => None,
            })
            .collect();
        out.extend(
            inner
                .base
                .keys()
                .filter(|p| self.is_local_only(p) && !inner.nodes.contains_key(*p))
                .cloned(),
        );
        out.sort();
        out
    }
}

impl Inner {
    /// Replaces the base and drops staged edits and cached bodies.
    fn rebase(&mut self, revision: Option<String>, base: BaseMap) {
        self.base = base;
        self.base_revision = revision;
        self.loaded.clear();
        self.unloaded = lazy::Unloaded::default();
        self.reset_to_base();
    }

    fn reset_to_base(&mut self) {
        let revision = self.base_revision.clone().unwrap_or_default();
        // Built in one pass and collected at once (a sort of nearly sorted pairs and a bulk
        // build), rather than inserted path by path: an open builds the whole base.
        let mut seen: std::collections::HashSet<&str> = std::collections::HashSet::new();
        let mut nodes: Vec<(String, Node)> = Vec::with_capacity(self.base.len());
        for (p, f) in self.base.iter() {
            // The parents the base implies: up to the first one met before (a base entry
            // sorts before every path below it).
            let mut dir = path::parent(p);
            while dir != "/" && seen.insert(dir) && !self.base.contains_key(dir) {
                nodes.push((dir.to_owned(), Node::dir()));
                dir = path::parent(dir);
            }
            nodes.push((p.clone(), f.node(&revision, p)));
        }
        self.nodes = nodes.into_iter().collect();
        for dir in &self.unloaded.dirs {
            insert_parents(&mut self.nodes, dir);
            self.nodes.entry(dir.clone()).or_insert_with(Node::dir);
        }
    }
}

#[cfg(test)]
mod tests;

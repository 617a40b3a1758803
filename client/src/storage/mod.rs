//! The Storage backend (cargo feature `storage`): a staged workspace kept in a Supabase Storage
//! bucket under one prefix, with the same staged tree as the Postgres backend and a commit that
//! is crash-safe without a database transaction.
//!
//! - **Opening**: [`StorageWorkspace::open_for_session`] takes a verified session (the prefix
//!   is `<user id>/`; callers never pass a prefix), [`StorageWorkspace::open_with_capability`]
//!   a verified Ed25519 Storage capability (bucket and exact prefix). Opening first recovers
//!   unresolved commits, then reads the published head and its snapshot; bodies load lazily
//!   (by range from their pack) and are verified against their SHA-256. With nothing published yet, the tree is read from the
//!   visible objects (paged list-v2 and their metadata).
//! - **Entries**: files (any bytes), directories (kept while empty, as marker objects),
//!   symbolic links that resolve inside the root, modes and mtimes: all recorded in each
//!   visible object's metadata and in the revision manifest. Keys are encoded reversibly
//!   ([`keys`]); the reserved `.supabash/` area under the prefix never appears in the tree.
//! - **Layout** ([`layout`], [`pack`]): a revision pack per commit (its small bodies and its
//!   header), snapshots of the whole manifest now and then, and the changes since the last
//!   snapshot in the head, so a commit writes what it changes and an open reads two objects.
//!   0.6.0's layout is read (`store.rs`) and upgraded by the next commit.
//! - **Commit** (`commit.rs`, `publish.rs`): one upload batch (pack, snapshot when due, large
//!   bodies), the intent in the head, visible uploads and deletes, the idempotency record,
//!   and the head last (a commit of more than `visible_inline_max` entries writes its visible
//!   objects after the head instead, in the background: `visible.rs`); recovery (`pending.rs`, and `recover.rs` for 0.6.0's intents) resolves
//!   anything unfinished at the next open, commit or discard. An optional [`coordinator`]
//!   serialises hosts.
//! - **History** (`history.rs`, `purge.rs`): pages, old revisions, diffs, forward restore,
//!   checkpoints and purge, from the records in the reserved area.
//! - **Setup** ([`setup`]): the private bucket and a check of the row-level-security policies.
//!
//! See `docs/storage.md` for the layout, the failure modes and the limits.

pub mod api;
mod commit;
pub mod coordinator;
mod history;
pub mod keys;
pub mod layout;
pub mod model;
pub mod pack;
mod pending;
mod publish;
mod purge;
mod recover;
pub mod setup;
mod store;
mod tree_io;
mod visible;

pub use api::StorageApi;
pub use coordinator::{CommitCoordinator, Lease, PostgresCoordinator};
pub use history::StoredRevision;
pub use model::{Entry, EntryKind, Manifest, Touched};
pub use visible::DEFAULT_VISIBLE_INLINE_MAX;

use crate::auth::Session;
use crate::error::{Result, SupabashError};
use crate::limits::Limits;
use crate::tree::StagedTree;
use keys::{Keys, Visible};
use layout::Locations;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use supabash_core::capability::{Operation, OperationSet};
use supabash_core::hash::sha256_hex;
use supabash_core::ErrorCode;
use tree_io::{Bodies, UNPUBLISHED};

/// Where the Storage API is, which bucket holds workspaces, and the optional coordinator.
#[derive(Clone)]
#[non_exhaustive]
pub struct StorageConfig {
    /// The Storage base URL (hosted: `https://<ref>.supabase.co/storage/v1`).
    pub url: String,
    /// The bucket, e.g. `workspaces`.
    pub bucket: String,
    /// The publishable key, sent as `apikey` (the hosted gateway wants it).
    pub api_key: Option<String>,
    /// Serialises commits and recovery per prefix across hosts (see [`coordinator`]).
    pub coordinator: Option<Arc<dyn CommitCoordinator>>,
    /// Without a coordinator, how old another host's unfinished commit must be before
    /// recovery treats it as abandoned ([`DEFAULT_STALE_INTENT`]; see `recover.rs`). This
    /// process's own failed commits are resolved at once.
    pub stale_intent_after: Duration,
    /// How many uploads a commit runs at a time (1 to [`MAX_UPLOAD_CONCURRENCY`]; default
    /// [`api::DEFAULT_UPLOAD_CONCURRENCY`]).
    pub upload_concurrency: usize,
    /// Whether commits keep a visible object per entry (default `true`: the bucket is
    /// browsable). Off, a commit writes only its revision pack and the head (and its
    /// idempotency record): no intent, no per-entry uploads; the objects already visible are
    /// left as they are. See docs/storage.md, "Visible objects".
    pub visible_objects: bool,
    /// With visible objects, the most entries a commit changes whose visible objects it writes
    /// before its head (default [`DEFAULT_VISIBLE_INLINE_MAX`]); a larger commit publishes its
    /// head first and writes them after, in the background (docs/storage.md, "Visible
    /// objects"). 0 defers every commit's; `usize::MAX` none.
    pub visible_inline_max: usize,
    /// The most bytes one Storage answer may hold (1 to
    /// [`crate::transport::MAX_ANSWER_BYTES`]; default
    /// [`crate::transport::DEFAULT_MAX_ANSWER_BYTES`], 256 MiB): a longer one fails with
    /// `QUOTA_EXCEEDED` and is never buffered whole.
    pub max_answer_bytes: usize,
}

/// The most uploads a commit may run at a time.
pub const MAX_UPLOAD_CONCURRENCY: usize = 64;

crate::setters! {
    impl StorageConfig {
        with_url(url: into String),
        with_bucket(bucket: into String),
        with_api_key(api_key: some into String),
        with_coordinator(coordinator: some Arc<dyn CommitCoordinator>),
        with_stale_intent_after(stale_intent_after: Duration),
        with_upload_concurrency(upload_concurrency: usize),
        with_max_answer_bytes(max_answer_bytes: usize),
        with_visible_objects(visible_objects: bool),
        with_visible_inline_max(visible_inline_max: usize),
    }
}

/// The default stale window for another host's unfinished commit: 5 minutes.
pub const DEFAULT_STALE_INTENT: Duration = Duration::from_secs(300);

impl StorageConfig {
    /// The Storage API at `url` (hosted: `https://<ref>.supabase.co/storage/v1`) with
    /// workspaces in `bucket`: no API key, no coordinator, [`DEFAULT_STALE_INTENT`],
    /// [`api::DEFAULT_UPLOAD_CONCURRENCY`] uploads at a time, visible objects kept.
    pub fn new(url: impl Into<String>, bucket: impl Into<String>) -> Self {
        StorageConfig {
            url: url.into(),
            bucket: bucket.into(),
            api_key: None,
            coordinator: None,
            stale_intent_after: DEFAULT_STALE_INTENT,
            upload_concurrency: api::DEFAULT_UPLOAD_CONCURRENCY.get(),
            max_answer_bytes: crate::transport::DEFAULT_MAX_ANSWER_BYTES,
            visible_objects: true,
            visible_inline_max: DEFAULT_VISIBLE_INLINE_MAX,
        }
    }

    /// The Storage API of this configuration for `bucket` and `prefix` with `token`.
    fn api(&self, bucket: &str, prefix: &str, token: &str) -> Result<StorageApi> {
        crate::limits::check_setting(
            "upload_concurrency",
            self.upload_concurrency,
            MAX_UPLOAD_CONCURRENCY,
        )?;
        let concurrency =
            std::num::NonZeroUsize::new(self.upload_concurrency).expect("checked: at least 1");
        StorageApi::new(&self.url, bucket, prefix, token, self.api_key.as_deref())?
            .with_upload_concurrency(concurrency)
            .with_max_answer_bytes(self.max_answer_bytes)
    }
}

impl std::fmt::Debug for StorageConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StorageConfig")
            .field("url", &self.url)
            .field("bucket", &self.bucket)
            .field("coordinated", &self.coordinator.is_some())
            .field("upload_concurrency", &self.upload_concurrency)
            .field("max_answer_bytes", &self.max_answer_bytes)
            .field("visible_objects", &self.visible_objects)
            .field("visible_inline_max", &self.visible_inline_max)
            .finish_non_exhaustive()
    }
}

/// What the workspace is based on.
#[derive(Debug, Clone)]
struct Base {
    /// The published revision (`None`: nothing published; the tree came from the listing).
    revision: Option<String>,
    manifest: Arc<Manifest>,
    /// Where the manifest's packed bodies lie.
    locations: Arc<Locations>,
}

/// A commit that failed after its intent: what identifies it, its transaction, its revision.
#[derive(Debug, Clone)]
struct Partial {
    fingerprint: String,
    transaction_id: String,
    revision: String,
}

/// One opened Storage workspace.
pub struct StorageWorkspace {
    api: StorageApi,
    keys: Keys,
    tree: Arc<StagedTree>,
    bodies: Arc<Bodies>,
    coordinator: Option<Arc<dyn CommitCoordinator>>,
    stale_intent_after: Duration,
    /// Whether commits keep visible objects ([`StorageConfig::visible_objects`]).
    visible: bool,
    /// [`StorageConfig::visible_inline_max`].
    visible_inline_max: usize,
    /// The operations a capability granted (`None`: a user's own workspace, everything).
    operations: Option<OperationSet>,
    state: Mutex<State>,
}

struct State {
    base: Base,
    /// The last commit that failed after its intent.
    partial: Option<Partial>,
    /// The revision a restore staged; the next commit records it as its source.
    restore_source: Option<String>,
}

/// True for a user id usable as the first folder: 1 to 128 of `[A-Za-z0-9_-]`.
fn valid_user_folder(id: &str) -> bool {
    (1..=128).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

impl StorageWorkspace {
    /// Opens the workspace of a verified session: prefix `<user id>/`, the user's token as
    /// bearer, so the Storage policies check every call too.
    pub async fn open_for_session(
        config: &StorageConfig,
        session: &Session,
        limits: Limits,
    ) -> Result<Self> {
        if !valid_user_folder(&session.user_id) {
            return Err(SupabashError::new(
                ErrorCode::Authentication,
                "the verified user id cannot name a Storage folder",
            ));
        }
        let api = config.api(
            &config.bucket,
            &format!("{}/", session.user_id),
            &session.access_token,
        )?;
        Self::open_configured(api, limits, config).await
    }

    /// Verifies the incoming request's session (see [`crate::auth::verify_request`]), then
    /// opens that user's workspace.
    pub async fn open_from_request(
        headers: &reqwest::header::HeaderMap,
        supabase: &crate::auth::SupabaseConfig,
        config: &StorageConfig,
        limits: Limits,
    ) -> Result<(Session, Self)> {
        let session = crate::auth::verify_request(headers, supabase).await?;
        let ws = Self::open_for_session(config, &session, limits).await?;
        Ok((session, ws))
    }

    /// Opens the bucket and exact prefix a verified Storage capability names (the bucket of
    /// `config` is not used), with `token` as bearer (a trusted job's service key; the client
    /// confines every key to the prefix). The capability's nonce is consumed only once the
    /// open succeeded.
    pub async fn open_with_capability(
        config: &StorageConfig,
        capability: crate::capability::VerifiedStorageCapability,
        nonces: &dyn crate::capability::NonceStore,
        token: &str,
        limits: Limits,
    ) -> Result<crate::capability::Opened<Self>> {
        capability
            .open(nonces, |claims| {
                let binding = claims.binding.clone();
                let operations = claims.common.ops.clone();
                async move {
                    let operations = OperationSet::from_wire(&operations).map_err(|e| {
                        SupabashError::new(e.code(), "the capability's operations are invalid")
                    })?;
                    if !operations.contains(Operation::Read) {
                        return Err(SupabashError::new(
                            ErrorCode::Authorization,
                            "the capability does not grant read",
                        ));
                    }
                    let api = config.api(&binding.bucket, &binding.prefix, token)?;
                    let mut ws = Self::open_configured(api, limits, config).await?;
                    ws.operations = Some(operations);
                    Ok(ws)
                }
            })
            .await
    }

    /// Opens the workspace `api` points at with the coordinator, stale window and visible
    /// objects setting of `config`.
    async fn open_configured(
        api: StorageApi,
        limits: Limits,
        config: &StorageConfig,
    ) -> Result<Self> {
        let mut ws = Self::unopened(
            api,
            limits,
            config.coordinator.clone(),
            config.stale_intent_after,
        )?;
        ws.visible = config.visible_objects;
        ws.visible_inline_max = config.visible_inline_max;
        ws.settle(None).await?;
        Ok(ws)
    }

    /// Opens the workspace `api` points at, without a coordinator. See [`Self::open_with`].
    pub async fn open(api: StorageApi, limits: Limits) -> Result<Self> {
        Self::open_with(api, limits, None, DEFAULT_STALE_INTENT).await
    }

    /// Opens the workspace `api` points at: recovery (under the coordinator's lease when there
    /// is one; without, of other hosts' commits older than `stale_intent_after`), then the
    /// published head (or, with none, the visible objects). Visible objects are kept.
    pub async fn open_with(
        api: StorageApi,
        limits: Limits,
        coordinator: Option<Arc<dyn CommitCoordinator>>,
        stale_intent_after: Duration,
    ) -> Result<Self> {
        let ws = Self::unopened(api, limits, coordinator, stale_intent_after)?;
        ws.settle(None).await?;
        Ok(ws)
    }

    /// The workspace before recovery and the first read.
    fn unopened(
        api: StorageApi,
        limits: Limits,
        coordinator: Option<Arc<dyn CommitCoordinator>>,
        stale_intent_after: Duration,
    ) -> Result<Self> {
        limits.validate()?;
        supabash_core::capability::check_prefix(api.prefix()).map_err(|_| {
            SupabashError::new(ErrorCode::InvalidArgument, "not a valid Storage prefix")
        })?;
        keys::check_prefix_room(api.prefix())?;
        let keys = Keys::new(api.prefix());
        let bodies = Arc::new(Bodies::new(api.clone(), keys.clone()));
        let tree = Arc::new(StagedTree::from_base(
            None,
            Vec::new(),
            Some(bodies.clone()),
            limits,
        ));
        Ok(StorageWorkspace {
            api,
            keys,
            tree,
            bodies,
            coordinator,
            stale_intent_after,
            visible: true,
            visible_inline_max: DEFAULT_VISIBLE_INLINE_MAX,
            operations: None,
            state: Mutex::new(State {
                base: Base {
                    revision: None,
                    manifest: Arc::default(),
                    locations: Arc::default(),
                },
                partial: None,
                restore_source: None,
            }),
        })
    }

    /// Refuses `op` when the workspace was opened by a capability that does not grant it
    /// (`AUTHORIZATION`).
    fn require(&self, op: Operation) -> Result<()> {
        match &self.operations {
            Some(ops) if !ops.contains(op) => Err(SupabashError::new(
                ErrorCode::Authorization,
                format!("the capability does not grant {}", op.as_str()),
            )),
            _ => Ok(()),
        }
    }

    /// The coordinator's lease for this scope, when there is a coordinator.
    async fn lease(&self, transaction_id: &str) -> Result<Option<Box<dyn Lease>>> {
        match &self.coordinator {
            Some(c) => Ok(Some(c.acquire(&self.scope(), transaction_id).await?)),
            None => Ok(None),
        }
    }

    /// Recovery under the lease (see `pending.rs` for what it may resolve; `own` is this
    /// workspace's own unresolved transaction), then the published state (or, with nothing
    /// published, the visible objects) becomes the base and the staged tree.
    async fn settle(&self, own: Option<&str>) -> Result<()> {
        let lease = self.lease("recovery").await?;
        let policy = recover::Policy {
            leased: lease.is_some(),
            own,
            stale_after: self.stale_intent_after,
            committing: false,
            finish_visible: false,
        };
        let result = pending::settle(&self.api, &self.keys, &policy, None).await;
        if let Some(l) = lease {
            l.release().await;
        }
        let base = match result? {
            Some(p) => base_of(p),
            None => Base {
                revision: None,
                manifest: Arc::new(self.read_visible().await?),
                locations: Arc::default(),
            },
        };
        self.set_base(base)
    }

    fn set_base(&self, base: Base) -> Result<()> {
        let name = base.revision.clone().unwrap_or_default();
        self.bodies
            .register(&name, base.manifest.clone(), base.locations.clone());
        tree_io::install(&self.tree, &name, &base.manifest)?;
        self.state.lock().expect("state lock").base = base;
        Ok(())
    }

    /// The tree the visible objects describe (nothing published yet): entries from their
    /// metadata; objects without supabash metadata are files whose bytes are hashed here. A key
    /// that does not spell its path counts only when its metadata names a path stored there.
    async fn read_visible(&self) -> Result<Manifest> {
        let mut manifest = Manifest::new();
        for listed in self.api.list(self.keys.prefix()).await? {
            let Some(visible) = self.keys.classify(&listed.name) else {
                continue;
            };
            let Some(info) = self.api.info(&listed.name).await? else {
                continue;
            };
            let (p, is_dir) = match visible {
                Visible::Entry(p) => (p, false),
                Visible::Directory(p) => (p, true),
                Visible::Named { directory } => {
                    match self
                        .keys
                        .named_path(&listed.name, directory, &info.metadata)
                    {
                        Some(p) => (p, directory),
                        None => continue,
                    }
                }
            };
            let size = info.size.or(listed.size).unwrap_or(0);
            let entry = match Entry::from_object_metadata(&info.metadata, size) {
                Some(e) if e.kind != EntryKind::File || e.hash.is_some() => e,
                _ if is_dir => Entry {
                    kind: EntryKind::Directory,
                    mode: 0o755,
                    mtime_ms: 0,
                    hash: None,
                    size: 0,
                    target: None,
                },
                _ => {
                    let bytes = self.api.download(&listed.name).await?.unwrap_or_default();
                    Entry {
                        kind: EntryKind::File,
                        mode: 0o644,
                        mtime_ms: 0,
                        hash: Some(sha256_hex(&bytes)),
                        size: bytes.len() as u64,
                        target: None,
                    }
                }
            };
            manifest.insert(p, entry);
        }
        Ok(manifest)
    }

    /// The staged tree agents edit.
    pub fn fs(&self) -> &Arc<StagedTree> {
        &self.tree
    }

    /// What the Storage backend stores (the seed's `mounted.capabilities`): files, symbolic
    /// links, empty directories, modes and times (at millisecond precision).
    pub fn capabilities(&self) -> supabash_core::posix::Capabilities {
        supabash_core::posix::Capabilities::posix("storage")
    }

    /// The published revision the tree is based on (`None`: nothing published yet).
    pub fn base_revision(&self) -> Option<String> {
        self.state.lock().expect("state lock").base.revision.clone()
    }

    /// The bucket and prefix, e.g. `workspaces/<uid>/`.
    pub fn scope(&self) -> String {
        format!("{}/{}", self.api.bucket(), self.api.prefix())
    }

    /// The staged changes against the base, by path.
    pub fn changes(&self) -> Result<Vec<Touched>> {
        let (staged, _) = tree_io::snapshot(&self.tree)?;
        let base = self.state.lock().expect("state lock").base.manifest.clone();
        Ok(diff(&base, &staged))
    }

    /// Throws away staged edits. After a failed commit this first resolves it (adopting or
    /// rolling it back), then bases the tree on whatever is published.
    pub async fn discard(&self) -> Result<()> {
        let partial = {
            let mut state = self.state.lock().expect("state lock");
            state.restore_source = None;
            state.partial.take()
        };
        if let Some(p) = &partial {
            return self.settle(Some(&p.transaction_id)).await;
        }
        let base = self.state.lock().expect("state lock").base.clone();
        tree_io::install(
            &self.tree,
            base.revision.as_deref().unwrap_or(UNPUBLISHED),
            &base.manifest,
        )
    }
}

/// The base a published state gives.
fn base_of(p: store::Published) -> Base {
    Base {
        revision: Some(p.revision),
        manifest: Arc::new(p.manifest),
        locations: Arc::new(p.locations),
    }
}

/// The paths whose entries differ between `base` and `staged`, in path order.
pub fn diff(base: &Manifest, staged: &Manifest) -> Vec<Touched> {
    let mut out = Vec::new();
    for (p, e) in staged {
        if base.get(p) != Some(e) {
            out.push(Touched {
                path: p.clone(),
                before: base.get(p).cloned(),
                after: Some(e.clone()),
            });
        }
    }
    for (p, e) in base {
        if !staged.contains_key(p) {
            out.push(Touched {
                path: p.clone(),
                before: Some(e.clone()),
                after: None,
            });
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn entry() -> impl Strategy<Value = Entry> {
        (0..3u8, 0u32..0o777, 0i64..5, 0u8..4).prop_map(|(k, mode, mtime, content)| {
            let kind = [EntryKind::File, EntryKind::Directory, EntryKind::Symlink][k as usize];
            Entry {
                kind,
                mode,
                mtime_ms: mtime,
                hash: (kind == EntryKind::File).then(|| format!("{content:064}")),
                size: if kind == EntryKind::File {
                    content as u64
                } else {
                    0
                },
                target: (kind == EntryKind::Symlink).then(|| format!("t{content}")),
            }
        })
    }

    fn manifest() -> impl Strategy<Value = Manifest> {
        proptest::collection::btree_map("/[a-d]{1,2}", entry(), 0..6)
    }

    proptest! {
        /// Applying the diff to the base gives the staged manifest, and only differing paths
        /// are touched, each once.
        #[test]
        fn diff_applies(base in manifest(), staged in manifest()) {
            let touched = diff(&base, &staged);
            let mut applied = base.clone();
            for t in &touched {
                prop_assert_eq!(base.get(&t.path), t.before.as_ref());
                prop_assert_ne!(&t.before, &t.after);
                match &t.after {
                    Some(e) => applied.insert(t.path.clone(), e.clone()),
                    None => applied.remove(&t.path),
                };
            }
            prop_assert_eq!(applied, staged);
            let paths: std::collections::BTreeSet<_> = touched.iter().map(|t| &t.path).collect();
            prop_assert_eq!(paths.len(), touched.len());
        }
    }

    #[test]
    fn user_folders() {
        assert!(valid_user_folder("2b7e1c4e-0f5a-4c8e-9a52-0c1d3e5f7a9b"));
        assert!(!valid_user_folder(""));
        assert!(!valid_user_folder("a/b"));
        assert!(!valid_user_folder(".."));
        assert!(!valid_user_folder(&"a".repeat(129)));
    }
}

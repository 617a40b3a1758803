//! The one way to open a workspace: [`Workspace::builder`] over a transport the host already
//! holds, or [`Workspace::builder_from_request`] over an incoming request whose session is
//! verified first (see [`crate::auth`]). Both take the same options ([`Limits`], a
//! [`DocumentCodec`]) and end in `create()` or `open(id)`.
//!
//! ```no_run
//! # async fn demo(transport: std::sync::Arc<dyn supabash::Transport>) -> supabash::Result<()> {
//! use supabash::{Limits, Workspace};
//! let ws = Workspace::builder(transport.clone()).create().await?;
//! let again = Workspace::builder(transport)
//!     .limits(Limits::default().with_max_files(500))
//!     .open(ws.id())
//!     .await?;
//! # let _ = again; Ok(()) }
//! ```

use crate::auth::{Session, SupabaseConfig};
use crate::codec::DocumentCodec;
use crate::documents::StoredFile;
use crate::error::Result;
use crate::manifests::ManifestCache;
use crate::observe::{OperationEvent, OperationObserver};
use crate::transport::call;
use crate::tree::{BaseEntry, DirectorySource, Listing};
use crate::{Limits, Transport, Workspace};
use reqwest::header::HeaderMap;
use std::sync::Arc;
use supabash_core::rpc::listing::ListDirectory;
use supabash_core::rpc::DirectoryPage;

/// How `open` loads the base tree.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum OpenMode {
    /// Lists the root first (with the tree's size): a tree of at most [`EAGER_MAX_FILES`]
    /// files then loads its whole manifest, a larger one opens lazily. The environment
    /// variable `SUPABASH_OPEN_MODE` (`eager` or `lazy`) overrides the choice, so a test suite
    /// can run in either mode.
    #[default]
    Auto,
    /// The whole manifest, in one request.
    Eager,
    /// The root's listing; every other directory the first time something in it is touched.
    Lazy,
    /// As [`OpenMode::Auto`], with a threshold of its own: a tree of at most this many files
    /// loads whole (a mount uses its file limit, so a tree it could hold is listed in one
    /// request rather than a directory at a time).
    EagerUpTo(u64),
}

/// The largest tree [`OpenMode::Auto`] loads whole.
pub const EAGER_MAX_FILES: i64 = 2_000;

impl OpenMode {
    /// `Auto` with the environment's override applied.
    fn resolved(self) -> OpenMode {
        match (self, std::env::var("SUPABASH_OPEN_MODE").as_deref()) {
            (OpenMode::Auto | OpenMode::EagerUpTo(_), Ok("eager")) => OpenMode::Eager,
            (OpenMode::Auto | OpenMode::EagerUpTo(_), Ok("lazy")) => OpenMode::Lazy,
            (mode, _) => mode,
        }
    }
}

/// A base opened from its root listing.
pub(crate) struct LazyBase {
    pub revision: String,
    pub root: Listing,
    /// Files and rendered bytes of the whole tree.
    pub totals: (u64, u64),
    pub redaction_epoch: i64,
    pub restore_floor: Option<i64>,
    /// The workspace stores plain files only.
    pub files_only: bool,
}

/// Lists a workspace's directories over a transport.
pub(crate) struct RemoteDirectories {
    pub transport: Arc<dyn Transport>,
    pub workspace_id: String,
}

impl RemoteDirectories {
    /// One page of `dir` at `revision` (default: the head).
    async fn page(
        &self,
        dir: &str,
        revision: Option<&str>,
        cursor: Option<String>,
        totals: bool,
    ) -> Result<DirectoryPage> {
        let request = ListDirectory {
            workspace_id: self.workspace_id.clone(),
            path: dir.to_owned(),
            revision: revision.map(str::to_owned),
            cursor,
            totals: totals.then_some(true),
            ..Default::default()
        };
        call(self.transport.as_ref(), &request).await
    }

    /// The rest of a listing whose first page is `page`, pinned to its revision.
    async fn complete(&self, mut page: DirectoryPage) -> Result<Listing> {
        let mut listing = Listing::default();
        loop {
            for f in page.files {
                listing
                    .files
                    .push(BaseEntry::from_stored(StoredFile::try_from(f)?)?);
            }
            listing.directories.extend(page.directories);
            for d in page.directory_entries {
                listing
                    .directory_entries
                    .push(BaseEntry::from_stored(StoredFile::try_from(d)?)?);
            }
            let Some(cursor) = page.next_cursor else {
                return Ok(listing);
            };
            page = self
                .page(&page.path, page.revision.as_deref(), Some(cursor), false)
                .await?;
        }
    }

    /// The base `mode` opens from the root listing, or `None` when the whole manifest should
    /// be loaded instead (an eager open, a small tree, an empty workspace).
    pub(crate) async fn lazy_base(&self, mode: OpenMode) -> Result<Option<LazyBase>> {
        let mode = mode.resolved();
        if mode == OpenMode::Eager {
            return Ok(None);
        }
        let first = self.page("/", None, None, true).await?;
        let Some(revision) = first.revision.clone() else {
            return Ok(None);
        };
        let files = first.tree_files.unwrap_or(0);
        let bytes = first.tree_bytes.unwrap_or(0);
        // A root page holding the whole tree is as good as the manifest.
        let whole = first.directories.is_empty() && first.next_cursor.is_none();
        let most = match mode {
            OpenMode::EagerUpTo(n) => i64::try_from(n).unwrap_or(i64::MAX),
            _ => EAGER_MAX_FILES,
        };
        if mode != OpenMode::Lazy && !whole && files <= most {
            return Ok(None);
        }
        let (redaction_epoch, restore_floor) = (first.redaction_epoch, first.restore_floor);
        let files_only = first.files_only;
        Ok(Some(LazyBase {
            revision,
            root: self.complete(first).await?,
            totals: (files.max(0) as u64, bytes.max(0) as u64),
            redaction_epoch,
            restore_floor,
            files_only,
        }))
    }
}

#[async_trait::async_trait]
impl DirectorySource for RemoteDirectories {
    async fn list(&self, revision: &str, dir: &str) -> Result<Listing> {
        let first = self.page(dir, Some(revision), None, false).await?;
        self.complete(first).await
    }
}

/// Opens or creates a workspace. `S` is where it comes from: a transport the host holds
/// ([`Workspace::builder`]) or an incoming request ([`Workspace::builder_from_request`]).
#[must_use = "a builder does nothing until `create` or `open` is awaited"]
#[derive(Clone)]
pub struct WorkspaceBuilder<S = Arc<dyn Transport>> {
    source: S,
    limits: Limits,
    codec: Option<Arc<dyn DocumentCodec>>,
    observer: Option<OperationObserver>,
    actor: Option<String>,
    mode: OpenMode,
    manifests: Option<ManifestCache>,
    files_only: bool,
}

/// The source of a [`WorkspaceBuilder`] made by [`Workspace::builder_from_request`].
#[derive(Clone, Copy)]
pub struct Request<'a> {
    headers: &'a HeaderMap,
    config: &'a SupabaseConfig,
}

impl Workspace {
    /// Starts opening a workspace over `transport` (default [`Limits`], [`crate::PlainCodec`]).
    pub fn builder(transport: Arc<dyn Transport>) -> WorkspaceBuilder {
        WorkspaceBuilder::new(transport)
    }

    /// Starts opening a workspace for an incoming request: `create`/`open` first verify its
    /// session (exactly one `Authorization: Bearer`, checked as `config.verifier` says), then
    /// reach PostgREST as that user. The database refuses a workspace the user does not own.
    pub fn builder_from_request<'a>(
        headers: &'a HeaderMap,
        config: &'a SupabaseConfig,
    ) -> WorkspaceBuilder<Request<'a>> {
        WorkspaceBuilder::new(Request { headers, config })
    }
}

impl<S> WorkspaceBuilder<S> {
    fn new(source: S) -> Self {
        WorkspaceBuilder {
            source,
            limits: Limits::default(),
            codec: None,
            observer: None,
            actor: None,
            mode: OpenMode::Auto,
            manifests: None,
            files_only: false,
        }
    }

    /// `create` makes a workspace that stores plain files only (the seed's text-only
    /// behaviour): a commit holding a symbolic link, a directory entry or a file mode other
    /// than 0o644 is refused whole with `UNSUPPORTED_CONTENT`, never dropped. Fixed at
    /// creation; forks inherit it; [`Workspace::capabilities`] reports it. Needs a 0.6.0
    /// database (`SCHEMA_OUTDATED` before). Not used by `open`.
    pub fn files_only(mut self, files_only: bool) -> Self {
        self.files_only = files_only;
        self
    }

    /// How `open` loads the tree (default [`OpenMode::Auto`]).
    pub fn open_mode(mut self, mode: OpenMode) -> Self {
        self.mode = mode;
        self
    }

    /// Keeps the manifest `open` loads in `cache`, and opens from the one it keeps plus the
    /// changes since (one call) when it has one: a reopen costs what changed. Not with
    /// [`OpenMode::Lazy`], which never loads a whole manifest.
    pub fn manifest_cache(mut self, cache: ManifestCache) -> Self {
        self.manifests = Some(cache);
        self
    }

    /// The client limits (default [`Limits::default`]).
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Splits staged files into body and metadata with `codec` when committing and diffing
    /// (default [`crate::PlainCodec`]). Reads always show the server's rendering.
    pub fn codec(mut self, codec: Arc<dyn DocumentCodec>) -> Self {
        self.codec = Some(codec);
        self
    }

    /// Calls `observer` once per finished operation with an [`OperationEvent`]: kind,
    /// duration, outcome, counts, replay and conflict flags, never a path, id or content. A
    /// panicking observer changes nothing.
    pub fn on_operation(
        mut self,
        observer: impl Fn(&OperationEvent) + Send + Sync + 'static,
    ) -> Self {
        self.observer = Some(Arc::new(observer));
        self
    }

    /// The actor recorded on a discarded session's audit records (default
    /// [`crate::audit::DEFAULT_DISCARD_ACTOR`]; a delegated grant's subject wins).
    pub fn audit_actor(mut self, actor: impl Into<String>) -> Self {
        self.actor = Some(actor.into());
        self
    }

    fn apply(&self, ws: Workspace) -> Workspace {
        let ws = match &self.codec {
            Some(codec) => ws.with_codec(codec.clone()),
            None => ws,
        };
        if let Some(actor) = &self.actor {
            ws.audit_queue().set_actor(actor.clone());
        }
        match &self.observer {
            Some(observer) => ws.with_observer(observer.clone()),
            None => ws,
        }
    }
}

impl WorkspaceBuilder {
    /// The transport workspaces are opened over.
    pub(crate) fn transport(&self) -> &Arc<dyn Transport> {
        &self.source
    }

    /// Creates a new, empty workspace owned by the caller and opens it.
    pub async fn create(self) -> Result<Workspace> {
        let ws =
            Workspace::create(self.source.clone(), self.limits.clone(), self.files_only).await?;
        Ok(self.apply(ws))
    }

    /// Opens a workspace the caller owns, pinned to its current head. Bodies load lazily.
    pub async fn open(self, workspace_id: &str) -> Result<Workspace> {
        let ws = Workspace::open_as(
            self.source.clone(),
            workspace_id,
            self.limits.clone(),
            self.mode,
            self.manifests.as_ref(),
        )
        .await?;
        Ok(self.apply(ws))
    }
}

impl WorkspaceBuilder<Request<'_>> {
    /// Verifies the request's session and creates a workspace owned by that user.
    pub async fn create(self) -> Result<(Session, Workspace)> {
        let Request { headers, config } = self.source;
        let (session, ws) =
            Workspace::create_from_request(headers, config, self.limits.clone(), self.files_only)
                .await?;
        Ok((session, self.apply(ws)))
    }

    /// Verifies the request's session, then opens `workspace_id` as that user.
    pub async fn open(self, workspace_id: &str) -> Result<(Session, Workspace)> {
        let Request { headers, config } = self.source;
        let (session, ws) =
            Workspace::open_from_request(headers, config, workspace_id, self.limits.clone())
                .await?;
        Ok((session, self.apply(ws)))
    }
}

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
use crate::error::Result;
use crate::manifests::ManifestCache;
use crate::observe::{OperationEvent, OperationObserver};
use crate::{Limits, Transport, Workspace};
use reqwest::header::HeaderMap;
use std::sync::Arc;

pub use crate::workspace::remote::{OpenMode, EAGER_MAX_FILES};

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

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
use crate::{Limits, Transport, Workspace};
use reqwest::header::HeaderMap;
use std::sync::Arc;

/// Options shared by both builders.
#[derive(Clone, Default)]
struct Options {
    limits: Limits,
    codec: Option<Arc<dyn DocumentCodec>>,
}

impl Options {
    fn apply(&self, ws: Workspace) -> Workspace {
        match &self.codec {
            Some(codec) => ws.with_codec(codec.clone()),
            None => ws,
        }
    }
}

/// Opens or creates a workspace over a transport. Made by [`Workspace::builder`].
#[must_use = "a builder does nothing until `create` or `open` is awaited"]
#[derive(Clone)]
pub struct WorkspaceBuilder {
    transport: Arc<dyn Transport>,
    options: Options,
}

impl Workspace {
    /// Starts opening a workspace over `transport` (default [`Limits`], [`crate::PlainCodec`]).
    pub fn builder(transport: Arc<dyn Transport>) -> WorkspaceBuilder {
        WorkspaceBuilder {
            transport,
            options: Options::default(),
        }
    }

    /// Starts opening a workspace for an incoming request: `create`/`open` first verify its
    /// session (exactly one `Authorization: Bearer`, checked as `config.verifier` says), then
    /// reach PostgREST as that user. The database refuses a workspace the user does not own.
    pub fn builder_from_request<'a>(
        headers: &'a HeaderMap,
        config: &'a SupabaseConfig,
    ) -> RequestWorkspaceBuilder<'a> {
        RequestWorkspaceBuilder {
            headers,
            config,
            options: Options::default(),
        }
    }
}

impl WorkspaceBuilder {
    /// The client limits (default [`Limits::default`]).
    pub fn limits(mut self, limits: Limits) -> Self {
        self.options.limits = limits;
        self
    }

    /// Splits staged files into body and metadata with `codec` when committing and diffing
    /// (default [`crate::PlainCodec`]). Reads always show the server's rendering.
    pub fn codec(mut self, codec: Arc<dyn DocumentCodec>) -> Self {
        self.options.codec = Some(codec);
        self
    }

    /// Creates a new, empty workspace owned by the caller and opens it.
    pub async fn create(self) -> Result<Workspace> {
        let ws = Workspace::create(self.transport, self.options.limits.clone()).await?;
        Ok(self.options.apply(ws))
    }

    /// Opens a workspace the caller owns, pinned to its current head. Bodies load lazily.
    pub async fn open(self, workspace_id: &str) -> Result<Workspace> {
        let ws = Workspace::open(self.transport, workspace_id, self.options.limits.clone()).await?;
        Ok(self.options.apply(ws))
    }
}

/// Opens or creates a workspace for an incoming request, returning the verified [`Session`]
/// with it. Made by [`Workspace::builder_from_request`].
#[must_use = "a builder does nothing until `create` or `open` is awaited"]
pub struct RequestWorkspaceBuilder<'a> {
    headers: &'a HeaderMap,
    config: &'a SupabaseConfig,
    options: Options,
}

impl RequestWorkspaceBuilder<'_> {
    /// The client limits (default [`Limits::default`]).
    pub fn limits(mut self, limits: Limits) -> Self {
        self.options.limits = limits;
        self
    }

    /// Splits staged files into body and metadata with `codec` (see
    /// [`WorkspaceBuilder::codec`]).
    pub fn codec(mut self, codec: Arc<dyn DocumentCodec>) -> Self {
        self.options.codec = Some(codec);
        self
    }

    /// Verifies the request's session and creates a workspace owned by that user.
    pub async fn create(self) -> Result<(Session, Workspace)> {
        let (session, ws) =
            Workspace::create_from_request(self.headers, self.config, self.options.limits.clone())
                .await?;
        Ok((session, self.options.apply(ws)))
    }

    /// Verifies the request's session, then opens `workspace_id` as that user.
    pub async fn open(self, workspace_id: &str) -> Result<(Session, Workspace)> {
        let (session, ws) = Workspace::open_from_request(
            self.headers,
            self.config,
            workspace_id,
            self.options.limits.clone(),
        )
        .await?;
        Ok((session, self.options.apply(ws)))
    }
}

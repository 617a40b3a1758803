//! supabash client: the staged tree an agent edits, the transports that reach the supabash
//! RPCs (PostgREST over HTTP, or Postgres directly for trusted hosts), and the host's
//! workspace API (commit, history, diff, restore, checkpoints, purge, leases), the
//! [`HostWorkspace`] trait a host writes against once for every backend, and the [`manager`]
//! that hands leased workspaces out to a host's sessions.
//!
//! Layering: `supabash_core` rules ← [`tree`] ← [`transport`] ← [`workspace`].

#![forbid(unsafe_code)]

pub mod audit;
pub mod auth;
pub mod cache;
pub mod capability;
pub mod codec;
pub mod delegated;
pub mod disk;
pub mod documents;
pub mod error;
mod exclude;
pub mod host_api;
pub mod limits;
pub mod manager;
pub mod manifests;
pub mod observe;
pub mod open;
mod rpc_error;
mod setters;
pub mod transport;
pub mod tree;
pub mod watch;
pub mod workspace;

#[cfg(feature = "storage")]
pub mod storage;

pub use codec::{DocumentCodec, PlainCodec};
#[cfg(feature = "frontmatter")]
pub use codec::{FrontmatterCodec, MetadataValidator, ValidatedFrontmatterCodec};
pub use delegated::{DelegatedWorkspace, Delegation};
pub use error::{Result, SupabashError};
pub use host_api::HostWorkspace;
pub use limits::Limits;
pub use manager::{ManagerEvent, ManagerOptions, WorkspaceHandle, WorkspaceManager};
pub use manifests::ManifestCache;
pub use observe::{EventOutcome, OperationEvent};
pub use open::{OpenMode, Request, WorkspaceBuilder};
pub use supabash_core::ErrorCode;
pub use transport::{PostgresTransport, PostgrestTransport, Transport};
pub use tree::{Errno, FsError, StagedTree};
pub use workspace::Workspace;

//! What a workspace's staged tree loads over the transport: bodies ([`RemoteSource`]), directory
//! listings ([`RemoteDirectories`]), and how an open chooses between the whole manifest and a
//! lazily listed root ([`OpenMode`]).

use crate::documents::StoredFile;
use crate::error::Result;
use crate::transport::{call, Transport};
use crate::tree::{BaseEntry, BodySource, DirectorySource, Listing, ServerGrep};
use std::sync::Arc;
use supabash_core::rpc::listing::ListDirectory;
use supabash_core::rpc::requests as rq;
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

/// Loads and searches a workspace's bodies over a transport.
pub(super) struct RemoteSource {
    transport: Arc<dyn Transport>,
    workspace_id: String,
}

impl RemoteSource {
    /// The bodies of `workspace_id` over `transport`.
    pub(super) fn new(transport: &Arc<dyn Transport>, workspace_id: &str) -> Self {
        RemoteSource {
            transport: transport.clone(),
            workspace_id: workspace_id.to_owned(),
        }
    }
}

#[async_trait::async_trait]
impl BodySource for RemoteSource {
    async fn load(&self, revision: &str, path: &str) -> Result<StoredFile> {
        let request = rq::LoadDocument {
            workspace_id: self.workspace_id.clone(),
            path: path.to_owned(),
            revision: Some(revision.to_owned()),
            delegated_grant: None,
        };
        StoredFile::try_from(call(self.transport.as_ref(), &request).await?.file)
    }

    /// `supabash_load_documents`, at most [`rq::MAX_DOCUMENTS_PER_CALL`] paths a request;
    /// tombstones (redacted versions) are left out, as paths the revision lacks are.
    async fn load_many(&self, revision: &str, paths: &[String]) -> Result<Vec<StoredFile>> {
        let mut files = Vec::with_capacity(paths.len());
        for chunk in paths.chunks(rq::MAX_DOCUMENTS_PER_CALL) {
            let request = rq::LoadDocuments {
                workspace_id: self.workspace_id.clone(),
                paths: chunk.to_vec(),
                revision: Some(revision.to_owned()),
                delegated_grant: None,
            };
            let answer = call(self.transport.as_ref(), &request).await?;
            files.extend(
                answer
                    .files
                    .into_iter()
                    .filter(|f| !f.redacted)
                    .map(StoredFile::try_from)
                    .collect::<Result<Vec<_>>>()?,
            );
        }
        Ok(files)
    }

    /// `supabash_grep` of one page.
    async fn grep(
        &self,
        revision: &str,
        request: ServerGrep,
    ) -> Option<Result<supabash_core::rpc::grep::GrepPage>> {
        let request = supabash_core::rpc::grep::Grep {
            workspace_id: self.workspace_id.clone(),
            pattern: request.pattern,
            revision: Some(revision.to_owned()),
            paths: request.paths,
            ignore_case: Some(request.ignore_case),
            max_matches: Some(request.max_matches),
            cursor: request.cursor,
            ..Default::default()
        };
        Some(call(self.transport.as_ref(), &request).await)
    }
}

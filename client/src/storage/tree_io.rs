//! Between the staged tree and Storage manifests: a snapshot of every committable entry (files,
//! directories, symbolic links, with modes and mtimes at millisecond precision), installing a
//! manifest as the tree's base (files stay lazy), and the source that loads lazy bodies from
//! Storage and has them verified against the recorded SHA-256.

use super::api::StorageApi;
use super::keys::Keys;
use super::layout::Locations;
use super::model::{from_ms, to_ms, Entry, EntryKind, Manifest};
use super::store;
use crate::documents::StoredFile;
use crate::error::{Result, SupabashError};
use crate::tree::{committable, BaseFile, Body, BodySource, Lazy, Meta, Node, StagedTree};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use supabash_core::path;
use supabash_core::ErrorCode;

/// The revision name lazy bodies carry while no revision is published (a tree read from the
/// visible objects): their bodies load from the visible objects themselves.
pub const UNPUBLISHED: &str = "";

/// Every committable entry of the staged tree, and the body of each file.
pub fn snapshot(tree: &StagedTree) -> Result<(Manifest, BTreeMap<String, Body>)> {
    let inner = tree.lock();
    let mut manifest = Manifest::new();
    let mut bodies = BTreeMap::new();
    for (p, node) in &inner.nodes {
        if !committable(p) {
            continue;
        }
        let entry = match node {
            Node::File { body, meta } => {
                bodies.insert(p.clone(), body.clone());
                Entry {
                    kind: EntryKind::File,
                    mode: meta.mode,
                    mtime_ms: to_ms(meta.mtime),
                    hash: Some(body.content_hash()),
                    size: body.size(),
                    target: None,
                }
            }
            Node::Dir { meta } => Entry {
                kind: EntryKind::Directory,
                mode: meta.mode,
                mtime_ms: to_ms(meta.mtime),
                hash: None,
                size: 0,
                target: None,
            },
            Node::Symlink { target, meta } => {
                if let Err(e) = supabash_core::posix::check_target(p, target) {
                    return Err(
                        SupabashError::new(ErrorCode::UnsupportedContent, e.to_string())
                            .with_path(p),
                    );
                }
                Entry {
                    kind: EntryKind::Symlink,
                    mode: meta.mode,
                    mtime_ms: to_ms(meta.mtime),
                    hash: None,
                    size: 0,
                    target: Some(target.clone()),
                }
            }
        };
        manifest.insert(p.clone(), entry);
    }
    Ok((manifest, bodies))
}

/// Makes `manifest` (of `revision`) the tree's base and its staged state: every committable
/// node is replaced, files become lazy references. Shell-owned paths stay.
pub fn install(tree: &StagedTree, revision: &str, manifest: &Manifest) -> Result<()> {
    put(tree, revision, manifest, true)
}

/// Stages `manifest` (of `revision`) over the base without changing the base (restore).
pub fn stage(tree: &StagedTree, revision: &str, manifest: &Manifest) -> Result<()> {
    put(tree, revision, manifest, false)
}

fn put(tree: &StagedTree, revision: &str, manifest: &Manifest, as_base: bool) -> Result<()> {
    let mut inner = tree.lock();
    StagedTree::check_idle(&inner)?;
    inner.nodes.retain(|p, _| !committable(p));
    let mut base = BTreeMap::new();
    for (p, e) in manifest {
        let meta = Meta {
            mode: e.mode,
            mtime: from_ms(e.mtime_ms),
        };
        // The base holds every entry (a link by its target, a directory by its kind), as the
        // staged tree's change set compares them.
        base.insert(
            p.clone(),
            BaseFile {
                content_hash: match e.kind {
                    EntryKind::File => e.hash.clone().unwrap_or_default(),
                    EntryKind::Symlink => supabash_core::hash::sha256_hex(
                        e.target.clone().unwrap_or_default().as_bytes(),
                    ),
                    EntryKind::Directory => String::new(),
                },
                size: e.size,
                kind: e.kind,
                mode: e.mode,
                mtime_ns: e.mtime_ms.saturating_mul(1_000_000),
                target: e.target.clone(),
            },
        );
        let node = match e.kind {
            EntryKind::File => Node::File {
                body: Body::Lazy(Lazy {
                    revision: revision.to_owned(),
                    path: p.clone(),
                    content_hash: e.hash.clone().unwrap_or_default(),
                    size: e.size,
                }),
                meta,
            },
            EntryKind::Directory => Node::Dir { meta },
            EntryKind::Symlink => Node::Symlink {
                target: e.target.clone().unwrap_or_default(),
                meta,
            },
        };
        let mut dir = path::parent(p);
        while dir != "/" && !inner.nodes.contains_key(dir) {
            inner.nodes.insert(dir.to_owned(), Node::dir());
            dir = path::parent(dir);
        }
        inner.nodes.insert(p.clone(), node);
    }
    if as_base {
        inner.base = std::sync::Arc::new(base);
        inner.base_revision = (revision != UNPUBLISHED).then(|| revision.to_owned());
    }
    Ok(())
}

/// Loads file bodies of known manifests: by range from their revision pack, or from
/// `objects/<sha256>`, for published revisions; from the visible object for [`UNPUBLISHED`].
/// The staged tree verifies them.
pub struct Bodies {
    api: StorageApi,
    keys: Keys,
    /// Each registered revision's manifest and where its packed bodies lie.
    manifests: Mutex<HashMap<String, Registered>>,
}

/// A registered revision: its manifest and where its packed bodies lie.
type Registered = (Arc<Manifest>, Arc<Locations>);

impl Bodies {
    pub fn new(api: StorageApi, keys: Keys) -> Self {
        Bodies {
            api,
            keys,
            manifests: Mutex::default(),
        }
    }

    /// Makes the files of `manifest` loadable as `revision`, packed ones at `locations`.
    pub fn register(&self, revision: &str, manifest: Arc<Manifest>, locations: Arc<Locations>) {
        self.manifests
            .lock()
            .expect("bodies lock")
            .insert(revision.to_owned(), (manifest, locations));
    }

    /// The raw bytes of the file at `path` in `revision` (not verified).
    pub async fn fetch(&self, revision: &str, path: &str) -> Result<(Entry, Vec<u8>)> {
        let (entry, loc) = {
            let manifests = self.manifests.lock().expect("bodies lock");
            let known = manifests
                .get(revision)
                .and_then(|(m, l)| Some((m.get(path)?, l)))
                .filter(|(e, _)| e.kind == EntryKind::File);
            let Some((entry, locations)) = known else {
                return Err(SupabashError::new(
                    ErrorCode::NotFound,
                    "no such file in the revision",
                )
                .with_path(path));
            };
            let loc = entry.hash.as_ref().and_then(|h| locations.get(h).cloned());
            (entry.clone(), loc)
        };
        let hash = entry.hash.clone().unwrap_or_default();
        let bytes = if revision == UNPUBLISHED {
            self.api.download(&self.keys.entry(path)).await?
        } else {
            store::body(&self.api, &self.keys, &hash, loc.as_ref()).await?
        };
        let bytes = bytes.ok_or_else(|| {
            SupabashError::new(ErrorCode::HistoryCorruption, "a file body is missing")
                .with_path(path)
        })?;
        Ok((entry, bytes))
    }
}

#[async_trait::async_trait]
impl BodySource for Bodies {
    async fn load(&self, revision: &str, path: &str) -> Result<StoredFile> {
        let (entry, bytes) = self.fetch(revision, path).await?;
        let hash = entry.hash.unwrap_or_default();
        Ok(StoredFile {
            path: path.to_owned(),
            content_hash: hash.clone(),
            size: entry.size,
            body_hash: hash,
            body_size: entry.size,
            metadata: serde_json::Value::Null,
            body: Some(bytes),
            kind: entry.kind,
            mode: entry.mode,
            mtime_ns: Some(entry.mtime_ms.saturating_mul(1_000_000)),
        })
    }
}

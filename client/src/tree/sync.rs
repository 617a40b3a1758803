//! What syncing the staged tree with a directory (the `disk` module) needs from the tree: a
//! listing of every committable node, reads that leave the body cache as it was, and edits
//! that are undone together when one of them fails.

use super::{committable, Body, Node, StagedTree};
use crate::error::{Result, SupabashError};
use std::collections::BTreeMap;
use std::sync::Arc;
use supabash_core::ErrorCode;

/// One committable node of the staged tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Entry {
    File {
        content_hash: String,
        size: u64,
        mode: u32,
        mtime_ns: i64,
    },
    Dir,
    Symlink {
        target: String,
    },
}

/// The nodes of a tree as they were, to put back after a failed sync.
pub(crate) struct SavedNodes(BTreeMap<String, Node>);

impl StagedTree {
    /// Every committable path with what it holds, in path order (parents before children).
    pub(crate) fn entries(&self) -> Vec<(String, Entry)> {
        let inner = self.lock();
        inner
            .nodes
            .iter()
            .filter(|(p, _)| committable(p))
            .map(|(p, node)| {
                let entry = match node {
                    Node::File { body, meta } => Entry::File {
                        content_hash: body.content_hash(),
                        size: body.size(),
                        mode: meta.mode,
                        mtime_ns: super::to_ns(meta.mtime),
                    },
                    Node::Dir { .. } => Entry::Dir,
                    Node::Symlink { target, .. } => Entry::Symlink {
                        target: target.clone(),
                    },
                };
                (p.clone(), entry)
            })
            .collect()
    }

    /// The bytes of every committable file the tree holds as loaded (a lazily opened tree
    /// counts only what it has listed): what writing it out to a directory takes.
    pub fn file_bytes(&self) -> u64 {
        let inner = self.lock();
        inner
            .nodes
            .iter()
            .filter(|(p, _)| committable(p))
            .map(|(_, node)| match node {
                Node::File { body, .. } => body.size(),
                _ => 0,
            })
            .sum()
    }

    /// The bytes of the file at the canonical path `p`, verified, without keeping a lazy body
    /// in the tree (so writing a whole tree out does not load it all into memory); the host
    /// cache, when the tree has one, is read first and keeps what is fetched.
    pub(crate) async fn read_transient(&self, p: &str) -> Result<Arc<Vec<u8>>> {
        let body = match self.lock().nodes.get(p) {
            Some(Node::File { body, .. }) => body.clone(),
            _ => return Err(SupabashError::new(ErrorCode::NotFound, "no such file").with_path(p)),
        };
        let lazy = match &body {
            Body::Bytes(b) => return Ok(b.clone()),
            Body::Lazy(lazy) => lazy,
        };
        if let Some(bytes) = self.lock().loaded.get(lazy) {
            return Ok(bytes.clone());
        }
        let source = self.source.as_ref().ok_or_else(|| {
            SupabashError::new(ErrorCode::Backend, "no source for lazy bodies").with_path(p)
        })?;
        if let Some(bytes) = self.host_cache().and_then(|c| c.get(&lazy.content_hash)) {
            if bytes.len() as u64 == lazy.size {
                return Ok(Arc::new(bytes));
            }
        }
        let stored = source.load(&lazy.revision, &lazy.path).await?;
        let bytes = stored.verified(Some((&lazy.content_hash, lazy.size)))?;
        if let Some(cache) = self.host_cache() {
            cache.put(&lazy.content_hash, &bytes);
        }
        Ok(Arc::new(bytes))
    }

    /// Total size of the base revision's files, in bytes.
    pub(crate) fn base_bytes(&self) -> u64 {
        self.lock().base.values().map(|f| f.size).sum()
    }

    /// The nodes as they are now (bodies are shared, not copied).
    pub(crate) fn save_nodes(&self) -> SavedNodes {
        SavedNodes(self.lock().nodes.clone())
    }

    /// Puts back nodes saved by [`Self::save_nodes`].
    pub(crate) fn restore_nodes(&self, saved: SavedNodes) {
        self.lock().nodes = saved.0;
    }
}

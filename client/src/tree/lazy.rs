//! Lazy directories: a tree opened from its root listing instead of its whole manifest. A
//! directory of the base whose children have not been listed yet is *unloaded*: it has its
//! node, and nothing below it is in the tree or its base. The first operation that touches a
//! path below it (or, for removals, renames and copies, anything in it) lists it through a
//! [`DirectorySource`]; its files become lazy files of the base and its subdirectories
//! unloaded in turn. Nothing under an unloaded directory has changed, so the change set
//! (staged tree against base) is the same as an eager tree's.

use super::{insert_parents, BaseEntry, Inner, Node, StagedTree};
use crate::error::{Result, SupabashError};
use std::collections::BTreeSet;
use std::sync::Arc;
use supabash_core::path;
use supabash_core::ErrorCode;

/// The direct children of one directory of a revision.
#[derive(Debug, Clone, Default)]
pub struct Listing {
    /// Files directly in it (canonical paths).
    pub files: Vec<BaseEntry>,
    /// Names of its subdirectories.
    pub directories: Vec<String>,
    /// The entries of those subdirectories that have their own (kind directory).
    pub directory_entries: Vec<BaseEntry>,
}

/// Lists directories of a pinned revision for a lazily opened tree.
#[async_trait::async_trait]
pub trait DirectorySource: Send + Sync {
    /// The direct children of directory `dir` in `revision` (every page).
    async fn list(&self, revision: &str, dir: &str) -> Result<Listing>;
}

/// Which unloaded directories an operation on a path needs listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reach {
    /// Those above the path (enough to know what the path itself is).
    Above,
    /// Those above and the path itself (enough to list it).
    Children,
    /// Those above, the path and everything below it (removing, moving, copying it).
    Subtree,
}

/// What a lazily opened tree has not listed yet.
#[derive(Debug, Default)]
pub(crate) struct Unloaded {
    /// Directories of the base whose children are not in the tree yet.
    pub dirs: BTreeSet<String>,
    /// Files and rendered bytes of the base below those directories (for the tree's limits).
    pub files: u64,
    pub bytes: u64,
}

/// Joins a directory and a child's name.
fn child(dir: &str, name: &str) -> String {
    if dir == "/" {
        format!("/{name}")
    } else {
        format!("{dir}/{name}")
    }
}

impl Inner {
    /// Adds a listed directory's children to the base and the tree.
    pub(super) fn add_listing(&mut self, dir: &str, listing: Listing) {
        let revision = self.base_revision.clone().unwrap_or_default();
        for f in listing.files {
            self.unloaded.files = self.unloaded.files.saturating_sub(1);
            self.unloaded.bytes = self.unloaded.bytes.saturating_sub(f.size);
            let (p, file) = f.base_file();
            insert_parents(&mut self.nodes, &p);
            self.nodes
                .entry(p.clone())
                .or_insert_with(|| file.node(&revision, &p));
            Arc::make_mut(&mut self.base).insert(p, file);
        }
        for name in listing.directories {
            let sub = child(dir, &name);
            insert_parents(&mut self.nodes, &sub);
            self.nodes.entry(sub.clone()).or_insert_with(Node::dir);
            self.unloaded.dirs.insert(sub);
        }
        for d in listing.directory_entries {
            self.unloaded.files = self.unloaded.files.saturating_sub(1);
            let (p, file) = d.base_file();
            if let Some(node) = self.nodes.get_mut(&p) {
                *node = file.node(&revision, &p);
            }
            Arc::make_mut(&mut self.base).insert(p, file);
        }
    }

    /// The first unloaded directory `reach` of `p` needs listed.
    fn first_unloaded(&self, p: &str, reach: Reach) -> Option<String> {
        if self.unloaded.dirs.is_empty() {
            return None;
        }
        let mut on_the_way = Vec::new();
        let mut dir = if reach == Reach::Above {
            path::parent(p)
        } else {
            p
        };
        while dir != "/" {
            on_the_way.push(dir);
            dir = path::parent(dir);
        }
        if let Some(d) = on_the_way
            .into_iter()
            .rev()
            .find(|d| self.unloaded.dirs.contains(*d))
        {
            return Some(d.to_owned());
        }
        if reach != Reach::Subtree {
            return None;
        }
        let prefix = if p == "/" {
            "/".to_owned()
        } else {
            format!("{p}/")
        };
        self.unloaded
            .dirs
            .range(prefix.clone()..)
            .next()
            .filter(|d| d.starts_with(&prefix))
            .cloned()
    }
}

impl StagedTree {
    /// Lists every unloaded directory that `reach` of canonical path `p` needs, so operations
    /// on `p` see the base as an eager tree would.
    pub(crate) async fn load_towards(&self, p: &str, reach: Reach) -> Result<()> {
        loop {
            let (dir, revision) = {
                let inner = self.lock();
                match inner.first_unloaded(p, reach) {
                    None => return Ok(()),
                    Some(d) => (d, inner.base_revision.clone().unwrap_or_default()),
                }
            };
            let source = self.directories.as_ref().ok_or_else(|| {
                SupabashError::new(ErrorCode::Backend, "no source for lazy directories")
                    .with_path(&dir)
            })?;
            let listing = source.list(&revision, &dir).await?;
            let mut inner = self.lock();
            // A concurrent load or a new base may have come first: then look again.
            if inner.base_revision.as_deref().unwrap_or_default() == revision
                && inner.unloaded.dirs.remove(&dir)
            {
                inner.add_listing(&dir, listing);
            }
        }
    }

    /// Lists every unloaded directory: the tree becomes as an eager open makes it.
    pub(crate) async fn load_all(&self) -> Result<()> {
        self.load_towards("/", Reach::Subtree).await
    }

    /// Whether directories of the base are still unloaded.
    pub fn is_partially_loaded(&self) -> bool {
        !self.lock().unloaded.dirs.is_empty()
    }
}

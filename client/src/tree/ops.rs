//! The filesystem operations of the staged tree, with POSIX-like errors. Symbolic links are
//! followed (at most 40 hops) by every operation except `lstat`, `readlink`, `rm`, `mv` and
//! `symlink`, which act on the link itself.

use super::errno::{posix, Errno, FsError, FsResult};
use super::{committable, insert_parents, Body, Inner, Node, Reach, StagedTree};
use crate::error::SupabashError;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::SystemTime;
use supabash_core::links::{self, Absolute, LinkError};
use supabash_core::path;
use supabash_core::ErrorCode;

/// What a path holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FileKind {
    File,
    Directory,
    Symlink,
}

/// The answer of `stat` and `lstat`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stat {
    pub kind: FileKind,
    /// Bytes of a file, length of a link target, 0 for a directory.
    pub size: u64,
    pub mode: u32,
    pub mtime: SystemTime,
}

/// One entry of `readdir`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    pub name: String,
    pub kind: FileKind,
}

/// A file's content held apart from its path (see [`StagedTree::detach`]): a reference, no
/// bytes are loaded until [`StagedTree::read_detached`] asks for them.
#[derive(Debug, Clone)]
pub struct Detached(Body);

impl Detached {
    /// The content's size in bytes.
    pub fn size(&self) -> u64 {
        self.0.size()
    }
}

fn kind_of(node: &Node) -> FileKind {
    match node {
        Node::File { .. } => FileKind::File,
        Node::Dir { .. } => FileKind::Directory,
        Node::Symlink { .. } => FileKind::Symlink,
    }
}

fn invalid_path(input: &str, e: path::PathError) -> FsError {
    SupabashError::new(ErrorCode::InvalidPath, format!("{input:?}: {e}"))
        .with_path(input)
        .into()
}

/// Every path strictly below `dir`.
fn descendants<'a>(
    nodes: &'a BTreeMap<String, Node>,
    dir: &str,
) -> impl Iterator<Item = (&'a String, &'a Node)> + 'a {
    let prefix = if dir == "/" {
        "/".to_owned()
    } else {
        format!("{dir}/")
    };
    nodes
        .range(prefix.clone()..)
        .take_while(move |(p, _)| p.starts_with(&prefix))
}

fn children<'a>(
    nodes: &'a BTreeMap<String, Node>,
    dir: &'a str,
) -> impl Iterator<Item = (&'a String, &'a Node)> + 'a {
    let skip = if dir == "/" { 1 } else { dir.len() + 1 };
    descendants(nodes, dir).filter(move |(p, _)| !p[skip..].contains('/'))
}

/// Resolves symbolic links in `p` (in the last segment too when `follow_last`) as the kernel
/// does (`supabash_core::links`: a `..` after a link applies to its target; an absolute target
/// is read from the workspace root).
fn follow(nodes: &BTreeMap<String, Node>, p: &str, follow_last: bool) -> FsResult<String> {
    links::resolve(p, follow_last, Absolute::FromRoot, |q| target_of(nodes, q)).map_err(|e| match e
    {
        LinkError::TooManyLinks => posix(Errno::ELOOP, "resolve", p),
        e => SupabashError::new(ErrorCode::InvalidPath, e.message(p))
            .with_path(p)
            .into(),
    })
}

fn target_of(nodes: &BTreeMap<String, Node>, p: &str) -> Option<String> {
    match nodes.get(p) {
        Some(Node::Symlink { target, .. }) => Some(target.clone()),
        _ => None,
    }
}

/// The links of `nodes` that do not resolve inside the tree (see `supabash_core::links`).
fn bad_links(nodes: &BTreeMap<String, Node>) -> BTreeMap<String, LinkError> {
    let all: BTreeMap<String, String> = nodes
        .keys()
        .filter_map(|p| target_of(nodes, p).map(|t| (p.clone(), t)))
        .collect();
    links::refused(&all, Absolute::FromRoot)
}

/// Refuses a change to the tree's links (from `saved` to `nodes`) that leaves a link leading
/// outside the workspace or into a loop where none did before: `INVALID_PATH` naming it.
fn check_links(saved: &BTreeMap<String, Node>, nodes: &BTreeMap<String, Node>) -> FsResult<()> {
    let after = bad_links(nodes);
    if after.is_empty() {
        return Ok(());
    }
    let before = bad_links(saved);
    match after.into_iter().find(|(p, _)| !before.contains_key(p)) {
        None => Ok(()),
        Some((p, e)) => Err(SupabashError::new(ErrorCode::InvalidPath, e.message(&p))
            .with_path(p)
            .into()),
    }
}

/// Checks the tree against its limits: file count, total bytes and path length of the
/// committable files, the size of every file (scratch paths included), and the total the whole
/// tree holds (every file and link target, scratch paths and paths kept out of commits
/// included: `max_file_system_bytes`).
fn check_limits(tree: &StagedTree, inner: &Inner) -> Result<(), SupabashError> {
    let limits = tree.limits();
    let (mut files, mut bytes, mut held) = (0usize, 0usize, 0usize);
    for (p, node) in &inner.nodes {
        match node {
            Node::File { body, .. } => {
                let size = body.size() as usize;
                limits.check_file(p, size)?;
                held = held.saturating_add(size);
                if committable(p) {
                    limits.check_path(p)?;
                    files += 1;
                    bytes += size;
                }
            }
            Node::Symlink { target, .. } => held = held.saturating_add(target.len()),
            Node::Dir { .. } => {}
        }
    }
    // A lazily opened tree counts what it has not listed yet as the server reported it.
    let unloaded = &inner.unloaded;
    limits.check_tree(
        files + unloaded.files as usize,
        bytes + unloaded.bytes as usize,
    )?;
    limits.check_file_system(held.saturating_add(unloaded.bytes as usize))
}

impl StagedTree {
    /// Checks the whole committable tree against the limits.
    pub(crate) fn check_limits(&self) -> Result<(), SupabashError> {
        check_limits(self, &self.lock())
    }

    fn canon(&self, input: &str) -> FsResult<String> {
        let p = path::resolve("/", input).map_err(|e| invalid_path(input, e))?;
        self.limits().check_path(&p)?;
        Ok(p)
    }

    /// Lists the unloaded directories an operation on `input` needs (see [`Reach`]), at the path
    /// and, through symbolic links, at what it resolves to. The operation itself reports a bad
    /// or missing path.
    async fn reach(&self, input: &str, follow_last: bool, reach: Reach) -> FsResult<()> {
        let Ok(canon) = self.canon(input) else {
            return Ok(());
        };
        let mut seen = canon.clone();
        self.load_towards(&seen, reach).await?;
        for _ in 0..links::MAX_FOLLOWS {
            let next = follow(&self.lock().nodes, &canon, follow_last);
            match next {
                Ok(next) if next != seen => {
                    self.load_towards(&next, reach).await?;
                    seen = next;
                }
                _ => break,
            }
        }
        Ok(())
    }

    /// The tree, locked for a change: refused while a commit is in flight, and with limits
    /// that make no sense (`INVALID_ARGUMENT`, see [`crate::Limits::validate`]).
    fn mutable(&self) -> FsResult<std::sync::MutexGuard<'_, Inner>> {
        self.limits().validate()?;
        let inner = self.lock();
        StagedTree::check_idle(&inner)?;
        Ok(inner)
    }

    /// Checks that the parent of `p` is an existing directory.
    fn parent_dir(inner: &Inner, p: &str, op: &'static str) -> FsResult<()> {
        let parent = path::parent(p);
        match inner.nodes.get(parent) {
            _ if parent == "/" => Ok(()),
            Some(Node::Dir { .. }) => Ok(()),
            Some(_) => Err(posix(Errno::ENOTDIR, op, p)),
            None => Err(posix(Errno::ENOENT, op, p)),
        }
    }

    fn body_at(&self, input: &str, op: &'static str) -> FsResult<Body> {
        let p = self.canon(input)?;
        let inner = self.lock();
        let p = follow(&inner.nodes, &p, true)?;
        match inner.nodes.get(&p) {
            Some(Node::File { body, .. }) => Ok(body.clone()),
            Some(_) => Err(posix(Errno::EISDIR, op, input)),
            None if p == "/" => Err(posix(Errno::EISDIR, op, input)),
            None => Err(posix(Errno::ENOENT, op, input)),
        }
    }

    /// Reads a file's bytes.
    pub async fn read(&self, p: &str) -> FsResult<Vec<u8>> {
        self.reach(p, true, Reach::Above).await?;
        let body = self.body_at(p, "open")?;
        Ok(self.bytes_of(&body).await?.as_ref().clone())
    }

    /// Reads a file's bytes without copying them (the buffer the tree holds).
    pub async fn read_shared(&self, p: &str) -> FsResult<Arc<Vec<u8>>> {
        let body = self.body_at(p, "open")?;
        Ok(self.bytes_of(&body).await?)
    }

    /// The content of the file at `p` as it is now, still readable with
    /// [`StagedTree::read_detached`] once the path is removed or replaced (a mount's file that
    /// is removed while a program holds it open). Loads nothing.
    pub fn detach(&self, p: &str) -> FsResult<Detached> {
        self.body_at(p, "open").map(Detached)
    }

    /// The bytes of a [`Detached`] content (loaded and verified if they were not yet).
    pub async fn read_detached(&self, content: &Detached) -> FsResult<Arc<Vec<u8>>> {
        Ok(self.bytes_of(&content.0).await?)
    }

    /// Reads a file as UTF-8 text (`EINVAL` when it is not).
    pub async fn read_text(&self, p: &str) -> FsResult<String> {
        String::from_utf8(self.read(p).await?).map_err(|_| posix(Errno::EINVAL, "read", p))
    }

    /// Creates or replaces a file.
    pub async fn write(&self, p: &str, data: impl Into<Vec<u8>>) -> FsResult<()> {
        self.reach(p, true, Reach::Above).await?;
        let data = data.into();
        let canon = self.canon(p)?;
        let mut inner = self.mutable()?;
        let target = follow(&inner.nodes, &canon, true)?;
        if target == "/" {
            return Err(posix(Errno::EISDIR, "open", p));
        }
        Self::parent_dir(&inner, &target, "open")?;
        let old = inner.nodes.get(&target).cloned();
        let meta = match &old {
            Some(Node::Dir { .. }) => return Err(posix(Errno::EISDIR, "open", p)),
            Some(Node::File { meta, .. }) => Some(*meta),
            _ => None,
        };
        let mut node = Node::file(Body::Bytes(Arc::new(data)));
        if let Some(meta) = meta {
            node.meta_mut().mode = meta.mode;
        }
        inner.nodes.insert(target.clone(), node);
        if let Err(e) = check_limits(self, &inner) {
            match old {
                Some(n) => inner.nodes.insert(target, n),
                None => inner.nodes.remove(&target),
            };
            return Err(e.into());
        }
        Ok(())
    }

    /// Appends to a file, creating it when missing.
    pub async fn append(&self, p: &str, data: impl AsRef<[u8]>) -> FsResult<()> {
        let mut bytes = match self.read(p).await {
            Ok(b) => b,
            Err(e) if e.errno() == Some(Errno::ENOENT) => Vec::new(),
            Err(e) => return Err(e),
        };
        bytes.extend_from_slice(data.as_ref());
        self.write(p, bytes).await
    }

    /// True when the path exists (following links).
    pub async fn exists(&self, p: &str) -> bool {
        if self.reach(p, true, Reach::Above).await.is_err() {
            return false;
        }
        let Ok(canon) = self.canon(p) else {
            return false;
        };
        let inner = self.lock();
        match follow(&inner.nodes, &canon, true) {
            Ok(t) => t == "/" || inner.nodes.contains_key(&t),
            Err(_) => false,
        }
    }

    fn stat_of(&self, p: &str, follow_last: bool) -> FsResult<Stat> {
        let canon = self.canon(p)?;
        let inner = self.lock();
        let target = follow(&inner.nodes, &canon, follow_last)?;
        if target == "/" {
            return Ok(Stat {
                kind: FileKind::Directory,
                size: 0,
                mode: 0o755,
                mtime: SystemTime::UNIX_EPOCH,
            });
        }
        let node = inner
            .nodes
            .get(&target)
            .ok_or_else(|| posix(Errno::ENOENT, "stat", p))?;
        let (size, meta) = match node {
            Node::File { body, meta } => (body.size(), meta),
            Node::Dir { meta } => (0, meta),
            Node::Symlink { target, meta } => (target.len() as u64, meta),
        };
        Ok(Stat {
            kind: kind_of(node),
            size,
            mode: meta.mode,
            mtime: meta.mtime,
        })
    }

    /// Stats a path, following links.
    pub async fn stat(&self, p: &str) -> FsResult<Stat> {
        self.reach(p, true, Reach::Above).await?;
        self.stat_of(p, true)
    }

    /// Stats a path itself (a link is reported as a link).
    pub async fn lstat(&self, p: &str) -> FsResult<Stat> {
        self.reach(p, false, Reach::Above).await?;
        self.stat_of(p, false)
    }

    /// Creates a directory (and its parents when `recursive`).
    pub async fn mkdir(&self, p: &str, recursive: bool) -> FsResult<()> {
        self.reach(p, true, Reach::Above).await?;
        let canon = self.canon(p)?;
        let mut inner = self.mutable()?;
        let target = follow(&inner.nodes, &canon, true)?;
        if target == "/" {
            return if recursive {
                Ok(())
            } else {
                Err(posix(Errno::EEXIST, "mkdir", p))
            };
        }
        match inner.nodes.get(&target) {
            Some(Node::Dir { .. }) if recursive => return Ok(()),
            Some(_) => return Err(posix(Errno::EEXIST, "mkdir", p)),
            None => {}
        }
        if recursive {
            let mut dir = path::parent(&target);
            while dir != "/" {
                match inner.nodes.get(dir) {
                    Some(Node::Dir { .. }) => break,
                    Some(_) => return Err(posix(Errno::ENOTDIR, "mkdir", p)),
                    None => dir = path::parent(dir),
                }
            }
            insert_parents(&mut inner.nodes, &target);
        } else {
            Self::parent_dir(&inner, &target, "mkdir")?;
        }
        inner.nodes.insert(target, Node::dir());
        Ok(())
    }

    /// Lists a directory, sorted by name, with entry kinds.
    pub async fn readdir(&self, p: &str) -> FsResult<Vec<DirEntry>> {
        self.reach(p, true, Reach::Children).await?;
        let canon = self.canon(p)?;
        let inner = self.lock();
        let dir = follow(&inner.nodes, &canon, true)?;
        match inner.nodes.get(&dir) {
            _ if dir == "/" => {}
            Some(Node::Dir { .. }) => {}
            Some(_) => return Err(posix(Errno::ENOTDIR, "scandir", p)),
            None => return Err(posix(Errno::ENOENT, "scandir", p)),
        }
        Ok(children(&inner.nodes, &dir)
            .map(|(child, node)| DirEntry {
                name: path::file_name(child).to_owned(),
                kind: kind_of(node),
            })
            .collect())
    }

    /// Removes a path. A non-empty directory needs `recursive`; `force` ignores a missing path.
    pub async fn rm(&self, p: &str, recursive: bool, force: bool) -> FsResult<()> {
        self.reach(p, false, Reach::Subtree).await?;
        let canon = self.canon(p)?;
        let mut inner = self.mutable()?;
        let target = follow(&inner.nodes, &canon, false)?;
        if target == "/" {
            return Err(posix(Errno::EINVAL, "rm", p));
        }
        match inner.nodes.get(&target) {
            None if force => return Ok(()),
            None => return Err(posix(Errno::ENOENT, "rm", p)),
            Some(Node::Dir { .. }) => {
                let inside: Vec<String> = descendants(&inner.nodes, &target)
                    .map(|(k, _)| k.clone())
                    .collect();
                if !inside.is_empty() && !recursive {
                    return Err(posix(Errno::ENOTEMPTY, "rm", p));
                }
                for k in inside {
                    inner.nodes.remove(&k);
                }
            }
            Some(_) => {}
        }
        inner.nodes.remove(&target);
        Ok(())
    }

    /// Copies a file, link or (with `recursive`) directory to exactly `dst`.
    pub async fn cp(&self, src: &str, dst: &str, recursive: bool) -> FsResult<()> {
        self.reach(src, true, Reach::Subtree).await?;
        self.reach(dst, true, Reach::Subtree).await?;
        let (src_c, dst_c) = (self.canon(src)?, self.canon(dst)?);
        let mut inner = self.mutable()?;
        let from = follow(&inner.nodes, &src_c, true)?;
        let to = follow(&inner.nodes, &dst_c, true)?;
        let node = match inner.nodes.get(&from) {
            None if from != "/" => return Err(posix(Errno::ENOENT, "cp", src)),
            Some(Node::File { .. }) | Some(Node::Symlink { .. }) => None,
            _ if !recursive => return Err(posix(Errno::EISDIR, "cp", src)),
            _ => Some(()),
        };
        if to == "/" || to == from || to.starts_with(&format!("{from}/")) {
            return Err(posix(Errno::EINVAL, "cp", dst));
        }
        Self::parent_dir(&inner, &to, "cp")?;
        let saved = inner.nodes.clone();
        match node {
            None => {
                if matches!(inner.nodes.get(&to), Some(Node::Dir { .. })) {
                    return Err(posix(Errno::EISDIR, "cp", dst));
                }
                let copy = inner.nodes[&from].clone();
                inner.nodes.insert(to, copy);
            }
            Some(()) => {
                if matches!(inner.nodes.get(&to), Some(n) if !matches!(n, Node::Dir { .. })) {
                    return Err(posix(Errno::ENOTDIR, "cp", dst));
                }
                let copies: Vec<(String, Node)> = descendants(&inner.nodes, &from)
                    .map(|(k, n)| (format!("{to}{}", &k[from.len()..]), n.clone()))
                    .collect();
                inner.nodes.entry(to).or_insert_with(Node::dir);
                for (k, n) in copies {
                    if matches!(n, Node::Dir { .. }) {
                        inner.nodes.entry(k).or_insert(n);
                    } else {
                        inner.nodes.insert(k, n);
                    }
                }
            }
        }
        if let Err(e) = check_limits(self, &inner) {
            inner.nodes = saved;
            return Err(e.into());
        }
        Ok(())
    }

    /// Renames a path (a directory moves with everything below it).
    pub async fn mv(&self, src: &str, dst: &str) -> FsResult<()> {
        self.reach(src, false, Reach::Subtree).await?;
        self.reach(dst, false, Reach::Subtree).await?;
        let (src_c, dst_c) = (self.canon(src)?, self.canon(dst)?);
        let mut inner = self.mutable()?;
        let from = follow(&inner.nodes, &src_c, false)?;
        let to = follow(&inner.nodes, &dst_c, false)?;
        if from == "/" || to == "/" {
            return Err(posix(Errno::EINVAL, "rename", src));
        }
        let node = inner
            .nodes
            .get(&from)
            .cloned()
            .ok_or_else(|| posix(Errno::ENOENT, "rename", src))?;
        if from == to {
            return Ok(());
        }
        if to.starts_with(&format!("{from}/")) {
            return Err(posix(Errno::EINVAL, "rename", dst));
        }
        Self::parent_dir(&inner, &to, "rename")?;
        let is_dir = matches!(node, Node::Dir { .. });
        match inner.nodes.get(&to) {
            Some(Node::Dir { .. }) if !is_dir => return Err(posix(Errno::EISDIR, "rename", dst)),
            Some(Node::Dir { .. }) if descendants(&inner.nodes, &to).next().is_some() => {
                return Err(posix(Errno::ENOTEMPTY, "rename", dst))
            }
            Some(_) if is_dir && !matches!(inner.nodes.get(&to), Some(Node::Dir { .. })) => {
                return Err(posix(Errno::ENOTDIR, "rename", dst))
            }
            _ => {}
        }
        let saved = inner.nodes.clone();
        let moved: Vec<(String, Node)> = descendants(&inner.nodes, &from)
            .map(|(k, n)| (k.clone(), n.clone()))
            .collect();
        let links_moved = moved.iter().any(|(_, n)| matches!(n, Node::Symlink { .. }))
            || matches!(node, Node::Symlink { .. })
            || matches!(saved.get(&to), Some(Node::Symlink { .. }));
        for (k, _) in &moved {
            inner.nodes.remove(k);
        }
        inner.nodes.remove(&from);
        inner.nodes.insert(to.clone(), node);
        for (k, n) in moved {
            inner.nodes.insert(format!("{to}{}", &k[from.len()..]), n);
        }
        if let Err(e) = check_limits(self, &inner) {
            inner.nodes = saved;
            return Err(e.into());
        }
        if links_moved {
            if let Err(e) = check_links(&saved, &inner.nodes) {
                inner.nodes = saved;
                return Err(e);
            }
        }
        Ok(())
    }

    fn with_node(&self, p: &str, op: &'static str, f: impl FnOnce(&mut Node)) -> FsResult<()> {
        let canon = self.canon(p)?;
        let mut inner = self.mutable()?;
        let target = follow(&inner.nodes, &canon, true)?;
        let node = inner
            .nodes
            .get_mut(&target)
            .ok_or_else(|| posix(Errno::ENOENT, op, p))?;
        f(node);
        Ok(())
    }

    /// Sets the permission bits (kept in memory only).
    pub async fn chmod(&self, p: &str, mode: u32) -> FsResult<()> {
        self.reach(p, true, Reach::Above).await?;
        self.with_node(p, "chmod", |n| n.meta_mut().mode = mode & 0o7777)
    }

    /// Sets the modification time (kept in memory only).
    pub async fn utimes(&self, p: &str, mtime: SystemTime) -> FsResult<()> {
        self.reach(p, true, Reach::Above).await?;
        self.with_node(p, "utime", |n| n.meta_mut().mtime = mtime)
    }

    /// Creates a symbolic link at `link` pointing to `target` (stored as given).
    pub async fn symlink(&self, target: &str, link: &str) -> FsResult<()> {
        self.reach(link, false, Reach::Above).await?;
        let canon = self.canon(link)?;
        let mut inner = self.mutable()?;
        let at = follow(&inner.nodes, &canon, false)?;
        if at == "/" || inner.nodes.contains_key(&at) {
            return Err(posix(Errno::EEXIST, "symlink", link));
        }
        Self::parent_dir(&inner, &at, "symlink")?;
        let node = Node::Symlink {
            target: target.to_owned(),
            meta: super::Meta::new(0o777),
        };
        let saved = inner.nodes.clone();
        inner.nodes.insert(at, node);
        if let Err(e) = check_links(&saved, &inner.nodes) {
            inner.nodes = saved;
            return Err(e);
        }
        if let Err(e) = check_limits(self, &inner) {
            inner.nodes = saved;
            return Err(e.into());
        }
        Ok(())
    }

    /// The target of a symbolic link.
    pub async fn readlink(&self, p: &str) -> FsResult<String> {
        self.reach(p, false, Reach::Above).await?;
        let canon = self.canon(p)?;
        let inner = self.lock();
        let at = follow(&inner.nodes, &canon, false)?;
        match inner.nodes.get(&at) {
            Some(Node::Symlink { target, .. }) => Ok(target.clone()),
            Some(_) => Err(posix(Errno::EINVAL, "readlink", p)),
            None => Err(posix(Errno::ENOENT, "readlink", p)),
        }
    }

    /// Checks that the link at `p` resolves inside the tree once it is real files (an absolute
    /// target, a `..` past the root on the way, or a loop do not: `INVALID_PATH`, `ELOOP`), for
    /// a writer that hands the kernel a stored tree (the FUSE mount's `readlink`).
    pub async fn check_link(&self, p: &str) -> FsResult<()> {
        self.reach(p, true, Reach::Above).await?;
        let canon = self.canon(p)?;
        let inner = self.lock();
        links::check(&canon, Absolute::Escapes, |q| target_of(&inner.nodes, q))
            .map(|_| ())
            .map_err(|e| match e {
                LinkError::TooManyLinks => posix(Errno::ELOOP, "readlink", p),
                e => SupabashError::new(ErrorCode::InvalidPath, e.message(&canon))
                    .with_path(canon.clone())
                    .into(),
            })
    }

    /// The canonical path with every link resolved; the path must exist.
    pub async fn realpath(&self, p: &str) -> FsResult<String> {
        self.reach(p, true, Reach::Above).await?;
        let canon = self.canon(p)?;
        let inner = self.lock();
        let real = follow(&inner.nodes, &canon, true)?;
        if real != "/" && !inner.nodes.contains_key(&real) {
            return Err(posix(Errno::ENOENT, "realpath", p));
        }
        Ok(real)
    }
}

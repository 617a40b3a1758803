//! [`AgentFs`]: the object-safe async filesystem the shell, `apply_patch` and the file tools
//! use. It mirrors the staged tree's operations and errors; views and mounts implement it too,
//! refusing what they do not allow with `EROFS`/`EACCES` (both `POLICY_DENIED`).

use std::time::SystemTime;
use supabash::tree::{DirEntry, FsResult, ServerSearch, StagedTree, Stat};

/// A filesystem an agent edits. Paths are absolute (or resolved against `/`); errors are POSIX
/// errnos or supabash errors, as [`StagedTree`] reports them. Nothing here commits.
#[async_trait::async_trait]
pub trait AgentFs: Send + Sync {
    /// Reads a file's bytes.
    async fn read(&self, path: &str) -> FsResult<Vec<u8>>;
    /// Creates or replaces a file.
    async fn write(&self, path: &str, data: Vec<u8>) -> FsResult<()>;
    /// Appends to a file, creating it when missing.
    async fn append(&self, path: &str, data: Vec<u8>) -> FsResult<()>;
    /// True when the path exists (following links).
    async fn exists(&self, path: &str) -> bool;
    /// Stats a path, following links.
    async fn stat(&self, path: &str) -> FsResult<Stat>;
    /// Stats a path itself (a link is reported as a link).
    async fn lstat(&self, path: &str) -> FsResult<Stat>;
    /// Creates a directory (and its parents when `recursive`).
    async fn mkdir(&self, path: &str, recursive: bool) -> FsResult<()>;
    /// Lists a directory, sorted by name.
    async fn readdir(&self, path: &str) -> FsResult<Vec<DirEntry>>;
    /// Removes a path; a non-empty directory needs `recursive`, `force` ignores a missing one.
    async fn rm(&self, path: &str, recursive: bool, force: bool) -> FsResult<()>;
    /// Copies a file, link or (with `recursive`) directory to exactly `dst`.
    async fn cp(&self, src: &str, dst: &str, recursive: bool) -> FsResult<()>;
    /// Renames a path (a directory moves with everything below it).
    async fn mv(&self, src: &str, dst: &str) -> FsResult<()>;
    /// Sets the permission bits.
    async fn chmod(&self, path: &str, mode: u32) -> FsResult<()>;
    /// Sets the modification time.
    async fn utimes(&self, path: &str, mtime: SystemTime) -> FsResult<()>;
    /// Creates a symbolic link at `link` pointing to `target`.
    async fn symlink(&self, target: &str, link: &str) -> FsResult<()>;
    /// The target of a symbolic link.
    async fn readlink(&self, path: &str) -> FsResult<String>;
    /// The canonical path with every link resolved; the path must exist.
    async fn realpath(&self, path: &str) -> FsResult<String>;
    /// Refuses, with the error a change would give (`EROFS`/`EACCES`), a path this filesystem
    /// never lets change, so tools can check every target before changing anything. The
    /// default allows every path.
    fn check_writable(&self, _path: &str) -> FsResult<()> {
        Ok(())
    }
    /// Searches the files under `dir` on the server where this filesystem can (a lazily
    /// opened staged tree: see [`StagedTree::search_on_server`]); `None` (the default, and
    /// what views and mounts answer) means: read and search every file.
    async fn search_on_server(
        &self,
        _pattern: &str,
        _dir: &str,
        _ignore_case: bool,
        _max: usize,
    ) -> Option<supabash::Result<ServerSearch>> {
        None
    }
    /// Fetches the bodies of `paths` ahead of their reads where this filesystem loads bodies
    /// lazily (a lazily opened staged tree: [`StagedTree::prefetch_paths`]); the default does
    /// nothing, and each read loads what it needs.
    async fn prefetch(&self, _paths: &[String]) {}
}

#[async_trait::async_trait]
impl AgentFs for StagedTree {
    async fn read(&self, path: &str) -> FsResult<Vec<u8>> {
        StagedTree::read(self, path).await
    }
    async fn write(&self, path: &str, data: Vec<u8>) -> FsResult<()> {
        StagedTree::write(self, path, data).await
    }
    async fn append(&self, path: &str, data: Vec<u8>) -> FsResult<()> {
        StagedTree::append(self, path, data).await
    }
    async fn exists(&self, path: &str) -> bool {
        StagedTree::exists(self, path).await
    }
    async fn stat(&self, path: &str) -> FsResult<Stat> {
        StagedTree::stat(self, path).await
    }
    async fn lstat(&self, path: &str) -> FsResult<Stat> {
        StagedTree::lstat(self, path).await
    }
    async fn mkdir(&self, path: &str, recursive: bool) -> FsResult<()> {
        StagedTree::mkdir(self, path, recursive).await
    }
    async fn readdir(&self, path: &str) -> FsResult<Vec<DirEntry>> {
        StagedTree::readdir(self, path).await
    }
    async fn rm(&self, path: &str, recursive: bool, force: bool) -> FsResult<()> {
        StagedTree::rm(self, path, recursive, force).await
    }
    async fn cp(&self, src: &str, dst: &str, recursive: bool) -> FsResult<()> {
        StagedTree::cp(self, src, dst, recursive).await
    }
    async fn mv(&self, src: &str, dst: &str) -> FsResult<()> {
        StagedTree::mv(self, src, dst).await
    }
    async fn chmod(&self, path: &str, mode: u32) -> FsResult<()> {
        StagedTree::chmod(self, path, mode).await
    }
    async fn utimes(&self, path: &str, mtime: SystemTime) -> FsResult<()> {
        StagedTree::utimes(self, path, mtime).await
    }
    async fn symlink(&self, target: &str, link: &str) -> FsResult<()> {
        StagedTree::symlink(self, target, link).await
    }
    async fn readlink(&self, path: &str) -> FsResult<String> {
        StagedTree::readlink(self, path).await
    }
    async fn realpath(&self, path: &str) -> FsResult<String> {
        StagedTree::realpath(self, path).await
    }
    async fn search_on_server(
        &self,
        pattern: &str,
        dir: &str,
        ignore_case: bool,
        max: usize,
    ) -> Option<supabash::Result<ServerSearch>> {
        StagedTree::search_on_server(self, pattern, dir, ignore_case, max).await
    }
    async fn prefetch(&self, paths: &[String]) {
        // A failed batch only means the reads load their bodies one by one.
        let _ = StagedTree::prefetch_paths(self, paths).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use supabash::tree::{Errno, FileKind};
    use supabash::Limits;

    #[tokio::test]
    async fn the_staged_tree_is_an_agent_fs() {
        let fs: Arc<dyn AgentFs> = Arc::new(StagedTree::empty(Limits::default()));
        fs.mkdir("/a/b", true).await.unwrap();
        fs.write("/a/b/f", b"one".to_vec()).await.unwrap();
        fs.append("/a/b/f", b" two".to_vec()).await.unwrap();
        assert_eq!(fs.read("/a/b/f").await.unwrap(), b"one two");
        assert_eq!(fs.stat("/a/b/f").await.unwrap().size, 7);
        fs.mv("/a/b/f", "/a/g").await.unwrap();
        assert!(!fs.exists("/a/b/f").await);
        let names: Vec<_> = fs.readdir("/a").await.unwrap();
        assert_eq!(names.len(), 2);
        assert_eq!(names[1].kind, FileKind::File);
        let e = fs.read("/missing").await.unwrap_err();
        assert_eq!(e.errno(), Some(Errno::ENOENT));
        assert_eq!(e.code(), supabash::ErrorCode::NotFound);
    }
}

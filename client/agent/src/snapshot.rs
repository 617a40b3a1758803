//! Shared read-only snapshots: a detached, immutable set of files (from a workspace revision or
//! from rows the host supplies) with a digest over its sorted paths and bytes. Every mutation
//! is refused with `EROFS` (`POLICY_DENIED`). Files show mode `0444` and the Unix epoch as
//! their modification time; empty directories, links and modes are not part of a snapshot.

use super::paths::err;
use super::AgentFs;
use std::collections::BTreeMap;
use std::time::SystemTime;
use supabash::error::{Result, SupabashError};
use supabash::tree::{DirEntry, Errno, FsResult, StagedTree, Stat};
use supabash::workspace::Workspace;
use supabash::Limits;
use supabash_core::hash::sha256_hex;
use supabash_core::{path, ErrorCode};

/// Bounds on one snapshot (defaults: 10,000 files, 16 MiB of file bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct SnapshotLimits {
    pub max_files: usize,
    pub max_bytes: usize,
}

supabash::setters! {
    impl SnapshotLimits {
        with_max_files(max_files: usize),
        with_max_bytes(max_bytes: usize),
    }
}

impl Default for SnapshotLimits {
    fn default() -> Self {
        SnapshotLimits {
            max_files: 10_000,
            max_bytes: 16 * 1024 * 1024,
        }
    }
}

/// An immutable file set an agent may read but never change. Share it behind an `Arc`.
pub struct SharedSnapshot {
    source_id: String,
    revision: Option<String>,
    digest: String,
    tree: StagedTree,
}

/// The digest of a file set: SHA-256 over, for each file in path order, the path's UTF-8
/// bytes, a NUL, the body length as 8 big-endian bytes, and the body.
pub fn digest<'a>(files: impl IntoIterator<Item = (&'a String, &'a Vec<u8>)>) -> String {
    let mut sorted: Vec<(&String, &Vec<u8>)> = files.into_iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(b.0));
    let mut buf = Vec::new();
    for (p, bytes) in sorted {
        buf.extend_from_slice(p.as_bytes());
        buf.push(0);
        buf.extend_from_slice(&(bytes.len() as u64).to_be_bytes());
        buf.extend_from_slice(bytes);
    }
    sha256_hex(&buf)
}

fn refused(message: String, p: &str) -> SupabashError {
    SupabashError::new(ErrorCode::InvalidArgument, message).with_path(p)
}

impl SharedSnapshot {
    /// A snapshot of `rows` (path, bytes) labelled `source_id` at `revision`. Refuses invalid or
    /// duplicate paths, a path that is both a file and a directory, and more than `limits`.
    pub async fn from_rows(
        source_id: &str,
        revision: Option<String>,
        rows: Vec<(String, Vec<u8>)>,
        limits: SnapshotLimits,
    ) -> Result<Self> {
        if rows.len() > limits.max_files {
            return Err(SupabashError::quota(format!(
                "a snapshot holds at most {} files",
                limits.max_files
            )));
        }
        let total: usize = rows.iter().map(|(_, b)| b.len()).sum();
        if total > limits.max_bytes {
            return Err(SupabashError::quota(format!(
                "a snapshot holds at most {} bytes",
                limits.max_bytes
            )));
        }
        let mut files = BTreeMap::new();
        for (p, bytes) in rows {
            path::validate(&p).map_err(|e| {
                SupabashError::new(ErrorCode::InvalidPath, format!("{p:?}: {e}")).with_path(&p)
            })?;
            if files.insert(p.clone(), bytes).is_some() {
                return Err(refused(format!("duplicate snapshot path {p}"), &p));
            }
        }
        for p in files.keys() {
            let mut dir = path::parent(p);
            while dir != "/" {
                if files.contains_key(dir) {
                    return Err(refused(
                        format!("{dir} is both a file and a directory"),
                        dir,
                    ));
                }
                dir = path::parent(dir);
            }
        }
        let digest = digest(&files);
        let tree = StagedTree::empty(
            Limits::default()
                .with_max_files(limits.max_files)
                .with_max_file_bytes(limits.max_bytes)
                .with_max_staged_bytes(limits.max_bytes)
                .with_max_path_chars(path::MAX_PATH_BYTES),
        );
        for (p, bytes) in files {
            let fill = async {
                tree.mkdir(path::parent(&p), true).await?;
                tree.write(&p, bytes).await?;
                tree.chmod(&p, 0o444).await?;
                tree.utimes(&p, SystemTime::UNIX_EPOCH).await
            };
            fill.await
                .map_err(|e| refused(format!("snapshot file {p}: {e}"), &p))?;
        }
        Ok(SharedSnapshot {
            source_id: source_id.to_owned(),
            revision,
            digest,
            tree,
        })
    }

    /// A snapshot of `revision` of a workspace, loaded and verified through the host API.
    pub async fn from_revision(
        workspace: &Workspace,
        source_id: &str,
        revision: &str,
        limits: SnapshotLimits,
    ) -> Result<Self> {
        let old = workspace.read_revision(revision).await?;
        let rows = old.files.into_iter().collect();
        Self::from_rows(source_id, Some(revision.to_owned()), rows, limits).await
    }

    /// A snapshot of a workspace's committed base revision.
    pub async fn from_workspace(
        workspace: &Workspace,
        source_id: &str,
        limits: SnapshotLimits,
    ) -> Result<Self> {
        let snap = workspace.committed_snapshot().await?;
        Self::from_committed(source_id, snap, limits).await
    }

    /// A snapshot of a committed revision the host already read (e.g.
    /// `DelegatedWorkspace::committed_snapshot`).
    pub async fn from_committed(
        source_id: &str,
        snap: supabash::workspace::Snapshot,
        limits: SnapshotLimits,
    ) -> Result<Self> {
        let rows = snap.files.into_iter().collect();
        Self::from_rows(source_id, snap.revision, rows, limits).await
    }

    /// The label of the source (provenance only, no authority).
    pub fn source_id(&self) -> &str {
        &self.source_id
    }

    /// The source revision, when there is one.
    pub fn revision(&self) -> Option<&str> {
        self.revision.as_deref()
    }

    /// SHA-256 over the sorted paths and bytes (see [`digest`]).
    pub fn digest(&self) -> &str {
        &self.digest
    }
}

#[async_trait::async_trait]
impl AgentFs for SharedSnapshot {
    async fn read(&self, p: &str) -> FsResult<Vec<u8>> {
        self.tree.read(p).await
    }
    async fn write(&self, p: &str, _data: Vec<u8>) -> FsResult<()> {
        Err(err(Errno::EROFS, "open", p))
    }
    async fn append(&self, p: &str, _data: Vec<u8>) -> FsResult<()> {
        Err(err(Errno::EROFS, "open", p))
    }
    async fn exists(&self, p: &str) -> bool {
        self.tree.exists(p).await
    }
    async fn stat(&self, p: &str) -> FsResult<Stat> {
        self.tree.stat(p).await
    }
    async fn lstat(&self, p: &str) -> FsResult<Stat> {
        self.tree.lstat(p).await
    }
    async fn mkdir(&self, p: &str, _recursive: bool) -> FsResult<()> {
        Err(err(Errno::EROFS, "mkdir", p))
    }
    async fn readdir(&self, p: &str) -> FsResult<Vec<DirEntry>> {
        self.tree.readdir(p).await
    }
    async fn rm(&self, p: &str, _recursive: bool, _force: bool) -> FsResult<()> {
        Err(err(Errno::EROFS, "rm", p))
    }
    async fn cp(&self, _src: &str, dst: &str, _recursive: bool) -> FsResult<()> {
        Err(err(Errno::EROFS, "cp", dst))
    }
    async fn mv(&self, src: &str, _dst: &str) -> FsResult<()> {
        Err(err(Errno::EROFS, "rename", src))
    }
    async fn chmod(&self, p: &str, _mode: u32) -> FsResult<()> {
        Err(err(Errno::EROFS, "chmod", p))
    }
    async fn utimes(&self, p: &str, _mtime: SystemTime) -> FsResult<()> {
        Err(err(Errno::EROFS, "utime", p))
    }
    async fn symlink(&self, _target: &str, link: &str) -> FsResult<()> {
        Err(err(Errno::EROFS, "symlink", link))
    }
    async fn readlink(&self, p: &str) -> FsResult<String> {
        self.tree.readlink(p).await
    }
    async fn realpath(&self, p: &str) -> FsResult<String> {
        self.tree.realpath(p).await
    }
    fn check_writable(&self, p: &str) -> FsResult<()> {
        Err(err(Errno::EROFS, "open", p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use supabash::tree::FileKind;

    fn rows(r: &[(&str, &str)]) -> Vec<(String, Vec<u8>)> {
        r.iter()
            .map(|(p, t)| (p.to_string(), t.as_bytes().to_vec()))
            .collect()
    }

    #[tokio::test]
    async fn a_snapshot_reads_and_refuses_every_change() {
        let s = SharedSnapshot::from_rows(
            "docs",
            Some("r1".into()),
            rows(&[("/g/a.md", "A"), ("/b.md", "B")]),
            SnapshotLimits::default(),
        )
        .await
        .unwrap();
        assert_eq!(s.read("/g/a.md").await.unwrap(), b"A");
        let st = s.stat("/g/a.md").await.unwrap();
        assert_eq!(
            (st.kind, st.mode, st.mtime),
            (FileKind::File, 0o444, SystemTime::UNIX_EPOCH)
        );
        assert_eq!(s.readdir("/").await.unwrap().len(), 2);
        let e = s.write("/b.md", b"x".to_vec()).await.unwrap_err();
        assert_eq!(e.code(), ErrorCode::PolicyDenied);
        assert_eq!(s.read("/b.md").await.unwrap(), b"B");
    }

    #[tokio::test]
    async fn the_digest_ignores_row_order_and_sees_every_byte() {
        let a = rows(&[("/x", "1"), ("/y", "2")]);
        let mut b = a.clone();
        b.reverse();
        let lim = SnapshotLimits::default();
        let da = SharedSnapshot::from_rows("s", None, a, lim).await.unwrap();
        let db = SharedSnapshot::from_rows("s", None, b, lim).await.unwrap();
        assert_eq!(da.digest(), db.digest());
        let c = rows(&[("/x", "1"), ("/y", "3")]);
        let dc = SharedSnapshot::from_rows("s", None, c, lim).await.unwrap();
        assert_ne!(da.digest(), dc.digest());
        // Moving bytes between path and body changes the digest.
        let d1 = digest(&BTreeMap::from([("/ab".to_string(), b"c".to_vec())]));
        let d2 = digest(&BTreeMap::from([("/a".to_string(), b"bc".to_vec())]));
        assert_ne!(d1, d2);
    }

    #[tokio::test]
    async fn bad_rows_are_refused() {
        let lim = SnapshotLimits::default();
        for bad in [
            rows(&[("/a", "1"), ("/a", "2")]),
            rows(&[("/a", "1"), ("/a/b", "2")]),
            rows(&[("/a", "1"), ("/a b", "2"), ("/a/b/c", "3")]),
            rows(&[("relative", "1")]),
            rows(&[("/tmp/x", "1")]),
        ] {
            assert!(SharedSnapshot::from_rows("s", None, bad, lim)
                .await
                .is_err());
        }
        let small = SnapshotLimits {
            max_files: 1,
            max_bytes: 10,
        };
        let e = SharedSnapshot::from_rows("s", None, rows(&[("/a", "1"), ("/b", "2")]), small)
            .await
            .err()
            .unwrap();
        assert_eq!(e.code(), ErrorCode::QuotaExceeded);
    }
}

//! View composition (not the FUSE mount of `supabash mount`, which lives in the CLI's `mount`
//! folder): one agent filesystem made of private writable workspaces and shared read-only
//! snapshots at disjoint mount points, each optionally seen through a [`View`]. Paths outside
//! every mount read as absent (`/` and the directories above mount points list the mount
//! points), and every change there, to a mount point itself or inside a read-only mount is
//! refused with `EROFS`; moves between mounts with `EXDEV`; link creation with `EACCES` (all
//! `POLICY_DENIED`). Copies into a writable mount from any mount are allowed. There is no
//! combined commit: the host commits each writable workspace on its own.

use super::paths::{below, canon, err, join, rename_error};
use super::snapshot::SharedSnapshot;
use super::view::View;
use super::AgentFs;
use serde::Serialize;
use std::sync::Arc;
use std::time::SystemTime;
use supabash::error::{Result, SupabashError};
use supabash::tree::{DirEntry, Errno, FileKind, FsError, FsResult, StagedTree, Stat};
use supabash::workspace::Workspace;
use supabash::Limits;
use supabash_core::{path, ErrorCode};

/// A subtree and hidden paths of a mount's source (see [`View`]).
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ViewSpec {
    /// The source path shown at the mount point (default `/`).
    pub root: Option<String>,
    /// Source paths (relative to `root`, written absolute) the agent never sees.
    pub hidden: Vec<String>,
}

supabash::setters! {
    impl ViewSpec {
        with_root(root: some into String),
        with_hidden(hidden: Vec<String>),
    }
}

/// What was mounted, for the host to record with the turn. No bodies, no credentials.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MountRecord {
    pub mount_point: String,
    /// The workspace id, or the label a snapshot was given.
    pub source_id: String,
    /// The base revision of a workspace when mounted, or the snapshot's revision.
    pub revision: Option<String>,
    /// The snapshot digest (read-only mounts only).
    pub digest: Option<String>,
    pub writable: bool,
    /// The source path shown at the mount point.
    pub root: String,
    /// The hidden paths, relative to `root`.
    pub hidden: Vec<String>,
}

/// One mount: a source filesystem at a mount point.
pub struct Mount {
    fs: Arc<dyn AgentFs>,
    view: Option<Arc<View>>,
    record: MountRecord,
}

/// Where a visible path lies in the sources: mount point, source id and source path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourcePath {
    pub mount_point: String,
    pub source_id: String,
    pub path: String,
}

/// A mount of `fs`, seen through `view` when given; `record` gets the view's root and hidden
/// paths.
fn build(fs: Arc<dyn AgentFs>, view: Option<ViewSpec>, record: MountRecord) -> FsResult<Mount> {
    let Some(spec) = view else {
        return Ok(Mount {
            fs,
            view: None,
            record: MountRecord {
                root: "/".into(),
                ..record
            },
        });
    };
    let hidden: Vec<&str> = spec.hidden.iter().map(String::as_str).collect();
    let v = Arc::new(View::new(fs, spec.root.as_deref().unwrap_or("/"), &hidden)?);
    Ok(Mount {
        fs: v.clone(),
        record: MountRecord {
            root: v.root().to_owned(),
            hidden: v.hidden().to_vec(),
            ..record
        },
        view: Some(v),
    })
}

impl Mount {
    /// A workspace's staged tree, writable, at `mount_point`.
    pub fn workspace(mount_point: &str, ws: &Workspace, view: Option<ViewSpec>) -> FsResult<Self> {
        let fs: Arc<dyn AgentFs> = ws.fs().clone();
        Self::writable(mount_point, ws.id(), ws.base_revision(), fs, view)
    }

    /// Any writable filesystem at `mount_point`, recorded as `source_id` at `revision`.
    pub fn writable(
        mount_point: &str,
        source_id: &str,
        revision: Option<String>,
        fs: Arc<dyn AgentFs>,
        view: Option<ViewSpec>,
    ) -> FsResult<Self> {
        let record = MountRecord {
            mount_point: mount_point.to_owned(),
            source_id: source_id.to_owned(),
            revision,
            digest: None,
            writable: true,
            root: String::new(),
            hidden: Vec::new(),
        };
        build(fs, view, record)
    }

    /// A shared snapshot, read-only, at `mount_point`.
    pub fn snapshot(
        mount_point: &str,
        snapshot: Arc<SharedSnapshot>,
        view: Option<ViewSpec>,
    ) -> FsResult<Self> {
        let record = MountRecord {
            mount_point: mount_point.to_owned(),
            source_id: snapshot.source_id().to_owned(),
            revision: snapshot.revision().map(str::to_owned),
            digest: Some(snapshot.digest().to_owned()),
            writable: false,
            root: String::new(),
            hidden: Vec::new(),
        };
        build(snapshot, view, record)
    }

    /// An empty in-memory tree, writable, that no workspace backs: scratch space (e.g. `/tmp`)
    /// whose contents are never committed. Recorded with source id `scratch`.
    pub fn scratch(mount_point: &str) -> FsResult<Self> {
        let tree = Arc::new(StagedTree::empty(Limits::default()));
        Self::writable(mount_point, "scratch", None, tree, None)
    }

    /// What this mount records in the manifest.
    pub fn record(&self) -> &MountRecord {
        &self.record
    }
}

/// Where a canonical visible path lies.
enum Route<'a> {
    /// Inside a mount, at this path of its source (`/` is the mount point).
    In(&'a Mount, String),
    /// `/` or a directory above some mount point.
    Above,
    /// Nowhere.
    Outside,
}

/// Several mounts composed into one filesystem for an agent.
pub struct MountedFs {
    mounts: Vec<Mount>,
}

impl MountedFs {
    /// Composes `mounts`. Mount points must be valid canonical paths, not `/`, not under
    /// `/dev`, and disjoint (none at or below another). A mount under `/tmp` (or another
    /// shell-owned root) suits [`Mount::scratch`].
    pub fn new(mounts: Vec<Mount>) -> Result<Self> {
        for m in &mounts {
            let mp = &m.record.mount_point;
            let bad = |why: String| {
                SupabashError::new(ErrorCode::InvalidPath, format!("mount point {mp:?}: {why}"))
                    .with_path(mp)
            };
            match path::validate(mp) {
                Ok(_) => {}
                // Shell-owned roots may hold scratch mounts, except /dev.
                Err(path::PathError::ShellOwned) if below(mp, "/dev").is_none() => {}
                Err(e) => return Err(bad(e.to_string())),
            }
        }
        for (i, a) in mounts.iter().enumerate() {
            for b in &mounts[i + 1..] {
                let (pa, pb) = (&a.record.mount_point, &b.record.mount_point);
                if below(pa, pb).is_some() || below(pb, pa).is_some() {
                    return Err(SupabashError::new(
                        ErrorCode::InvalidArgument,
                        format!("mount points {pa} and {pb} overlap"),
                    )
                    .with_path(pb));
                }
            }
        }
        Ok(MountedFs { mounts })
    }

    /// The manifest: one record per mount, in mount order.
    pub fn manifest(&self) -> Vec<MountRecord> {
        self.mounts.iter().map(|m| m.record.clone()).collect()
    }

    /// The visible path of `source_path` in the mount at `mount_point` (honouring its view);
    /// `None` when there is no such mount or the path is not visible. Names only: the file
    /// need not exist.
    pub fn to_visible(&self, mount_point: &str, source_path: &str) -> Option<String> {
        let m = self
            .mounts
            .iter()
            .find(|m| m.record.mount_point == mount_point)?;
        let inner = match &m.view {
            Some(v) => v.to_visible(source_path)?,
            None => canon(source_path).ok()?,
        };
        Some(join(mount_point, &inner))
    }

    /// The mount and source path behind a visible path; `None` outside every mount or hidden.
    pub fn to_source(&self, visible: &str) -> Option<SourcePath> {
        let p = canon(visible).ok()?;
        let Route::In(m, inner) = self.route(&p) else {
            return None;
        };
        let path = match &m.view {
            Some(v) => v.to_inner(&inner)?,
            None => inner,
        };
        Some(SourcePath {
            mount_point: m.record.mount_point.clone(),
            source_id: m.record.source_id.clone(),
            path,
        })
    }

    fn route(&self, p: &str) -> Route<'_> {
        for m in &self.mounts {
            if let Some(inner) = below(p, &m.record.mount_point) {
                return Route::In(m, inner);
            }
        }
        if self
            .mounts
            .iter()
            .any(|m| below(&m.record.mount_point, p).is_some())
        {
            Route::Above
        } else {
            Route::Outside
        }
    }

    /// The names of the entries directly below `dir` that lead to mount points.
    fn mount_children(&self, dir: &str) -> Vec<DirEntry> {
        let mut names: Vec<String> = self
            .mounts
            .iter()
            .filter_map(|m| below(&m.record.mount_point, dir))
            .filter(|rest| rest != "/")
            .map(|rest| rest[1..].split('/').next().unwrap_or("").to_owned())
            .collect();
        names.sort();
        names.dedup();
        names
            .into_iter()
            .map(|name| DirEntry {
                name,
                kind: FileKind::Directory,
            })
            .collect()
    }

    /// The mount and inner path for a change to `p` (`/` of the mount allowed when `whole`).
    fn changing(&self, p: &str, op: &'static str, whole: bool) -> FsResult<(&Mount, String)> {
        let v = canon(p)?;
        match self.route(&v) {
            Route::In(m, inner) if whole || inner != "/" => Ok((m, inner)),
            _ => Err(err(Errno::EROFS, op, &v)),
        }
    }
}

fn out(m: &Mount, e: FsError) -> FsError {
    rename_error(e, |p| {
        canon(p).ok().map(|c| join(&m.record.mount_point, &c))
    })
}

fn above_stat() -> Stat {
    Stat {
        kind: FileKind::Directory,
        size: 0,
        mode: 0o555,
        mtime: SystemTime::UNIX_EPOCH,
    }
}

impl MountedFs {
    /// Copies between two mounts: files and (with `recursive`) directories are read from the
    /// source and written into the destination; a failed copy removes what it created.
    async fn copy_across(
        &self,
        (sm, si): (&Mount, String),
        (dm, di): (&Mount, String),
        recursive: bool,
    ) -> FsResult<()> {
        let created = !dm.fs.exists(&di).await;
        let result = copy_tree(sm, &si, dm, &di, recursive).await;
        if result.is_err() && created {
            let _ = dm.fs.rm(&di, true, true).await;
        }
        result
    }
}

async fn copy_tree(sm: &Mount, si: &str, dm: &Mount, di: &str, recursive: bool) -> FsResult<()> {
    let mut stack = vec![(si.to_owned(), di.to_owned())];
    while let Some((s, d)) = stack.pop() {
        let st = sm.fs.stat(&s).await.map_err(|e| out(sm, e))?;
        if st.kind == FileKind::Directory {
            if !recursive {
                return Err(out(sm, err(Errno::EISDIR, "cp", &s)));
            }
            match dm.fs.stat(&d).await {
                Ok(t) if t.kind == FileKind::Directory => {}
                Ok(_) => return Err(out(dm, err(Errno::ENOTDIR, "cp", &d))),
                Err(_) => dm.fs.mkdir(&d, false).await.map_err(|e| out(dm, e))?,
            }
            for e in sm.fs.readdir(&s).await.map_err(|e| out(sm, e))? {
                let child = format!("/{}", e.name);
                stack.push((join(&s, &child), join(&d, &child)));
            }
        } else {
            let bytes = sm.fs.read(&s).await.map_err(|e| out(sm, e))?;
            dm.fs.write(&d, bytes).await.map_err(|e| out(dm, e))?;
        }
    }
    Ok(())
}

#[async_trait::async_trait]
impl AgentFs for MountedFs {
    async fn read(&self, p: &str) -> FsResult<Vec<u8>> {
        let v = canon(p)?;
        match self.route(&v) {
            Route::In(m, i) => m.fs.read(&i).await.map_err(|e| out(m, e)),
            Route::Above => Err(err(Errno::EISDIR, "open", &v)),
            Route::Outside => Err(err(Errno::ENOENT, "open", &v)),
        }
    }
    async fn write(&self, p: &str, data: Vec<u8>) -> FsResult<()> {
        let (m, i) = self.changing(p, "open", false)?;
        m.fs.write(&i, data).await.map_err(|e| out(m, e))
    }
    async fn append(&self, p: &str, data: Vec<u8>) -> FsResult<()> {
        let (m, i) = self.changing(p, "open", false)?;
        m.fs.append(&i, data).await.map_err(|e| out(m, e))
    }
    async fn exists(&self, p: &str) -> bool {
        let Ok(v) = canon(p) else { return false };
        match self.route(&v) {
            Route::In(m, i) => m.fs.exists(&i).await,
            Route::Above => true,
            Route::Outside => false,
        }
    }
    async fn stat(&self, p: &str) -> FsResult<Stat> {
        let v = canon(p)?;
        match self.route(&v) {
            Route::In(m, i) => m.fs.stat(&i).await.map_err(|e| out(m, e)),
            Route::Above => Ok(above_stat()),
            Route::Outside => Err(err(Errno::ENOENT, "stat", &v)),
        }
    }
    async fn lstat(&self, p: &str) -> FsResult<Stat> {
        let v = canon(p)?;
        match self.route(&v) {
            Route::In(m, i) => m.fs.lstat(&i).await.map_err(|e| out(m, e)),
            Route::Above => Ok(above_stat()),
            Route::Outside => Err(err(Errno::ENOENT, "lstat", &v)),
        }
    }
    async fn mkdir(&self, p: &str, recursive: bool) -> FsResult<()> {
        let v = canon(p)?;
        match self.route(&v) {
            Route::Above if recursive => Ok(()),
            Route::Above => Err(err(Errno::EEXIST, "mkdir", &v)),
            _ => {
                let (m, i) = self.changing(&v, "mkdir", true)?;
                m.fs.mkdir(&i, recursive).await.map_err(|e| out(m, e))
            }
        }
    }
    async fn readdir(&self, p: &str) -> FsResult<Vec<DirEntry>> {
        let v = canon(p)?;
        match self.route(&v) {
            Route::In(m, i) => m.fs.readdir(&i).await.map_err(|e| out(m, e)),
            Route::Above => Ok(self.mount_children(&v)),
            Route::Outside => Err(err(Errno::ENOENT, "scandir", &v)),
        }
    }
    async fn rm(&self, p: &str, recursive: bool, force: bool) -> FsResult<()> {
        let v = canon(p)?;
        let (m, i) = self.changing(&v, "rm", false)?;
        m.fs.rm(&i, recursive, force).await.map_err(|e| out(m, e))
    }
    async fn cp(&self, src: &str, dst: &str, recursive: bool) -> FsResult<()> {
        let (vs, vd) = (canon(src)?, canon(dst)?);
        let (dm, di) = self.changing(&vd, "cp", false)?;
        match self.route(&vs) {
            Route::In(sm, si) if std::ptr::eq(sm, dm) => {
                dm.fs.cp(&si, &di, recursive).await.map_err(|e| out(dm, e))
            }
            Route::In(sm, si) => {
                if !dm.record.writable {
                    return Err(err(Errno::EROFS, "cp", &vd));
                }
                self.copy_across((sm, si), (dm, di), recursive).await
            }
            Route::Above => Err(err(Errno::EACCES, "cp", &vs)),
            Route::Outside => Err(err(Errno::ENOENT, "cp", &vs)),
        }
    }
    async fn mv(&self, src: &str, dst: &str) -> FsResult<()> {
        let (sm, si) = self.changing(src, "rename", false)?;
        let (dm, di) = self.changing(dst, "rename", false)?;
        if !std::ptr::eq(sm, dm) {
            return Err(err(Errno::EXDEV, "rename", &canon(src)?));
        }
        sm.fs.mv(&si, &di).await.map_err(|e| out(sm, e))
    }
    async fn chmod(&self, p: &str, mode: u32) -> FsResult<()> {
        let (m, i) = self.changing(p, "chmod", false)?;
        m.fs.chmod(&i, mode).await.map_err(|e| out(m, e))
    }
    async fn utimes(&self, p: &str, mtime: SystemTime) -> FsResult<()> {
        let (m, i) = self.changing(p, "utime", false)?;
        m.fs.utimes(&i, mtime).await.map_err(|e| out(m, e))
    }
    async fn symlink(&self, _target: &str, link: &str) -> FsResult<()> {
        Err(err(Errno::EACCES, "symlink", &canon(link)?))
    }
    async fn readlink(&self, p: &str) -> FsResult<String> {
        let v = canon(p)?;
        match self.route(&v) {
            Route::In(m, i) => m.fs.readlink(&i).await.map_err(|e| out(m, e)),
            Route::Above => Err(err(Errno::EINVAL, "readlink", &v)),
            Route::Outside => Err(err(Errno::ENOENT, "readlink", &v)),
        }
    }
    async fn realpath(&self, p: &str) -> FsResult<String> {
        let v = canon(p)?;
        match self.route(&v) {
            Route::In(m, i) => {
                let real = m.fs.realpath(&i).await.map_err(|e| out(m, e))?;
                Ok(join(&m.record.mount_point, &real))
            }
            Route::Above => Ok(v),
            Route::Outside => Err(err(Errno::ENOENT, "realpath", &v)),
        }
    }
    fn check_writable(&self, p: &str) -> FsResult<()> {
        let (m, i) = self.changing(p, "open", false)?;
        m.fs.check_writable(&i).map_err(|e| out(m, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SnapshotLimits;
    use proptest::prelude::*;
    use supabash::tree::StagedTree;
    use supabash::Limits;

    proptest! {
        /// Visible → source → visible is the identity for every visible path of a mount, and
        /// hidden or unmounted paths have no source.
        #[test]
        fn translation_round_trips(
            segments in proptest::collection::vec("[a-c.]{1,3}", 0..4),
            mount in 0usize..2,
        ) {
            let tree = || -> Arc<dyn AgentFs> { Arc::new(StagedTree::empty(Limits::default())) };
            let hide = ViewSpec { root: Some("/src".into()), hidden: vec!["/b".into()] };
            let fs = MountedFs::new(vec![
                Mount::writable("/m", "one", None, tree(), Some(hide)).unwrap(),
                Mount::writable("/n/o", "two", None, tree(), None).unwrap(),
            ]).unwrap();
            let mp = ["/m", "/n/o"][mount];
            let rest: String = segments.iter().map(|s| format!("/{s}")).collect();
            let visible = format!("{mp}{rest}");
            let Ok(canonical) = canon(&visible) else { return Ok(()) };
            match fs.to_source(&visible) {
                Some(src) => {
                    prop_assert_eq!(fs.to_visible(&src.mount_point, &src.path), Some(canonical));
                    if mount == 0 {
                        prop_assert!(src.path == "/src" || src.path.starts_with("/src/"));
                    }
                }
                None => {
                    let hidden = mount == 0 && (canonical == "/m/b" || canonical.starts_with("/m/b/"));
                    let outside = below(&canonical, mp).is_none();
                    prop_assert!(hidden || outside, "{} has no source", canonical);
                }
            }
        }
    }

    async fn fixture() -> (Arc<StagedTree>, Arc<StagedTree>, MountedFs) {
        let a = Arc::new(StagedTree::empty(Limits::default()));
        a.write("/note.md", "n").await.unwrap();
        a.mkdir("/.internal", false).await.unwrap();
        a.write("/.internal/k", "k").await.unwrap();
        let b = Arc::new(StagedTree::empty(Limits::default()));
        let docs = SharedSnapshot::from_rows(
            "docs",
            Some("r7".into()),
            vec![("/guides/cal.md".into(), b"cal".to_vec())],
            SnapshotLimits::default(),
        )
        .await
        .unwrap();
        let hide = ViewSpec {
            root: None,
            hidden: vec!["/.internal".into()],
        };
        let mounted = MountedFs::new(vec![
            Mount::writable(
                "/memories",
                "ws-a",
                Some("ra".into()),
                a.clone(),
                Some(hide),
            )
            .unwrap(),
            Mount::writable("/work/scratch", "ws-b", None, b.clone(), None).unwrap(),
            Mount::snapshot("/docs", Arc::new(docs), None).unwrap(),
        ])
        .unwrap();
        (a, b, mounted)
    }

    fn names(entries: Vec<DirEntry>) -> Vec<String> {
        entries.into_iter().map(|e| e.name).collect()
    }

    #[tokio::test]
    async fn mounts_compose_and_list_mount_points() {
        let (a, b, fs) = fixture().await;
        assert_eq!(
            names(fs.readdir("/").await.unwrap()),
            ["docs", "memories", "work"]
        );
        assert_eq!(names(fs.readdir("/work").await.unwrap()), ["scratch"]);
        assert_eq!(names(fs.readdir("/memories").await.unwrap()), ["note.md"]);
        assert_eq!(fs.read("/docs/guides/cal.md").await.unwrap(), b"cal");
        fs.write("/memories/new.md", b"x".to_vec()).await.unwrap();
        assert_eq!(a.read("/new.md").await.unwrap(), b"x");
        fs.cp("/docs/guides", "/work/scratch/g", true)
            .await
            .unwrap();
        assert_eq!(b.read("/g/cal.md").await.unwrap(), b"cal");
        fs.mv("/memories/new.md", "/memories/moved.md")
            .await
            .unwrap();
        assert_eq!(
            fs.realpath("/memories/moved.md").await.unwrap(),
            "/memories/moved.md"
        );
        let e = fs.read("/memories/missing").await.unwrap_err();
        assert_eq!(
            e.to_string(),
            "ENOENT: no such file or directory, open '/memories/missing'"
        );
    }

    #[tokio::test]
    async fn read_only_unmounted_and_cross_mount_changes_are_denied() {
        let (a, _b, fs) = fixture().await;
        let denied = [
            fs.write("/docs/guides/cal.md", b"x".to_vec())
                .await
                .unwrap_err(),
            fs.write("/elsewhere.md", b"x".to_vec()).await.unwrap_err(),
            fs.mkdir("/newroot", false).await.unwrap_err(),
            fs.rm("/memories", true, true).await.unwrap_err(),
            fs.mv("/memories/note.md", "/work/scratch/note.md")
                .await
                .unwrap_err(),
            fs.cp("/memories/note.md", "/docs/note.md", false)
                .await
                .unwrap_err(),
            fs.write("/memories/.internal/k", b"x".to_vec())
                .await
                .unwrap_err(),
            fs.symlink("/memories/note.md", "/memories/l")
                .await
                .unwrap_err(),
        ];
        for e in denied {
            assert_eq!(e.code(), ErrorCode::PolicyDenied, "{e}");
        }
        for p in [
            "/docs/guides/cal.md",
            "/elsewhere",
            "/memories",
            "/memories/.internal/k",
        ] {
            assert_eq!(
                fs.check_writable(p).unwrap_err().code(),
                ErrorCode::PolicyDenied
            );
        }
        fs.check_writable("/memories/note.md").unwrap();
        assert_eq!(a.read("/note.md").await.unwrap(), b"n");
        assert!(!fs.exists("/memories/.internal/k").await);
    }

    #[tokio::test]
    async fn manifest_and_translation() {
        let (_a, _b, fs) = fixture().await;
        let m = fs.manifest();
        assert_eq!(m.len(), 3);
        assert_eq!(m[2].source_id, "docs");
        assert_eq!(m[2].revision.as_deref(), Some("r7"));
        assert_eq!(m[2].digest.as_ref().map(String::len), Some(64));
        assert!(!m[2].writable && m[0].writable);
        assert_eq!(m[0].hidden, ["/.internal"]);
        assert_eq!(
            fs.to_visible("/memories", "/a.md").as_deref(),
            Some("/memories/a.md")
        );
        assert_eq!(fs.to_visible("/memories", "/.internal/k"), None);
        let src = fs.to_source("/docs/guides/cal.md").unwrap();
        assert_eq!(
            (src.source_id.as_str(), src.path.as_str()),
            ("docs", "/guides/cal.md")
        );
        assert_eq!(fs.to_source("/elsewhere"), None);
        for bad in ["/", "/dev", "/dev/x", "relative", "/a/../b"] {
            let m = Mount::scratch(bad).unwrap();
            assert!(MountedFs::new(vec![m]).is_err(), "{bad}");
        }
        let tmp = MountedFs::new(vec![Mount::scratch("/tmp").unwrap()]).unwrap();
        tmp.write("/tmp/x", b"scratch".to_vec()).await.unwrap();
        assert_eq!(tmp.read("/tmp/x").await.unwrap(), b"scratch");
        let overlapping = MountedFs::new(vec![
            Mount::writable(
                "/a",
                "x",
                None,
                Arc::new(StagedTree::empty(Limits::default())),
                None,
            )
            .unwrap(),
            Mount::writable(
                "/a/b",
                "y",
                None,
                Arc::new(StagedTree::empty(Limits::default())),
                None,
            )
            .unwrap(),
        ]);
        assert!(overlapping.is_err());
    }
}

//! Run and sync: a workspace's staged tree (or one revision) written into a directory on disk,
//! and what a program then changed in that directory staged back, exactly.
//!
//! [`Workspace::materialise`] writes the tree into an empty directory and returns a
//! [`Materialised`] record (path → content hash, size, mode). [`Workspace::stage_from_dir`]
//! compares the directory with that record and stages the differences: creates, edits,
//! deletes, moves (a path that went away and one that appeared with the same content, paired by
//! `supabash_core::moves`), directories, symbolic links (never followed; a target core's rule
//! refuses is reported as [`NotStaged`]), modes and modification times. Special files are
//! reported as [`NotStaged`];
//! paths the path rules refuse (shell-owned roots such as `/tmp`, the reserved `.supabash`
//! segment, invalid names) are reported as [`Ignored`]. Files are hashed as a stream and only
//! the bytes of created or edited files are read into memory, as staged content.

mod apply;
mod scan;
mod write;

use crate::error::{Result, SupabashError};
use crate::exclude::excluded_with_parents;
pub use crate::exclude::Exclude;
use crate::tree::sync::Entry;
use crate::tree::StagedChange;
use crate::workspace::Workspace;
use serde::{Deserialize, Serialize};
use serde_with::skip_serializing_none;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use supabash_core::hash::sha256_hex;
use supabash_core::posix::{Kind, MODE_BITS};
use supabash_core::ErrorCode;

/// The mode a file is written with when the staged tree holds none other.
pub const DEFAULT_FILE_MODE: u32 = 0o644;

/// The largest base revision [`Workspace::materialise`] loads in one request (16 MiB); a
/// larger one loads file by file.
pub const SNAPSHOT_BUDGET_BYTES: u64 = 16 * 1024 * 1024;

/// What [`Workspace::materialise`] wrote: enough to tell later what a program changed.
#[skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Materialised {
    /// The revision written (`None`: the staged tree).
    pub revision: Option<String>,
    /// Every file written, by canonical path.
    pub files: BTreeMap<String, WrittenFile>,
    /// Every directory written (empty ones included), by canonical path.
    pub directories: BTreeSet<String>,
    /// Every symbolic link written: path → target.
    #[serde(default)]
    pub links: BTreeMap<String, String>,
    /// What the tree holds but could not be written: symbolic links, redacted versions.
    pub skipped: Vec<NotStaged>,
}

/// One file written: the SHA-256 of its bytes, its size, its permission bits and its
/// modification time (nanoseconds; absent: left as the write made it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WrittenFile {
    pub content_hash: String,
    pub size: u64,
    pub mode: u32,
    #[serde(default)]
    pub mtime_ns: Option<i64>,
    /// How the file looked on disk once written (see [`DiskStamp`]); absent when not written
    /// here or written too shortly before the writing ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stamp: Option<DiskStamp>,
}

impl WrittenFile {
    /// A staged file as it is written: its permission bits and its time, no stamp yet.
    fn staged(content_hash: String, size: u64, mode: u32, mtime_ns: i64) -> Self {
        WrittenFile {
            content_hash,
            size,
            mode: mode & MODE_BITS,
            mtime_ns: Some(mtime_ns),
            stamp: None,
        }
    }
}

/// A written file's inode number and change time. No program can set a change time: while a
/// file still has the same inode, change time, size and modification time, it still has the
/// bytes it was written with, and [`Workspace::stage_from_dir`] does not read it again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiskStamp {
    pub ino: u64,
    pub ctime_ns: i64,
}

/// How long before the end of a materialise a file's change time must lie for its stamp to
/// be kept: the kernel's clock for file times ticks every few milliseconds, so a change made
/// right after the end could otherwise show the same change time.
const STAMP_MARGIN_NS: i64 = 100_000_000;

/// Drops the stamps taken too close to the end of the writing: one could match a change made
/// right after it (see [`STAMP_MARGIN_NS`]).
fn drop_late_stamps(record: &mut Materialised) {
    let end = crate::tree::to_ns(std::time::SystemTime::now());
    for file in record.files.values_mut() {
        if file
            .stamp
            .is_some_and(|s| s.ctime_ns > end.saturating_sub(STAMP_MARGIN_NS))
        {
            file.stamp = None;
        }
    }
}

/// A path the path rules refuse, left out of the staged tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ignored {
    /// The path (lossily decoded when the name is not UTF-8).
    pub path: String,
    /// A stable reason code (`supabash_core::path::PathError::reason`, or `not-utf-8`).
    pub reason: String,
}

/// Something on disk (or in the tree) the backend cannot store, reported instead of dropped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotStaged {
    pub path: String,
    #[serde(flatten)]
    pub reason: NotStagedReason,
}

/// Why a path is not staged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum NotStagedReason {
    /// A symbolic link (never followed) whose target is absolute, climbs above the root or is
    /// not a valid path (core's rule): it would point outside the workspace.
    Symlink { target: String },
    /// A FIFO, socket or device node.
    SpecialFile,
    /// A path at or below a symbolic link of the staged tree.
    BelowSymlink { link: String },
    /// A version redaction removed (nothing to write).
    Redacted,
}

impl std::fmt::Display for NotStagedReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotStagedReason::Symlink { target } => {
                write!(
                    f,
                    "symbolic link to {target:?}: a link must point inside the workspace"
                )
            }
            NotStagedReason::SpecialFile => f.write_str("not a regular file"),
            NotStagedReason::BelowSymlink { link } => {
                write!(f, "below the staged tree's symbolic link {link}")
            }
            NotStagedReason::Redacted => f.write_str("redacted: no content"),
        }
    }
}

/// What a directory change was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DirChangeKind {
    Created,
    Edited,
    Deleted,
    Moved,
    DirCreated,
    DirRemoved,
}

/// One difference between the directory and its [`Materialised`] record, as staged.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DirChange {
    pub kind: DirChangeKind,
    pub path: String,
    /// The source of a move.
    pub from: Option<String>,
    /// The new size of a created or edited file.
    pub size: Option<u64>,
}

/// What [`Workspace::stage_from_dir`] did.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Synced {
    /// The staged tree's change list against its base revision, after the sync.
    pub changes: Vec<StagedChange>,
    /// The differences the directory showed, each staged.
    pub applied: Vec<DirChange>,
    pub ignored: Vec<Ignored>,
    pub not_staged: Vec<NotStaged>,
}

impl Synced {
    /// Bytes of the files created or edited.
    pub fn bytes_changed(&self) -> u64 {
        self.applied.iter().filter_map(|c| c.size).sum()
    }

    /// Every path a change touched (a move's source and destination), sorted, once each.
    pub fn paths_touched(&self) -> Vec<String> {
        let set: BTreeSet<&String> = self
            .applied
            .iter()
            .flat_map(|c| std::iter::once(&c.path).chain(c.from.as_ref()))
            .collect();
        set.into_iter().cloned().collect()
    }
}

/// How far a long operation got; `total_*` is `None` while unknown (a directory walk).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    pub files: u64,
    pub bytes: u64,
    pub total_files: Option<u64>,
    pub total_bytes: Option<u64>,
}

/// A progress observer (called after each file).
pub type ProgressFn = Arc<dyn Fn(Progress) + Send + Sync>;

/// The reason [`Ignored`] gives a path an ignore list left out.
pub const EXCLUDED: &str = "excluded";

/// Options of [`Workspace::materialise_with`].
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct MaterialiseOptions {
    /// Write this revision (read with `read_revision`) instead of the staged tree.
    pub revision: Option<String>,
    pub progress: Option<ProgressFn>,
}

crate::setters! {
    impl MaterialiseOptions {
        with_revision(revision: some into String),
        with_progress(progress: some ProgressFn),
    }
}

/// An error about a local path (`path` canonical, `io` what failed).
pub(crate) fn local_error(path: &str, what: &str, io: std::io::Error) -> SupabashError {
    SupabashError::new(ErrorCode::InvalidArgument, format!("{what}: {io}"))
        .with_path(path)
        .with_source(io)
}

/// Runs blocking disk work off the async threads.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    tokio::task::spawn_blocking(f).await.map_err(|e| {
        SupabashError::new(ErrorCode::InvalidArgument, format!("disk work failed: {e}"))
    })?
}

impl Workspace {
    /// Writes the staged tree into `dir` (created when missing; it must be empty): files with
    /// their modes and times, symbolic links, empty directories; shell-owned paths (`/tmp`,
    /// ...) are not written, nor a link that would lead outside `dir` as the kernel resolves
    /// it, nor anything below a link (both recorded in [`Materialised::skipped`]). Bodies not in memory yet come from the host cache when the tree
    /// has one (what it lacks is fetched in batches and kept there), else in one request when
    /// the base revision is at most [`SNAPSHOT_BUDGET_BYTES`], one at a time otherwise; they
    /// are not kept in the tree.
    pub async fn materialise(&self, dir: &Path) -> Result<Materialised> {
        self.materialise_with(dir, MaterialiseOptions::default())
            .await
    }

    /// [`Self::materialise`] with options: a revision instead of the staged tree (its files
    /// come in one request and are written one by one), a progress observer.
    pub async fn materialise_with(
        &self,
        dir: &Path,
        options: MaterialiseOptions,
    ) -> Result<Materialised> {
        let root = dir.to_path_buf();
        blocking(move || write::prepare(&root)).await?;
        let mut out = write::Writer::new(dir, options.progress);
        match options.revision {
            None => self.write_staged(&mut out).await?,
            Some(revision) => self.write_revision(revision, &mut out).await?,
        }
        let mut record = out.record;
        drop_late_stamps(&mut record);
        Ok(record)
    }

    /// Writes the staged tree with `out`: bodies from the host cache or the base revision's
    /// snapshot where they can come from there, the rest read one by one.
    async fn write_staged(&self, out: &mut write::Writer) -> Result<()> {
        // A lazily opened tree lists what it has not listed yet.
        self.fs().load_all().await?;
        let entries = self.fs().entries();
        out.totals(&entries);
        out.plan_links(
            &entries
                .iter()
                .filter_map(|(p, e)| match e {
                    Entry::Symlink { target } => Some((p.clone(), target.clone())),
                    _ => None,
                })
                .collect(),
        );
        let cache = self.fs().host_cache().cloned();
        let mut base = if cache.is_some() {
            let paths: Vec<String> = entries.iter().map(|(p, _)| p.clone()).collect();
            self.fs().fetch_uncached(&paths).await?
        } else {
            self.small_base().await?
        };
        let mut pending = Vec::new();
        for (p, entry) in entries {
            match entry {
                Entry::Dir => out.dir(&p)?,
                Entry::File {
                    content_hash,
                    size,
                    mode,
                    mtime_ns,
                } => {
                    let bytes = base
                        .remove(&p)
                        .filter(|b| sha256_hex(b) == content_hash)
                        .map(Arc::new);
                    let file = WrittenFile::staged(content_hash, size, mode, mtime_ns);
                    pending.push(write::Pending {
                        path: p,
                        bytes,
                        file,
                    });
                }
                Entry::Symlink { target } => out.link(&p, &target).await?,
            }
        }
        // What neither the base nor the host cache had: read (or fetched) one by one.
        for left in out.files(pending, cache).await? {
            let bytes = self.fs().read_transient(&left.path).await?;
            out.file(&left.path, bytes, left.file).await?;
        }
        Ok(())
    }

    /// Writes `revision` (read in one request) with `out`; its redacted versions are recorded
    /// as skipped.
    async fn write_revision(&self, revision: String, out: &mut write::Writer) -> Result<()> {
        let tree = self.read_revision(&revision).await?;
        out.record.revision = Some(revision);
        for p in tree.redacted {
            out.record.skipped.push(NotStaged {
                path: p,
                reason: NotStagedReason::Redacted,
            });
        }
        let mut files = tree.files;
        out.plan_links(
            &tree
                .entries
                .iter()
                .filter(|e| e.kind == Kind::Symlink)
                .map(|e| (e.path.clone(), e.target.clone().unwrap_or_default()))
                .collect(),
        );
        for e in tree.entries {
            match e.kind {
                Kind::File => {
                    let Some(bytes) = files.remove(&e.path) else {
                        continue;
                    };
                    let file = WrittenFile {
                        content_hash: sha256_hex(&bytes),
                        size: bytes.len() as u64,
                        mode: e.mode & MODE_BITS,
                        mtime_ns: e.mtime_ns,
                        stamp: None,
                    };
                    out.file(&e.path, Arc::new(bytes), file).await?;
                }
                Kind::Symlink => {
                    out.link(&e.path, e.target.as_deref().unwrap_or_default())
                        .await?
                }
                Kind::Directory => out.dir(&e.path)?,
            }
        }
        Ok(())
    }

    /// The base revision's files in one request when they total at most
    /// [`SNAPSHOT_BUDGET_BYTES`] (otherwise none: bodies then load one at a time).
    async fn small_base(&self) -> Result<BTreeMap<String, Vec<u8>>> {
        if self.base_revision().is_none() || self.fs().base_bytes() > SNAPSHOT_BUDGET_BYTES {
            return Ok(BTreeMap::new());
        }
        Ok(self.committed_snapshot().await?.files)
    }

    /// A record of the staged tree as [`Self::materialise`] would write it, without writing
    /// anything: `stage_from_dir(dir, &ws.staged_record())` makes the staged tree match `dir`
    /// (an import).
    pub fn staged_record(&self) -> Materialised {
        let mut record = Materialised::default();
        for (p, entry) in self.fs().entries() {
            match entry {
                Entry::Dir => {
                    record.directories.insert(p);
                }
                Entry::File {
                    content_hash,
                    size,
                    mode,
                    mtime_ns,
                } => {
                    let file = WrittenFile::staged(content_hash, size, mode, mtime_ns);
                    record.files.insert(p, file);
                }
                Entry::Symlink { target } => {
                    record.links.insert(p, target);
                }
            }
        }
        record
    }

    /// Compares `dir` with what `materialised` says was written and stages exactly the
    /// differences in the staged tree (see the module docs). All or nothing: when a file is
    /// over the [`crate::Limits`] (an error naming the path) or anything fails, the staged
    /// tree is left as it was.
    pub async fn stage_from_dir(&self, dir: &Path, materialised: &Materialised) -> Result<Synced> {
        self.stage_from_dir_with(dir, materialised, None).await
    }

    /// [`Self::stage_from_dir`] with a progress observer of the directory walk.
    pub async fn stage_from_dir_with(
        &self,
        dir: &Path,
        materialised: &Materialised,
        progress: Option<ProgressFn>,
    ) -> Result<Synced> {
        self.stage_from_dir_excluding(dir, materialised, progress, None)
            .await
    }

    /// [`Self::stage_from_dir_with`] leaving out what `exclude` excludes (see [`Exclude`]).
    pub async fn stage_from_dir_excluding(
        &self,
        dir: &Path,
        materialised: &Materialised,
        progress: Option<ProgressFn>,
        exclude: Option<Arc<dyn Exclude>>,
    ) -> Result<Synced> {
        let root = dir.to_path_buf();
        let limits = self.fs().limits().clone();
        let walk_exclude = exclude.clone();
        let known = materialised.files.clone();
        let scanned =
            blocking(move || scan::scan(&root, &limits, progress, walk_exclude.as_deref(), &known))
                .await?;
        let Some(exclude) = exclude else {
            return apply::apply(self.fs(), dir, materialised, scanned).await;
        };
        // What the tree holds at excluded paths stays as it is: not a deletion.
        let mut kept = materialised.clone();
        kept.files
            .retain(|p, _| !excluded_with_parents(exclude.as_ref(), p, false));
        kept.directories
            .retain(|p| !excluded_with_parents(exclude.as_ref(), p, true));
        apply::apply(self.fs(), dir, &kept, scanned).await
    }
}

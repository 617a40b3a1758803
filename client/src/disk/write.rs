//! Writing a tree into a directory: parents first, files created new (never through a link:
//! nothing is written at or below a link the writer made, and the final component is opened
//! `O_NOFOLLOW`) with their permission bits set exactly (whatever the umask), each recorded.
//! A link that would lead outside the directory, as the kernel resolves it, is not written.

use super::{
    blocking, local_error, DiskStamp, Materialised, NotStaged, NotStagedReason, Progress,
    ProgressFn, WrittenFile,
};
use crate::cache::HostCache;
use crate::error::{Result, SupabashError};
use crate::tree::sync::Entry;
use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use supabash_core::links::{self, Absolute};
use supabash_core::path;
use supabash_core::ErrorCode;

/// `root` on disk for the canonical path `p`.
pub(crate) fn on_disk(root: &Path, p: &str) -> PathBuf {
    root.join(p.trim_start_matches('/'))
}

/// Makes sure `root` is an empty directory (creating it when missing).
pub(super) fn prepare(root: &Path) -> Result<()> {
    let shown = root.display().to_string();
    match fs::symlink_metadata(root) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            fs::create_dir_all(root).map_err(|e| local_error(&shown, "cannot create", e))
        }
        Err(e) => Err(local_error(&shown, "cannot inspect", e)),
        Ok(m) if !m.is_dir() => Err(SupabashError::new(
            ErrorCode::InvalidArgument,
            "the target is not a directory",
        )
        .with_path(shown)),
        Ok(_) => {
            let mut listing =
                fs::read_dir(root).map_err(|e| local_error(&shown, "cannot list", e))?;
            if listing.next().is_some() {
                return Err(SupabashError::new(
                    ErrorCode::InvalidArgument,
                    "the target directory is not empty",
                )
                .with_path(shown));
            }
            Ok(())
        }
    }
}

/// How many files [`Writer::files`] hands the blocking pool at once.
const CHUNK_FILES: usize = 512;
/// How many blocking tasks write one chunk side by side.
const WRITERS: usize = 4;

/// A file for [`Writer::files`]: its canonical path, its bytes when they are at hand, and
/// what the record says of it.
pub(super) struct Pending {
    pub path: String,
    pub bytes: Option<Arc<Vec<u8>>>,
    pub file: WrittenFile,
}

/// Creates the file `at` new (never through a link) with `bytes`, `mode` exactly and the
/// modification time `mtime_ns` when given; answers its stamp once written.
fn create_file(at: &Path, shown: &str, bytes: &[u8], file: &WrittenFile) -> Result<DiskStamp> {
    let fail = |e| local_error(shown, "cannot write", e);
    let mut out = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .mode(file.mode)
        .open(at)
        .map_err(fail)?;
    out.write_all(bytes).map_err(fail)?;
    if let Some(ns) = file.mtime_ns {
        out.set_modified(crate::tree::from_ns(ns)).map_err(fail)?;
    }
    out.set_permissions(fs::Permissions::from_mode(file.mode))
        .map_err(fail)?;
    let meta = out.metadata().map_err(fail)?;
    Ok(DiskStamp {
        ino: meta.ino(),
        ctime_ns: meta
            .ctime()
            .saturating_mul(1_000_000_000)
            .saturating_add(meta.ctime_nsec()),
    })
}

/// Writes what of `batch` has its bytes at hand or in `cache` (read there and checked against
/// the hash and size the record names); answers the files written and those that had neither.
fn write_some(
    root: &Path,
    batch: Vec<Pending>,
    cache: Option<&HostCache>,
) -> Result<(Vec<Pending>, Vec<Pending>)> {
    let (mut written, mut missing) = (Vec::new(), Vec::new());
    for mut pending in batch {
        let bytes = pending.bytes.take().or_else(|| {
            cache
                .and_then(|c| c.get(&pending.file.content_hash))
                .filter(|b| b.len() as u64 == pending.file.size)
                .map(Arc::new)
        });
        match bytes {
            Some(bytes) => {
                let at = on_disk(root, &pending.path);
                pending.file.stamp = Some(create_file(&at, &pending.path, &bytes, &pending.file)?);
                written.push(pending);
            }
            None => missing.push(pending),
        }
    }
    Ok((written, missing))
}

/// Writes files and directories under a root and keeps the record.
pub(super) struct Writer {
    root: PathBuf,
    progress: Option<ProgressFn>,
    pub record: Materialised,
    done: Progress,
    /// The links [`Self::plan_links`] refused: never written.
    refused: BTreeMap<String, String>,
}

impl Writer {
    pub fn new(root: &Path, progress: Option<ProgressFn>) -> Self {
        Writer {
            root: root.to_path_buf(),
            progress,
            record: Materialised::default(),
            done: Progress {
                files: 0,
                bytes: 0,
                total_files: None,
                total_bytes: None,
            },
            refused: BTreeMap::new(),
        }
    }

    /// Settles which of the tree's links (path → target) are written: those that resolve
    /// inside the root as the kernel resolves them (`supabash_core::links::refused` leaves
    /// out the others: a tree stored around the server's checks). A refused link is recorded
    /// as skipped, with a line on stderr, and never written.
    pub fn plan_links(&mut self, links: &BTreeMap<String, String>) {
        for (p, e) in links::refused(links, Absolute::Escapes) {
            eprintln!("supabash: not written: {}", e.message(&p));
            let target = links[&p].clone();
            self.record.skipped.push(NotStaged {
                path: p.clone(),
                reason: NotStagedReason::Symlink {
                    target: target.clone(),
                },
            });
            self.refused.insert(p, target);
        }
    }

    /// The link written at `p` or above it, if any: nothing is written through a link (a
    /// tree stored around the server's checks may hold entries below one). Paths come in
    /// order, so a link is written before anything below it would be.
    fn through_link(&mut self, p: &str) -> bool {
        let mut at = Some(p);
        while let Some(d) = at.filter(|d| *d != "/") {
            if self.record.links.contains_key(d) || self.refused.contains_key(d) {
                let link = d.to_owned();
                eprintln!("supabash: not written: {p:?} lies below the symbolic link {link:?}");
                self.record.skipped.push(NotStaged {
                    path: p.to_owned(),
                    reason: NotStagedReason::BelowSymlink { link },
                });
                return true;
            }
            at = Some(path::parent(d));
        }
        false
    }

    /// Sets the totals progress reports from the entries about to be written.
    pub fn totals(&mut self, entries: &[(String, Entry)]) {
        let files = entries.iter().filter_map(|(_, e)| match e {
            Entry::File { size, .. } => Some(*size),
            _ => None,
        });
        let (count, bytes) = files.fold((0, 0), |(n, b), s| (n + 1, b + s));
        self.done.total_files = Some(count);
        self.done.total_bytes = Some(bytes);
    }

    /// Creates the directory `p` (canonical) and its parents, recording each (nothing below
    /// a link: see [`Self::through_link`]).
    pub fn dir(&mut self, p: &str) -> Result<()> {
        if self.through_link(p) {
            return Ok(());
        }
        self.parents(p)
    }

    /// Creates `p` and its missing parents, none of them a link.
    fn parents(&mut self, p: &str) -> Result<()> {
        let mut missing = Vec::new();
        let mut d = p;
        while d != "/" && !self.record.directories.contains(d) {
            missing.push(d.to_owned());
            d = path::parent(d);
        }
        for d in missing.into_iter().rev() {
            let at = on_disk(&self.root, &d);
            fs::create_dir(&at).map_err(|e| local_error(&d, "cannot create directory", e))?;
            self.record.directories.insert(d);
        }
        Ok(())
    }

    /// Creates the symbolic link `p` (canonical) to `target`, recording it.
    pub async fn link(&mut self, p: &str, target: &str) -> Result<()> {
        if self.refused.contains_key(p) || self.through_link(p) {
            return Ok(());
        }
        self.parents(path::parent(p))?;
        let (at, shown, to) = (on_disk(&self.root, p), p.to_owned(), target.to_owned());
        blocking(move || {
            std::os::unix::fs::symlink(&to, &at)
                .map_err(|e| local_error(&shown, "cannot create link", e))
        })
        .await?;
        self.record.links.insert(p.to_owned(), target.to_owned());
        Ok(())
    }

    /// Writes the file `p` (canonical) with `bytes`, as `file` describes.
    pub async fn file(
        &mut self,
        p: &str,
        bytes: Arc<Vec<u8>>,
        mut file: WrittenFile,
    ) -> Result<()> {
        if self.through_link(p) {
            return Ok(());
        }
        self.parents(path::parent(p))?;
        let (at, shown, record) = (on_disk(&self.root, p), p.to_owned(), file.clone());
        file.stamp = Some(blocking(move || create_file(&at, &shown, &bytes, &record)).await?);
        self.written(p.to_owned(), file);
        Ok(())
    }

    /// Records a file written and reports progress.
    fn written(&mut self, p: String, file: WrittenFile) {
        self.done.files += 1;
        self.done.bytes += file.size;
        self.record.files.insert(p, file);
        if let Some(progress) = &self.progress {
            progress(self.done);
        }
    }

    /// Writes `pending` files on the blocking pool, several side by side, a chunk at a time
    /// (so a warm host cache is read in parallel rather than one file after another on the
    /// async thread): bytes not at hand come from `cache`, checked. Answers the files that
    /// had neither (the caller reads those one by one and writes them with [`Self::file`]).
    pub async fn files(
        &mut self,
        pending: Vec<Pending>,
        cache: Option<Arc<HostCache>>,
    ) -> Result<Vec<Pending>> {
        let mut pending = pending;
        pending.retain(|p| !self.through_link(&p.path));
        for p in &pending {
            self.parents(path::parent(&p.path))?;
        }
        let mut missing = Vec::new();
        let mut rest = pending.into_iter().peekable();
        while rest.peek().is_some() {
            let chunk: Vec<Pending> = rest.by_ref().take(CHUNK_FILES).collect();
            let share = chunk.len().div_ceil(WRITERS);
            let mut chunk = chunk.into_iter().peekable();
            let mut tasks = Vec::new();
            while chunk.peek().is_some() {
                let batch: Vec<Pending> = chunk.by_ref().take(share).collect();
                let (root, cache) = (self.root.clone(), cache.clone());
                tasks.push(blocking(move || write_some(&root, batch, cache.as_deref())));
            }
            for task in tasks {
                let (written, left) = task.await?;
                for w in written {
                    self.written(w.path, w.file);
                }
                missing.extend(left);
            }
        }
        Ok(missing)
    }
}

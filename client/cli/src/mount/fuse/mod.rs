//! The filesystem a mount serves: the workspace's staged tree seen through inode numbers.
//!
//! Files are opened without handles (`kernel` answers `open` with `ENOSYS`): the kernel then
//! sends no `open`, `flush` or `release`, keeps each file's page cache, and reads and writes by
//! inode. What programs write goes to a buffer per inode, which reaches the staged tree once it
//! has been left alone for [`WRITE_BEHIND`] (see [`write_behind`]), at `fsync`, at a
//! `truncate`, and before a commit or a change list. A file removed or replaced while a program
//! may still hold it open keeps its content under its inode until the kernel forgets the inode.
//! Symbolic links, modes and times are the staged tree's, committed with it. Requests run
//! concurrently; the mount's state is behind one lock that is never held while a body or a
//! listing loads over the network.

mod contents;
mod entries;
pub(super) mod inodes;
pub mod kernel;
mod listing;

use crate::mount::fuse::inodes::{child, Inodes};
use crate::mount::summary::Summary;
use fuser::{Errno, FileAttr, FileType};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant, SystemTime};
use supabash::tree::{Detached, FileKind, Stat};
use supabash::workspace::CommitOptions;
use supabash::{FsError, StagedTree, Workspace};
use supabash_core::path::{self, PathError};
use supabash_core::rpc::CommitResult;
use supabash_core::ErrorCode;
use tokio::sync::Mutex;

/// How long the kernel may trust an answer (entries and attributes). A revision or read-only
/// mount cannot change; on a writable one every change goes through this mount, which the
/// kernel sees (it drops what it cached of a file it writes, creates, renames or removes), and
/// a written file's time is the time of its last write from the first answer on (see
/// `Buffer::written`), so nothing the kernel cached goes stale. Without this the kernel asks
/// again for every file each time `git status` looks at it.
pub const TTL: Duration = Duration::from_secs(24 * 3600);

/// How long a buffer is left alone before [`write_behind`] writes it to the staged tree.
pub const WRITE_BEHIND: Duration = Duration::from_millis(100);

/// Most buffers [`write_behind`] writes before it lets other requests in.
const WRITE_BEHIND_BATCH: usize = 256;

/// A file's bytes as programs wrote them through the mount, not yet in the staged tree.
#[derive(Debug, Clone)]
struct Buffer {
    data: Arc<Vec<u8>>,
    /// When it last changed: the modification time it shows and reaches the tree with, so the
    /// kernel never sees the time move when it does.
    written: SystemTime,
    /// When it was last changed, for [`write_behind`].
    touched: Instant,
    /// Why the staged tree refused it last (a limit): it stays until written again, and
    /// `fsync`, a change list and a commit report it.
    refused: Option<Errno>,
    /// Whether it was changed (a buffer made for a change that did not happen is dropped).
    dirty: bool,
}

impl Buffer {
    fn new(data: Arc<Vec<u8>>) -> Self {
        Buffer {
            data,
            written: SystemTime::now(),
            touched: Instant::now(),
            refused: None,
            dirty: false,
        }
    }

    /// Marks a change made now.
    fn changed(&mut self) {
        self.written = SystemTime::now();
        self.touched = Instant::now();
        self.refused = None;
        self.dirty = true;
    }
}

/// A file whose path was removed or replaced while a program may still hold it open: its
/// content, until the kernel forgets the inode.
#[derive(Debug)]
enum Orphan {
    Written(Buffer),
    Stored(Detached),
}

/// Where a file's bytes are now.
#[derive(Debug, Clone)]
enum Source {
    Buffer(Arc<Vec<u8>>),
    Tree(String),
    Orphan(Detached),
}

/// One entry of a directory listing taken at opendir.
#[derive(Debug, Clone)]
pub struct Listed {
    pub ino: u64,
    pub kind: FileType,
    pub name: String,
}

#[derive(Debug, Default)]
struct State {
    inodes: Inodes,
    /// Files written through the mount and not yet in the tree, by inode number.
    buffers: HashMap<u64, Buffer>,
    /// Files whose path went while they may be open, by inode number (until `forget`).
    orphans: HashMap<u64, Orphan>,
    /// Directory handle → the listing taken at opendir.
    dirs: HashMap<u64, Vec<Listed>>,
    summary: Summary,
}

impl State {
    fn path(&self, ino: u64) -> Result<String, Errno> {
        self.inodes
            .path(ino)
            .map(str::to_owned)
            .ok_or(Errno::ENOENT)
    }

    /// Where `ino`'s bytes are now.
    fn source(&self, ino: u64) -> Result<Source, Errno> {
        if let Some(b) = self.buffer_of(ino) {
            return Ok(Source::Buffer(b.data.clone()));
        }
        match self.orphans.get(&ino) {
            Some(Orphan::Stored(content)) => Ok(Source::Orphan(content.clone())),
            _ => self.path(ino).map(Source::Tree),
        }
    }

    /// Whether `ino`'s bytes are still where `source` said (nothing buffered, moved or
    /// removed it meanwhile).
    fn still(&self, ino: u64, source: &Source) -> bool {
        match (source, self.source(ino)) {
            (Source::Buffer(a), Ok(Source::Buffer(b))) => Arc::ptr_eq(a, &b),
            (Source::Tree(a), Ok(Source::Tree(b))) => *a == b,
            (Source::Orphan(_), Ok(Source::Orphan(_))) => true,
            _ => false,
        }
    }

    /// `ino`'s buffer, when it has one (a live file's or an orphan's).
    fn buffer_of(&self, ino: u64) -> Option<&Buffer> {
        if let Some(b) = self.buffers.get(&ino) {
            return Some(b);
        }
        match self.orphans.get(&ino) {
            Some(Orphan::Written(b)) => Some(b),
            _ => None,
        }
    }

    /// `ino`'s buffer, to change.
    fn buffer_mut(&mut self, ino: u64) -> Option<&mut Buffer> {
        if let Some(b) = self.buffers.get_mut(&ino) {
            return Some(b);
        }
        match self.orphans.get_mut(&ino) {
            Some(Orphan::Written(b)) => Some(b),
            _ => None,
        }
    }

    /// Bytes held in the buffers of live files.
    fn buffered_bytes(&self) -> usize {
        self.buffers.values().map(|b| b.data.len()).sum()
    }
}

/// The errno a staged-tree failure reports to the kernel.
pub fn errno(e: &FsError) -> Errno {
    use supabash::tree::Errno as E;
    match e.errno() {
        Some(E::ENOENT) => Errno::ENOENT,
        Some(E::EEXIST) => Errno::EEXIST,
        Some(E::ENOTDIR) => Errno::ENOTDIR,
        Some(E::EISDIR) => Errno::EISDIR,
        Some(E::ENOTEMPTY) => Errno::ENOTEMPTY,
        Some(E::EINVAL) => Errno::EINVAL,
        Some(E::ELOOP) => Errno::ELOOP,
        Some(E::EROFS) => Errno::EROFS,
        Some(E::EACCES) => Errno::EACCES,
        Some(E::EXDEV) => Errno::EXDEV,
        Some(_) => Errno::EIO,
        None => match e.code() {
            ErrorCode::QuotaExceeded => Errno::ENOSPC,
            ErrorCode::InvalidPath => Errno::EINVAL,
            ErrorCode::NotFound => Errno::ENOENT,
            ErrorCode::CommitInProgress => Errno::EBUSY,
            _ => Errno::EIO,
        },
    }
}

/// The path of an existing entry `name` in `dir`: a name the tree could never hold (a
/// reserved `.supabash` segment among them) is simply not there.
fn existing(dir: &str, name: &std::ffi::OsStr) -> Result<String, Errno> {
    let name = name.to_str().ok_or(Errno::ENOENT)?;
    let p = child(dir, name);
    match path::resolve("/", &p) {
        Ok(c) if c == p => Ok(p),
        _ => Err(Errno::ENOENT),
    }
}

/// The path of a new entry `name` in `dir`: reserved names are refused with `EACCES`, other
/// names the tree cannot hold with `EINVAL`.
fn creatable(dir: &str, name: &std::ffi::OsStr) -> Result<String, Errno> {
    let name = name.to_str().ok_or(Errno::EINVAL)?;
    let p = child(dir, name);
    match path::resolve("/", &p) {
        Ok(c) if c == p => Ok(p),
        Err(PathError::Reserved) => Err(Errno::EACCES),
        _ => Err(Errno::EINVAL),
    }
}

fn file_type(kind: FileKind) -> FileType {
    match kind {
        FileKind::Directory => FileType::Directory,
        FileKind::Symlink => FileType::Symlink,
        _ => FileType::RegularFile,
    }
}

/// A mounted workspace (or revision).
pub struct MountFs {
    tree: Arc<StagedTree>,
    state: Mutex<State>,
    /// Directories whose files were prefetched once already.
    prefetched: std::sync::Mutex<std::collections::HashSet<String>>,
    /// The last directory handle handed out.
    next_fh: AtomicU64,
    /// The thread id of the mount's own walk of its directories, while it runs (0: none).
    walker: AtomicU32,
    read_only: bool,
    owner: (u32, u32),
}

impl MountFs {
    /// Serves `tree`; files belong to `owner` (uid, gid). A read-only mount refuses every
    /// change with `EROFS`.
    pub fn new(tree: Arc<StagedTree>, read_only: bool, owner: (u32, u32)) -> Self {
        MountFs {
            tree,
            state: Mutex::new(State::default()),
            prefetched: Default::default(),
            next_fh: AtomicU64::new(0),
            walker: AtomicU32::new(0),
            read_only,
            owner,
        }
    }

    /// How long the kernel may cache entries and attributes of this mount.
    pub fn ttl(&self) -> Duration {
        TTL
    }

    /// Whether the mount refuses every change (a revision or `--read-only` mount).
    pub fn read_only(&self) -> bool {
        self.read_only
    }

    /// Whether the whole tree is listed (it was opened eagerly): listing its directories
    /// costs no network request.
    pub fn fully_listed(&self) -> bool {
        !self.tree.is_partially_loaded()
    }

    /// Marks the thread `tid` as the mount's own walk of its directories (see `fuse::warm`):
    /// its listings prefetch no bodies. 0: no walk.
    pub fn set_walker(&self, tid: u32) {
        self.walker.store(tid, Ordering::SeqCst);
    }

    fn writable(&self) -> Result<(), Errno> {
        if self.read_only {
            Err(Errno::EROFS)
        } else {
            Ok(())
        }
    }

    /// A new directory handle.
    fn handle(&self) -> u64 {
        self.next_fh.fetch_add(1, Ordering::Relaxed) + 1
    }

    fn attr_of(
        &self,
        ino: u64,
        kind: FileType,
        size: u64,
        mode: u32,
        mtime: SystemTime,
    ) -> FileAttr {
        FileAttr {
            ino: fuser::INodeNo(ino),
            size,
            blocks: size.div_ceil(512),
            atime: mtime,
            mtime,
            ctime: mtime,
            crtime: mtime,
            kind,
            perm: (mode & 0o7777) as u16,
            nlink: if kind == FileType::Directory { 2 } else { 1 },
            uid: self.owner.0,
            gid: self.owner.1,
            rdev: 0,
            blksize: 4096,
            flags: 0,
        }
    }

    async fn lstat(&self, p: &str) -> Result<Stat, Errno> {
        self.tree.lstat(p).await.map_err(|e| errno(&e))
    }

    /// The attributes of `ino` (at its path, or an orphan's).
    async fn attr(&self, st: &State, ino: u64) -> Result<FileAttr, Errno> {
        let Some(p) = st.inodes.path(ino) else {
            let (size, mtime) = match st.orphans.get(&ino).ok_or(Errno::ENOENT)? {
                Orphan::Written(b) => (b.data.len() as u64, b.written),
                Orphan::Stored(content) => (content.size(), SystemTime::now()),
            };
            return Ok(self.attr_of(ino, FileType::RegularFile, size, 0o644, mtime));
        };
        let stat = self.lstat(p).await?;
        Ok(self.attr_from(st, ino, stat))
    }

    /// The attributes of `ino`, whose path the staged tree gives `stat`.
    fn attr_from(&self, st: &State, ino: u64, stat: Stat) -> FileAttr {
        let (size, mtime) = match st.buffers.get(&ino) {
            Some(b) => (b.data.len() as u64, b.written),
            None => (stat.size, stat.mtime),
        };
        self.attr_of(ino, file_type(stat.kind), size, stat.mode, mtime)
    }

    /// Lists the directories that lead to `p` when the tree was opened lazily and has not yet
    /// (a round trip each), before the caller takes the state lock.
    async fn reach(&self, p: &str) {
        if self.tree.is_partially_loaded() {
            let _ = self.tree.lstat(p).await;
        }
    }

    async fn exists(&self, p: &str) -> bool {
        self.tree.lstat(p).await.is_ok()
    }

    /// Checks that `p`'s parent directory exists (new entries need one).
    async fn parent_is_dir(&self, p: &str) -> Result<(), Errno> {
        match self.lstat(path::parent(p)).await?.kind {
            FileKind::Directory => Ok(()),
            _ => Err(Errno::ENOTDIR),
        }
    }

    /// The bytes `source` names (loaded over the network when the tree has not yet).
    async fn load(&self, source: Source) -> Result<Arc<Vec<u8>>, Errno> {
        match source {
            Source::Buffer(data) => Ok(data),
            Source::Tree(p) => self.tree.read_shared(&p).await.map_err(|e| errno(&e)),
            Source::Orphan(content) => self
                .tree
                .read_detached(&content)
                .await
                .map_err(|e| errno(&e)),
        }
    }

    /// Runs `change` on `ino`'s buffer, made from its current bytes first when it has none
    /// (loaded with no lock held). A buffer `change` left unchanged is dropped again.
    async fn with_buffer<T>(
        &self,
        ino: u64,
        change: impl FnOnce(&mut Buffer, usize) -> Result<T, Errno>,
    ) -> Result<T, Errno> {
        let mut st = loop {
            let source = {
                let st = self.state.lock().await;
                if st.buffer_of(ino).is_some() {
                    break st;
                }
                st.source(ino)?
            };
            let data = self.load(source.clone()).await?;
            let mut st = self.state.lock().await;
            if st.buffer_of(ino).is_some() {
                break st;
            }
            // Moved, removed or replaced while it loaded: look again.
            if !st.still(ino, &source) {
                continue;
            }
            let buffer = Buffer::new(data);
            match st.orphans.get_mut(&ino) {
                Some(orphan) => *orphan = Orphan::Written(buffer),
                None => {
                    st.buffers.insert(ino, buffer);
                }
            }
            break st;
        };
        let others = st.buffered_bytes();
        let b = st.buffer_mut(ino).ok_or(Errno::ENOENT)?;
        let others = others.saturating_sub(b.data.len());
        let result = change(b, others);
        let dirty = b.dirty;
        if !dirty {
            st.buffers.remove(&ino);
        }
        result
    }

    /// Writes `ino`'s buffer to the staged tree (an orphan's stays with it).
    async fn persist(&self, st: &mut State, ino: u64) -> Result<(), Errno> {
        let (Some(b), Some(p)) = (st.buffers.get(&ino), st.inodes.path(ino)) else {
            return Ok(());
        };
        let p = p.to_owned();
        let (bytes, written) = (b.data.as_ref().clone(), b.written);
        let size = bytes.len() as u64;
        let stored = match self.tree.write(&p, bytes).await {
            Ok(()) => self.tree.utimes(&p, written).await,
            Err(e) => Err(e),
        };
        if let Err(e) = stored {
            let code = errno(&e);
            if let Some(b) = st.buffers.get_mut(&ino) {
                if b.refused.is_none() {
                    eprintln!("supabash mount: {p} could not be written to the staged tree ({e}); it stays in the mount until written again, and a commit fails until then");
                }
                b.refused = Some(code);
            }
            return Err(code);
        }
        st.buffers.remove(&ino);
        st.summary.wrote(&p, size);
        Ok(())
    }

    /// Writes every buffer to the staged tree (a refusal names the file's path).
    async fn persist_all(&self, st: &mut State) -> Result<(), (String, Errno)> {
        let inos: Vec<u64> = st.buffers.keys().copied().collect();
        for ino in inos {
            if let Err(e) = self.persist(st, ino).await {
                return Err((st.path(ino).unwrap_or_default(), e));
            }
        }
        Ok(())
    }

    /// Writes the buffers left alone for `idle` to the staged tree, [`WRITE_BEHIND_BATCH`] at
    /// a time with the lock let go in between; a refused one waits for its next write.
    pub async fn persist_idle(&self, idle: Duration) {
        loop {
            let mut st = self.state.lock().await;
            let due: Vec<u64> = st
                .buffers
                .iter()
                .filter(|(_, b)| b.refused.is_none() && b.touched.elapsed() >= idle)
                .map(|(ino, _)| *ino)
                .take(WRITE_BEHIND_BATCH)
                .collect();
            let before = st.buffers.len();
            for ino in &due {
                let _ = self.persist(&mut st, *ino).await;
            }
            if due.len() < WRITE_BEHIND_BATCH || st.buffers.len() == before {
                return;
            }
        }
    }
}

/// The session: its change list, its commit, its limits and what it did.
impl MountFs {
    /// The staged changes, after every buffer reached the tree.
    pub async fn changes(
        &self,
        ws: &Workspace,
    ) -> supabash::Result<Vec<supabash::tree::StagedChange>> {
        let mut st = self.state.lock().await;
        self.persist_all(&mut st).await.map_err(buffer_error)?;
        ws.changes()
    }

    /// Commits the staged tree as one revision, with every buffer written first; no
    /// request runs meanwhile. `record_session`: the
    /// session's audit action goes with it (not when sending again a commit whose outcome is
    /// unknown: that one carries the action already).
    pub async fn commit(
        &self,
        ws: &Workspace,
        options: CommitOptions,
        record_session: bool,
    ) -> supabash::Result<CommitResult> {
        let mut st = self.state.lock().await;
        self.persist_all(&mut st).await.map_err(buffer_error)?;
        let kept = self.tree.kept_local();
        if !kept.is_empty() {
            let shown: Vec<&str> = kept.iter().take(20).map(String::as_str).collect();
            eprintln!(
                "supabash mount: {} path(s) the ignore list keeps out of this commit stay in the mount session only (ignored): {}{}",
                kept.len(),
                shown.join(", "),
                if kept.len() > shown.len() { ", ..." } else { "" }
            );
        }
        if record_session {
            ws.record(st.summary.take_action(self.read_only));
        }
        let result = ws.commit(options).await;
        st.summary
            .committed(result.as_ref().ok().map(|r| r.receipt.revision.clone()));
        result
    }

    /// What `statfs` reports: the limits as 4 KiB blocks and as a file count.
    pub fn capacity(&self) -> (u64, u64) {
        let limits = self.tree.limits();
        (
            (limits.max_staged_bytes / 4096) as u64,
            limits.max_files as u64,
        )
    }

    /// The audit record of what the session did since its previous record (see
    /// `Summary::take_action`).
    pub async fn take_session_action(&self) -> supabash::audit::Action {
        let mut st = self.state.lock().await;
        // What a refused buffer held is not counted as written.
        let _ = self.persist_all(&mut st).await;
        st.summary.take_action(self.read_only)
    }

    /// What the session did so far.
    pub async fn summary(&self) -> Summary {
        self.state.lock().await.summary.clone()
    }
}

fn buffer_error((p, e): (String, Errno)) -> supabash::SupabashError {
    supabash::SupabashError::new(
        ErrorCode::QuotaExceeded,
        format!(
            "{p}, written through the mount, could not be written to the staged tree (errno {}); it stays in the mount until written again",
            e.code()
        ),
    )
    .with_path(&p)
}

/// Writes the buffers of `fs` left alone for [`WRITE_BEHIND`] to its staged tree, every
/// [`WRITE_BEHIND`], until the mount goes.
pub async fn write_behind(fs: Weak<MountFs>) {
    loop {
        tokio::time::sleep(WRITE_BEHIND).await;
        let Some(fs) = fs.upgrade() else { return };
        fs.persist_idle(WRITE_BEHIND).await;
    }
}

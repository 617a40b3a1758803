//! The filesystem a mount serves: the workspace's staged tree seen through inode numbers, with
//! a write-back buffer per open file (shared by every handle of that file, written to the tree
//! at flush, fsync, release and before a commit). Symbolic links, modes and times are the
//! staged tree's, committed with it. Requests run concurrently; the mount's state is behind one
//! lock that is never held while a body or a listing loads over the network. A file opened for
//! reading while no handle holds a buffer of it gets a handle of its own (a [`Snapshot`]) whose
//! reads, flush and release never take that lock: until the mount changes anything, what it
//! read at open is the file's content.

use crate::fuse_inodes::{child, Inodes};
use crate::fuse_summary::Summary;
use fuser::{Errno, FileAttr, FileType};
use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, SystemTime};
use supabash::tree::{FileKind, Stat};
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
/// `OpenFile::written`), so nothing the kernel cached goes stale. Without this the kernel
/// asks again for every file each time `git status` looks at it.
pub const TTL: Duration = Duration::from_secs(24 * 3600);

/// The bytes of an open file, shared by its handles.
#[derive(Debug)]
struct OpenFile {
    data: Arc<Vec<u8>>,
    dirty: bool,
    /// When the buffer last changed (while dirty): the modification time it shows and the one
    /// it reaches the staged tree with, so the kernel never sees it move at flush.
    written: SystemTime,
    handles: usize,
}

/// A read-only handle opened while no handle held a buffer of its file: the content it read
/// at open, valid while the mount's change count is still `generation`.
#[derive(Debug)]
struct Snapshot {
    ino: u64,
    data: Arc<Vec<u8>>,
    generation: u64,
}

/// What the lock-free read path keeps (behind a lock of its own, held for a map operation).
#[derive(Debug, Default)]
struct Readers {
    /// Snapshot handles by file handle.
    snapshots: HashMap<u64, Arc<Snapshot>>,
    /// The buffer each inode held at its last open (see `open`: the kernel keeps its page
    /// cache while it is the same).
    opened: HashMap<u64, Weak<Vec<u8>>>,
}

/// Counts a change of the mount when dropped, that is once the change is done: a snapshot
/// taken before it (or while it ran) no longer serves reads.
struct Changing<'a>(&'a AtomicU64);

impl Drop for Changing<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
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
    /// Open files by inode number.
    files: HashMap<u64, OpenFile>,
    /// File handle → inode number.
    handles: HashMap<u64, u64>,
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
    readers: std::sync::Mutex<Readers>,
    /// The last file or directory handle handed out.
    next_fh: AtomicU64,
    /// How many changes the mount made (see [`Changing`]).
    generation: AtomicU64,
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
            readers: Default::default(),
            next_fh: AtomicU64::new(0),
            generation: AtomicU64::new(0),
            walker: AtomicU32::new(0),
            read_only,
            owner,
        }
    }

    /// How long the kernel may cache entries and attributes of this mount.
    pub fn ttl(&self) -> Duration {
        TTL
    }

    /// Whether the mount refuses every change (a revision or `--read-only` mount): its files
    /// are then opened without a handle (see `fuse_ops` `open`) and read by inode.
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

    /// Checks that the mount is writable and counts the change the caller makes (see
    /// [`Changing`]).
    fn change(&self) -> Result<Changing<'_>, Errno> {
        self.writable()?;
        Ok(Changing(&self.generation))
    }

    /// A new file or directory handle.
    fn handle(&self) -> u64 {
        self.next_fh.fetch_add(1, Ordering::Relaxed) + 1
    }

    fn readers(&self) -> std::sync::MutexGuard<'_, Readers> {
        self.readers.lock().expect("readers lock")
    }

    fn snapshot(&self, fh: u64) -> Option<Arc<Snapshot>> {
        self.readers().snapshots.get(&fh).cloned()
    }

    /// Gives `ino`'s snapshot handles `data`, what the file holds now (a buffer that reached
    /// the tree, or went with its last handle), so one that outlives its path reads that. Their
    /// generation stays: while the mount is changed they read the file as it is.
    fn refresh_snapshots(&self, ino: u64, data: &Arc<Vec<u8>>) {
        for snapshot in self.readers().snapshots.values_mut() {
            if snapshot.ino == ino {
                *snapshot = Arc::new(Snapshot {
                    ino,
                    data: data.clone(),
                    generation: snapshot.generation,
                });
            }
        }
    }

    /// Whether the kernel may keep `ino`'s page cache when it is opened with `data`: always on
    /// a read-only mount, and on a writable one when the file holds the same buffer as at its
    /// previous open (nothing changed it meanwhile; writes through the mount update the page
    /// cache themselves). Records `data` as the buffer of this open.
    fn keeps_cache(&self, readers: &mut Readers, ino: u64, data: &Arc<Vec<u8>>) -> bool {
        let same = readers
            .opened
            .get(&ino)
            .and_then(Weak::upgrade)
            .is_some_and(|before| Arc::ptr_eq(&before, data));
        readers.opened.insert(ino, Arc::downgrade(data));
        self.read_only || same
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

    /// The attributes of `ino` (at `p`, when it still names a path).
    async fn attr(&self, st: &State, ino: u64) -> Result<FileAttr, Errno> {
        let open = st.files.get(&ino);
        let Some(p) = st.inodes.path(ino) else {
            // Unlinked while open: what the handles still see.
            let size = match open {
                Some(f) => f.data.len(),
                None => {
                    let readers = self.readers();
                    let mut held = readers.snapshots.values().filter(|s| s.ino == ino);
                    held.next().ok_or(Errno::ENOENT)?.data.len()
                }
            };
            let now = SystemTime::now();
            return Ok(self.attr_of(ino, FileType::RegularFile, size as u64, 0o644, now));
        };
        let stat = self.lstat(p).await?;
        Ok(self.attr_from(st, ino, stat))
    }

    /// The attributes of `ino`, whose path the staged tree gives `stat`.
    fn attr_from(&self, st: &State, ino: u64, stat: Stat) -> FileAttr {
        let open = st.files.get(&ino);
        let size = open.map_or(stat.size, |f| f.data.len() as u64);
        let mtime = match open {
            Some(f) if f.dirty => f.written,
            _ => stat.mtime,
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

    /// Writes `ino`'s buffer to the tree if it changed since.
    async fn persist(&self, st: &mut State, ino: u64) -> Result<(), Errno> {
        let path = st.inodes.path(ino).map(str::to_owned);
        let Some(f) = st.files.get_mut(&ino).filter(|f| f.dirty) else {
            return Ok(());
        };
        let Some(p) = path else {
            f.dirty = false;
            return Ok(());
        };
        let data = f.data.clone();
        let bytes = f.data.as_ref().clone();
        let written = f.written;
        let size = bytes.len() as u64;
        self.tree.write(&p, bytes).await.map_err(|e| errno(&e))?;
        self.tree.utimes(&p, written).await.map_err(|e| errno(&e))?;
        if let Some(f) = st.files.get_mut(&ino) {
            f.dirty = false;
        }
        self.refresh_snapshots(ino, &data);
        st.summary.wrote(&p, size);
        Ok(())
    }

    /// Writes every changed buffer to the tree.
    async fn persist_all(&self, st: &mut State) -> Result<(), Errno> {
        let dirty: Vec<u64> = st
            .files
            .iter()
            .filter(|(_, f)| f.dirty)
            .map(|(ino, _)| *ino)
            .collect();
        for ino in dirty {
            self.persist(st, ino).await?;
        }
        Ok(())
    }

    /// `lookup`.
    pub async fn lookup(&self, parent: u64, name: &std::ffi::OsStr) -> Result<FileAttr, Errno> {
        let p = existing(&self.state.lock().await.path(parent)?, name)?;
        // Lists the parent if the lazy tree has not yet, with no lock held.
        self.reach(&p).await;
        let mut st = self.state.lock().await;
        let p = existing(&st.path(parent)?, name)?;
        let stat = self.lstat(&p).await?;
        let ino = st.inodes.ino(&p);
        Ok(self.attr_from(&st, ino, stat))
    }

    /// `getattr`.
    pub async fn getattr(&self, ino: u64) -> Result<FileAttr, Errno> {
        let p = self.state.lock().await.inodes.path(ino).map(str::to_owned);
        if let Some(p) = p {
            // See `lookup`: any listing it needs happens before the lock.
            self.reach(&p).await;
        }
        let st = self.state.lock().await;
        self.attr(&st, ino).await
    }

    /// `setattr`: size (truncate), mode and modification time; owners are accepted and
    /// ignored (one owner serves every file).
    pub async fn setattr(
        &self,
        ino: u64,
        mode: Option<u32>,
        size: Option<u64>,
        mtime: Option<SystemTime>,
    ) -> Result<FileAttr, Errno> {
        let mut st = self.state.lock().await;
        let _changing = if mode.is_some() || size.is_some() || mtime.is_some() {
            Some(self.change()?)
        } else {
            None
        };
        let p = st.inodes.path(ino).map(str::to_owned);
        if let Some(size) = size {
            self.tree
                .limits()
                .check_file(p.as_deref().unwrap_or("/"), size as usize)
                .map_err(|_| Errno::EFBIG)?;
            if let Entry::Vacant(slot) = st.files.entry(ino) {
                let p = p.as_deref().ok_or(Errno::ENOENT)?;
                let data = self.tree.read_shared(p).await.map_err(|e| errno(&e))?;
                slot.insert(OpenFile {
                    data,
                    dirty: false,
                    written: SystemTime::now(),
                    handles: 0,
                });
            }
            if let Some(f) = st.files.get_mut(&ino) {
                Arc::make_mut(&mut f.data).resize(size as usize, 0);
                f.dirty = true;
                f.written = mtime.unwrap_or_else(SystemTime::now);
            }
            let result = self.persist(&mut st, ino).await;
            if st.files.get(&ino).is_some_and(|f| f.handles == 0) {
                st.files.remove(&ino);
            }
            result?;
        } else {
            self.persist(&mut st, ino).await?;
        }
        if let Some(p) = p.as_deref() {
            if let Some(mode) = mode {
                self.tree.chmod(p, mode).await.map_err(|e| errno(&e))?;
            }
            if let Some(t) = mtime {
                self.tree.utimes(p, t).await.map_err(|e| errno(&e))?;
            }
            if mode.is_some() || mtime.is_some() {
                st.summary.touched(p);
            }
        }
        self.attr(&st, ino).await
    }

    /// `readlink`.
    pub async fn readlink(&self, ino: u64) -> Result<String, Errno> {
        let st = self.state.lock().await;
        let p = st.path(ino)?;
        self.tree.readlink(&p).await.map_err(|e| errno(&e))
    }

    /// `mkdir`.
    pub async fn mkdir(
        &self,
        parent: u64,
        name: &std::ffi::OsStr,
        mode: u32,
    ) -> Result<FileAttr, Errno> {
        let _changing = self.change()?;
        let mut st = self.state.lock().await;
        let p = creatable(&st.path(parent)?, name)?;
        self.tree.mkdir(&p, false).await.map_err(|e| errno(&e))?;
        self.tree.chmod(&p, mode).await.map_err(|e| errno(&e))?;
        st.summary.touched(&p);
        let ino = st.inodes.ino(&p);
        self.attr(&st, ino).await
    }

    /// `unlink` (files and links; directories answer `EISDIR`).
    pub async fn unlink(&self, parent: u64, name: &std::ffi::OsStr) -> Result<(), Errno> {
        let _changing = self.change()?;
        let mut st = self.state.lock().await;
        let p = existing(&st.path(parent)?, name)?;
        if self.lstat(&p).await?.kind == FileKind::Directory {
            return Err(Errno::EISDIR);
        }
        self.remove(&mut st, &p).await
    }

    /// Removes `p` (a file or an empty directory) from the staged tree and forgets its inode.
    async fn remove(&self, st: &mut State, p: &str) -> Result<(), Errno> {
        self.tree.rm(p, false, false).await.map_err(|e| errno(&e))?;
        st.inodes.remove(p);
        st.summary.touched(p);
        Ok(())
    }

    /// `rmdir`.
    pub async fn rmdir(&self, parent: u64, name: &std::ffi::OsStr) -> Result<(), Errno> {
        let _changing = self.change()?;
        let mut st = self.state.lock().await;
        let p = existing(&st.path(parent)?, name)?;
        if self.lstat(&p).await?.kind != FileKind::Directory {
            return Err(Errno::ENOTDIR);
        }
        self.remove(&mut st, &p).await
    }

    /// `symlink`: a link of the staged tree, committed with the rest (its target is its
    /// content). The target must stay inside the mount (core's rule: relative, not climbing
    /// above the root, a valid path); anything else is `EPERM`.
    pub async fn symlink(
        &self,
        parent: u64,
        name: &std::ffi::OsStr,
        target: &std::path::Path,
    ) -> Result<FileAttr, Errno> {
        let _changing = self.change()?;
        let mut st = self.state.lock().await;
        let dir = st.path(parent)?;
        let p = creatable(&dir, name)?;
        let target = target.to_str().ok_or(Errno::EPERM)?;
        if let Err(e) = supabash_core::posix::check_target(&p, target) {
            eprintln!("supabash mount: symbolic link {p} -> {target} refused: {e}");
            return Err(Errno::EPERM);
        }
        if self.exists(&p).await {
            return Err(Errno::EEXIST);
        }
        self.parent_is_dir(&p).await?;
        self.tree.symlink(target, &p).await.map_err(|e| errno(&e))?;
        st.summary.touched(&p);
        let ino = st.inodes.ino(&p);
        self.attr(&st, ino).await
    }

    /// `rename`: `noreplace` refuses an existing target (`EEXIST`), otherwise a file replaces
    /// a file and a directory an empty directory, as rename(2) does.
    pub async fn rename(
        &self,
        parent: u64,
        name: &std::ffi::OsStr,
        new_parent: u64,
        new_name: &std::ffi::OsStr,
        noreplace: bool,
    ) -> Result<(), Errno> {
        let _changing = self.change()?;
        let mut st = self.state.lock().await;
        let from = existing(&st.path(parent)?, name)?;
        let to = creatable(&st.path(new_parent)?, new_name)?;
        if from == to {
            return Ok(());
        }
        if noreplace && self.exists(&to).await {
            return Err(Errno::EEXIST);
        }
        self.tree.mv(&from, &to).await.map_err(|e| errno(&e))?;
        st.inodes.rename(&from, &to);
        st.summary.touched(&from);
        st.summary.touched(&to);
        Ok(())
    }

    /// `open`: loads (and verifies) the body when no handle holds it yet, with no lock held
    /// while it loads; `truncate` empties it. A read-only open of a file no handle holds a
    /// buffer of gets a [`Snapshot`] handle. Answers the handle and whether the kernel may
    /// keep its page cache (see `keeps_cache`).
    pub async fn open(&self, ino: u64, write: bool, truncate: bool) -> Result<(u64, bool), Errno> {
        let _changing = if write || truncate {
            Some(self.change()?)
        } else {
            None
        };
        if !write && !truncate {
            if let Some(opened) = self.open_snapshot(ino).await? {
                return Ok(opened);
            }
        }
        loop {
            let (p, held) = {
                let st = self.state.lock().await;
                (st.path(ino)?, st.files.contains_key(&ino))
            };
            let loaded = if truncate || held {
                None
            } else {
                Some(self.tree.read_shared(&p).await.map_err(|e| errno(&e))?)
            };
            let mut guard = self.state.lock().await;
            let st = &mut *guard;
            let keep = match st.files.entry(ino) {
                Entry::Vacant(slot) => {
                    let data = match (truncate, loaded) {
                        (true, _) => Arc::new(Vec::new()),
                        (false, Some(data)) => data,
                        // Its last handle went while we looked: load it again.
                        (false, None) => continue,
                    };
                    let keep = self.keeps_cache(&mut self.readers(), ino, &data) && !truncate;
                    slot.insert(OpenFile {
                        data,
                        dirty: truncate,
                        written: SystemTime::now(),
                        handles: 1,
                    });
                    keep
                }
                Entry::Occupied(mut slot) => {
                    let f = slot.get_mut();
                    if truncate {
                        f.data = Arc::new(Vec::new());
                        f.dirty = true;
                        f.written = SystemTime::now();
                    }
                    f.handles += 1;
                    !truncate
                }
            };
            let fh = self.handle();
            st.handles.insert(fh, ino);
            return Ok((fh, keep));
        }
    }

    /// A [`Snapshot`] handle of `ino` when no handle holds a buffer of it (`None`: one does,
    /// share it). The state lock is taken once, to find the path; the body loads without it.
    async fn open_snapshot(&self, ino: u64) -> Result<Option<(u64, bool)>, Errno> {
        let generation = self.generation.load(Ordering::SeqCst);
        let p = {
            let st = self.state.lock().await;
            if st.files.contains_key(&ino) {
                return Ok(None);
            }
            st.path(ino)?
        };
        let data = self.tree.read_shared(&p).await.map_err(|e| errno(&e))?;
        let fh = self.handle();
        let mut readers = self.readers();
        let keep = self.keeps_cache(&mut readers, ino, &data);
        let snapshot = Snapshot {
            ino,
            data,
            generation,
        };
        readers.snapshots.insert(fh, Arc::new(snapshot));
        Ok(Some((fh, keep)))
    }

    /// What a snapshot handle reads: its content while the mount changed nothing since it was
    /// opened, otherwise the file's as it is now (an open buffer's or the tree's), or, when
    /// its path is gone (removed or replaced while open), still the content it opened.
    async fn snapshot_data(&self, snapshot: &Snapshot) -> Result<Arc<Vec<u8>>, Errno> {
        if self.generation.load(Ordering::SeqCst) == snapshot.generation {
            return Ok(snapshot.data.clone());
        }
        let p = {
            let st = self.state.lock().await;
            if let Some(f) = st.files.get(&snapshot.ino) {
                return Ok(f.data.clone());
            }
            st.inodes.path(snapshot.ino).map(str::to_owned)
        };
        let Some(p) = p else {
            return Ok(snapshot.data.clone());
        };
        match self.tree.read_shared(&p).await {
            Ok(data) => Ok(data),
            Err(e) if errno(&e) == Errno::ENOENT => Ok(snapshot.data.clone()),
            Err(e) => Err(errno(&e)),
        }
    }

    /// `create`: a new empty file (or an existing one, opened), with a handle.
    pub async fn create(
        &self,
        parent: u64,
        name: &std::ffi::OsStr,
        mode: u32,
        exclusive: bool,
    ) -> Result<(FileAttr, u64), Errno> {
        let _changing = self.change()?;
        let ino = {
            let mut st = self.state.lock().await;
            let p = creatable(&st.path(parent)?, name)?;
            match self.tree.lstat(&p).await {
                Ok(_) if exclusive => return Err(Errno::EEXIST),
                Ok(s) if s.kind == FileKind::Directory => return Err(Errno::EISDIR),
                Ok(_) => {}
                Err(_) => {
                    self.tree
                        .write(&p, Vec::new())
                        .await
                        .map_err(|e| errno(&e))?;
                    self.tree.chmod(&p, mode).await.map_err(|e| errno(&e))?;
                    st.summary.touched(&p);
                }
            }
            st.inodes.ino(&p)
        };
        let (fh, _) = self.open(ino, true, false).await?;
        let st = self.state.lock().await;
        Ok((self.attr(&st, ino).await?, fh))
    }

    /// `read`: copies from the handle's buffer after the lock is let go (a snapshot handle
    /// takes no lock while the mount is unchanged).
    pub async fn read(&self, fh: u64, offset: u64, size: u32) -> Result<Vec<u8>, Errno> {
        let data = if let Some(snapshot) = self.snapshot(fh) {
            self.snapshot_data(&snapshot).await?
        } else {
            let st = self.state.lock().await;
            let ino = st.handles.get(&fh).ok_or(Errno::EBADF)?;
            st.files.get(ino).ok_or(Errno::EBADF)?.data.clone()
        };
        Ok(range(&data, offset, size))
    }

    /// `read` without a handle: a read-only mount answers no `open` (see `fuse_ops` `open`),
    /// so the kernel reads its files by inode. Its tree never changes.
    pub async fn read_inode(&self, ino: u64, offset: u64, size: u32) -> Result<Vec<u8>, Errno> {
        let p = self.state.lock().await.path(ino)?;
        let data = self.tree.read_shared(&p).await.map_err(|e| errno(&e))?;
        Ok(range(&data, offset, size))
    }

    /// `write` into the handle's buffer.
    pub async fn write(&self, fh: u64, offset: u64, bytes: &[u8]) -> Result<u32, Errno> {
        let _changing = self.change()?;
        let mut st = self.state.lock().await;
        let ino = *st.handles.get(&fh).ok_or(Errno::EBADF)?;
        let end = (offset as usize)
            .checked_add(bytes.len())
            .ok_or(Errno::EFBIG)?;
        if end > self.tree.limits().max_file_bytes {
            return Err(Errno::EFBIG);
        }
        let f = st.files.get_mut(&ino).ok_or(Errno::EBADF)?;
        let data = Arc::make_mut(&mut f.data);
        if data.len() < end {
            data.resize(end, 0);
        }
        data[offset as usize..end].copy_from_slice(bytes);
        f.dirty = true;
        f.written = SystemTime::now();
        Ok(bytes.len() as u32)
    }

    /// `fallocate` (mode 0 only: makes room, never shrinks).
    pub async fn fallocate(
        &self,
        fh: u64,
        offset: u64,
        length: u64,
        mode: i32,
    ) -> Result<(), Errno> {
        let _changing = self.change()?;
        if mode != 0 {
            return Err(Errno::EOPNOTSUPP);
        }
        let mut st = self.state.lock().await;
        let ino = *st.handles.get(&fh).ok_or(Errno::EBADF)?;
        let end = offset.checked_add(length).ok_or(Errno::EFBIG)? as usize;
        if end > self.tree.limits().max_file_bytes {
            return Err(Errno::EFBIG);
        }
        let f = st.files.get_mut(&ino).ok_or(Errno::EBADF)?;
        if f.data.len() < end {
            Arc::make_mut(&mut f.data).resize(end, 0);
            f.dirty = true;
            f.written = SystemTime::now();
        }
        Ok(())
    }

    /// `flush` and `fsync`: the handle's buffer reaches the staged tree (a snapshot handle, or
    /// a file opened without a handle, has none).
    pub async fn flush(&self, fh: u64) -> Result<(), Errno> {
        if fh == NO_HANDLE || self.readers().snapshots.contains_key(&fh) {
            return Ok(());
        }
        let mut st = self.state.lock().await;
        let ino = *st.handles.get(&fh).ok_or(Errno::EBADF)?;
        self.persist(&mut st, ino).await
    }

    /// `release`: writes the buffer back and drops it with its last handle (a snapshot handle
    /// just goes).
    pub async fn release(&self, fh: u64) -> Result<(), Errno> {
        if self.readers().snapshots.remove(&fh).is_some() {
            return Ok(());
        }
        let mut st = self.state.lock().await;
        let ino = st.handles.remove(&fh).ok_or(Errno::EBADF)?;
        let result = self.persist(&mut st, ino).await;
        let last = st.files.get_mut(&ino).is_some_and(|f| {
            f.handles = f.handles.saturating_sub(1);
            f.handles == 0
        });
        if last {
            // A buffer the tree refused (its close already failed) goes with its last handle.
            if let Some(f) = st.files.remove(&ino) {
                self.refresh_snapshots(ino, &f.data);
            }
        }
        result
    }

    /// `opendir` by the thread `tid`: takes the listing the following `readdir` calls page
    /// through (and prefetches the directory's bodies, unless the mount's own walk lists it).
    pub async fn opendir(&self, ino: u64, tid: u32) -> Result<u64, Errno> {
        let p = self.state.lock().await.path(ino)?;
        // Listing may fetch the directory (a lazy tree): no lock is held meanwhile.
        let entries = self.tree.readdir(&p).await.map_err(|e| errno(&e))?;
        if tid == 0 || tid != self.walker.load(Ordering::SeqCst) {
            self.prefetch(&p);
        }
        let mut st = self.state.lock().await;
        let parent_ino = st.inodes.ino(path::parent(&p));
        let mut listing = vec![
            Listed {
                ino,
                kind: FileType::Directory,
                name: ".".into(),
            },
            Listed {
                ino: parent_ino,
                kind: FileType::Directory,
                name: "..".into(),
            },
        ];
        let named = entries.into_iter().map(|e| (e.name, file_type(e.kind)));
        for (name, kind) in named {
            let ino = st.inodes.ino(&child(&p, &name));
            listing.push(Listed { ino, kind, name });
        }
        let fh = self.handle();
        st.dirs.insert(fh, listing);
        Ok(fh)
    }

    /// Fetches the small files of directory `p` in the background, in bounded batches, the
    /// first time it is listed (programs that list a directory usually read it next).
    fn prefetch(&self, p: &str) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if !self
            .prefetched
            .lock()
            .expect("prefetch set")
            .insert(p.to_owned())
        {
            return;
        }
        let tree = self.tree.clone();
        let dir = p.to_owned();
        runtime.spawn(async move {
            let _ = tree.prefetch_dir(&dir).await;
        });
    }

    /// The entries of a directory handle from `offset` on.
    pub async fn readdir(&self, fh: u64, offset: u64) -> Result<Vec<Listed>, Errno> {
        let st = self.state.lock().await;
        let listing = st.dirs.get(&fh).ok_or(Errno::EBADF)?;
        Ok(listing.iter().skip(offset as usize).cloned().collect())
    }

    /// The entries of a directory handle from `offset` on, at most [`PLUS_BATCH`], each with
    /// its position in the listing and its attributes (`READDIRPLUS`: the kernel caches them
    /// as if each had been looked up). An entry gone since opendir is left out.
    pub async fn readdirplus(
        &self,
        fh: u64,
        offset: u64,
    ) -> Result<Vec<(u64, Listed, FileAttr)>, Errno> {
        let st = self.state.lock().await;
        let listing = st.dirs.get(&fh).ok_or(Errno::EBADF)?;
        let mut out = Vec::new();
        let from = offset as usize;
        for (at, e) in listing.iter().enumerate().skip(from).take(PLUS_BATCH) {
            if let Ok(attr) = self.attr(&st, e.ino).await {
                out.push((at as u64, e.clone(), attr));
            }
        }
        Ok(out)
    }

    /// `releasedir`.
    pub async fn releasedir(&self, fh: u64) {
        self.state.lock().await.dirs.remove(&fh);
    }

    /// Whether `ino` exists (for `access`).
    pub async fn access(&self, ino: u64, write: bool) -> Result<(), Errno> {
        if write {
            self.writable()?;
        }
        self.getattr(ino).await.map(|_| ())
    }

    /// The staged changes, after every open buffer reached the tree.
    pub async fn changes(
        &self,
        ws: &Workspace,
    ) -> supabash::Result<Vec<supabash::tree::StagedChange>> {
        let mut st = self.state.lock().await;
        self.persist_all(&mut st).await.map_err(buffer_error)?;
        ws.changes()
    }

    /// Commits the staged tree as one revision, with every open buffer written first; no
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
        self.state.lock().await.summary.take_action(self.read_only)
    }

    /// What the session did so far.
    pub async fn summary(&self) -> Summary {
        self.state.lock().await.summary.clone()
    }
}

/// The file handle of a file opened without one (see [`MountFs::read_inode`]); handles
/// handed out start at 1.
pub const NO_HANDLE: u64 = 0;

/// How many entries one `readdirplus` answer looks at (the kernel's buffer holds a few dozen;
/// it asks again from the next offset).
pub const PLUS_BATCH: usize = 128;

/// Bytes `offset..offset + size` of `data` (fewer at its end).
fn range(data: &[u8], offset: u64, size: u32) -> Vec<u8> {
    let start = (offset as usize).min(data.len());
    let end = start.saturating_add(size as usize).min(data.len());
    data[start..end].to_vec()
}

fn buffer_error(e: Errno) -> supabash::SupabashError {
    supabash::SupabashError::new(
        ErrorCode::QuotaExceeded,
        format!(
            "an open file could not be written to the staged tree (errno {})",
            e.code()
        ),
    )
}

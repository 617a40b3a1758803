//! The requests on names of a mount: lookup and attributes, links, new files and directories,
//! removal (with the orphans it leaves to programs holding a file open) and rename.

use super::*;

impl MountFs {
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

    /// `setattr`: size (truncate, after which the file reaches the tree), mode and
    /// modification time; owners are accepted and ignored (one owner serves every file). An
    /// orphan takes a new size only.
    pub async fn setattr(
        &self,
        ino: u64,
        mode: Option<u32>,
        size: Option<u64>,
        mtime: Option<SystemTime>,
    ) -> Result<FileAttr, Errno> {
        if mode.is_some() || size.is_some() || mtime.is_some() {
            self.writable()?;
        }
        if let Some(size) = size {
            let p = self.state.lock().await.inodes.path(ino).map(str::to_owned);
            self.tree
                .limits()
                .check_file(p.as_deref().unwrap_or("/"), size as usize)
                .map_err(|_| Errno::EFBIG)?;
            self.with_buffer(ino, |b, _| {
                Arc::make_mut(&mut b.data).resize(size as usize, 0);
                b.changed();
                if let Some(t) = mtime {
                    b.written = t;
                }
                Ok(())
            })
            .await?;
        }
        let mut st = self.state.lock().await;
        // Written first, so the mode and time set here are not undone when it is.
        self.persist(&mut st, ino).await?;
        if let Some(p) = st.inodes.path(ino).map(str::to_owned) {
            if let Some(mode) = mode {
                self.tree.chmod(&p, mode).await.map_err(|e| errno(&e))?;
            }
            if let Some(t) = mtime {
                self.tree.utimes(&p, t).await.map_err(|e| errno(&e))?;
            }
            if mode.is_some() || mtime.is_some() {
                st.summary.touched(&p);
            }
        }
        self.attr(&st, ino).await
    }

    /// `readlink`.
    pub async fn readlink(&self, ino: u64) -> Result<String, Errno> {
        let st = self.state.lock().await;
        let p = st.path(ino)?;
        // The kernel follows what this answers: a stored link that would lead outside the
        // mount (or into a loop), as the kernel resolves it, is not handed over.
        if let Err(e) = self.tree.check_link(&p).await {
            eprintln!("supabash mount: symbolic link {p} not followed: {e}");
            return Err(Errno::EACCES);
        }
        self.tree.readlink(&p).await.map_err(|e| errno(&e))
    }

    /// `mkdir`.
    pub async fn mkdir(
        &self,
        parent: u64,
        name: &std::ffi::OsStr,
        mode: u32,
    ) -> Result<FileAttr, Errno> {
        self.writable()?;
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
        self.writable()?;
        let mut st = self.state.lock().await;
        let p = existing(&st.path(parent)?, name)?;
        let kind = self.lstat(&p).await?.kind;
        if kind == FileKind::Directory {
            return Err(Errno::EISDIR);
        }
        let orphan = self.orphan(&mut st, &p, kind)?;
        self.remove(&mut st, &p).await?;
        if let Some((ino, orphan)) = orphan {
            st.orphans.insert(ino, orphan);
        }
        Ok(())
    }

    /// What the file at `p` (of `kind`) leaves behind for programs that hold it open when its
    /// path goes: its buffer (taken from the live files) or its stored content.
    fn orphan(
        &self,
        st: &mut State,
        p: &str,
        kind: FileKind,
    ) -> Result<Option<(u64, Orphan)>, Errno> {
        if kind != FileKind::File {
            return Ok(None);
        }
        let ino = st.inodes.ino(p);
        let orphan = match st.buffers.remove(&ino) {
            Some(b) => Orphan::Written(b),
            None => Orphan::Stored(self.tree.detach(p).map_err(|e| errno(&e))?),
        };
        Ok(Some((ino, orphan)))
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
        self.writable()?;
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
        self.writable()?;
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
    /// a file (which programs holding it open still read) and a directory an empty
    /// directory, as rename(2) does.
    pub async fn rename(
        &self,
        parent: u64,
        name: &std::ffi::OsStr,
        new_parent: u64,
        new_name: &std::ffi::OsStr,
        noreplace: bool,
    ) -> Result<(), Errno> {
        self.writable()?;
        let mut st = self.state.lock().await;
        let from = existing(&st.path(parent)?, name)?;
        let to = creatable(&st.path(new_parent)?, new_name)?;
        if from == to {
            return Ok(());
        }
        let replaced = self.tree.lstat(&to).await.ok().map(|s| s.kind);
        if noreplace && replaced.is_some() {
            return Err(Errno::EEXIST);
        }
        // Taken before the move (which may still refuse), kept only once it is done.
        let orphan = match replaced {
            Some(kind) => self.orphan(&mut st, &to, kind)?,
            None => None,
        };
        if let Err(e) = self.tree.mv(&from, &to).await {
            if let Some((ino, Orphan::Written(b))) = orphan {
                st.buffers.insert(ino, b);
            }
            return Err(errno(&e));
        }
        if let Some((ino, orphan)) = orphan {
            st.orphans.insert(ino, orphan);
        }
        st.inodes.rename(&from, &to);
        st.summary.touched(&from);
        st.summary.touched(&to);
        Ok(())
    }

    /// `create`: a new empty file (or an existing one). Files have no handles: the kernel is
    /// answered handle 0 and uses the inode.
    pub async fn create(
        &self,
        parent: u64,
        name: &std::ffi::OsStr,
        mode: u32,
        exclusive: bool,
    ) -> Result<FileAttr, Errno> {
        self.writable()?;
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
        let ino = st.inodes.ino(&p);
        self.attr(&st, ino).await
    }

    /// Whether `ino` exists (for `access`).
    pub async fn access(&self, ino: u64, write: bool) -> Result<(), Errno> {
        if write {
            self.writable()?;
        }
        self.getattr(ino).await.map(|_| ())
    }
}

//! Directory listings of a mount: `opendir` takes a listing (and prefetches the directory's
//! small files), `readdir` and `readdirplus` page through it, `releasedir` drops it.

use super::*;

impl MountFs {
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
}

/// How many entries one `readdirplus` answer looks at (the kernel's buffer holds a few dozen;
/// it asks again from the next offset).
const PLUS_BATCH: usize = 128;

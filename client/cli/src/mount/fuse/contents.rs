//! The requests on a file's bytes: `read`, `write` (into the file's buffer), `fallocate`,
//! `fsync`, and `forget`, which lets an orphan's content go.

use super::*;

impl MountFs {
    /// `read` of `ino`: from its buffer, or its bytes in the tree (loaded with no lock held).
    pub async fn read(&self, ino: u64, offset: u64, size: u32) -> Result<Vec<u8>, Errno> {
        let source = self.state.lock().await.source(ino)?;
        let data = self.load(source).await?;
        Ok(range(&data, offset, size))
    }

    /// `write` into `ino`'s buffer. A write that would take the buffers of the mount's files
    /// past the staged-bytes limit is refused with `ENOSPC` (the staged tree's own limits are
    /// checked when a buffer reaches it).
    pub async fn write(&self, ino: u64, offset: u64, bytes: &[u8]) -> Result<u32, Errno> {
        self.writable()?;
        let end = (offset as usize)
            .checked_add(bytes.len())
            .ok_or(Errno::EFBIG)?;
        let limits = self.tree.limits();
        if end > limits.max_file_bytes {
            return Err(Errno::EFBIG);
        }
        self.with_buffer(ino, |b, others| {
            if others + end.max(b.data.len()) > limits.max_staged_bytes {
                return Err(Errno::ENOSPC);
            }
            let data = Arc::make_mut(&mut b.data);
            if data.len() < end {
                data.resize(end, 0);
            }
            data[offset as usize..end].copy_from_slice(bytes);
            b.changed();
            Ok(bytes.len() as u32)
        })
        .await
    }

    /// `fallocate` (mode 0 only: makes room, never shrinks).
    pub async fn fallocate(
        &self,
        ino: u64,
        offset: u64,
        length: u64,
        mode: i32,
    ) -> Result<(), Errno> {
        self.writable()?;
        if mode != 0 {
            return Err(Errno::EOPNOTSUPP);
        }
        let end = offset.checked_add(length).ok_or(Errno::EFBIG)? as usize;
        if end > self.tree.limits().max_file_bytes {
            return Err(Errno::EFBIG);
        }
        self.with_buffer(ino, |b, _| {
            if b.data.len() < end {
                Arc::make_mut(&mut b.data).resize(end, 0);
                b.changed();
            }
            Ok(())
        })
        .await
    }

    /// `fsync`: `ino`'s buffer reaches the staged tree now (the error says why it could not).
    pub async fn fsync(&self, ino: u64) -> Result<(), Errno> {
        let mut st = self.state.lock().await;
        self.persist(&mut st, ino).await
    }

    /// `forget`: the kernel holds `ino` no more; an orphan's content goes.
    pub async fn forget(&self, ino: u64) {
        self.state.lock().await.orphans.remove(&ino);
    }
}

/// Bytes `offset..offset + size` of `data` (fewer at its end).
fn range(data: &[u8], offset: u64, size: u32) -> Vec<u8> {
    let start = (offset as usize).min(data.len());
    let end = start.saturating_add(size as usize).min(data.len());
    data[start..end].to_vec()
}

//! The kernel side of a mount: each FUSE request becomes one call of [`MountFs`], run to its
//! end on the tokio runtime (bodies load over the workspace's transport), then answered.
//! Hard links are refused with `EPERM` (tools copy instead); extended attributes, locks and
//! special files are not supported.

use crate::mount::fuse::MountFs;
use fuser::{
    AccessFlags, Errno, FileHandle, FopenFlags, Generation, INodeNo, InitFlags, KernelConfig,
    LockOwner, OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory,
    ReplyDirectoryPlus, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, Request,
    TimeOrNow, WriteFlags,
};
use std::ffi::OsStr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::runtime::Handle;

/// A [`MountFs`] as a `fuser` filesystem.
pub struct Kernel {
    pub fs: Arc<MountFs>,
    pub runtime: Handle,
}

const GENERATION: Generation = Generation(0);

fn empty(reply: ReplyEmpty, result: Result<(), Errno>) {
    match result {
        Ok(()) => reply.ok(),
        Err(e) => reply.error(e),
    }
}

fn entry(reply: ReplyEntry, ttl: Duration, result: Result<fuser::FileAttr, Errno>) {
    match result {
        Ok(attr) => reply.entry(&ttl, &attr, GENERATION),
        Err(e) => reply.error(e),
    }
}

impl Kernel {
    fn run<T>(&self, f: impl std::future::Future<Output = T>) -> T {
        self.runtime.block_on(f)
    }
}

impl fuser::Filesystem for Kernel {
    /// Asks the kernel for `READDIRPLUS`: a listing carries every entry's attributes, so a
    /// program that lists a directory and then looks at its entries (`git status`, `ls -l`,
    /// `find`) sends no `lookup` for them. A kernel without it lists as before.
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        let _ = config.add_capabilities(InitFlags::FUSE_DO_READDIRPLUS);
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        entry(
            reply,
            self.fs.ttl(),
            self.run(self.fs.lookup(parent.0, name)),
        );
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match self.run(self.fs.getattr(ino.0)) {
            Ok(attr) => reply.attr(&self.fs.ttl(), &attr),
            Err(e) => reply.error(e),
        }
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let mtime = mtime.map(|t| match t {
            TimeOrNow::SpecificTime(t) => t,
            TimeOrNow::Now => SystemTime::now(),
        });
        match self.run(self.fs.setattr(ino.0, mode, size, mtime)) {
            Ok(attr) => reply.attr(&self.fs.ttl(), &attr),
            Err(e) => reply.error(e),
        }
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        match self.run(self.fs.readlink(ino.0)) {
            Ok(target) => reply.data(target.as_bytes()),
            Err(e) => reply.error(e),
        }
    }

    fn mknod(
        &self,
        _req: &Request,
        _parent: INodeNo,
        _name: &OsStr,
        _mode: u32,
        _umask: u32,
        _rdev: u32,
        reply: ReplyEntry,
    ) {
        reply.error(Errno::EPERM);
    }

    fn mkdir(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: ReplyEntry,
    ) {
        entry(
            reply,
            self.fs.ttl(),
            self.run(self.fs.mkdir(parent.0, name, mode & !umask)),
        );
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        empty(reply, self.run(self.fs.unlink(parent.0, name)));
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        empty(reply, self.run(self.fs.rmdir(parent.0, name)));
    }

    fn symlink(
        &self,
        _req: &Request,
        parent: INodeNo,
        link_name: &OsStr,
        target: &Path,
        reply: ReplyEntry,
    ) {
        entry(
            reply,
            self.fs.ttl(),
            self.run(self.fs.symlink(parent.0, link_name, target)),
        );
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        if flags.intersects(RenameFlags::RENAME_EXCHANGE | RenameFlags::RENAME_WHITEOUT) {
            return reply.error(Errno::EINVAL);
        }
        let noreplace = flags.contains(RenameFlags::RENAME_NOREPLACE);
        empty(
            reply,
            self.run(
                self.fs
                    .rename(parent.0, name, newparent.0, newname, noreplace),
            ),
        );
    }

    fn link(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _newparent: INodeNo,
        _newname: &OsStr,
        reply: ReplyEntry,
    ) {
        eprintln!(
            "supabash mount: {}",
            supabash_core::posix::PosixError::HardLink
        );
        reply.error(Errno::EPERM);
    }

    fn open(&self, _req: &Request, _ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        // Files need no handle: `ENOSYS` makes the kernel open every file of the mount without
        // asking from then on (no `open`, `flush` or `release`; its page cache is kept, which
        // holds because every change of the files goes through the mount) and read and write
        // by inode. `O_TRUNC` still arrives, as a `setattr` of size 0.
        reply.error(Errno::ENOSYS);
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        match self.run(self.fs.read(ino.0, offset, size)) {
            Ok(bytes) => reply.data(&bytes),
            Err(e) => reply.error(e),
        }
    }

    fn write(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        match self.run(self.fs.write(ino.0, offset, data)) {
            Ok(n) => reply.written(n),
            Err(e) => reply.error(e),
        }
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        // Nothing is tied to a `close` (buffers reach the tree on their own, see `super`):
        // `ENOSYS` makes the kernel stop sending `flush`. Only a file created before the first
        // `open` of the session gets one.
        reply.error(Errno::ENOSYS);
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        reply.ok();
    }

    fn fsync(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        empty(reply, self.run(self.fs.fsync(ino.0)));
    }

    fn forget(&self, _req: &Request, ino: INodeNo, _nlookup: u64) {
        self.run(self.fs.forget(ino.0));
    }

    fn opendir(&self, req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        // The kernel keeps what it read of a directory (`FOPEN_CACHE_DIR`) across opens
        // (`FOPEN_KEEP_CACHE`): a directory changes only through this mount, and every such
        // change (create, mkdir, unlink, rmdir, rename, symlink) makes the kernel drop its copy.
        let cached = FopenFlags::FOPEN_CACHE_DIR | FopenFlags::FOPEN_KEEP_CACHE;
        match self.run(self.fs.opendir(ino.0, req.pid())) {
            Ok(fh) => reply.opened(FileHandle(fh), cached),
            Err(e) => reply.error(e),
        }
    }

    fn readdir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        match self.run(self.fs.readdir(fh.0, offset)) {
            Ok(entries) => {
                for (i, e) in entries.into_iter().enumerate() {
                    let next = offset + i as u64 + 1;
                    if reply.add(INodeNo(e.ino), next, e.kind, &e.name) {
                        break;
                    }
                }
                reply.ok();
            }
            Err(e) => reply.error(e),
        }
    }

    fn readdirplus(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectoryPlus,
    ) {
        match self.run(self.fs.readdirplus(fh.0, offset)) {
            Ok(entries) => {
                let ttl = self.fs.ttl();
                for (at, e, attr) in entries {
                    if reply.add(INodeNo(e.ino), at + 1, &e.name, &ttl, &attr, GENERATION) {
                        break;
                    }
                }
                reply.ok();
            }
            Err(e) => reply.error(e),
        }
    }

    fn releasedir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        reply: ReplyEmpty,
    ) {
        self.run(self.fs.releasedir(fh.0));
        reply.ok();
    }

    fn fsyncdir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        reply.ok();
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        let (blocks, files) = self.fs.capacity();
        reply.statfs(blocks, blocks, blocks, files, files, 4096, 255, 4096);
    }

    fn access(&self, _req: &Request, ino: INodeNo, mask: AccessFlags, reply: ReplyEmpty) {
        let write = mask.contains(AccessFlags::W_OK);
        empty(reply, self.run(self.fs.access(ino.0, write)));
    }

    fn create(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let exclusive = flags & libc::O_EXCL != 0;
        match self.run(self.fs.create(parent.0, name, mode & !umask, exclusive)) {
            Ok(attr) => reply.created(
                &self.fs.ttl(),
                &attr,
                GENERATION,
                FileHandle(0),
                FopenFlags::FOPEN_KEEP_CACHE,
            ),
            Err(e) => reply.error(e),
        }
    }

    fn fallocate(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        empty(
            reply,
            self.run(self.fs.fallocate(ino.0, offset, length, mode)),
        );
    }
}

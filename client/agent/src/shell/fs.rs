//! The one adapter between bashkit and the agent filesystem: bashkit's [`FileSystem`] trait
//! implemented over an [`AgentFs`], with errors translated both ways (an [`FsError`] becomes an
//! `io::Error` of the matching kind and bash's wording, carrying its error code, and
//! [`error_code`] reads that code back from a bashkit error).
//!
//! bashkit layers its own symlink following (over `stat`/`read_link`) and system files
//! (`/etc`, `/proc`, `/usr/bin` stubs) on top of this adapter, so `stat` here does not follow
//! the last link.

use crate::AgentFs;
use bashkit::{async_trait, DirEntry, FileSystem, FileSystemExt, FileType, Metadata};
use std::io::{self, ErrorKind};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;
use supabash::tree::{DirEntry as TreeEntry, Errno, FileKind, FsError, Stat};
use supabash_core::ErrorCode;

/// An agent filesystem as bashkit sees it.
pub(super) struct BashFs {
    fs: Arc<dyn AgentFs>,
}

impl BashFs {
    pub fn new(fs: Arc<dyn AgentFs>) -> Self {
        BashFs { fs }
    }
}

/// The error inside a translated `io::Error`: bash's wording plus the supabash error code.
#[derive(Debug)]
struct Translated {
    message: String,
    code: ErrorCode,
}

impl std::fmt::Display for Translated {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Translated {}

/// An [`FsError`] as bashkit expects it: the `io::ErrorKind` and message its builtins print
/// as bash does (`No such file or directory`, `Is a directory`, …).
fn to_bashkit(e: FsError) -> bashkit::Error {
    let code = e.code();
    let (kind, message) = match &e {
        FsError::Posix { errno, .. } => match errno {
            Errno::ENOENT => (ErrorKind::NotFound, "not found".to_owned()),
            Errno::EEXIST => (ErrorKind::AlreadyExists, "File exists".to_owned()),
            Errno::ENOTDIR => (ErrorKind::NotADirectory, "not a directory".to_owned()),
            Errno::EISDIR => (ErrorKind::Other, "is a directory".to_owned()),
            Errno::ENOTEMPTY => (ErrorKind::Other, "directory not empty".to_owned()),
            Errno::EINVAL => (ErrorKind::InvalidInput, "Invalid argument".to_owned()),
            Errno::ELOOP => (
                ErrorKind::Other,
                "Too many levels of symbolic links".to_owned(),
            ),
            Errno::EROFS => (
                ErrorKind::PermissionDenied,
                "Read-only file system".to_owned(),
            ),
            Errno::EACCES => (ErrorKind::PermissionDenied, "Permission denied".to_owned()),
            Errno::EXDEV => (
                ErrorKind::CrossesDevices,
                "Invalid cross-device link".to_owned(),
            ),
            other => (ErrorKind::Other, other.to_string()),
        },
        FsError::Supabash(s) => {
            let kind = match s.code() {
                ErrorCode::PolicyDenied | ErrorCode::Authorization => ErrorKind::PermissionDenied,
                ErrorCode::InvalidPath | ErrorCode::InvalidArgument => ErrorKind::InvalidInput,
                ErrorCode::NotFound => ErrorKind::NotFound,
                _ => ErrorKind::Other,
            };
            (kind, format!("{}: {}", s.code(), s.message()))
        }
        other => (ErrorKind::Other, other.to_string()),
    };
    io::Error::new(kind, Translated { message, code }).into()
}

/// The supabash error code a bashkit error carries, when it came from the agent filesystem.
pub fn error_code(e: &bashkit::Error) -> Option<ErrorCode> {
    match e {
        bashkit::Error::Io(io) => io
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<Translated>())
            .map(|t| t.code),
        _ => None,
    }
}

fn path_str(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

fn metadata(stat: &Stat) -> Metadata {
    Metadata {
        file_type: match stat.kind {
            FileKind::File => FileType::File,
            FileKind::Directory => FileType::Directory,
            FileKind::Symlink => FileType::Symlink,
            _ => FileType::File,
        },
        size: stat.size,
        mode: stat.mode,
        modified: stat.mtime,
        created: stat.mtime,
    }
}

impl BashFs {
    /// Whether the `grep`/`rg` being run may read `p` as empty: its mask says the server found
    /// no match in it, and `p` is a regular file at its own canonical path (see
    /// [`super::read_mask`]).
    async fn spared(&self, p: &str) -> bool {
        let Ok(Some(mask)) = super::read_mask::MASK.try_with(|m| m.blanks(p).then(|| m.clone()))
        else {
            return false;
        };
        let own = self.fs.realpath(p).await.is_ok_and(|r| r == p);
        let file = own
            && self
                .fs
                .lstat(p)
                .await
                .is_ok_and(|st| st.kind == FileKind::File);
        if file {
            mask.spare();
        }
        file
    }
}

impl FileSystemExt for BashFs {
    fn backend_kind(&self) -> &'static str {
        "supabash"
    }
}

#[async_trait]
impl FileSystem for BashFs {
    async fn read_file(&self, path: &Path) -> bashkit::Result<Vec<u8>> {
        let p = path_str(path);
        if self.spared(&p).await {
            return Ok(Vec::new());
        }
        self.fs.read(&p).await.map_err(to_bashkit)
    }

    async fn write_file(&self, path: &Path, content: &[u8]) -> bashkit::Result<()> {
        self.fs
            .write(&path_str(path), content.to_vec())
            .await
            .map_err(to_bashkit)
    }

    async fn append_file(&self, path: &Path, content: &[u8]) -> bashkit::Result<()> {
        self.fs
            .append(&path_str(path), content.to_vec())
            .await
            .map_err(to_bashkit)
    }

    async fn mkdir(&self, path: &Path, recursive: bool) -> bashkit::Result<()> {
        self.fs
            .mkdir(&path_str(path), recursive)
            .await
            .map_err(to_bashkit)
    }

    async fn remove(&self, path: &Path, recursive: bool) -> bashkit::Result<()> {
        self.fs
            .rm(&path_str(path), recursive, false)
            .await
            .map_err(to_bashkit)
    }

    async fn stat(&self, path: &Path) -> bashkit::Result<Metadata> {
        self.lstat(path).await
    }

    async fn lstat(&self, path: &Path) -> bashkit::Result<Metadata> {
        let stat = self.fs.lstat(&path_str(path)).await.map_err(to_bashkit)?;
        Ok(metadata(&stat))
    }

    async fn read_dir(&self, path: &Path) -> bashkit::Result<Vec<DirEntry>> {
        let dir = path_str(path);
        let entries: Vec<TreeEntry> = self.fs.readdir(&dir).await.map_err(to_bashkit)?;
        let mut out = Vec::with_capacity(entries.len());
        for entry in entries {
            let child = format!("{}/{}", dir.trim_end_matches('/'), entry.name);
            let stat = self.fs.lstat(&child).await.map_err(to_bashkit)?;
            out.push(DirEntry {
                name: entry.name,
                metadata: metadata(&stat),
            });
        }
        Ok(out)
    }

    async fn exists(&self, path: &Path) -> bashkit::Result<bool> {
        Ok(self.fs.lstat(&path_str(path)).await.is_ok())
    }

    async fn rename(&self, from: &Path, to: &Path) -> bashkit::Result<()> {
        self.fs
            .mv(&path_str(from), &path_str(to))
            .await
            .map_err(to_bashkit)
    }

    async fn copy(&self, from: &Path, to: &Path) -> bashkit::Result<()> {
        self.fs
            .cp(&path_str(from), &path_str(to), false)
            .await
            .map_err(to_bashkit)
    }

    async fn symlink(&self, target: &Path, link: &Path) -> bashkit::Result<()> {
        self.fs
            .symlink(&path_str(target), &path_str(link))
            .await
            .map_err(to_bashkit)
    }

    async fn read_link(&self, path: &Path) -> bashkit::Result<PathBuf> {
        self.fs
            .readlink(&path_str(path))
            .await
            .map(PathBuf::from)
            .map_err(to_bashkit)
    }

    async fn chmod(&self, path: &Path, mode: u32) -> bashkit::Result<()> {
        self.fs
            .chmod(&path_str(path), mode)
            .await
            .map_err(to_bashkit)
    }

    async fn set_modified_time(&self, path: &Path, time: SystemTime) -> bashkit::Result<()> {
        self.fs
            .utimes(&path_str(path), time)
            .await
            .map_err(to_bashkit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use supabash::SupabashError;

    fn posix(errno: Errno) -> FsError {
        FsError::Posix {
            errno,
            op: "open",
            path: "/x".into(),
        }
    }

    #[test]
    fn errors_translate_both_ways() {
        let cases = [
            (
                posix(Errno::ENOENT),
                ErrorKind::NotFound,
                ErrorCode::NotFound,
            ),
            (
                posix(Errno::EROFS),
                ErrorKind::PermissionDenied,
                ErrorCode::PolicyDenied,
            ),
            (
                posix(Errno::EACCES),
                ErrorKind::PermissionDenied,
                ErrorCode::PolicyDenied,
            ),
            (
                posix(Errno::EXDEV),
                ErrorKind::CrossesDevices,
                ErrorCode::PolicyDenied,
            ),
            (
                posix(Errno::ENOTDIR),
                ErrorKind::NotADirectory,
                ErrorCode::InvalidArgument,
            ),
            (
                SupabashError::new(ErrorCode::CommitInProgress, "busy").into(),
                ErrorKind::Other,
                ErrorCode::CommitInProgress,
            ),
            (
                SupabashError::new(ErrorCode::InvalidPath, "bad").into(),
                ErrorKind::InvalidInput,
                ErrorCode::InvalidPath,
            ),
        ];
        for (fs_error, kind, code) in cases {
            let want = fs_error.code();
            assert_eq!(want, code);
            let e = to_bashkit(fs_error);
            match &e {
                bashkit::Error::Io(io) => assert_eq!(io.kind(), kind),
                other => panic!("{other:?}"),
            }
            assert_eq!(error_code(&e), Some(code));
        }
        // bash's wording, as bashkit's builtins print it.
        let e = to_bashkit(posix(Errno::EISDIR));
        assert_eq!(e.to_string(), "io error: is a directory");
        assert_eq!(error_code(&bashkit::Error::Execution("x".into())), None);
    }
}

//! Filesystem errors with POSIX names, as shells and file tools expect them.

use crate::error::SupabashError;
use std::fmt;
use supabash_core::ErrorCode;

/// The POSIX error numbers the staged tree reports.
#[allow(clippy::upper_case_acronyms)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Errno {
    /// No such file or directory.
    ENOENT,
    /// File exists.
    EEXIST,
    /// Not a directory.
    ENOTDIR,
    /// Is a directory.
    EISDIR,
    /// Directory not empty.
    ENOTEMPTY,
    /// Invalid argument.
    EINVAL,
    /// Too many levels of symbolic links.
    ELOOP,
    /// Read-only file system: a read-only or unmounted path of an agent filesystem.
    EROFS,
    /// Permission denied: a path an agent filesystem hides.
    EACCES,
    /// Cross-device link: a move between two mounts of an agent filesystem.
    EXDEV,
}

impl Errno {
    /// The error code this errno reports as: the refusals of an agent filesystem are
    /// `POLICY_DENIED`, a missing path `NOT_FOUND`, the rest `INVALID_ARGUMENT`.
    pub fn code(self) -> ErrorCode {
        match self {
            Errno::EROFS | Errno::EACCES | Errno::EXDEV => ErrorCode::PolicyDenied,
            Errno::ENOENT => ErrorCode::NotFound,
            _ => ErrorCode::InvalidArgument,
        }
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = match self {
            Errno::ENOENT => "no such file or directory",
            Errno::EEXIST => "file already exists",
            Errno::ENOTDIR => "not a directory",
            Errno::EISDIR => "is a directory",
            Errno::ENOTEMPTY => "directory not empty",
            Errno::EINVAL => "invalid argument",
            Errno::ELOOP => "too many levels of symbolic links",
            Errno::EROFS => "read-only file system",
            Errno::EACCES => "permission denied",
            Errno::EXDEV => "cross-device link not permitted",
        };
        write!(f, "{self:?}: {text}")
    }
}

/// Result of a filesystem operation.
pub type FsResult<T> = Result<T, FsError>;

/// A failed filesystem operation: a POSIX error, or a supabash error (invalid path, quota,
/// commit in progress, a lazy body that failed to load or verify).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FsError {
    /// A POSIX-style failure of `op` on `path`.
    #[error("{errno}, {op} '{path}'")]
    Posix {
        errno: Errno,
        op: &'static str,
        path: String,
    },
    /// Any other failure.
    #[error(transparent)]
    Supabash(#[from] SupabashError),
}

impl FsError {
    /// The POSIX error number, if this is one.
    pub fn errno(&self) -> Option<Errno> {
        match self {
            FsError::Posix { errno, .. } => Some(*errno),
            FsError::Supabash(_) => None,
        }
    }

    /// The error code: the errno's, or the supabash error's.
    pub fn code(&self) -> ErrorCode {
        match self {
            FsError::Posix { errno, .. } => errno.code(),
            FsError::Supabash(e) => e.code,
        }
    }
}

/// Shorthand for a POSIX error.
pub(crate) fn posix(errno: Errno, op: &'static str, path: &str) -> FsError {
    FsError::Posix {
        errno,
        op,
        path: path.to_owned(),
    }
}

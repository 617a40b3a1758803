//! Path helpers shared by views and mounts: canonical resolution and errors.

use supabash::error::SupabashError;
use supabash::tree::{Errno, FsError, FsResult};
use supabash_core::{path, ErrorCode};

/// Resolves `input` against `/` (folding `.` and `..`); `INVALID_PATH` when it cannot be.
pub(crate) fn canon(input: &str) -> FsResult<String> {
    path::resolve("/", input).map_err(|e| {
        SupabashError::new(ErrorCode::InvalidPath, format!("{input:?}: {e}"))
            .with_path(input)
            .into()
    })
}

/// A POSIX error of `op` on `path`.
pub(crate) fn err(errno: Errno, op: &'static str, path: &str) -> FsError {
    FsError::Posix {
        errno,
        op,
        path: path.to_owned(),
    }
}

/// The part of canonical `p` at or below canonical `dir`, as an absolute path (`/` for `dir`
/// itself); `None` when `p` is not there.
pub(crate) fn below(p: &str, dir: &str) -> Option<String> {
    if dir == "/" {
        return Some(p.to_owned());
    }
    if p == dir {
        return Some("/".to_owned());
    }
    p.strip_prefix(dir)
        .filter(|rest| rest.starts_with('/'))
        .map(str::to_owned)
}

/// Joins a canonical `dir` and an absolute path below it.
pub(crate) fn join(dir: &str, rest: &str) -> String {
    match (dir, rest) {
        ("/", r) => r.to_owned(),
        (d, "/") => d.to_owned(),
        (d, r) => format!("{d}{r}"),
    }
}

/// Rewrites the path an error names with `f` (keeping it when `f` has no answer).
pub(crate) fn rename_error(e: FsError, f: impl Fn(&str) -> Option<String>) -> FsError {
    match e {
        FsError::Posix { errno, op, path } => FsError::Posix {
            errno,
            op,
            path: f(&path).unwrap_or(path),
        },
        FsError::Supabash(s) => match s.path().and_then(&f) {
            Some(p) => FsError::Supabash(s.with_path(p)),
            None => FsError::Supabash(s),
        },
        other => other,
    }
}

/// A filesystem error as a supabash error, keeping its code (`POLICY_DENIED` stays so).
pub(crate) fn fs_error(e: FsError) -> SupabashError {
    match e {
        FsError::Supabash(s) => s,
        FsError::Posix { errno, op, path } => {
            SupabashError::new(errno.code(), format!("{errno}, {op} '{path}'")).with_path(path)
        }
        other => SupabashError::new(other.code(), other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn below_and_join_are_inverse() {
        for (dir, p) in [
            ("/", "/a/b"),
            ("/a", "/a/b"),
            ("/a", "/a"),
            ("/a/b", "/a/b/c/d"),
        ] {
            let rest = below(p, dir).unwrap();
            assert_eq!(join(dir, &rest), p);
        }
        assert_eq!(below("/ab", "/a"), None);
        assert_eq!(below("/", "/a"), None);
    }
}

//! Ignore lists: the [`Exclude`] trait a sync and the staged tree's local-only paths share.

/// An ignore list for a sync (`Workspace::stage_from_dir_excluding`): a path it excludes is
/// reported in `Synced::ignored` (reason `disk::EXCLUDED`), neither staged nor deleted (the
/// staged tree keeps what it has there), and nothing below an excluded directory is read.
/// The CLI implements it with gitignore syntax (`.supabashignore`, `--exclude`).
pub trait Exclude: Send + Sync {
    /// Whether canonical path `p` (a directory when `is_dir`) is left out.
    fn excluded(&self, p: &str, is_dir: bool) -> bool;
}

/// Whether `p` or a directory above it is excluded.
pub(crate) fn excluded_with_parents(exclude: &dyn Exclude, p: &str, is_dir: bool) -> bool {
    if exclude.excluded(p, is_dir) {
        return true;
    }
    let mut dir = supabash_core::path::parent(p);
    while dir != "/" {
        if exclude.excluded(dir, true) {
            return true;
        }
        dir = supabash_core::path::parent(dir);
    }
    false
}

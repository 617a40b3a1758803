//! Client limits. Each is checked before anything durable happens and gives `QUOTA_EXCEEDED`.
//! The database enforces its own, higher, ceilings (`supabash_core::limits`).

use crate::error::{Result, SupabashError};

/// Configurable limits; [`Limits::default`] documents the defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// Most committable files in the staged tree (default 10,000).
    pub max_files: usize,
    /// Largest file, in bytes (default 10 MiB).
    pub max_file_bytes: usize,
    /// Largest total size of committable files, in bytes (default 50 MiB).
    pub max_staged_bytes: usize,
    /// Longest path, in characters (default 1,024).
    pub max_path_chars: usize,
    /// Largest history page (default 100).
    pub max_history_page: usize,
    /// Largest diff preview per entry, in bytes (default 8 KiB).
    pub max_diff_preview_bytes: usize,
    /// Largest commit metadata, as compact JSON bytes (default 16 KiB).
    pub max_transaction_metadata_bytes: usize,
}

crate::setters! {
    impl Limits {
        with_max_files(max_files: usize),
        with_max_file_bytes(max_file_bytes: usize),
        with_max_staged_bytes(max_staged_bytes: usize),
        with_max_path_chars(max_path_chars: usize),
        with_max_history_page(max_history_page: usize),
        with_max_diff_preview_bytes(max_diff_preview_bytes: usize),
        with_max_transaction_metadata_bytes(max_transaction_metadata_bytes: usize),
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_files: 10_000,
            max_file_bytes: 10 * 1024 * 1024,
            max_staged_bytes: 50 * 1024 * 1024,
            max_path_chars: 1024,
            max_history_page: 100,
            max_diff_preview_bytes: 8 * 1024,
            max_transaction_metadata_bytes: 16 * 1024,
        }
    }
}

impl Limits {
    /// The size of a history page: `requested`, or the largest allowed, from 1 to
    /// `max_history_page`.
    pub fn history_page(&self, requested: Option<usize>) -> Result<usize> {
        let max = self.max_history_page;
        match requested.unwrap_or(max) {
            size @ 1.. if size <= max => Ok(size),
            _ => Err(SupabashError::quota(format!(
                "history pages hold 1 to {max} records"
            ))),
        }
    }

    /// Checks one path's length.
    pub fn check_path(&self, path: &str) -> Result<()> {
        if path.chars().count() > self.max_path_chars {
            return Err(SupabashError::quota(format!(
                "path is longer than {} characters",
                self.max_path_chars
            ))
            .with_path(path));
        }
        Ok(())
    }

    /// Checks one file's size.
    pub fn check_file(&self, path: &str, size: usize) -> Result<()> {
        if size > self.max_file_bytes {
            return Err(SupabashError::quota(format!(
                "{size} bytes exceed the {}-byte file limit",
                self.max_file_bytes
            ))
            .with_path(path));
        }
        Ok(())
    }

    /// Checks the committable tree's file count and total size.
    pub fn check_tree(&self, files: usize, bytes: usize) -> Result<()> {
        if files > self.max_files {
            return Err(SupabashError::quota(format!(
                "{files} files exceed the limit of {}",
                self.max_files
            )));
        }
        if bytes > self.max_staged_bytes {
            return Err(SupabashError::quota(format!(
                "{bytes} staged bytes exceed the limit of {}",
                self.max_staged_bytes
            )));
        }
        Ok(())
    }
}

//! Client limits. Each is checked before anything durable happens and gives `QUOTA_EXCEEDED`.
//! The database enforces its own, higher, ceilings (`supabash_core::limits`).
//!
//! A setting itself is refused with `INVALID_ARGUMENT` when it is 0 or past its maximum
//! ([`Limits::MAXIMUM`]): [`check_setting`] is the one rule, [`Limits::validate`] applies it to
//! every field, and every open ([`crate::Workspace::builder`], the Storage backend) and every
//! mutation of a [`crate::tree::StagedTree`] runs it, so a bad value never reaches use.

use crate::error::{Result, SupabashError};
use supabash_core::ErrorCode;

/// `n` GiB as a `usize` (saturating where `usize` is narrower).
const fn gib(n: u64) -> usize {
    let bytes = n << 30;
    if bytes > usize::MAX as u64 {
        usize::MAX
    } else {
        bytes as usize
    }
}

/// The one rule of a count or size setting: from 1 to `max`, else `INVALID_ARGUMENT` naming
/// the setting, its value and its range.
pub fn check_setting(name: &str, value: usize, max: usize) -> Result<()> {
    if (1..=max).contains(&value) {
        return Ok(());
    }
    Err(SupabashError::new(
        ErrorCode::InvalidArgument,
        format!("{name} must be from 1 to {max}; it is {value}"),
    ))
}

/// Configurable limits; [`Limits::default`] documents the defaults, [`Limits::MAXIMUM`] the
/// largest value each accepts (every one is at least 1).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// Most committable files in the staged tree (default 10,000; at most 1,000,000).
    pub max_files: usize,
    /// Largest file, in bytes, scratch paths such as `/tmp` included (default 10 MiB; at most
    /// the database's 64 MiB body ceiling).
    pub max_file_bytes: usize,
    /// Largest total size of committable files, in bytes (default 50 MiB; at most 16 GiB).
    pub max_staged_bytes: usize,
    /// Largest total the whole staged tree holds in memory, in bytes: every file and link
    /// target, scratch paths (`/tmp` and the other shell-owned paths) and paths kept out of
    /// commits included (default 1 GiB, the in-memory default of the TypeScript package's
    /// `maxFileSystemBytes`; at most 64 GiB).
    pub max_file_system_bytes: usize,
    /// Longest path, in characters (default 1,024; at most 4,096, the path ceiling).
    pub max_path_chars: usize,
    /// Largest history page (default 100; at most 1,000, the database's page ceiling).
    pub max_history_page: usize,
    /// Largest diff preview per entry, in bytes (default 8 KiB; at most the database's 64 KiB).
    pub max_diff_preview_bytes: usize,
    /// Largest commit metadata, as compact JSON bytes (default 16 KiB; at most the database's
    /// 16 KiB).
    pub max_transaction_metadata_bytes: usize,
}

crate::setters! {
    impl Limits {
        with_max_files(max_files: usize),
        with_max_file_bytes(max_file_bytes: usize),
        with_max_staged_bytes(max_staged_bytes: usize),
        with_max_file_system_bytes(max_file_system_bytes: usize),
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
            max_file_system_bytes: gib(1),
            max_path_chars: 1024,
            max_history_page: 100,
            max_diff_preview_bytes: 8 * 1024,
            max_transaction_metadata_bytes: 16 * 1024,
        }
    }
}

impl Limits {
    /// The largest value each setting accepts.
    pub const MAXIMUM: Limits = Limits {
        max_files: 1_000_000,
        max_file_bytes: supabash_core::limits::MAX_BODY_BYTES,
        max_staged_bytes: gib(16),
        max_file_system_bytes: gib(64),
        max_path_chars: supabash_core::path::MAX_PATH_BYTES,
        max_history_page: supabash_core::limits::MAX_HISTORY_PAGE as usize,
        max_diff_preview_bytes: supabash_core::limits::MAX_DIFF_PREVIEW_BYTES as usize,
        max_transaction_metadata_bytes: supabash_core::limits::MAX_COMMIT_METADATA_BYTES,
    };

    /// Every setting by name, with its value.
    fn settings(&self) -> [(&'static str, usize); 8] {
        [
            ("max_files", self.max_files),
            ("max_file_bytes", self.max_file_bytes),
            ("max_staged_bytes", self.max_staged_bytes),
            ("max_file_system_bytes", self.max_file_system_bytes),
            ("max_path_chars", self.max_path_chars),
            ("max_history_page", self.max_history_page),
            ("max_diff_preview_bytes", self.max_diff_preview_bytes),
            (
                "max_transaction_metadata_bytes",
                self.max_transaction_metadata_bytes,
            ),
        ]
    }

    /// Checks every setting with [`check_setting`] against [`Limits::MAXIMUM`]: the first one
    /// that is 0 or too large fails with `INVALID_ARGUMENT`.
    pub fn validate(&self) -> Result<()> {
        let maximum = Self::MAXIMUM.settings();
        self.settings()
            .into_iter()
            .zip(maximum)
            .try_for_each(|((name, value), (_, max))| check_setting(name, value, max))
    }

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

    /// Checks the total the whole staged tree holds: every file and link target, scratch paths
    /// and paths kept out of commits included.
    pub fn check_file_system(&self, bytes: usize) -> Result<()> {
        if bytes > self.max_file_system_bytes {
            return Err(SupabashError::quota(format!(
                "{bytes} bytes in the staged filesystem (scratch paths such as /tmp included) \
                 exceed the limit of {} (Limits::max_file_system_bytes); remove files to make room",
                self.max_file_system_bytes
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_setter_refuses_zero_and_past_its_maximum() {
        assert!(Limits::default().validate().is_ok());
        assert!(Limits::MAXIMUM.validate().is_ok());
        let setters: [fn(Limits, usize) -> Limits; 8] = [
            Limits::with_max_files,
            Limits::with_max_file_bytes,
            Limits::with_max_staged_bytes,
            Limits::with_max_file_system_bytes,
            Limits::with_max_path_chars,
            Limits::with_max_history_page,
            Limits::with_max_diff_preview_bytes,
            Limits::with_max_transaction_metadata_bytes,
        ];
        for (set, (name, max)) in setters.into_iter().zip(Limits::MAXIMUM.settings()) {
            assert!(set(Limits::default(), max).validate().is_ok(), "{name}");
            assert!(set(Limits::default(), 1).validate().is_ok(), "{name}");
            for bad in [0, max + 1] {
                let e = set(Limits::default(), bad).validate().unwrap_err();
                assert_eq!(e.code, ErrorCode::InvalidArgument, "{name} = {bad}");
                assert!(e.message().contains(name), "{e}");
            }
        }
    }
}

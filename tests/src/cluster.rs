//! The throwaway cluster lives in the CLI crate (`supabash_cli::devcluster`), so `supabash
//! demo` can start one too; this module keeps the tests' paths working.

use std::path::{Path, PathBuf};

pub use supabash_cli::devcluster::{Cluster, BOOTSTRAP_SQL};

/// The repository root (the parent of this crate).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

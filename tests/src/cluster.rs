//! The throwaway cluster comes from the dev-only crate `supabash-devcluster` (which `supabash
//! demo` and the benchmarks use too); this module keeps the tests' paths working.

use std::path::{Path, PathBuf};

pub use supabash_devcluster::{Cluster, BOOTSTRAP_SQL};

/// The repository root (the parent of this crate).
pub fn repo_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

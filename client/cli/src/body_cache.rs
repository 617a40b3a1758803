//! The host's body cache (`supabash::cache`) for the commands that read bodies: `mount`,
//! `run` and `export`. A cache directory that cannot be used safely (a link, another user's)
//! is reported once and the command goes on without a cache.

use std::sync::{Arc, OnceLock};
use supabash::cache::HostCache;
use supabash::StagedTree;

/// The process's cache, opened once (`None`: off or refused).
fn shared() -> Option<Arc<HostCache>> {
    static CACHE: OnceLock<Option<Arc<HostCache>>> = OnceLock::new();
    CACHE
        .get_or_init(|| match HostCache::from_env() {
            Ok(cache) => cache.map(Arc::new),
            Err(e) => {
                eprintln!("supabash: the body cache is not used: {e}");
                None
            }
        })
        .clone()
}

/// Makes `tree` read through the host cache (when there is one).
pub fn attach(tree: &StagedTree) {
    if let Some(cache) = shared() {
        tree.use_host_cache(cache);
    }
}

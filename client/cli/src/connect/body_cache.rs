//! The host's body cache (`supabash::cache`) for the commands that read bodies: `mount`,
//! `run` and `export`. A cache directory that cannot be used safely (a link, another user's)
//! is reported once and the command goes on without a cache. Each command keeps a list of the
//! bodies it stores for its workspace, so that an open after a redaction drops them
//! (`HostCache::for_workspace`).

use std::sync::{Arc, OnceLock};
use supabash::cache::HostCache;
use supabash::Workspace;

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

/// Makes `ws`'s tree read through the host cache (when there is one), after dropping what the
/// cache kept for `ws` before a redaction it has not seen.
pub fn attach(ws: &Workspace) {
    let Some(cache) = shared() else {
        return;
    };
    match cache.for_workspace(ws.id(), ws.redaction_epoch()) {
        Ok(scoped) => ws.fs().use_host_cache(Arc::new(scoped)),
        Err(e) => eprintln!("supabash: the body cache is not used: {e}"),
    }
}

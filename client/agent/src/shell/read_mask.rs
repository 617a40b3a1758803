//! The read mask of one `grep`/`rg` run (see the `search` module): which reads of the shell's
//! filesystem answer empty bytes instead of fetching a body. The search builds it and sets it
//! for the run ([`MASK`]); the filesystem adapter (`fs`) consults it on every read. Also the
//! counters of what masks spared.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The base files known not to match, for one directory.
#[derive(Debug)]
struct Scope {
    /// Canonical, absolute.
    dir: String,
    /// Files the built-in must read: matched on the server, or staged.
    keep: HashSet<String>,
    /// The server's answer covers the paths before this one (byte order) only.
    frontier: Option<String>,
}

/// Which reads answer empty bytes while one `grep`/`rg` runs.
#[derive(Debug, Default)]
pub(super) struct Mask {
    scopes: Vec<Scope>,
    counters: Arc<SearchCounters>,
}

impl Mask {
    /// A mask that spares nothing yet, counting what it spares in `counters`.
    pub(super) fn new(counters: Arc<SearchCounters>) -> Self {
        Mask {
            scopes: Vec::new(),
            counters,
        }
    }

    /// Spares the files under `dir` (canonical, absolute) except `keep`, up to `frontier`
    /// (byte order) when the server's answer stopped there.
    pub(super) fn add_scope(
        &mut self,
        dir: String,
        keep: HashSet<String>,
        frontier: Option<String>,
    ) {
        self.scopes.push(Scope {
            dir,
            keep,
            frontier,
        });
    }

    /// Whether no directory is masked.
    pub(super) fn is_empty(&self) -> bool {
        self.scopes.is_empty()
    }

    /// Counts one read answered empty.
    pub(super) fn spare(&self) {
        self.counters.reads_spared.fetch_add(1, Ordering::Relaxed);
    }

    /// Whether `p` (absolute) is a base file with no matching line: its read may answer empty.
    /// The caller still checks that `p` is its own canonical path.
    pub(super) fn blanks(&self, p: &str) -> bool {
        if p.split('/').any(|s| s.starts_with('.')) {
            return false;
        }
        self.scopes.iter().any(|s| {
            let under = s.dir == "/" || p.strip_prefix(&s.dir).is_some_and(|r| r.starts_with('/'));
            under && !s.keep.contains(p) && s.frontier.as_deref().is_none_or(|f| p < f)
        })
    }
}

tokio::task_local! {
    /// The mask of the `grep`/`rg` being polled (only its own reads see it).
    pub(super) static MASK: Arc<Mask>;
}

/// How many base bodies the masks spared, and how many searches used the server.
#[derive(Debug, Default)]
pub struct SearchCounters {
    /// Invocations that searched on the server.
    pub server_searches: AtomicU64,
    /// Reads answered empty instead of fetching a body.
    pub reads_spared: AtomicU64,
}

impl SearchCounters {
    /// Invocations that searched on the server so far.
    pub fn server_searches(&self) -> u64 {
        self.server_searches.load(Ordering::Relaxed)
    }

    /// Reads answered empty so far.
    pub fn reads_spared(&self) -> u64 {
        self.reads_spared.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mask_spares_unchanged_unmatched_files_only() {
        let mask = Mask {
            scopes: vec![Scope {
                dir: "/src".into(),
                keep: ["/src/hit.rs".to_owned(), "/src/staged.rs".to_owned()].into(),
                frontier: Some("/src/m".into()),
            }],
            counters: Arc::default(),
        };
        assert!(mask.blanks("/src/a.rs"));
        assert!(mask.blanks("/src/d/e.rs"));
        // Kept, past the frontier, outside the scope, hidden.
        assert!(!mask.blanks("/src/hit.rs"));
        assert!(!mask.blanks("/src/staged.rs"));
        assert!(!mask.blanks("/src/z.rs"));
        assert!(!mask.blanks("/srcx/a.rs"));
        assert!(!mask.blanks("/other.rs"));
        assert!(!mask.blanks("/src/.gitignore"));
        assert!(!mask.blanks("/src/.git/info/exclude"));
    }
}

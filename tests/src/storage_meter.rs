//! The request meter of the Storage API test server: requests counted by kind, bytes uploaded,
//! and a fixed delay added to every request (as a remote server's round trip would), so the
//! number of requests a client makes shows in its time. The delay defaults to
//! `$SUPABASH_STORAGE_DELAY_MS` (0 when unset).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// Requests seen by kind, and bytes uploaded, since the last reset.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    /// `upload`, `delete`, `copy`, `move` (writing), `download`, `range` (a download with a
    /// `Range` header), `info`, `list`, `other`.
    pub by_kind: BTreeMap<&'static str, usize>,
    /// Request bodies of uploads, in bytes.
    pub bytes_uploaded: u64,
}

/// The kinds of requests that write.
pub const WRITING: [&str; 4] = ["upload", "delete", "copy", "move"];

impl Counts {
    /// Requests of `kind`.
    pub fn of(&self, kind: &str) -> usize {
        self.by_kind.get(kind).copied().unwrap_or(0)
    }

    /// Requests that write (uploads, deletes, copies, moves).
    pub fn writes(&self) -> usize {
        WRITING.iter().map(|k| self.of(k)).sum()
    }

    /// Every request.
    pub fn total(&self) -> usize {
        self.by_kind.values().sum()
    }

    /// Requests that only read.
    pub fn reads(&self) -> usize {
        self.total() - self.writes()
    }
}

/// Counts requests and delays each one.
pub struct Meter {
    counts: Mutex<Counts>,
    delay_ms: AtomicU64,
}

impl Default for Meter {
    fn default() -> Self {
        let delay = std::env::var("SUPABASH_STORAGE_DELAY_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        Meter {
            counts: Mutex::default(),
            delay_ms: AtomicU64::new(delay),
        }
    }
}

impl Meter {
    /// Counts one request of `kind` with `uploaded` body bytes, then waits the delay.
    pub async fn record(&self, kind: &'static str, uploaded: usize) {
        {
            let mut c = self.counts.lock().unwrap();
            *c.by_kind.entry(kind).or_default() += 1;
            if kind == "upload" {
                c.bytes_uploaded += uploaded as u64;
            }
        }
        let ms = self.delay_ms.load(Ordering::SeqCst);
        if ms > 0 {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
    }

    /// The counts since the last reset.
    pub fn counts(&self) -> Counts {
        self.counts.lock().unwrap().clone()
    }

    /// Starts counting afresh.
    pub fn reset(&self) {
        *self.counts.lock().unwrap() = Counts::default();
    }

    /// Sets the delay added to every request.
    pub fn set_delay(&self, delay: Duration) {
        self.delay_ms
            .store(delay.as_millis() as u64, Ordering::SeqCst);
    }

    /// The delay added to every request.
    pub fn delay(&self) -> Duration {
        Duration::from_millis(self.delay_ms.load(Ordering::SeqCst))
    }
}

/// The kind of a request, from its method, path segments and whether it asks for a range.
pub fn kind(method: &axum::http::Method, segments: &[&str], ranged: bool) -> &'static str {
    use axum::http::Method;
    match (method, segments) {
        (&Method::POST, ["object", "list" | "list-v2", ..]) => "list",
        (&Method::POST, ["object", "copy"]) => "copy",
        (&Method::POST, ["object", "move"]) => "move",
        (&Method::GET | &Method::HEAD, ["object", "info", ..]) => "info",
        (&Method::GET | &Method::HEAD, ["object", ..]) if ranged => "range",
        (&Method::GET | &Method::HEAD, ["object", ..]) => "download",
        (&Method::POST | &Method::PUT, ["object", ..]) => "upload",
        (&Method::DELETE, ["object", ..]) => "delete",
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::Method;

    #[test]
    fn kinds_and_sums() {
        assert_eq!(
            kind(&Method::POST, &["object", "b", "u", "k"], false),
            "upload"
        );
        assert_eq!(
            kind(&Method::POST, &["object", "list-v2", "b"], false),
            "list"
        );
        assert_eq!(
            kind(&Method::GET, &["object", "info", "b", "k"], false),
            "info"
        );
        assert_eq!(kind(&Method::GET, &["object", "b", "k"], true), "range");
        assert_eq!(kind(&Method::DELETE, &["object", "b"], false), "delete");
        let mut c = Counts::default();
        c.by_kind.insert("upload", 3);
        c.by_kind.insert("delete", 1);
        c.by_kind.insert("download", 2);
        assert_eq!((c.writes(), c.reads(), c.total()), (4, 2, 6));
    }
}

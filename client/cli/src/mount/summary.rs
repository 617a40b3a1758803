//! What one mount session did: the one place that knows its duration, the paths it touched,
//! the bytes it wrote and its outcome (for the log line at unmount, and for an audit record).

use serde::Serialize;
use serde_json::json;
use std::collections::BTreeSet;
use std::time::Instant;
use supabash::audit::{Action, ActionKind};

/// The running record of a mount session: the whole session (for the report) and the part
/// since its last audit record (for the next one).
#[derive(Debug, Clone)]
pub struct Summary {
    started: Instant,
    paths: BTreeSet<String>,
    bytes_written: u64,
    commits: Vec<String>,
    failed_commits: usize,
    since: Recent,
}

/// What a session did since its last audit record.
#[derive(Debug, Clone)]
struct Recent {
    started: Instant,
    paths: BTreeSet<String>,
    bytes_written: u64,
}

impl Recent {
    fn new() -> Self {
        Recent {
            started: Instant::now(),
            paths: BTreeSet::new(),
            bytes_written: 0,
        }
    }
}

impl Default for Summary {
    fn default() -> Self {
        Summary {
            started: Instant::now(),
            paths: BTreeSet::new(),
            bytes_written: 0,
            commits: Vec::new(),
            failed_commits: 0,
            since: Recent::new(),
        }
    }
}

/// A session's summary as reported when it ends.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub duration_ms: u128,
    /// Paths created, written, renamed, removed or re-moded, in order.
    pub paths_touched: Vec<String>,
    /// Bytes written to the staged tree by flushes (a rewrite counts again).
    pub bytes_written: u64,
    /// Revisions this session committed, oldest first.
    pub commits: Vec<String>,
    pub failed_commits: usize,
    /// How the session ended: `committed` (its last commit held every change), `staged`
    /// (changes left uncommitted) or `unchanged`.
    pub outcome: &'static str,
}

impl Summary {
    /// Records that `path` changed.
    pub fn touched(&mut self, path: &str) {
        if !self.paths.contains(path) {
            self.paths.insert(path.to_owned());
        }
        if !self.since.paths.contains(path) {
            self.since.paths.insert(path.to_owned());
        }
    }

    /// Records that `bytes` were written at `path`.
    pub fn wrote(&mut self, path: &str, bytes: u64) {
        self.touched(path);
        self.bytes_written += bytes;
        self.since.bytes_written += bytes;
    }

    /// Records a commit: its revision, or `None` when it failed.
    pub fn committed(&mut self, revision: Option<String>) {
        match revision {
            Some(r) => self.commits.push(r),
            None => self.failed_commits += 1,
        }
    }

    /// The report, given whether staged changes remain.
    pub fn report(&self, staged_left: bool) -> Report {
        let outcome = match (staged_left, self.commits.is_empty()) {
            (true, _) => "staged",
            (false, false) => "committed",
            (false, true) => "unchanged",
        };
        Report {
            duration_ms: self.started.elapsed().as_millis(),
            paths_touched: self.paths.iter().cloned().collect(),
            bytes_written: self.bytes_written,
            commits: self.commits.clone(),
            failed_commits: self.failed_commits,
            outcome,
        }
    }
}

impl Summary {
    /// The audit record of what the session did since its previous record (`supabash::audit`),
    /// which starts the next part: a mount session's record travels with each commit it makes
    /// and with the discard when it ends uncommitted, and each describes only its own part,
    /// so two commits never record the same paths and bytes twice. (A commit whose outcome is
    /// unknown is sent again with the record it already carries.)
    pub fn take_action(&mut self, read_only: bool) -> Action {
        let part = std::mem::replace(&mut self.since, Recent::new());
        Action::new(ActionKind::MountSession, "mount")
            .with_arguments(json!({ "readOnly": read_only, "commits": self.commits.len() }))
            .with_started(std::time::SystemTime::now() - part.started.elapsed())
            .with_duration(part.started.elapsed())
            .with_paths(part.paths.into_iter().collect())
            .with_bytes_changed(part.bytes_written)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcome_follows_commits_and_what_is_left() {
        let mut s = Summary::default();
        assert_eq!(s.report(false).outcome, "unchanged");
        s.wrote("/a", 3);
        s.wrote("/a", 4);
        assert_eq!(s.report(true).outcome, "staged");
        s.committed(Some("r1".into()));
        s.committed(None);
        let r = s.report(false);
        assert_eq!(r.outcome, "committed");
        assert_eq!(r.paths_touched, ["/a"]);
        assert_eq!(r.bytes_written, 7);
        assert_eq!(r.failed_commits, 1);
    }

    #[test]
    fn each_record_covers_what_happened_since_the_previous_one() {
        let mut s = Summary::default();
        s.wrote("/a", 3);
        s.wrote("/b", 4);
        let first = s.take_action(false);
        assert_eq!(first.paths, ["/a", "/b"]);
        assert_eq!(first.bytes_changed, 7);
        s.committed(Some("r1".into()));
        // A second commit with no changes records nothing of the first part.
        let second = s.take_action(false);
        assert!(second.paths.is_empty());
        assert_eq!(second.bytes_changed, 0);
        s.wrote("/c", 5);
        let third = s.take_action(false);
        assert_eq!(third.paths, ["/c"]);
        assert_eq!(third.bytes_changed, 5);
        // The session's report still covers all of it.
        assert_eq!(s.report(false).paths_touched, ["/a", "/b", "/c"]);
        assert_eq!(s.report(false).bytes_written, 12);
    }
}

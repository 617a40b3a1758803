//! What one mount session did: the one place that knows its duration, the paths it touched,
//! the bytes it wrote and its outcome (for the log line at unmount, and for an audit record).

use serde::Serialize;
use serde_json::json;
use std::collections::BTreeSet;
use std::time::Instant;
use supabash::audit::{Action, ActionKind};

/// The running record of a mount session.
#[derive(Debug, Clone)]
pub struct Summary {
    started: Instant,
    paths: BTreeSet<String>,
    bytes_written: u64,
    commits: Vec<String>,
    failed_commits: usize,
}

impl Default for Summary {
    fn default() -> Self {
        Summary {
            started: Instant::now(),
            paths: BTreeSet::new(),
            bytes_written: 0,
            commits: Vec::new(),
            failed_commits: 0,
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
    }

    /// Records that `bytes` were written at `path`.
    pub fn wrote(&mut self, path: &str, bytes: u64) {
        self.touched(path);
        self.bytes_written += bytes;
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
    /// The audit record of the session so far (`supabash::audit`): a mount session's record
    /// travels with each commit it makes, and with the discard when it ends uncommitted.
    pub fn action(&self, read_only: bool) -> Action {
        Action::new(ActionKind::MountSession, "mount")
            .with_arguments(json!({ "readOnly": read_only, "commits": self.commits.len() }))
            .with_duration(self.started.elapsed())
            .with_paths(self.paths.iter().cloned().collect())
            .with_bytes_changed(self.bytes_written)
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
}

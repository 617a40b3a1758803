//! Operation events for metrics: a host passes a callback to
//! [`crate::WorkspaceBuilder::on_operation`] and gets one [`OperationEvent`] per workspace
//! operation (each RPC, and commit and discard as wholes). An event holds no path, id, actor,
//! token, metadata or content: only what kind of operation, how long, how it ended and counts.
//! A callback that panics changes nothing: the panic is caught and dropped.

use crate::error::SupabashError;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::{Duration, Instant};
use supabash_core::ErrorCode;

/// How an operation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventOutcome {
    Ok,
    /// Failed with this code.
    Error(ErrorCode),
}

/// Sizes of what an operation moved (zero where they do not apply).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct OperationCounts {
    /// Changes a commit carried.
    pub changes: usize,
    /// Audit records a commit or discard carried.
    pub records: usize,
}

/// One finished operation.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct OperationEvent {
    /// The operation: an RPC's name without `supabash_` (`history`, `diff`, ...), or `commit`
    /// and `discard` for those as a whole.
    pub kind: &'static str,
    pub duration: Duration,
    pub outcome: EventOutcome,
    pub counts: OperationCounts,
    /// A commit the server answered with the receipt of an earlier attempt.
    pub replay: bool,
    /// A commit refused because the head moved (`COMMIT_CONFLICT`).
    pub conflict: bool,
}

/// The host's callback.
pub type OperationObserver = Arc<dyn Fn(&OperationEvent) + Send + Sync>;

/// An operation being timed for the observer (a no-op without one).
pub(crate) struct Timed<'a> {
    observer: Option<&'a OperationObserver>,
    kind: &'static str,
    started: Instant,
}

impl<'a> Timed<'a> {
    pub(crate) fn start(observer: Option<&'a OperationObserver>, kind: &'static str) -> Self {
        Timed {
            observer,
            kind,
            started: Instant::now(),
        }
    }

    /// Reports the outcome of `result`.
    pub(crate) fn finish<T>(
        self,
        result: &Result<T, SupabashError>,
        counts: OperationCounts,
        replay: bool,
    ) {
        let Some(observer) = self.observer else {
            return;
        };
        let outcome = match result {
            Ok(_) => EventOutcome::Ok,
            Err(e) => EventOutcome::Error(e.code()),
        };
        let event = OperationEvent {
            kind: self.kind,
            duration: self.started.elapsed(),
            outcome,
            counts,
            replay,
            conflict: outcome == EventOutcome::Error(ErrorCode::CommitConflict),
        };
        let _ = catch_unwind(AssertUnwindSafe(|| observer(&event)));
    }
}

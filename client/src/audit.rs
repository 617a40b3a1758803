//! The audit queue: the actions agents performed through a surface (an MCP tool call, a bash
//! command, `apply_patch`, a file tool, a mount or run session), staged with the tree they
//! changed. A commit carries the queue and the database writes it in the commit's transaction;
//! [`crate::Workspace::discard`] writes it marked discarded. Hosts and surfaces record with
//! [`crate::Workspace::record`] or a clone of [`crate::Workspace::audit_queue`].
//!
//! Arguments must already be redacted: the database cannot know a secret. They are capped
//! here ([`supabash_core::rpc::audit::cap_arguments`]), and so are the paths.

use serde_json::Value;
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use supabash_core::limits::MAX_AUDIT_PATHS;
use supabash_core::rpc::audit::{self as wire, cap_arguments};

pub use supabash_core::rpc::audit::{ActionKind, ActionOutcome, AuditPage, AuditRecord};

/// The actor of a discarded session's records when the host named none.
pub const DEFAULT_DISCARD_ACTOR: &str = "supabash-client";

/// One action to record. Build it with [`Action::new`] and the setters.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Action {
    pub kind: ActionKind,
    /// The tool or command name.
    pub tool: String,
    /// The call's arguments, already redacted.
    pub arguments: Option<Value>,
    pub outcome: ActionOutcome,
    pub started: SystemTime,
    pub duration: Duration,
    /// Paths the action changed.
    pub paths: Vec<String>,
    /// Bytes the action wrote.
    pub bytes_changed: u64,
}

impl Action {
    /// An action of `kind` by `tool` that starts now, succeeded, took no time and changed
    /// nothing.
    pub fn new(kind: ActionKind, tool: impl Into<String>) -> Self {
        Action {
            kind,
            tool: tool.into(),
            arguments: None,
            outcome: ActionOutcome::Ok,
            started: SystemTime::now(),
            duration: Duration::ZERO,
            paths: Vec::new(),
            bytes_changed: 0,
        }
    }
}

crate::setters! {
    impl Action {
        with_arguments(arguments: some Value),
        with_outcome(outcome: ActionOutcome),
        with_started(started: SystemTime),
        with_duration(duration: Duration),
        with_paths(paths: Vec<String>),
        with_bytes_changed(bytes_changed: u64),
    }
}

#[derive(Debug)]
struct Queue {
    session_id: String,
    next_sequence: i64,
    staged: Vec<wire::Action>,
    actor: String,
}

/// The staged actions of one workspace session. Cheap to clone; every clone records into the
/// same queue.
#[derive(Debug, Clone)]
pub struct AuditQueue(Arc<Mutex<Queue>>);

impl Default for AuditQueue {
    fn default() -> Self {
        AuditQueue(Arc::new(Mutex::new(Queue {
            session_id: uuid::Uuid::new_v4().to_string(),
            next_sequence: 0,
            staged: Vec::new(),
            actor: DEFAULT_DISCARD_ACTOR.to_owned(),
        })))
    }
}

impl AuditQueue {
    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Stages `action`, capping its arguments and paths (the last paths go when the record
    /// would pass `MAX_AUDIT_RECORD_BYTES`). Never fails.
    pub fn record(&self, action: Action) {
        let mut q = self.lock();
        let sequence = q.next_sequence;
        q.next_sequence += 1;
        let mut paths = action.paths;
        paths.truncate(MAX_AUDIT_PATHS);
        let at_ms = action
            .started
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        let mut staged = wire::Action {
            record_id: uuid::Uuid::new_v4().to_string(),
            session_id: q.session_id.clone(),
            sequence,
            at_ms,
            kind: action.kind,
            tool: supabash_core::limits::utf8_prefix(
                &action.tool,
                supabash_core::limits::MAX_AUDIT_TEXT_BYTES,
            )
            .to_owned(),
            arguments: action.arguments.map(cap_arguments),
            outcome: cap_outcome(action.outcome),
            duration_ms: i64::try_from(action.duration.as_millis()).unwrap_or(i64::MAX),
            paths,
            bytes_changed: i64::try_from(action.bytes_changed).unwrap_or(i64::MAX),
        };
        wire::fit_record(&mut staged);
        q.staged.push(staged);
    }

    /// How many actions are staged.
    pub fn len(&self) -> usize {
        self.lock().staged.len()
    }

    /// Whether no action is staged.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The client session id every record of this queue carries.
    pub fn session_id(&self) -> String {
        self.lock().session_id.clone()
    }

    /// The actor a discarded session's records name (default [`DEFAULT_DISCARD_ACTOR`]; a
    /// commit's records name the commit's actor).
    pub fn set_actor(&self, actor: impl Into<String>) {
        self.lock().actor = actor.into();
    }

    pub(crate) fn actor(&self) -> String {
        self.lock().actor.clone()
    }

    /// The staged actions, oldest first, at most `max`.
    pub(crate) fn staged(&self, max: usize) -> Vec<wire::Action> {
        self.lock().staged.iter().take(max).cloned().collect()
    }

    /// Removes the actions a write delivered.
    pub(crate) fn delivered(&self, written: &[wire::Action]) {
        let ids: HashSet<&str> = written.iter().map(|a| a.record_id.as_str()).collect();
        self.lock()
            .staged
            .retain(|a| !ids.contains(a.record_id.as_str()));
    }
}

/// An outcome whose code or reason fits the shared ceiling.
fn cap_outcome(outcome: ActionOutcome) -> ActionOutcome {
    let cap = |s: String| {
        supabash_core::limits::utf8_prefix(&s, supabash_core::limits::MAX_AUDIT_TEXT_BYTES)
            .to_owned()
    };
    match outcome {
        ActionOutcome::Ok => ActionOutcome::Ok,
        ActionOutcome::Error { code } => ActionOutcome::Error { code: cap(code) },
        ActionOutcome::Denied { reason } => ActionOutcome::Denied {
            reason: cap(reason),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn records_are_sequenced_and_capped() {
        let q = AuditQueue::default();
        let big = "x".repeat(3 * supabash_core::limits::MAX_AUDIT_ARGUMENTS_BYTES);
        q.record(
            Action::new(ActionKind::FileTool, "write")
                .with_arguments(json!({ "content": big }))
                .with_paths((0..100).map(|i| format!("/f{i}")).collect()),
        );
        q.record(
            Action::new(ActionKind::Bash, "bash").with_outcome(ActionOutcome::Denied {
                reason: "r".repeat(5000),
            }),
        );
        let staged = q.staged(usize::MAX);
        assert_eq!(staged.len(), 2);
        assert_eq!((staged[0].sequence, staged[1].sequence), (0, 1));
        assert_eq!(staged[0].session_id, staged[1].session_id);
        assert!(wire::check_actions(&staged).is_ok(), "{staged:?}");
        q.delivered(&staged[..1]);
        assert_eq!(q.staged(9)[0].tool, "bash");
    }
}

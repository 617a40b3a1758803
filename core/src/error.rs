//! Error codes and the `SUPABASH_*` markers the database raises. One table maps each marker to
//! its SQLSTATE and to the client error code, so both sides agree.

use std::fmt;

/// The set of error codes a client sees. Closed for any one release, but later releases add
/// codes, so a `match` on it needs a wildcard arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCode {
    Authentication,
    Authorization,
    CommitConflict,
    CommitCoordination,
    CommitInProgress,
    ExpiredCapability,
    HistoryCorruption,
    IdempotencyConflict,
    InvalidArgument,
    InvalidCapability,
    InvalidPatch,
    InvalidPath,
    /// Another holder has a live single-writer lease on the workspace (retry when it expires).
    LeaseHeld,
    /// The lease token presented is not the live one: it expired, was released or taken over
    /// (acquire a new lease, reload, and retry).
    LeaseLost,
    NotFound,
    PartialCommit,
    PolicyDenied,
    QuotaExceeded,
    /// A write reached a read-only server (a hot standby, e.g. a Supabase read replica) or a
    /// read-only transaction: send writes to the primary.
    ReadOnly,
    Redacted,
    /// The workspace was redacted since the staged tree was loaded: reopen it (nothing of the
    /// commit was written, so redacted content cannot come back through a stale tree).
    RedactionInvalidated,
    /// A restore from a revision before a path redaction's boundary.
    RestoreCrossesRedaction,
    RevisionNotFound,
    /// A backend (PostgreSQL, PostgREST, Supabase Auth or Storage) failed, was unreachable, or
    /// answered something the contract does not describe.
    Backend,
    UnsupportedContent,
}

impl ErrorCode {
    /// The code's stable name, e.g. `COMMIT_CONFLICT`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::Authentication => "AUTHENTICATION",
            ErrorCode::Authorization => "AUTHORIZATION",
            ErrorCode::CommitConflict => "COMMIT_CONFLICT",
            ErrorCode::CommitCoordination => "COMMIT_COORDINATION",
            ErrorCode::CommitInProgress => "COMMIT_IN_PROGRESS",
            ErrorCode::ExpiredCapability => "EXPIRED_CAPABILITY",
            ErrorCode::HistoryCorruption => "HISTORY_CORRUPTION",
            ErrorCode::IdempotencyConflict => "IDEMPOTENCY_CONFLICT",
            ErrorCode::InvalidArgument => "INVALID_ARGUMENT",
            ErrorCode::InvalidCapability => "INVALID_CAPABILITY",
            ErrorCode::InvalidPatch => "INVALID_PATCH",
            ErrorCode::InvalidPath => "INVALID_PATH",
            ErrorCode::LeaseHeld => "LEASE_HELD",
            ErrorCode::LeaseLost => "LEASE_LOST",
            ErrorCode::NotFound => "NOT_FOUND",
            ErrorCode::PartialCommit => "PARTIAL_COMMIT",
            ErrorCode::PolicyDenied => "POLICY_DENIED",
            ErrorCode::QuotaExceeded => "QUOTA_EXCEEDED",
            ErrorCode::ReadOnly => "READ_ONLY",
            ErrorCode::Redacted => "REDACTED",
            ErrorCode::RedactionInvalidated => "REDACTION_INVALIDATED",
            ErrorCode::RestoreCrossesRedaction => "RESTORE_CROSSES_REDACTION",
            ErrorCode::RevisionNotFound => "REVISION_NOT_FOUND",
            ErrorCode::Backend => "BACKEND",
            ErrorCode::UnsupportedContent => "UNSUPPORTED_CONTENT",
        }
    }

    /// Whether an immediate retry may succeed.
    pub fn retryable(self) -> bool {
        matches!(
            self,
            ErrorCode::CommitCoordination
                | ErrorCode::Backend
                | ErrorCode::LeaseHeld
                | ErrorCode::LeaseLost
        )
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A marker the database puts at the start of an error message (`SUPABASH_<NAME>: ...`).
/// Later releases add markers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Marker {
    AuthenticationRequired,
    WorkspaceDenied,
    InvalidArgument,
    InvalidPath,
    PathNotFound,
    RevisionNotFound,
    CheckpointNotFound,
    CommitConflict,
    CommitCoordination,
    IdempotencyConflict,
    Quota,
    UnsupportedContent,
    BodyHashCollision,
    HistoryCorruption,
    InvalidCapability,
    ExpiredCapability,
    ReadOnly,
    LeaseHeld,
    LeaseLost,
    RedactionInvalidated,
    RestoreCrossesRedaction,
    RedactionCurrentBody,
    /// The installed schema is older than the library serves: run `ALTER EXTENSION supabash
    /// UPDATE`.
    SchemaOutdated,
    /// An internal fault of the extension (an SPI status error): a bug, never the caller's input.
    Internal,
}

/// Every marker, for lookups and documentation.
pub const MARKERS: [Marker; 24] = [
    Marker::AuthenticationRequired,
    Marker::WorkspaceDenied,
    Marker::InvalidArgument,
    Marker::InvalidPath,
    Marker::PathNotFound,
    Marker::RevisionNotFound,
    Marker::CheckpointNotFound,
    Marker::CommitConflict,
    Marker::CommitCoordination,
    Marker::IdempotencyConflict,
    Marker::Quota,
    Marker::UnsupportedContent,
    Marker::BodyHashCollision,
    Marker::HistoryCorruption,
    Marker::InvalidCapability,
    Marker::ExpiredCapability,
    Marker::ReadOnly,
    Marker::LeaseHeld,
    Marker::LeaseLost,
    Marker::RedactionInvalidated,
    Marker::RestoreCrossesRedaction,
    Marker::RedactionCurrentBody,
    Marker::SchemaOutdated,
    Marker::Internal,
];

impl Marker {
    /// The marker text, e.g. `SUPABASH_COMMIT_CONFLICT`.
    pub fn as_str(self) -> &'static str {
        match self {
            Marker::AuthenticationRequired => "SUPABASH_AUTHENTICATION_REQUIRED",
            Marker::WorkspaceDenied => "SUPABASH_WORKSPACE_DENIED",
            Marker::InvalidArgument => "SUPABASH_INVALID_ARGUMENT",
            Marker::InvalidPath => "SUPABASH_INVALID_PATH",
            Marker::PathNotFound => "SUPABASH_PATH_NOT_FOUND",
            Marker::RevisionNotFound => "SUPABASH_REVISION_NOT_FOUND",
            Marker::CheckpointNotFound => "SUPABASH_CHECKPOINT_NOT_FOUND",
            Marker::CommitConflict => "SUPABASH_COMMIT_CONFLICT",
            Marker::CommitCoordination => "SUPABASH_COMMIT_COORDINATION",
            Marker::IdempotencyConflict => "SUPABASH_IDEMPOTENCY_CONFLICT",
            Marker::Quota => "SUPABASH_QUOTA_EXCEEDED",
            Marker::UnsupportedContent => "SUPABASH_UNSUPPORTED_CONTENT",
            Marker::BodyHashCollision => "SUPABASH_BODY_HASH_COLLISION",
            Marker::HistoryCorruption => "SUPABASH_HISTORY_CORRUPTION",
            Marker::InvalidCapability => "SUPABASH_INVALID_CAPABILITY",
            Marker::ExpiredCapability => "SUPABASH_EXPIRED_CAPABILITY",
            Marker::ReadOnly => "SUPABASH_READ_ONLY",
            Marker::LeaseHeld => "SUPABASH_LEASE_HELD",
            Marker::LeaseLost => "SUPABASH_LEASE_LOST",
            Marker::RedactionInvalidated => "SUPABASH_REDACTION_INVALIDATED",
            Marker::RestoreCrossesRedaction => "SUPABASH_RESTORE_CROSSES_REDACTION",
            Marker::RedactionCurrentBody => "SUPABASH_REDACTION_CURRENT_BODY",
            Marker::SchemaOutdated => "SUPABASH_SCHEMA_OUTDATED",
            Marker::Internal => "SUPABASH_INTERNAL",
        }
    }

    /// The SQLSTATE the caller receives. The `PT` codes are raised by the SQL wrapper
    /// (PostgREST answers `PTnnn` with HTTP status nnn): 409 conflict, 423 lease held, 412
    /// lease lost.
    pub fn sqlstate(self) -> &'static str {
        match self {
            Marker::AuthenticationRequired
            | Marker::WorkspaceDenied
            | Marker::InvalidCapability
            | Marker::ExpiredCapability => "42501",
            Marker::InvalidArgument
            | Marker::InvalidPath
            | Marker::PathNotFound
            | Marker::RevisionNotFound
            | Marker::CheckpointNotFound => "22023",
            Marker::CommitConflict => "PT409",
            Marker::CommitCoordination => "55P03",
            Marker::IdempotencyConflict => "23505",
            Marker::Quota => "54000",
            Marker::UnsupportedContent => "0A000",
            Marker::BodyHashCollision | Marker::HistoryCorruption => "XX001",
            Marker::Internal => "XX000",
            Marker::ReadOnly => "25006",
            Marker::LeaseHeld => "PT423",
            Marker::LeaseLost => "PT412",
            Marker::RedactionInvalidated
            | Marker::RestoreCrossesRedaction
            | Marker::RedactionCurrentBody
            | Marker::SchemaOutdated => "55000",
        }
    }

    /// The client error code.
    pub fn code(self) -> ErrorCode {
        match self {
            Marker::AuthenticationRequired => ErrorCode::Authentication,
            Marker::WorkspaceDenied => ErrorCode::Authorization,
            Marker::InvalidArgument => ErrorCode::InvalidArgument,
            Marker::InvalidPath => ErrorCode::InvalidPath,
            Marker::PathNotFound => ErrorCode::NotFound,
            Marker::RevisionNotFound | Marker::CheckpointNotFound => ErrorCode::RevisionNotFound,
            Marker::CommitConflict => ErrorCode::CommitConflict,
            Marker::CommitCoordination => ErrorCode::CommitCoordination,
            Marker::IdempotencyConflict => ErrorCode::IdempotencyConflict,
            Marker::Quota => ErrorCode::QuotaExceeded,
            Marker::UnsupportedContent => ErrorCode::UnsupportedContent,
            Marker::BodyHashCollision | Marker::HistoryCorruption => ErrorCode::HistoryCorruption,
            Marker::InvalidCapability => ErrorCode::InvalidCapability,
            Marker::ExpiredCapability => ErrorCode::ExpiredCapability,
            Marker::ReadOnly => ErrorCode::ReadOnly,
            Marker::LeaseHeld => ErrorCode::LeaseHeld,
            Marker::LeaseLost => ErrorCode::LeaseLost,
            Marker::RedactionInvalidated => ErrorCode::RedactionInvalidated,
            Marker::RestoreCrossesRedaction => ErrorCode::RestoreCrossesRedaction,
            // The content is still in use at the head: redacting it is refused, not wrong input.
            Marker::RedactionCurrentBody => ErrorCode::PolicyDenied,
            // The database must be upgraded by its operator: nothing the caller can fix.
            Marker::SchemaOutdated | Marker::Internal => ErrorCode::Backend,
        }
    }

    /// Finds the marker an error message starts with.
    pub fn from_message(message: &str) -> Option<Marker> {
        MARKERS.into_iter().find(|m| {
            message
                .strip_prefix(m.as_str())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(':'))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_round_trip_from_messages() {
        for m in MARKERS {
            assert_eq!(Marker::from_message(&format!("{}: x", m.as_str())), Some(m));
            assert_eq!(Marker::from_message(m.as_str()), Some(m));
        }
        assert_eq!(Marker::from_message("SUPABASH_INVALID_PATHX"), None);
        assert_eq!(Marker::from_message("permission denied"), None);
    }

    #[test]
    fn lease_errors_are_retryable() {
        assert!(Marker::LeaseHeld.code().retryable());
        assert!(Marker::LeaseLost.code().retryable());
        assert!(!ErrorCode::CommitConflict.retryable());
    }
}

//! The options of the host's operations ([`CommitOptions`], [`ForkOptions`],
//! [`CheckpointOptions`], [`PurgeOptions`], [`RedactOptions`]). The types are
//! `#[non_exhaustive]`: callers outside this crate build them from `new`/`Default` and the
//! builder-style setters, so fields can be added without breaking them.

use serde_json::Value;

/// How [`Workspace::fork`](super::Workspace::fork) forks. Only `actor` is required.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ForkOptions {
    /// Recorded on the fork's first revision.
    pub actor: String,
    /// The revision to fork (default: the head).
    pub revision: Option<String>,
    /// A name for people, shown by [`Workspace::list`](super::Workspace::list).
    pub label: Option<String>,
    pub cause: Option<String>,
}

impl ForkOptions {
    /// Options for `actor`.
    pub fn new(actor: impl Into<String>) -> Self {
        ForkOptions {
            actor: actor.into(),
            ..Default::default()
        }
    }
}

/// Who commits and why. Only `actor` is required.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct CommitOptions {
    pub actor: String,
    pub correlation_id: Option<String>,
    pub cause: Option<String>,
    pub idempotency_key: Option<String>,
    /// A JSON object stored with the revision.
    pub metadata: Option<Value>,
    /// When the head moved past the base, apply on top of it unless a path this commit
    /// touches changed in between (default: fail with `COMMIT_CONFLICT` on any head move).
    /// After a rebased commit the staged tree is the new revision's, others' files included.
    pub rebase: bool,
}

impl CommitOptions {
    /// Options for `actor`.
    pub fn new(actor: impl Into<String>) -> Self {
        CommitOptions {
            actor: actor.into(),
            ..Default::default()
        }
    }
}

/// Options of [`Workspace::checkpoint`](super::Workspace::checkpoint); the revision defaults
/// to the head.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct CheckpointOptions {
    pub label: Option<String>,
    pub retention_class: Option<String>,
    pub idempotency_key: Option<String>,
    pub revision: Option<String>,
}

/// Options of [`Workspace::purge`](super::Workspace::purge). With neither rule the server
/// keeps the newest 50.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct PurgeOptions {
    pub keep_revisions: Option<i64>,
    pub max_age_seconds: Option<i64>,
    /// Revisions at or after this one are kept.
    pub floor_revision: Option<String>,
    pub dry_run: bool,
    /// Also remove the audit records a purge keeps by default (denied and discarded actions,
    /// and those of delegated actors) with their revisions (the owner only).
    pub purge_audit: bool,
}

/// Options of [`Workspace::redact`](super::Workspace::redact): what to remove from history.
/// Name paths and/or body hashes, or only metadata keys / cause clearing to scrub revisions.
/// It is a dry run (a report, nothing changed) unless [`RedactOptions::apply`] is set.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct RedactOptions {
    /// Exact paths whose versions before the boundary are redacted.
    pub paths: Vec<String>,
    /// Body hashes (hex SHA-256 of the bytes) whose versions before the boundary are redacted.
    pub body_hashes: Vec<String>,
    /// The exclusive boundary revision (default: the head).
    pub before_revision: Option<String>,
    pub reason: Option<String>,
    /// Keys removed from the metadata of the selected revisions.
    pub metadata_keys: Vec<String>,
    /// Clears the cause of the selected revisions.
    pub clear_cause: bool,
    /// Apply the redaction (default: a dry run).
    pub apply: bool,
}

impl RedactOptions {
    /// Empty options (a dry run that still needs a selector).
    pub fn new() -> Self {
        Self::default()
    }

    /// Redacts the versions at `path`.
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.paths.push(path.into());
        self
    }

    /// Redacts the versions whose body has this hex SHA-256.
    pub fn body_hash(mut self, hash: impl Into<String>) -> Self {
        self.body_hashes.push(hash.into());
        self
    }

    /// Sets the exclusive boundary revision.
    pub fn before(mut self, revision: impl Into<String>) -> Self {
        self.before_revision = Some(revision.into());
        self
    }

    /// Records why.
    pub fn reason(mut self, reason: impl Into<String>) -> Self {
        self.reason = Some(reason.into());
        self
    }

    /// Removes `key` from the selected revisions' metadata.
    pub fn strip_metadata(mut self, key: impl Into<String>) -> Self {
        self.metadata_keys.push(key.into());
        self
    }

    /// Clears the selected revisions' cause.
    pub fn clear_cause(mut self) -> Self {
        self.clear_cause = true;
        self
    }

    /// Applies the redaction instead of reporting it.
    pub fn apply(mut self) -> Self {
        self.apply = true;
        self
    }
}

crate::setters! {
    impl CommitOptions {
        with_actor(actor: into String),
        with_correlation_id(correlation_id: some into String),
        with_cause(cause: some into String),
        with_idempotency_key(idempotency_key: some into String),
        with_metadata(metadata: some Value),
        with_rebase(rebase: bool),
    }
}

crate::setters! {
    impl ForkOptions {
        with_revision(revision: some into String),
        with_label(label: some into String),
        with_cause(cause: some into String),
    }
}

crate::setters! {
    impl CheckpointOptions {
        with_label(label: some into String),
        with_retention_class(retention_class: some into String),
        with_idempotency_key(idempotency_key: some into String),
        with_revision(revision: some into String),
    }
}

crate::setters! {
    impl PurgeOptions {
        with_keep_revisions(keep_revisions: some i64),
        with_max_age_seconds(max_age_seconds: some i64),
        with_floor_revision(floor_revision: some into String),
        with_dry_run(dry_run: bool),
        with_purge_audit(purge_audit: bool),
    }
}

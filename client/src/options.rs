//! Builder-style setters of the host's option types ([`CommitOptions`], [`CheckpointOptions`],
//! [`PurgeOptions`]). The types are `#[non_exhaustive]`: callers outside this crate build them
//! from `new`/`Default` and these setters, so fields can be added without breaking them.

use crate::workspace::{CheckpointOptions, CommitOptions, PurgeOptions};
use serde_json::Value;

/// Builder-style setters (the struct is `#[non_exhaustive]`: build it from its constructor
/// or `Default`, then set what differs).
impl CommitOptions {
    /// Sets `actor`.
    pub fn with_actor(mut self, value: impl Into<String>) -> Self {
        self.actor = value.into();
        self
    }

    /// Sets `correlation_id`.
    pub fn with_correlation_id(mut self, value: impl Into<String>) -> Self {
        self.correlation_id = Some(value.into());
        self
    }

    /// Sets `cause`.
    pub fn with_cause(mut self, value: impl Into<String>) -> Self {
        self.cause = Some(value.into());
        self
    }

    /// Sets `idempotency_key`.
    pub fn with_idempotency_key(mut self, value: impl Into<String>) -> Self {
        self.idempotency_key = Some(value.into());
        self
    }

    /// Sets `metadata`.
    pub fn with_metadata(mut self, value: Value) -> Self {
        self.metadata = Some(value);
        self
    }
}

/// Builder-style setters (the struct is `#[non_exhaustive]`: build it from its constructor
/// or `Default`, then set what differs).
impl CheckpointOptions {
    /// Sets `label`.
    pub fn with_label(mut self, value: impl Into<String>) -> Self {
        self.label = Some(value.into());
        self
    }

    /// Sets `retention_class`.
    pub fn with_retention_class(mut self, value: impl Into<String>) -> Self {
        self.retention_class = Some(value.into());
        self
    }

    /// Sets `idempotency_key`.
    pub fn with_idempotency_key(mut self, value: impl Into<String>) -> Self {
        self.idempotency_key = Some(value.into());
        self
    }

    /// Sets `revision`.
    pub fn with_revision(mut self, value: impl Into<String>) -> Self {
        self.revision = Some(value.into());
        self
    }
}

/// Builder-style setters (the struct is `#[non_exhaustive]`: build it from its constructor
/// or `Default`, then set what differs).
impl PurgeOptions {
    /// Sets `keep_revisions`.
    pub fn with_keep_revisions(mut self, value: i64) -> Self {
        self.keep_revisions = Some(value);
        self
    }

    /// Sets `max_age_seconds`.
    pub fn with_max_age_seconds(mut self, value: i64) -> Self {
        self.max_age_seconds = Some(value);
        self
    }

    /// Sets `floor_revision`.
    pub fn with_floor_revision(mut self, value: impl Into<String>) -> Self {
        self.floor_revision = Some(value.into());
        self
    }

    /// Sets `dry_run`.
    pub fn with_dry_run(mut self, value: bool) -> Self {
        self.dry_run = value;
        self
    }
}

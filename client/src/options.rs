//! Builder-style setters of the host's option types ([`CommitOptions`], [`ForkOptions`],
//! [`CheckpointOptions`], [`PurgeOptions`]). The types are `#[non_exhaustive]`: callers outside this crate build them
//! from `new`/`Default` and these setters, so fields can be added without breaking them.

use crate::workspace::{CheckpointOptions, CommitOptions, ForkOptions, PurgeOptions};
use serde_json::Value;

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

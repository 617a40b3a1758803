//! Notes on a revision after the fact (just-stash's `addNote`/`getNote`): a host attaches a
//! small JSON value under a key to an existing revision (an evaluation score, a review verdict)
//! without a new revision. Notes are append-only per key: a second note under the same key is
//! its next version, and every version keeps who wrote it and when. Purge removes them with
//! their revision; a redaction's `metadata_keys` removes the notes under those keys from the
//! revisions it selects.

use super::declare::{request, rpc, WorkspaceRequest};
use super::Rpc;
use crate::limits::{check_texts, FieldError, MAX_LABEL_BYTES};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_with::skip_serializing_none;

/// Largest note value, as compact JSON bytes.
pub const MAX_NOTE_BYTES: usize = 4096;
/// Most notes (all keys and versions together) one revision holds.
pub const MAX_NOTES_PER_REVISION: i64 = 256;

request! {
    "supabash_add_note", mutates = true, RevisionNote, workspace = [Commit];
    /// `supabash_add_note`: appends `value` under `key` to revision `revision` (grant
    /// operation `commit`). `actor` is required of the owner and ignored for a delegated
    /// grant (its subject is recorded), as for a commit.
    pub struct AddNote {
        pub workspace_id: String,
        pub revision: String,
        pub key: String,
        pub value: Value,
        pub actor: Option<String>,
        pub delegated_grant: Option<String>,
    }
}

impl AddNote {
    /// The database's ceilings on the key, actor and value (both sides check them).
    pub fn check_fields(&self) -> Result<(), FieldError> {
        check_texts(&[
            ("key", Some(self.key.as_str()), MAX_LABEL_BYTES),
            ("actor", self.actor.as_deref(), MAX_LABEL_BYTES),
        ])?;
        if self.value.is_null() {
            return Err(FieldError::Empty("value"));
        }
        if self.value.to_string().len() > MAX_NOTE_BYTES {
            return Err(FieldError::TooLong {
                name: "value",
                max: MAX_NOTE_BYTES,
            });
        }
        Ok(())
    }
}

request! {
    "supabash_notes", mutates = false, Vec<RevisionNote>, workspace = [History];
    /// `supabash_notes`: the notes of revision `revision` (every version, by key then
    /// version), or only those under `key` (grant operation `history`).
    pub struct Notes {
        pub workspace_id: String,
        pub revision: String,
        pub key: Option<String>,
        pub delegated_grant: Option<String>,
    }
}

/// One version of a note.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RevisionNote {
    pub revision: String,
    pub key: String,
    /// 1 for the first note under the key on this revision, then 2, 3, ...
    pub version: i32,
    pub value: Value,
    pub actor: String,
    /// RFC 3339 UTC, microseconds.
    pub noted_at: String,
}

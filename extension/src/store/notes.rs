//! Notes on revisions (`supabash.revision_notes`): small JSON values under a key, appended to
//! an existing revision. The only code that writes SQL for that table. Purge removes a
//! revision's notes with it (the foreign key cascades); [`scrub`] is redaction's.

use crate::pg::db::{self, Row};
use crate::pg::fail::Outcome;
use supabash_core::rpc::notes::{RevisionNote, MAX_NOTES_PER_REVISION};

/// The columns [`note_of`] reads, in order.
const COLUMNS: &str = "revision_id::text, key, version, value, actor, supabash.utc_text(noted_at)";

/// Reads [`COLUMNS`] starting at column `at`.
fn note_of(r: &Row, at: usize) -> Outcome<RevisionNote> {
    Ok(RevisionNote {
        revision: db::get(r, at)?,
        key: db::get(r, at + 1)?,
        version: db::get(r, at + 2)?,
        value: db::get::<pgrx::JsonB>(r, at + 3)?.0,
        actor: db::get(r, at + 4)?,
        noted_at: db::get(r, at + 5)?,
    })
}

/// What a new note says and who writes it.
pub struct New {
    pub revision: String,
    pub key: String,
    pub value: serde_json::Value,
    pub actor: String,
    /// The key id of a delegated grant's verifier.
    pub delegation_key_id: Option<String>,
}

/// Appends `new` to its revision of `ws` as the next version of its key; `None` when the
/// revision already holds [`MAX_NOTES_PER_REVISION`] notes. The caller holds the workspace's
/// lock, so versions of one key never race.
pub fn append(ws: &str, new: New) -> Outcome<Option<RevisionNote>> {
    db::rows(
        &format!(
            "WITH n AS (SELECT count(*) AS total,
                               coalesce(max(version) FILTER (WHERE key = $3), 0) AS last
                          FROM supabash.revision_notes
                         WHERE workspace_id = $1::uuid AND revision_id = $2::uuid)
             INSERT INTO supabash.revision_notes
                    (workspace_id, revision_id, key, version, value, actor, delegation_key_id, noted_at)
             SELECT $1::uuid, $2::uuid, $3, n.last + 1, $4, $5, $6, clock_timestamp()
               FROM n WHERE n.total < $7
             RETURNING {COLUMNS}"
        ),
        &[
            ws.into(),
            new.revision.into(),
            new.key.into(),
            pgrx::JsonB(new.value).into(),
            new.actor.into(),
            new.delegation_key_id.into(),
            MAX_NOTES_PER_REVISION.into(),
        ],
        |r| note_of(r, 1),
    )
    .map(|mut v| v.pop())
}

/// The notes of revisions `revisions` of `ws` (only those under `key` when given), by
/// revision, key and version.
pub fn of_revisions(
    ws: &str,
    revisions: &[String],
    key: Option<&str>,
) -> Outcome<Vec<RevisionNote>> {
    db::query(
        &format!(
            "SELECT {COLUMNS} FROM supabash.revision_notes
              WHERE workspace_id = $1::uuid AND revision_id = ANY($2::uuid[])
                AND ($3::text IS NULL OR key = $3)
              ORDER BY revision_id, key, version"
        ),
        &[ws.into(), revisions.to_vec().into(), key.into()],
        |r| note_of(r, 1),
    )
}

/// Removes the notes under `keys` from revisions `revisions` of `ws` (a redaction's
/// `metadata_keys`).
pub fn scrub(ws: &str, revisions: &[String], keys: &[String]) -> Outcome<()> {
    db::exec(
        "DELETE FROM supabash.revision_notes
          WHERE workspace_id = $1::uuid AND revision_id = ANY($2::uuid[]) AND key = ANY($3::text[])",
        &[ws.into(), revisions.to_vec().into(), keys.to_vec().into()],
    )
}

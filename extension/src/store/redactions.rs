//! The storage side of redaction: which entry rows, copies, bodies and receipts a redaction
//! matches, and the rewrites that turn them into tombstones (`supabash.redactions` records
//! each redaction; `rpc::redact` holds the rules and the order of the writes).

use crate::pg::db;
use crate::pg::fail::{Fail, Outcome};
use crate::store::access::Workspace;
use crate::store::{bodies, encoding, lineage};
use std::collections::HashSet;
use supabash_core::receipt_lines;
use supabash_core::rpc::{HeldBody, MAX_STILL_HELD};
use supabash_core::Marker;

/// The position a restore's source must not be before: the boundary of the latest path
/// redaction, if any (the restore fence).
pub fn restore_floor(ws: &str) -> Outcome<Option<i64>> {
    Ok(db::query_row(
        "SELECT max(boundary_position) FROM supabash.redactions
          WHERE workspace_id = $1::uuid AND cardinality(paths) > 0",
        &[ws.into()],
        |r| db::opt::<i64>(r, 1),
    )?
    .flatten())
}

/// One stored version a redaction turns into a tombstone.
pub struct Match {
    pub path: String,
    pub valid_from: i64,
    pub valid_until: Option<i64>,
    /// The hash receipts and diffs name it by (its content hash, or its body's).
    pub content_hash: Vec<u8>,
    pub body_hash: Vec<u8>,
}

impl Match {
    /// Whether the version is still visible at the boundary (its tail keeps the content).
    pub fn straddles(&self, boundary: i64) -> bool {
        self.valid_until.is_none_or(|u| u > boundary)
    }
}

/// The entry rows of workspace `ws` a redaction rewrites: every version visible before
/// `boundary` at one of `paths` or with one of `hashes` (body hashes), not yet a tombstone.
pub fn matched_entries(
    ws: &str,
    boundary: i64,
    paths: &[String],
    hashes: &[Vec<u8>],
) -> Outcome<Vec<Match>> {
    db::query(
        "SELECT path, valid_from, valid_until, coalesce(content_hash, body_hash), body_hash
           FROM supabash.entries
          WHERE workspace_id = $1::uuid AND NOT redacted AND valid_from < $2
            AND (path = ANY($3) OR body_hash = ANY($4))
          ORDER BY path, valid_from",
        &[
            ws.into(),
            boundary.into(),
            paths.to_vec().into(),
            hashes.to_vec().into(),
        ],
        |r| {
            Ok(Match {
                path: db::get(r, 1)?,
                valid_from: db::get(r, 2)?,
                valid_until: db::opt(r, 3)?,
                content_hash: db::get(r, 4)?,
                body_hash: db::get(r, 5)?,
            })
        },
    )
}

/// The bodies of body store `store` that no entry of any workspace of the store references
/// once the entry rows `gone` (workspace, path, valid_from) stop referencing theirs, with their
/// plain sizes. A body kept only as another's delta base counts as unreferenced: the caller
/// stores its dependants again whole.
pub fn dead_bodies(store: &str, gone: &[(String, String, i64)]) -> Outcome<Vec<(Vec<u8>, i64)>> {
    let ids: Vec<String> = gone.iter().map(|g| g.0.clone()).collect();
    let paths: Vec<String> = gone.iter().map(|g| g.1.clone()).collect();
    let froms: Vec<i64> = gone.iter().map(|g| g.2).collect();
    db::query(
        "WITH gone AS (SELECT * FROM unnest($2::uuid[], $3::text[], $4::bigint[]) AS g(ws, path, valid_from)),
              live AS (SELECT e.body_hash FROM supabash.entries e
                         JOIN supabash.workspaces w ON w.id = e.workspace_id AND w.store_id = $1::uuid
                        WHERE NOT e.redacted
                          AND NOT EXISTS (SELECT 1 FROM gone g
                                           WHERE g.ws = e.workspace_id AND g.path = e.path
                                             AND g.valid_from = e.valid_from))
         SELECT b.hash, b.size FROM supabash.bodies b
          WHERE b.workspace_id = $1::uuid AND b.hash NOT IN (SELECT body_hash FROM live)
          ORDER BY b.hash",
        &[store.into(), ids.into(), paths.into(), froms.into()],
        |r| Ok((db::get::<Vec<u8>>(r, 1)?, db::get::<i64>(r, 2)?)),
    )
}

/// The versions in body store `store` that still hold one of `hashes` once the entry rows
/// `gone` (workspace, path, valid_from) are tombstones: each workspace, path and body once
/// (at most `MAX_STILL_HELD`).
pub fn still_held(
    store: &str,
    hashes: &[Vec<u8>],
    gone: &[(String, String, i64)],
) -> Outcome<Vec<HeldBody>> {
    if hashes.is_empty() {
        return Ok(Vec::new());
    }
    let ids: Vec<String> = gone.iter().map(|g| g.0.clone()).collect();
    let paths: Vec<String> = gone.iter().map(|g| g.1.clone()).collect();
    let froms: Vec<i64> = gone.iter().map(|g| g.2).collect();
    db::query(
        "SELECT DISTINCT encode(e.body_hash, 'hex'), e.workspace_id::text, e.path,
                w.deleted_at IS NOT NULL
           FROM supabash.entries e
           JOIN supabash.workspaces w ON w.id = e.workspace_id AND w.store_id = $1::uuid
          WHERE NOT e.redacted AND e.body_hash = ANY($2)
            AND NOT EXISTS (SELECT 1 FROM unnest($3::uuid[], $4::text[], $5::bigint[]) AS g(ws, path, valid_from)
                             WHERE g.ws = e.workspace_id AND g.path = e.path AND g.valid_from = e.valid_from)
          ORDER BY 2, 3, 1 LIMIT $6",
        &[
            store.into(),
            hashes.to_vec().into(),
            ids.into(),
            paths.into(),
            froms.into(),
            MAX_STILL_HELD.into(),
        ],
        |r| {
            Ok(HeldBody {
                body_hash: db::get(r, 1)?,
                workspace_id: db::get(r, 2)?,
                path: db::get(r, 3)?,
                deleted: db::get(r, 4)?,
            })
        },
    )
}

/// The forks (at any depth) that read this workspace's versions from before `boundary`: those
/// whose chain of fork points reaches it at a position before the boundary.
pub fn sharing_forks(ws: &str, boundary: i64) -> Outcome<Vec<String>> {
    db::query(
        "WITH RECURSIVE d (id, at) AS (
           SELECT id, fork_position FROM supabash.workspaces WHERE fork_of = $1::uuid
           UNION ALL
           SELECT w.id, d.at FROM supabash.workspaces w JOIN d ON w.fork_of = d.id)
         SELECT id::text FROM d WHERE at < $2 ORDER BY id",
        &[ws.into(), boundary.into()],
        |r| db::get::<String>(r, 1),
    )
}

/// A fork's copy of an inherited version (see `lineage`) that a redaction rewrites.
pub struct Copy {
    pub workspace: String,
    pub path: String,
}

impl Copy {
    /// Its entry row, `(workspace, path, valid_from)`: copies start at the fork's first position.
    pub fn row(&self) -> (String, String, i64) {
        (
            self.workspace.clone(),
            self.path.clone(),
            lineage::FIRST_POSITION,
        )
    }
}

/// The copy rows in `forks` of versions the redaction matched (same path, same body): the
/// versions those forks share, copied when they first changed the path.
pub fn matched_copies(forks: &[String], matched: &[Match]) -> Outcome<Vec<Copy>> {
    if forks.is_empty() || matched.is_empty() {
        return Ok(Vec::new());
    }
    let paths: Vec<String> = matched.iter().map(|m| m.path.clone()).collect();
    let hashes: Vec<Vec<u8>> = matched.iter().map(|m| m.body_hash.clone()).collect();
    db::query(
        "SELECT e.workspace_id::text, e.path FROM supabash.entries e
           JOIN unnest($2::text[], $3::bytea[]) AS m(path, body_hash)
             ON e.path = m.path AND e.body_hash = m.body_hash
          WHERE e.workspace_id = ANY($1::uuid[]) AND e.valid_from = $4 AND NOT e.redacted
          GROUP BY 1, 2 ORDER BY 1, 2",
        &[
            forks.to_vec().into(),
            paths.into(),
            hashes.into(),
            lineage::FIRST_POSITION.into(),
        ],
        |r| {
            Ok(Copy {
                workspace: db::get(r, 1)?,
                path: db::get(r, 2)?,
            })
        },
    )
}

/// Stores again whole (no base) every body of `store` that is a delta against one of `dead`
/// and is not itself dead, so that no kept body depends on bytes about to be deleted.
pub fn detach_dependants(store: &str, dead: &[Vec<u8>]) -> Outcome<()> {
    let dependants: Vec<(Vec<u8>, i64)> = db::query(
        "SELECT hash, size FROM supabash.bodies
          WHERE workspace_id = $1::uuid AND base_hash = ANY($2) AND hash <> ALL($2)",
        &[store.into(), dead.to_vec().into()],
        |r| Ok((db::get::<Vec<u8>>(r, 1)?, db::get::<i64>(r, 2)?)),
    )?;
    if dependants.is_empty() {
        return Ok(());
    }
    let mut loaded = bodies::load_charged(store, &dependants)?;
    let mut hashes = Vec::with_capacity(dependants.len());
    let mut forms = Vec::with_capacity(dependants.len());
    for (hash, _) in dependants {
        let body = loaded
            .remove(&hash)
            .ok_or_else(|| Fail::new(Marker::HistoryCorruption, "a stored body is missing"))?;
        forms.push(encoding::encode(&body.bytes, None).0);
        hashes.push(hash);
    }
    db::exec(
        "UPDATE supabash.bodies b SET body = n.body, base_hash = NULL
           FROM unnest($2::bytea[], $3::bytea[]) AS n(hash, body)
          WHERE b.workspace_id = $1::uuid AND b.hash = n.hash",
        &[store.into(), hashes.into(), forms.into()],
    )
}

/// Rewrites the matched rows: a version still visible at the boundary is split (its part from
/// the boundary on keeps the content), then every matched row becomes a tombstone.
pub fn write_tombstones(ws: &str, boundary: i64, matched: &[Match]) -> Outcome<()> {
    let split: Vec<&Match> = matched.iter().filter(|m| m.straddles(boundary)).collect();
    if !split.is_empty() {
        let paths: Vec<String> = split.iter().map(|m| m.path.clone()).collect();
        let froms: Vec<i64> = split.iter().map(|m| m.valid_from).collect();
        let untils: Vec<Option<i64>> = split.iter().map(|m| m.valid_until).collect();
        // Close first: the open-row index admits one open row per path.
        db::exec(
            "UPDATE supabash.entries e SET valid_until = $2
               FROM unnest($3::text[], $4::bigint[]) AS m(path, valid_from)
              WHERE e.workspace_id = $1::uuid AND e.path = m.path AND e.valid_from = m.valid_from",
            &[
                ws.into(),
                boundary.into(),
                paths.clone().into(),
                froms.clone().into(),
            ],
        )?;
        // The row copied whole (whatever columns the installed schema has: kind, mode and
        // time from 0.6.0 on), with its interval moved.
        db::exec(
            "INSERT INTO supabash.entries
             SELECT (jsonb_populate_record(e, jsonb_build_object(
                       'valid_from', $2, 'valid_until', m.valid_until))).*
               FROM supabash.entries e
               JOIN unnest($3::text[], $4::bigint[], $5::bigint[]) AS m(path, valid_from, valid_until)
                 ON e.path = m.path AND e.valid_from = m.valid_from
              WHERE e.workspace_id = $1::uuid",
            &[ws.into(), boundary.into(), paths.into(), froms.into(), untils.into()],
        )?;
    }
    let rows: Vec<(String, String, i64)> = matched
        .iter()
        .map(|m| (ws.to_owned(), m.path.clone(), m.valid_from))
        .collect();
    tombstone(&rows)
}

/// Turns the entry rows `(workspace, path, valid_from)` into tombstones.
pub fn tombstone(rows: &[(String, String, i64)]) -> Outcome<()> {
    if rows.is_empty() {
        return Ok(());
    }
    let ids: Vec<String> = rows.iter().map(|r| r.0.clone()).collect();
    let paths: Vec<String> = rows.iter().map(|r| r.1.clone()).collect();
    let froms: Vec<i64> = rows.iter().map(|r| r.2).collect();
    db::exec(
        "UPDATE supabash.entries e
            SET redacted = true, body_hash = '\\x'::bytea, body_size = 0,
                content_hash = NULL, content_size = NULL, metadata = NULL
           FROM unnest($1::uuid[], $2::text[], $3::bigint[]) AS m(ws, path, valid_from)
          WHERE e.workspace_id = m.ws AND e.path = m.path AND e.valid_from = m.valid_from",
        &[ids.into(), paths.into(), froms.into()],
    )
}

/// Removes from every receipt line of the workspace the hashes (and sizes) of redacted
/// content that no kept version still holds: a hash can betray a short secret.
pub fn scrub_receipts(store: &str, family: &[String], matched: &[&Match]) -> Outcome<()> {
    let mut hashes: Vec<Vec<u8>> = matched.iter().map(|m| m.content_hash.clone()).collect();
    hashes.sort();
    hashes.dedup();
    let live: HashSet<Vec<u8>> = db::query(
        "SELECT DISTINCT coalesce(e.content_hash, e.body_hash) FROM supabash.entries e
           JOIN supabash.workspaces w ON w.id = e.workspace_id AND w.store_id = $1::uuid
          WHERE NOT e.redacted AND coalesce(e.content_hash, e.body_hash) = ANY($2)",
        &[store.into(), hashes.clone().into()],
        |r| db::get::<Vec<u8>>(r, 1),
    )?
    .into_iter()
    .collect();
    hashes.retain(|h| !live.contains(h));
    if hashes.is_empty() {
        return Ok(());
    }
    let hex_hashes: HashSet<String> = hashes.iter().map(hex::encode).collect();
    // Lines store hashes as raw bytes, so only revisions holding one are decoded.
    let candidates = db::query(
        "SELECT workspace_id::text, revision_id::text, lines FROM supabash.revisions r
          WHERE workspace_id = ANY($1::uuid[])
            AND EXISTS (SELECT 1 FROM unnest($2::bytea[]) h WHERE position(h IN r.lines) > 0)",
        &[family.to_vec().into(), hashes.into()],
        |r| {
            Ok((
                db::get::<String>(r, 1)?,
                db::get::<String>(r, 2)?,
                db::get::<Vec<u8>>(r, 3)?,
            ))
        },
    )?;
    let unreadable = |e: receipt_lines::CodecError| {
        Fail::new(
            Marker::HistoryCorruption,
            format!("a stored receipt is unreadable: {e}"),
        )
    };
    let (mut owners, mut ids, mut encoded) = (Vec::new(), Vec::new(), Vec::new());
    for (workspace, revision, bytes) in candidates {
        let mut lines = receipt_lines::decode(&bytes).map_err(unreadable)?;
        let mut changed = false;
        for line in &mut lines {
            changed |= line.redact(&hex_hashes);
        }
        if changed {
            owners.push(workspace);
            ids.push(revision);
            encoded.push(receipt_lines::encode(&lines).map_err(unreadable)?);
        }
    }
    db::exec(
        "UPDATE supabash.revisions r SET lines = n.lines
           FROM unnest($1::uuid[], $2::uuid[], $3::bytea[]) AS n(workspace_id, revision_id, lines)
          WHERE r.workspace_id = n.workspace_id AND r.revision_id = n.revision_id",
        &[owners.into(), ids.into(), encoded.into()],
    )
}

/// The revisions before the boundary a redaction names: those showing a matched version, or,
/// when it only scrubs metadata, all of them.
pub fn selected_revisions(
    ws: &str,
    boundary: i64,
    matched: &[Match],
    all: bool,
) -> Outcome<Vec<String>> {
    let froms: Vec<i64> = matched.iter().map(|m| m.valid_from).collect();
    let untils: Vec<Option<i64>> = matched.iter().map(|m| m.valid_until).collect();
    db::query(
        "SELECT r.revision_id::text FROM supabash.revisions r
          WHERE r.workspace_id = $1::uuid AND r.position < $2
            AND ($3 OR EXISTS (SELECT 1 FROM unnest($4::bigint[], $5::bigint[]) AS m(f, u)
                                WHERE r.position >= m.f AND (m.u IS NULL OR r.position < m.u)))
          ORDER BY r.position",
        &[
            ws.into(),
            boundary.into(),
            all.into(),
            froms.into(),
            untils.into(),
        ],
        |r| db::get::<String>(r, 1),
    )
}

/// A version of `paths` or `hashes` that fork `ws` only inherits (visible at its first
/// position from a source, not tombstoned) from a source outside `hidden` (the deleted ones,
/// which the fork's redaction reaches itself): the source's id and the path.
pub fn inherited_match(
    ws: &Workspace,
    paths: &[String],
    hashes: &[Vec<u8>],
    hidden: &[String],
) -> Outcome<Option<(String, String)>> {
    let visible = lineage::visible_sql(
        &ws.sources,
        false,
        "e.workspace_id::text, e.path",
        "NOT e.redacted AND (e.path = ANY($5) OR e.body_hash = ANY($6))",
    );
    let mut args = lineage::visible_args(&ws.id, &ws.sources, Some(lineage::FIRST_POSITION));
    args.extend([
        paths.to_vec().into(),
        hashes.to_vec().into(),
        hidden.to_vec().into(),
    ]);
    db::query_row(
        &format!(
            "SELECT v.ws, v.path FROM ({visible}) AS v (ws, path)
              WHERE v.ws <> $1 AND v.ws <> ALL($7::text[]) LIMIT 1"
        ),
        &args,
        |r| Ok((db::get::<String>(r, 1)?, db::get::<String>(r, 2)?)),
    )
}

/// The latest position any fork of `source` reads it at (0 when it has none).
pub fn last_read(source: &str) -> Outcome<i64> {
    Ok(db::query_row(
        "SELECT coalesce(max(fork_position), 0)::bigint FROM supabash.workspaces
          WHERE fork_of = $1::uuid",
        &[source.into()],
        |r| db::get::<i64>(r, 1),
    )?
    .unwrap_or(0))
}

/// The sources of `ws` that are deleted (kept only for their forks), with the position each
/// is read at: nobody can redact in them, so a fork's redaction reaches their versions.
pub fn hidden_sources(ws: &Workspace) -> Outcome<Vec<lineage::Source>> {
    if ws.sources.is_empty() {
        return Ok(Vec::new());
    }
    let ids: Vec<String> = ws.sources.iter().map(|s| s.workspace.clone()).collect();
    let hidden: HashSet<String> = db::query(
        "SELECT id::text FROM supabash.workspaces
          WHERE id = ANY($1::uuid[]) AND deleted_at IS NOT NULL",
        &[ids.into()],
        |r| db::get::<String>(r, 1),
    )?
    .into_iter()
    .collect();
    Ok(ws
        .sources
        .iter()
        .filter(|s| hidden.contains(&s.workspace))
        .cloned()
        .collect())
}

/// The first head path of `ws` outside `paths` that holds one of `hashes`: the path and the
/// hash in hex.
pub fn current_holder(
    ws: &str,
    hashes: &[Vec<u8>],
    paths: &[String],
) -> Outcome<Option<(String, String)>> {
    db::query_row(
        "SELECT path, encode(body_hash, 'hex') FROM supabash.entries
          WHERE workspace_id = $1::uuid AND valid_until IS NULL AND body_hash = ANY($2)
            AND path <> ALL($3)
          ORDER BY path LIMIT 1",
        &[ws.into(), hashes.to_vec().into(), paths.to_vec().into()],
        |r| Ok((db::get::<String>(r, 1)?, db::get::<String>(r, 2)?)),
    )
}

/// What a redaction's record says.
pub struct Record<'a> {
    pub redaction_id: &'a str,
    pub boundary: i64,
    pub boundary_revision: &'a str,
    pub paths: &'a [String],
    pub hash_count: usize,
    pub reason: Option<String>,
    pub actor: String,
}

/// Records a redaction of `ws` (its boundary, paths, how many hashes, reason and actor).
pub fn record(ws: &str, r: Record) -> Outcome<()> {
    db::exec(
        "INSERT INTO supabash.redactions (workspace_id, redaction_id, boundary_position,
                                          boundary_revision, paths, hash_count, reason, actor)
         VALUES ($1::uuid, $2::uuid, $3, $4::uuid, $5, $6, $7, $8)",
        &[
            ws.into(),
            r.redaction_id.into(),
            r.boundary.into(),
            r.boundary_revision.into(),
            r.paths.to_vec().into(),
            (r.hash_count as i32).into(),
            r.reason.into(),
            r.actor.into(),
        ],
    )
}

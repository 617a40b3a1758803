//! `supabash_redact`: removes content from history for good. The versions visible before an
//! exclusive boundary revision (default: the head) at the given paths or with the given body
//! hashes become tombstones (`entries.redacted`); a version that is still visible at the
//! boundary keeps its content from the boundary on. Bodies no entry references any more leave
//! the database, after every kept body that was a delta against one of them is stored again
//! whole; hashes of the redacted content leave the receipt lines; the workspace's redaction
//! epoch moves, so a staged tree loaded before can no longer commit; and a path redaction's
//! boundary becomes the restore fence. A dry run answers the same and writes nothing.
//!
//! Forks: a redaction reaches every fork that shares a redacted version (one made before the
//! boundary reads it through its fork point; a fork's copy of it is rewritten too, and its
//! epoch moves), collects bodies across the fork family's store, and refuses to redact in a
//! fork what the fork only inherits (see [`check_not_inherited`]).

use super::Call;
use crate::pg::args;
use crate::pg::db;
use crate::pg::fail::{invalid, Fail, Outcome};
use crate::store::access::{self, Workspace};
use crate::store::bodies;
use crate::store::encoding;
use crate::store::lineage;
use crate::store::usage;
use serde_json::json;
use std::collections::HashSet;
use supabash_core::capability::{delegated_actor, Operation};
use supabash_core::limits::MAX_LABEL_BYTES;
use supabash_core::receipt_lines;
use supabash_core::rpc::requests as rq;
use supabash_core::rpc::RedactReport;
use supabash_core::Marker;

/// Most paths, hashes or metadata keys one call may name (each list).
const MAX_SELECTORS: usize = 10_000;

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

/// Refuses a restore from `source` (a position) when it lies before the restore fence.
pub fn check_restore_source(ws: &str, source: &str, position: i64) -> Outcome<()> {
    match restore_floor(ws)? {
        Some(floor) if position < floor => Err(Fail::new(
            Marker::RestoreCrossesRedaction,
            "the source revision is older than a path redaction's boundary: restoring it would bring redacted paths back",
        )
        .with_detail(json!({ "sourceRevision": source, "sourcePosition": position, "floorPosition": floor }))),
        _ => Ok(()),
    }
}

/// One stored version a redaction turns into a tombstone.
struct Match {
    path: String,
    valid_from: i64,
    valid_until: Option<i64>,
    /// The hash receipts and diffs name it by (its content hash, or its body's).
    content_hash: Vec<u8>,
    body_hash: Vec<u8>,
}

impl Match {
    /// Whether the version is still visible at the boundary (its tail keeps the content).
    fn straddles(&self, boundary: i64) -> bool {
        self.valid_until.is_none_or(|u| u > boundary)
    }
}

/// The entry rows of workspace `ws` a redaction rewrites: every version visible before
/// `boundary` at one of `paths` or with one of `hashes` (body hashes), not yet a tombstone.
fn matched_entries(
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
fn dead_bodies(store: &str, gone: &[(String, String, i64)]) -> Outcome<Vec<(Vec<u8>, i64)>> {
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

/// The forks (at any depth) that read this workspace's versions from before `boundary`: those
/// whose chain of fork points reaches it at a position before the boundary.
fn sharing_forks(ws: &str, boundary: i64) -> Outcome<Vec<String>> {
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
struct Copy {
    workspace: String,
    path: String,
}

impl Copy {
    /// Its entry row, `(workspace, path, valid_from)`: copies start at the fork's first position.
    fn row(&self) -> (String, String, i64) {
        (
            self.workspace.clone(),
            self.path.clone(),
            lineage::FIRST_POSITION,
        )
    }
}

/// The copy rows in `forks` of versions the redaction matched (same path, same body): the
/// versions those forks share, copied when they first changed the path.
fn matched_copies(forks: &[String], matched: &[Match]) -> Outcome<Vec<Copy>> {
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

/// Refuses a selection that matches versions a fork only inherits (its source's, read at the
/// fork point): their bytes are the source's, so the redaction belongs there, where it reaches
/// every fork that shares them.
fn check_not_inherited(ws: &Workspace, sel: &Selection) -> Outcome<()> {
    if ws.sources.is_empty() || (sel.paths.is_empty() && sel.hashes.is_empty()) {
        return Ok(());
    }
    let visible = lineage::visible_sql(
        ws,
        false,
        "e.workspace_id::text, e.path",
        "NOT e.redacted AND (e.path = ANY($5) OR e.body_hash = ANY($6))",
    );
    let mut args = lineage::visible_args(ws, Some(lineage::FIRST_POSITION));
    args.extend([sel.paths.clone().into(), sel.hashes.clone().into()]);
    let inherited = db::query_row(
        &format!("SELECT v.ws, v.path FROM ({visible}) AS v (ws, path) WHERE v.ws <> $1 LIMIT 1"),
        &args,
        |r| Ok((db::get::<String>(r, 1)?, db::get::<String>(r, 2)?)),
    )?;
    match inherited {
        None => Ok(()),
        Some((source, path)) => Err(invalid(format!(
            "{path:?} is inherited unchanged from the workspace this one was forked from ({source}): redact it there; a redaction reaches every fork that shares the version"
        ))
        .with_detail(json!({ "path": path, "sourceWorkspaceId": source }))),
    }
}

/// Stores again whole (no base) every body of `store` that is a delta against one of `dead`
/// and is not itself dead, so that no kept body depends on bytes about to be deleted.
fn detach_dependants(store: &str, dead: &[Vec<u8>]) -> Outcome<()> {
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
fn write_tombstones(ws: &str, boundary: i64, matched: &[Match]) -> Outcome<()> {
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
        db::exec(
            "INSERT INTO supabash.entries (workspace_id, path, valid_from, valid_until, body_hash,
                                           body_size, content_hash, content_size, metadata)
             SELECT e.workspace_id, e.path, $2, m.valid_until, e.body_hash, e.body_size,
                    e.content_hash, e.content_size, e.metadata
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
fn tombstone(rows: &[(String, String, i64)]) -> Outcome<()> {
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
fn scrub_receipts(store: &str, family: &[String], matched: &[Match]) -> Outcome<()> {
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

/// The request's selectors, checked.
struct Selection {
    paths: Vec<String>,
    hashes: Vec<Vec<u8>>,
    metadata_keys: Vec<String>,
    clear_cause: bool,
}

fn selection(req: &rq::Redact) -> Outcome<Selection> {
    req.check_fields().map_err(args::field)?;
    let too_many = |name: &str, n: usize| {
        (n > MAX_SELECTORS).then(|| {
            Fail::new(
                Marker::Quota,
                format!("{name} names {n} items; at most {MAX_SELECTORS}"),
            )
        })
    };
    let lists = [
        ("paths", req.paths.as_ref()),
        ("body_hashes", req.body_hashes.as_ref()),
        ("metadata_keys", req.metadata_keys.as_ref()),
    ];
    if let Some(f) = lists
        .iter()
        .find_map(|(name, l)| too_many(name, l.map_or(0, Vec::len)))
    {
        return Err(f);
    }
    let mut paths: Vec<String> = req
        .paths
        .iter()
        .flatten()
        .map(|p| args::checked_path(p))
        .collect::<Outcome<_>>()?;
    paths.sort();
    paths.dedup();
    let mut hashes: Vec<Vec<u8>> = req
        .body_hashes
        .iter()
        .flatten()
        .map(|h| {
            let ok = h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit());
            ok.then(|| hex::decode(h).expect("checked hex"))
                .ok_or_else(|| {
                    invalid(format!(
                        "body_hashes: {:?} is not a SHA-256 in hex (64 hex digits)",
                        crate::pg::clip(h)
                    ))
                })
        })
        .collect::<Outcome<_>>()?;
    hashes.sort();
    hashes.dedup();
    let metadata_keys = req.metadata_keys.clone().unwrap_or_default();
    if let Some(k) = metadata_keys
        .iter()
        .find(|k| k.is_empty() || k.len() > MAX_LABEL_BYTES)
    {
        return Err(invalid(format!(
            "metadata_keys: {:?} must be 1 to {MAX_LABEL_BYTES} bytes",
            crate::pg::clip(k)
        )));
    }
    let clear_cause = req.clear_cause == Some(true);
    if paths.is_empty() && hashes.is_empty() && metadata_keys.is_empty() && !clear_cause {
        return Err(invalid(
            "name paths or body_hashes to redact (or, to scrub revisions only, metadata_keys or clear_cause)",
        ));
    }
    Ok(Selection {
        paths,
        hashes,
        metadata_keys,
        clear_cause,
    })
}

/// Refuses to redact a selected body that the head still holds at a path not selected.
fn check_not_current(ws: &str, sel: &Selection) -> Outcome<()> {
    if sel.hashes.is_empty() {
        return Ok(());
    }
    let current = db::query_row(
        "SELECT path, encode(body_hash, 'hex') FROM supabash.entries
          WHERE workspace_id = $1::uuid AND valid_until IS NULL AND body_hash = ANY($2)
            AND path <> ALL($3)
          ORDER BY path LIMIT 1",
        &[
            ws.into(),
            sel.hashes.clone().into(),
            sel.paths.clone().into(),
        ],
        |r| Ok((db::get::<String>(r, 1)?, db::get::<String>(r, 2)?)),
    )?;
    match current {
        None => Ok(()),
        Some((path, hash)) => Err(Fail::new(
            Marker::RedactionCurrentBody,
            format!("the body {hash} is still current at {path:?}: change or delete that file first, or name the path too"),
        )
        .with_detail(json!({ "path": path, "bodyHash": hash }))),
    }
}

/// The revisions before the boundary a redaction names: those showing a matched version, or,
/// when it only scrubs metadata, all of them.
fn selected_revisions(
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

/// `supabash_redact`: see docs/sql-contract.md.
pub fn redact(call: &Call, req: rq::Redact) -> Outcome<RedactReport> {
    let sel = selection(&req)?;
    // Redaction deletes bodies, which the workspace's whole fork family shares.
    let ws = access::lock_family(access::open(&req, &[Operation::Redact])?)?;
    let (boundary_revision, boundary) = boundary(&ws, req.before_revision.as_deref())?;
    check_not_current(&ws.id, &sel)?;
    check_not_inherited(&ws, &sel)?;
    let only_metadata = sel.paths.is_empty() && sel.hashes.is_empty();
    let matched = matched_entries(&ws.id, boundary, &sel.paths, &sel.hashes)?;
    let forks = sharing_forks(&ws.id, boundary)?;
    let copies = matched_copies(&forks, &matched)?;
    let revisions = selected_revisions(&ws.id, boundary, &matched, only_metadata)?;
    let dead = freed_bodies(&ws, boundary, &matched, &copies)?;
    let bytes: i64 = dead.iter().map(|(_, s)| *s).sum();
    let dead_hashes: Vec<Vec<u8>> = dead.into_iter().map(|(h, _)| h).collect();
    let mut report = RedactReport {
        redaction_id: uuid::Uuid::new_v4().to_string(),
        dry_run: req.dry_run == Some(true),
        revisions,
        versions: matched.len() as i64,
        bodies: dead_hashes.iter().map(hex::encode).collect(),
        bytes,
        epoch: ws.redaction_epoch,
    };
    if report.dry_run {
        return Ok(report);
    }
    apply(
        &ws,
        &sel,
        boundary,
        (&matched, &copies),
        &dead_hashes,
        &report,
    )?;
    // Audit records of actions that touched a redacted path keep no arguments.
    crate::store::audit::scrub(&call.schema, &ws.id, &sel.paths)?;
    // The forks that shared a redacted version may hold it in a staged tree too.
    report.epoch = crate::store::workspaces::bump_epochs(&ws.id, &forks)?;
    record(
        &ws,
        &report,
        &sel,
        (&boundary_revision, boundary),
        req.reason.clone(),
    )?;
    Ok(report)
}

/// The revision a redaction reaches up to, and its position: the one named, or the head.
fn boundary(ws: &Workspace, before: Option<&str>) -> Outcome<(String, i64)> {
    if let Some(r) = args::uuid_opt("before_revision", before)? {
        let p = access::revision_position(&ws.id, &r)?;
        return Ok((r, p));
    }
    match (&ws.head, ws.head_position) {
        (Some(h), Some(p)) => Ok((h.clone(), p)),
        _ => Err(invalid("the workspace has no revisions to redact")),
    }
}

/// The bodies (hash, size) the tombstoned versions and fork copies leave unused. Only a
/// redaction that tombstones something frees bodies (a scrub of metadata, or one that matched
/// nothing, leaves the store as it is).
fn freed_bodies(
    ws: &Workspace,
    boundary: i64,
    matched: &[Match],
    copies: &[Copy],
) -> Outcome<Vec<(Vec<u8>, i64)>> {
    if matched.is_empty() {
        return Ok(Vec::new());
    }
    let gone: Vec<(String, String, i64)> = matched
        .iter()
        .filter(|m| !m.straddles(boundary))
        .map(|m| (ws.id.clone(), m.path.clone(), m.valid_from))
        .chain(
            copies
                .iter()
                .map(|c| (c.workspace.clone(), c.path.clone(), lineage::FIRST_POSITION)),
        )
        .collect();
    dead_bodies(&ws.store, &gone)
}

/// Records the redaction (its boundary, paths, how many hashes, reason and actor).
fn record(
    ws: &Workspace,
    report: &RedactReport,
    sel: &Selection,
    (boundary_revision, boundary): (&str, i64),
    reason: Option<String>,
) -> Outcome<()> {
    let actor = match &ws.delegation {
        Some(d) => delegated_actor(&d.actor_subject),
        None => ws.owner.clone(),
    };
    db::exec(
        "INSERT INTO supabash.redactions (workspace_id, redaction_id, boundary_position,
                                          boundary_revision, paths, hash_count, reason, actor)
         VALUES ($1::uuid, $2::uuid, $3, $4::uuid, $5, $6, $7, $8)",
        &[
            ws.id.as_str().into(),
            report.redaction_id.as_str().into(),
            boundary.into(),
            boundary_revision.into(),
            sel.paths.clone().into(),
            (sel.hashes.len() as i32).into(),
            reason.into(),
            actor.into(),
        ],
    )
}

/// The writes of an applied redaction, in an order that never leaves a kept body without
/// its base: entries, receipts and revisions first, then bodies.
fn apply(
    ws: &Workspace,
    sel: &Selection,
    boundary: i64,
    (matched, copies): (&[Match], &[Copy]),
    dead: &[Vec<u8>],
    report: &RedactReport,
) -> Outcome<()> {
    if !matched.is_empty() {
        write_tombstones(&ws.id, boundary, matched)?;
        // A copy ends where its fork first changed the path, so all of it lies before the
        // boundary: the whole row becomes a tombstone.
        tombstone(&copies.iter().map(Copy::row).collect::<Vec<_>>())?;
        let mut family = vec![ws.id.clone()];
        family.extend(copies.iter().map(|c| c.workspace.clone()));
        family.sort();
        family.dedup();
        scrub_receipts(&ws.store, &family, matched)?;
    }
    if !sel.metadata_keys.is_empty() || sel.clear_cause {
        db::exec(
            "UPDATE supabash.revisions
                SET metadata = metadata - $3::text[],
                    cause = CASE WHEN $4 THEN NULL ELSE cause END
              WHERE workspace_id = $1::uuid AND revision_id = ANY($2::uuid[])",
            &[
                ws.id.as_str().into(),
                report.revisions.clone().into(),
                sel.metadata_keys.clone().into(),
                sel.clear_cause.into(),
            ],
        )?;
    }
    if !dead.is_empty() {
        detach_dependants(&ws.store, dead)?;
        db::exec(
            "DELETE FROM supabash.bodies WHERE workspace_id = $1::uuid AND hash = ANY($2)",
            &[ws.store.as_str().into(), dead.to_vec().into()],
        )?;
        usage::add_bytes(&ws.store, &ws.owner, -report.bytes)?;
    }
    Ok(())
}

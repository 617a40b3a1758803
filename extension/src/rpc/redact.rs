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
//! fork what the fork only inherits from a live source (see `check_not_inherited`). A deleted
//! source (kept only for its forks) can be redacted by nobody, so a fork's redaction reaches
//! the versions it reads from one itself (see [`Pass`]): those rows become tombstones as if
//! the source had redacted them at the fork point, with every fork that shares them.

use super::Call;
use crate::pg::args;
use crate::pg::fail::{invalid, Fail, Outcome};
use crate::store::access::{self, Workspace};
use crate::store::announce::{self, Kind};
use crate::store::{bodies, lineage, redactions, revisions, usage};
use serde_json::json;
use supabash_core::capability::delegated_actor;
use supabash_core::limits::MAX_LABEL_BYTES;
use supabash_core::rpc::requests as rq;
use supabash_core::rpc::RedactReport;
use supabash_core::Marker;

/// Most paths, hashes or metadata keys one call may name (each list).
const MAX_SELECTORS: usize = 10_000;

/// Refuses a restore from `source` (a position) when it lies before the restore fence.
pub fn check_restore_source(ws: &str, source: &str, position: i64) -> Outcome<()> {
    match redactions::restore_floor(ws)? {
        Some(floor) if position < floor => Err(Fail::new(
            Marker::RestoreCrossesRedaction,
            "the source revision is older than a path redaction's boundary: restoring it would bring redacted paths back",
        )
        .with_detail(json!({ "sourceRevision": source, "sourcePosition": position, "floorPosition": floor }))),
        _ => Ok(()),
    }
}

/// Refuses a selection that matches versions a fork only inherits (its source's, read at the
/// fork point): their bytes are the source's, so the redaction belongs there, where it reaches
/// every fork that shares them.
fn check_not_inherited(ws: &Workspace, sel: &Selection, hidden: &[lineage::Source]) -> Outcome<()> {
    if ws.sources.is_empty() || (sel.paths.is_empty() && sel.hashes.is_empty()) {
        return Ok(());
    }
    let hidden: Vec<String> = hidden.iter().map(|s| s.workspace.clone()).collect();
    match redactions::inherited_match(ws, &sel.paths, &sel.hashes, &hidden)? {
        None => Ok(()),
        Some((source, path)) => Err(invalid(format!(
            "{path:?} is inherited unchanged from the workspace this one was forked from ({source}): redact it there; a redaction reaches every fork that shares the version"
        ))
        .with_detail(json!({ "path": path, "sourceWorkspaceId": source }))),
    }
}

/// Refuses to redact a selected body that the head still holds at a path not selected.
fn check_not_current(ws: &str, sel: &Selection) -> Outcome<()> {
    if sel.hashes.is_empty() {
        return Ok(());
    }
    match redactions::current_holder(ws, &sel.hashes, &sel.paths)? {
        None => Ok(()),
        Some((path, hash)) => Err(Fail::new(
            Marker::RedactionCurrentBody,
            format!("the body {hash} is still current at {path:?}: change or delete that file first, or name the path too"),
        )
        .with_detail(json!({ "path": path, "bodyHash": hash }))),
    }
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

/// The rows one workspace's part of a redaction rewrites: the caller's own before its
/// boundary, or a deleted source's that the caller reads at its fork point (`boundary` is then
/// the position after that point: the source's later versions stay for later forks).
struct Pass {
    workspace: String,
    boundary: i64,
    matched: Vec<redactions::Match>,
}

/// The passes of a redaction of `ws` up to `boundary`: its own rows, then for each deleted
/// source it reads from, the matched versions visible at the position it reads them at.
fn passes(
    ws: &Workspace,
    boundary: i64,
    sel: &Selection,
    hidden: &[lineage::Source],
) -> Outcome<Vec<Pass>> {
    let mut passes = vec![Pass {
        workspace: ws.id.clone(),
        boundary,
        matched: redactions::matched_entries(&ws.id, boundary, &sel.paths, &sel.hashes)?,
    }];
    if sel.paths.is_empty() && sel.hashes.is_empty() {
        return Ok(passes);
    }
    for source in hidden {
        let at = source.position;
        // A deleted source's rows matter only up to the last position a fork reads: a version
        // no later fork reads is tombstoned whole, not split.
        let reach = redactions::last_read(&source.workspace)? + 1;
        let matched: Vec<redactions::Match> =
            redactions::matched_entries(&source.workspace, at + 1, &sel.paths, &sel.hashes)?
                .into_iter()
                .filter(|m| m.valid_from <= at && m.straddles(at))
                .map(|mut m| {
                    m.valid_until = Some(m.valid_until.map_or(reach, |u| u.min(reach)));
                    m
                })
                .collect();
        if !matched.is_empty() {
            passes.push(Pass {
                workspace: source.workspace.clone(),
                boundary: at + 1,
                matched,
            });
        }
    }
    Ok(passes)
}

/// `supabash_redact`: see docs/sql-contract.md.
pub fn redact(call: &Call, req: rq::Redact) -> Outcome<RedactReport> {
    let sel = selection(&req)?;
    // Redaction deletes bodies, which the workspace's whole fork family shares.
    let ws = access::lock_family(access::open(&req)?)?;
    let (boundary_revision, boundary) = boundary(&ws, req.before_revision.as_deref())?;
    check_not_current(&ws.id, &sel)?;
    let hidden = redactions::hidden_sources(&ws)?;
    check_not_inherited(&ws, &sel, &hidden)?;
    let passes = passes(&ws, boundary, &sel, &hidden)?;
    let (forks, copies) = sharing(&ws, &passes)?;
    let (mut report, dead_hashes) = report(&ws, boundary, &sel, &passes, &copies)?;
    report.dry_run = req.dry_run == Some(true);
    if report.dry_run {
        return Ok(report);
    }
    apply(&ws, &sel, (&passes, &copies), &dead_hashes, &report)?;
    scrub_around(call, &ws, &sel, &passes, &report)?;
    // The forks that shared a redacted version may hold it in a staged tree too.
    report.epoch = crate::store::workspaces::bump_epochs(&ws.id, &forks)?;
    recount(call, &ws, &passes, &forks)?;
    let actor = match &ws.delegation {
        Some(d) => delegated_actor(&d.actor_subject),
        None => ws.owner.clone(),
    };
    redactions::record(
        &ws.id,
        redactions::Record {
            redaction_id: &report.redaction_id,
            boundary,
            boundary_revision: &boundary_revision,
            paths: &sel.paths,
            hash_count: sel.hashes.len(),
            reason: req.reason.clone(),
            actor,
        },
    )?;
    announce::announce(
        &call.schema,
        &ws.id,
        Kind::Redact,
        ws.head_position,
        ws.head.as_deref(),
    )?;
    Ok(report)
}

/// The forks sharing a rewritten version, and their copies of it (never the caller's own
/// rows twice: its pass has them).
fn sharing(ws: &Workspace, passes: &[Pass]) -> Outcome<(Vec<String>, Vec<redactions::Copy>)> {
    let mut forks: Vec<String> = Vec::new();
    let mut copies: Vec<redactions::Copy> = Vec::new();
    for pass in passes {
        let sharing = redactions::sharing_forks(&pass.workspace, pass.boundary)?;
        copies.extend(
            redactions::matched_copies(&sharing, &pass.matched)?
                .into_iter()
                .filter(|c| c.workspace != ws.id),
        );
        forks.extend(sharing);
    }
    forks.retain(|f| *f != ws.id);
    forks.sort();
    forks.dedup();
    copies.sort_by(|a, b| (&a.workspace, &a.path).cmp(&(&b.workspace, &b.path)));
    copies.dedup_by(|a, b| a.workspace == b.workspace && a.path == b.path);
    Ok((forks, copies))
}

/// What the redaction does, as its report says it (not a dry run yet), and the hashes of the
/// bodies it removes from the store.
fn report(
    ws: &Workspace,
    boundary: i64,
    sel: &Selection,
    passes: &[Pass],
    copies: &[redactions::Copy],
) -> Outcome<(RedactReport, Vec<Vec<u8>>)> {
    let only_metadata = sel.paths.is_empty() && sel.hashes.is_empty();
    let matched = &passes[0].matched;
    let revisions = redactions::selected_revisions(&ws.id, boundary, matched, only_metadata)?;
    let gone = gone_rows(passes, copies);
    let dead = match &gone {
        Some(gone) => redactions::dead_bodies(&ws.store, gone)?,
        None => Vec::new(),
    };
    let bytes: i64 = dead.iter().map(|(_, s)| *s).sum();
    let dead_hashes: Vec<Vec<u8>> = dead.into_iter().map(|(h, _)| h).collect();
    let mut kept: Vec<Vec<u8>> = passes
        .iter()
        .flat_map(|p| p.matched.iter().map(|m| m.body_hash.clone()))
        .filter(|h| !dead_hashes.contains(h))
        .collect();
    kept.sort();
    kept.dedup();
    let still_held = redactions::still_held(&ws.store, &kept, gone.as_deref().unwrap_or_default())?;
    let report = RedactReport {
        redaction_id: uuid::Uuid::new_v4().to_string(),
        dry_run: false,
        revisions,
        versions: passes.iter().map(|p| p.matched.len() as i64).sum(),
        bodies: dead_hashes.iter().map(hex::encode).collect(),
        bytes,
        epoch: ws.redaction_epoch,
        still_held,
    };
    Ok((report, dead_hashes))
}

/// What the redacted content left beside the entries: notes under a scrubbed metadata key,
/// and the arguments of audit records of actions that touched a redacted path (a deleted
/// source's too, written before 0.6.0 removed them with it).
fn scrub_around(
    call: &Call,
    ws: &Workspace,
    sel: &Selection,
    passes: &[Pass],
    report: &RedactReport,
) -> Outcome<()> {
    if call.schema.revision_notes && !sel.metadata_keys.is_empty() {
        crate::store::notes::scrub(&ws.id, &report.revisions, &sel.metadata_keys)?;
    }
    for pass in passes {
        crate::store::audit::scrub(&pass.workspace, &sel.paths)?;
    }
    Ok(())
}

/// Counts again the trees that read a tombstone (tombstones count no bytes).
fn recount(call: &Call, ws: &Workspace, passes: &[Pass], forks: &[String]) -> Outcome<()> {
    let mut counted: Vec<&String> = passes.iter().map(|p| &p.workspace).collect();
    counted.extend(forks);
    counted.push(&ws.id);
    counted.sort();
    counted.dedup();
    for id in counted {
        if let Some(w) = access::by_id(id)? {
            revisions::recount(call.schema, &w)?;
        }
    }
    Ok(())
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

/// The entry rows (workspace, path, valid_from) a redaction tombstones whole: the matched
/// versions not visible at their pass's boundary, and the fork copies; `None` when nothing
/// matched. Only a redaction that tombstones something frees bodies (a scrub of metadata, or one that matched nothing,
/// leaves the store as it is).
fn gone_rows(passes: &[Pass], copies: &[redactions::Copy]) -> Option<Vec<(String, String, i64)>> {
    if passes.iter().all(|p| p.matched.is_empty()) {
        return None;
    }
    let rows = passes
        .iter()
        .flat_map(|p| {
            p.matched
                .iter()
                .filter(|m| !m.straddles(p.boundary))
                .map(|m| (p.workspace.clone(), m.path.clone(), m.valid_from))
        })
        .chain(copies.iter().map(redactions::Copy::row))
        .collect();
    Some(rows)
}

/// The writes of an applied redaction, in an order that never leaves a kept body without
/// its base: entries, receipts and revisions first, then bodies.
fn apply(
    ws: &Workspace,
    sel: &Selection,
    (passes, copies): (&[Pass], &[redactions::Copy]),
    dead: &[Vec<u8>],
    report: &RedactReport,
) -> Outcome<()> {
    let matched: Vec<&redactions::Match> = passes.iter().flat_map(|p| &p.matched).collect();
    if !matched.is_empty() {
        for pass in passes {
            redactions::write_tombstones(&pass.workspace, pass.boundary, &pass.matched)?;
        }
        // A copy ends where its fork first changed the path, so all of it lies before the
        // boundary: the whole row becomes a tombstone.
        redactions::tombstone(&copies.iter().map(redactions::Copy::row).collect::<Vec<_>>())?;
        let mut family = vec![ws.id.clone()];
        family.extend(copies.iter().map(|c| c.workspace.clone()));
        family.sort();
        family.dedup();
        redactions::scrub_receipts(&ws.store, &family, &matched)?;
    }
    if !sel.metadata_keys.is_empty() || sel.clear_cause {
        revisions::scrub(
            &ws.id,
            &report.revisions,
            &sel.metadata_keys,
            sel.clear_cause,
        )?;
    }
    if !dead.is_empty() {
        redactions::detach_dependants(&ws.store, dead)?;
        bodies::delete(&ws.store, dead)?;
        usage::add_bytes(&ws.store, &ws.owner, -report.bytes)?;
    }
    Ok(())
}

//! `supabash_diff`: compares two sides, each a revision, a checkpoint, the head or a staged tree
//! the caller sends. Kinds: added, deleted, modified, moved (a deleted and an added path with
//! the same content hash). Previews are cut on a UTF-8 boundary and marked `[truncated]`.

use super::Call;
use crate::pg::args;
use crate::pg::fail::{invalid, Fail, Outcome};
use crate::pg::schema::Schema;
use crate::rpc::files::files_at;
use crate::store::access::{self, Workspace};
use crate::store::bodies;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use supabash_core::document::{metadata_from_json, render, Metadata};
use supabash_core::limits::{
    utf8_prefix, DEFAULT_DIFF_PREVIEW_BYTES, MAX_DIFF_PREVIEW_BYTES, TRUNCATED_MARKER,
};
use supabash_core::moves;
use supabash_core::posix::Kind;
use supabash_core::rpc::requests::{self as rq, DiffRef};
use supabash_core::rpc::{parse_changes, Change, Diff, DiffEntry, DiffKind, StagedDocument};
use supabash_core::Marker;

/// What a preview shows for a tombstone.
const REDACTED_PREVIEW: &str = "[redacted]";

struct SideFile {
    content_hash: Vec<u8>,
    body_hash: Vec<u8>,
    body_size: i64,
    metadata: Value,
    body: Option<Vec<u8>>,
    /// A tombstone: its `content_hash` is a per-path stand-in (equal only to the same path's
    /// tombstone, never to content), and it has no body and no hash to show.
    redacted: bool,
    kind: Kind,
    mode: u32,
}

impl SideFile {
    /// Whether `other` differs from this file: its content, kind or mode.
    fn differs(&self, other: &SideFile) -> bool {
        self.content_hash != other.content_hash
            || self.kind != other.kind
            || self.mode != other.mode
    }
}

struct Side {
    label: Option<String>,
    files: BTreeMap<String, SideFile>,
}

fn staged_side(staged: Option<&[StagedDocument]>) -> Outcome<Side> {
    let docs = staged.ok_or_else(|| invalid("a staged side needs the staged documents"))?;
    // Staged documents share the upsert shape, so the same checker reads them.
    let upserts = docs
        .iter()
        .cloned()
        .map(StagedDocument::into_upsert)
        .collect();
    let parsed = parse_changes(upserts).map_err(|e| invalid(format!("staged: {e}")))?;
    let mut files = BTreeMap::new();
    for change in parsed {
        let Change::Upsert { path, content } = change else {
            unreachable!("only upserts")
        };
        let v = crate::store::entries::Version::of(&content);
        let file = SideFile {
            content_hash: v.content_hash,
            body_hash: v.body_hash,
            body_size: v.body_size,
            metadata: v.metadata,
            body: Some(content.body),
            redacted: false,
            kind: v.kind,
            mode: v.mode,
        };
        if files.insert(path.clone(), file).is_some() {
            return Err(invalid(format!("staged lists {path:?} twice")));
        }
    }
    Ok(Side {
        label: Some("staged".into()),
        files,
    })
}

fn stored_side(schema: Schema, ws: &Workspace, revision: &str) -> Outcome<Side> {
    let position = access::revision_position(&ws.id, revision)?;
    let files = files_at(schema, ws, Some(position), None, false)?
        .into_iter()
        .map(|r| {
            let content_hash = if r.redacted {
                [b"\0redacted\0".as_slice(), r.path.as_bytes()].concat()
            } else {
                r.content_hash
            };
            let f = SideFile {
                content_hash,
                body_hash: r.body_hash,
                body_size: r.body_size,
                metadata: r.metadata,
                body: None,
                redacted: r.redacted,
                kind: r.kind,
                mode: r.mode,
            };
            (r.path, f)
        })
        .collect();
    Ok(Side {
        label: Some(revision.to_owned()),
        files,
    })
}

fn side(
    schema: Schema,
    ws: &Workspace,
    reference: &DiffRef,
    staged: Option<&[StagedDocument]>,
) -> Outcome<Side> {
    match reference {
        DiffRef::Revision(r) => {
            let r = crate::store::revisions::resolve_time(&ws.id, r)?;
            stored_side(schema, ws, &args::uuid("revision", &r)?)
        }
        DiffRef::Checkpoint(c) => {
            let checkpoint = args::uuid("checkpoint", c)?;
            let revision = crate::store::checkpoints::revision_of(&ws.id, &checkpoint)?
                .ok_or_else(|| {
                    Fail::new(
                        Marker::CheckpointNotFound,
                        "checkpoint not found in this workspace",
                    )
                })?;
            stored_side(schema, ws, &revision)
        }
        DiffRef::Head => match &ws.head {
            Some(head) => stored_side(schema, ws, &head.clone()),
            None => Ok(Side {
                label: None,
                files: BTreeMap::new(),
            }),
        },
        DiffRef::Staged => staged_side(staged),
    }
}

fn in_scope(filter: &[String], path: &str) -> bool {
    filter.is_empty()
        || filter.iter().any(|f| {
            path == f
                || path
                    .strip_prefix(f.as_str())
                    .is_some_and(|r| r.starts_with('/'))
        })
}

/// The rendered text of a file's first `max` body bytes (its frontmatter comes first, so that
/// is all a preview of `max` bytes can show), or `None` when that prefix is not text. A
/// character cut at the end of the prefix is dropped, not taken for binary.
fn preview_text(file: &SideFile, bodies: &HashMap<Vec<u8>, Vec<u8>>, max: usize) -> Option<String> {
    if file.redacted {
        return Some(REDACTED_PREVIEW.to_owned());
    }
    let body = file.body.as_ref().or_else(|| bodies.get(&file.body_hash))?;
    let mut prefix = &body[..body.len().min(max)];
    if (prefix.len() as i64) < file.body_size {
        if let Err(e) = std::str::from_utf8(prefix) {
            if e.error_len().is_none() {
                prefix = &prefix[..e.valid_up_to()];
            }
        }
    }
    let metadata: Metadata = metadata_from_json(&file.metadata).unwrap_or_default();
    supabash_core::rpc::body::as_text(render(prefix, &metadata)).ok()
}

fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    format!("{}{TRUNCATED_MARKER}", utf8_prefix(text, max))
}

/// `supabash_diff`.
pub fn diff(call: &Call, req: rq::Diff) -> Outcome<Diff> {
    let ws = access::open(&req)?;
    let preview_bytes = req
        .preview_bytes
        .map_or(DEFAULT_DIFF_PREVIEW_BYTES, i64::from);
    if !(0..=MAX_DIFF_PREVIEW_BYTES).contains(&preview_bytes) {
        return Err(Fail::new(
            Marker::Quota,
            format!("preview_bytes must be between 0 and {MAX_DIFF_PREVIEW_BYTES}"),
        ));
    }
    let filter: Vec<String> = req
        .paths
        .iter()
        .flatten()
        .map(|p| args::checked_path(p))
        .collect::<Outcome<_>>()?;
    let from = side(call.schema, &ws, &req.from_ref, req.staged.as_deref())?;
    let to = side(call.schema, &ws, &req.to_ref, req.staged.as_deref())?;
    let mut entries = compare(&from, &to);
    entries.retain(|(e, _, _)| {
        in_scope(&filter, &e.path) || e.from.as_deref().is_some_and(|f| in_scope(&filter, f))
    });
    entries.sort_by(|a, b| a.0.path.cmp(&b.0.path));
    let entries = with_previews(&ws, entries, preview_bytes as usize)?;
    Ok(Diff {
        from: from.label,
        to: to.label,
        entries,
    })
}

/// A diff entry with the sides a preview shows (none for a move).
type Compared<'a> = (DiffEntry, Option<&'a SideFile>, Option<&'a SideFile>);

/// The entries between two sides: modified paths, then moves (a deleted and an added path with
/// the same content, paired by core's move rule), additions and deletions.
fn compare<'a>(from: &'a Side, to: &'a Side) -> Vec<Compared<'a>> {
    let mut entries: Vec<Compared> = Vec::new();
    let mut deleted = Vec::new();
    for (path, before) in &from.files {
        match to.files.get(path) {
            None => deleted.push((before.content_hash.as_slice(), (path, before))),
            Some(after) if after.differs(before) => entries.push((
                entry(DiffKind::Modified, path, None, Some(before), Some(after)),
                Some(before),
                Some(after),
            )),
            Some(_) => {}
        }
    }
    let added = to
        .files
        .iter()
        .filter(|(path, _)| !from.files.contains_key(*path))
        .map(|(path, after)| (after.content_hash.as_slice(), (path, after)));
    let paired = moves::pair(deleted, added);
    for ((old, before), (path, after)) in paired.moves {
        entries.push((
            entry(DiffKind::Moved, path, Some(old), Some(before), Some(after)),
            None,
            None,
        ));
    }
    for (path, after) in paired.targets {
        entries.push((
            entry(DiffKind::Added, path, None, None, Some(after)),
            None,
            Some(after),
        ));
    }
    for (path, before) in paired.sources {
        entries.push((
            entry(DiffKind::Deleted, path, None, Some(before), None),
            Some(before),
            None,
        ));
    }
    entries
}

/// Fills each entry's text preview of at most `max` bytes (or marks it binary). A preview says
/// whether there is more: one whole UTF-8 character beyond `max` is decoded.
fn with_previews(ws: &Workspace, entries: Vec<Compared>, max: usize) -> Outcome<Vec<DiffEntry>> {
    let decoded = max + 4;
    let bodies = if max > 0 {
        preview_bodies(ws, &entries, decoded)?
    } else {
        HashMap::new()
    };
    Ok(entries
        .into_iter()
        .map(|(mut e, before, after)| {
            if max > 0 && e.kind != DiffKind::Moved {
                let b = before.map(|f| preview_text(f, &bodies, decoded));
                let a = after.map(|f| preview_text(f, &bodies, decoded));
                match (b, a) {
                    (Some(None), _) | (_, Some(None)) => e.binary = true,
                    (None, Some(Some(a))) => e.preview = Some(cut(&a, max)),
                    (Some(Some(b)), None) => e.preview = Some(cut(&b, max)),
                    (Some(Some(b)), Some(Some(a))) => {
                        e.preview = Some(cut(&format!("--- before\n{b}\n+++ after\n{a}"), max))
                    }
                    (None, None) => {}
                }
            }
            e
        })
        .collect())
}

fn entry(
    kind: DiffKind,
    path: &str,
    from: Option<&str>,
    before: Option<&SideFile>,
    after: Option<&SideFile>,
) -> DiffEntry {
    DiffEntry {
        kind,
        path: path.to_owned(),
        from: from.map(str::to_owned),
        before_hash: before
            .filter(|f| !f.redacted)
            .map(|f| hex::encode(&f.content_hash)),
        after_hash: after
            .filter(|f| !f.redacted)
            .map(|f| hex::encode(&f.content_hash)),
        preview: None,
        binary: false,
        before_mode: before.map(|f| f.mode),
        after_mode: after.map(|f| f.mode),
        before_kind: before.map(|f| f.kind),
        after_kind: after.map(|f| f.kind),
    }
}

/// The first `max` plain bytes of every stored body the previews need.
fn preview_bodies(
    ws: &Workspace,
    entries: &[Compared],
    max: usize,
) -> Outcome<HashMap<Vec<u8>, Vec<u8>>> {
    let mut wanted: Vec<(Vec<u8>, i64)> = entries
        .iter()
        .filter(|(e, _, _)| e.kind != DiffKind::Moved)
        .flat_map(|(_, b, a)| [b, a])
        .flatten()
        .filter(|f| f.body.is_none() && !f.redacted)
        .map(|f| (f.body_hash.clone(), f.body_size))
        .collect();
    wanted.sort();
    wanted.dedup();
    if wanted.is_empty() {
        return Ok(HashMap::new());
    }
    bodies::prefixes(&ws.store, &wanted, max)
}

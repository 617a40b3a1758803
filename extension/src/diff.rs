//! `supabash_diff`: compares two sides, each a revision, a checkpoint, the head or a staged tree
//! the caller sends. Kinds: added, deleted, modified, moved (a deleted and an added path with
//! the same content hash). Previews are cut on a UTF-8 boundary and marked `[truncated]`.

use crate::access::{self, Workspace};
use crate::args::Args;
use crate::bodies;
use crate::db;
use crate::fail::{invalid, Fail, Outcome};
use crate::read::files_at;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use supabash_core::capability::Operation;
use supabash_core::document::{metadata_from_json, render, Metadata};
use supabash_core::limits::{
    utf8_prefix, DEFAULT_DIFF_PREVIEW_BYTES, MAX_DIFF_PREVIEW_BYTES, TRUNCATED_MARKER,
};
use supabash_core::wire::{parse_changes, Change, DiffEntry};
use supabash_core::Marker;

struct SideFile {
    content_hash: Vec<u8>,
    body_hash: Vec<u8>,
    metadata: Value,
    body: Option<Vec<u8>>,
}

struct Side {
    label: Value,
    files: BTreeMap<String, SideFile>,
}

fn staged_side(args: &Args) -> Outcome<Side> {
    let docs = args
        .json("staged")
        .ok_or_else(|| invalid("a staged side needs the staged documents"))?;
    let Value::Array(items) = docs else {
        return Err(invalid("staged must be a JSON array"));
    };
    // Staged documents share the upsert shape, so the same parser checks them.
    let as_upserts: Vec<Value> = items
        .iter()
        .map(|d| {
            let mut d = d.clone();
            if let Some(o) = d.as_object_mut() {
                o.insert("op".into(), json!("upsert"));
            }
            d
        })
        .collect();
    let parsed =
        parse_changes(&Value::Array(as_upserts)).map_err(|e| invalid(format!("staged: {e}")))?;
    let mut files = BTreeMap::new();
    for change in parsed {
        let Change::Upsert { path, content } = change else {
            unreachable!("only upserts")
        };
        let v = crate::commit::Version::of(&content);
        let file = SideFile {
            content_hash: v.content_hash,
            body_hash: v.body_hash,
            metadata: v.metadata,
            body: Some(content.body),
        };
        if files.insert(path.clone(), file).is_some() {
            return Err(invalid(format!("staged lists {path:?} twice")));
        }
    }
    Ok(Side {
        label: json!("staged"),
        files,
    })
}

fn stored_side(ws: &Workspace, revision: &str) -> Outcome<Side> {
    let position = access::revision_position(&ws.id, revision)?;
    let files = files_at(ws, Some(position), None, false)?
        .into_iter()
        .map(|r| {
            let f = SideFile {
                content_hash: r.content_hash,
                body_hash: r.body_hash,
                metadata: r.metadata,
                body: None,
            };
            (r.path, f)
        })
        .collect();
    Ok(Side {
        label: json!(revision),
        files,
    })
}

fn side(ws: &Workspace, args: &Args, name: &str) -> Outcome<Side> {
    let reference = args
        .json(name)
        .ok_or_else(|| invalid(format!("{name} is required")))?;
    let bad = || {
        invalid(format!(
            "{name} must be {{\"revision\": uuid}}, {{\"checkpoint\": uuid}}, {{\"head\": true}} or {{\"staged\": true}}"
        ))
    };
    let obj = reference
        .as_object()
        .filter(|o| o.len() == 1)
        .ok_or_else(bad)?;
    let (kind, value) = obj.iter().next().ok_or_else(bad)?;
    let id = |v: &Value| -> Outcome<String> {
        v.as_str()
            .and_then(|s| uuid::Uuid::parse_str(s).ok())
            .map(|u| u.to_string())
            .ok_or_else(bad)
    };
    match (kind.as_str(), value) {
        ("revision", v) => stored_side(ws, &id(v)?),
        ("checkpoint", v) => {
            let checkpoint = id(v)?;
            let revision = db::json(
                "SELECT to_jsonb(revision_id) FROM supabash.checkpoints
                  WHERE workspace_id = $1::uuid AND checkpoint_id = $2::uuid",
                &[ws.id.as_str().into(), checkpoint.as_str().into()],
            )?
            .and_then(|v| v.as_str().map(str::to_owned))
            .ok_or_else(|| {
                Fail::new(
                    Marker::CheckpointNotFound,
                    "checkpoint not found in this workspace",
                )
            })?;
            stored_side(ws, &revision)
        }
        ("head", Value::Bool(true)) => match &ws.head {
            Some(head) => stored_side(ws, &head.clone()),
            None => Ok(Side {
                label: Value::Null,
                files: BTreeMap::new(),
            }),
        },
        ("staged", Value::Bool(true)) => staged_side(args),
        _ => Err(bad()),
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

fn preview_text(file: &SideFile, bodies: &HashMap<Vec<u8>, Vec<u8>>) -> Option<String> {
    let body = file.body.as_ref().or_else(|| bodies.get(&file.body_hash))?;
    let metadata: Metadata = metadata_from_json(&file.metadata).unwrap_or_default();
    crate::read::json_text(render(body, &metadata)).ok()
}

fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    format!("{}{TRUNCATED_MARKER}", utf8_prefix(text, max))
}

/// `supabash_diff`.
pub fn diff(args: &Args) -> Outcome<Value> {
    let ws = access::open(args, &[Operation::History])?;
    let preview_bytes = args
        .int_opt("preview_bytes")?
        .unwrap_or(DEFAULT_DIFF_PREVIEW_BYTES);
    if !(0..=MAX_DIFF_PREVIEW_BYTES).contains(&preview_bytes) {
        return Err(Fail::new(
            Marker::Quota,
            format!("preview_bytes must be between 0 and {MAX_DIFF_PREVIEW_BYTES}"),
        ));
    }
    let filter: Vec<String> = match args.json("paths") {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|p| {
                let p = p.as_str().ok_or_else(|| invalid("paths must be strings"))?;
                crate::args::checked_path(p)
            })
            .collect::<Outcome<_>>()?,
        Some(_) => return Err(invalid("paths must be an array of paths")),
    };
    let from = side(&ws, args, "from_ref")?;
    let to = side(&ws, args, "to_ref")?;

    let mut entries: Vec<(DiffEntry, Option<&SideFile>, Option<&SideFile>)> = Vec::new();
    let mut deleted: Vec<(&String, &SideFile)> = Vec::new();
    let mut added: Vec<(&String, &SideFile)> = Vec::new();
    for (path, before) in &from.files {
        match to.files.get(path) {
            None => deleted.push((path, before)),
            Some(after) if after.content_hash != before.content_hash => entries.push((
                entry("modified", path, None, Some(before), Some(after)),
                Some(before),
                Some(after),
            )),
            Some(_) => {}
        }
    }
    for (path, after) in &to.files {
        if !from.files.contains_key(path) {
            added.push((path, after));
        }
    }
    // Pair deletions and additions with equal content, in path order, as moves.
    let mut by_hash: HashMap<&[u8], Vec<(&String, &SideFile)>> = HashMap::new();
    for d in deleted {
        by_hash
            .entry(d.1.content_hash.as_slice())
            .or_default()
            .push(d);
    }
    for list in by_hash.values_mut() {
        list.reverse();
    }
    for (path, after) in added {
        match by_hash
            .get_mut(after.content_hash.as_slice())
            .and_then(Vec::pop)
        {
            Some((old, before)) => entries.push((
                entry("moved", path, Some(old), Some(before), Some(after)),
                None,
                None,
            )),
            None => entries.push((
                entry("added", path, None, None, Some(after)),
                None,
                Some(after),
            )),
        }
    }
    for (path, before) in by_hash.into_values().flatten() {
        entries.push((
            entry("deleted", path, None, Some(before), None),
            Some(before),
            None,
        ));
    }
    entries.retain(|(e, _, _)| {
        in_scope(&filter, &e.path) || e.from.as_deref().is_some_and(|f| in_scope(&filter, f))
    });
    entries.sort_by(|a, b| a.0.path.cmp(&b.0.path));

    let bodies = if preview_bytes > 0 {
        preview_bodies(&ws, &entries)?
    } else {
        HashMap::new()
    };
    let max = preview_bytes as usize;
    let out: Vec<Value> = entries
        .into_iter()
        .map(|(mut e, before, after)| {
            if max > 0 && e.kind != "moved" {
                let b = before.map(|f| preview_text(f, &bodies));
                let a = after.map(|f| preview_text(f, &bodies));
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
            serde_json::to_value(e).expect("diff entry serialises")
        })
        .collect();
    Ok(json!({ "from": from.label, "to": to.label, "entries": out }))
}

fn entry(
    kind: &str,
    path: &str,
    from: Option<&str>,
    before: Option<&SideFile>,
    after: Option<&SideFile>,
) -> DiffEntry {
    DiffEntry {
        kind: kind.to_owned(),
        path: path.to_owned(),
        from: from.map(str::to_owned),
        before_hash: before.map(|f| hex::encode(&f.content_hash)),
        after_hash: after.map(|f| hex::encode(&f.content_hash)),
        preview: None,
        binary: false,
    }
}

/// Loads the bodies the previews need.
fn preview_bodies(
    ws: &Workspace,
    entries: &[(DiffEntry, Option<&SideFile>, Option<&SideFile>)],
) -> Outcome<HashMap<Vec<u8>, Vec<u8>>> {
    let mut wanted: Vec<Vec<u8>> = entries
        .iter()
        .flat_map(|(_, b, a)| [b, a])
        .flatten()
        .filter(|f| f.body.is_none())
        .map(|f| f.body_hash.clone())
        .collect();
    wanted.sort();
    wanted.dedup();
    if wanted.is_empty() {
        return Ok(HashMap::new());
    }
    Ok(bodies::load(&ws.id, wanted)?
        .into_iter()
        .map(|(hash, body)| (hash, body.bytes))
        .collect())
}

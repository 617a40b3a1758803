//! JSON shapes exchanged with the RPCs: commit changes (parsed and checked here, for both
//! sides), receipts, manifests and diffs. Field names are camelCase on the wire.

use crate::document::{metadata_from_json, Metadata};
use crate::limits::{MAX_BODY_BYTES, MAX_CHANGES_PER_COMMIT};
use crate::path::{self, PathError};
use base64::Engine;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;

/// New content for a path: body bytes and metadata.
#[derive(Debug, Clone, PartialEq)]
pub struct Content {
    pub body: Vec<u8>,
    pub metadata: Metadata,
}

/// One requested change, checked.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    Upsert {
        path: String,
        content: Content,
    },
    Delete {
        path: String,
    },
    Move {
        from: String,
        path: String,
        content: Option<Content>,
    },
}

impl Change {
    /// The destination (or only) path.
    pub fn path(&self) -> &str {
        match self {
            Change::Upsert { path, .. } | Change::Delete { path } | Change::Move { path, .. } => {
                path
            }
        }
    }
}

/// Why a change list was refused. `index` is the position of the offending change.
#[derive(Debug, Clone, PartialEq)]
pub enum ChangeError {
    NotAnArray,
    TooMany(usize),
    Shape {
        index: usize,
        reason: String,
    },
    Path {
        index: usize,
        path: String,
        error: PathError,
    },
    TooLarge {
        index: usize,
        path: String,
        size: usize,
    },
    MoveOntoItself {
        index: usize,
        path: String,
    },
}

impl fmt::Display for ChangeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChangeError::NotAnArray => f.write_str("changes must be a JSON array"),
            ChangeError::TooMany(n) => {
                write!(
                    f,
                    "{n} changes exceed the limit of {MAX_CHANGES_PER_COMMIT} per commit"
                )
            }
            ChangeError::Shape { index, reason } => write!(f, "change {index}: {reason}"),
            ChangeError::Path { index, path, error } => {
                write!(f, "change {index}: {path:?}: {error}")
            }
            ChangeError::TooLarge { index, path, size } => {
                write!(f, "change {index}: {path:?}: {size} bytes exceed the {MAX_BODY_BYTES}-byte file limit")
            }
            ChangeError::MoveOntoItself { index, path } => {
                write!(f, "change {index}: cannot move {path:?} onto itself")
            }
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawChange {
    op: String,
    path: String,
    from: Option<String>,
    text: Option<String>,
    base64: Option<String>,
    metadata: Option<Value>,
}

fn content_of(index: usize, raw: &RawChange) -> Result<Option<Content>, ChangeError> {
    let shape = |reason: &str| ChangeError::Shape {
        index,
        reason: reason.into(),
    };
    let body = match (&raw.text, &raw.base64) {
        (Some(_), Some(_)) => return Err(shape("give text or base64, not both")),
        (Some(t), None) => t.as_bytes().to_vec(),
        (None, Some(b)) => base64::engine::general_purpose::STANDARD
            .decode(b)
            .map_err(|e| shape(&format!("base64 is not valid: {e}")))?,
        (None, None) => {
            if raw.metadata.is_some() {
                return Err(shape("metadata needs content (text)"));
            }
            return Ok(None);
        }
    };
    if body.len() > MAX_BODY_BYTES {
        return Err(ChangeError::TooLarge {
            index,
            path: raw.path.clone(),
            size: body.len(),
        });
    }
    let metadata = match &raw.metadata {
        None => Metadata::new(),
        Some(v) => metadata_from_json(v).map_err(|e| shape(&e.to_string()))?,
    };
    if !metadata.is_empty() && std::str::from_utf8(&body).is_err() {
        return Err(shape("metadata is only allowed on UTF-8 text"));
    }
    Ok(Some(Content { body, metadata }))
}

fn checked_path(index: usize, p: &str) -> Result<String, ChangeError> {
    path::validate(p)
        .map(str::to_owned)
        .map_err(|error| ChangeError::Path {
            index,
            path: p.to_owned(),
            error,
        })
}

/// Parses and checks a JSON change list:
/// `[{"op":"upsert","path":"/a","text":"..."|"base64":"...","metadata":{...}?},
///   {"op":"delete","path":"/a"}, {"op":"move","from":"/a","path":"/b", content?}]`.
pub fn parse_changes(value: &Value) -> Result<Vec<Change>, ChangeError> {
    let Value::Array(items) = value else {
        return Err(ChangeError::NotAnArray);
    };
    if items.len() > MAX_CHANGES_PER_COMMIT {
        return Err(ChangeError::TooMany(items.len()));
    }
    items
        .iter()
        .enumerate()
        .map(|(index, item)| {
            let raw = RawChange::deserialize(item).map_err(|e| ChangeError::Shape {
                index,
                reason: e.to_string(),
            })?;
            let path = checked_path(index, &raw.path)?;
            let shape = |reason: &str| ChangeError::Shape {
                index,
                reason: reason.into(),
            };
            match raw.op.as_str() {
                "upsert" => {
                    if raw.from.is_some() {
                        return Err(shape("upsert takes no from"));
                    }
                    let content = content_of(index, &raw)?
                        .ok_or_else(|| shape("upsert needs text or base64"))?;
                    Ok(Change::Upsert { path, content })
                }
                "delete" => {
                    if raw.from.is_some()
                        || raw.text.is_some()
                        || raw.base64.is_some()
                        || raw.metadata.is_some()
                    {
                        return Err(shape("delete takes only a path"));
                    }
                    Ok(Change::Delete { path })
                }
                "move" => {
                    let from = raw
                        .from
                        .as_deref()
                        .ok_or_else(|| shape("move needs from"))?;
                    let from = checked_path(index, from)?;
                    if from == path {
                        return Err(ChangeError::MoveOntoItself { index, path });
                    }
                    let content = content_of(index, &raw)?;
                    Ok(Change::Move {
                        from,
                        path,
                        content,
                    })
                }
                other => Err(shape(&format!(
                    "op {other:?} is not one of upsert, delete, move"
                ))),
            }
        })
        .collect()
}

/// One line of a commit receipt: what happened to one path, by rendered content hash and size.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReceiptLine {
    pub op: String,
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub from: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub before_hash: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub before_size: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub after_hash: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub after_size: Option<i64>,
    /// For a move onto an existing file: the content hash of the file it replaced.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub replaced_hash: Option<String>,
    /// For a move onto an existing file: the size of the file it replaced.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub replaced_size: Option<i64>,
}

/// The record of one commit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Receipt {
    pub workspace_id: String,
    pub revision: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub parent_revision: Option<String>,
    pub position: i64,
    pub transaction_id: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub idempotency_key: Option<String>,
    pub actor: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub correlation_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub cause: Option<String>,
    pub metadata: Value,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub source_revision: Option<String>,
    pub committed_at: String,
    pub changes: Vec<ReceiptLine>,
}

/// What `supabash_commit` returns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CommitResult {
    pub receipt: Receipt,
    pub replayed: bool,
}

/// One file of a manifest (no body).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ManifestEntry {
    pub path: String,
    pub content_hash: String,
    pub size: i64,
    pub body_hash: String,
    pub body_size: i64,
    pub metadata: Value,
}

/// One diff entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiffEntry {
    /// `added`, `deleted`, `modified` or `moved`.
    pub kind: String,
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub from: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub before_hash: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub after_hash: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub preview: Option<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not", default)]
    pub binary: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn parses_each_op() {
        let changes = parse_changes(&json!([
            {"op": "upsert", "path": "/a.md", "text": "hi", "metadata": {"t": 1}},
            {"op": "upsert", "path": "/b.bin", "base64": "AP8="},
            {"op": "delete", "path": "/c"},
            {"op": "move", "from": "/a.md", "path": "/d.md"},
        ]))
        .unwrap();
        assert_eq!(changes.len(), 4);
        assert!(matches!(&changes[1], Change::Upsert { content, .. } if content.body == [0, 255]));
        assert!(matches!(&changes[3], Change::Move { content: None, .. }));
    }

    #[test]
    fn refuses_bad_shapes() {
        let bad = [
            json!({"op": "upsert"}),
            json!([{"op": "upsert", "path": "/a"}]),
            json!([{"op": "upsert", "path": "/a", "text": "x", "base64": "eA=="}]),
            json!([{"op": "upsert", "path": "/a", "base64": "***"}]),
            json!([{"op": "upsert", "path": "a", "text": "x"}]),
            json!([{"op": "upsert", "path": "/a", "text": 5}]),
            json!([{"op": "upsert", "path": "/a", "text": "x", "extra": 1}]),
            json!([{"op": "delete", "path": "/a", "text": "x"}]),
            json!([{"op": "move", "path": "/a"}]),
            json!([{"op": "move", "from": "/a", "path": "/a"}]),
            json!([{"op": "rename", "path": "/a"}]),
            json!([{"op": "upsert", "path": "/a", "base64": "/w==", "metadata": {"k": 1}}]),
        ];
        for b in bad {
            assert!(parse_changes(&b).is_err(), "{b}");
        }
    }

    proptest! {
        #[test]
        fn parse_never_panics(op in "(upsert|delete|move|x)", p in "\\PC{0,12}", f in proptest::option::of("\\PC{0,12}"), t in proptest::option::of("\\PC{0,12}")) {
            let mut o = json!({"op": op, "path": p});
            if let Some(f) = f { o["from"] = json!(f); }
            if let Some(t) = t { o["text"] = json!(t); }
            let _ = parse_changes(&json!([o]));
        }
    }
}

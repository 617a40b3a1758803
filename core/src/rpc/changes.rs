//! The change list of `supabash_commit` and the staged documents of `supabash_diff`: one wire
//! shape ([`WireChange`], [`StagedDocument`]), its encoders, and the one checker both sides use
//! ([`parse_changes`]).
//!
//! `[{"op":"upsert","path":"/a","text":"..."|"base64":"...","metadata":{...}?},
//!   {"op":"delete","path":"/a"}, {"op":"move","from":"/a","path":"/b", content?}]`

use super::body;
use crate::document::{metadata_from_json, metadata_to_json, Metadata};
use crate::limits::{MAX_BODY_BYTES, MAX_CHANGES_PER_COMMIT};
use crate::path::{self, PathError};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_with::skip_serializing_none;
use std::fmt;

/// New content for a path: body bytes and metadata.
#[derive(Debug, Clone, PartialEq)]
pub struct Content {
    pub body: Vec<u8>,
    pub metadata: Metadata,
}

/// What a change does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    Upsert,
    Delete,
    Move,
}

/// One change as it travels.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WireChange {
    pub op: Op,
    pub path: String,
    pub from: Option<String>,
    pub text: Option<String>,
    pub base64: Option<String>,
    pub metadata: Option<Value>,
}

impl WireChange {
    fn new(op: Op, path: &str, from: Option<&str>, content: Option<&Content>) -> Self {
        let (encoded, metadata) = match content {
            Some(c) => (
                body::encode(c.body.clone()),
                (!c.metadata.is_empty()).then(|| metadata_to_json(&c.metadata)),
            ),
            None => (body::Encoded::default(), None),
        };
        WireChange {
            op,
            path: path.to_owned(),
            from: from.map(str::to_owned),
            text: encoded.text,
            base64: encoded.base64,
            metadata,
        }
    }

    /// Writes `content` at `path`.
    pub fn upsert(path: &str, content: &Content) -> Self {
        Self::new(Op::Upsert, path, None, Some(content))
    }

    /// Removes `path`.
    pub fn delete(path: &str) -> Self {
        Self::new(Op::Delete, path, None, None)
    }

    /// Moves `from` to `path`, keeping its content.
    pub fn moved(from: &str, path: &str) -> Self {
        Self::new(Op::Move, path, Some(from), None)
    }
}

/// One file of a staged tree sent to `supabash_diff`: an upsert without `op`.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StagedDocument {
    pub path: String,
    pub text: Option<String>,
    pub base64: Option<String>,
    pub metadata: Option<Value>,
}

impl StagedDocument {
    /// The staged file `path` holding `content`.
    pub fn new(path: &str, content: &Content) -> Self {
        let c = WireChange::upsert(path, content);
        StagedDocument {
            path: c.path,
            text: c.text,
            base64: c.base64,
            metadata: c.metadata,
        }
    }

    /// The same document as an upsert, for [`parse_changes`].
    pub fn into_upsert(self) -> WireChange {
        WireChange {
            op: Op::Upsert,
            path: self.path,
            from: None,
            text: self.text,
            base64: self.base64,
            metadata: self.metadata,
        }
    }
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

fn content_of(index: usize, raw: WireChange) -> Result<Option<Content>, ChangeError> {
    let shape = |reason: String| ChangeError::Shape { index, reason };
    let Some(body) = body::decode(raw.text.as_deref(), raw.base64.as_deref()).map_err(shape)?
    else {
        if raw.metadata.is_some() {
            return Err(shape("metadata needs content (text)".into()));
        }
        return Ok(None);
    };
    if body.len() > MAX_BODY_BYTES {
        return Err(ChangeError::TooLarge {
            index,
            path: raw.path,
            size: body.len(),
        });
    }
    let metadata = match &raw.metadata {
        None => Metadata::new(),
        Some(v) => metadata_from_json(v).map_err(|e| shape(e.to_string()))?,
    };
    if !metadata.is_empty() && std::str::from_utf8(&body).is_err() {
        return Err(shape("metadata is only allowed on UTF-8 text".into()));
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

fn check(index: usize, raw: WireChange) -> Result<Change, ChangeError> {
    let shape = |reason: &str| ChangeError::Shape {
        index,
        reason: reason.into(),
    };
    let path = checked_path(index, &raw.path)?;
    match raw.op {
        Op::Upsert => {
            if raw.from.is_some() {
                return Err(shape("upsert takes no from"));
            }
            let content =
                content_of(index, raw)?.ok_or_else(|| shape("upsert needs text or base64"))?;
            Ok(Change::Upsert { path, content })
        }
        Op::Delete => {
            if raw.from.is_some()
                || raw.text.is_some()
                || raw.base64.is_some()
                || raw.metadata.is_some()
            {
                return Err(shape("delete takes only a path"));
            }
            Ok(Change::Delete { path })
        }
        Op::Move => {
            let from = raw
                .from
                .as_deref()
                .ok_or_else(|| shape("move needs from"))?;
            let from = checked_path(index, from)?;
            if from == path {
                return Err(ChangeError::MoveOntoItself { index, path });
            }
            let content = content_of(index, raw)?;
            Ok(Change::Move {
                from,
                path,
                content,
            })
        }
    }
}

/// Checks a change list: count, paths, body encodings and sizes, metadata.
pub fn parse_changes(changes: Vec<WireChange>) -> Result<Vec<Change>, ChangeError> {
    if changes.len() > MAX_CHANGES_PER_COMMIT {
        return Err(ChangeError::TooMany(changes.len()));
    }
    changes
        .into_iter()
        .enumerate()
        .map(|(index, raw)| check(index, raw))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn parse(v: Value) -> Result<Vec<Change>, String> {
        let wire: Vec<WireChange> = serde_json::from_value(v).map_err(|e| e.to_string())?;
        parse_changes(wire).map_err(|e| e.to_string())
    }

    #[test]
    fn parses_each_op() {
        let changes = parse(json!([
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
            assert!(parse(b.clone()).is_err(), "{b}");
        }
    }

    #[test]
    fn encoders_round_trip_through_the_checker() {
        let content = Content {
            body: b"hello".to_vec(),
            metadata: [("k".to_owned(), json!(1))].into(),
        };
        let binary = Content {
            body: vec![0, 159],
            metadata: Metadata::new(),
        };
        let wire = vec![
            WireChange::upsert("/a.md", &content),
            WireChange::upsert("/b.bin", &binary),
            WireChange::delete("/c"),
            WireChange::moved("/a.md", "/d.md"),
            StagedDocument::new("/e", &content).into_upsert(),
        ];
        let sent: Vec<WireChange> =
            serde_json::from_value(serde_json::to_value(&wire).unwrap()).unwrap();
        let parsed = parse_changes(sent).unwrap();
        assert_eq!(
            parsed[0],
            Change::Upsert {
                path: "/a.md".into(),
                content: content.clone()
            }
        );
        assert_eq!(
            parsed[1],
            Change::Upsert {
                path: "/b.bin".into(),
                content: binary
            }
        );
        assert_eq!(parsed[2], Change::Delete { path: "/c".into() });
        assert!(matches!(&parsed[3], Change::Move { from, content: None, .. } if from == "/a.md"));
        assert_eq!(
            parsed[4],
            Change::Upsert {
                path: "/e".into(),
                content
            }
        );
    }

    proptest! {
        #[test]
        fn parse_never_panics(op in "(upsert|delete|move|x)", p in "\\PC{0,12}", f in proptest::option::of("\\PC{0,12}"), t in proptest::option::of("\\PC{0,12}")) {
            let mut o = json!({"op": op, "path": p});
            if let Some(f) = f { o["from"] = json!(f); }
            if let Some(t) = t { o["text"] = json!(t); }
            let _ = parse(json!([o]));
        }
    }
}

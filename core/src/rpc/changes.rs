//! The change list of `supabash_commit` and the staged documents of `supabash_diff`: one wire
//! shape ([`WireChange`], [`StagedDocument`]), its encoders, and the one checker both sides use
//! ([`parse_changes`]).
//!
//! `[{"op":"upsert","path":"/a","text":"..."|"base64":"...","metadata":{...}?,
//!    "kind":"file"|"symlink"|"directory"?,"mode":493?,"mtimeNs":...?},
//!   {"op":"delete","path":"/a"}, {"op":"move","from":"/a","path":"/b", content?},
//!   {"op":"setattr","path":"/a","mode":493?,"mtimeNs":...?}]`
//!
//! A symbolic link's `text` is its target (checked by [`crate::posix::check_target`]); a
//! directory carries no body. `setattr` changes only the mode or time of a stored entry: no
//! body travels or is stored.

use super::body;
use crate::document::{metadata_from_json, metadata_to_json, Metadata};
use crate::limits::{MAX_BODY_BYTES, MAX_CHANGES_PER_COMMIT};
use crate::path::{self, PathError};
use crate::posix::{self, Attrs, Kind, PosixError};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_with::skip_serializing_none;
use std::fmt;

/// New content for a path: body bytes, metadata, and the entry's attributes (a link's body
/// is its target, a directory's is empty).
#[derive(Debug, Clone, PartialEq)]
pub struct Content {
    pub body: Vec<u8>,
    pub metadata: Metadata,
    pub attrs: Attrs,
}

/// What a change does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    Upsert,
    Delete,
    Move,
    /// Sets the mode or time of a stored entry, keeping its content.
    Setattr,
}

/// Declares the two wire types that carry a document (a path and what is stored there): a
/// [`WireChange`], and a [`StagedDocument`] (the same without `op` and `from`), from one list
/// of the fields after the path, with the conversion between them. The field order is the
/// order of the JSON text and of serde's "expected one of" messages.
macro_rules! documents {
    ($($(#[$attr:meta])* $field:ident: $ty:ty,)*) => {
        /// One change as it travels.
        #[skip_serializing_none]
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct WireChange {
            pub op: Op,
            pub path: String,
            pub from: Option<String>,
            $($(#[$attr])* pub $field: $ty,)*
        }

        /// One file of a staged tree sent to `supabash_diff`: an upsert without `op`.
        #[skip_serializing_none]
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct StagedDocument {
            pub path: String,
            $($(#[$attr])* pub $field: $ty,)*
        }

        impl StagedDocument {
            /// The same document as an upsert, for [`parse_changes`].
            pub fn into_upsert(self) -> WireChange {
                WireChange {
                    op: Op::Upsert,
                    path: self.path,
                    from: None,
                    $($field: self.$field,)*
                }
            }

            /// The document an upsert writes (its `op` and `from` dropped).
            fn of_upsert(c: WireChange) -> Self {
                StagedDocument {
                    path: c.path,
                    $($field: c.$field,)*
                }
            }
        }
    };
}

documents! {
    text: Option<String>,
    base64: Option<String>,
    metadata: Option<Value>,
    /// Absent: a regular file.
    kind: Option<Kind>,
    /// Permission bits (at most `0o7777`); absent: the kind's default.
    mode: Option<i64>,
    /// Modification time in nanoseconds since the epoch; absent: kept when the content is
    /// unchanged, else the commit's time.
    #[serde(rename = "mtimeNs")]
    mtime_ns: Option<i64>,
}

impl WireChange {
    fn new(op: Op, path: &str, from: Option<&str>, content: Option<&Content>) -> Self {
        let (encoded, metadata) = match content {
            Some(c) if c.attrs.kind == Kind::Directory => (body::Encoded::default(), None),
            Some(c) => (
                body::encode(c.body.clone()),
                (!c.metadata.is_empty()).then(|| metadata_to_json(&c.metadata)),
            ),
            None => (body::Encoded::default(), None),
        };
        let attrs = content.map(|c| c.attrs).unwrap_or_default();
        WireChange {
            op,
            path: path.to_owned(),
            from: from.map(str::to_owned),
            text: encoded.text,
            base64: encoded.base64,
            metadata,
            kind: (attrs.kind != Kind::File).then_some(attrs.kind),
            mode: attrs.mode.map(i64::from),
            mtime_ns: attrs.mtime_ns,
        }
    }

    /// What a files-only workspace refuses of this change ([`posix::files_only_refusal`]):
    /// the client checks before sending what the server checks again. A `setattr` applies to
    /// a file (nothing else is stored there); a delete and a time alone are never refused.
    pub fn files_only_refusal(&self) -> Option<posix::FilesOnlyRefusal> {
        let kind = self.kind.unwrap_or_default();
        let mode = match (self.op, self.mode) {
            (Op::Delete, _) | (Op::Setattr, None) => return None,
            (_, Some(mode)) => mode,
            (_, None) => i64::from(kind.default_mode()),
        };
        posix::files_only_refusal(kind, u32::try_from(mode).unwrap_or(u32::MAX))
    }

    /// Sets the mode and/or time of `path`, keeping its content.
    pub fn setattr(path: &str, mode: Option<u32>, mtime_ns: Option<i64>) -> Self {
        let mut c = Self::new(Op::Setattr, path, None, None);
        c.mode = mode.map(i64::from);
        c.mtime_ns = mtime_ns;
        c
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

impl StagedDocument {
    /// The staged file `path` holding `content`.
    pub fn new(path: &str, content: &Content) -> Self {
        Self::of_upsert(WireChange::upsert(path, content))
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
    /// A mode or time change of a stored entry (at least one is set).
    Setattr {
        path: String,
        mode: Option<u32>,
        mtime_ns: Option<i64>,
    },
}

impl Change {
    /// The destination (or only) path.
    pub fn path(&self) -> &str {
        match self {
            Change::Upsert { path, .. }
            | Change::Delete { path }
            | Change::Move { path, .. }
            | Change::Setattr { path, .. } => path,
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
    /// A kind, mode or symbolic link target refused (see [`crate::posix`]).
    Attribute {
        index: usize,
        path: String,
        error: PosixError,
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
            ChangeError::Attribute { index, path, error } => {
                write!(f, "change {index}: {path:?}: {error}")
            }
        }
    }
}

/// The checked mode and time of a change.
fn attrs_of(index: usize, raw: &WireChange) -> Result<(Option<u32>, Option<i64>), ChangeError> {
    let mode = raw
        .mode
        .map(posix::check_mode)
        .transpose()
        .map_err(|error| ChangeError::Attribute {
            index,
            path: raw.path.clone(),
            error,
        })?;
    Ok((mode, raw.mtime_ns))
}

fn content_of(index: usize, raw: WireChange) -> Result<Option<Content>, ChangeError> {
    let shape = |reason: String| ChangeError::Shape { index, reason };
    let (mode, mtime_ns) = attrs_of(index, &raw)?;
    let kind = raw.kind.unwrap_or_default();
    let attrs = Attrs {
        kind,
        mode,
        mtime_ns,
    };
    if kind == Kind::Directory {
        if raw.text.is_some() || raw.base64.is_some() || raw.metadata.is_some() {
            return Err(shape(
                "a directory carries no text, base64 or metadata".into(),
            ));
        }
        return Ok(Some(Content {
            body: Vec::new(),
            metadata: Metadata::new(),
            attrs,
        }));
    }
    let Some(body) = body::decode(raw.text.as_deref(), raw.base64.as_deref()).map_err(shape)?
    else {
        if raw.metadata.is_some() {
            return Err(shape("metadata needs content (text)".into()));
        }
        if raw.kind.is_some() || raw.mode.is_some() || raw.mtime_ns.is_some() {
            return Err(shape(
                "kind, mode and mtimeNs need content (use setattr)".into(),
            ));
        }
        return Ok(None);
    };
    if kind == Kind::Symlink {
        if raw.metadata.is_some() {
            return Err(shape("a symbolic link carries no metadata".into()));
        }
        let target = std::str::from_utf8(&body)
            .map_err(|_| shape("a symbolic link target is UTF-8 text".into()))?;
        posix::check_target(&raw.path, target).map_err(|error| ChangeError::Attribute {
            index,
            path: raw.path.clone(),
            error,
        })?;
    }
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
    Ok(Some(Content {
        body,
        metadata,
        attrs,
    }))
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
                || raw.kind.is_some()
                || raw.mode.is_some()
                || raw.mtime_ns.is_some()
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
        Op::Setattr => {
            if raw.from.is_some()
                || raw.text.is_some()
                || raw.base64.is_some()
                || raw.metadata.is_some()
                || raw.kind.is_some()
            {
                return Err(shape("setattr takes only a path, mode and mtimeNs"));
            }
            let (mode, mtime_ns) = attrs_of(index, &raw)?;
            if mode.is_none() && mtime_ns.is_none() {
                return Err(shape("setattr needs mode or mtimeNs"));
            }
            Ok(Change::Setattr {
                path,
                mode,
                mtime_ns,
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
    fn a_files_only_workspace_refuses_what_the_wire_carries() {
        use posix::FilesOnlyRefusal as R;
        let cases = [
            (json!({"op": "upsert", "path": "/a", "text": "x"}), None),
            (
                json!({"op": "upsert", "path": "/a", "text": "x", "mode": 420}),
                None,
            ),
            (
                json!({"op": "upsert", "path": "/a", "text": "x", "mode": 493}),
                Some(R::Mode(0o755)),
            ),
            (
                json!({"op": "upsert", "path": "/l", "text": "a", "kind": "symlink"}),
                Some(R::Symlink),
            ),
            (
                json!({"op": "upsert", "path": "/d", "kind": "directory"}),
                Some(R::Directory),
            ),
            (json!({"op": "move", "from": "/a", "path": "/b"}), None),
            (json!({"op": "delete", "path": "/a"}), None),
            (json!({"op": "setattr", "path": "/a", "mtimeNs": 1}), None),
            (
                json!({"op": "setattr", "path": "/a", "mode": 384}),
                Some(R::Mode(0o600)),
            ),
        ];
        for (change, want) in cases {
            let c: WireChange = serde_json::from_value(change.clone()).unwrap();
            assert_eq!(c.files_only_refusal(), want, "{change}");
        }
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
            json!([{"op": "upsert", "path": "/a", "text": "x", "mode": 0o10000}]),
            json!([{"op": "upsert", "path": "/a", "text": "x", "mode": -1}]),
            json!([{"op": "upsert", "path": "/a", "text": "x", "kind": "fifo"}]),
            json!([{"op": "upsert", "path": "/a/l", "text": "/etc/passwd", "kind": "symlink"}]),
            json!([{"op": "upsert", "path": "/a/l", "text": "../../x", "kind": "symlink"}]),
            json!([{"op": "upsert", "path": "/l", "text": "", "kind": "symlink"}]),
            json!([{"op": "upsert", "path": "/l", "text": "a", "kind": "symlink", "metadata": {"k": 1}}]),
            json!([{"op": "upsert", "path": "/d", "text": "x", "kind": "directory"}]),
            json!([{"op": "upsert", "path": "/a", "mode": 0o755}]),
            json!([{"op": "setattr", "path": "/a"}]),
            json!([{"op": "setattr", "path": "/a", "mode": 0o20000}]),
            json!([{"op": "setattr", "path": "/a", "mode": 0o755, "text": "x"}]),
            json!([{"op": "delete", "path": "/a", "mode": 0o755}]),
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
            attrs: Attrs::default(),
        };
        let binary = Content {
            body: vec![0, 159],
            metadata: Metadata::new(),
            attrs: Attrs {
                kind: Kind::File,
                mode: Some(0o755),
                mtime_ns: Some(1_700_000_000_123_456_789),
            },
        };
        let wire = vec![
            WireChange::upsert("/a.md", &content),
            WireChange::upsert("/b.bin", &binary),
            WireChange::delete("/c"),
            WireChange::moved("/a.md", "/d.md"),
            StagedDocument::new("/e", &content).into_upsert(),
            WireChange::setattr("/b.bin", Some(0o600), None),
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
        assert!(matches!(
            &parsed[5],
            Change::Setattr {
                mode: Some(0o600),
                ..
            }
        ));
    }

    #[test]
    fn parses_kinds_modes_and_times() {
        let changes = parse(json!([
            {"op": "upsert", "path": "/run.sh", "text": "#!/bin/sh", "mode": 0o755, "mtimeNs": 5},
            {"op": "upsert", "path": "/a/l", "text": "../run.sh", "kind": "symlink"},
            {"op": "upsert", "path": "/empty", "kind": "directory", "mode": 0o700},
            {"op": "setattr", "path": "/run.sh", "mode": 0o644},
        ]))
        .unwrap();
        let attrs = |c: &Change| match c {
            Change::Upsert { content, .. } => content.attrs,
            _ => panic!("an upsert"),
        };
        assert_eq!(attrs(&changes[0]).mode, Some(0o755));
        assert_eq!(attrs(&changes[0]).mtime_ns, Some(5));
        assert_eq!(attrs(&changes[1]).kind, Kind::Symlink);
        assert_eq!(attrs(&changes[2]).kind, Kind::Directory);
        assert_eq!(attrs(&changes[2]).mode_or_default(), 0o700);
        assert_eq!(
            changes[3],
            Change::Setattr {
                path: "/run.sh".into(),
                mode: Some(0o644),
                mtime_ns: None
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

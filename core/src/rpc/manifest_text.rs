//! A manifest answer's JSON text written as its rows are read: each file goes straight from
//! the stored row's columns into the text, with no owned strings, no hex strings and no JSON
//! values in between. The text is the serde form of [`Tree<ManifestFile>`], full or compact,
//! byte for byte (the tests compare them), and [`ManifestFile::new`] and this writer leave
//! out the same fields (`Defaults`, in manifest_file.rs).

use super::answers::Tree;
use super::manifest_file::{Defaults, ManifestFile};
use crate::posix::Kind;
use serde_json::Value;

/// One file of a manifest, borrowed from where it is stored.
pub struct ManifestEntry<'a> {
    pub path: &'a str,
    pub content_hash: &'a [u8],
    pub size: i64,
    pub body_hash: &'a [u8],
    pub body_size: i64,
    /// `None` for no metadata (`{}`).
    pub metadata: Option<Value>,
    /// The body in the wire encoding (`text` or `base64`), when the entry carries it (a
    /// symbolic link's target).
    pub body: Option<&'a super::body::Encoded>,
    pub redacted: bool,
    pub kind: Kind,
    pub mode: u32,
    pub mtime_ns: Option<i64>,
}

/// The JSON text of a manifest answer, written one file at a time.
pub struct ManifestText {
    out: Vec<u8>,
    /// What follows the files: the rest of the tree's fields.
    tail: String,
    compact: bool,
    first: bool,
}

/// Where the files go in the serde text of a tree without files. Inside a JSON string every
/// `"` is escaped, so the first occurrence is the key.
const EMPTY_FILES: &str = "\"files\":[]";

impl ManifestText {
    /// Starts the answer for `tree`, whose `files` must be empty (the files are [`push`]ed),
    /// in the compact form when `compact`; `capacity` is a guess at its size in bytes.
    ///
    /// [`push`]: Self::push
    pub fn new(tree: &Tree<ManifestFile>, compact: bool, capacity: usize) -> ManifestText {
        assert!(tree.files.is_empty(), "files are pushed one by one");
        let text = serde_json::to_string(tree).expect("a tree serialises");
        let at = text.find(EMPTY_FILES).expect("a tree has files") + EMPTY_FILES.len() - 1;
        let mut out = Vec::with_capacity(capacity.max(text.len()));
        out.extend_from_slice(&text.as_bytes()[..at]);
        ManifestText {
            out,
            tail: text[at..].to_owned(),
            compact,
            first: true,
        }
    }

    /// Appends one file, in path order.
    pub fn push(&mut self, e: &ManifestEntry<'_>) {
        let d = Defaults::of(
            (e.content_hash, e.size),
            (e.body_hash, e.body_size),
            e.metadata.as_ref(),
            e.kind,
            e.mode,
        );
        let keep = |default: bool| !(self.compact && default);
        let (keep_body, keep_metadata) = (keep(d.stored_whole), keep(d.empty_metadata));
        let (keep_kind, keep_mode) = (keep(d.file_kind), keep(d.default_mode));
        let out = &mut self.out;
        out.extend_from_slice(if self.first {
            b"{\"path\":"
        } else {
            b",{\"path\":"
        });
        self.first = false;
        string(out, e.path);
        out.extend_from_slice(b",\"contentHash\":");
        hex(out, e.content_hash);
        out.extend_from_slice(b",\"size\":");
        int(out, e.size);
        if keep_body {
            out.extend_from_slice(b",\"bodyHash\":");
            hex(out, e.body_hash);
            out.extend_from_slice(b",\"bodySize\":");
            int(out, e.body_size);
        }
        if keep_metadata {
            out.extend_from_slice(b",\"metadata\":");
            match &e.metadata {
                Some(m) => serde_json::to_writer(&mut *out, m).expect("a value serialises"),
                None => out.extend_from_slice(b"{}"),
            }
        }
        if let Some(body) = e.body {
            for (key, value) in [("text", &body.text), ("base64", &body.base64)] {
                if let Some(v) = value {
                    out.extend_from_slice(b",\"");
                    out.extend_from_slice(key.as_bytes());
                    out.extend_from_slice(b"\":");
                    string(out, v);
                }
            }
        }
        if e.redacted {
            out.extend_from_slice(b",\"redacted\":true");
        }
        if keep_kind {
            out.extend_from_slice(b",\"kind\":\"");
            out.extend_from_slice(e.kind.as_str().as_bytes());
            out.push(b'"');
        }
        if keep_mode {
            out.extend_from_slice(b",\"mode\":");
            int(out, i64::from(e.mode));
        }
        if let Some(t) = e.mtime_ns {
            out.extend_from_slice(b",\"mtimeNs\":");
            int(out, t);
        }
        out.push(b'}');
    }

    /// The whole answer.
    pub fn finish(mut self) -> String {
        self.out.extend_from_slice(self.tail.as_bytes());
        String::from_utf8(self.out).expect("written from strings and ASCII")
    }
}

/// A JSON string: as it is when nothing in it needs escaping (the common path), else as
/// serde_json escapes it.
fn string(out: &mut Vec<u8>, s: &str) {
    if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    } else {
        serde_json::to_writer(out, s).expect("a string serialises");
    }
}

/// Lowercase hex of `bytes` as a JSON string.
fn hex(out: &mut Vec<u8>, bytes: &[u8]) {
    out.push(b'"');
    crate::hash::push_hex(out, bytes);
    out.push(b'"');
}

fn int(out: &mut Vec<u8>, n: i64) {
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rpc::answers::File;
    use proptest::prelude::*;
    use serde_json::json;

    fn any_kind() -> impl Strategy<Value = Kind> {
        prop_oneof![Just(Kind::File), Just(Kind::Symlink), Just(Kind::Directory)]
    }

    /// A stored row as the extension reads it, and the body a link carries.
    #[derive(Debug, Clone)]
    struct Row {
        path: String,
        content: (Vec<u8>, i64),
        body: (Vec<u8>, i64),
        metadata: Option<Value>,
        link_body: Option<Vec<u8>>,
        redacted: bool,
        kind: Kind,
        mode: u32,
        mtime_ns: Option<i64>,
    }

    fn any_row() -> impl Strategy<Value = Row> {
        let hash = proptest::collection::vec(any::<u8>(), 0..33);
        (
            "(/[^/]{1,8}){1,3}|/[a-z\"\\\\\u{1}\u{7f}é]{1,6}",
            (hash.clone(), 0i64..1 << 40),
            prop_oneof![Just(None), (hash, 0i64..1 << 40).prop_map(Some)],
            prop_oneof![
                Just(None),
                Just(Some(json!({}))),
                "[a-z\"]{0,5}".prop_map(|v| Some(json!({ "title": v, "n": [1, 2.5] })))
            ],
            prop_oneof![
                Just(None),
                proptest::collection::vec(any::<u8>(), 0..12).prop_map(Some)
            ],
            (any::<bool>(), any_kind(), 0u32..0o10000),
            (any::<bool>(), proptest::option::of(any::<i64>())),
        )
            .prop_map(
                |(path, content, body, metadata, link_body, (redacted, kind, mode), (d, t))| Row {
                    body: body.unwrap_or_else(|| content.clone()),
                    mode: if d { kind.default_mode() } else { mode },
                    path,
                    content,
                    metadata,
                    link_body,
                    redacted,
                    kind,
                    mtime_ns: t,
                },
            )
    }

    /// The file the row is on the wire (what the extension built before this writer).
    fn file(r: &Row) -> File {
        let f = File {
            path: r.path.clone(),
            content_hash: hex::encode(&r.content.0),
            size: r.content.1,
            body_hash: hex::encode(&r.body.0),
            body_size: r.body.1,
            metadata: r.metadata.clone().unwrap_or_else(|| json!({})),
            text: None,
            base64: None,
            redacted: r.redacted,
            kind: r.kind,
            mode: r.mode,
            mtime_ns: r.mtime_ns,
        };
        match &r.link_body {
            Some(b) => f.with_body(b.clone()),
            None => f,
        }
    }

    fn tree<F>(files: Vec<F>, revision: Option<String>, floor: Option<i64>) -> Tree<F> {
        Tree {
            workspace_id: "8b0f3c52-5d2e-4f5e-9a43-0c8f5a1c2d3e".into(),
            position: revision.as_ref().map(|_| 7),
            revision,
            files,
            redaction_epoch: 2,
            restore_floor: floor,
            files_only: floor.is_some(),
        }
    }

    proptest! {
        /// The writer's text is serde's text of the same tree, byte for byte, in both forms.
        #[test]
        fn the_text_is_the_serde_form(
            rows in proptest::collection::vec(any_row(), 0..6),
            compact in any::<bool>(),
            revision in proptest::option::of("[0-9a-f-]{36}"),
            floor in proptest::option::of(0i64..100),
        ) {
            let files = rows.iter().map(|r| ManifestFile::new(file(r), compact)).collect();
            let expected = serde_json::to_string(&tree(files, revision.clone(), floor)).unwrap();
            let mut text = ManifestText::new(&tree(Vec::new(), revision, floor), compact, 0);
            for r in &rows {
                let encoded = r.link_body.clone().map(crate::rpc::body::encode);
                text.push(&ManifestEntry {
                    path: &r.path,
                    content_hash: &r.content.0,
                    size: r.content.1,
                    body_hash: &r.body.0,
                    body_size: r.body.1,
                    metadata: r.metadata.clone(),
                    body: encoded.as_ref(),
                    redacted: r.redacted,
                    kind: r.kind,
                    mode: r.mode,
                    mtime_ns: r.mtime_ns,
                });
            }
            prop_assert_eq!(text.finish(), expected);
        }
    }
}

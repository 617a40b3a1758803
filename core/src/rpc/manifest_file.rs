//! A file as a manifest lists it (`supabash_load_manifest`), in the full or the compact form,
//! and [`Defaults`]: the one rule for which fields the compact form leaves out, shared with
//! the streaming writer ([`super::manifest_text`]).

use super::answers::File;
use crate::posix::Kind;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_with::skip_serializing_none;

/// A file of a manifest (`supabash_load_manifest`): a [`File`] without a body (a symbolic
/// link still carries its target), written whole, or in the compact form a request asks for
/// with `compact`, which leaves out each field that holds its default: `bodyHash` and
/// `bodySize` when they equal `contentHash` and `size` (a body stored whole), `metadata` when
/// it is `{}`, `kind` when `file`, `mode` when the kind's default
/// ([`Kind::default_mode`]). Read either way, [`File::from`] fills them back in.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ManifestFile {
    pub path: String,
    pub content_hash: String,
    pub size: i64,
    pub body_hash: Option<String>,
    pub body_size: Option<i64>,
    pub metadata: Option<Value>,
    pub text: Option<String>,
    pub base64: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub redacted: bool,
    pub kind: Option<Kind>,
    pub mode: Option<u32>,
    pub mtime_ns: Option<i64>,
}

impl ManifestFile {
    /// `file` in the full form, or in the compact one when `compact`.
    pub fn new(file: File, compact: bool) -> ManifestFile {
        let d = Defaults::of(
            (file.content_hash.as_bytes(), file.size),
            (file.body_hash.as_bytes(), file.body_size),
            Some(&file.metadata),
            file.kind,
            file.mode,
        );
        let keep = |default: bool| !(compact && default);
        ManifestFile {
            body_hash: Some(file.body_hash).filter(|_| keep(d.stored_whole)),
            body_size: Some(file.body_size).filter(|_| keep(d.stored_whole)),
            metadata: Some(file.metadata).filter(|_| keep(d.empty_metadata)),
            kind: Some(file.kind).filter(|_| keep(d.file_kind)),
            mode: Some(file.mode).filter(|_| keep(d.default_mode)),
            path: file.path,
            content_hash: file.content_hash,
            size: file.size,
            text: file.text,
            base64: file.base64,
            redacted: file.redacted,
            mtime_ns: file.mtime_ns,
        }
    }
}

impl From<ManifestFile> for File {
    /// The file a manifest entry describes, its left-out fields filled with their defaults.
    fn from(m: ManifestFile) -> File {
        let kind = m.kind.unwrap_or_default();
        File {
            body_hash: m.body_hash.unwrap_or_else(|| m.content_hash.clone()),
            body_size: m.body_size.unwrap_or(m.size),
            metadata: m
                .metadata
                .unwrap_or_else(|| Value::Object(Default::default())),
            mode: m.mode.unwrap_or(kind.default_mode()),
            kind,
            path: m.path,
            content_hash: m.content_hash,
            size: m.size,
            text: m.text,
            base64: m.base64,
            redacted: m.redacted,
            mtime_ns: m.mtime_ns,
        }
    }
}

/// Which of a file's fields hold their defaults: what the compact form leaves out.
pub(crate) struct Defaults {
    /// The body is stored whole: its hash and size are the content's.
    pub stored_whole: bool,
    pub empty_metadata: bool,
    pub file_kind: bool,
    pub default_mode: bool,
}

impl Defaults {
    pub(crate) fn of(
        (content_hash, size): (&[u8], i64),
        (body_hash, body_size): (&[u8], i64),
        metadata: Option<&Value>,
        kind: Kind,
        mode: u32,
    ) -> Defaults {
        Defaults {
            stored_whole: body_hash == content_hash && body_size == size,
            empty_metadata: metadata.is_none_or(|m| m.as_object().is_some_and(|m| m.is_empty())),
            file_kind: kind == Kind::File,
            default_mode: mode == kind.default_mode(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn any_file() -> impl Strategy<Value = File> {
        let hash = prop_oneof![Just(String::new()), "[0-9a-f]{64}"];
        let kind = prop_oneof![Just(Kind::File), Just(Kind::Symlink), Just(Kind::Directory)];
        // A file's metadata is always an object.
        let metadata = prop_oneof![
            Just(serde_json::json!({})),
            Just(serde_json::json!({"k": 1}))
        ];
        (
            ("/[a-z]{1,8}", hash.clone(), 0i64..9, hash, 0i64..9),
            (metadata, proptest::option::of("[a-z]{0,8}"), any::<bool>()),
            (
                kind,
                prop_oneof![Just(None), (0u32..=0o7777).prop_map(Some)],
            ),
            proptest::option::of(any::<i64>()),
        )
            .prop_map(
                |(
                    (path, ch, size, bh, bsize),
                    (metadata, text, redacted),
                    (kind, mode),
                    mtime_ns,
                )| File {
                    path,
                    body_hash: if bh.is_empty() { ch.clone() } else { bh },
                    body_size: if bsize == 0 { size } else { bsize },
                    content_hash: ch,
                    size,
                    metadata,
                    text,
                    base64: None,
                    redacted,
                    kind,
                    mode: mode.unwrap_or(kind.default_mode()),
                    mtime_ns,
                },
            )
    }

    proptest! {
        /// Either form, written and read back as JSON, is the same file; the compact one
        /// leaves out exactly the fields that hold their default.
        #[test]
        fn a_manifest_file_reads_back_as_the_file(file in any_file(), compact in any::<bool>()) {
            let text = serde_json::to_string(&ManifestFile::new(file.clone(), compact)).unwrap();
            let back: ManifestFile = serde_json::from_str(&text).unwrap();
            prop_assert_eq!(File::from(back), file.clone());
            let full = serde_json::to_value(&file).unwrap();
            let written: Value = serde_json::from_str(&text).unwrap();
            if !compact {
                prop_assert_eq!(written, full);
            } else {
                let left_out = |k: &str| written.get(k).is_none();
                let whole = file.body_hash == file.content_hash && file.body_size == file.size;
                prop_assert_eq!(left_out("bodyHash"), whole);
                prop_assert_eq!(left_out("bodySize"), whole);
                prop_assert_eq!(left_out("metadata"), file.metadata == serde_json::json!({}));
                prop_assert_eq!(left_out("kind"), file.kind == Kind::File);
                prop_assert_eq!(left_out("mode"), file.mode == file.kind.default_mode());
            }
        }
    }
}

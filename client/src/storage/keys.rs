//! Object keys: how workspace paths and the reserved `.supabash/` area map onto Storage keys
//! under one prefix.
//!
//! Supabase Storage refuses keys outside `[A-Za-z0-9_/!-.*'() &$@=;:+,?]` (so every non-ASCII
//! name), hence paths are encoded reversibly, segment by segment: the bytes of
//! [`SAFE`] characters stay, every other UTF-8 byte (and `!` itself) becomes `!` and two
//! upper-case hex digits. `été.md` is `!C3!A9t!C3!A9.md`. The encoding is canonical: a key that
//! escapes a safe byte, uses lower-case hex or another character is not a workspace key.
//!
//! Layout under the prefix `P` (ending in `/`):
//! - `P<encoded path>`: a file or symbolic link;
//! - `P<encoded dir>/.supabash-directory`: the marker of a directory (kept while empty);
//! - `P.supabash/...`: the reserved area (history, intents, heads), invisible to the agent.
//!   No workspace path can encode to it: the `.supabash` segment is reserved by the path rules.

use super::model::{Entry, EntryKind};
use supabash_core::hash::sha256_hex;
use supabash_core::path;

/// The reserved area's first segment below the prefix.
pub const RESERVED: &str = ".supabash";
/// The last segment of a directory marker key.
pub const DIRECTORY_MARKER: &str = ".supabash-directory";
/// The escape character.
const ESCAPE: u8 = b'!';
/// Characters kept as they are (a subset of what Storage accepts, minus the escape).
pub const SAFE: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.()+,=@ ";
/// Longest key Storage keeps (S3's limit), in bytes.
pub const MAX_KEY_BYTES: usize = 1024;

fn is_safe(b: u8) -> bool {
    SAFE.as_bytes().contains(&b)
}

/// Encodes one path segment.
pub fn encode_segment(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for &b in segment.as_bytes() {
        if is_safe(b) {
            out.push(b as char);
        } else {
            out.push(ESCAPE as char);
            out.push_str(&format!("{b:02X}"));
        }
    }
    out
}

fn hex_digit(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Decodes one encoded segment; `None` when it is not a canonical encoding of UTF-8.
pub fn decode_segment(encoded: &str) -> Option<String> {
    let bytes = encoded.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == ESCAPE {
            let hi = hex_digit(*bytes.get(i + 1)?)?;
            let lo = hex_digit(*bytes.get(i + 2)?)?;
            let decoded = hi * 16 + lo;
            if is_safe(decoded) {
                return None;
            }
            out.push(decoded);
            i += 3;
        } else if is_safe(b) {
            out.push(b);
            i += 1;
        } else {
            return None;
        }
    }
    String::from_utf8(out).ok()
}

/// The key suffix (below the prefix) of a canonical workspace path: `/a/été` → `a/!C3!A9t!C3!A9`.
pub fn encode_path(p: &str) -> String {
    p.trim_start_matches('/')
        .split('/')
        .map(encode_segment)
        .collect::<Vec<_>>()
        .join("/")
}

/// The workspace path of a key suffix, when it is a canonical encoding of a valid path.
pub fn decode_path(suffix: &str) -> Option<String> {
    let segments = suffix
        .split('/')
        .map(decode_segment)
        .collect::<Option<Vec<_>>>()?;
    let p = format!("/{}", segments.join("/"));
    path::validate(&p).ok()?;
    Some(p)
}

/// Keys of one workspace: a prefix such as `<uid>/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keys {
    prefix: String,
}

/// What a visible key (outside the reserved area) names.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Visible {
    /// A file or a symbolic link at this path.
    Entry(String),
    /// The marker of the directory at this path.
    Directory(String),
}

impl Keys {
    /// Keys under `prefix` (checked by the caller: see `supabash_core::capability::check_prefix`).
    pub fn new(prefix: &str) -> Keys {
        Keys {
            prefix: prefix.to_owned(),
        }
    }

    /// The prefix, ending in `/`.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The key of a file or symbolic link.
    pub fn entry(&self, p: &str) -> String {
        format!("{}{}", self.prefix, encode_path(p))
    }

    /// The key of a directory's marker.
    pub fn directory(&self, p: &str) -> String {
        format!("{}{}/{DIRECTORY_MARKER}", self.prefix, encode_path(p))
    }

    /// A key of the reserved area: `P.supabash/<rest>`.
    pub fn reserved(&self, rest: &str) -> String {
        format!("{}{RESERVED}/{rest}", self.prefix)
    }

    /// The reserved area's key prefix.
    pub fn reserved_prefix(&self) -> String {
        self.reserved("")
    }

    /// What a listed key names: `None` for the reserved area and for keys that are no
    /// canonical encoding of a valid path (foreign objects the workspace ignores).
    pub fn classify(&self, key: &str) -> Option<Visible> {
        let suffix = key.strip_prefix(&self.prefix)?;
        if suffix == RESERVED || suffix.starts_with(&format!("{RESERVED}/")) {
            return None;
        }
        if let Some(dir) = suffix.strip_suffix(&format!("/{DIRECTORY_MARKER}")) {
            return decode_path(dir).map(Visible::Directory);
        }
        decode_path(suffix).map(Visible::Entry)
    }
}

/// Keys of the records in the reserved area, and of an entry by kind.
impl Keys {
    /// `head.json`.
    pub fn head(&self) -> String {
        self.reserved("head.json")
    }
    /// A revision record.
    pub fn revision(&self, rev: &str) -> String {
        self.reserved(&format!("revisions/{rev}.json"))
    }
    /// The folder of unresolved intents.
    pub fn intents(&self) -> String {
        self.reserved("intents/")
    }
    /// An intent record.
    pub fn intent(&self, tx: &str) -> String {
        self.reserved(&format!("intents/{tx}.json"))
    }
    /// A complete record.
    pub fn complete(&self, tx: &str) -> String {
        self.reserved(&format!("transactions/{tx}/complete.json"))
    }
    /// An abort record.
    pub fn abort(&self, tx: &str) -> String {
        self.reserved(&format!("transactions/{tx}/abort.json"))
    }
    /// A content-addressed body.
    pub fn object(&self, hash: &str) -> String {
        self.reserved(&format!("objects/{hash}"))
    }
    /// The record of an idempotency key (by its SHA-256: keys are free text).
    pub fn idempotency(&self, key: &str) -> String {
        self.reserved(&format!("idempotency/{}.json", sha256_hex(key.as_bytes())))
    }
    /// The visible key of an entry at `p`.
    pub fn of_entry(&self, p: &str, e: &Entry) -> String {
        match e.kind {
            EntryKind::Directory => self.directory(p),
            EntryKind::File | EntryKind::Symlink => self.entry(p),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn non_ascii_names_round_trip() {
        assert_eq!(encode_path("/notes/été.md"), "notes/!C3!A9t!C3!A9.md");
        assert_eq!(
            decode_path("notes/!C3!A9t!C3!A9.md").as_deref(),
            Some("/notes/été.md")
        );
        assert_eq!(encode_segment("a!b"), "a!21b");
        assert_eq!(encode_segment("a b(1).md"), "a b(1).md");
    }

    #[test]
    fn non_canonical_keys_are_refused() {
        assert_eq!(decode_segment("!41"), None, "escaped safe byte");
        assert_eq!(decode_segment("!c3!a9"), None, "lower-case hex");
        assert_eq!(decode_segment("!C3"), None, "not UTF-8");
        assert_eq!(decode_segment("a!2"), None, "short escape");
        assert_eq!(decode_segment("a~b"), None, "unsafe character");
        assert_eq!(decode_path(".supabash/head.json"), None);
        assert_eq!(decode_path("a//b"), None);
    }

    #[test]
    fn keys_classify() {
        let k = Keys::new("u1/");
        assert_eq!(k.entry("/a/été"), "u1/a/!C3!A9t!C3!A9");
        assert_eq!(k.directory("/a"), "u1/a/.supabash-directory");
        assert_eq!(k.classify("u1/a/b"), Some(Visible::Entry("/a/b".into())));
        assert_eq!(
            k.classify("u1/a/.supabash-directory"),
            Some(Visible::Directory("/a".into()))
        );
        assert_eq!(k.classify("u1/.supabash/head.json"), None);
        assert_eq!(k.classify("u2/a"), None);
        assert_eq!(k.reserved("head.json"), "u1/.supabash/head.json");
    }

    /// Storage's own key rule (mirrored from the observed contract).
    fn storage_accepts(key: &str) -> bool {
        key.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_/!-.*'() &$@=;:+,?".contains(c))
    }

    proptest! {
        #[test]
        fn paths_round_trip(segs in proptest::collection::vec("[a-zA-Z0-9 _.!~%é語😀?#&-]{1,12}", 1..5)) {
            let p = format!("/{}", segs.join("/"));
            prop_assume!(path::validate(&p).is_ok());
            let encoded = encode_path(&p);
            prop_assert!(storage_accepts(&encoded), "{}", encoded);
            prop_assert_eq!(decode_path(&encoded), Some(p.clone()));
            let k = Keys::new("u/");
            prop_assert_eq!(k.classify(&k.entry(&p)), Some(Visible::Entry(p.clone())));
            prop_assert_eq!(k.classify(&k.directory(&p)), Some(Visible::Directory(p)));
        }

        #[test]
        fn decoding_is_injective(s in "[a-zA-Z0-9!A-F. ]{0,16}") {
            if let Some(d) = decode_segment(&s) {
                prop_assert_eq!(encode_segment(&d), s);
            }
        }
    }
}

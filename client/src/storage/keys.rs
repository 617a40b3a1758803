//! Object keys: how workspace paths and the reserved `.supabash/` area map onto Storage keys
//! under one prefix.
//!
//! Supabase Storage refuses keys outside `[A-Za-z0-9_/!-.*'() &$@=;:+,?]` (so every non-ASCII
//! name), hence paths are encoded reversibly, segment by segment: the bytes of
//! [`SAFE`] characters stay, every other UTF-8 byte (and `!` itself) becomes `!` and two
//! upper-case hex digits. `été.md` is `!C3!A9t!C3!A9.md`. The encoding is canonical: a key that
//! escapes a safe byte, uses lower-case hex or another character is not a workspace key.
//!
//! **Limits.** The file backend stores every key segment as a file or directory name, so a
//! segment longer than [`MAX_SEGMENT_BYTES`] fails (HTTP 500); S3 limits the whole key to
//! [`MAX_KEY_BYTES`]. Escaping can triple a name, so two fallbacks keep every path the staged
//! tree accepts (segments up to 255 bytes, paths up to 4,096) within both limits:
//! - a segment whose escaped form is too long is **shortened** to the escaped form of its
//!   first characters, `*` and the SHA-256 of the whole name (`*` is always escaped in the
//!   canonical form, so a shortened segment never spells another name);
//! - a key still longer than [`MAX_KEY_BYTES`] moves to `P.supabash-long/<sha256 of the path>`
//!   (no path encodes to a `.supabash-*` segment).
//!
//! Such keys ([`Visible::Named`]) no longer spell their path; the object's metadata carries it
//! (`supabash_path`, see [`Keys::metadata`]), and manifests name paths, not keys.
//!
//! Layout under the prefix `P` (ending in `/`):
//! - `P<encoded path>`: a file or symbolic link;
//! - `P<encoded dir>/.supabash-directory`: the marker of a directory (kept while empty);
//! - `P.supabash-long/<sha256>[/.supabash-directory]`: the same, for paths too long to spell;
//! - `P.supabash/...`: the reserved area (history, intents, heads), invisible to the agent.
//!   No workspace path can encode to it: the `.supabash` segment is reserved by the path rules.

use super::model::{Entry, EntryKind};
use crate::error::{Result, SupabashError};
use serde_json::{json, Value};
use supabash_core::hash::sha256_hex;
use supabash_core::path;
use supabash_core::ErrorCode;

/// The reserved area's first segment below the prefix.
pub const RESERVED: &str = ".supabash";
/// The folder below the prefix of entries whose spelled-out key would be too long.
pub const LONG: &str = ".supabash-long";
/// The last segment of a directory marker key.
pub const DIRECTORY_MARKER: &str = ".supabash-directory";
/// The escape character.
const ESCAPE: u8 = b'!';
/// Separates a shortened segment's head from the name's SHA-256.
const SHORTENED: char = '*';
/// Hex digits of a SHA-256.
const HASH_HEX: usize = 64;
/// Characters kept as they are (a subset of what Storage accepts, minus the escape).
pub const SAFE: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.()+,=@ ";
/// Longest key segment the Storage file backend stores (a file name), in bytes.
pub const MAX_SEGMENT_BYTES: usize = 255;
/// Longest whole key, in bytes: S3's limit (the file backend takes longer keys made of short
/// segments, but a bucket may live on S3), including the prefix.
pub const MAX_KEY_BYTES: usize = 1024;
/// What the longest key of the reserved area needs after the prefix (an idempotency record is
/// about 90 bytes).
const RESERVED_ROOM: usize = 128;
/// The longest workspace prefix: every reserved key must still fit in [`MAX_KEY_BYTES`].
pub const MAX_PREFIX_BYTES: usize = MAX_KEY_BYTES - RESERVED_ROOM;

fn is_safe(b: u8) -> bool {
    SAFE.as_bytes().contains(&b)
}

/// The canonical escaped form of `s`, however long.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for &b in s.as_bytes() {
        if is_safe(b) {
            out.push(b as char);
        } else {
            out.push(ESCAPE as char);
            out.push_str(&format!("{b:02X}"));
        }
    }
    out
}

/// Encodes one path segment: its escaped form, or, when that is longer than
/// [`MAX_SEGMENT_BYTES`], the escaped form of its first characters, `*` and its SHA-256.
pub fn encode_segment(segment: &str) -> String {
    let full = escape(segment);
    if full.len() <= MAX_SEGMENT_BYTES {
        return full;
    }
    let room = MAX_SEGMENT_BYTES - 1 - HASH_HEX;
    let mut head = String::new();
    let mut buf = [0u8; 4];
    for c in segment.chars() {
        let e = escape(c.encode_utf8(&mut buf));
        if head.len() + e.len() > room {
            break;
        }
        head.push_str(&e);
    }
    format!("{head}{SHORTENED}{}", sha256_hex(segment.as_bytes()))
}

fn hex_digit(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Decodes one escaped segment; `None` when it is not a canonical escaping of UTF-8 (a
/// shortened segment is not: its name is in the object's metadata).
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

fn is_sha256_hex(s: &str) -> bool {
    s.len() == HASH_HEX && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Whether `encoded` has the shape of a shortened segment (its name cannot be read from it).
fn is_shortened(encoded: &str) -> bool {
    encoded.len() <= MAX_SEGMENT_BYTES
        && encoded
            .rsplit_once(SHORTENED)
            .is_some_and(|(head, hash)| decode_segment(head).is_some() && is_sha256_hex(hash))
}

/// The key suffix (below the prefix) of a canonical workspace path, segment by segment:
/// `/a/été` → `a/!C3!A9t!C3!A9`.
pub fn encode_path(p: &str) -> String {
    p.trim_start_matches('/')
        .split('/')
        .map(encode_segment)
        .collect::<Vec<_>>()
        .join("/")
}

/// The workspace path a key suffix spells, when every segment is a canonical escaping and the
/// result a valid path.
pub fn decode_path(suffix: &str) -> Option<String> {
    let segments = suffix
        .split('/')
        .map(decode_segment)
        .collect::<Option<Vec<_>>>()?;
    let p = format!("/{}", segments.join("/"));
    path::validate(&p).ok()?;
    Some(p)
}

/// Refuses a prefix that leaves the reserved area's keys no room under [`MAX_KEY_BYTES`], or
/// has a segment over [`MAX_SEGMENT_BYTES`] (`INVALID_ARGUMENT`).
pub fn check_prefix_room(prefix: &str) -> Result<()> {
    if prefix.len() > MAX_PREFIX_BYTES || prefix.split('/').any(|s| s.len() > MAX_SEGMENT_BYTES) {
        return Err(SupabashError::new(
            ErrorCode::InvalidArgument,
            format!(
                "a Storage prefix holds at most {MAX_PREFIX_BYTES} bytes in segments of at most \
                 {MAX_SEGMENT_BYTES}, so every key stays within Storage's limits"
            ),
        ));
    }
    Ok(())
}

/// Refuses a key over Storage's limits (`INVALID_PATH`): a last barrier before a request.
pub fn check_key(key: &str) -> Result<()> {
    if key.len() > MAX_KEY_BYTES {
        return Err(SupabashError::new(
            ErrorCode::InvalidPath,
            format!("object key longer than {MAX_KEY_BYTES} bytes"),
        ));
    }
    if key.split('/').any(|s| s.len() > MAX_SEGMENT_BYTES) {
        return Err(SupabashError::new(
            ErrorCode::InvalidPath,
            format!("object key segment longer than {MAX_SEGMENT_BYTES} bytes"),
        ));
    }
    Ok(())
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
    /// A key that does not spell its path (shortened or hashed, see the module documentation):
    /// the object's metadata names it (`supabash_path`). `directory`: a directory marker.
    Named { directory: bool },
}

impl Keys {
    /// Keys under `prefix` (checked by the caller: see `supabash_core::capability::check_prefix`
    /// and [`check_prefix_room`]).
    pub fn new(prefix: &str) -> Keys {
        Keys {
            prefix: prefix.to_owned(),
        }
    }

    /// The prefix, ending in `/`.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The hashed key of `p`, for paths too long to spell.
    fn long(&self, p: &str) -> String {
        format!("{}{LONG}/{}", self.prefix, sha256_hex(p.as_bytes()))
    }

    /// The key of a file or symbolic link.
    pub fn entry(&self, p: &str) -> String {
        let key = format!("{}{}", self.prefix, encode_path(p));
        if key.len() <= MAX_KEY_BYTES {
            key
        } else {
            self.long(p)
        }
    }

    /// The key of a directory's marker.
    pub fn directory(&self, p: &str) -> String {
        let key = format!("{}{}/{DIRECTORY_MARKER}", self.prefix, encode_path(p));
        if key.len() <= MAX_KEY_BYTES {
            key
        } else {
            format!("{}/{DIRECTORY_MARKER}", self.long(p))
        }
    }

    /// A key of the reserved area: `P.supabash/<rest>`.
    pub fn reserved(&self, rest: &str) -> String {
        format!("{}{RESERVED}/{rest}", self.prefix)
    }

    /// The reserved area's key prefix.
    pub fn reserved_prefix(&self) -> String {
        self.reserved("")
    }

    /// What a listed key names: `None` for the reserved area and for keys that are not the key
    /// of any valid path (foreign objects the workspace ignores).
    pub fn classify(&self, key: &str) -> Option<Visible> {
        let suffix = key.strip_prefix(&self.prefix)?;
        if suffix == RESERVED || suffix.starts_with(&format!("{RESERVED}/")) {
            return None;
        }
        let (rest, directory) = match suffix.strip_suffix(&format!("/{DIRECTORY_MARKER}")) {
            Some(dir) => (dir, true),
            None => (suffix, false),
        };
        let key_of = |p: &str| {
            if directory {
                self.directory(p)
            } else {
                self.entry(p)
            }
        };
        if let Some(hash) = rest.strip_prefix(&format!("{LONG}/")) {
            return is_sha256_hex(hash).then_some(Visible::Named { directory });
        }
        if let Some(p) = decode_path(rest) {
            // Canonical: only the key this path is stored under (not a spelled-out form of a
            // path that is stored shortened or hashed).
            return (key_of(&p) == key).then_some(if directory {
                Visible::Directory(p)
            } else {
                Visible::Entry(p)
            });
        }
        let segments_ok = rest
            .split('/')
            .all(|s| decode_segment(s).is_some() || is_shortened(s));
        (segments_ok && rest.split('/').any(is_shortened)).then_some(Visible::Named { directory })
    }

    /// The user metadata of the visible object of entry `e` at `p`: the entry's, plus the path
    /// (`supabash_path`) when the key does not spell it.
    pub fn metadata(&self, p: &str, e: &Entry) -> Value {
        let mut m = e.object_metadata();
        if let Some(Visible::Named { .. }) = self.classify(&self.of_entry(p, e)) {
            m["supabash_path"] = json!(p);
        }
        m
    }

    /// The path a [`Visible::Named`] object's metadata names, when it is valid and `key` is
    /// really that path's key (else the object is foreign and ignored).
    pub fn named_path(&self, key: &str, directory: bool, metadata: &Value) -> Option<String> {
        let p = metadata["supabash_path"].as_str()?;
        path::validate(p).ok()?;
        let expected = if directory {
            self.directory(p)
        } else {
            self.entry(p)
        };
        (expected == key).then(|| p.to_owned())
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
    /// The revision pack of `rev` (its small bodies and header; see `pack.rs`).
    pub fn pack(&self, rev: &str) -> String {
        self.reserved(&format!("revisions/{rev}.pack"))
    }
    /// The snapshot (whole manifest) of `rev`.
    pub fn snapshot(&self, rev: &str) -> String {
        self.reserved(&format!("snapshots/{rev}.json"))
    }
    /// The folder of 0.6.0's unresolved intents.
    pub fn intents(&self) -> String {
        self.reserved("intents/")
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

    /// Storage's own key rule (mirrored from the observed contract) and its size limits.
    fn storage_accepts(key: &str) -> bool {
        key.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_/!-.*'() &$@=;:+,?".contains(c))
            && check_key(key).is_ok()
    }

    #[test]
    fn long_names_are_shortened() {
        let k = Keys::new("u1/");
        let cjk = "語".repeat(30);
        let key = k.entry(&format!("/notes/{cjk}.md"));
        let seg = key.rsplit('/').next().unwrap();
        assert!(seg.len() <= MAX_SEGMENT_BYTES && seg.contains('*'), "{seg}");
        assert!(seg.starts_with("!E8!AA!9E"), "{seg}");
        assert_eq!(k.classify(&key), Some(Visible::Named { directory: false }));
        // A name whose escaped form fits is spelled out, up to 255 bytes.
        let short = format!("/{}", "a".repeat(255));
        assert_eq!(k.entry(&short), format!("u1/{}", "a".repeat(255)));
        assert_eq!(k.classify(&k.entry(&short)), Some(Visible::Entry(short)));
        // A spelled-out key for a path that is stored shortened is not that path's key.
        let spelled = format!("u1/{}", escape(&"é".repeat(100)));
        assert_eq!(k.classify(&spelled), None);
        // Too long as a whole: hashed under .supabash-long.
        let deep = format!("/{}", vec!["d".repeat(200); 6].join("/"));
        let key = k.entry(&deep);
        assert!(
            key.starts_with("u1/.supabash-long/") && key.len() < 200,
            "{key}"
        );
        assert_eq!(k.classify(&key), Some(Visible::Named { directory: false }));
        let dir = k.directory(&deep);
        assert_eq!(k.classify(&dir), Some(Visible::Named { directory: true }));
        let e = Entry {
            kind: EntryKind::File,
            mode: 0o644,
            mtime_ms: 0,
            hash: Some("0".repeat(64)),
            size: 0,
            target: None,
        };
        let m = k.metadata(&deep, &e);
        assert_eq!(
            k.named_path(&key, false, &m).as_deref(),
            Some(deep.as_str())
        );
        assert_eq!(k.named_path(&dir, false, &m), None, "not the path's key");
        assert_eq!(k.metadata("/a", &e).get("supabash_path"), None);
    }

    #[test]
    fn prefixes_leave_room_for_every_key() {
        assert!(check_prefix_room("u1/").is_ok());
        // 4 segments of 223 bytes and their slashes: exactly the longest prefix.
        let longest = format!("{}/", "p".repeat(223)).repeat(4);
        assert_eq!(longest.len(), MAX_PREFIX_BYTES);
        assert!(check_prefix_room(&longest).is_ok());
        let e = check_prefix_room(&format!("q{longest}")).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidArgument);
        assert!(check_prefix_room(&format!("{}/x/", "p".repeat(256))).is_err());
    }

    /// A path of 1 to 16 segments of 1 to 100 characters from a mix of one- to four-byte
    /// characters (so segments reach 255 bytes and paths 4,096).
    fn any_path() -> impl Strategy<Value = String> {
        proptest::collection::vec("[a-zA-Z0-9 _.!~%*é語😀?#&-]{1,100}", 1..16).prop_filter_map(
            "valid path",
            |segs| {
                let p = format!("/{}", segs.join("/"));
                path::validate(&p).is_ok().then_some(p)
            },
        )
    }

    proptest! {
        /// Every valid path has keys Storage accepts (characters, segment and key limits) that
        /// name it: spelled out and decoded, or named by the metadata written with it.
        #[test]
        fn every_path_has_a_storable_key(p in any_path()) {
            let k = Keys::new("2b7e1c4e-0f5a-4c8e-9a52-0c1d3e5f7a9b/");
            let e = Entry { kind: EntryKind::File, mode: 0o644, mtime_ms: 0, hash: None, size: 0, target: None };
            let d = Entry { kind: EntryKind::Directory, ..e.clone() };
            for (key, entry, directory) in [(k.entry(&p), &e, false), (k.directory(&p), &d, true)] {
                prop_assert!(storage_accepts(&key), "{}", key);
                match k.classify(&key) {
                    Some(Visible::Entry(q)) => prop_assert!(!directory && q == p),
                    Some(Visible::Directory(q)) => prop_assert!(directory && q == p),
                    Some(Visible::Named { directory: dir }) => {
                        prop_assert_eq!(dir, directory);
                        let m = k.metadata(&p, entry);
                        prop_assert_eq!(k.named_path(&key, directory, &m), Some(p.clone()));
                    }
                    other => prop_assert!(false, "{:?}", other),
                }
            }
        }

        /// Different paths have different keys.
        #[test]
        fn keys_are_injective(a in any_path(), b in any_path()) {
            prop_assume!(a != b);
            let k = Keys::new("u/");
            prop_assert_ne!(k.entry(&a), k.entry(&b));
            prop_assert_ne!(k.directory(&a), k.directory(&b));
            prop_assert_ne!(k.entry(&a), k.directory(&b));
        }

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

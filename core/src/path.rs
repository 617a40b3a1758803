//! Workspace path rules, shared by the extension (which refuses anything non-canonical) and the
//! client (which resolves `.` and `..` first, then applies the same checks).
//!
//! A document path is absolute, uses `/` as its only separator, has no empty, `.` or `..`
//! segment, no trailing slash, no control character, no backslash, no percent-encoded dot or
//! separator (`%2e`, `%2f`, `%5c` in any case), no invisible character (so two different paths
//! never look the same to a person, see [`is_invisible`]), no reserved `.supabash` segment, and
//! does not lie under a shell-owned root (`/tmp`, `/dev`, `/proc`, `/bin`, `/usr`).

use std::fmt;

/// Longest accepted path, in UTF-8 bytes.
pub const MAX_PATH_BYTES: usize = 4096;
/// Longest accepted segment, in UTF-8 bytes.
pub const MAX_SEGMENT_BYTES: usize = 255;
/// Roots that belong to the shell and never enter a commit.
pub const SHELL_OWNED_ROOTS: [&str; 5] = ["/tmp", "/dev", "/proc", "/bin", "/usr"];
/// The reserved segment name; any segment equal to it or starting with `.supabash-` is refused.
pub const RESERVED_SEGMENT: &str = ".supabash";

/// Why a path was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathError {
    Empty,
    NotAbsolute,
    Root,
    TrailingSlash,
    EmptySegment,
    DotSegment,
    EscapesRoot,
    ControlCharacter,
    InvisibleCharacter,
    Backslash,
    PercentEncoded,
    Reserved,
    ShellOwned,
    TooLong,
    SegmentTooLong,
}

impl PathError {
    /// A short, stable reason code (used in error details).
    pub fn reason(self) -> &'static str {
        match self {
            PathError::Empty => "empty",
            PathError::NotAbsolute => "not-absolute",
            PathError::Root => "root",
            PathError::TrailingSlash => "trailing-slash",
            PathError::EmptySegment => "empty-segment",
            PathError::DotSegment => "dot-segment",
            PathError::EscapesRoot => "escapes-root",
            PathError::ControlCharacter => "control-character",
            PathError::InvisibleCharacter => "invisible-character",
            PathError::Backslash => "backslash",
            PathError::PercentEncoded => "percent-encoded-separator",
            PathError::Reserved => "reserved-segment",
            PathError::ShellOwned => "shell-owned",
            PathError::TooLong => "too-long",
            PathError::SegmentTooLong => "segment-too-long",
        }
    }
}

impl fmt::Display for PathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = match self {
            PathError::Empty => "path is empty",
            PathError::NotAbsolute => "path must start with /",
            PathError::Root => "the root directory is not a document",
            PathError::TrailingSlash => "path must not end with /",
            PathError::EmptySegment => "path has an empty segment (//)",
            PathError::DotSegment => "path has a . or .. segment",
            PathError::EscapesRoot => "path climbs above the root",
            PathError::ControlCharacter => "path contains a control character",
            PathError::InvisibleCharacter => {
                "path contains an invisible or look-alike character (a Unicode format character such as a bidi override or zero-width space, a variation selector, a filler, or a space other than U+0020)"
            }
            PathError::Backslash => "path contains a backslash",
            PathError::PercentEncoded => "path contains a percent-encoded dot or separator",
            PathError::Reserved => "path uses the reserved .supabash segment",
            PathError::ShellOwned => {
                "path lies under a shell-owned root (/tmp /dev /proc /bin /usr)"
            }
            PathError::TooLong => "path is longer than 4096 bytes",
            PathError::SegmentTooLong => "a path segment is longer than 255 bytes",
        };
        f.write_str(text)
    }
}

impl std::error::Error for PathError {}

/// Code points that render as nothing or as a plain space: Unicode's format characters
/// (General Category Cf: bidi controls, zero-width spaces and joiners, the BOM, tags, ...),
/// variation selectors, Hangul and braille fillers, the combining grapheme joiner, and every
/// space other than U+0020.
const INVISIBLE: &[(u32, u32)] = &[
    (0x00A0, 0x00A0),
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x0600, 0x0605),
    (0x061C, 0x061C),
    (0x06DD, 0x06DD),
    (0x070F, 0x070F),
    (0x0890, 0x0891),
    (0x08E2, 0x08E2),
    (0x115F, 0x1160),
    (0x1680, 0x1680),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x2000, 0x200F),
    (0x2028, 0x202F),
    (0x205F, 0x206F),
    (0x2800, 0x2800),
    (0x3000, 0x3000),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF9, 0xFFFB),
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x1343F),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
];

/// True for a character a person cannot see in a path (the ranges of `INVISIBLE`).
pub fn is_invisible(c: char) -> bool {
    let c = c as u32;
    INVISIBLE.iter().any(|&(lo, hi)| (lo..=hi).contains(&c))
}

fn check_characters(path: &str) -> Result<(), PathError> {
    if path.chars().any(char::is_control) {
        return Err(PathError::ControlCharacter);
    }
    if path.chars().any(is_invisible) {
        return Err(PathError::InvisibleCharacter);
    }
    if path.contains('\\') {
        return Err(PathError::Backslash);
    }
    let lower = path.to_ascii_lowercase();
    if ["%2e", "%2f", "%5c"].iter().any(|p| lower.contains(p)) {
        return Err(PathError::PercentEncoded);
    }
    Ok(())
}

fn check_segment(segment: &str) -> Result<(), PathError> {
    if segment.len() > MAX_SEGMENT_BYTES {
        return Err(PathError::SegmentTooLong);
    }
    if segment == RESERVED_SEGMENT || segment.starts_with(".supabash-") {
        return Err(PathError::Reserved);
    }
    Ok(())
}

/// True when `path` (canonical) is a shell-owned root or lies below one.
pub fn is_shell_owned(path: &str) -> bool {
    SHELL_OWNED_ROOTS
        .iter()
        .any(|root| path == *root || path.strip_prefix(root).is_some_and(|r| r.starts_with('/')))
}

/// Checks that `path` is already a canonical document path. This is the rule the database
/// applies to every path it is given.
pub fn validate(path: &str) -> Result<&str, PathError> {
    if path.is_empty() {
        return Err(PathError::Empty);
    }
    if path.len() > MAX_PATH_BYTES {
        return Err(PathError::TooLong);
    }
    if !path.starts_with('/') {
        return Err(PathError::NotAbsolute);
    }
    if path == "/" {
        return Err(PathError::Root);
    }
    if path.ends_with('/') {
        return Err(PathError::TrailingSlash);
    }
    check_characters(path)?;
    for segment in path[1..].split('/') {
        match segment {
            "" => return Err(PathError::EmptySegment),
            "." | ".." => return Err(PathError::DotSegment),
            s => check_segment(s)?,
        }
    }
    if is_shell_owned(path) {
        return Err(PathError::ShellOwned);
    }
    Ok(path)
}

/// Resolves `input` against the directory `cwd` (itself absolute), folding `.`, `..` and repeated
/// slashes, and refusing to climb above `/`. Returns `/` for the root. The result passes the
/// character, segment and length rules but may be `/` or shell-owned: callers decide what to do
/// with those (the staged tree keeps `/tmp` as scratch).
pub fn resolve(cwd: &str, input: &str) -> Result<String, PathError> {
    if input.is_empty() {
        return Err(PathError::Empty);
    }
    check_characters(input)?;
    let mut segments: Vec<&str> = Vec::new();
    let joined_cwd = if input.starts_with('/') { "" } else { cwd };
    check_characters(joined_cwd)?;
    for part in joined_cwd.split('/').chain(input.split('/')) {
        match part {
            "" | "." => {}
            ".." => {
                if segments.pop().is_none() {
                    return Err(PathError::EscapesRoot);
                }
            }
            s => {
                check_segment(s)?;
                segments.push(s);
            }
        }
    }
    let out = format!("/{}", segments.join("/"));
    if out.len() > MAX_PATH_BYTES {
        return Err(PathError::TooLong);
    }
    Ok(out)
}

/// The parent directory of a canonical path (`/` for top-level entries).
pub fn parent(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}

/// The last segment of a canonical path.
pub fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn accepts_canonical_paths() {
        for p in [
            "/a",
            "/notes/été.md",
            "/a/b/c.txt",
            "/日本/語",
            "/tmpx/a",
            "/.hidden",
            "/a b",
        ] {
            assert_eq!(validate(p), Ok(p), "{p}");
        }
    }

    #[test]
    fn refuses_each_rule() {
        let cases = [
            ("", PathError::Empty),
            ("a", PathError::NotAbsolute),
            ("/", PathError::Root),
            ("/a/", PathError::TrailingSlash),
            ("/a//b", PathError::EmptySegment),
            ("/a/./b", PathError::DotSegment),
            ("/a/../b", PathError::DotSegment),
            ("/a\u{0}b", PathError::ControlCharacter),
            ("/a\nb", PathError::ControlCharacter),
            ("/a\u{7f}", PathError::ControlCharacter),
            ("/invoice\u{202e}fdp.exe", PathError::InvisibleCharacter),
            ("/a\u{200b}b", PathError::InvisibleCharacter),
            ("/a\u{feff}", PathError::InvisibleCharacter),
            ("/a\u{00a0}b", PathError::InvisibleCharacter),
            ("/a\u{3000}b", PathError::InvisibleCharacter),
            ("/e\u{fe0f}", PathError::InvisibleCharacter),
            ("/\u{e0041}tag", PathError::InvisibleCharacter),
            ("/a\u{2066}b\u{2069}", PathError::InvisibleCharacter),
            ("/a\\b", PathError::Backslash),
            ("/a%2Fb", PathError::PercentEncoded),
            ("/%2e%2E/x", PathError::PercentEncoded),
            ("/a%5cb", PathError::PercentEncoded),
            ("/.supabash/x", PathError::Reserved),
            ("/a/.supabash-directory", PathError::Reserved),
            ("/tmp", PathError::ShellOwned),
            ("/tmp/x", PathError::ShellOwned),
            ("/usr/bin/env", PathError::ShellOwned),
            ("/proc/1", PathError::ShellOwned),
        ];
        for (p, e) in cases {
            assert_eq!(validate(p), Err(e), "{p:?}");
        }
        assert_eq!(
            validate(&format!("/{}", "a".repeat(256))),
            Err(PathError::SegmentTooLong)
        );
        let long = "/abcdefgh".repeat(500);
        assert_eq!(validate(&long), Err(PathError::TooLong));
    }

    #[test]
    fn resolves_relative_paths() {
        assert_eq!(resolve("/a/b", "../c").unwrap(), "/a/c");
        assert_eq!(resolve("/a", "./x//y/.").unwrap(), "/a/x/y");
        assert_eq!(resolve("/a", "/z").unwrap(), "/z");
        assert_eq!(resolve("/", "..").unwrap_err(), PathError::EscapesRoot);
        assert_eq!(resolve("/", "a/..").unwrap(), "/");
        assert_eq!(
            resolve("/", "a/%2e%2e").unwrap_err(),
            PathError::PercentEncoded
        );
        assert_eq!(parent("/a/b"), "/a");
        assert_eq!(parent("/a"), "/");
        assert_eq!(file_name("/a/b.md"), "b.md");
    }

    /// The first and last code point of every invisible range.
    fn invisible_edges() -> Vec<char> {
        INVISIBLE
            .iter()
            .flat_map(|&(lo, hi)| [lo, hi])
            .filter_map(char::from_u32)
            .collect()
    }

    proptest! {
        #[test]
        fn invisible_characters_are_refused_anywhere(pre in "[a-z]{0,8}", post in "[a-z]{0,8}", c in proptest::sample::select(invisible_edges())) {
            let path = format!("/{pre}{c}{post}");
            prop_assert_eq!(validate(&path), Err(PathError::InvisibleCharacter));
            prop_assert_eq!(resolve("/", &format!("{pre}{c}{post}")), Err(PathError::InvisibleCharacter));
        }

        #[test]
        fn validate_never_panics(s in "\\PC*") {
            let _ = validate(&s);
        }

        #[test]
        fn resolve_never_panics_and_yields_canonical(cwd in "/[a-z./]{0,20}", s in "[a-zé./%2eE\\\\]{0,40}") {
            if let Ok(p) = resolve(&cwd, &s) {
                prop_assert!(p.starts_with('/'));
                prop_assert!(!p.contains("//"));
                if p != "/" && !is_shell_owned(&p) {
                    prop_assert_eq!(validate(&p), Ok(p.as_str()));
                }
            }
        }

        #[test]
        fn validated_paths_are_fixed_points_of_resolve(segs in proptest::collection::vec("[a-zA-Z0-9_é語-]{1,12}", 1..6)) {
            let p = format!("/{}", segs.join("/"));
            if validate(&p).is_ok() {
                prop_assert_eq!(resolve("/", &p).unwrap(), p);
            }
        }
    }
}

//! `supabash_grep`: search the files of one revision on the server, a page of matching lines at
//! a time, with a linear-time regex engine (no catastrophic backtracking), within the call's
//! decode budget.

use super::declare::{request, rpc, WorkspaceRequest};
use super::Rpc;
use serde::{Deserialize, Serialize};
use serde_with::skip_serializing_none;

/// Longest pattern, in bytes.
pub const MAX_GREP_PATTERN_BYTES: usize = 4096;
/// Most globs in `paths`, and the longest one, in bytes.
pub const MAX_GREP_GLOBS: usize = 64;
pub const MAX_GREP_GLOB_BYTES: usize = 1024;
/// Matching lines per page when the request names no `max_matches`, and the most.
pub const DEFAULT_GREP_MATCHES: i64 = 100;
pub const MAX_GREP_MATCHES: i64 = 1000;
/// The most `context_lines` (before and after each match).
pub const MAX_GREP_CONTEXT_LINES: i32 = 10;
/// A line longer than this is cut (at a character boundary) in the answer.
pub const MAX_GREP_LINE_BYTES: usize = 1024;

request! {
    "supabash_grep", mutates = false, GrepPage, workspace = [Read];
    /// `supabash_grep`: the lines of the files at `revision` (default: the head; a time is
    /// accepted as everywhere) that match `pattern` (a regular expression, or with
    /// `fixed_strings` a literal), in path then line order, at most `max_matches` a page.
    /// `paths` are globs that keep the files they match (a glob without `/` matches a file
    /// name, one with `/` the path from the root; `**` crosses directories, and a glob that
    /// matches a directory keeps what is below it). Binary files (holding a NUL byte) and
    /// redacted versions are never searched. `cursor` is the previous page's `nextCursor`.
    pub struct Grep {
        pub workspace_id: String,
        pub pattern: String,
        pub revision: Option<String>,
        pub paths: Option<Vec<String>>,
        pub ignore_case: Option<bool>,
        pub fixed_strings: Option<bool>,
        pub max_matches: Option<i32>,
        pub context_lines: Option<i32>,
        pub cursor: Option<String>,
        pub delegated_grant: Option<String>,
    }
}

/// One matching line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GrepMatch {
    pub path: String,
    /// 1-based line number, and the 1-based byte column of the first match in the line.
    pub line: i64,
    pub column: i64,
    /// The line without its newline (invalid UTF-8 replaced, cut at
    /// [`MAX_GREP_LINE_BYTES`]).
    pub text: String,
    /// Up to `context_lines` lines before and after it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub before: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub after: Vec<String>,
}

/// A page of `supabash_grep`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GrepPage {
    /// The revision searched (null for an empty workspace) and its position.
    pub revision: Option<String>,
    pub position: Option<i64>,
    pub matches: Vec<GrepMatch>,
    /// Files searched on this page, binary files skipped, and the plain bytes decoded.
    pub files_searched: i64,
    pub binary_skipped: i64,
    pub bytes_searched: i64,
    /// The skipped binary files of this page in which the pattern matches a line (as `grep`
    /// without `-I` reports them: "Binary file ... matches"), in path order.
    #[serde(default)]
    pub binary_matches: Vec<String>,
    /// Present when more may follow (the page is full, or the decode budget ran out): pass it
    /// back as `cursor`, with the same `revision`.
    pub next_cursor: Option<String>,
}

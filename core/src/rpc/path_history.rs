//! `supabash_path_history`: the versions of one path, a page at a time. The cost follows the
//! path's versions (the entries index by path), never the workspace's revisions.

use super::declare::{request, rpc, WorkspaceRequest};
use super::Rpc;
use serde::{Deserialize, Serialize};
use serde_with::skip_serializing_none;

/// Revisions per page when the request names no `page_size`.
pub const DEFAULT_PATH_HISTORY_PAGE: i64 = 100;
/// The largest `page_size`.
pub const MAX_PATH_HISTORY_PAGE: i64 = 1000;
/// How many moves `follow_moves` follows back at most; older moves end the history there.
pub const MAX_FOLLOWED_MOVES: usize = 1000;

request! {
    "supabash_path_history", mutates = false, PathHistoryPage, workspace = [History];
    /// `supabash_path_history`: what each revision that touched `path` did to it, newest
    /// first (`oldest_first` for the other order), `page_size` revisions a page (1 to
    /// [`MAX_PATH_HISTORY_PAGE`], default [`DEFAULT_PATH_HISTORY_PAGE`]); `cursor` is the
    /// previous page's `nextCursor`. With `follow_moves`, a version that arrived by a move
    /// continues with the history of the path it came from, before the move.
    pub struct PathHistory {
        pub workspace_id: String,
        pub path: String,
        pub cursor: Option<String>,
        pub page_size: Option<i32>,
        pub follow_moves: Option<bool>,
        pub oldest_first: Option<bool>,
        pub delegated_grant: Option<String>,
    }
}

/// What a revision did to the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PathOp {
    /// The path came to exist (it did not exist just before).
    Add,
    /// Its content or metadata changed.
    Modify,
    /// It was deleted.
    Delete,
    /// A file moved: `from` is where it was, `path` where it went (either may be the path
    /// asked about).
    Move,
}

/// One version of a path: what one revision did to it.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PathVersion {
    /// The revision; null when purge removed it (its files at retained revisions stay).
    pub revision: Option<String>,
    pub position: i64,
    pub op: PathOp,
    /// The path the file is at after this revision.
    pub path: String,
    /// For a move: the path it moved from.
    pub from: Option<String>,
    /// Rendered content size and hash after the revision; null for a delete or when a
    /// redaction removed them.
    pub size: Option<i64>,
    pub hash: Option<String>,
    /// True when a redaction removed this version's content (or its receipt's hashes).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub redacted: bool,
    /// Who committed it and when (null with a purged revision).
    pub actor: Option<String>,
    pub committed_at: Option<String>,
}

/// A page of `supabash_path_history`. A page holds whole revisions: one revision that moves a
/// file away from the path and writes a new file there gives two versions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PathHistoryPage {
    pub versions: Vec<PathVersion>,
    /// Pass it back for the next page; null on the last page.
    pub next_cursor: Option<String>,
}

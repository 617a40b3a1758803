//! `supabash_list_directory`: one directory's direct children at a revision, a page at a time,
//! so a client can open a large tree without its whole manifest.

use super::answers::File;
use super::declare::{request, rpc, WorkspaceRequest};
use super::Rpc;
use serde::{Deserialize, Serialize};
use serde_with::skip_serializing_none;

/// Children per page when the request names no `page_size`.
pub const DEFAULT_DIRECTORY_PAGE: i32 = 1000;
/// The largest `page_size`.
pub const MAX_DIRECTORY_PAGE: i32 = 10_000;

request! {
    "supabash_list_directory", mutates = false, DirectoryPage, workspace = [Read];
    /// `supabash_list_directory`: the direct children of directory `path` (`/` for the root) at
    /// a revision (default: the head), in the order of their paths (a directory sorts as its
    /// path followed by `/`), `page_size` at a time (1 to [`MAX_DIRECTORY_PAGE`], default
    /// [`DEFAULT_DIRECTORY_PAGE`]). `cursor` is the previous page's `nextCursor`. With `totals`
    /// the answer also counts the whole tree's files and bytes (a scan of the tree's index, for
    /// a client choosing how to open it).
    pub struct ListDirectory {
        pub workspace_id: String,
        pub path: String,
        pub revision: Option<String>,
        pub cursor: Option<String>,
        pub page_size: Option<i32>,
        pub totals: Option<bool>,
        pub delegated_grant: Option<String>,
    }
}

/// A page of `supabash_list_directory`. A directory exists while any entry lies below it or
/// while it has its own entry (an explicit directory, kept even when empty); a path that
/// names no directory lists nothing.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DirectoryPage {
    pub workspace_id: String,
    /// The revision listed (null for an empty workspace) and its position.
    pub revision: Option<String>,
    pub position: Option<i64>,
    /// The directory listed, canonical.
    pub path: String,
    /// Files directly in the directory, without bodies (full paths, as the manifest has them).
    pub files: Vec<File>,
    /// Names of the directories directly in it.
    pub directories: Vec<String>,
    /// The entries of those of them that have their own (kind `directory`, with mode and
    /// time): an empty directory always does.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub directory_entries: Vec<File>,
    /// Present when more children follow: the `cursor` of the next page.
    pub next_cursor: Option<String>,
    /// As in the manifest: the redaction epoch a commit of a tree loaded now must send, and the
    /// restore floor.
    #[serde(default)]
    pub redaction_epoch: i64,
    pub restore_floor: Option<i64>,
    /// As in the manifest: present (`true`) when the workspace stores plain files only.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub files_only: bool,
    /// With `totals`: files and rendered bytes of the whole tree at the revision.
    pub tree_files: Option<i64>,
    pub tree_bytes: Option<i64>,
}

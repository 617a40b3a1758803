//! Search of a lazily opened tree on the server: `supabash_grep` searches the base revision's
//! bodies where they are (none travel), and the tree says which of its answers still hold (the
//! paths unchanged since the base) and which files the caller must search itself (those
//! staged: written, moved or created since, not yet committed).

use super::{Body, Inner, Node, StagedTree};
use crate::error::Result;
use supabash_core::path;
use supabash_core::rpc::grep::{GrepPage, MAX_GREP_MATCHES};

/// A `supabash_grep` request as a tree makes it of its source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerGrep {
    pub pattern: String,
    /// Globs that keep the files they match (see `supabash_grep`); none: every file.
    pub paths: Option<Vec<String>>,
    pub ignore_case: bool,
    pub max_matches: i32,
    pub cursor: Option<String>,
}

/// One line the server matched in a file the tree still holds unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerMatch {
    pub path: String,
    /// 1-based.
    pub line: usize,
    pub text: String,
}

/// What [`StagedTree::search_on_server`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerSearch {
    /// Matching lines of unchanged files, in path then line order.
    pub matches: Vec<ServerMatch>,
    /// More matches may follow on the server.
    pub truncated: bool,
    /// Staged files under the directory: search them locally.
    pub local: Vec<String>,
    /// Base files the server did not search because they are binary (hold a NUL byte).
    pub binary_skipped: u64,
    /// Those of them, still unchanged in the tree, in which the pattern matches a line.
    pub binary_matches: Vec<String>,
}

/// Whether `c` is special in a `supabash_grep` glob.
fn glob_special(c: char) -> bool {
    matches!(c, '*' | '?' | '[' | ']' | '{' | '}' | '\\' | '!')
}

impl Inner {
    /// Whether `p` holds what it held in the base: under a directory not listed yet, or a
    /// lazy body of the base at its own path.
    fn unchanged(&self, p: &str, revision: &str) -> bool {
        let mut dir = path::parent(p);
        while dir != "/" {
            if self.unloaded.dirs.contains(dir) {
                return true;
            }
            dir = path::parent(dir);
        }
        matches!(self.nodes.get(p), Some(Node::File { body: Body::Lazy(l), .. })
            if l.path == p && l.revision == revision)
    }

    /// Whether a base body is still on the server only: under a directory not listed yet, or
    /// a listed file whose body was never read.
    fn holds_lazy_bodies(&self) -> bool {
        !self.unloaded.dirs.is_empty()
            || self.nodes.values().any(|n| {
                matches!(n, Node::File { body: Body::Lazy(l), .. } if !self.loaded.contains_key(l))
            })
    }

    /// The regular files under `dir` whose content is not the base's at their path.
    fn staged_files(&self, dir: &str, revision: &str) -> Vec<String> {
        let prefix = if dir == "/" {
            "/".to_owned()
        } else {
            format!("{dir}/")
        };
        self.nodes
            .range(prefix.clone()..)
            .take_while(|(p, _)| p.starts_with(&prefix))
            .filter(|(p, n)| matches!(n, Node::File { .. }) && !self.unchanged(p, revision))
            .map(|(p, _)| p.clone())
            .collect()
    }
}

impl StagedTree {
    /// Searches the files under `dir` for `pattern` (a regular expression): the base's on the
    /// server, up to `max` matching lines, and names the staged files the caller searches
    /// itself. `None` when there is nothing to gain (every base body was read already), the
    /// source cannot search, or `dir` is not plain.
    pub async fn search_on_server(
        &self,
        pattern: &str,
        dir: &str,
        ignore_case: bool,
        max: usize,
    ) -> Option<Result<ServerSearch>> {
        let source = self.source.clone()?;
        if dir.chars().any(glob_special) {
            return None;
        }
        let (revision, local) = {
            let inner = self.lock();
            if !inner.holds_lazy_bodies() {
                return None;
            }
            let revision = inner.base_revision.clone()?;
            let local = inner.staged_files(dir, &revision);
            (revision, local)
        };
        let mut found = ServerSearch {
            local,
            ..ServerSearch::default()
        };
        let mut cursor = None;
        loop {
            let request = ServerGrep {
                pattern: pattern.to_owned(),
                paths: (dir != "/").then(|| vec![dir.to_owned()]),
                ignore_case,
                max_matches: (max + 1).min(MAX_GREP_MATCHES as usize) as i32,
                cursor: cursor.take(),
            };
            let page: GrepPage = match source.grep(&revision, request).await? {
                Ok(page) => page,
                Err(e) => return Some(Err(e)),
            };
            found.binary_skipped += page.binary_skipped.max(0) as u64;
            {
                let inner = self.lock();
                found.binary_matches.extend(
                    page.binary_matches
                        .into_iter()
                        .filter(|p| inner.unchanged(p, &revision)),
                );
                found.matches.extend(
                    page.matches
                        .into_iter()
                        .filter(|m| inner.unchanged(&m.path, &revision))
                        .map(|m| ServerMatch {
                            path: m.path,
                            line: m.line.max(1) as usize,
                            text: m.text,
                        }),
                );
            }
            if found.matches.len() > max {
                found.matches.truncate(max);
                found.truncated = true;
                return Some(Ok(found));
            }
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => return Some(Ok(found)),
            }
        }
    }
}

//! `supabash_list_directory`: a directory's direct children at a revision, paged. The scan
//! walks the tree's path index in order and jumps over every subdirectory's contents (a loose
//! index scan: one probe per subdirectory, one row per file), so a listing costs what the
//! directory holds, not what the tree holds. Probes read index ranges of what
//! `entries::visible_files` makes visible (a fork lists its sources' files too); at the head of
//! a workspace without fork sources, two subdirectories in a row switch to batches of one
//! recursive statement (`entries::children_at_head`) that jumps over each subdirectory inside
//! the executor instead of one statement per subdirectory; a batch that met mostly files goes
//! back to ranges, which read many files at once where the walk descends once a row.

use super::Call;
use crate::pg::args;
use crate::pg::fail::{invalid, Outcome};
use crate::pg::schema::Schema;
use crate::rpc::read;
use crate::store::access::{self, Workspace};
use crate::store::entries::{self, FileRow};
use crate::store::revisions;
use supabash_core::capability::Operation;
use supabash_core::posix::Kind;
use supabash_core::rpc::listing::{
    DirectoryPage, ListDirectory, DEFAULT_DIRECTORY_PAGE, MAX_DIRECTORY_PAGE,
};

/// Rows one probe reads at most: a probe that meets a subdirectory wastes the rest of its rows.
const MAX_PROBE: i64 = 1024;

/// Where a scan resumes: after a file's path, or at the first path past a subdirectory.
enum Resume {
    After(String),
    From(String),
}

/// The directory `path` names, canonical (`/` or a valid path).
fn directory(path: &str) -> Outcome<String> {
    if path == "/" {
        Ok("/".to_owned())
    } else {
        args::checked_path(path)
    }
}

/// The prefix every path below `dir` starts with, and the first string past all of them
/// (`/` is followed by `0` in the byte order the `"C"` collation of paths sorts by).
fn bounds(dir: &str) -> (String, String) {
    let stem = if dir == "/" { "" } else { dir };
    (format!("{stem}/"), format!("{stem}0"))
}

/// Decodes a cursor: a child's path (a file), or a child's path and `/` (a directory).
fn resume_at(prefix: &str, cursor: Option<&str>) -> Outcome<Resume> {
    let Some(cursor) = cursor else {
        return Ok(Resume::After(prefix.to_owned()));
    };
    let bad = || invalid("cursor is not a nextCursor of this directory");
    let name = cursor.strip_prefix(prefix).ok_or_else(bad)?;
    match name.strip_suffix('/') {
        Some(dir) if !dir.is_empty() && !dir.contains('/') => {
            Ok(Resume::From(format!("{prefix}{dir}0")))
        }
        None if !name.is_empty() && !name.contains('/') => Ok(Resume::After(cursor.to_owned())),
        _ => Err(bad()),
    }
}

/// The next at most `limit` visible rows below the directory from `at`, in path order.
fn probe(
    schema: Schema,
    ws: &Workspace,
    position: Option<i64>,
    at: &Resume,
    upper: &str,
    limit: i64,
) -> Outcome<Vec<FileRow>> {
    let (op, from) = match at {
        Resume::After(p) => (">", p),
        Resume::From(p) => (">=", p),
    };
    entries::visible_files(
        schema,
        ws,
        position,
        &format!("e.path {op} $5 AND e.path < $6"),
        "LIMIT $7",
        vec![from.as_str().into(), upper.into(), limit.into()],
        true,
    )
}

/// Files and rendered bytes of the whole tree at a revision: those stored with it at commit,
/// else (0.5.0, or a revision whose totals are unknown) counted by scan.
fn totals(
    call: &Call,
    ws: &Workspace,
    revision: &str,
    position: Option<i64>,
) -> Outcome<(i64, i64)> {
    match revisions::stored_totals(call.schema, &ws.id, revision)? {
        Some(totals) => Ok(totals),
        None => revisions::tree_totals(ws, position),
    }
}

/// Rows a walk batch asks for first: a few, since a walk that meets mostly files goes back to
/// ranges after one batch.
const FIRST_WALK: i64 = 8;

/// Rows still wanted for the page, and one more to know whether another page follows.
fn remaining(want: usize, listed: usize) -> i64 {
    (want - listed) as i64 + 1
}

/// `supabash_list_directory`.
pub fn list_directory(call: &Call, req: ListDirectory) -> Outcome<DirectoryPage> {
    let ws = access::open(&req, &[Operation::Read])?;
    let dir = directory(&req.path)?;
    let page_size = args::page_size(
        req.page_size,
        DEFAULT_DIRECTORY_PAGE.into(),
        MAX_DIRECTORY_PAGE.into(),
    )?;
    let (prefix, upper) = bounds(&dir);
    let mut at = resume_at(&prefix, req.cursor.as_deref())?;
    let pin = revisions::resolve_time_opt(&ws.id, req.revision.as_deref())?;
    let (revision, position) = read::pinned(&ws, pin.as_deref())?;
    let mut files = Vec::new();
    let mut directories = Vec::new();
    let mut explicit = Vec::new();
    let mut next_cursor = None;
    let want = page_size as usize;
    // Probes read index ranges: they start small (a directory of directories needs one row
    // each) and grow while they meet only files. Where the walk can skip (`walks`), two
    // subdirectories in a row switch to the recursive walk, which jumps over each subdirectory
    // inside one statement; a walk batch that met more files than subdirectories switches back
    // to ranges, so a run of files never costs a descent each.
    let mut limit = 1;
    let walks = ws.sources.is_empty() && (position.is_none() || position == ws.head_position);
    let mut walking = false;
    // The last row met was a subdirectory: a second one in a row starts a walk.
    let mut after_directory = false;
    'scan: while revision.is_some() {
        let rows = if walking {
            let (after, from) = match &at {
                Resume::After(p) => (true, p),
                Resume::From(p) => (false, p),
            };
            entries::children_at_head(call.schema, &ws, &prefix, from, after, &upper, limit)?
        } else {
            probe(call.schema, &ws, position, &at, &upper, limit)?
        };
        let full = rows.len() as i64 == limit;
        let (mut met_files, mut met_directories) = (0, 0);
        for row in rows {
            if files.len() + directories.len() == want {
                next_cursor = Some(match &at {
                    Resume::After(p) => p.clone(),
                    Resume::From(p) => format!("{}/", &p[..p.len() - 1]),
                });
                break 'scan;
            }
            let name = &row.path[prefix.len()..];
            // A subdirectory: below it (implied by its entries), or its own entry (an
            // explicit directory, perhaps empty), which sorts just before its entries.
            let own_entry = !name.contains('/') && row.kind == Kind::Directory;
            let slash = name.find('/').or(own_entry.then_some(name.len()));
            if let Some(slash) = slash {
                let name = name[..slash].to_owned();
                if own_entry {
                    explicit.push(row);
                }
                at = Resume::From(format!("{prefix}{name}0"));
                directories.push(name);
                met_directories += 1;
                let second = std::mem::replace(&mut after_directory, true);
                if walking {
                    continue;
                }
                if walks && second {
                    walking = true;
                    limit = FIRST_WALK.min(remaining(want, files.len() + directories.len()));
                } else {
                    limit = 1;
                }
                continue 'scan;
            }
            at = Resume::After(row.path.clone());
            files.push(row);
            met_files += 1;
            after_directory = false;
        }
        if !full {
            break;
        }
        if walking && met_files > met_directories {
            walking = false;
            limit = 4;
        } else if walking {
            limit = (limit * 4).min(remaining(want, files.len() + directories.len()));
        } else {
            limit = (limit * 4).min(MAX_PROBE);
        }
    }
    read::with_link_targets(&ws, &mut files)?;
    let files = files.into_iter().map(read::file).collect();
    let directory_entries = explicit.into_iter().map(read::file).collect();
    let (tree_files, tree_bytes) = match req.totals {
        Some(true) if revision.is_some() => {
            let at = revision.as_deref().expect("a revision");
            let (n, bytes) = totals(call, &ws, at, position)?;
            (Some(n), Some(bytes))
        }
        Some(true) => (Some(0), Some(0)),
        _ => (None, None),
    };
    Ok(DirectoryPage {
        restore_floor: crate::store::redactions::restore_floor(&ws.id)?,
        files_only: ws.files_only,
        redaction_epoch: ws.redaction_epoch,
        workspace_id: ws.id,
        revision,
        position,
        path: dir,
        files,
        directories,
        directory_entries,
        next_cursor,
        tree_files,
        tree_bytes,
    })
}

//! `supabash_list_directory`: a directory's direct children at a revision, paged. The scan
//! walks the tree's path index in order and jumps over every subdirectory's contents (a loose
//! index scan: one probe per subdirectory, one row per file), so a listing costs what the
//! directory holds, not what the tree holds. It reads what `lineage::visible_sql` makes
//! visible, so a fork lists its sources' files too.

use crate::access::{self, Workspace};
use crate::args;
use crate::db::{self, FileRow};
use crate::fail::{invalid, Fail, Outcome};
use crate::lineage;
use crate::read;
use supabash_core::capability::Operation;
use supabash_core::rpc::listing::{
    DirectoryPage, ListDirectory, DEFAULT_DIRECTORY_PAGE, MAX_DIRECTORY_PAGE,
};
use supabash_core::Marker;

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
    ws: &Workspace,
    position: Option<i64>,
    at: &Resume,
    upper: &str,
    limit: i64,
) -> Outcome<Vec<FileRow>> {
    let at_head = position.is_none() || position == ws.head_position;
    let (op, from) = match at {
        Resume::After(p) => (">", p),
        Resume::From(p) => (">=", p),
    };
    let filter = format!("e.path {op} $5 AND e.path < $6");
    let sql = format!(
        "SELECT * FROM ({}) e ORDER BY 1 LIMIT $7",
        lineage::visible_sql(ws, at_head, db::file_columns(), &filter)
    );
    let mut args = lineage::visible_args(ws, position);
    args.push(from.as_str().into());
    args.push(upper.into());
    args.push(limit.into());
    db::query_kept(&sql, &args, db::file_row)
}

/// Files and rendered bytes of the whole tree at a position.
fn totals(ws: &Workspace, position: Option<i64>) -> Outcome<(i64, i64)> {
    let at_head = position.is_none() || position == ws.head_position;
    let sql = format!(
        "SELECT count(*), coalesce(sum(coalesce(e.content_size, e.body_size)), 0)::bigint
           FROM ({}) e",
        lineage::visible_sql(ws, at_head, "e.content_size, e.body_size", "true")
    );
    let args = lineage::visible_args(ws, position);
    let row = db::query_row(&sql, &args, |r| {
        Ok((db::get::<i64>(r, 1)?, db::get::<i64>(r, 2)?))
    })?;
    Ok(row.unwrap_or((0, 0)))
}

/// `supabash_list_directory`.
pub fn list_directory(req: ListDirectory) -> Outcome<DirectoryPage> {
    let ws = access::open(&req, &[Operation::Read])?;
    let dir = directory(&req.path)?;
    let page_size = req.page_size.unwrap_or(DEFAULT_DIRECTORY_PAGE);
    if !(1..=MAX_DIRECTORY_PAGE).contains(&page_size) {
        return Err(Fail::new(
            Marker::Quota,
            format!("page_size must be between 1 and {MAX_DIRECTORY_PAGE}"),
        ));
    }
    let (prefix, upper) = bounds(&dir);
    let mut at = resume_at(&prefix, req.cursor.as_deref())?;
    let (revision, position) = read::pinned(&ws, req.revision.as_deref())?;
    let mut files = Vec::new();
    let mut directories = Vec::new();
    let mut next_cursor = None;
    let want = page_size as usize;
    let at_head = position.is_none() || position == ws.head_position;
    if revision.is_some() && at_head && ws.sources.is_empty() {
        // The common case in one statement: a workspace's own head.
        for (row, is_dir) in walk_head(&ws, &at, &prefix, &upper, want)? {
            if files.len() + directories.len() == want {
                next_cursor = Some(cursor_of(&at));
                break;
            }
            at = next_at(&prefix, &row.path, is_dir);
            if is_dir {
                directories.push(child_name(&prefix, &row.path).to_owned());
            } else {
                files.push(read::file(row));
            }
        }
        return page(
            req.totals,
            ws,
            (revision, position),
            dir,
            (files, directories),
            next_cursor,
        );
    }
    // Probes start small (a directory of directories needs one row each) and grow while they
    // meet only files.
    let mut limit = 1;
    'scan: while revision.is_some() {
        let rows = probe(&ws, position, &at, &upper, limit)?;
        let full = rows.len() as i64 == limit;
        for row in rows {
            if files.len() + directories.len() == want {
                next_cursor = Some(match &at {
                    Resume::After(p) => p.clone(),
                    Resume::From(p) => format!("{}/", &p[..p.len() - 1]),
                });
                break 'scan;
            }
            let name = &row.path[prefix.len()..];
            if let Some(slash) = name.find('/') {
                let name = name[..slash].to_owned();
                at = Resume::From(format!("{prefix}{name}0"));
                directories.push(name);
                limit = 1;
                continue 'scan;
            }
            at = Resume::After(row.path.clone());
            files.push(read::file(row));
        }
        if !full {
            break;
        }
        limit = (limit * 4).min(MAX_PROBE);
    }
    page(
        req.totals,
        ws,
        (revision, position),
        dir,
        (files, directories),
        next_cursor,
    )
}

/// The answer: a page of `dir`'s children, with the tree's totals when asked.
fn page(
    totals_wanted: Option<bool>,
    ws: Workspace,
    (revision, position): (Option<String>, Option<i64>),
    dir: String,
    (files, directories): (Vec<supabash_core::rpc::File>, Vec<String>),
    next_cursor: Option<String>,
) -> Outcome<DirectoryPage> {
    let (tree_files, tree_bytes) = match totals_wanted {
        Some(true) if revision.is_some() => {
            let (n, bytes) = totals(&ws, position)?;
            (Some(n), Some(bytes))
        }
        Some(true) => (Some(0), Some(0)),
        _ => (None, None),
    };
    Ok(DirectoryPage {
        restore_floor: crate::redact::restore_floor(&ws.id)?,
        redaction_epoch: ws.redaction_epoch,
        workspace_id: ws.id,
        revision,
        position,
        path: dir,
        files,
        directories,
        next_cursor,
        tree_files,
        tree_bytes,
    })
}

/// The cursor that resumes where `at` stands.
fn cursor_of(at: &Resume) -> String {
    match at {
        Resume::After(p) => p.clone(),
        Resume::From(p) => format!("{}/", &p[..p.len() - 1]),
    }
}

/// The child of the directory (`prefix`) that `path` lies in or is.
fn child_name<'a>(prefix: &str, path: &'a str) -> &'a str {
    let name = &path[prefix.len()..];
    name.split('/').next().unwrap_or(name)
}

/// Where the scan resumes after the child `path` lies in (a subdirectory's when `is_dir`).
fn next_at(prefix: &str, path: &str, is_dir: bool) -> Resume {
    if is_dir {
        Resume::From(format!("{prefix}{}0", child_name(prefix, path)))
    } else {
        Resume::After(path.to_owned())
    }
}

/// The loose index scan of a workspace's own head in one recursive statement: each step finds
/// the first open path past the previous child (past a subdirectory's whole contents), up to
/// `want + 1` children. Rows are file rows and whether each stands for a subdirectory.
fn walk_head(
    ws: &Workspace,
    at: &Resume,
    prefix: &str,
    upper: &str,
    want: usize,
) -> Outcome<Vec<(FileRow, bool)>> {
    // The smallest string past `p` is `p` and U+0001 (text holds no NUL).
    let from = match at {
        Resume::After(p) => format!("{p}\u{1}"),
        Resume::From(p) => p.clone(),
    };
    let cols = db::file_columns();
    let step = |bound: &str| {
        format!(
            "SELECT {cols}, strpos(substr(e.path, $3), '/') > 0 FROM supabash.entries e
              WHERE e.workspace_id = $1::uuid AND e.valid_until IS NULL
                AND e.path >= {bound} AND e.path < $4
              ORDER BY e.path LIMIT 1"
        )
    };
    let sql = format!(
        "WITH RECURSIVE walk (path, body_hash, body_size, content_hash, content_size, metadata,
                              redacted, dir) AS (
           ({first})
           UNION ALL
           SELECT n.* FROM walk w, LATERAL ({next}) n
         )
         SELECT * FROM walk LIMIT $5",
        first = step("$2"),
        next = step(
            "CASE WHEN w.dir THEN left(w.path, $3 + strpos(substr(w.path, $3), '/') - 2) || '0'
                  ELSE w.path || chr(1) END"
        ),
    );
    let start = prefix.chars().count() as i32 + 1;
    let args = [
        ws.id.as_str().into(),
        from.as_str().into(),
        start.into(),
        upper.into(),
        (want as i64 + 1).into(),
    ];
    db::query_kept(&sql, &args, |row| {
        Ok((db::file_row(row)?, db::get(row, 8)?))
    })
}

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
use crate::rpc::files::{file, with_link_targets};
use crate::rpc::pinned::Header;
use crate::store::access::{self, Workspace};
use crate::store::entries::{self, FileRow};
use crate::store::revisions;
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
    let ws = access::open(&req)?;
    let dir = directory(&req.path)?;
    let page_size = args::page_size(
        req.page_size,
        DEFAULT_DIRECTORY_PAGE.into(),
        MAX_DIRECTORY_PAGE.into(),
    )?;
    let (prefix, upper) = bounds(&dir);
    let at = resume_at(&prefix, req.cursor.as_deref())?;
    let mut page = Header::read(&ws, req.revision.as_deref())?.directory_page(dir);
    if page.revision.is_some() {
        let position = page.position;
        let walks = ws.sources.is_empty() && (position.is_none() || position == ws.head_position);
        let scan = Scan::new(&prefix, &upper, page_size as usize, walks, at);
        let mut listed = scan.run(call.schema, &ws, position)?;
        with_link_targets(&ws, &mut listed.files)?;
        page.files = listed.files.into_iter().map(file).collect();
        page.directories = listed.directories;
        page.directory_entries = listed.explicit.into_iter().map(file).collect();
        page.next_cursor = listed.next_cursor;
    }
    if req.totals == Some(true) {
        let (n, bytes) = match page.revision.as_deref() {
            Some(at) => totals(call, &ws, at, page.position)?,
            None => (0, 0),
        };
        page.tree_files = Some(n);
        page.tree_bytes = Some(bytes);
    }
    Ok(page)
}

/// What a scan found: the page's children, in path order.
#[derive(Default)]
struct Listed {
    files: Vec<FileRow>,
    /// Names of the subdirectories.
    directories: Vec<String>,
    /// The own entries of those subdirectories that have one (explicit directories).
    explicit: Vec<FileRow>,
    next_cursor: Option<String>,
}

/// How a batch of rows ended.
enum Batch {
    /// The page is full: the scan is over.
    PageFull,
    /// A subdirectory was met outside a walk: the next batch starts past it.
    Skip,
    /// Every row was taken; so many were files and so many subdirectories.
    Taken { files: usize, directories: usize },
}

/// The scan of one directory's children. Probes read index ranges: they start small (a
/// directory of directories needs one row each) and grow while they meet only files. Where
/// the walk can skip (`walks`), two subdirectories in a row switch to the recursive walk,
/// which jumps over each subdirectory inside one statement; a walk batch that met more files
/// than subdirectories switches back to ranges, so a run of files never costs a descent each.
struct Scan<'a> {
    prefix: &'a str,
    upper: &'a str,
    /// Children the page holds.
    want: usize,
    walks: bool,
    at: Resume,
    /// Rows the next batch asks for.
    limit: i64,
    walking: bool,
    /// The last row met was a subdirectory: a second one in a row starts a walk.
    after_directory: bool,
    listed: Listed,
}

impl<'a> Scan<'a> {
    fn new(prefix: &'a str, upper: &'a str, want: usize, walks: bool, at: Resume) -> Self {
        Scan {
            prefix,
            upper,
            want,
            walks,
            at,
            limit: 1,
            walking: false,
            after_directory: false,
            listed: Listed::default(),
        }
    }

    /// Scans until the page is full or the directory ends.
    fn run(mut self, schema: Schema, ws: &Workspace, position: Option<i64>) -> Outcome<Listed> {
        loop {
            let rows = self.next_rows(schema, ws, position)?;
            let full = rows.len() as i64 == self.limit;
            match self.take(rows) {
                Batch::PageFull => break,
                Batch::Skip => continue,
                Batch::Taken { .. } if !full => break,
                Batch::Taken { files, directories } => self.grow(files, directories),
            }
        }
        Ok(self.listed)
    }

    /// The next batch: a walk's or a probe's rows from where the scan is.
    fn next_rows(
        &self,
        schema: Schema,
        ws: &Workspace,
        position: Option<i64>,
    ) -> Outcome<Vec<FileRow>> {
        if !self.walking {
            return probe(schema, ws, position, &self.at, self.upper, self.limit);
        }
        let (after, from) = match &self.at {
            Resume::After(p) => (true, p),
            Resume::From(p) => (false, p),
        };
        entries::children_at_head(schema, ws, self.prefix, from, after, self.upper, self.limit)
    }

    fn listed(&self) -> usize {
        self.listed.files.len() + self.listed.directories.len()
    }

    /// Takes a batch's rows into the page, in order.
    fn take(&mut self, rows: Vec<FileRow>) -> Batch {
        let (mut files, mut directories) = (0, 0);
        for row in rows {
            if self.listed() == self.want {
                self.listed.next_cursor = Some(match &self.at {
                    Resume::After(p) => p.clone(),
                    Resume::From(p) => format!("{}/", &p[..p.len() - 1]),
                });
                return Batch::PageFull;
            }
            let name = &row.path[self.prefix.len()..];
            // A subdirectory: below it (implied by its entries), or its own entry (an
            // explicit directory, perhaps empty), which sorts just before its entries.
            let own_entry = !name.contains('/') && row.kind == Kind::Directory;
            let Some(slash) = name.find('/').or(own_entry.then_some(name.len())) else {
                self.at = Resume::After(row.path.clone());
                self.listed.files.push(row);
                files += 1;
                self.after_directory = false;
                continue;
            };
            let name = name[..slash].to_owned();
            if own_entry {
                self.listed.explicit.push(row);
            }
            self.at = Resume::From(format!("{}{name}0", self.prefix));
            self.listed.directories.push(name);
            directories += 1;
            let second = std::mem::replace(&mut self.after_directory, true);
            if self.walking {
                continue;
            }
            if self.walks && second {
                self.walking = true;
                self.limit = FIRST_WALK.min(remaining(self.want, self.listed()));
            } else {
                self.limit = 1;
            }
            return Batch::Skip;
        }
        Batch::Taken { files, directories }
    }

    /// Sizes the next batch after a full one that met `files` files and `directories`
    /// subdirectories.
    fn grow(&mut self, files: usize, directories: usize) {
        if self.walking && files > directories {
            self.walking = false;
            self.limit = 4;
        } else if self.walking {
            self.limit = (self.limit * 4).min(remaining(self.want, self.listed()));
        } else {
            self.limit = (self.limit * 4).min(MAX_PROBE);
        }
    }
}

//! `supabash_grep`: searches the files of one revision. The manifest at the revision gives the
//! files (path order) and their plain sizes; bodies are decoded a batch at a time, each batch
//! charged to the call's decode budget first, and the page ends early (with a cursor) when the
//! next file would not fit. Lines are walked in place, never collected, and searched by the
//! bounded engine of [`super::grep_engine`], which checks for interrupts as it goes.

use super::files::files_at;
use super::grep_engine::Matcher;
use super::pinned::{point_or_time, Point};
use super::Call;
use crate::pg::args;
use crate::pg::budget;
use crate::pg::fail::{invalid, Fail, Outcome};
use crate::pg::interrupt;
use crate::store::entries::FileRow;
use crate::store::{access, bodies};
use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use supabash_core::rpc::grep::*;
use supabash_core::Marker;

/// Bytes of bodies decoded per batch at most (a batch holds at least one file).
const BATCH_BYTES: u64 = 1024 * 1024;

/// Where a page resumes: after line `line` of `path`.
struct Resume {
    path: String,
    line: i64,
}

/// The cursor is `<line>:<path>` (the line of the last match of the previous page).
fn resume(cursor: Option<&str>) -> Outcome<Option<Resume>> {
    let Some(c) = cursor else { return Ok(None) };
    let bad = || invalid("cursor must be a nextCursor of supabash_grep");
    let (line, path) = c.split_once(':').ok_or_else(bad)?;
    let line = line
        .parse::<i64>()
        .ok()
        .filter(|l| *l >= 0 && line.bytes().all(|b| b.is_ascii_digit()))
        .ok_or_else(bad)?;
    let path = args::checked_path(path).map_err(|_| bad())?;
    Ok(Some(Resume { path, line }))
}

fn pattern(req: &Grep) -> Outcome<Matcher> {
    if req.pattern.is_empty() || req.pattern.len() > MAX_GREP_PATTERN_BYTES {
        return Err(Fail::new(
            Marker::Quota,
            format!("pattern must be 1 to {MAX_GREP_PATTERN_BYTES} bytes"),
        ));
    }
    let source = if req.fixed_strings == Some(true) {
        regex::escape(&req.pattern)
    } else {
        req.pattern.clone()
    };
    let matcher = Matcher::new(&source, req.ignore_case == Some(true))?;
    budget::charge(matcher.memory())?;
    Ok(matcher)
}

/// The globs of `paths`: `None` keeps every file. A glob without `/` matches file names; one
/// with `/` paths from the root.
fn globs(paths: Option<&[String]>) -> Outcome<Option<(GlobSet, GlobSet)>> {
    let Some(paths) = paths.filter(|p| !p.is_empty()) else {
        return Ok(None);
    };
    if paths.len() > MAX_GREP_GLOBS || paths.iter().any(|g| g.len() > MAX_GREP_GLOB_BYTES) {
        return Err(Fail::new(
            Marker::Quota,
            format!("paths holds at most {MAX_GREP_GLOBS} globs of {MAX_GREP_GLOB_BYTES} bytes"),
        ));
    }
    let (mut names, mut full) = (GlobSetBuilder::new(), GlobSetBuilder::new());
    for g in paths {
        let glob = |text: &str| {
            GlobBuilder::new(text)
                .literal_separator(true)
                .build()
                .map_err(|e| invalid(format!("paths: {g:?} is not a glob: {e}")))
        };
        if g.is_empty() {
            return Err(invalid("paths: an empty glob"));
        } else if g.contains('/') {
            let rooted = if g.starts_with('/') {
                g.clone()
            } else {
                format!("/{g}")
            };
            full.add(glob(rooted.trim_end_matches('/'))?);
        } else {
            names.add(glob(g)?);
        }
    }
    let built = |b: GlobSetBuilder| b.build().map_err(|e| invalid(format!("paths: {e}")));
    Ok(Some((built(names)?, built(full)?)))
}

/// Whether a glob keeps `path`: its name, or the path or one of its directories.
fn kept(path: &str, globs: &(GlobSet, GlobSet)) -> bool {
    let (names, full) = globs;
    let name = path.rsplit('/').next().unwrap_or(path);
    if names.is_match(name) {
        return true;
    }
    let mut at = path;
    loop {
        if full.is_match(at) {
            return true;
        }
        match at.rfind('/') {
            Some(i) if i > 0 => at = &at[..i],
            _ => return false,
        }
    }
}

/// A line for the answer: lossy UTF-8, cut at [`MAX_GREP_LINE_BYTES`].
fn shown(line: &[u8]) -> String {
    let text = String::from_utf8_lossy(&line[..line.len().min(MAX_GREP_LINE_BYTES + 4)]);
    if text.len() <= MAX_GREP_LINE_BYTES {
        return text.into_owned();
    }
    text[..text.floor_char_boundary(MAX_GREP_LINE_BYTES)].to_owned()
}

/// The lines of a body (its final newline dropped), walked without collecting them: the line
/// at byte `at` is number `index` (from 0).
struct Lines<'a> {
    body: &'a [u8],
    at: usize,
    index: usize,
    done: bool,
}

impl<'a> Lines<'a> {
    fn new(body: &'a [u8]) -> Lines<'a> {
        let body = body.strip_suffix(b"\n").unwrap_or(body);
        Lines {
            body,
            at: 0,
            index: 0,
            done: false,
        }
    }

    /// The end of the line starting at `at` (its newline or the body's end).
    fn end_of(&self, at: usize) -> usize {
        memchr::memchr(b'\n', &self.body[at..]).map_or(self.body.len(), |i| at + i)
    }

    /// The next line: its number and where it starts and ends.
    fn next(&mut self) -> Option<(usize, usize, usize)> {
        if self.done {
            return None;
        }
        let (index, start, end) = (self.index, self.at, self.end_of(self.at));
        interrupt::tick((end - start) as u64 + LINE_UNITS);
        self.skip_to(end);
        Some((index, start, end))
    }

    /// Moves past the lines before byte `end`, the end of a line.
    fn skip_to(&mut self, end: usize) {
        interrupt::tick((end - self.at) as u64);
        self.index += memchr::memchr_iter(b'\n', &self.body[self.at..end]).count();
        if end >= self.body.len() {
            self.done = true;
        } else {
            self.at = end + 1;
            self.index += 1;
        }
    }

    /// Where the next lines that a single search may test together end (the end of a line),
    /// if at least one whole line fits in `len` bytes.
    fn region(&self, len: usize) -> Option<usize> {
        if self.done {
            return None;
        }
        let window = &self.body[self.at..self.body.len().min(self.at + len)];
        if self.at + window.len() == self.body.len() {
            return Some(self.body.len());
        }
        memchr::memrchr(b'\n', window).map(|i| self.at + i)
    }

    /// Up to `n` lines before the line starting at `start`, in order.
    fn before(&self, start: usize, n: usize) -> Vec<String> {
        let mut lines = Vec::new();
        let mut at = start;
        while lines.len() < n && at > 0 {
            let end = at - 1;
            at = memchr::memrchr(b'\n', &self.body[..end]).map_or(0, |i| i + 1);
            interrupt::tick((start - at) as u64);
            lines.push(shown(&self.body[at..end]));
        }
        lines.reverse();
        lines
    }

    /// Up to `n` lines after the line ending at `end`.
    fn after(&self, end: usize, n: usize) -> Vec<String> {
        let mut lines = Vec::new();
        let mut at = end;
        while lines.len() < n && at < self.body.len() {
            let next = self.end_of(at + 1);
            interrupt::tick((next - end) as u64);
            lines.push(shown(&self.body[at + 1..next]));
            at = next;
        }
        lines
    }
}

/// Interrupt units a line costs beyond its bytes.
const LINE_UNITS: u64 = 16;

/// The matching lines of one body after line `after`, at most `room` of them. Lines are
/// searched one at a time; for a pattern without anchors, runs of whole lines the `regex`
/// crate may take at once are tested first, and skipped when they hold no match (most files
/// end here). The text of each match is charged to the call's budget.
fn search(
    pattern: &Matcher,
    path: &str,
    body: &[u8],
    after: i64,
    context: usize,
    room: usize,
) -> Outcome<Vec<GrepMatch>> {
    let mut found = Vec::new();
    if room == 0 {
        return Ok(found);
    }
    let mut lines = Lines::new(body);
    while lines.index < after.max(0) as usize && lines.next().is_some() {}
    // Lines before this byte are in a run known to hold a match.
    let mut tested = 0;
    while !lines.done {
        if pattern.region_test && lines.at >= tested {
            if let Some(end) = lines.region(pattern.region_len()) {
                if !pattern.may_match(&lines.body[lines.at..end]) {
                    lines.skip_to(end);
                    continue;
                }
                tested = end;
            }
        }
        let Some((i, start, end)) = lines.next() else {
            break;
        };
        let raw = &lines.body[start..end];
        let line = raw.strip_suffix(b"\r").unwrap_or(raw);
        let Some(column) = pattern.find(line) else {
            continue;
        };
        let m = GrepMatch {
            path: path.to_owned(),
            line: i as i64 + 1,
            column: column as i64 + 1,
            text: shown(line),
            before: lines.before(start, context),
            after: lines.after(end, context),
        };
        budget::charge(shown_bytes(&m))?;
        found.push(m);
        if found.len() == room {
            break;
        }
    }
    Ok(found)
}

/// The bytes a match holds (its path and lines).
fn shown_bytes(m: &GrepMatch) -> u64 {
    let lines: usize = m.before.iter().chain(&m.after).map(String::len).sum();
    (m.path.len() + m.text.len() + lines) as u64
}

/// `supabash_grep`: see docs/sql-contract.md. Reads only, so it works on a hot standby.
pub fn grep(call: &Call, req: Grep) -> Outcome<GrepPage> {
    let ws = access::open(&req)?;
    let pattern = pattern(&req)?;
    let globs = globs(req.paths.as_deref())?;
    let max = args::page_size(req.max_matches, DEFAULT_GREP_MATCHES, MAX_GREP_MATCHES)? as usize;
    let context = context_lines(req.context_lines)?;
    let from = resume(req.cursor.as_deref())?;
    let Point { revision, position } = point_or_time(&ws, req.revision.as_deref())?;
    let mut page = GrepPage {
        revision: revision.clone(),
        position,
        matches: Vec::new(),
        files_searched: 0,
        binary_skipped: 0,
        bytes_searched: 0,
        binary_matches: Vec::new(),
        next_cursor: None,
    };
    if revision.is_none() {
        return Ok(page);
    }
    let files: Vec<FileRow> = files_at(call.schema, &ws, position, None, false)?
        .into_iter()
        .filter(|f| !f.redacted)
        .filter(|f| from.as_ref().is_none_or(|r| f.path >= r.path))
        .filter(|f| globs.as_ref().is_none_or(|g| kept(&f.path, g)))
        .collect();
    let run = Run {
        pattern: &pattern,
        from: from.as_ref(),
        context,
        max,
    };
    let mut rest = files.as_slice();
    while !rest.is_empty() {
        let Some(take) = next_batch(rest, page.files_searched == 0)? else {
            // The next page starts at this file's first line.
            page.next_cursor = Some(format!("0:{}", rest[0].path));
            return Ok(page);
        };
        let (batch, after) = rest.split_at(take);
        rest = after;
        if run.batch(&ws.store, batch, &mut page)? == Page::Full {
            return Ok(page);
        }
    }
    Ok(page)
}

/// The lines of context asked for around each match.
fn context_lines(asked: Option<i32>) -> Outcome<usize> {
    match asked {
        None => Ok(0),
        Some(c) if (0..=MAX_GREP_CONTEXT_LINES).contains(&c) => Ok(c as usize),
        Some(_) => Err(Fail::new(
            Marker::Quota,
            format!("context_lines must be 0 to {MAX_GREP_CONTEXT_LINES}"),
        )),
    }
}

/// How many of `rest` the next batch takes: as many files as fit in a batch and in the budget
/// left (one at least). `None` when the budget cannot hold the batch: the page ends there,
/// unless it is the page's first (`first`), where the budget's own error says so.
fn next_batch(rest: &[FileRow], first: bool) -> Outcome<Option<usize>> {
    let left = budget::left();
    let mut take = 0;
    let mut bytes = 0u64;
    for f in rest {
        let size = f.body_size.max(0) as u64;
        if take > 0 && bytes + size > BATCH_BYTES.min(left) {
            break;
        }
        take += 1;
        bytes += size;
    }
    if bytes <= left {
        return Ok(Some(take));
    }
    if first {
        budget::charge(bytes)?;
    }
    Ok(None)
}

/// Whether the page has room for more matches.
#[derive(PartialEq)]
enum Page {
    Open,
    Full,
}

/// One call's search: the pattern, where it resumes, the context and the page size.
struct Run<'a> {
    pattern: &'a Matcher,
    from: Option<&'a Resume>,
    context: usize,
    max: usize,
}

impl Run<'_> {
    /// Loads a batch's bodies (charged to the budget) and searches them into `page`.
    fn batch(&self, store: &str, batch: &[FileRow], page: &mut GrepPage) -> Outcome<Page> {
        let wanted: Vec<(Vec<u8>, i64)> = batch
            .iter()
            .map(|f| (f.body_hash.clone(), f.body_size))
            .collect();
        let loaded = bodies::load_charged(store, &wanted)?;
        for f in batch {
            let Some(body) = loaded.get(&f.body_hash) else {
                continue;
            };
            if self.file(&f.path, &body.bytes, page)? == Page::Full {
                return Ok(Page::Full);
            }
        }
        Ok(Page::Open)
    }

    /// Searches one body into `page`: a binary one is only counted (and named if it matches).
    fn file(&self, path: &str, body: &[u8], page: &mut GrepPage) -> Outcome<Page> {
        let binary = body.chunks(interrupt::EVERY as usize).any(|part| {
            interrupt::tick(part.len() as u64);
            part.contains(&0)
        });
        if binary {
            page.binary_skipped += 1;
            if !search(self.pattern, path, body, 0, 0, 1)?.is_empty() {
                page.binary_matches.push(path.to_owned());
            }
            return Ok(Page::Open);
        }
        page.files_searched += 1;
        page.bytes_searched += body.len() as i64;
        let skip = match self.from {
            Some(r) if r.path == path => r.line,
            _ => 0,
        };
        let room = self.max - page.matches.len();
        for m in search(self.pattern, path, body, skip, self.context, room + 1)? {
            if page.matches.len() == self.max {
                // One more exists: the page ends at its last match.
                let last = page.matches.last().expect("a full page");
                page.next_cursor = Some(format!("{}:{}", last.line, last.path));
                return Ok(Page::Full);
            }
            page.matches.push(m);
        }
        Ok(Page::Open)
    }
}

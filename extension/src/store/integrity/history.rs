//! The history pass of `supabash_verify`: revisions by position, each one's parent the
//! revision before it (or a purged one), positions within 1..head, the workspace's head its
//! last revision; and each receipt against the entries: the paths it names hold, after the
//! revision, what its lines say they hold after, and before it (at its parent) what they say
//! they held before; no path's entries change at a revision whose receipt does not name it.
//! Lines redaction scrubbed match any content; tombstones match any present version.

use super::{short, Found};
use crate::pg::db;
use crate::pg::fail::Outcome;
use crate::store::access::Workspace;
use crate::store::lineage;
use std::collections::{BTreeMap, HashMap};
use supabash_core::receipt_lines;
use supabash_core::rpc::verify::{Checked, Problem, ProblemKind};
use supabash_core::rpc::ReceiptLine;

/// Most revisions per page, and most stored receipt bytes a page starts with.
const PAGE: i64 = 256;
const PAGE_BYTES: i64 = 8 * 1024 * 1024;

/// One stored revision.
struct Revision {
    id: String,
    position: i64,
    parent: Option<String>,
    lines: Vec<u8>,
    /// A fork's first revision: its tree is its source's, its rows at that position copies.
    forked: bool,
}

/// What the entries hold for a path at a position.
#[derive(Clone, PartialEq)]
enum State {
    Absent,
    Tombstone,
    /// Content hash and size (of the rendered document).
    Content(Vec<u8>, i64),
}

impl State {
    fn of(hash: Vec<u8>, size: i64, redacted: bool) -> State {
        if redacted {
            State::Tombstone
        } else {
            State::Content(hash, size)
        }
    }

    fn describe(&self) -> String {
        match self {
            State::Absent => "no file".into(),
            State::Tombstone => "a redacted version".into(),
            State::Content(h, n) => format!("content {} ({n} bytes)", short(h)),
        }
    }
}

/// What a receipt says a path held.
#[derive(Clone, PartialEq)]
enum Expect {
    Absent,
    /// A file, with its content hash and size unless redaction removed them.
    Present(Option<(Vec<u8>, i64)>),
    /// Redaction removed what the line said (a file or none).
    Unknown,
}

impl Expect {
    /// A version named by a line: `present` when the op implies a file is there.
    fn of(hash: &Option<String>, size: Option<i64>, present: bool, redacted: bool) -> Expect {
        match (hash.as_deref().map(hex::decode), size) {
            (Some(Ok(h)), Some(n)) => Expect::Present(Some((h, n))),
            _ if present => Expect::Present(None),
            _ if redacted => Expect::Unknown,
            _ => Expect::Absent,
        }
    }

    fn admits(&self, state: &State) -> bool {
        match (self, state) {
            (Expect::Unknown, _) | (Expect::Absent, State::Absent) => true,
            (Expect::Present(_), State::Tombstone) => true,
            (Expect::Present(None), State::Content(..)) => true,
            (Expect::Present(Some((h, n))), State::Content(h2, n2)) => h == h2 && n == n2,
            _ => false,
        }
    }

    fn hash(&self) -> Option<&[u8]> {
        match self {
            Expect::Present(Some((h, _))) => Some(h),
            _ => None,
        }
    }

    fn describe(&self) -> String {
        match self {
            Expect::Absent => "no file".into(),
            Expect::Present(None) => "a file".into(),
            Expect::Present(Some((h, n))) => format!("content {} ({n} bytes)", short(h)),
            Expect::Unknown => "anything".into(),
        }
    }
}

/// Each path a receipt names: what it held before the revision (its first mention) and after
/// (its last).
fn expectations(lines: &[ReceiptLine]) -> BTreeMap<String, (Expect, Expect)> {
    let mut out: BTreeMap<String, (Expect, Expect)> = BTreeMap::new();
    let mut mention = |path: &str, before: Expect, after: Expect| {
        out.entry(path.to_owned())
            .or_insert((before, Expect::Unknown))
            .1 = after;
    };
    for l in lines {
        let r = l.redacted;
        let before = Expect::of(&l.before_hash, l.before_size, l.op != "upsert", r);
        let after = match l.op.as_str() {
            "delete" => Expect::Absent,
            _ => Expect::of(&l.after_hash, l.after_size, true, r),
        };
        match (l.op.as_str(), &l.from) {
            ("move", Some(from)) => {
                mention(from, before, Expect::Absent);
                let replaced = Expect::of(&l.replaced_hash, l.replaced_size, false, r);
                mention(&l.path, replaced, after);
            }
            _ => mention(&l.path, before, after),
        }
    }
    out
}

/// Where the state before a revision can be read.
enum Before {
    /// A workspace's first commit: nothing.
    Empty,
    /// The parent's position.
    At(i64),
    /// Not knowable (the parent was purged, or the link is broken).
    Unknown,
}

/// The own rows that start or end at one position.
#[derive(Default)]
struct Changes {
    starts: HashMap<String, State>,
    ends: HashMap<String, State>,
}

/// Runs the history pass on `ws`, adding what it finds to `found` and what it read to `checked`.
pub fn check(ws: &Workspace, found: &mut Found, checked: &mut Checked) -> Outcome<()> {
    let mut previous: Option<(String, i64)> = None;
    let mut after = i64::MIN;
    loop {
        let page = revisions(ws, after)?;
        let (Some(first), Some(last)) = (page.first(), page.last()) else {
            break;
        };
        let mut changes = changed_rows(ws, first.position, last.position)?;
        after = last.position;
        for rev in page {
            checked.revisions += 1;
            check_position(ws, &rev, found);
            let before = parent(ws, &rev, previous.as_ref(), found)?;
            let changed = changes.remove(&rev.position).unwrap_or_default();
            receipt(ws, &rev, before, changed, found, checked)?;
            previous = Some((rev.id, rev.position));
        }
    }
    check_head(ws, previous, found);
    Ok(())
}

/// The next page of revisions after position `after`.
fn revisions(ws: &Workspace, after: i64) -> Outcome<Vec<Revision>> {
    db::query(
        "SELECT revision_id, position, parent_revision, lines, forked FROM (
           SELECT revision_id::text, position, parent_revision::text, lines,
                  forked_from_workspace IS NOT NULL AS forked,
                  sum(octet_length(lines)) OVER (ORDER BY position) - octet_length(lines) AS earlier
             FROM supabash.revisions WHERE workspace_id = $1::uuid AND position > $2
            ORDER BY position LIMIT $3) page
          WHERE earlier < $4 ORDER BY position",
        &[
            ws.id.as_str().into(),
            after.into(),
            PAGE.into(),
            PAGE_BYTES.into(),
        ],
        |r| {
            Ok(Revision {
                id: db::get(r, 1)?,
                position: db::get(r, 2)?,
                parent: db::opt(r, 3)?,
                lines: db::get(r, 4)?,
                forked: db::get(r, 5)?,
            })
        },
    )
}

/// The workspace's own rows that start or end at positions `lo..=hi`, by position.
fn changed_rows(ws: &Workspace, lo: i64, hi: i64) -> Outcome<HashMap<i64, Changes>> {
    let rows = db::query(
        "SELECT path, valid_from, valid_until, coalesce(content_hash, body_hash),
                coalesce(content_size, body_size), redacted
           FROM supabash.entries
          WHERE workspace_id = $1::uuid
            AND (valid_from BETWEEN $2 AND $3 OR valid_until BETWEEN $2 AND $3)",
        &[ws.id.as_str().into(), lo.into(), hi.into()],
        |r| {
            Ok((
                db::get::<String>(r, 1)?,
                db::get::<i64>(r, 2)?,
                db::opt::<i64>(r, 3)?,
                State::of(db::get(r, 4)?, db::get(r, 5)?, db::get(r, 6)?),
            ))
        },
    )?;
    let mut out: HashMap<i64, Changes> = HashMap::new();
    for (path, from, until, state) in rows {
        if (lo..=hi).contains(&from) {
            out.entry(from)
                .or_default()
                .starts
                .insert(path.clone(), state.clone());
        }
        if let Some(until) = until.filter(|u| (lo..=hi).contains(u)) {
            out.entry(until).or_default().ends.insert(path, state);
        }
    }
    Ok(out)
}

/// What the entries visible at `position` hold for `paths` (absent paths are left out).
fn states(ws: &Workspace, position: i64, paths: &[String]) -> Outcome<HashMap<String, State>> {
    let sql = lineage::visible_sql(&ws.sources,
        false,
        "e.path, coalesce(e.content_hash, e.body_hash), coalesce(e.content_size, e.body_size), e.redacted",
        "e.path = ANY($5)",
    );
    let mut args = lineage::visible_args(&ws.id, &ws.sources, Some(position));
    args.push(paths.to_vec().into());
    Ok(db::query(&sql, &args, |r| {
        Ok((
            db::get::<String>(r, 1)?,
            State::of(db::get(r, 2)?, db::get(r, 3)?, db::get(r, 4)?),
        ))
    })?
    .into_iter()
    .collect())
}

fn check_position(ws: &Workspace, rev: &Revision, found: &mut Found) {
    let head = ws.head_position.unwrap_or(0);
    if rev.position < 1 || rev.position > head {
        found.add(
            Problem::new(
                ProblemKind::RevisionPosition,
                format!(
                    "the revision is at position {}, outside the workspace's positions 1..{head}",
                    rev.position
                ),
            )
            .at_revision(&rev.id, rev.position),
        );
    }
}

/// Checks the parent link of `rev` (`previous`: the revision before it) and answers where the
/// state before it can be read.
fn parent(
    ws: &Workspace,
    rev: &Revision,
    previous: Option<&(String, i64)>,
    found: &mut Found,
) -> Outcome<Before> {
    let mut report = |kind, detail: String| {
        found.add(Problem::new(kind, detail).at_revision(&rev.id, rev.position));
    };
    let Some(parent) = &rev.parent else {
        if let Some((id, position)) = previous {
            report(
                ProblemKind::RevisionParent,
                format!("the revision has no parent, but revision {id} at position {position} comes before it"),
            );
            return Ok(Before::Unknown);
        }
        return Ok(if rev.forked {
            Before::Unknown
        } else {
            Before::Empty
        });
    };
    if let Some((_, position)) = previous.filter(|(id, _)| id == parent) {
        return Ok(Before::At(*position));
    }
    let stored = db::query_row(
        "SELECT position FROM supabash.revisions WHERE workspace_id = $1::uuid AND revision_id = $2::uuid",
        &[ws.id.as_str().into(), parent.as_str().into()],
        |r| db::get::<i64>(r, 1),
    )?;
    match stored {
        Some(at) if at >= rev.position => report(
            ProblemKind::RevisionPosition,
            format!("the revision's parent {parent} is at position {at}, not before it"),
        ),
        Some(at) => report(
            ProblemKind::RevisionParent,
            format!(
                "the revision's parent {parent} at position {at} is not the revision before it{}",
                previous.map_or(String::new(), |(id, p)| format!(" ({id} at position {p})"))
            ),
        ),
        None => {
            let purged = db::query_row(
                "SELECT 1 FROM supabash.purged_commits WHERE workspace_id = $1::uuid AND revision_id = $2::uuid",
                &[ws.id.as_str().into(), parent.as_str().into()],
                |_| Ok(()),
            )?
            .is_some();
            if !purged {
                report(
                    ProblemKind::RevisionParent,
                    format!("the revision's parent {parent} is neither stored nor purged"),
                );
            }
        }
    }
    Ok(Before::Unknown)
}

/// Compares the receipt of `rev` with the entries.
fn receipt(
    ws: &Workspace,
    rev: &Revision,
    before: Before,
    changes: Changes,
    found: &mut Found,
    checked: &mut Checked,
) -> Outcome<()> {
    let lines = match receipt_lines::decode(&rev.lines) {
        Ok(lines) => lines,
        Err(e) => {
            found.add(
                Problem::new(ProblemKind::ReceiptUnreadable, e.to_string())
                    .at_revision(&rev.id, rev.position),
            );
            return Ok(());
        }
    };
    checked.receipts += 1;
    if rev.forked {
        // The fork's rows at this position are copies of what it inherits (see `lineage`).
        if let Some(l) = lines.first() {
            found.add(mismatch(
                rev,
                &l.path,
                format!(
                    "a fork's first revision records no changes, this one records {}",
                    lines.len()
                ),
            ));
        }
        return Ok(());
    }
    let expected = expectations(&lines);
    check_named_paths(ws, rev, before, &expected, found)?;
    check_unnamed_paths(rev, &changes, &expected, found);
    Ok(())
}

/// A receipt line of `rev` that disagrees with the entries at `path`.
fn mismatch(rev: &Revision, path: &str, detail: String) -> Problem {
    Problem::new(ProblemKind::ReceiptMismatch, detail)
        .at_path(path)
        .at_revision(&rev.id, rev.position)
}

/// Every path the receipt names holds, after the revision (and before it, when the previous
/// state is known), what the receipt says.
fn check_named_paths(
    ws: &Workspace,
    rev: &Revision,
    before: Before,
    expected: &BTreeMap<String, (Expect, Expect)>,
    found: &mut Found,
) -> Outcome<()> {
    let paths: Vec<String> = expected.keys().cloned().collect();
    if paths.is_empty() {
        return Ok(());
    }
    let now = states(ws, rev.position, &paths)?;
    let then = match before {
        Before::Empty => Some(HashMap::new()),
        Before::At(position) => Some(states(ws, position, &paths)?),
        Before::Unknown => None,
    };
    for (path, (initial, last)) in expected {
        let state = now.get(path).unwrap_or(&State::Absent);
        if !last.admits(state) {
            let p = mismatch(
                rev,
                path,
                format!(
                    "the receipt says {path} holds {} after this revision; the entries hold {}",
                    last.describe(),
                    state.describe()
                ),
            );
            found.add(match last.hash() {
                Some(h) => p.with_hash(h),
                None => p,
            });
        }
        let Some(then) = &then else { continue };
        let state = then.get(path).unwrap_or(&State::Absent);
        if !initial.admits(state) {
            let p = mismatch(
                rev,
                path,
                format!(
                    "the receipt says {path} held {} before this revision; the entries hold {}",
                    initial.describe(),
                    state.describe()
                ),
            );
            found.add(match initial.hash() {
                Some(h) => p.with_hash(h),
                None => p,
            });
        }
    }
    Ok(())
}

/// Every path whose entries change at the revision is named by its receipt; a version split at
/// a redaction boundary (a tombstone, then the same path's kept content) is not a change.
fn check_unnamed_paths(
    rev: &Revision,
    changes: &Changes,
    expected: &BTreeMap<String, (Expect, Expect)>,
    found: &mut Found,
) {
    let mut unnamed: Vec<&String> = changes
        .starts
        .keys()
        .chain(changes.ends.keys())
        .filter(|p| !expected.contains_key(*p))
        .collect();
    unnamed.sort();
    unnamed.dedup();
    for path in unnamed {
        let split = match (changes.ends.get(path), changes.starts.get(path)) {
            (Some(a), Some(b)) => *a == State::Tombstone || *b == State::Tombstone || a == b,
            _ => false,
        };
        if !split {
            found.add(mismatch(
                rev,
                path,
                format!(
                    "the entries of {path} change at this revision, but its receipt does not name the path"
                ),
            ));
        }
    }
}

fn check_head(ws: &Workspace, last: Option<(String, i64)>, found: &mut Found) {
    let head = ws.head.as_deref().zip(ws.head_position);
    let detail = match (head, &last) {
        (None, None) => return,
        (Some((h, hp)), Some((id, p))) if h == id.as_str() && hp == *p => return,
        (Some((h, hp)), Some((id, p))) => format!(
            "the workspace's head is {h} at position {hp}, but its last revision is {id} at position {p}"
        ),
        (Some((h, hp)), None) => {
            format!("the workspace's head is {h} at position {hp}, but it has no revision")
        }
        (None, Some((id, p))) => {
            format!("the workspace has no head, but revisions up to {id} at position {p}")
        }
    };
    let mut problem = Problem::new(ProblemKind::HeadMismatch, detail);
    if let Some((h, hp)) = head {
        problem = problem.at_revision(h, hp);
    }
    found.add(problem);
}

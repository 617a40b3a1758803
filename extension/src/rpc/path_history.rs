//! `supabash_path_history`: the versions of one path. The path's entry rows say at which
//! positions it changed; the receipts of the revisions there say how (and who, and when). With
//! `follow_moves` a version that arrived by a move continues with the path it came from, so the
//! answer gathers *segments*: one path below a position each.

use super::Call;
use crate::pg::args;
use crate::pg::fail::{invalid, Fail, Outcome};
use crate::store::access;
use crate::store::path_history::{self as store, Interval, Touch};
use serde_json::json;
use std::collections::{BTreeMap, HashSet};
use supabash_core::rpc::path_history::{
    PathHistory, PathHistoryPage, PathOp, PathVersion, DEFAULT_PATH_HISTORY_PAGE,
    MAX_FOLLOWED_MOVES, MAX_PATH_HISTORY_PAGE,
};
use supabash_core::rpc::ReceiptLine;
use supabash_core::Marker;

/// One path below position `hi` (unbounded where `None`), with its entry rows.
struct Segment {
    path: String,
    hi: Option<i64>,
    rows: Vec<Interval>,
}

impl Segment {
    /// The positions at which the path changed within the segment.
    fn positions(&self) -> impl Iterator<Item = i64> + '_ {
        self.rows
            .iter()
            .flat_map(|r| [Some(r.valid_from), r.valid_until])
            .flatten()
            .filter(|p| self.hi.is_none_or(|hi| *p < hi))
    }

    /// Whether a version of the path ended at `position` (so one starting there modifies it).
    fn ended_at(&self, position: i64) -> bool {
        self.rows.iter().any(|r| r.valid_until == Some(position))
    }

    fn started_at(&self, position: i64) -> Option<&Interval> {
        self.rows.iter().find(|r| r.valid_from == position)
    }

    /// Where versions began that did not follow another version of the path (an add or the
    /// arrival of a move).
    fn births(&self) -> Vec<i64> {
        let ends: HashSet<i64> = self.rows.iter().filter_map(|r| r.valid_until).collect();
        self.rows
            .iter()
            .map(|r| r.valid_from)
            .filter(|f| !ends.contains(f))
            .collect()
    }
}

/// The segments of `path`'s history: the path itself and, with `follow`, for every version
/// that arrived by a move, the path it came from before that move, and so on (at most
/// [`MAX_FOLLOWED_MOVES`] moves).
fn segments(ws: &str, path: String, follow: bool) -> Outcome<Vec<Segment>> {
    let mut out: Vec<Segment> = Vec::new();
    let mut todo = vec![(path, None::<i64>)];
    let mut seen = HashSet::new();
    while let Some((path, hi)) = todo.pop() {
        if !seen.insert((path.clone(), hi)) {
            continue;
        }
        let seg = Segment {
            rows: store::intervals(ws, &path, hi)?,
            path,
            hi,
        };
        if follow && out.len() < MAX_FOLLOWED_MOVES {
            let births = seg.births();
            for (at, touch) in store::revisions_at(ws, &births)? {
                let arrivals = touch
                    .lines
                    .into_iter()
                    .filter(|l| l.op == "move" && l.path == seg.path);
                todo.extend(arrivals.filter_map(|l| l.from).map(|from| (from, Some(at))));
            }
        }
        out.push(seg);
    }
    Ok(out)
}

fn hex_opt(hash: &[u8], redacted: bool) -> Option<String> {
    (!redacted).then(|| hex::encode(hash))
}

/// The versions a retained revision made of the segment's path, from its receipt.
fn from_receipt(seg: &Segment, position: i64, touch: &Touch) -> Vec<PathVersion> {
    let about = |l: &&ReceiptLine| l.path == seg.path || l.from.as_deref() == Some(&seg.path);
    touch
        .lines
        .iter()
        .filter(about)
        .map(|l| {
            let op = match l.op.as_str() {
                "move" => PathOp::Move,
                "delete" => PathOp::Delete,
                _ if seg.ended_at(position) => PathOp::Modify,
                _ => PathOp::Add,
            };
            let tombstone =
                l.path == seg.path && seg.started_at(position).is_some_and(|r| r.redacted);
            PathVersion {
                revision: Some(touch.revision.clone()),
                position,
                op,
                path: l.path.clone(),
                from: l.from.clone(),
                size: l.after_size,
                hash: l.after_hash.clone(),
                redacted: l.redacted || tombstone,
                actor: Some(touch.actor.clone()),
                committed_at: Some(touch.committed_at.clone()),
            }
        })
        .collect()
}

/// The version at a position whose revision purge removed, from the entry rows alone (a
/// move then reads as a delete and an add).
fn from_entries(seg: &Segment, position: i64) -> PathVersion {
    let started = seg.started_at(position);
    let op = match started {
        None => PathOp::Delete,
        Some(_) if seg.ended_at(position) => PathOp::Modify,
        Some(_) => PathOp::Add,
    };
    PathVersion {
        revision: None,
        position,
        op,
        path: seg.path.clone(),
        from: None,
        size: started.filter(|r| !r.redacted).map(|r| r.size),
        hash: started.and_then(|r| hex_opt(&r.hash, r.redacted)),
        redacted: started.is_some_and(|r| r.redacted),
        actor: None,
        committed_at: None,
    }
}

/// The cursor is the position of the last revision of the previous page, as decimal text.
fn cursor(text: Option<&str>) -> Outcome<Option<i64>> {
    text.map(|c| {
        c.parse::<i64>()
            .ok()
            .filter(|p| *p >= 0 && c.bytes().all(|b| b.is_ascii_digit()))
            .ok_or_else(|| invalid("cursor must be a nextCursor of supabash_path_history"))
    })
    .transpose()
}

/// `supabash_path_history`: see docs/sql-contract.md. Reads only, so it works on a hot standby.
pub fn path_history(_call: &Call, req: PathHistory) -> Outcome<PathHistoryPage> {
    let ws = access::open(&req)?;
    let path = args::checked_path(&req.path)?;
    let limit = args::page_size(
        req.page_size,
        DEFAULT_PATH_HISTORY_PAGE,
        MAX_PATH_HISTORY_PAGE,
    )? as usize;
    let after = cursor(req.cursor.as_deref())?;
    let oldest_first = req.oldest_first.unwrap_or(false);
    let segments = segments(&ws.id, path.clone(), req.follow_moves.unwrap_or(false))?;
    if segments[0].rows.is_empty() {
        return Err(Fail::new(
            Marker::PathNotFound,
            format!("{path:?} has no version in this workspace"),
        )
        .with_detail(json!({ "path": path })));
    }
    // Every position the paths changed at, with the segments that changed there.
    let mut at: BTreeMap<i64, Vec<usize>> = BTreeMap::new();
    for (i, seg) in segments.iter().enumerate() {
        for p in seg.positions() {
            at.entry(p).or_default().push(i);
        }
    }
    let mut page: Vec<(i64, Vec<usize>)> = if oldest_first {
        at.into_iter()
            .filter(|(p, _)| after.is_none_or(|a| *p > a))
            .take(limit + 1)
            .collect()
    } else {
        at.into_iter()
            .rev()
            .filter(|(p, _)| after.is_none_or(|a| *p < a))
            .take(limit + 1)
            .collect()
    };
    let more = page.len() > limit;
    page.truncate(limit);
    let positions: Vec<i64> = page.iter().map(|(p, _)| *p).collect();
    let touches = store::revisions_at(&ws.id, &positions)?;
    let mut versions = Vec::with_capacity(page.len());
    for (position, segs) in &page {
        let mut here: Vec<PathVersion> = Vec::new();
        for seg in segs.iter().map(|i| &segments[*i]) {
            let made = match touches.get(position) {
                Some(touch) => from_receipt(seg, *position, touch),
                None => Vec::new(),
            };
            let made = if made.is_empty() {
                vec![from_entries(seg, *position)]
            } else {
                made
            };
            // A move is about both of its paths: it shows once.
            for v in made {
                if !here.contains(&v) {
                    here.push(v);
                }
            }
        }
        versions.extend(here);
    }
    let next_cursor = more
        .then(|| positions.last().map(|p| p.to_string()))
        .flatten();
    Ok(PathHistoryPage {
        versions,
        next_cursor,
    })
}

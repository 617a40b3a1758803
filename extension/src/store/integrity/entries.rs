//! The entry pass of `supabash_verify`: every version the workspace stores (its own rows) has
//! a possible interval and does not overlap another version of its path, and every row it
//! stores or reads from its sources names a stored body of the recorded size.

use super::{short, Found};
use crate::pg::db;
use crate::pg::fail::Outcome;
use crate::store::access::Workspace;
use crate::store::lineage;
use supabash_core::rpc::verify::{Checked, Problem, ProblemKind};

/// Rows per page.
const PAGE: i64 = 500;

/// One entry row with the size of the body it names (`None`: not stored).
struct Row {
    path: String,
    valid_from: i64,
    valid_until: Option<i64>,
    body_hash: Vec<u8>,
    body_size: i64,
    redacted: bool,
    stored_size: Option<i64>,
}

impl Row {
    fn read(r: &db::Row, first: usize) -> Outcome<Row> {
        Ok(Row {
            path: db::get(r, first)?,
            valid_from: db::get(r, first + 1)?,
            valid_until: db::opt(r, first + 2)?,
            body_hash: db::get(r, first + 3)?,
            body_size: db::get(r, first + 4)?,
            redacted: db::get(r, first + 5)?,
            stored_size: db::opt(r, first + 6)?,
        })
    }
}

/// Runs the entry pass on `ws`, adding what it finds to `found` and what it read to `checked`.
pub fn check(ws: &Workspace, found: &mut Found, checked: &mut Checked) -> Outcome<()> {
    own_rows(ws, found, checked)?;
    if !ws.sources.is_empty() {
        inherited_rows(ws, found, checked)?;
    }
    Ok(())
}

/// Whether the body a row names is stored with the row's size.
fn check_body(row: &Row, source: Option<&str>, found: &mut Found) {
    if row.redacted {
        return;
    }
    let place = |p: Problem| p.at_path(&row.path).at_position(row.valid_from);
    let from = source.map_or(String::new(), |s| format!(" (read from source {s})"));
    match row.stored_size {
        None => found.add(
            place(Problem::new(
                ProblemKind::BodyMissing,
                format!(
                    "the version of {} from position {}{from} names body {} which is not stored",
                    row.path,
                    row.valid_from,
                    short(&row.body_hash)
                ),
            ))
            .with_hash(&row.body_hash),
        ),
        Some(size) if size != row.body_size => found.add(
            place(Problem::new(
                ProblemKind::EntrySizeMismatch,
                format!(
                    "the version of {} from position {}{from} records {} bytes, its stored body {size}",
                    row.path, row.valid_from, row.body_size
                ),
            ))
            .with_hash(&row.body_hash),
        ),
        Some(_) => {}
    }
}

/// The workspace's own rows, by path and position.
fn own_rows(ws: &Workspace, found: &mut Found, checked: &mut Checked) -> Outcome<()> {
    let head = ws.head_position.unwrap_or(0);
    let (mut after_path, mut after_from) = (String::new(), i64::MIN);
    // The previous row of the same path (rows come by path, then position).
    let mut previous: Option<(String, i64, Option<i64>)> = None;
    loop {
        let page = db::query(
            "SELECT e.path, e.valid_from, e.valid_until, e.body_hash, e.body_size, e.redacted, b.size
               FROM supabash.entries e
               LEFT JOIN supabash.bodies b ON b.workspace_id = $2::uuid AND b.hash = e.body_hash
              WHERE e.workspace_id = $1::uuid AND (e.path, e.valid_from) > ($3, $4)
              ORDER BY e.path, e.valid_from LIMIT $5",
            &[
                ws.id.as_str().into(),
                ws.store.as_str().into(),
                after_path.as_str().into(),
                after_from.into(),
                PAGE.into(),
            ],
            |r| Row::read(r, 1),
        )?;
        let Some(last) = page.last() else {
            return Ok(());
        };
        (after_path, after_from) = (last.path.clone(), last.valid_from);
        for row in page {
            checked.entries += 1;
            let interval = |detail: String| {
                Problem::new(ProblemKind::EntryInterval, detail)
                    .at_path(&row.path)
                    .at_position(row.valid_from)
            };
            if row.valid_from < 1 || row.valid_from > head {
                found.add(interval(format!(
                    "a version of {} starts at position {}, outside the workspace's positions 1..{head}",
                    row.path, row.valid_from
                )));
            }
            if let Some(until) = row.valid_until.filter(|u| *u > head) {
                found.add(interval(format!(
                    "a version of {} ends at position {until}, after the head ({head})",
                    row.path
                )));
            }
            if let Some((path, from, until)) = &previous {
                if *path == row.path && until.is_none_or(|u| u > row.valid_from) {
                    found.add(interval(format!(
                        "the version of {} from position {from} (until {}) overlaps the one from position {}",
                        row.path,
                        until.map_or("the head".to_owned(), |u| u.to_string()),
                        row.valid_from
                    )));
                }
            }
            check_body(&row, None, found);
            previous = Some((row.path.clone(), row.valid_from, row.valid_until));
        }
    }
}

/// The rows a fork reads from its sources (see `lineage`), by path: each path comes from one
/// source at most.
fn inherited_rows(ws: &Workspace, found: &mut Found, checked: &mut Checked) -> Outcome<()> {
    let visible = lineage::visible_sql(&ws.sources,
        true,
        "e.workspace_id::text AS source, e.path, e.valid_from, e.valid_until, e.body_hash,
         e.body_size, e.redacted,
         (SELECT b.size FROM supabash.bodies b WHERE b.workspace_id = $6::uuid AND b.hash = e.body_hash)",
        "e.path > $5",
    );
    let sql =
        format!("SELECT * FROM ({visible}) v WHERE v.source <> $1 ORDER BY v.path LIMIT {PAGE}");
    let mut after = String::new();
    loop {
        let page = {
            let mut args = lineage::visible_args(&ws.id, &ws.sources, None);
            args.push(after.as_str().into());
            args.push(ws.store.as_str().into());
            db::query(&sql, &args, |r| {
                Ok((db::get::<String>(r, 1)?, Row::read(r, 2)?))
            })?
        };
        let Some((_, last)) = page.last() else {
            return Ok(());
        };
        after = last.path.clone();
        for (source, row) in page {
            checked.entries += 1;
            check_body(&row, Some(&source), found);
        }
    }
}

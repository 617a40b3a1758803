//! Where a workspace's files come from. A fork (`supabash_fork`) copies nothing: it stores only
//! the paths it changed since its fork point and reads every other file from its source as the
//! source was at that point (and from the source's source, for a fork of a fork). Two rules
//! make that exact and keep every side whole:
//!
//! - *Masking*: a path that has any entry row in a workspace is that workspace's own, at every
//!   position: rows of its sources for that path are never read through it. The first commit
//!   that touches an inherited path therefore writes a copy of the inherited version, visible
//!   from the fork's first position ([`FIRST_POSITION`]) until that commit, before closing it
//!   like any other row (`entries::write`). A fork never writes its sources' rows.
//! - *Pinning*: a source keeps every entry visible at the positions its forks were made at
//!   (purge and delete treat those positions like retained revisions), and a fork keeps its
//!   copies (they cost no body bytes: the source keeps that version for the fork anyway).
//!
//! A fork family shares one body store (`workspaces.store_id`), so bodies are never copied and
//! deduplicate across the family.

use pgrx::datum::DatumWithOid;

/// The first position of a fork: its fork revision, whose tree is its source's at the fork point.
pub const FIRST_POSITION: i64 = 1;

/// How many sources deep a fork may be (a fork of a fork of ...): every read joins each level.
pub const MAX_DEPTH: usize = 32;

/// The SQL of the entries visible in a workspace at a position, with the two parameters it
/// expects first: `$1` the workspace, `$2` the position (ignored at the head), `$3` its
/// sources' ids and `$4` the position each is read at. `columns` and `filter` are over the
/// alias `e`; `filter` may use parameters from `$5` on. Rows come in no particular order.
pub fn visible_sql(sources: &[Source], at_head: bool, columns: &str, filter: &str) -> String {
    let own = if at_head {
        "e.valid_until IS NULL"
    } else {
        "e.valid_from <= $2 AND (e.valid_until IS NULL OR e.valid_until > $2)"
    };
    let mut sql = format!(
        "SELECT {columns} FROM supabash.entries e
          WHERE e.workspace_id = $1::uuid AND {own} AND ({filter})"
    );
    for level in 1..=sources.len() {
        // Sources nearer the workspace than this one (none for the first).
        let nearer = if level == 1 {
            String::new()
        } else {
            format!(" OR x.workspace_id = ANY(($3::uuid[])[1:{}])", level - 1)
        };
        sql.push_str(&format!(
            "
         UNION ALL
         SELECT {columns} FROM supabash.entries e
          WHERE e.workspace_id = ($3::uuid[])[{level}]
            AND e.valid_from <= ($4::bigint[])[{level}]
            AND (e.valid_until IS NULL OR e.valid_until > ($4::bigint[])[{level}])
            AND ({filter})
            AND NOT EXISTS (SELECT 1 FROM supabash.entries x
                             WHERE (x.workspace_id = $1::uuid{nearer}) AND x.path = e.path)"
        ));
    }
    sql
}

/// The four leading arguments of [`visible_sql`], to which a caller appends its own.
pub fn visible_args<'a>(
    ws: &'a str,
    sources: &[Source],
    position: Option<i64>,
) -> Vec<DatumWithOid<'a>> {
    let ids: Vec<String> = sources.iter().map(|s| s.workspace.clone()).collect();
    let at: Vec<i64> = sources.iter().map(|s| s.position).collect();
    vec![
        ws.into(),
        position.unwrap_or(0).into(),
        ids.into(),
        at.into(),
    ]
}

/// A source a workspace reads from, and the position it is read at.
#[derive(Clone, Debug)]
pub struct Source {
    pub workspace: String,
    pub position: i64,
}

//! The entry rows (`supabash.entries`): one interval-versioned row per path version, open
//! (`valid_until IS NULL`) at the head. A commit closes the open rows of the paths it changes
//! and opens new ones ([`write()`]); reads select [`FILE_COLUMNS`] through `lineage`'s view of
//! what a workspace sees and collect them as [`FileRow`]s.

use crate::pg::db::{self, Row};
use crate::pg::fail::Outcome;
use crate::pg::schema::Schema;
use crate::store::access::Workspace;
use crate::store::lineage;
use pgrx::datum::DatumWithOid;
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};
use supabash_core::document::{metadata_to_json, render};
use supabash_core::hash::sha256;
use supabash_core::posix::Kind;
use supabash_core::rpc::manifest_text::ManifestEntry;
use supabash_core::rpc::Content;

/// A row of the shape most reads share: path, bytea hashes, sizes, metadata, and the body
/// once a caller attached it (see `bodies::load`).
pub struct FileRow {
    pub path: String,
    pub body_hash: Vec<u8>,
    pub body_size: i64,
    pub content_hash: Vec<u8>,
    pub content_size: i64,
    pub metadata: Value,
    pub body: Option<Vec<u8>>,
    /// A tombstone (see `redact`): no body to load.
    pub redacted: bool,
    /// What the version is, its permission bits and modification time (nanoseconds; `None`
    /// on a 0.5.0 schema, whose rows are all files, 0o644).
    pub kind: Kind,
    pub mode: u32,
    pub mtime_ns: Option<i64>,
}

/// The select list of a [`file_rows`] query over `supabash.entries` aliased `e`.
pub const FILE_COLUMNS: &str =
    "e.path, e.body_hash, e.body_size, e.content_hash, e.content_size, e.metadata, e.redacted, e.kind, e.mode, e.mtime_ns";

/// [`FILE_COLUMNS`] on a 0.5.0 schema: every entry a regular file, 0o644, with no time.
const FILE_COLUMNS_0_5: &str =
    "e.path, e.body_hash, e.body_size, e.content_hash, e.content_size, e.metadata, e.redacted, 'file'::text, 420, NULL::bigint";

/// The select list of a [`file_rows`] query on the installed schema.
pub fn file_columns(schema: Schema) -> &'static str {
    if schema.posix_entries {
        FILE_COLUMNS
    } else {
        FILE_COLUMNS_0_5
    }
}

/// The names of [`FILE_COLUMNS`]' columns, for a subquery's alias list.
const FILE_COLUMN_NAMES: &str =
    "path, body_hash, body_size, content_hash, content_size, metadata, redacted, kind, mode, mtime_ns";

/// Runs a query whose columns are `path, body_hash, body_size, content_hash, content_size,
/// metadata, redacted, kind, mode, mtime_ns` (see [`file_columns`]) and collects the rows. NULL content columns (a file without metadata, see
/// `supabash.entries`) read as the body's hash and size and `{}`.
pub fn file_rows(sql: &str, args: &[DatumWithOid]) -> Outcome<Vec<FileRow>> {
    db::query(sql, args, file_row)
}

/// The files `ws` sees at `position` (`None`: its head) that pass `filter`, in path order,
/// followed by `tail` (say a `LIMIT`). `filter` and `tail` are SQL over the alias `e`, with
/// parameters from `$5` on given in `extra` (the first four are [`lineage::visible_args`]).
/// Reading the head uses the open-interval index; any other retained position (and a fork's
/// sources) is an index range scan over the workspace's intervals. The plan is kept per
/// backend when `kept`.
pub fn visible_files(
    schema: Schema,
    ws: &Workspace,
    position: Option<i64>,
    filter: &str,
    tail: &str,
    extra: Vec<DatumWithOid<'_>>,
    kept: bool,
) -> Outcome<Vec<FileRow>> {
    let (sql, args) = visible_query(ws, position, file_columns(schema), filter, tail, extra);
    if kept {
        db::query_kept(&sql, &args, file_row)
    } else {
        file_rows(&sql, &args)
    }
}

/// [`visible_files`] (plan not kept) handing the rows, [`FILE_COLUMNS`] in path order, to `f`
/// as they lie in SPI's result, for a caller that reads them in place.
pub fn with_visible_rows<T>(
    schema: Schema,
    ws: &Workspace,
    position: Option<i64>,
    f: impl FnOnce(&db::Rows) -> Outcome<T>,
) -> Outcome<T> {
    let (sql, args) = visible_query(ws, position, file_columns(schema), "true", "", Vec::new());
    db::query_rows(&sql, &args, f)
}

/// The statement and arguments of [`visible_files`].
fn visible_query<'a>(
    ws: &'a Workspace,
    position: Option<i64>,
    columns: &str,
    filter: &str,
    tail: &str,
    extra: Vec<DatumWithOid<'a>>,
) -> (String, Vec<DatumWithOid<'a>>) {
    let at_head = position.is_none() || position == ws.head_position;
    let sql = format!(
        "SELECT * FROM ({}) e ORDER BY 1 {tail}",
        lineage::visible_sql(&ws.sources, at_head, columns, filter)
    );
    let mut args = lineage::visible_args(&ws.id, &ws.sources, position);
    args.extend(extra);
    (sql, args)
}

/// A directory's children at a workspace's head (no fork sources): from `from` (after it when
/// `after`, else at it) up to `upper`, the next at most `limit` rows below `prefix` in path
/// order, where each subdirectory gives only its first row (its own entry, or the first path
/// below it) and the walk then jumps past it. One statement, one index descent per row (a
/// loose index scan in a recursive query), so a directory of subdirectories costs one probe
/// each inside the executor instead of one statement each. A run of files costs a descent
/// each too, where an index range reads them at once: `supabash_list_directory` walks this way
/// only from the first subdirectory it meets.
pub fn children_at_head(
    schema: Schema,
    ws: &Workspace,
    prefix: &str,
    from: &str,
    after: bool,
    upper: &str,
    limit: i64,
) -> Outcome<Vec<FileRow>> {
    let columns = file_columns(schema);
    let op = if after { ">" } else { ">=" };
    // Where the walk goes on after a row: past a subdirectory (its own entry, or a path below
    // it) at the first path after all its contents, else just after the row's path (`chr(1)`
    // is the least character). It is computed in the select list and carried with the row:
    // row-level security lets only leakproof conditions use an index ahead of its policies,
    // and a bare comparison with the carried column is one, where these functions are not.
    let next = "(CASE WHEN e.kind = 'directory' OR strpos(substr(e.path, $5), '/') > 0
                      THEN $4 || split_part(substr(e.path, $5), '/', 1) || '0'
                      ELSE e.path || chr(1) END) COLLATE \"C\"";
    let next = if schema.posix_entries {
        next.to_owned()
    } else {
        next.replace("e.kind = 'directory' OR ", "")
    };
    let sql = format!(
        "WITH RECURSIVE walk ({FILE_COLUMN_NAMES}, resume) AS (
           (SELECT {columns}, {next} FROM supabash.entries e
             WHERE e.workspace_id = $1::uuid AND e.valid_until IS NULL
               AND e.path {op} $2 AND e.path < $3
             ORDER BY e.path LIMIT 1)
           UNION ALL
           SELECT n.* FROM walk w CROSS JOIN LATERAL (
             SELECT {columns}, {next} FROM supabash.entries e
              WHERE e.workspace_id = $1::uuid AND e.valid_until IS NULL
                AND e.path >= w.resume AND e.path < $3
              ORDER BY e.path LIMIT 1) n)
         SELECT {FILE_COLUMN_NAMES} FROM walk LIMIT $6"
    );
    // `substr` counts characters: the name starts one past the prefix's length in them.
    let name_at = prefix.chars().count() as i32 + 1;
    db::query_kept(
        &sql,
        &[
            ws.id.as_str().into(),
            from.into(),
            upper.into(),
            prefix.into(),
            name_at.into(),
            limit.into(),
        ],
        file_row,
    )
}

/// One row of a [`file_rows`] query.
pub fn file_row(row: &Row) -> Outcome<FileRow> {
    let body_hash: Vec<u8> = db::get(row, 2)?;
    let body_size: i64 = db::get(row, 3)?;
    Ok(FileRow {
        path: db::get(row, 1)?,
        content_hash: db::opt(row, 4)?.unwrap_or_else(|| body_hash.clone()),
        content_size: db::opt(row, 5)?.unwrap_or(body_size),
        metadata: db::json(row, 6)?.unwrap_or_else(|| Value::Object(Default::default())),
        body_hash,
        body_size,
        body: None,
        redacted: db::get(row, 7)?,
        kind: Kind::parse(&db::get::<String>(row, 8)?).unwrap_or_default(),
        mode: db::get::<i32>(row, 9)? as u32,
        mtime_ns: db::opt(row, 10)?,
    })
}

/// A row of [`with_visible_rows`] as a manifest entry, read where it lies (no body).
pub fn manifest_entry<'a>(row: &Row<'a>) -> Outcome<ManifestEntry<'a>> {
    let body_hash = row.bytes(2)?.ok_or_else(|| db::missing(2))?;
    let body_size: i64 = db::get(row, 3)?;
    Ok(ManifestEntry {
        path: row.text(1)?.ok_or_else(|| db::missing(1))?,
        content_hash: row.bytes(4)?.unwrap_or(body_hash),
        size: db::opt(row, 5)?.unwrap_or(body_size),
        body_hash,
        body_size,
        metadata: db::json(row, 6)?,
        body: None,
        redacted: db::get(row, 7)?,
        kind: Kind::parse(row.text(8)?.ok_or_else(|| db::missing(8))?).unwrap_or_default(),
        mode: db::get::<i32>(row, 9)? as u32,
        mtime_ns: db::opt(row, 10)?,
    })
}

/// The body hash and size of a row of [`with_visible_rows`] when it is a symbolic link that
/// was not redacted: its body is its target, which a manifest carries.
pub fn link_body<'a>(row: &Row<'a>) -> Outcome<Option<(&'a [u8], i64)>> {
    if row.text(8)? != Some(Kind::Symlink.as_str()) || db::get::<bool>(row, 7)? {
        return Ok(None);
    }
    let hash = row.bytes(2)?.ok_or_else(|| db::missing(2))?;
    Ok(Some((hash, db::get(row, 3)?)))
}

/// The stored state of one path.
#[derive(Clone, PartialEq)]
pub struct Version {
    pub body_hash: Vec<u8>,
    pub body_size: i64,
    pub content_hash: Vec<u8>,
    pub content_size: i64,
    pub metadata: Value,
    pub kind: Kind,
    pub mode: u32,
    /// `None` until written: the commit's time (see [`write`]).
    pub mtime_ns: Option<i64>,
}

impl Version {
    /// A redaction tombstone (see `redactions::tombstone`): content with no body and no hash,
    /// so never a delta base nor a hash a receipt shows.
    pub fn is_tombstone(&self) -> bool {
        self.body_hash.is_empty()
    }

    /// Hashes new content: the body, and the rendered document (the same hash when there is
    /// no metadata), with the content's kind, mode (or its kind's default) and time.
    pub fn of(content: &Content) -> Self {
        let body_hash = sha256(&content.body).to_vec();
        let (content_hash, content_size) = if content.metadata.is_empty() {
            (body_hash.clone(), content.body.len())
        } else {
            let rendered = render(&content.body, &content.metadata);
            (sha256(&rendered).to_vec(), rendered.len())
        };
        Version {
            body_hash,
            body_size: content.body.len() as i64,
            content_hash,
            content_size: content_size as i64,
            metadata: metadata_to_json(&content.metadata),
            kind: content.attrs.kind,
            mode: content.attrs.mode_or_default(),
            mtime_ns: content.attrs.mtime_ns,
        }
    }

    /// Whether this version holds the same content, kind and mode as `other` (its time aside).
    pub fn same_content(&self, other: &Version) -> bool {
        self.body_hash == other.body_hash
            && self.content_hash == other.content_hash
            && self.metadata == other.metadata
            && self.kind == other.kind
            && self.mode == other.mode
    }
}

/// The stored versions of `paths` at position `at` (`None`: the head).
pub fn versions(
    schema: Schema,
    ws: &Workspace,
    at: Option<i64>,
    paths: Vec<String>,
) -> Outcome<BTreeMap<String, Version>> {
    Ok(files_at_paths(schema, ws, at, paths)?
        .into_iter()
        .map(version)
        .collect())
}

/// The files among `paths` that the workspace sees at position `at` (`None`: the head), in
/// path order: each path looked up by key, so the cost follows `paths`, never the tree.
pub fn files_at_paths(
    schema: Schema,
    ws: &Workspace,
    at: Option<i64>,
    paths: Vec<String>,
) -> Outcome<Vec<FileRow>> {
    let columns = file_columns(schema);
    let mut rows = if ws.sources.is_empty() && at.is_none() {
        // What every commit runs: a kept, generic plan that looks each path up by the open
        // index's full key (a LATERAL subquery with LIMIT 1 is never flattened), whatever the
        // statistics say about the workspace's size. (`path = ANY(...)` on a workspace never
        // analysed was planned as a scan of all its open rows.)
        db::query_generic(
            &format!(
                "SELECT e.* FROM unnest($2::text[]) p (path)
                  CROSS JOIN LATERAL (SELECT {columns} FROM supabash.entries e
                                       WHERE e.workspace_id = $1::uuid AND e.valid_until IS NULL
                                         AND e.path = p.path LIMIT 1) e"
            ),
            &[ws.id.as_str().into(), paths.into()],
            file_row,
        )?
    } else {
        let sql = lineage::visible_sql(&ws.sources, at.is_none(), columns, "e.path = ANY($5)");
        let mut args = lineage::visible_args(&ws.id, &ws.sources, at);
        args.push(paths.into());
        // Planned for its arguments (a custom plan sees the array's length).
        file_rows(&sql, &args)?
    };
    rows.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(rows)
}

/// A stored file row as a path and its version.
pub fn version(r: FileRow) -> (String, Version) {
    let v = Version {
        body_hash: r.body_hash,
        body_size: r.body_size,
        content_hash: r.content_hash,
        content_size: r.content_size,
        metadata: r.metadata,
        kind: r.kind,
        mode: r.mode,
        mtime_ns: r.mtime_ns,
    };
    (r.path, v)
}

/// The statement closing the open rows of workspace `$1` for the paths in array `$<paths>` at
/// position `$2`, answering their paths. The rows are found by the open index's full key, one
/// LATERAL lookup per path, and updated by row id: a kept generic plan that cannot turn into
/// a scan of the workspace whatever the statistics say.
fn close_sql(paths: usize) -> String {
    format!(
        "UPDATE supabash.entries SET valid_until = $2
          WHERE ctid = ANY (ARRAY(
                  SELECT o.ctid FROM unnest(${paths}::text[]) p (path)
                   CROSS JOIN LATERAL (SELECT x.ctid FROM supabash.entries x
                                        WHERE x.workspace_id = $1::uuid AND x.valid_until IS NULL
                                          AND x.path = p.path LIMIT 1) o))
          RETURNING path"
    )
}

/// Closes the open interval of every path in `close` and opens one for each of `paths` with
/// its version from `position` on, set-based: one statement for a workspace without fork
/// ancestry. In a fork, a closed path that was still inherited first gets its copy row (see
/// `lineage`): the inherited row as it is, tombstone or not, valid from the fork's first
/// position to this one. A version without a time gets the commit's (the transaction's
/// `now()`).
pub fn write(
    schema: Schema,
    ws: &Workspace,
    position: i64,
    close: &[String],
    paths: &[String],
    versions: &[Version],
) -> Outcome<()> {
    if ws.sources.is_empty() {
        return open_rows(schema, &ws.id, position, paths, versions, close);
    }
    if !close.is_empty() {
        let closed: HashSet<String> = db::rows_kept(
            &close_sql(3),
            &[
                ws.id.as_str().into(),
                position.into(),
                close.to_vec().into(),
            ],
            |r| db::get::<String>(r, 1),
        )?
        .into_iter()
        .collect();
        let inherited: Vec<String> = close
            .iter()
            .filter(|p| !closed.contains(*p))
            .cloned()
            .collect();
        if !ws.sources.is_empty() && !inherited.is_empty() {
            let visible =
                lineage::visible_sql(&ws.sources, true, file_columns(schema), "e.path = ANY($5)");
            // The attribute columns exist from 0.6.0 on.
            let (posix, posix_from) = if schema.posix_entries {
                (", kind, mode, mtime_ns", ", v.kind, v.mode, v.mtime_ns")
            } else {
                ("", "")
            };
            let mut args = lineage::visible_args(&ws.id, &ws.sources, None);
            args.extend([
                inherited.into(),
                lineage::FIRST_POSITION.into(),
                position.into(),
            ]);
            db::exec(
                &format!(
                    "INSERT INTO supabash.entries
                            (workspace_id, path, valid_from, valid_until, body_hash, body_size,
                             content_hash, content_size, metadata, redacted{posix})
                     SELECT $1::uuid, v.path, $6, $7, v.body_hash, v.body_size,
                            v.content_hash, v.content_size, v.metadata, v.redacted{posix_from}
                       FROM ({visible}) AS v ({FILE_COLUMN_NAMES})"
                ),
                &args,
            )?;
        }
    }
    open_rows(schema, &ws.id, position, paths, versions, &[])
}

/// Inserts open entry rows of `ws` (valid from position `from` on), set-based, after closing
/// the open rows of `close` at `from` in the same statement (its INSERT reads a count of the
/// closed rows, so the close has run to its end before the first row goes in: the open index
/// is unique).
fn open_rows(
    schema: Schema,
    ws: &str,
    from: i64,
    paths: &[String],
    versions: &[Version],
    close: &[String],
) -> Outcome<()> {
    if paths.is_empty() && close.is_empty() {
        return Ok(());
    }
    let until: Option<i64> = None;
    let bh: Vec<Vec<u8>> = versions.iter().map(|v| v.body_hash.clone()).collect();
    let bs: Vec<i64> = versions.iter().map(|v| v.body_size).collect();
    // Without metadata the content is the body: NULL content columns (see supabash.entries).
    let plain = |v: &Version| v.metadata.as_object().is_none_or(|m| m.is_empty());
    let ch: Vec<Option<Vec<u8>>> = versions
        .iter()
        .map(|v| (!plain(v)).then(|| v.content_hash.clone()))
        .collect();
    let cs: Vec<Option<i64>> = versions
        .iter()
        .map(|v| (!plain(v)).then_some(v.content_size))
        .collect();
    let md: Vec<Option<pgrx::JsonB>> = versions
        .iter()
        .map(|v| (!plain(v)).then(|| pgrx::JsonB(v.metadata.clone())))
        .collect();
    let after_close = |insert: &str, mut args: Vec<DatumWithOid>| -> Outcome<()> {
        if close.is_empty() {
            return db::exec_kept(insert, &args);
        }
        let sql = format!(
            "WITH closed AS ({}) {insert} FROM (SELECT count(*) FROM closed) c",
            close_sql(args.len() + 1)
        );
        args.push(close.to_vec().into());
        db::exec_kept(&sql, &args)
    };
    if !schema.posix_entries {
        // 0.5.0: regular files only (commit refused anything else before writing).
        return after_close(
            "INSERT INTO supabash.entries
                    (workspace_id, path, valid_from, valid_until, body_hash, body_size, content_hash, content_size, metadata)
             SELECT $1::uuid, unnest($4::text[]), $2, $3, unnest($5::bytea[]), unnest($6::bigint[]),
                    unnest($7::bytea[]), unnest($8::bigint[]), unnest($9::jsonb[])",
            vec![ws.into(), from.into(), until.into(), paths.to_vec().into(), bh.into(), bs.into(), ch.into(), cs.into(), md.into()],
        );
    }
    let kinds: Vec<&str> = versions.iter().map(|v| v.kind.as_str()).collect();
    let modes: Vec<i32> = versions.iter().map(|v| v.mode as i32).collect();
    let now = if versions.iter().any(|v| v.mtime_ns.is_none()) {
        crate::pg::clock::now_ns()
    } else {
        0
    };
    let times: Vec<i64> = versions.iter().map(|v| v.mtime_ns.unwrap_or(now)).collect();
    after_close(
        "INSERT INTO supabash.entries
                (workspace_id, path, valid_from, valid_until, body_hash, body_size, content_hash, content_size, metadata,
                 kind, mode, mtime_ns)
         SELECT $1::uuid, unnest($4::text[]), $2, $3, unnest($5::bytea[]), unnest($6::bigint[]),
                unnest($7::bytea[]), unnest($8::bigint[]), unnest($9::jsonb[]),
                unnest($10::text[]), unnest($11::integer[]), unnest($12::bigint[])",
        vec![ws.into(), from.into(), until.into(), paths.to_vec().into(), bh.into(), bs.into(), ch.into(), cs.into(), md.into(),
          kinds.into(), modes.into(), times.into()],
    )
}

/// For each of `leaves` below which the head holds an entry (other than the `deleted` ones):
/// the leaf and one such entry's path (see `rpc::tree_shape`). Each leaf is an index range
/// probe between bounds computed here (`leaf/` and `leaf0`): computed in the statement
/// (`l.leaf || '/'`), the bounds went through `textcat`, which is not leakproof, so under
/// row-level security the range could not become an index condition and every new file of a
/// commit scanned all the open entries (1,838 rows per leaf at 1,000 files; a commit of 2,000
/// new files at 70,000 files took a minute).
pub fn first_below(
    schema: Schema,
    ws: &Workspace,
    leaves: &[String],
    deleted: &[String],
) -> Outcome<Vec<(String, String)>> {
    let visible = lineage::visible_sql(
        &ws.sources,
        true,
        file_columns(schema),
        "e.path > l.lo AND e.path < l.hi AND NOT (e.path = ANY($6))",
    );
    let lows: Vec<String> = leaves.iter().map(|l| format!("{l}/")).collect();
    let highs: Vec<String> = leaves.iter().map(|l| format!("{l}0")).collect();
    let mut args = lineage::visible_args(&ws.id, &ws.sources, None);
    args.extend([
        leaves.to_vec().into(),
        deleted.to_vec().into(),
        lows.into(),
        highs.into(),
    ]);
    db::query(
        &format!(
            "SELECT l.leaf, (SELECT v.path FROM ({visible}) AS v ({FILE_COLUMN_NAMES}) LIMIT 1)
               FROM unnest($5::text[], $7::text[], $8::text[]) AS l(leaf, lo, hi)"
        ),
        &args,
        |r| Ok((db::get::<String>(r, 1)?, db::opt::<String>(r, 2)?)),
    )
    .map(|rows| {
        rows.into_iter()
            .filter_map(|(leaf, below)| below.map(|b| (leaf, b)))
            .collect()
    })
}

/// The paths of `paths` that changed in `ws` in positions `(lo, hi]`: one of the workspace's
/// own rows for it opens or closes there (an edit, a create, a delete, or a fork's first touch
/// of an inherited path, whose copied row closes there). Sorted.
pub fn changed_between(ws: &str, paths: &[String], lo: i64, hi: i64) -> Outcome<Vec<String>> {
    db::query(
        "SELECT DISTINCT path FROM supabash.entries
          WHERE workspace_id = $1::uuid AND path = ANY($2)
            AND ((valid_from > $3 AND valid_from <= $4)
                 OR (valid_until > $3 AND valid_until <= $4))
          ORDER BY path",
        &[ws.into(), paths.to_vec().into(), lo.into(), hi.into()],
        |r| db::get::<String>(r, 1),
    )
}

/// Deletes every entry row of `ws`.
pub fn delete_all(ws: &str) -> Outcome<()> {
    db::exec(
        "DELETE FROM supabash.entries WHERE workspace_id = $1::uuid",
        &[ws.into()],
    )
}

/// Deletes the entries of hidden workspace `id` that none of its forks reads: those visible
/// at no fork point, except a fork's copies of inherited versions (see `lineage`).
pub fn keep_only_fork_points(id: &str, is_fork: bool) -> Outcome<()> {
    db::exec(
        "DELETE FROM supabash.entries e
          WHERE e.workspace_id = $1::uuid
            AND NOT ($2 AND e.valid_from = $3)
            AND NOT EXISTS (SELECT 1 FROM supabash.workspaces c
                             WHERE c.fork_of = $1::uuid AND e.valid_from <= c.fork_position
                               AND (e.valid_until IS NULL OR e.valid_until > c.fork_position))",
        &[id.into(), is_fork.into(), lineage::FIRST_POSITION.into()],
    )
}

/// Deletes the entry rows `(paths[i], froms[i])` of `ws`.
pub fn delete_rows(ws: &str, paths: &[String], froms: &[i64]) -> Outcome<()> {
    db::exec(
        "DELETE FROM supabash.entries e USING unnest($2::text[], $3::bigint[]) AS d(path, valid_from)
          WHERE e.workspace_id = $1::uuid AND e.path = d.path AND e.valid_from = d.valid_from",
        &[ws.into(), paths.to_vec().into(), froms.to_vec().into()],
    )
}

//! The content-addressed body store of a workspace (`supabash.bodies`): storing new bodies,
//! as deltas against the previous version of their file where that is smaller, and loading
//! plain bytes back through any chain of deltas. `stored` owns the byte format.

use crate::pg::budget;
use crate::pg::db;
use crate::pg::fail::{Fail, Outcome};
use crate::pg::interrupt;
use crate::store::encoding;
use std::collections::HashMap;
use supabash_core::Marker;

/// The longest chain of deltas a body may sit on; the next version of the file is stored
/// whole, so a read decodes at most this many frames more than the body itself.
pub const MAX_CHAIN: usize = 8;

/// A loaded body: its plain bytes and the number of deltas under it (0 for a whole body).
pub struct Body {
    pub bytes: Vec<u8>,
    pub depth: usize,
}

/// A stored row: its stored form, plain size, and the hash of its base when it is a delta.
pub(crate) struct Row {
    pub(crate) stored: Vec<u8>,
    pub(crate) size: i64,
    pub(crate) base: Option<Vec<u8>>,
}

fn corrupt(message: &str) -> Fail {
    Fail::new(Marker::HistoryCorruption, message)
}

/// A body and the bases under it, at most `MAX_CHAIN` deltas deep (a longer chain is
/// corruption, reported when decoding). Plan-stable whatever the statistics say: every body,
/// the wanted ones and each base down the chain, is reached through a LATERAL subquery with
/// `LIMIT 1`, which the planner cannot flatten into a join, so it runs once per hash as a
/// primary-key lookup with both key columns bound. (A plain join in the recursive step was
/// planned on stale or skewed statistics as one scan of every body of the workspace with the
/// hash as a join filter; `hash = ANY($2)` in a generic plan as a scan of the workspace with
/// the array as a filter.) `chain_plan_is_keyed` in the in-backend tests checks the plan.
pub(crate) const CHAIN_SQL: &str = "
WITH RECURSIVE chain AS (
  SELECT b.hash, b.body, b.size, b.base_hash, 0 AS depth FROM unnest($2::bytea[]) w (hash)
   CROSS JOIN LATERAL (SELECT s.hash, s.body, s.size, s.base_hash FROM supabash.bodies s
                        WHERE s.workspace_id = $1::uuid AND s.hash = w.hash LIMIT 1) b
  UNION ALL
  SELECT b.hash, b.body, b.size, b.base_hash, c.depth + 1 FROM chain c
   CROSS JOIN LATERAL (SELECT s.hash, s.body, s.size, s.base_hash FROM supabash.bodies s
                        WHERE s.workspace_id = $1::uuid AND s.hash = c.base_hash LIMIT 1) b
   WHERE c.depth < $3 AND c.base_hash IS NOT NULL)
SELECT hash, body, size, base_hash FROM chain";

/// [`CHAIN_SQL`] for many hashes (a snapshot, a bulk commit): the start is one primary-key scan
/// with the array as its condition, planned for each call (a custom plan knows the array's
/// length: one LATERAL probe per body costs about twice as much at a thousand bodies); the
/// recursive step is the same keyed probe per base.
const CHAIN_MANY_SQL: &str = "
WITH RECURSIVE chain AS (
  SELECT hash, body, size, base_hash, 0 AS depth FROM supabash.bodies
   WHERE workspace_id = $1::uuid AND hash = ANY($2)
  UNION ALL
  SELECT b.hash, b.body, b.size, b.base_hash, c.depth + 1 FROM chain c
   CROSS JOIN LATERAL (SELECT s.hash, s.body, s.size, s.base_hash FROM supabash.bodies s
                        WHERE s.workspace_id = $1::uuid AND s.hash = c.base_hash LIMIT 1) b
   WHERE c.depth < $3 AND c.base_hash IS NOT NULL)
SELECT hash, body, size, base_hash FROM chain";

/// Up to this many hashes go through [`CHAIN_SQL`]'s kept generic plan, more through
/// [`CHAIN_MANY_SQL`] planned per call.
const FEW_HASHES: usize = 32;

/// Fetches the rows of `hashes` and of the bases under them, in one query; a body or base
/// that is missing is HISTORY_CORRUPTION.
fn fetch_chains(ws: &str, mut hashes: Vec<Vec<u8>>) -> Outcome<HashMap<Vec<u8>, Row>> {
    hashes.sort();
    hashes.dedup();
    let fetched = chain_rows(ws, &hashes)?;
    if hashes.iter().any(|h| !fetched.contains_key(h)) {
        return Err(corrupt("a stored body is missing"));
    }
    Ok(fetched)
}

/// The rows of `hashes` and of the bases under them, at most `MAX_CHAIN` deltas deep, by
/// hash; what is missing is simply absent (`verify` reports it).
pub(crate) fn chain_rows(ws: &str, hashes: &[Vec<u8>]) -> Outcome<HashMap<Vec<u8>, Row>> {
    // A commit's few hashes: a kept, generic plan (planning this recursive query takes several
    // times longer than running it, and a commit runs it for every edit).
    let args = [ws.into(), hashes.to_vec().into(), (MAX_CHAIN as i32).into()];
    let row = |row: &db::Row| {
        let hash: Vec<u8> = db::get(row, 1)?;
        let stored = db::get(row, 2)?;
        let size = db::get(row, 3)?;
        let base = db::opt(row, 4)?;
        Ok((hash, Row { stored, size, base }))
    };
    let rows = if hashes.len() <= FEW_HASHES {
        db::query_generic(CHAIN_SQL, &args, row)?
    } else {
        db::query(CHAIN_MANY_SQL, &args, row)?
    };
    let mut out = HashMap::with_capacity(rows.len());
    for (hash, row) in rows {
        out.entry(hash).or_insert(row);
    }
    Ok(out)
}

/// Decodes `hash` (and the bases under it) into `done`.
fn resolve(
    hash: &[u8],
    rows: &HashMap<Vec<u8>, Row>,
    done: &mut HashMap<Vec<u8>, Body>,
) -> Outcome<()> {
    // The chain from `hash` down to a whole body or to one already decoded.
    let mut chain = vec![hash.to_vec()];
    while let Some(base) = rows[chain.last().unwrap()].base.as_ref() {
        if done.contains_key(base) {
            break;
        }
        if chain.len() > MAX_CHAIN {
            return Err(corrupt("a stored body sits on too long a chain of deltas"));
        }
        if !rows.contains_key(base) {
            return Err(corrupt("a stored body is missing"));
        }
        chain.push(base.clone());
    }
    for h in chain.into_iter().rev() {
        if done.contains_key(&h) {
            continue;
        }
        let row = &rows[&h];
        if encoding::is_delta(&row.stored) != row.base.is_some() {
            return Err(corrupt("a stored body and its base disagree"));
        }
        let body = match &row.base {
            None => Body {
                bytes: encoding::decode(&row.stored, None)?,
                depth: 0,
            },
            Some(base) => {
                let base = &done[base];
                let bytes = encoding::decode(&row.stored, Some(&base.bytes))?;
                // A delta decoded against the wrong bytes need not fail; its hash does.
                if interrupt::sha256(&bytes).as_slice() != h.as_slice() {
                    return Err(corrupt("a stored body does not match its hash"));
                }
                Body {
                    bytes,
                    depth: base.depth + 1,
                }
            }
        };
        done.insert(h, body);
    }
    Ok(())
}

/// The plain bytes of every body in `hashes` (and of the bases they sit on), by hash. A body
/// or base that is missing or unreadable is HISTORY_CORRUPTION. The caller has charged the
/// call's budget for `hashes` (see [`load_charged`]); the bases under deltas, at most
/// `encoding::MAX_DELTA_BODY` each, are charged here.
fn load(ws: &str, hashes: Vec<Vec<u8>>) -> Outcome<HashMap<Vec<u8>, Body>> {
    let rows = fetch_chains(ws, hashes.clone())?;
    // A set, not the list: a snapshot asks for thousands of bodies, and a scan of the list per
    // row is quadratic.
    let wanted: std::collections::HashSet<&Vec<u8>> = hashes.iter().collect();
    let bases: u64 = rows
        .iter()
        .filter(|(h, _)| !wanted.contains(h))
        .map(|(_, r)| r.size.max(0) as u64)
        .sum();
    budget::charge(bases)?;
    let mut done = HashMap::with_capacity(rows.len());
    for hash in &hashes {
        if !done.contains_key(hash) {
            resolve(hash, &rows, &mut done)?;
        }
    }
    Ok(done)
}

/// [`load`] for bodies whose plain sizes are `(hash, size)`: charges the call's budget for
/// them (each body once) before anything is fetched.
pub fn load_charged(ws: &str, wanted: &[(Vec<u8>, i64)]) -> Outcome<HashMap<Vec<u8>, Body>> {
    let mut hashes: Vec<Vec<u8>> = Vec::with_capacity(wanted.len());
    let mut total = 0u64;
    let mut seen = std::collections::HashSet::with_capacity(wanted.len());
    for (hash, size) in wanted {
        if seen.insert(hash) {
            total += (*size).max(0) as u64;
            hashes.push(hash.clone());
        }
    }
    if hashes.is_empty() {
        return Ok(HashMap::new());
    }
    budget::charge(total)?;
    load(ws, hashes)
}

/// The first `max` plain bytes of each body in `wanted` (`(hash, size)`), by hash. Whole bodies
/// are fetched only as far as `encoding::prefix_needed(max)` and decoded only that far; deltas
/// (at most `encoding::MAX_DELTA_BODY`) are decoded whole, charged to the call's budget.
pub fn prefixes(
    ws: &str,
    wanted: &[(Vec<u8>, i64)],
    max: usize,
) -> Outcome<HashMap<Vec<u8>, Vec<u8>>> {
    let hashes: Vec<Vec<u8>> = wanted.iter().map(|(h, _)| h.clone()).collect();
    budget::charge(
        wanted
            .iter()
            .map(|(_, s)| (*s).max(0) as u64)
            .map(|s| s.min(max as u64))
            .sum(),
    )?;
    let rows = db::query(
        "SELECT hash, substring(body FROM 1 FOR $3), base_hash IS NOT NULL FROM supabash.bodies
          WHERE workspace_id = $1::uuid AND hash = ANY($2)",
        &[
            ws.into(),
            hashes.into(),
            (encoding::prefix_needed(max) as i32).into(),
        ],
        |r| {
            Ok((
                db::get::<Vec<u8>>(r, 1)?,
                db::get::<Vec<u8>>(r, 2)?,
                db::get::<bool>(r, 3)?,
            ))
        },
    )?;
    let sizes: HashMap<&[u8], i64> = wanted.iter().map(|(h, s)| (h.as_slice(), *s)).collect();
    let mut out = HashMap::with_capacity(rows.len());
    let mut deltas = Vec::new();
    for (hash, stored_prefix, delta) in rows {
        if delta {
            let size = sizes.get(hash.as_slice()).copied().unwrap_or(0);
            deltas.push((hash, size));
        } else {
            out.insert(hash, encoding::decode_prefix(&stored_prefix, max)?);
        }
    }
    let mut loaded = load_charged(ws, &deltas)?;
    for (hash, _) in deltas {
        if let Some(body) = loaded.remove(&hash) {
            let mut bytes = body.bytes;
            bytes.truncate(max);
            out.insert(hash, bytes);
        }
    }
    if out.len() < wanted.len() {
        return Err(corrupt("a stored body is missing"));
    }
    Ok(out)
}

/// Whether the stored bodies under the hashes of `bodies` hold exactly their bytes (the
/// collision check), decoding whole bodies a block at a time.
fn stored_equal(ws: &str, bodies: &[&New]) -> Outcome<bool> {
    let hashes: Vec<Vec<u8>> = bodies.iter().map(|b| b.hash.clone()).collect();
    let stored: HashMap<Vec<u8>, Vec<u8>> = db::query(
        "SELECT hash, body FROM supabash.bodies WHERE workspace_id = $1::uuid AND hash = ANY($2)",
        &[ws.into(), hashes.into()],
        |r| Ok((db::get::<Vec<u8>>(r, 1)?, db::get::<Vec<u8>>(r, 2)?)),
    )?
    .into_iter()
    .collect();
    for b in bodies {
        let form = stored
            .get(&b.hash)
            .ok_or_else(|| corrupt("a stored body is missing"))?;
        let same = match encoding::same_bytes(form, &b.bytes)? {
            Some(same) => same,
            None => load(ws, vec![b.hash.clone()])?
                .get(&b.hash)
                .is_some_and(|d| d.bytes == b.bytes),
        };
        if !same {
            return Ok(false);
        }
    }
    Ok(true)
}

/// A body to store: its hash, plain bytes, and the hash and plain size of the body it
/// replaces in its file (a candidate base for a delta).
pub struct New {
    pub hash: Vec<u8>,
    pub bytes: Vec<u8>,
    pub previous: Option<(Vec<u8>, usize)>,
}

impl New {
    /// The base worth trying: both bodies at most `encoding::MAX_DELTA_BODY`.
    fn candidate_base(&self) -> Option<&Vec<u8>> {
        let small = |n: usize| n <= encoding::MAX_DELTA_BODY;
        match &self.previous {
            Some((hash, size)) if small(*size) && small(self.bytes.len()) => Some(hash),
            _ => None,
        }
    }
}

/// Stores new bodies once; an existing body under the same hash must hold the same bytes.
/// A body is stored as a delta against its file's previous version when both are at most
/// `encoding::MAX_DELTA_BODY`, the previous version sits on fewer than `MAX_CHAIN` deltas,
/// and the delta is the smallest form. Arrays are unnested in the select list (lock-step,
/// streamed) rather than in FROM, where a function scan would first copy every body into a
/// tuplestore that spills past `work_mem`.
/// Returns the plain bytes of the bodies it added (not counting ones already stored).
pub fn store(ws: &str, bodies: Vec<New>) -> Outcome<i64> {
    if bodies.is_empty() {
        return Ok(0);
    }
    let wanted: Vec<(Vec<u8>, i64)> = bodies
        .iter()
        .filter_map(|b| Some((b.candidate_base()?.clone(), b.previous.as_ref()?.1 as i64)))
        .collect();
    // Deltas only save space: when decoding the bases would pass the call's budget, the new
    // bodies are stored whole instead.
    let bases = match load_charged(ws, &wanted) {
        Ok(bases) => bases,
        Err(f) if f.marker == Marker::Quota => HashMap::new(),
        Err(f) => return Err(f),
    };
    let mut encoded = Vec::with_capacity(bodies.len());
    let mut base_hashes: Vec<Option<Vec<u8>>> = Vec::with_capacity(bodies.len());
    for b in &bodies {
        let base = b
            .candidate_base()
            .and_then(|h| bases.get(h).map(|body| (h, body)))
            .filter(|(_, body)| body.depth < MAX_CHAIN);
        let (form, delta) = encoding::encode(&b.bytes, base.map(|(_, body)| body.bytes.as_slice()));
        encoded.push(form);
        base_hashes.push(base.filter(|_| delta).map(|(h, _)| h.clone()));
    }
    let sizes: Vec<i64> = bodies.iter().map(|b| b.bytes.len() as i64).collect();
    let hashes: Vec<Vec<u8>> = bodies.iter().map(|b| b.hash.clone()).collect();
    let inserted: std::collections::HashSet<Vec<u8>> = db::rows_kept(
        "INSERT INTO supabash.bodies (workspace_id, hash, size, body, base_hash)
         SELECT $1::uuid, unnest($2::bytea[]), unnest($3::bigint[]), unnest($4::bytea[]),
                unnest($5::bytea[])
         ON CONFLICT ON CONSTRAINT bodies_pkey DO NOTHING
         RETURNING hash",
        &[
            ws.into(),
            hashes.into(),
            sizes.into(),
            encoded.into(),
            base_hashes.into(),
        ],
        |r| db::get::<Vec<u8>>(r, 1),
    )?
    .into_iter()
    .collect();
    // Bodies already stored under these hashes must hold the bytes we were given (their
    // stored forms are no larger than the request's bytes), compared a block at a time.
    let existing: Vec<&New> = bodies
        .iter()
        .filter(|b| !inserted.contains(&b.hash))
        .collect();
    let collides = !existing.is_empty() && !stored_equal(ws, &existing)?;
    if collides {
        return Err(Fail::new(
            Marker::BodyHashCollision,
            "stored bytes differ from new bytes with the same SHA-256",
        ));
    }
    Ok(bodies
        .iter()
        .filter(|b| inserted.contains(&b.hash))
        .map(|b| b.bytes.len() as i64)
        .sum())
}

/// Bodies of `store` that no entry of any workspace of the store references, directly or as a
/// delta base down a chain: the SQL of their `(hash, size)`, with `$1` the store and `$2`..`$4`
/// entries to count as gone already (workspace ids, paths, valid_from; see `purge`).
pub fn garbage_sql() -> String {
    let store = "w.store_id";
    format!(
        "
WITH RECURSIVE gone (workspace_id, path, valid_from) AS (
  SELECT * FROM unnest($2::uuid[], $3::text[], $4::bigint[])),
live (hash) AS (
  SELECT e.body_hash FROM supabash.entries e
    JOIN supabash.workspaces w ON w.id = e.workspace_id AND {store} = $1::uuid
   WHERE (e.workspace_id, e.path, e.valid_from) NOT IN (SELECT * FROM gone)
  UNION
  SELECT b.base_hash FROM live l
    JOIN supabash.bodies b ON b.workspace_id = $1::uuid AND b.hash = l.hash
   WHERE b.base_hash IS NOT NULL)
SELECT b.hash, b.size FROM supabash.bodies b
 WHERE b.workspace_id = $1::uuid AND b.hash NOT IN (SELECT hash FROM live)"
    )
}

/// Deletes the bodies of `store` nothing references any more (see [`garbage_sql`]); answers
/// how many went and their plain bytes. The caller holds the family's locks
/// (`access::lock_family`), so no commit can reference one of them meanwhile.
pub fn collect_garbage(store: &str) -> Outcome<(i64, i64)> {
    let none: Vec<String> = Vec::new();
    let froms: Vec<i64> = Vec::new();
    let gone = db::rows(
        &format!(
            "WITH dead AS ({})
             DELETE FROM supabash.bodies b USING dead
              WHERE b.workspace_id = $1::uuid AND b.hash = dead.hash
             RETURNING b.size",
            garbage_sql()
        ),
        &[store.into(), none.clone().into(), none.into(), froms.into()],
        |r| db::get::<i64>(r, 1),
    )?;
    Ok((gone.len() as i64, gone.iter().sum()))
}

/// The bodies of `store` (hash, plain size) no entry references once the entry rows
/// `(workspaces[i], paths[i], froms[i])` are gone (see [`garbage_sql`]).
pub fn unreferenced_after(
    store: &str,
    workspaces: &[String],
    paths: &[String],
    froms: &[i64],
) -> Outcome<Vec<(Vec<u8>, i64)>> {
    db::query(
        &garbage_sql(),
        &[
            store.into(),
            workspaces.to_vec().into(),
            paths.to_vec().into(),
            froms.to_vec().into(),
        ],
        |r| Ok((db::get(r, 1)?, db::get(r, 2)?)),
    )
}

/// The orphan bodies of a store: how many, their bytes, and the first listed by hash as
/// (hex hash, size).
pub struct Orphans {
    pub count: i64,
    pub bytes: i64,
    pub listed: Vec<(String, i64)>,
}

/// The orphan bodies of `store` (see [`garbage_sql`]), listing at most `room` of them.
pub fn orphans(store: &str, room: i64) -> Outcome<Orphans> {
    let none: Vec<String> = Vec::new();
    Ok(db::query_row(
        &format!(
            "WITH g AS ({}), listed AS (SELECT hash, size FROM g ORDER BY hash LIMIT $5)
             SELECT (SELECT count(*) FROM g), (SELECT coalesce(sum(size), 0)::bigint FROM g),
                    (SELECT coalesce(array_agg(encode(hash, 'hex') ORDER BY hash), '{{}}') FROM listed),
                    (SELECT coalesce(array_agg(size ORDER BY hash), '{{}}') FROM listed)",
            garbage_sql()
        ),
        &[
            store.into(),
            none.clone().into(),
            none.into(),
            Vec::<i64>::new().into(),
            room.into(),
        ],
        |r| {
            let hashes: Vec<String> = db::get(r, 3)?;
            let sizes: Vec<i64> = db::get(r, 4)?;
            Ok(Orphans {
                count: db::get(r, 1)?,
                bytes: db::get(r, 2)?,
                listed: hashes.into_iter().zip(sizes).collect(),
            })
        },
    )?
    .expect("an aggregate query returns one row"))
}

/// Deletes bodies `hashes` of `store` (the caller made sure nothing references them).
pub fn delete(store: &str, hashes: &[Vec<u8>]) -> Outcome<()> {
    db::exec(
        "DELETE FROM supabash.bodies WHERE workspace_id = $1::uuid AND hash = ANY($2)",
        &[store.into(), hashes.to_vec().into()],
    )
}

//! The content-addressed body store of a workspace (`supabash.bodies`): storing new bodies,
//! as deltas against the previous version of their file where that is smaller, and loading
//! plain bytes back through any chain of deltas. `stored` owns the byte format.

use crate::db;
use crate::fail::{Fail, Outcome};
use crate::stored;
use pgrx::prelude::*;
use pgrx::spi::OwnedPreparedStatement;
use pgrx::{PgBuiltInOids, PgOid};
use std::cell::RefCell;
use std::collections::HashMap;
use supabash_core::hash::sha256;
use supabash_core::Marker;

/// The longest chain of deltas a body may sit on; the next version of the file is stored
/// whole, so a read decodes at most this many frames more than the body itself.
pub const MAX_CHAIN: usize = 8;

/// A loaded body: its plain bytes and the number of deltas under it (0 for a whole body).
pub struct Body {
    pub bytes: Vec<u8>,
    pub depth: usize,
}

/// A stored row: its stored form and the hash of its base when it is a delta.
struct Row {
    stored: Vec<u8>,
    base: Option<Vec<u8>>,
}

fn corrupt(message: &str) -> Fail {
    Fail::new(Marker::HistoryCorruption, message)
}

/// A body and the bases under it, at most `MAX_CHAIN` deltas deep (a longer chain is
/// corruption, reported when decoding).
const CHAIN_SQL: &str = "
WITH RECURSIVE chain AS (
  SELECT hash, body, base_hash, 0 AS depth FROM supabash.bodies
   WHERE workspace_id = $1::uuid AND hash = ANY($2)
  UNION ALL
  SELECT b.hash, b.body, b.base_hash, c.depth + 1 FROM chain c
    JOIN supabash.bodies b ON b.workspace_id = $1::uuid AND b.hash = c.base_hash
   WHERE c.depth < $3)
SELECT hash, body, base_hash FROM chain";

thread_local! {
    /// `CHAIN_SQL`, prepared once per backend (SPI_keepplan): planning this recursive query
    /// takes several times longer than running it, and a commit runs it for every edit.
    static CHAIN_PLAN: RefCell<Option<OwnedPreparedStatement>> = const { RefCell::new(None) };
}

/// Fetches the rows of `hashes` and of the bases under them, in one query.
fn fetch_chains(ws: &str, mut hashes: Vec<Vec<u8>>) -> Outcome<HashMap<Vec<u8>, Row>> {
    hashes.sort();
    hashes.dedup();
    let fetched = Spi::connect(|c| {
        CHAIN_PLAN.with(|plan| {
            let mut plan = plan.borrow_mut();
            if plan.is_none() {
                let types = [
                    PgOid::BuiltIn(PgBuiltInOids::TEXTOID),
                    PgOid::BuiltIn(PgBuiltInOids::BYTEAARRAYOID),
                    PgOid::BuiltIn(PgBuiltInOids::INT4OID),
                ];
                *plan = Some(c.prepare(CHAIN_SQL, &types)?.keep());
            }
            let args = [ws.into(), hashes.clone().into(), (MAX_CHAIN as i32).into()];
            let table = c.select(plan.as_ref().expect("prepared"), None, &args)?;
            let mut out = HashMap::with_capacity(table.len());
            for row in table {
                let hash: Vec<u8> = db::get(&row, 1)?;
                let stored = db::get(&row, 2)?;
                let base = db::opt(&row, 3)?;
                out.entry(hash).or_insert(Row { stored, base });
            }
            Ok::<_, Fail>(out)
        })
    })?;
    if hashes.iter().any(|h| !fetched.contains_key(h)) {
        return Err(corrupt("a stored body is missing"));
    }
    Ok(fetched)
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
        if stored::is_delta(&row.stored) != row.base.is_some() {
            return Err(corrupt("a stored body and its base disagree"));
        }
        let body = match &row.base {
            None => Body {
                bytes: stored::decode(&row.stored, None)?,
                depth: 0,
            },
            Some(base) => {
                let base = &done[base];
                let bytes = stored::decode(&row.stored, Some(&base.bytes))?;
                // A delta decoded against the wrong bytes need not fail; its hash does.
                if sha256(&bytes).as_slice() != h.as_slice() {
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
/// or base that is missing or unreadable is HISTORY_CORRUPTION.
pub fn load(ws: &str, hashes: Vec<Vec<u8>>) -> Outcome<HashMap<Vec<u8>, Body>> {
    let rows = fetch_chains(ws, hashes.clone())?;
    let mut done = HashMap::with_capacity(rows.len());
    for hash in &hashes {
        if !done.contains_key(hash) {
            resolve(hash, &rows, &mut done)?;
        }
    }
    Ok(done)
}

/// A body to store: its hash, plain bytes, and the hash and plain size of the body it
/// replaces in its file (a candidate base for a delta).
pub struct New {
    pub hash: Vec<u8>,
    pub bytes: Vec<u8>,
    pub previous: Option<(Vec<u8>, usize)>,
}

impl New {
    /// The base worth trying: both bodies at most `stored::MAX_DELTA_BODY`.
    fn candidate_base(&self) -> Option<&Vec<u8>> {
        let small = |n: usize| n <= stored::MAX_DELTA_BODY;
        match &self.previous {
            Some((hash, size)) if small(*size) && small(self.bytes.len()) => Some(hash),
            _ => None,
        }
    }
}

/// Stores new bodies once; an existing body under the same hash must hold the same bytes.
/// A body is stored as a delta against its file's previous version when both are at most
/// `stored::MAX_DELTA_BODY`, the previous version sits on fewer than `MAX_CHAIN` deltas,
/// and the delta is the smallest form. Arrays are unnested in the select list (lock-step,
/// streamed) rather than in FROM, where a function scan would first copy every body into a
/// tuplestore that spills past `work_mem`.
pub fn store(ws: &str, bodies: Vec<New>) -> Outcome<()> {
    if bodies.is_empty() {
        return Ok(());
    }
    let wanted: Vec<Vec<u8>> = bodies
        .iter()
        .filter_map(|b| b.candidate_base().cloned())
        .collect();
    let bases = if wanted.is_empty() {
        HashMap::new()
    } else {
        load(ws, wanted)?
    };
    let mut encoded = Vec::with_capacity(bodies.len());
    let mut base_hashes: Vec<Option<Vec<u8>>> = Vec::with_capacity(bodies.len());
    for b in &bodies {
        let base = b
            .candidate_base()
            .and_then(|h| bases.get(h).map(|body| (h, body)))
            .filter(|(_, body)| body.depth < MAX_CHAIN);
        let (form, delta) = stored::encode(&b.bytes, base.map(|(_, body)| body.bytes.as_slice()));
        encoded.push(form);
        base_hashes.push(base.filter(|_| delta).map(|(h, _)| h.clone()));
    }
    let sizes: Vec<i64> = bodies.iter().map(|b| b.bytes.len() as i64).collect();
    let hashes: Vec<Vec<u8>> = bodies.iter().map(|b| b.hash.clone()).collect();
    let inserted = db::row(
        "WITH ins AS (
           INSERT INTO supabash.bodies (workspace_id, hash, size, body, base_hash)
           SELECT $1::uuid, unnest($2::bytea[]), unnest($3::bigint[]), unnest($4::bytea[]),
                  unnest($5::bytea[])
           ON CONFLICT (workspace_id, hash) DO NOTHING
           RETURNING hash)
         SELECT count(*) FROM ins",
        &[
            ws.into(),
            hashes.clone().into(),
            sizes.into(),
            encoded.into(),
            base_hashes.into(),
        ],
        |r| db::get::<i64>(r, 1),
    )?
    .expect("an aggregate query returns one row");
    if inserted as usize == hashes.len() {
        return Ok(());
    }
    // Some hashes were already stored: their bytes must be the ones we were given.
    let existing = load(ws, hashes)?;
    let collides = bodies
        .iter()
        .any(|b| existing.get(&b.hash).is_some_and(|e| e.bytes != b.bytes));
    if collides {
        return Err(Fail::new(
            Marker::BodyHashCollision,
            "stored bytes differ from new bytes with the same SHA-256",
        ));
    }
    Ok(())
}

//! The body pass of `supabash_verify`: every body of the workspace's store decodes, through
//! its chain of deltas, to bytes of its recorded size whose SHA-256 is its hash. A page of
//! hashes at a time, their stored forms fetched in batches of bounded size.

use super::{short, Found};
use crate::pg::db;
use crate::pg::fail::Outcome;
use crate::store::access::Workspace;
use crate::store::bodies::{self, Row, MAX_CHAIN};
use crate::store::encoding;
use std::collections::HashMap;
use supabash_core::hash::sha256;
use supabash_core::rpc::verify::{Checked, Problem, ProblemKind};

/// Hashes per page.
const PAGE: i64 = 256;
/// Stored bytes fetched at once (a larger body is fetched alone).
const BATCH_BYTES: i64 = 16 * 1024 * 1024;
/// Decoded bases kept for the rest of a batch, in plain bytes, before they are dropped.
const MAX_KEPT_BASES: usize = 64 * 1024 * 1024;

/// Runs the body pass on `ws`, adding what it finds to `found` and what it read to `checked`.
pub fn check(ws: &Workspace, found: &mut Found, checked: &mut Checked) -> Outcome<()> {
    let mut after: Vec<u8> = Vec::new();
    loop {
        let page: Vec<(Vec<u8>, i64)> = db::query(
            "SELECT hash, octet_length(body) FROM supabash.bodies
              WHERE workspace_id = $1::uuid AND hash > $2 ORDER BY hash LIMIT $3",
            &[ws.store.as_str().into(), after.clone().into(), PAGE.into()],
            |r| Ok((db::get(r, 1)?, db::get(r, 2)?)),
        )?;
        let Some((last, _)) = page.last() else {
            return Ok(());
        };
        after = last.clone();
        let mut batch: Vec<Vec<u8>> = Vec::new();
        let mut bytes = 0;
        for (hash, stored_len) in page {
            if !batch.is_empty() && bytes + stored_len > BATCH_BYTES {
                check_batch(ws, &std::mem::take(&mut batch), found, checked)?;
                bytes = 0;
            }
            bytes += stored_len;
            batch.push(hash);
        }
        check_batch(ws, &batch, found, checked)?;
    }
}

/// A base as decoded while checking a batch: its plain bytes (`None` when it is damaged) and
/// how many deltas it sits on.
struct Base {
    bytes: Option<Vec<u8>>,
    depth: usize,
}

/// Why a delta's base could not give its bytes.
enum BaseFault {
    Missing(Vec<u8>),
    Broken(Vec<u8>),
    TooLong,
}

fn check_batch(
    ws: &Workspace,
    hashes: &[Vec<u8>],
    found: &mut Found,
    checked: &mut Checked,
) -> Outcome<()> {
    let rows = bodies::chain_rows(&ws.store, hashes)?;
    let mut bases: HashMap<Vec<u8>, Base> = HashMap::new();
    for hash in hashes {
        let kept: usize = bases
            .values()
            .filter_map(|b| b.bytes.as_ref())
            .map(Vec::len)
            .sum();
        if kept > MAX_KEPT_BASES {
            bases.clear();
        }
        // Every statement of a read sees one snapshot: a listed body is fetched.
        let Some(row) = rows.get(hash) else { continue };
        checked.bodies += 1;
        if let Some(problem) = check_body(hash, row, &rows, &mut bases) {
            let path = path_of(ws, hash)?;
            let problem = problem.with_hash(hash);
            found.add(match path {
                Some(p) => problem.at_path(p),
                None => problem,
            });
        }
    }
    Ok(())
}

/// What is wrong with one stored body, if anything.
fn check_body(
    hash: &[u8],
    row: &Row,
    rows: &HashMap<Vec<u8>, Row>,
    bases: &mut HashMap<Vec<u8>, Base>,
) -> Option<Problem> {
    if encoding::is_delta(&row.stored) != row.base.is_some() {
        return Some(Problem::new(
            ProblemKind::BodyUnreadable,
            if row.base.is_some() {
                "the body names a delta base but its stored form is not a delta"
            } else {
                "the body's stored form is a delta but it names no base"
            },
        ));
    }
    let base = match &row.base {
        None => None,
        Some(base) => match base_bytes(base, rows, bases) {
            Ok(bytes) => Some(bytes),
            Err(BaseFault::Missing(h)) => {
                return Some(Problem::new(
                    ProblemKind::DeltaBaseMissing,
                    format!(
                        "the body is a delta on {}, which is not stored (directly under it or further down)",
                        short(&h)
                    ),
                ))
            }
            Err(BaseFault::Broken(h)) => {
                return Some(Problem::new(
                    ProblemKind::DeltaBaseBroken,
                    format!(
                        "the body is a delta whose chain passes through the damaged body {}",
                        short(&h)
                    ),
                ))
            }
            Err(BaseFault::TooLong) => {
                return Some(Problem::new(
                    ProblemKind::DeltaChainTooLong,
                    format!("the body sits on more than {MAX_CHAIN} deltas"),
                ))
            }
        },
    };
    let bytes = match encoding::decode(&row.stored, base) {
        Ok(bytes) => bytes,
        Err(_) => {
            return Some(Problem::new(
                ProblemKind::BodyUnreadable,
                if row.base.is_some() {
                    "the body's delta does not decode against its base"
                } else {
                    "the body's stored form does not decode"
                },
            ))
        }
    };
    if bytes.len() as i64 != row.size {
        return Some(Problem::new(
            ProblemKind::BodySizeMismatch,
            format!(
                "the body decodes to {} bytes, its recorded size is {}",
                bytes.len(),
                row.size
            ),
        ));
    }
    let actual = sha256(&bytes);
    if actual.as_slice() != hash {
        return Some(Problem::new(
            ProblemKind::BodyHashMismatch,
            format!(
                "the body decodes to bytes whose SHA-256 is {}",
                hex::encode(actual)
            ),
        ));
    }
    None
}

/// The plain bytes of `hash` as a base, decoding the chain under it (and remembering each
/// level for the rest of the batch).
fn base_bytes<'a>(
    hash: &[u8],
    rows: &HashMap<Vec<u8>, Row>,
    bases: &'a mut HashMap<Vec<u8>, Base>,
) -> Result<&'a [u8], BaseFault> {
    // The chain from `hash` down to a whole body or a base already decoded.
    let mut chain: Vec<Vec<u8>> = Vec::new();
    let mut current = hash.to_vec();
    loop {
        if let Some(known) = bases.get(&current) {
            if chain.len() + known.depth >= MAX_CHAIN {
                return Err(BaseFault::TooLong);
            }
            break;
        }
        if chain.len() >= MAX_CHAIN {
            return Err(BaseFault::TooLong);
        }
        let Some(row) = rows.get(&current) else {
            return Err(BaseFault::Missing(current));
        };
        chain.push(current.clone());
        match &row.base {
            Some(next) => current = next.clone(),
            None => break,
        }
    }
    for h in chain.into_iter().rev() {
        let row = &rows[&h];
        let decoded = match &row.base {
            None => Base {
                bytes: encoding::decode(&row.stored, None).ok(),
                depth: 0,
            },
            Some(under) => {
                let under = &bases[under];
                Base {
                    bytes: under
                        .bytes
                        .as_deref()
                        .and_then(|b| encoding::decode(&row.stored, Some(b)).ok()),
                    depth: under.depth + 1,
                }
            }
        };
        let intact = decoded.bytes.as_deref().is_some_and(|b| {
            encoding::is_delta(&row.stored) == row.base.is_some()
                && b.len() as i64 == row.size
                && sha256(b).as_slice() == h.as_slice()
        });
        let decoded = if intact {
            decoded
        } else {
            Base {
                bytes: None,
                depth: decoded.depth,
            }
        };
        bases.insert(h, decoded);
    }
    let base = &bases[hash];
    base.bytes
        .as_deref()
        .ok_or(BaseFault::Broken(hash.to_vec()))
}

/// A path some entry of the store names `hash` at, the workspace's own first.
fn path_of(ws: &Workspace, hash: &[u8]) -> Outcome<Option<String>> {
    db::query_row(
        "SELECT e.path FROM supabash.entries e
           JOIN supabash.workspaces w ON w.id = e.workspace_id
          WHERE w.store_id = $1::uuid AND e.body_hash = $2
          ORDER BY e.workspace_id = $3::uuid DESC, e.valid_from DESC LIMIT 1",
        &[
            ws.store.as_str().into(),
            hash.to_vec().into(),
            ws.id.as_str().into(),
        ],
        |r| db::get::<String>(r, 1),
    )
}

//! Thin SPI helpers. Every statement is parameterised; arguments travel as `DatumWithOid`.

use crate::fail::Outcome;
use pgrx::datum::DatumWithOid;
use pgrx::prelude::*;
use pgrx::JsonB;
use serde_json::Value;

/// Runs a statement that returns at most one row with one jsonb column; `None` when no row
/// (or a SQL NULL) comes back.
pub fn json(sql: &str, args: &[DatumWithOid]) -> Outcome<Option<Value>> {
    Spi::connect_mut(|c| {
        let table = c.update(sql, None, args)?;
        if table.is_empty() {
            return Ok(None);
        }
        Ok(table.first().get_one::<JsonB>()?.map(|j| j.0))
    })
}

/// Runs a statement for its effect.
pub fn exec(sql: &str, args: &[DatumWithOid]) -> Outcome<()> {
    Spi::connect_mut(|c| c.update(sql, None, args).map(|_| ()))?;
    Ok(())
}

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
}

/// Runs a query whose columns are `path, body_hash, body_size, content_hash, content_size,
/// metadata` and collects the rows. NULL content columns (a file without metadata, see
/// `supabash.entries`) read as the body's hash and size and `{}`.
pub fn file_rows(sql: &str, args: &[DatumWithOid]) -> Outcome<Vec<FileRow>> {
    Ok(Spi::connect(|c| {
        let table = c.select(sql, None, args)?;
        let mut out = Vec::with_capacity(table.len());
        for row in table {
            let body_hash = row.get::<Vec<u8>>(2)?.unwrap_or_default();
            let body_size = row.get::<i64>(3)?.unwrap_or_default();
            out.push(FileRow {
                path: row.get::<String>(1)?.unwrap_or_default(),
                content_hash: row.get::<Vec<u8>>(4)?.unwrap_or_else(|| body_hash.clone()),
                content_size: row.get::<i64>(5)?.unwrap_or(body_size),
                metadata: row
                    .get::<JsonB>(6)?
                    .map_or_else(|| Value::Object(Default::default()), |j| j.0),
                body_hash,
                body_size,
                body: None,
            });
        }
        Ok::<_, pgrx::spi::Error>(out)
    })?)
}

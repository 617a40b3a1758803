//! Thin SPI helpers. Every statement is parameterised; arguments travel as `DatumWithOid`;
//! results are read as typed columns by position ([`get`], [`opt`]), never rebuilt as JSON.
//!
//! Reads ([`query`], [`query_row`]) never ask for a transaction id: in a transaction that has
//! written nothing, SPI runs them read-only on the calling statement's snapshot, so every
//! statement of one read RPC sees the same committed state, and they work on a hot standby.
//! Only statements that write go through [`rows`], [`row`] and [`exec`], which assign the
//! transaction id (pgrx's `update`).

use crate::pg::fail::{Fail, Outcome};
use pgrx::datum::{DatumWithOid, FromDatum, IntoDatum};
use pgrx::prelude::*;
use pgrx::spi::{OwnedPreparedStatement, SpiTupleTable};
use pgrx::{pg_sys, JsonB, PgOid};
use serde_json::Value;
use std::cell::RefCell;
use std::collections::HashMap;
use supabash_core::Marker;

/// One result row, its columns taken apart once (`heap_deform_tuple`). pgrx's row reads each
/// column with `SPI_getbinval`, which walks the tuple from its start for every column after a
/// variable-width one (4 % of a 10,000-file manifest's server time, bench/ANALYSIS.md).
pub struct Row<'a> {
    values: &'a [pg_sys::Datum],
    nulls: &'a [bool],
    types: &'a [pg_sys::Oid],
}

impl<'a> Row<'a> {
    /// Column `i` (1-based): its datum, null flag and type.
    fn slot(&self, i: usize) -> Outcome<(pg_sys::Datum, bool, pg_sys::Oid)> {
        let at = i.wrapping_sub(1);
        match (self.values.get(at), self.nulls.get(at), self.types.get(at)) {
            (Some(&datum), Some(&null), Some(&oid)) => Ok((datum, null, oid)),
            _ => Err(Fail::new(
                Marker::Internal,
                format!("SPI failure: no column {i}"),
            )),
        }
    }

    /// Column `i` (1-based) as its datum, NULL as `None`, when it has type `oid`.
    fn raw(&self, i: usize, oid: pg_sys::Oid) -> Outcome<Option<pg_sys::Datum>> {
        match self.slot(i)? {
            (_, _, t) if t != oid => Err(Fail::new(
                Marker::Internal,
                format!("SPI failure: column {i} is not of type {oid:?}"),
            )),
            (datum, null, _) => Ok((!null).then_some(datum)),
        }
    }

    /// Column `i` (1-based, `bytea`) as the bytes where they lie, NULL as `None`.
    pub fn bytes(&self, i: usize) -> Outcome<Option<&'a [u8]>> {
        let Some(datum) = self.raw(i, pg_sys::BYTEAOID)? else {
            return Ok(None);
        };
        // SAFETY: a non-null `bytea` datum of a tuple that lives until SPI is left; a toasted
        // one is detoasted into the current memory context, which lives as long.
        unsafe {
            let v = pg_sys::pg_detoast_datum_packed(datum.cast_mut_ptr());
            Ok(Some(pgrx::varlena::varlena_to_byte_slice(v)))
        }
    }

    /// Column `i` (1-based, `text`) as the string where it lies, NULL as `None`.
    pub fn text(&self, i: usize) -> Outcome<Option<&'a str>> {
        let Some(datum) = self.raw(i, pg_sys::TEXTOID)? else {
            return Ok(None);
        };
        // SAFETY: as in `bytes`, for a `text` datum.
        let text = unsafe {
            let v = pg_sys::pg_detoast_datum_packed(datum.cast_mut_ptr());
            pgrx::varlena::text_to_rust_str(v)
        };
        text.map(Some)
            .map_err(|e| Fail::new(Marker::Internal, format!("column {i}: {e}")))
    }

    /// Column `i` (1-based) as `T`, NULL as `None`; a column of another type is an error.
    pub fn get<T: IntoDatum + FromDatum>(&self, i: usize) -> Outcome<Option<T>> {
        let (datum, null, oid) = self.slot(i)?;
        // SAFETY: the datum, its null flag and its type come from one deformed tuple of the
        // statement's result, which lives until SPI is left; `try_from_datum` checks that `T`
        // reads that type before it reads the datum.
        unsafe { T::try_from_datum(datum, null, oid) }
            .map_err(|e| Fail::new(Marker::Internal, format!("SPI failure: column {i}: {e}")))
    }
}

/// The rows of the statement SPI ran last, walked as [`Row`]s as often as needed while SPI
/// is not left (statements run in between through a nested SPI connection leave them be:
/// `SPI_finish` restores the outer connection's tuple table).
pub struct Rows {
    tuptable: *mut pg_sys::SPITupleTable,
    types: Vec<pg_sys::Oid>,
}

impl Rows {
    /// The rows of `table`, which wraps `SPI_tuptable` (pgrx reads it right after running the
    /// statement, and nothing has run since).
    fn of(table: SpiTupleTable) -> Outcome<Rows> {
        // SAFETY: `SPI_tuptable` is the result of the statement just run; its descriptor has
        // `natts` attributes.
        unsafe {
            let tuptable = pg_sys::SPI_tuptable;
            // A statement that returns no rows (an UPDATE without RETURNING) leaves none.
            if tuptable.is_null() || table.is_empty() {
                return Ok(Rows {
                    tuptable: std::ptr::null_mut(),
                    types: Vec::new(),
                });
            }
            if (*tuptable).numvals as usize != table.len() {
                return Err(Fail::new(
                    Marker::Internal,
                    "SPI failure: a stale tuple table",
                ));
            }
            let desc = (*tuptable).tupdesc;
            let types = (0..(*desc).natts as usize)
                .map(|i| (*(*desc).attrs.as_ptr().add(i)).atttypid)
                .collect();
            Ok(Rows { tuptable, types })
        }
    }

    /// How many rows there are.
    pub fn len(&self) -> usize {
        if self.tuptable.is_null() {
            return 0;
        }
        // SAFETY: a live tuple table (see `of`).
        unsafe { (*self.tuptable).numvals as usize }
    }

    /// Calls `each` on every row, in order, each taken apart once.
    pub fn each(&self, mut each: impl FnMut(&Row) -> Outcome<()>) -> Outcome<()> {
        let n = self.len();
        if n == 0 {
            return Ok(());
        }
        let natts = self.types.len();
        let mut values = vec![pg_sys::Datum::from(0); natts];
        let mut nulls = vec![true; natts];
        // SAFETY: the table's `numvals` tuples share `tupdesc` and live until SPI is left,
        // after this returns; `heap_deform_tuple` fills one slot per attribute.
        unsafe {
            let desc = (*self.tuptable).tupdesc;
            for &tuple in std::slice::from_raw_parts((*self.tuptable).vals, n) {
                crate::pg::interrupt::rows(1);
                pg_sys::heap_deform_tuple(tuple, desc, values.as_mut_ptr(), nulls.as_mut_ptr());
                each(&Row {
                    values: &values,
                    nulls: &nulls,
                    types: &self.types,
                })?;
            }
        }
        Ok(())
    }

    /// Every row mapped by `map`.
    pub fn map<T>(&self, mut map: impl FnMut(&Row) -> Outcome<T>) -> Outcome<Vec<T>> {
        let mut out = Vec::with_capacity(self.len());
        self.each(|row| {
            out.push(map(row)?);
            Ok(())
        })?;
        Ok(out)
    }
}

/// Maps every row of `table`, the result of the statement SPI ran last.
fn map_rows<T>(table: SpiTupleTable, map: impl FnMut(&Row) -> Outcome<T>) -> Outcome<Vec<T>> {
    Rows::of(table)?.map(map)
}

/// Runs a statement (it may write) and maps every row it returns.
pub fn rows<T>(
    sql: &str,
    args: &[DatumWithOid],
    map: impl FnMut(&Row) -> Outcome<T>,
) -> Outcome<Vec<T>> {
    Spi::connect_mut(|c| map_rows(c.update(sql, None, args)?, map))
}

/// Runs a read-only query and maps every row.
pub fn query<T>(
    sql: &str,
    args: &[DatumWithOid],
    map: impl FnMut(&Row) -> Outcome<T>,
) -> Outcome<Vec<T>> {
    query_rows(sql, args, |rows| rows.map(map))
}

/// Runs a read-only query and hands its rows to `f`, which may walk them more than once and
/// run statements of its own in between.
pub fn query_rows<T>(
    sql: &str,
    args: &[DatumWithOid],
    f: impl FnOnce(&Rows) -> Outcome<T>,
) -> Outcome<T> {
    Spi::connect(|c| f(&Rows::of(c.select(sql, None, args)?)?))
}

/// Runs a read-only query and maps its first row, if any.
pub fn query_row<T>(
    sql: &str,
    args: &[DatumWithOid],
    map: impl FnMut(&Row) -> Outcome<T>,
) -> Outcome<Option<T>> {
    Ok(query(sql, args, map)?.into_iter().next())
}

/// Runs a statement (it may write) and maps its first row, if any.
pub fn row<T>(
    sql: &str,
    args: &[DatumWithOid],
    map: impl FnMut(&Row) -> Outcome<T>,
) -> Outcome<Option<T>> {
    Ok(rows(sql, args, map)?.into_iter().next())
}

/// Runs a statement for its effect.
pub fn exec(sql: &str, args: &[DatumWithOid]) -> Outcome<()> {
    Spi::connect_mut(|c| c.update(sql, None, args).map(|_| ()))?;
    Ok(())
}

/// Column `i` (1-based), which must not be NULL.
pub fn get<T: IntoDatum + FromDatum>(row: &Row, i: usize) -> Outcome<T> {
    row.get::<T>(i)?.ok_or_else(|| missing(i))
}

/// The error of a NULL in column `i` (1-based), which must not be NULL.
pub fn missing(i: usize) -> Fail {
    Fail::new(
        Marker::HistoryCorruption,
        format!("a stored value is missing (column {i})"),
    )
}

/// Column `i` (1-based), NULL as `None`.
pub fn opt<T: IntoDatum + FromDatum>(row: &Row, i: usize) -> Outcome<Option<T>> {
    row.get::<T>(i)
}

/// A jsonb column as JSON (NULL as `None`).
pub fn json(row: &Row, i: usize) -> Outcome<Option<Value>> {
    Ok(row.get::<JsonB>(i)?.map(|j| j.0))
}

thread_local! {
    /// Plans of the `*_kept` and `*_generic` helpers, by statement text and whether the
    /// statement writes, kept for the backend's life (SPI_keepplan; PostgreSQL replans one when
    /// the objects it uses, the role or the search path change).
    static KEPT: RefCell<HashMap<(String, bool), OwnedPreparedStatement>> = RefCell::new(HashMap::new());
}

/// How a kept plan runs.
#[derive(Clone, Copy, PartialEq)]
enum Kept {
    /// Read-only; PostgreSQL's plan cache picks custom or generic plans as it sees fit.
    Read,
    /// Read-only, always the generic plan (planned once per backend).
    ReadGeneric,
    /// May write; always the generic plan.
    Write,
}

/// A setting changed while it lives, then set back. A setting changed inside a transaction is
/// also restored if the transaction aborts (guc.c keeps the old value), so an error on the way
/// out leaves nothing behind.
pub struct Setting {
    name: &'static std::ffi::CStr,
    was: Option<std::ffi::CString>,
}

impl Setting {
    /// Sets `name` to `value` (nothing to undo when it already has that value).
    pub fn set(name: &'static std::ffi::CStr, value: &'static std::ffi::CStr) -> Self {
        // SAFETY: plain GUC calls in a backend, with NUL-terminated names and values.
        unsafe {
            let was = pgrx::pg_sys::GetConfigOption(name.as_ptr(), false, false);
            let was = std::ffi::CStr::from_ptr(was).to_owned();
            if was.as_c_str() == value {
                return Setting { name, was: None };
            }
            Self::to(name, value);
            Setting {
                name,
                was: Some(was),
            }
        }
    }

    unsafe fn to(name: &std::ffi::CStr, value: &std::ffi::CStr) {
        pgrx::pg_sys::SetConfigOption(
            name.as_ptr(),
            value.as_ptr(),
            pgrx::pg_sys::GucContext::PGC_USERSET,
            pgrx::pg_sys::GucSource::PGC_S_SESSION,
        );
    }
}

impl Drop for Setting {
    fn drop(&mut self) {
        // Unwinding from an error: the transaction's (or subtransaction's) abort restores the
        // setting, and no PostgreSQL function is called from a failing statement's unwind.
        if std::thread::panicking() {
            return;
        }
        if let Some(was) = &self.was {
            // SAFETY: as in `set`.
            unsafe { Self::to(self.name, was) }
        }
    }
}

/// `plan_cache_mode = force_generic_plan` while it lives.
fn generic_plans() -> Setting {
    Setting::set(c"plan_cache_mode", c"force_generic_plan")
}

/// Runs `sql` through its kept plan (prepared the first time its text is seen), mapping every
/// row. The argument types come from `args`.
fn kept<T>(
    sql: &str,
    how: Kept,
    args: &[DatumWithOid],
    map: impl FnMut(&Row) -> Outcome<T>,
) -> Outcome<Vec<T>> {
    let mutating = how == Kept::Write;
    let _generic = (how != Kept::Read).then(generic_plans);
    Spi::connect_mut(|c| {
        KEPT.with(|kept| {
            let mut kept = kept.borrow_mut();
            let key = (sql.to_owned(), mutating);
            if !kept.contains_key(&key) {
                let types: Vec<PgOid> = args.iter().map(|a| PgOid::from(a.oid())).collect();
                let plan = if mutating {
                    c.prepare_mut(sql, &types)?
                } else {
                    c.prepare(sql, &types)?
                };
                kept.insert(key.clone(), plan.keep());
            }
            let plan = &kept[&key];
            // A read-only statement never marks the transaction as writing (see the module
            // doc): only `update` does.
            let table = if mutating {
                c.update(plan, None, args)?
            } else {
                c.select(plan, None, args)?
            };
            map_rows(table, map)
        })
    })
}

/// [`query`] through a plan prepared the first time its text is seen, for a statement one
/// call runs many times with other arguments (planning a union over a fork's sources costs
/// more than running it). PostgreSQL picks custom or generic plans.
pub fn query_kept<T>(
    sql: &str,
    args: &[DatumWithOid],
    map: impl FnMut(&Row) -> Outcome<T>,
) -> Outcome<Vec<T>> {
    kept(sql, Kept::Read, args, map)
}

/// [`query`] through a kept, always generic plan: planned once per backend, so a statement
/// that runs on every commit costs no planning. Only for statements whose generic plan is the
/// index lookup they are written for (checked in the in-backend tests' plan checks).
pub fn query_generic<T>(
    sql: &str,
    args: &[DatumWithOid],
    map: impl FnMut(&Row) -> Outcome<T>,
) -> Outcome<Vec<T>> {
    kept(sql, Kept::ReadGeneric, args, map)
}

/// [`query_row`] through a kept, generic plan (see [`query_generic`]).
pub fn query_row_generic<T>(
    sql: &str,
    args: &[DatumWithOid],
    map: impl FnMut(&Row) -> Outcome<T>,
) -> Outcome<Option<T>> {
    Ok(query_generic(sql, args, map)?.into_iter().next())
}

/// [`rows`] (a statement that may write) through a kept, generic plan (see
/// [`query_generic`]): what the statements of a commit run as.
pub fn rows_kept<T>(
    sql: &str,
    args: &[DatumWithOid],
    map: impl FnMut(&Row) -> Outcome<T>,
) -> Outcome<Vec<T>> {
    kept(sql, Kept::Write, args, map)
}

/// [`exec`] through a kept, generic plan (see [`rows_kept`]).
pub fn exec_kept(sql: &str, args: &[DatumWithOid]) -> Outcome<()> {
    kept(sql, Kept::Write, args, |_| Ok(())).map(|_| ())
}

//! Errors as values: every failure carries a `SUPABASH_*` marker (which fixes its SQLSTATE),
//! a message and optional JSON detail. They become a Postgres ERROR only at the entry point.

use pgrx::pg_sys::panic::ErrorReport;
use pgrx::prelude::*;
use serde_json::Value;
use supabash_core::Marker;

/// A refused request.
#[derive(Debug)]
pub struct Fail {
    pub marker: Marker,
    pub message: String,
    pub detail: Option<Value>,
}

/// Result of every internal step.
pub type Outcome<T> = Result<T, Fail>;

impl Fail {
    pub fn new(marker: Marker, message: impl Into<String>) -> Self {
        Fail {
            marker,
            message: message.into(),
            detail: None,
        }
    }

    pub fn with_detail(mut self, detail: Value) -> Self {
        self.detail = Some(detail);
        self
    }

    /// Raises this failure as a Postgres ERROR. `PT409` cannot leave Rust intact (pgrx maps
    /// unknown codes to XX000), so conflicts leave as P0001 and the SQL wrapper re-raises them.
    pub fn raise(self) -> ! {
        let code = match self.marker.sqlstate() {
            "42501" => PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            "22023" => PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            "55P03" => PgSqlErrorCode::ERRCODE_LOCK_NOT_AVAILABLE,
            "23505" => PgSqlErrorCode::ERRCODE_UNIQUE_VIOLATION,
            "54000" => PgSqlErrorCode::ERRCODE_PROGRAM_LIMIT_EXCEEDED,
            "0A000" => PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
            "XX001" => PgSqlErrorCode::ERRCODE_DATA_CORRUPTED,
            "25006" => PgSqlErrorCode::ERRCODE_READ_ONLY_SQL_TRANSACTION,
            "XX000" => PgSqlErrorCode::ERRCODE_INTERNAL_ERROR,
            "55000" => PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            _ => PgSqlErrorCode::ERRCODE_RAISE_EXCEPTION,
        };
        let mut report = ErrorReport::new(
            code,
            format!("{}: {}", self.marker.as_str(), self.message),
            "supabash",
        );
        if let Some(detail) = self.detail {
            report = report.set_detail(detail.to_string());
        }
        report.report(PgLogLevel::ERROR);
        unreachable!("ERROR does not return")
    }
}

/// Shorthand for an invalid-argument failure.
pub fn invalid(message: impl Into<String>) -> Fail {
    Fail::new(Marker::InvalidArgument, message)
}

impl From<pgrx::spi::SpiError> for Fail {
    /// SPI status errors are internal faults (SQL errors raised inside SPI never reach here:
    /// they unwind as Postgres errors with their own SQLSTATE): `SUPABASH_INTERNAL`, XX000.
    fn from(e: pgrx::spi::SpiError) -> Self {
        Fail::new(Marker::Internal, format!("SPI failure: {e}"))
    }
}

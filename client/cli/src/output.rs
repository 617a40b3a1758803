//! How commands print: JSON for scripts (`--json`: one document on stdout, the contract's
//! answer types where one exists), lines for people otherwise.

use serde::Serialize;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Prints `value` as one pretty JSON document.
pub fn json<T: Serialize + ?Sized>(value: &T) -> Result<(), BoxError> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}

/// The first 8 characters of an id, as lines for people show ids.
pub fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

/// ` (from OLD)` after a moved path, as change lists show a move; empty for other changes.
pub fn moved_from(from: Option<&str>) -> String {
    from.map(|f| format!(" (from {f})")).unwrap_or_default()
}

//! What the Storage backend records: entries (files, directories, symbolic links with mode and
//! mtime) and the records both layouts share (intents, idempotency records), and 0.6.0's
//! records, still read (and resolved) in a workspace not yet upgraded. The delta layout's
//! own records (head, revision pack header, snapshot) are in [`super::layout`].
//!
//! ```text
//! P.supabash/head.json                       Head: 0.6.0's head (the published revision)
//! P.supabash/revisions/<rev>.json            Revision: 0.6.0's full manifest and receipt
//! P.supabash/intents/<tx>.json               Intent: 0.6.0's unresolved commit (the delta
//!                                            layout keeps it in head.json as `pending`)
//! P.supabash/transactions/<tx>/complete.json Complete: 0.6.0's commit reached its manifest
//! P.supabash/transactions/<tx>/abort.json    Abort: recovery rolled a 0.6.0 commit back
//! P.supabash/objects/<sha256>                bodies stored alone
//! P.supabash/idempotency/<sha256(key)>.json  Idempotency: key → revision and fingerprint
//! ```

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use supabash_core::rpc::Receipt;

/// The schema version of every record.
pub const SCHEMA_VERSION: u32 = 1;
/// Content type of directory markers.
pub const DIRECTORY_TYPE: &str = "application/vnd.supabash.directory";
/// Content type of symbolic links (the body is the target).
pub const SYMLINK_TYPE: &str = "application/vnd.supabash.symlink";
/// Content type of file bodies (visible and content-addressed).
pub const FILE_TYPE: &str = "application/octet-stream";
/// Content type of the records in the reserved area.
pub const RECORD_TYPE: &str = "application/json";
/// Every content type the backend uploads: a bucket's `allowed_mime_types` must allow each.
pub const CONTENT_TYPES: [&str; 4] = [FILE_TYPE, RECORD_TYPE, DIRECTORY_TYPE, SYMLINK_TYPE];

/// What an entry is: core's kind, the one both backends store.
pub use supabash_core::posix::Kind as EntryKind;

/// One entry of a tree: kind, mode, mtime (milliseconds since the epoch), and for files the
/// SHA-256 and size of the bytes, for links the target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    pub kind: EntryKind,
    pub mode: u32,
    pub mtime_ms: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
    #[serde(default)]
    pub size: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

/// A whole tree by path.
pub type Manifest = BTreeMap<String, Entry>;

impl Entry {
    /// The user metadata stored on the entry's visible object (so a listing can rebuild it).
    pub fn object_metadata(&self) -> Value {
        let mut v = json!({
            "supabash_kind": self.kind,
            "supabash_mode": self.mode,
            "supabash_mtime_ms": self.mtime_ms,
        });
        if let Some(h) = &self.hash {
            v["supabash_hash"] = json!(h);
        }
        if let Some(t) = &self.target {
            v["supabash_target"] = json!(t);
        }
        v
    }

    /// Reads [`Self::object_metadata`] back; `None` when the object was not written by supabash.
    pub fn from_object_metadata(v: &Value, size: u64) -> Option<Entry> {
        let kind: EntryKind = serde_json::from_value(v.get("supabash_kind")?.clone()).ok()?;
        Some(Entry {
            kind,
            mode: u32::try_from(v["supabash_mode"].as_u64()?).ok()?,
            mtime_ms: v["supabash_mtime_ms"].as_i64()?,
            hash: v["supabash_hash"].as_str().map(str::to_owned),
            size: if kind == EntryKind::File { size } else { 0 },
            target: v["supabash_target"].as_str().map(str::to_owned),
        })
    }

    /// Content type of the visible object.
    pub fn content_type(&self) -> &'static str {
        match self.kind {
            EntryKind::File => FILE_TYPE,
            EntryKind::Directory => DIRECTORY_TYPE,
            EntryKind::Symlink => SYMLINK_TYPE,
        }
    }
}

/// `head.json`: the published revision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Head {
    pub revision: String,
    pub transaction_id: String,
    pub committed_at: String,
    pub schema_version: u32,
}

/// `revisions/<rev>.json`: the manifest of a revision and the receipt of its commit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Revision {
    pub revision: String,
    #[serde(default)]
    pub parent_revision: Option<String>,
    pub position: i64,
    pub entries: Manifest,
    pub receipt: Receipt,
    pub schema_version: u32,
}

/// One path a transaction changes: what it was and what it becomes (`None`: absent).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Touched {
    pub path: String,
    pub before: Option<Entry>,
    pub after: Option<Entry>,
}

/// `intents/<tx>.json`: a commit has started changing visible objects.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Intent {
    pub transaction_id: String,
    pub new_revision: String,
    #[serde(default)]
    pub parent_revision: Option<String>,
    pub fingerprint: String,
    #[serde(default)]
    pub idempotency_key: Option<String>,
    pub touched: Vec<Touched>,
    pub created_at: String,
    /// `created_at` in Unix milliseconds, for deciding whether the intent is stale (0 in records
    /// written before this field existed: stale).
    #[serde(default)]
    pub created_ms: i64,
    /// The process that wrote it (see `recover::host_id`; `None` in older records: another
    /// host's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    pub schema_version: u32,
}

/// `transactions/<tx>/complete.json`: the manifest is written; the head may not be yet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Complete {
    pub transaction_id: String,
    pub revision: String,
    #[serde(default)]
    pub parent_revision: Option<String>,
    pub fingerprint: String,
    #[serde(default)]
    pub idempotency_key: Option<String>,
    pub committed_at: String,
    pub schema_version: u32,
}

/// `idempotency/<sha256(key)>.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Idempotency {
    pub fingerprint: String,
    pub revision: String,
    pub transaction_id: String,
    pub schema_version: u32,
}

/// Milliseconds since the epoch (negative before it).
pub fn to_ms(t: SystemTime) -> i64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_millis() as i64,
        Err(e) => -(e.duration().as_millis() as i64),
    }
}

/// The time `ms` milliseconds after the epoch.
pub fn from_ms(ms: i64) -> SystemTime {
    if ms >= 0 {
        UNIX_EPOCH + Duration::from_millis(ms as u64)
    } else {
        UNIX_EPOCH - Duration::from_millis(ms.unsigned_abs())
    }
}

/// The date `days` days after 1970-01-01 in the proleptic Gregorian calendar: year, month (1
/// to 12) and day of the month (1 to 31); Howard Hinnant's `civil_from_days`.
pub fn civil_date(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// RFC 3339 UTC with milliseconds, e.g. `2026-01-02T03:04:05.678Z`.
pub fn rfc3339(t: SystemTime) -> String {
    let ms = to_ms(t);
    let (secs, milli) = (ms.div_euclid(1000), ms.rem_euclid(1000));
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_date(secs.div_euclid(86_400));
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{milli:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn dates() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            rfc3339(from_ms(951_782_400_123)),
            "2000-02-29T00:00:00.123Z"
        );
    }

    proptest! {
        #[test]
        fn metadata_round_trips(kind in 0..3u8, mode in 0u32..0o7777, mtime in any::<i64>(), size in any::<u64>()) {
            let kind = [EntryKind::File, EntryKind::Directory, EntryKind::Symlink][kind as usize];
            let e = Entry {
                kind,
                mode,
                mtime_ms: mtime,
                hash: (kind == EntryKind::File).then(|| "ab".repeat(32)),
                size: if kind == EntryKind::File { size } else { 0 },
                target: (kind == EntryKind::Symlink).then(|| "../été".to_owned()),
            };
            prop_assert_eq!(Entry::from_object_metadata(&e.object_metadata(), size), Some(e));
        }

        #[test]
        fn millisecond_times_round_trip(ms in -10_000_000_000_000i64..10_000_000_000_000) {
            prop_assert_eq!(to_ms(from_ms(ms)), ms);
        }
    }
}

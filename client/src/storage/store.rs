//! Reading the published state and old revisions in either layout: `head.json` (0.6.0's or the
//! delta layout's), snapshots (checked against their SHA-256), revision pack headers (read by
//! range and checked against their span, or found in the whole pack) and 0.6.0's revision
//! records. Errors in what is stored are `HISTORY_CORRUPTION`.

use super::api::StorageApi;
use super::keys::Keys;
use super::layout::Loc;
use super::layout::LAYOUT_VERSION;
use super::layout::{HeadRecord, Locations, PackHeader, Snapshot, SnapshotRef, TreeState};
use super::model::{Manifest, Revision};
use super::pack::{self, Span};
use crate::error::{Result, SupabashError};
use serde::de::DeserializeOwned;
use serde::Serialize;
use supabash_core::hash::sha256_hex;
use supabash_core::rpc::Receipt;
use supabash_core::ErrorCode;

fn corrupt(message: impl Into<String>) -> SupabashError {
    SupabashError::new(ErrorCode::HistoryCorruption, message)
}

/// Reads a record; `None` when absent, `HISTORY_CORRUPTION` when malformed.
pub async fn read<T: DeserializeOwned>(api: &StorageApi, key: &str) -> Result<Option<T>> {
    match api.read_json(key).await? {
        None => Ok(None),
        Some(v) => serde_json::from_value(v)
            .map(Some)
            .map_err(|e| corrupt(format!("record {key} is malformed: {e}"))),
    }
}

/// Writes a record (upsert unless `create_only`).
pub async fn write<T: Serialize>(
    api: &StorageApi,
    key: &str,
    record: &T,
    create_only: bool,
) -> Result<()> {
    let v = serde_json::to_value(record).expect("records serialise");
    api.write_json(key, &v, !create_only).await
}

/// The bytes of body `hash`: from its pack by range when `loc` names one that still exists
/// (purge moves the bodies of packs it removes to `objects/`), else `objects/<hash>`. Not
/// verified: callers check the SHA-256.
pub async fn body(
    api: &StorageApi,
    keys: &Keys,
    hash: &str,
    loc: Option<&Loc>,
) -> Result<Option<Vec<u8>>> {
    if let Some(l) = loc {
        if let Some(b) = api
            .download_range(&keys.pack(&l.pack), l.offset, l.size)
            .await?
        {
            return Ok(Some(b));
        }
    }
    api.download(&keys.object(hash)).await
}

/// The published head: its record, manifest and body locations.
#[derive(Debug, Clone)]
pub struct Published {
    pub head: HeadRecord,
    pub revision: String,
    pub position: i64,
    pub manifest: Manifest,
    pub locations: Locations,
}

impl Published {
    /// Whether the head is in 0.6.0's layout (its next commit writes a snapshot).
    pub fn legacy(&self) -> bool {
        self.head.schema_version < LAYOUT_VERSION
    }
}

/// `head.json`, in either layout; `None` when absent.
pub async fn read_head(api: &StorageApi, keys: &Keys) -> Result<Option<HeadRecord>> {
    read::<HeadRecord>(api, &keys.head()).await
}

/// The published state `head` names (`None` when it names no revision yet): 0.6.0's revision
/// record, or the snapshot with the head's changes applied.
pub async fn load(api: &StorageApi, keys: &Keys, head: &HeadRecord) -> Result<Option<Published>> {
    let Some(revision) = head.revision.clone() else {
        return Ok(None);
    };
    if head.schema_version < LAYOUT_VERSION {
        let r = read::<Revision>(api, &keys.revision(&revision))
            .await?
            .ok_or_else(|| corrupt("the head names a revision whose record is missing"))?;
        return Ok(Some(Published {
            head: head.clone(),
            revision,
            position: r.position,
            manifest: r.entries,
            locations: Locations::new(),
        }));
    }
    let (manifest, locations) = tree(api, keys, &head.tree).await?;
    Ok(Some(Published {
        head: head.clone(),
        revision,
        position: head.position,
        manifest,
        locations,
    }))
}

/// A published state the caller already holds: its revision, manifest and body locations.
pub type Known<'a> = Option<(&'a str, &'a Manifest, &'a Locations)>;

/// Like [`load`], but a head in the delta layout that names the `known` revision is answered
/// from what the caller holds, without reading its snapshot (a revision's tree never changes).
pub async fn load_known(
    api: &StorageApi,
    keys: &Keys,
    head: &HeadRecord,
    known: Known<'_>,
) -> Result<Option<Published>> {
    if let (Some(rev), Some((k, manifest, locations))) = (&head.revision, known) {
        if rev == k && head.schema_version >= LAYOUT_VERSION {
            head.tree.check()?;
            return Ok(Some(Published {
                head: head.clone(),
                revision: rev.clone(),
                position: head.position,
                manifest: manifest.clone(),
                locations: locations.clone(),
            }));
        }
    }
    load(api, keys, head).await
}

/// The manifest and body locations of `tree`: its snapshot with its changes applied.
pub async fn tree(
    api: &StorageApi,
    keys: &Keys,
    tree: &TreeState,
) -> Result<(Manifest, Locations)> {
    tree.check()?;
    let snapshot = read_snapshot(api, keys, tree.snapshot.as_ref().expect("checked")).await?;
    Ok(tree.apply(snapshot))
}

/// A snapshot, checked against the SHA-256 its reference records.
pub async fn read_snapshot(api: &StorageApi, keys: &Keys, r: &SnapshotRef) -> Result<Snapshot> {
    let bytes = api
        .download(&keys.snapshot(&r.revision))
        .await?
        .ok_or_else(|| corrupt(format!("the snapshot of {} is missing", r.revision)))?;
    if sha256_hex(&bytes) != r.sha256 {
        return Err(corrupt(format!(
            "the snapshot of {} fails its SHA-256",
            r.revision
        )));
    }
    parse(&bytes, "snapshot")
}

fn parse<T: DeserializeOwned>(bytes: &[u8], what: &str) -> Result<T> {
    serde_json::from_slice(bytes).map_err(|e| corrupt(format!("a {what} is malformed: {e}")))
}

/// The header of `rev`'s pack: by one range read when its span is known (and checked against
/// it), else from the whole pack. `None` when there is no pack.
pub async fn read_header(
    api: &StorageApi,
    keys: &Keys,
    rev: &str,
    span: Option<&Span>,
) -> Result<Option<PackHeader>> {
    let key = keys.pack(rev);
    let header = match span {
        Some(s) => {
            let Some(bytes) = api.download_range(&key, s.offset, s.len).await? else {
                return Ok(None);
            };
            pack::check_header(&bytes, s).map_err(|e| corrupt(format!("{rev}: {e}")))?;
            bytes
        }
        None => match header_by_trailer(api, &key).await? {
            Trailer::Missing => return Ok(None),
            Trailer::Header(h) => h,
            Trailer::Small => {
                let Some(whole) = api.download(&key).await? else {
                    return Ok(None);
                };
                pack::header_of(&whole)
                    .map_err(|e| corrupt(format!("{rev}: {e}")))?
                    .to_vec()
            }
        },
    };
    let h: PackHeader = parse(&header, "revision pack header")?;
    if h.revision != rev {
        return Err(corrupt(format!("the pack of {rev} names {}", h.revision)));
    }
    Ok(Some(h))
}

/// A pack read in full below this size; above it, its header is found by range reads.
const WHOLE_PACK_BELOW: u64 = 256 * 1024;

/// What [`header_by_trailer`] found.
enum Trailer {
    Missing,
    /// Small enough to read whole.
    Small,
    Header(Vec<u8>),
}

/// The header of the pack at `key` without reading its bodies: its size (`info`), its
/// trailing length and the header, by range.
async fn header_by_trailer(api: &StorageApi, key: &str) -> Result<Trailer> {
    let Some(info) = api.info(key).await? else {
        return Ok(Trailer::Missing);
    };
    let size = info.size.unwrap_or(0);
    if size < WHOLE_PACK_BELOW {
        return Ok(Trailer::Small);
    }
    let Some(tail) = api.download_range(key, size - 8, 8).await? else {
        return Ok(Trailer::Missing);
    };
    let len = u64::from_be_bytes(tail[..].try_into().expect("8 bytes"));
    let start = (size - 8)
        .checked_sub(len)
        .filter(|s| *s >= pack::MAGIC.len() as u64)
        .ok_or_else(|| corrupt(format!("{key}: the header length passes the pack")))?;
    let header = api.download_range(key, start, len).await?;
    Ok(header.map_or(Trailer::Missing, Trailer::Header))
}

/// A stored revision in either layout.
#[derive(Debug, Clone)]
pub enum Stored {
    /// 0.6.0's record (whole manifest).
    Legacy(Box<Revision>),
    /// A revision pack's header.
    Packed(Box<PackHeader>),
}

impl Stored {
    pub fn revision(&self) -> &str {
        match self {
            Stored::Legacy(r) => &r.revision,
            Stored::Packed(h) => &h.revision,
        }
    }

    pub fn parent(&self) -> Option<&String> {
        match self {
            Stored::Legacy(r) => r.parent_revision.as_ref(),
            Stored::Packed(h) => h.parent_revision.as_ref(),
        }
    }

    pub fn receipt(&self) -> &Receipt {
        match self {
            Stored::Legacy(r) => &r.receipt,
            Stored::Packed(h) => &h.receipt,
        }
    }

    /// The parent's pack header span, when known.
    pub fn parent_span(&self) -> Option<&Span> {
        match self {
            Stored::Legacy(_) => None,
            Stored::Packed(h) => h.parent_header.as_ref(),
        }
    }

    /// The revision's manifest and body locations.
    pub async fn tree(&self, api: &StorageApi, keys: &Keys) -> Result<(Manifest, Locations)> {
        match self {
            Stored::Legacy(r) => Ok((r.entries.clone(), Locations::new())),
            Stored::Packed(h) => tree(api, keys, &h.tree).await,
        }
    }
}

/// The stored revision `rev`: its pack (by `span` when known), else 0.6.0's record; `None`
/// when neither exists.
pub async fn read_stored(
    api: &StorageApi,
    keys: &Keys,
    rev: &str,
    span: Option<&Span>,
) -> Result<Option<Stored>> {
    if let Some(h) = read_header(api, keys, rev, span).await? {
        return Ok(Some(Stored::Packed(Box::new(h))));
    }
    Ok(read::<Revision>(api, &keys.revision(rev))
        .await?
        .map(|r| Stored::Legacy(Box::new(r))))
}

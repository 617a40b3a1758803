//! Recovery in the delta layout. A commit that changes visible objects first writes its intent
//! into `head.json` (`pending`, over the published head it follows), so one read of the head
//! tells an opener whether anything is unresolved: no listing. A pending intent that
//! [`Policy`] lets this caller resolve is **rolled back**: every path it touched is restored to
//! the published manifest (or, with nothing published, to the intent's `before` entries, whose
//! bodies the commit put in `objects/` before changing any visible object), its revision pack,
//! snapshot and idempotency record are deleted, and the head is written back without it (or
//! deleted, when it named no revision). A commit is published only by its own final head write,
//! so there is nothing to adopt. The head is rewritten last: an interrupted recovery runs again.
//!
//! While the head is in 0.6.0's layout (or absent), that layout's intent records are resolved
//! first (`recover.rs`).

use super::api::StorageApi;
use super::keys::Keys;
use super::layout::{HeadRecord, LAYOUT_VERSION};
use super::model::Intent;
use super::recover::{self, Policy};
use super::store::{self, Published};
use super::visible;
use crate::error::Result;

/// Resolves what `policy` allows (and, for a committer with visible objects, finishes the
/// visible objects a head published ahead of them: `visible.rs`), then answers the published
/// state (`None`: nothing
/// published). A published workspace with nothing unresolved costs two reads, the head and
/// its snapshot, or one when the head names the `known` revision.
pub async fn settle(
    api: &StorageApi,
    keys: &Keys,
    policy: &Policy<'_>,
    known: store::Known<'_>,
) -> Result<Option<Published>> {
    let mut head = store::read_head(api, keys).await?;
    let legacy = head
        .as_ref()
        .is_none_or(|h| h.schema_version < LAYOUT_VERSION);
    if legacy && recover::recover(api, keys, policy).await? > 0 {
        head = store::read_head(api, keys).await?;
    }
    let Some(h) = head else {
        return Ok(None);
    };
    let mut published = store::load_known(api, keys, &h, known).await?;
    if let Some(intent) = &h.pending {
        if policy.resolvable(intent)? {
            roll_back(api, keys, &h, intent, published.as_ref()).await?;
            if let Some(p) = &mut published {
                p.head.pending = None;
            }
        }
    }
    if let Some(p) = published
        .as_mut()
        .filter(|p| policy.finish_visible && visible::lags(&p.head))
    {
        visible::finish(api, keys, p).await?;
        p.head.visible_behind = None;
    }
    Ok(published)
}

/// Rolls the pending `intent` of `head` back to `published` (see the module documentation).
pub async fn roll_back(
    api: &StorageApi,
    keys: &Keys,
    head: &HeadRecord,
    intent: &Intent,
    published: Option<&Published>,
) -> Result<()> {
    undo(api, keys, intent, published).await?;
    let mut clean = head.clone();
    clean.pending = None;
    if clean.revision.is_none() {
        api.delete(&[keys.head()]).await?;
    } else {
        store::write(api, &keys.head(), &clean, false).await?;
    }
    Ok(())
}

/// Restores the visible objects `intent` touched to `published` and deletes what the commit
/// stored for its revision (pack, snapshot, idempotency record).
pub async fn undo(
    api: &StorageApi,
    keys: &Keys,
    intent: &Intent,
    published: Option<&Published>,
) -> Result<()> {
    let target = published.map(|p| (&p.manifest, &p.locations));
    recover::roll_back(api, keys, intent, target).await?;
    let rev = &intent.new_revision;
    let mut doomed = vec![keys.pack(rev), keys.snapshot(rev)];
    if let Some(k) = &intent.idempotency_key {
        doomed.push(keys.idempotency(k));
    }
    api.delete(&doomed).await?;
    Ok(())
}

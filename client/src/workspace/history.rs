//! Reading what the workspace went through: history pages, a path's versions, change
//! announcements, revision notes, server-side grep, diffs and the audit trail.

use super::{DiffRef, Workspace};
use crate::audit::AuditPage;
use crate::error::{Result, SupabashError};
use supabash_core::rpc::audit as wire;
use supabash_core::rpc::requests as rq;
use supabash_core::rpc::{Diff, HistoryPage};

impl Workspace {
    /// One page of history, oldest first, after `cursor` (a revision id).
    pub async fn history(
        &self,
        cursor: Option<&str>,
        page_size: Option<usize>,
    ) -> Result<HistoryPage> {
        let size = self.limits.history_page(page_size)?;
        self.rpc(&rq::History {
            workspace_id: self.id.clone(),
            cursor: cursor.map(str::to_owned),
            page_size: Some(size as i32),
            ..Default::default()
        })
        .await
    }

    /// One page of the versions of `path` (newest first unless `oldest_first`), after `cursor`
    /// (a previous page's `next_cursor`); `follow_moves` follows a version that arrived by a
    /// move back to the path it came from.
    pub async fn path_history(
        &self,
        path: &str,
        cursor: Option<&str>,
        page_size: Option<usize>,
        follow_moves: bool,
        oldest_first: bool,
    ) -> Result<supabash_core::rpc::path_history::PathHistoryPage> {
        let size = self.limits.history_page(page_size)?;
        self.rpc(&supabash_core::rpc::path_history::PathHistory {
            workspace_id: self.id.clone(),
            path: path.to_owned(),
            cursor: cursor.map(str::to_owned),
            page_size: Some(size as i32),
            follow_moves: Some(follow_moves),
            oldest_first: Some(oldest_first),
            delegated_grant: None,
        })
        .await
    }

    /// The workspace's change announcements as a stream ([`crate::watch::Watch`]): every
    /// commit, purge and redaction after `after` (`None`: after the head when the watch
    /// starts), oldest first. On a direct Postgres connection it `LISTEN`s and, when the
    /// connection drops, listens again and recovers the commits it missed from
    /// `supabash_history`; over PostgREST it polls `supabash_history`. Needs `history` (and,
    /// with `after` `None`, `read`) of a delegated grant.
    pub async fn watch(
        &self,
        after: Option<crate::watch::WatchPoint>,
    ) -> Result<crate::watch::Watch> {
        crate::watch::Watch::start(self.transport.clone(), self.id.clone(), after).await
    }

    /// Appends `value` under `key` to `revision` without a new revision (`supabash_add_note`):
    /// the next version of that key, recorded with `actor` and the time. A note is at most
    /// `supabash_core::rpc::notes::MAX_NOTE_BYTES` of compact JSON.
    pub async fn add_note(
        &self,
        revision: &str,
        key: &str,
        value: serde_json::Value,
        actor: &str,
    ) -> Result<supabash_core::rpc::notes::RevisionNote> {
        let request = supabash_core::rpc::notes::AddNote {
            workspace_id: self.id.clone(),
            revision: revision.to_owned(),
            key: key.to_owned(),
            value,
            actor: Some(actor.to_owned()),
            delegated_grant: None,
        };
        request.check_fields().map_err(SupabashError::field)?;
        self.rpc(&request).await
    }

    /// The notes of `revision` (an id or a point in time), every version by key; only those
    /// under `key` when given (`supabash_notes`).
    pub async fn notes(
        &self,
        revision: &str,
        key: Option<&str>,
    ) -> Result<Vec<supabash_core::rpc::notes::RevisionNote>> {
        self.rpc(&supabash_core::rpc::notes::Notes {
            workspace_id: self.id.clone(),
            revision: revision.to_owned(),
            key: key.map(str::to_owned),
            delegated_grant: None,
        })
        .await
    }

    /// One page of the lines matching `pattern` at `revision` (default: the head), searched on
    /// the server (`supabash_grep`): `options` carries the request's optional fields (its
    /// workspace and pattern are set here).
    pub async fn grep(
        &self,
        pattern: &str,
        options: supabash_core::rpc::grep::Grep,
    ) -> Result<supabash_core::rpc::grep::GrepPage> {
        self.rpc(&supabash_core::rpc::grep::Grep {
            workspace_id: self.id.clone(),
            pattern: pattern.to_owned(),
            ..options
        })
        .await
    }

    /// Compares two sides. `paths` limits the entries to those paths (and what lies below);
    /// `preview_bytes` (default and maximum: the limit) caps each text preview, 0 disables them.
    pub async fn diff(
        &self,
        from: DiffRef,
        to: DiffRef,
        paths: Option<Vec<String>>,
        preview_bytes: Option<usize>,
    ) -> Result<Diff> {
        let preview = preview_bytes.unwrap_or(self.limits.max_diff_preview_bytes);
        if preview > self.limits.max_diff_preview_bytes {
            return Err(SupabashError::quota(format!(
                "diff previews are at most {} bytes",
                self.limits.max_diff_preview_bytes
            )));
        }
        let staged = if from == DiffRef::Staged || to == DiffRef::Staged {
            Some(self.tree.staged_documents(self.codec.as_ref()).await?)
        } else {
            None
        };
        self.rpc(&rq::Diff {
            workspace_id: self.id.clone(),
            from_ref: from,
            to_ref: to,
            paths,
            preview_bytes: Some(preview as i32),
            staged,
            delegated_grant: None,
        })
        .await
    }

    /// One page of the workspace's audit records in the order they were written, after
    /// `cursor` (a record id); only those of `revision` when given. Needs `history` when
    /// delegated.
    pub async fn audit(&self, revision: Option<&str>, cursor: Option<&str>) -> Result<AuditPage> {
        self.rpc(&wire::Audit {
            workspace_id: self.id.clone(),
            revision: revision.map(str::to_owned),
            cursor: cursor.map(str::to_owned),
            page_size: None,
            delegated_grant: None,
        })
        .await
    }
}

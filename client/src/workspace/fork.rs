//! Forks: a new workspace from one of this one's revisions, and a fork's work merged back
//! into its source.

use super::{Base, CommitOptions, ForkOptions, ForkedFrom, RemoteSource, Workspace};
use crate::error::{Result, SupabashError};
use crate::tree::BodySource;
use std::collections::BTreeMap;
use supabash_core::rpc::requests as rq;
use supabash_core::rpc::CommitResult;
use supabash_core::ErrorCode;

/// A fork made by [`Workspace::fork`], opened, and where it came from.
pub struct Forked {
    pub workspace: Workspace,
    pub forked_from: ForkedFrom,
}

impl Workspace {
    /// Forks the workspace: a new workspace of the same owner whose first revision's tree is
    /// this one's at `options.revision` (default: the head), made without copying any bytes,
    /// and opens it (same transport, limits and codec). Staged edits here stay here.
    pub async fn fork(&self, options: ForkOptions) -> Result<Forked> {
        let forked = self
            .rpc(&rq::Fork {
                workspace_id: self.id.clone(),
                revision: options.revision,
                label: options.label,
                actor: Some(options.actor),
                cause: options.cause,
                delegated_grant: None,
            })
            .await?;
        let ws = Workspace::open(
            self.transport.clone(),
            &forked.workspace_id,
            self.limits.clone(),
        )
        .await?;
        Ok(Forked {
            workspace: ws.with_codec(self.codec.clone()),
            forked_from: forked.forked_from,
        })
    }

    /// Brings this fork's work back into the workspace it was forked from: the fork's net
    /// change since the fork point (files its committed head holds that differ from the fork
    /// point, and files it removed) is committed onto the source's head with rebase. It lands
    /// when nothing it touches changed in the source since the fork point, and fails
    /// `COMMIT_CONFLICT` naming the paths otherwise (nothing is written then). Staged edits of
    /// this workspace are not part of it: commit them first. The source's receipt says
    /// `rebased_from` the fork point when the source moved on meanwhile.
    pub async fn merge_into_source(&self, options: CommitOptions) -> Result<CommitResult> {
        let origin = self.forked_from().await?.ok_or_else(|| {
            SupabashError::new(ErrorCode::InvalidArgument, "this workspace is not a fork")
        })?;
        let transport = self.transport.as_ref();
        let at_fork = Base::load(transport, &origin.workspace_id, Some(&origin.revision)).await?;
        let head = Base::load(transport, &self.id, None).await?;
        let before: BTreeMap<&str, &str> = at_fork
            .entries
            .iter()
            .map(|(p, e)| (p.as_str(), e.content_hash.as_str()))
            .collect();
        let source = RemoteSource::new(&self.transport, &self.id);
        let head_revision = head.revision.clone().unwrap_or_default();
        let mut files = Vec::new();
        for (p, e) in head.entries.iter() {
            if before.get(p.as_str()) != Some(&e.content_hash.as_str()) {
                let stored = source.load(&head_revision, p).await?;
                let bytes = stored.verified(Some((&e.content_hash, e.size)))?;
                files.push((p.clone(), bytes));
            }
        }
        let removed: Vec<String> = before
            .keys()
            .filter(|p| !head.entries.contains_key(**p))
            .map(|p| p.to_string())
            .collect();
        // The source's tree at the fork point is the base the change applies to.
        let target = Workspace::with_base(
            self.transport.clone(),
            &origin.workspace_id,
            at_fork,
            self.limits.clone(),
        )
        .with_codec(self.codec.clone());
        target.tree.apply_files(files, &removed).await?;
        target.commit(options.with_rebase(true)).await
    }

    /// Where this workspace was forked from (`None`: it is not a fork).
    pub async fn forked_from(&self) -> Result<Option<ForkedFrom>> {
        let mut cursor: Option<String> = None;
        loop {
            let page = Workspace::list(self.transport.as_ref(), cursor.as_deref(), None).await?;
            if let Some(w) = page.workspaces.iter().find(|w| w.workspace_id == self.id) {
                return Ok(w.forked_from.clone());
            }
            match page.next_cursor {
                Some(c) => cursor = Some(c),
                None => return Ok(None),
            }
        }
    }
}

//! The change set: the difference between the staged tree and its base, never a log of what
//! tools did. A base file that is gone and a new or changed path with the same content pair up
//! as a move (in path order); everything else is an upsert or a delete.

use super::{committable, Body, Node, StagedTree};
use crate::codec::{canonical, DocumentCodec};
use crate::error::{Result, SupabashError};
use serde::Serialize;
use serde_with::skip_serializing_none;
use std::collections::BTreeMap;
use supabash_core::moves;
use supabash_core::rpc::{StagedDocument, WireChange};
use supabash_core::ErrorCode;

/// What a change does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ChangeKind {
    Upsert,
    Delete,
    Move,
}

/// One staged change, by rendered content hash and size.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StagedChange {
    pub kind: ChangeKind,
    pub path: String,
    pub from: Option<String>,
    pub before_hash: Option<String>,
    pub before_size: Option<u64>,
    pub after_hash: Option<String>,
    pub after_size: Option<u64>,
}

impl StagedTree {
    /// The committable files of the staged tree. A symbolic link outside the shell-owned
    /// roots cannot be stored and gives `UNSUPPORTED_CONTENT`.
    fn staged_files(&self) -> Result<BTreeMap<String, Body>> {
        let inner = self.lock();
        let mut files = BTreeMap::new();
        for (p, node) in &inner.nodes {
            if !committable(p) || self.is_local_only(p) {
                continue;
            }
            match node {
                Node::File { body, .. } => {
                    files.insert(p.clone(), body.clone());
                }
                Node::Symlink { .. } => {
                    return Err(SupabashError::new(
                        ErrorCode::UnsupportedContent,
                        "symbolic links cannot be committed",
                    )
                    .with_path(p))
                }
                Node::Dir { .. } => {}
            }
        }
        Ok(files)
    }

    fn plan(&self) -> Result<Vec<(StagedChange, Option<Body>)>> {
        let files = self.staged_files()?;
        let mut base = self.lock().base.clone();
        base.retain(|p, _| !self.is_local_only(p));
        let mut candidates = Vec::new();
        for (p, body) in &files {
            let hash = body.content_hash();
            match base.get(p) {
                Some(b) if b.content_hash == hash => {}
                before => candidates.push((
                    hash.clone(),
                    (p.clone(), hash, body.clone(), before.cloned()),
                )),
            }
        }
        let gone = base
            .iter()
            .filter(|(p, _)| !files.contains_key(*p))
            .map(|(p, b)| (b.content_hash.clone(), p.clone()));
        let paired = moves::pair(gone, candidates);
        let mut out: Vec<(StagedChange, Option<Body>)> = paired
            .moves
            .into_iter()
            .map(|(from, (p, hash, body, _))| {
                let change = StagedChange {
                    kind: ChangeKind::Move,
                    path: p,
                    before_hash: Some(hash.clone()),
                    before_size: Some(base[&from].size),
                    from: Some(from),
                    after_hash: Some(hash),
                    after_size: Some(body.size()),
                };
                (change, None)
            })
            .collect();
        for (p, hash, body, before) in paired.targets {
            let change = StagedChange {
                kind: ChangeKind::Upsert,
                path: p,
                from: None,
                before_hash: before.as_ref().map(|b| b.content_hash.clone()),
                before_size: before.map(|b| b.size),
                after_hash: Some(hash),
                after_size: Some(body.size()),
            };
            out.push((change, Some(body)));
        }
        for p in paired.sources {
            let b = &base[&p];
            let change = StagedChange {
                kind: ChangeKind::Delete,
                before_hash: Some(b.content_hash.clone()),
                before_size: Some(b.size),
                path: p,
                from: None,
                after_hash: None,
                after_size: None,
            };
            out.push((change, None));
        }
        // Sources of moves and deletes are absent from the tree and destinations present, so
        // no path appears twice and this order is safe to apply.
        Ok(out)
    }

    /// The staged changes against the base: moves, then upserts, then deletes, each by path.
    pub fn changes(&self) -> Result<Vec<StagedChange>> {
        Ok(self.plan()?.into_iter().map(|(c, _)| c).collect())
    }

    /// The changes with the wire shape `supabash_commit` takes (loading bodies it needs, split
    /// by `codec`), and the canonical bytes of every upserted file whose staged bytes differ.
    pub(crate) async fn wire_changes(&self, codec: &dyn DocumentCodec) -> Result<WireChanges> {
        let plan = self.plan()?;
        let mut out = WireChanges::default();
        for (change, body) in plan {
            let wire = match (change.kind, body) {
                (ChangeKind::Upsert, Some(body)) => {
                    let bytes = self.bytes_of(&body).await?;
                    let content = codec.split(&change.path, &bytes)?;
                    let rendered = canonical(&content);
                    if rendered != *bytes {
                        out.canonical.push((change.path.clone(), rendered));
                    }
                    WireChange::upsert(&change.path, &content)
                }
                (ChangeKind::Move, _) => WireChange::moved(
                    change.from.as_deref().expect("a move names its source"),
                    &change.path,
                ),
                (ChangeKind::Delete, _) => WireChange::delete(&change.path),
                (ChangeKind::Upsert, None) => unreachable!("an upsert carries its body"),
            };
            out.wire.push(wire);
            out.summary.push(change);
        }
        Ok(out)
    }

    /// Every committable file with its content split by `codec`, as `supabash_diff` takes a
    /// staged side.
    pub(crate) async fn staged_documents(
        &self,
        codec: &dyn DocumentCodec,
    ) -> Result<Vec<StagedDocument>> {
        // The staged side is the whole tree.
        self.load_all().await?;
        let mut docs = Vec::new();
        for (p, body) in self.staged_files()? {
            let bytes = self.bytes_of(&body).await?;
            docs.push(StagedDocument::new(&p, &codec.split(&p, &bytes)?));
        }
        Ok(docs)
    }
}

/// What a commit sends, and what the staged tree becomes once it succeeds.
#[derive(Debug, Default)]
pub(crate) struct WireChanges {
    pub summary: Vec<StagedChange>,
    pub wire: Vec<WireChange>,
    /// (path, canonical bytes) for staged files the database will render differently.
    pub canonical: Vec<(String, Vec<u8>)>,
}

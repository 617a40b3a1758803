//! The change set: the difference between the staged tree and its base, never a log of what
//! tools did. A base file that is gone and a new or changed path with the same content pair up
//! as a move (in path order); a path whose content is unchanged but whose mode or time is not
//! is a setattr (no body travels); everything else is an upsert or a delete.

use super::{committable, to_ns, BaseFile, Body, Inner, Node, StagedTree};
use crate::codec::{canonical, DocumentCodec};
use crate::error::{Result, SupabashError};
use serde::Serialize;
use serde_with::skip_serializing_none;
use std::collections::BTreeMap;
use supabash_core::hash::sha256_hex;
use supabash_core::links::{self, Absolute};
use supabash_core::moves;
use supabash_core::posix::{self, Attrs, Kind};
use supabash_core::rpc::{Content, StagedDocument, WireChange};
use supabash_core::ErrorCode;

/// What a change does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ChangeKind {
    Upsert,
    Delete,
    Move,
    /// Only the mode or time changed: no body is sent or stored.
    Setattr,
}

/// One staged change, by rendered content hash and size (and mode, where it is known).
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
    pub before_mode: Option<u32>,
    pub after_mode: Option<u32>,
}

/// A staged change with what committing it needs: the body of an upserted file and the
/// entry as the tree holds it.
pub(super) struct Planned {
    change: StagedChange,
    body: Option<Body>,
    entry: Option<BaseFile>,
}

/// The hash a directory entry compares by (it has no content).
const NO_CONTENT: &str = "";

impl Inner {
    /// Every entry the staged tree commits, as a base holds it, with the body of each file:
    /// files, symbolic links (their content is their target), and the directories that are
    /// entries of their own (empty, held so by the base, or with a mode other than 0o755).
    pub(crate) fn staged_entries(&self) -> BTreeMap<String, (BaseFile, Option<Body>)> {
        let mut out = BTreeMap::new();
        for (p, node) in &self.nodes {
            if !committable(p) {
                continue;
            }
            let entry = match node {
                Node::File { body, meta } => (
                    BaseFile {
                        content_hash: body.content_hash(),
                        size: body.size(),
                        kind: Kind::File,
                        mode: meta.mode,
                        mtime_ns: to_ns(meta.mtime),
                        target: None,
                    },
                    Some(body.clone()),
                ),
                Node::Symlink { target, meta } => (
                    BaseFile {
                        content_hash: sha256_hex(target.as_bytes()),
                        size: target.len() as u64,
                        kind: Kind::Symlink,
                        mode: meta.mode,
                        mtime_ns: to_ns(meta.mtime),
                        target: Some(target.clone()),
                    },
                    None,
                ),
                Node::Dir { meta } => {
                    let prefix = format!("{p}/");
                    let empty = !self.unloaded.dirs.contains(p)
                        && !self
                            .nodes
                            .range(prefix.clone()..)
                            .next()
                            .is_some_and(|(c, _)| c.starts_with(&prefix));
                    let held = self.base.get(p).is_some_and(|b| b.kind == Kind::Directory);
                    if !(empty || held || meta.mode != Kind::Directory.default_mode()) {
                        continue;
                    }
                    (
                        BaseFile {
                            content_hash: NO_CONTENT.to_owned(),
                            size: 0,
                            kind: Kind::Directory,
                            mode: meta.mode,
                            mtime_ns: to_ns(meta.mtime),
                            target: None,
                        },
                        None,
                    )
                }
            };
            out.insert(p.clone(), entry);
        }
        out
    }

    /// [`Self::staged_entries`] without the bodies: what the base becomes after a commit.
    pub(crate) fn committed_entries(&self) -> BTreeMap<String, BaseFile> {
        self.staged_entries()
            .into_iter()
            .map(|(p, (e, _))| (p, e))
            .collect()
    }
}

/// Whether two versions of a path hold the same content (kind, bytes or target).
fn same_content(a: &BaseFile, b: &BaseFile) -> bool {
    a.kind == b.kind
        && match a.kind {
            Kind::File => a.content_hash == b.content_hash,
            Kind::Symlink => a.target == b.target,
            Kind::Directory => true,
        }
}

/// The mode and time `after` sets over `before` (`None`: unchanged). A directory's time is not
/// compared: it moves with every change inside it.
fn attr_changes(before: &BaseFile, after: &BaseFile) -> (Option<u32>, Option<i64>) {
    let mode = (before.mode != after.mode).then_some(after.mode);
    let time = (after.kind != Kind::Directory && before.mtime_ns != after.mtime_ns)
        .then_some(after.mtime_ns);
    (mode, time)
}

/// Whether `after` sets a mode or a time over `before` (see [`attr_changes`]).
fn attrs_differ(before: &BaseFile, after: &BaseFile) -> bool {
    let (mode, time) = attr_changes(before, after);
    mode.is_some() || time.is_some()
}

/// A staged entry whose content is new or changed, keyed for move pairing: its path, entry,
/// body and the base's entry at that path.
type Candidate = (String, BaseFile, Option<Body>, Option<BaseFile>);

/// A path whose content is unchanged but whose mode or time is not: path, before, after.
type Setattr = (String, BaseFile, BaseFile);

/// The staged entries compared with `base`: those whose content is new or changed (keyed by
/// content hash when a file, so they can pair up as moves; a link or a directory is
/// re-created) and those whose mode or time alone changed.
fn compare(
    staged: &BTreeMap<String, (BaseFile, Option<Body>)>,
    base: &BTreeMap<String, BaseFile>,
) -> (Vec<(String, Candidate)>, Vec<Setattr>) {
    let mut candidates = Vec::new();
    let mut setattrs = Vec::new();
    for (p, (after, body)) in staged {
        match base.get(p) {
            Some(before) if same_content(before, after) => {
                if attrs_differ(before, after) {
                    setattrs.push((p.clone(), before.clone(), after.clone()));
                }
            }
            before => candidates.push((
                // Only files pair up as moves: a link or a directory is re-created.
                match after.kind {
                    Kind::File => after.content_hash.clone(),
                    _ => format!("{}:{p}", after.kind),
                },
                (p.clone(), after.clone(), body.clone(), before.cloned()),
            )),
        }
    }
    (candidates, setattrs)
}

/// The base's paths the staged tree no longer holds, keyed for move pairing (a file by its
/// content hash; anything else by a key no candidate has).
fn gone<'a>(
    staged: &'a BTreeMap<String, (BaseFile, Option<Body>)>,
    base: &'a BTreeMap<String, BaseFile>,
) -> impl Iterator<Item = (String, String)> + 'a {
    base.iter()
        .filter(|(p, _)| !staged.contains_key(*p))
        .map(|(p, b)| {
            let key = match b.kind {
                Kind::File => b.content_hash.clone(),
                _ => format!("\0{p}"),
            };
            (key, p.clone())
        })
}

/// What a commit or a diff sends for `entry`: `split` (a file's content as the codec split
/// it) or else the entry's target as the body (empty for a directory), with the entry's
/// kind, mode and time.
fn entry_content(entry: &BaseFile, split: Option<Content>) -> Content {
    let content = split.unwrap_or_else(|| Content {
        body: entry.target.clone().unwrap_or_default().into_bytes(),
        metadata: Default::default(),
        attrs: Default::default(),
    });
    Content {
        attrs: Attrs {
            kind: entry.kind,
            mode: Some(entry.mode),
            mtime_ns: Some(entry.mtime_ns),
        },
        ..content
    }
}

impl StagedChange {
    /// A change of `kind` at `path` (from `from`, for a move) between the base's entry
    /// `before` and the staged `after`.
    fn new(
        kind: ChangeKind,
        path: String,
        from: Option<String>,
        before: Option<&BaseFile>,
        after: Option<&BaseFile>,
    ) -> Self {
        StagedChange {
            kind,
            path,
            from,
            before_hash: before.map(|b| b.content_hash.clone()),
            before_size: before.map(|b| b.size),
            after_hash: after.map(|a| a.content_hash.clone()),
            after_size: after.map(|a| a.size),
            before_mode: before.map(|b| b.mode),
            after_mode: after.map(|a| a.mode),
        }
    }
}

impl Planned {
    /// `change` with the body and the entry committing it needs.
    fn of(change: StagedChange, body: Option<Body>, entry: Option<BaseFile>) -> Self {
        Planned {
            change,
            body,
            entry,
        }
    }
}

impl StagedTree {
    /// The committable entries of the staged tree. A symbolic link whose target is absolute,
    /// climbs above the root or is not a valid path cannot be stored: `UNSUPPORTED_CONTENT`;
    /// one that leads outside the workspace or into a loop as the kernel follows links
    /// (`supabash_core::links`): `INVALID_PATH`.
    /// Paths [`Self::keep_local`] keeps out of commits are left out.
    fn staged(&self) -> Result<BTreeMap<String, (BaseFile, Option<Body>)>> {
        let mut entries = self.lock().staged_entries();
        entries.retain(|p, _| !self.is_local_only(p));
        for (p, (e, _)) in &entries {
            if let Some(target) = &e.target {
                posix::check_target(p, target).map_err(|err| {
                    SupabashError::new(ErrorCode::UnsupportedContent, err.to_string()).with_path(p)
                })?;
            }
        }
        let targets: BTreeMap<String, String> = entries
            .iter()
            .filter_map(|(p, (e, _))| e.target.clone().map(|t| (p.clone(), t)))
            .collect();
        links::check_all(&targets, Absolute::Escapes).map_err(|(p, e)| {
            SupabashError::new(ErrorCode::InvalidPath, e.message(&p)).with_path(p)
        })?;
        Ok(entries)
    }

    /// The staged changes against the base, each with what committing it needs: moves,
    /// upserts, mode and time changes, then deletes.
    fn plan(&self) -> Result<Vec<Planned>> {
        let staged = self.staged()?;
        let mut base = BTreeMap::clone(&self.lock().base);
        base.retain(|p, _| !self.is_local_only(p));
        let (candidates, mut setattrs) = compare(&staged, &base);
        let paired = moves::pair(gone(&staged, &base), candidates);
        let mut out: Vec<Planned> = Vec::new();
        for (from, (p, after, _, _)) in paired.moves {
            let before = &base[&from];
            // A move keeps the source's mode and time; a different one follows as a setattr.
            if attrs_differ(before, &after) {
                setattrs.push((p.clone(), before.clone(), after.clone()));
            }
            let change = StagedChange::new(
                ChangeKind::Move,
                p,
                Some(from.clone()),
                Some(before),
                Some(&after),
            );
            out.push(Planned::of(change, None, None));
        }
        for (p, after, body, before) in paired.targets {
            let change =
                StagedChange::new(ChangeKind::Upsert, p, None, before.as_ref(), Some(&after));
            out.push(Planned::of(change, body, Some(after)));
        }
        for (p, before, after) in setattrs {
            let change =
                StagedChange::new(ChangeKind::Setattr, p, None, Some(&before), Some(&after));
            out.push(Planned::of(change, None, Some(after)));
        }
        for p in paired.sources {
            let before = &base[&p];
            let change = StagedChange::new(ChangeKind::Delete, p.clone(), None, Some(before), None);
            out.push(Planned::of(change, None, None));
        }
        // Sources of moves and deletes are absent from the tree and destinations present, so
        // no path appears twice and this order is safe to apply (the server checks the shape
        // of the final tree, not of each step).
        Ok(out)
    }

    /// The staged changes against the base: moves, upserts, mode and time changes, then
    /// deletes, each by path.
    pub fn changes(&self) -> Result<Vec<StagedChange>> {
        Ok(self.plan()?.into_iter().map(|p| p.change).collect())
    }

    /// The changes with the wire shape `supabash_commit` takes (loading bodies it needs, split
    /// by `codec`), and the canonical bytes of every upserted file whose staged bytes differ.
    pub(crate) async fn wire_changes(&self, codec: &dyn DocumentCodec) -> Result<WireChanges> {
        let plan = self.plan()?;
        let mut out = WireChanges::default();
        for Planned {
            change,
            body,
            entry,
        } in plan
        {
            let wire = match (change.kind, entry) {
                (ChangeKind::Upsert, Some(entry)) => {
                    let split = match (entry.kind, body) {
                        (Kind::File, Some(body)) => {
                            let bytes = self.bytes_of(&body).await?;
                            let content = codec.split(&change.path, &bytes)?;
                            let rendered = canonical(&content);
                            if rendered != *bytes {
                                out.canonical.push((change.path.clone(), rendered));
                            }
                            Some(content)
                        }
                        _ => None,
                    };
                    let content = entry_content(&entry, split);
                    WireChange::upsert(&change.path, &content)
                }
                (ChangeKind::Setattr, Some(entry)) => {
                    let before_mode = change.before_mode;
                    WireChange::setattr(
                        &change.path,
                        (before_mode != Some(entry.mode)).then_some(entry.mode),
                        (entry.kind != Kind::Directory).then_some(entry.mtime_ns),
                    )
                }
                (ChangeKind::Move, _) => WireChange::moved(
                    change.from.as_deref().expect("a move names its source"),
                    &change.path,
                ),
                (ChangeKind::Delete, _) => WireChange::delete(&change.path),
                (_, None) => unreachable!("an upsert or setattr carries its entry"),
            };
            out.wire.push(wire);
            out.summary.push(change);
        }
        Ok(out)
    }

    /// Every committable entry with its content split by `codec`, as `supabash_diff` takes a
    /// staged side.
    pub(crate) async fn staged_documents(
        &self,
        codec: &dyn DocumentCodec,
    ) -> Result<Vec<StagedDocument>> {
        // The staged side is the whole tree.
        self.load_all().await?;
        let mut docs = Vec::new();
        for (p, (entry, body)) in self.staged()? {
            let split = match body {
                Some(body) => Some(codec.split(&p, &self.bytes_of(&body).await?)?),
                None => None,
            };
            let content = entry_content(&entry, split);
            docs.push(StagedDocument::new(&p, &content));
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

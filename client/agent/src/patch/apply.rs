//! Applying parsed operations to an [`AgentFs`]. Every target is checked writable first; then
//! all results are computed in memory against the current tree (earlier operations of the
//! batch included); only then are files written. Should a write still fail, the writes before
//! it are undone, so a failed batch (or, in ordered mode, a failed operation) changes nothing.

use super::update::apply_chunks;
use super::{BatchMode, PatchOp};
use crate::paths::fs_error;
use crate::AgentFs;
use serde::Serialize;
use std::collections::BTreeMap;
use supabash::error::SupabashError;
use supabash::tree::Errno;
use supabash_core::{path, ErrorCode};

/// One operation that was applied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Applied {
    /// `create_file`, `update_file` or `delete_file`.
    pub op: &'static str,
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub move_to: Option<String>,
}

/// A failed patch: the error, and what was applied before it (ordered mode only).
#[derive(Debug, thiserror::Error)]
#[error("{error}")]
pub struct PatchError {
    pub error: SupabashError,
    pub applied: Vec<Applied>,
}

fn invalid(path: &str, message: impl std::fmt::Display) -> SupabashError {
    SupabashError::new(ErrorCode::InvalidPatch, format!("{path}: {message}")).with_path(path)
}

/// The state of the files a batch touches: `Some(bytes)` present, `None` absent.
struct Staging<'a> {
    fs: &'a dyn AgentFs,
    files: BTreeMap<String, Option<Vec<u8>>>,
}

impl Staging<'_> {
    async fn get(&mut self, p: &str) -> Result<Option<Vec<u8>>, SupabashError> {
        if let Some(v) = self.files.get(p) {
            return Ok(v.clone());
        }
        match self.fs.read(p).await {
            Ok(b) => Ok(Some(b)),
            Err(e) if e.errno() == Some(Errno::ENOENT) => Ok(None),
            Err(e) if e.errno() == Some(Errno::EISDIR) => Err(invalid(p, "is a directory")),
            Err(e) => Err(fs_error(e)),
        }
    }

    async fn text(&mut self, p: &str) -> Result<String, SupabashError> {
        let bytes = self
            .get(p)
            .await?
            .ok_or_else(|| invalid(p, "no such file to update"))?;
        String::from_utf8(bytes).map_err(|_| invalid(p, "is not UTF-8 text"))
    }
}

fn canonical(p: &str) -> Result<String, SupabashError> {
    crate::paths::canon(p).map_err(fs_error)
}

/// Computes one operation into `staging`.
async fn stage(staging: &mut Staging<'_>, op: &PatchOp) -> Result<Applied, SupabashError> {
    match op {
        PatchOp::Add { path, contents } => {
            let p = canonical(path)?;
            if staging.get(&p).await?.is_some() {
                return Err(invalid(&p, "already exists; update it instead"));
            }
            staging
                .files
                .insert(p.clone(), Some(contents.clone().into_bytes()));
            Ok(Applied {
                op: "create_file",
                path: p,
                move_to: None,
            })
        }
        PatchOp::Delete { path } => {
            let p = canonical(path)?;
            if staging.get(&p).await?.is_none() {
                return Err(invalid(&p, "no such file to delete"));
            }
            staging.files.insert(p.clone(), None);
            Ok(Applied {
                op: "delete_file",
                path: p,
                move_to: None,
            })
        }
        PatchOp::Update {
            path,
            move_to,
            chunks,
        } => {
            let p = canonical(path)?;
            let text = staging.text(&p).await?;
            let new = apply_chunks(&p, &text, chunks)?;
            let to = match move_to {
                Some(m) => Some(canonical(m)?),
                None => None,
            };
            match &to {
                Some(t) if *t != p => {
                    if staging.get(t).await?.is_some() {
                        return Err(invalid(t, "the move destination already exists"));
                    }
                    staging.files.insert(p.clone(), None);
                    staging.files.insert(t.clone(), Some(new.into_bytes()));
                }
                _ => {
                    staging.files.insert(p.clone(), Some(new.into_bytes()));
                }
            }
            Ok(Applied {
                op: "update_file",
                path: p,
                move_to: to,
            })
        }
    }
}

/// The paths an operation changes.
fn targets(op: &PatchOp) -> Vec<&str> {
    match op {
        PatchOp::Update {
            path,
            move_to: Some(to),
            ..
        } => vec![path, to],
        op => vec![op.path()],
    }
}

/// What one write replaced, for undoing it.
enum Undo {
    Restore(String, Vec<u8>),
    Remove(String),
    RemoveDir(String),
}

/// Writes the staged files (deletions first), undoing everything on the first failure.
async fn write_all(
    fs: &dyn AgentFs,
    files: BTreeMap<String, Option<Vec<u8>>>,
) -> Result<(), SupabashError> {
    let mut undo = Vec::new();
    let result = write_each(fs, files, &mut undo).await;
    if result.is_err() {
        for u in undo.into_iter().rev() {
            let _ = match u {
                Undo::Restore(p, bytes) => fs.write(&p, bytes).await,
                Undo::Remove(p) => fs.rm(&p, false, true).await,
                Undo::RemoveDir(p) => fs.rm(&p, true, true).await,
            };
        }
    }
    result
}

async fn write_each(
    fs: &dyn AgentFs,
    files: BTreeMap<String, Option<Vec<u8>>>,
    undo: &mut Vec<Undo>,
) -> Result<(), SupabashError> {
    let (deletes, writes): (Vec<_>, Vec<_>) = files.into_iter().partition(|(_, v)| v.is_none());
    for (p, _) in deletes {
        let old = fs.read(&p).await.map_err(fs_error)?;
        fs.rm(&p, false, false).await.map_err(fs_error)?;
        undo.push(Undo::Restore(p, old));
    }
    for (p, bytes) in writes {
        let old = fs.read(&p).await.ok();
        let mut missing = None;
        let mut dir = path::parent(&p);
        while dir != "/" && !fs.exists(dir).await {
            missing = Some(dir.to_owned());
            dir = path::parent(dir);
        }
        if let Some(top) = missing {
            fs.mkdir(path::parent(&p), true).await.map_err(fs_error)?;
            undo.push(Undo::RemoveDir(top));
        }
        fs.write(&p, bytes.unwrap_or_default())
            .await
            .map_err(fs_error)?;
        undo.push(match old {
            Some(b) => Undo::Restore(p, b),
            None => Undo::Remove(p),
        });
    }
    Ok(())
}

/// Applies `ops` to `fs` in `mode`. All-or-nothing: on failure nothing changed. Ordered: the
/// operations before the failing one stay applied (listed in the error), the failing one
/// changed nothing.
pub async fn apply(
    fs: &dyn AgentFs,
    ops: &[PatchOp],
    mode: BatchMode,
) -> Result<Vec<Applied>, PatchError> {
    let groups: Vec<&[PatchOp]> = match mode {
        BatchMode::AllOrNothing => vec![ops],
        BatchMode::Ordered => ops.chunks(1).collect(),
    };
    let mut applied = Vec::new();
    for group in groups {
        match apply_group(fs, group).await {
            Ok(done) => applied.extend(done),
            Err(error) => return Err(PatchError { error, applied }),
        }
    }
    Ok(applied)
}

async fn apply_group(fs: &dyn AgentFs, ops: &[PatchOp]) -> Result<Vec<Applied>, SupabashError> {
    for op in ops {
        for t in targets(op) {
            fs.check_writable(&canonical(t)?).map_err(fs_error)?;
        }
    }
    let mut staging = Staging {
        fs,
        files: BTreeMap::new(),
    };
    let mut done = Vec::new();
    for op in ops {
        done.push(stage(&mut staging, op).await?);
    }
    write_all(fs, staging.files).await?;
    Ok(done)
}

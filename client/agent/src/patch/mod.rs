//! `apply_patch`: the V4A patch format (see [`parse`] for the grammar), in the envelope form
//! (`*** Begin Patch` … `*** End Patch`, also heredoc-wrapped) and the per-operation form
//! (`{type: create_file|update_file|delete_file, path, diff, move_to?}`), applied to any
//! [`AgentFs`](crate::AgentFs). Batches are all-or-nothing by default; a failed operation never leaves a
//! partial change. Patches never commit.

mod apply;
pub mod parse;
mod seek;
mod update;

pub use apply::{apply, Applied, PatchError};
pub use update::apply_chunks;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use supabash::error::{Result, SupabashError};
use supabash_core::ErrorCode;

/// Largest patch accepted, in bytes (the envelope text, or the sum of per-operation diffs).
pub const MAX_PATCH_BYTES: usize = 1024 * 1024;

/// One `@@` chunk of an update.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Chunk {
    /// `@@ text` anchors, found in order before the old lines.
    pub anchors: Vec<String>,
    /// Context and removed lines, in file order.
    pub old: Vec<String>,
    /// Context and added lines, in file order.
    pub new: Vec<String>,
    /// `*** End of File`: the old lines end the file.
    pub end_of_file: bool,
}

/// One file operation of a patch.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PatchOp {
    /// Creates a file that does not exist.
    Add { path: String, contents: String },
    /// Deletes an existing file.
    Delete { path: String },
    /// Changes an existing text file, and moves it when `move_to` is set.
    Update {
        path: String,
        move_to: Option<String>,
        chunks: Vec<Chunk>,
    },
}

impl PatchOp {
    /// The path the operation starts from.
    pub fn path(&self) -> &str {
        match self {
            PatchOp::Add { path, .. } | PatchOp::Delete { path } | PatchOp::Update { path, .. } => {
                path
            }
        }
    }
}

/// The kind of a per-operation patch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum OperationKind {
    CreateFile,
    UpdateFile,
    DeleteFile,
}

/// The per-operation form: one file, a headerless diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Operation {
    #[serde(rename = "type")]
    pub kind: OperationKind,
    pub path: String,
    /// `create_file`: the new file as `+` lines; `update_file`: the chunks; unused for deletes.
    #[serde(default)]
    pub diff: String,
    #[serde(default, alias = "moveTo", skip_serializing_if = "Option::is_none")]
    pub move_to: Option<String>,
}

/// How a batch applies.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum BatchMode {
    /// Every operation applies, or none (default).
    #[default]
    AllOrNothing,
    /// Operations apply one by one; the first failure stops the batch and keeps earlier ones.
    Ordered,
}

fn too_large(size: usize) -> SupabashError {
    SupabashError::new(
        ErrorCode::InvalidPatch,
        format!("the patch is {size} bytes; at most {MAX_PATCH_BYTES} are accepted"),
    )
}

/// Parses an envelope patch (heredoc-wrapped or not).
pub fn parse_patch(text: &str) -> Result<Vec<PatchOp>> {
    if text.len() > MAX_PATCH_BYTES {
        return Err(too_large(text.len()));
    }
    parse::parse_envelope(text)
}

/// Parses per-operation patches.
pub fn parse_operations(ops: &[Operation]) -> Result<Vec<PatchOp>> {
    let size: usize = ops.iter().map(|o| o.diff.len()).sum();
    if size > MAX_PATCH_BYTES {
        return Err(too_large(size));
    }
    ops.iter()
        .map(|o| {
            let path = o.path.clone();
            let named = |e: SupabashError| {
                let message = format!("{path}: {}", e.message());
                SupabashError::new(e.code(), message).with_path(&path)
            };
            Ok(match o.kind {
                OperationKind::CreateFile => PatchOp::Add {
                    contents: parse::parse_add_body(&o.diff).map_err(named)?,
                    path: path.clone(),
                },
                OperationKind::DeleteFile => PatchOp::Delete { path: path.clone() },
                OperationKind::UpdateFile => PatchOp::Update {
                    chunks: parse::parse_update_body(&o.diff).map_err(named)?,
                    move_to: o.move_to.clone(),
                    path: path.clone(),
                },
            })
        })
        .collect()
}

#[cfg(test)]
mod tests;

//! The changing tools: write a file, edit by exact unique replacement (answering a unified
//! diff), move, create a directory, delete, and apply a patch. None of them commits.

use super::files::read_text;
use crate::patch::{self, BatchMode, Operation};
use crate::paths::{canon, fs_error};
use crate::AgentFs;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use similar::TextDiff;
use supabash::error::{Result, SupabashError};
use supabash::tree::Errno;
use supabash_core::{path, ErrorCode};

fn path_of(p: &str) -> Result<String> {
    canon(p).map_err(fs_error)
}

/// Creates the parent directories of `p`.
async fn parents(fs: &dyn AgentFs, p: &str) -> Result<()> {
    let dir = path::parent(p);
    if dir != "/" && !fs.exists(dir).await {
        fs.mkdir(dir, true).await.map_err(fs_error)?;
    }
    Ok(())
}

/// `write_file` input.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct WriteInput {
    pub path: String,
    pub content: String,
}

/// `write_file` output.
#[derive(Debug, Clone, Serialize)]
pub struct WriteOutput {
    pub path: String,
    pub bytes: usize,
    /// The file did not exist before.
    pub created: bool,
}

/// Creates or replaces a text file (parent directories are created).
pub async fn write_file(fs: &dyn AgentFs, input: WriteInput) -> Result<WriteOutput> {
    let p = path_of(&input.path)?;
    fs.check_writable(&p).map_err(fs_error)?;
    let created = !fs.exists(&p).await;
    parents(fs, &p).await?;
    let bytes = input.content.len();
    fs.write(&p, input.content.into_bytes())
        .await
        .map_err(fs_error)?;
    Ok(WriteOutput {
        path: p,
        bytes,
        created,
    })
}

/// `edit_file` input.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct EditInput {
    pub path: String,
    /// Text to find, exactly; it must occur once unless `replace_all`.
    pub old_string: String,
    pub new_string: String,
    #[serde(default)]
    pub replace_all: bool,
}

/// `edit_file` output.
#[derive(Debug, Clone, Serialize)]
pub struct EditOutput {
    pub path: String,
    pub replacements: usize,
    /// Unified diff of the change.
    pub diff: String,
}

/// A unified diff between two texts of `path`.
pub fn unified_diff(path: &str, old: &str, new: &str) -> String {
    TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a{path}"), &format!("b{path}"))
        .to_string()
}

/// Replaces an exact string: it must occur exactly once (or, with `replace_all`, at least
/// once); otherwise `INVALID_ARGUMENT` naming how many times it occurs.
pub async fn edit_file(fs: &dyn AgentFs, input: EditInput) -> Result<EditOutput> {
    let p = path_of(&input.path)?;
    fs.check_writable(&p).map_err(fs_error)?;
    let refuse = |m: String| SupabashError::new(ErrorCode::InvalidArgument, m).with_path(&p);
    if input.old_string.is_empty() {
        return Err(refuse(format!("{p}: old_string is empty")));
    }
    if input.old_string == input.new_string {
        return Err(refuse(format!(
            "{p}: old_string and new_string are the same"
        )));
    }
    let old = read_text(fs, &p).await?;
    let count = old.matches(&input.old_string).count();
    match count {
        0 => return Err(refuse(format!("{p}: old_string occurs 0 times"))),
        1 => {}
        n if !input.replace_all => {
            return Err(refuse(format!(
                "{p}: old_string occurs {n} times; make it unique or set replace_all"
            )))
        }
        _ => {}
    }
    let new = old.replace(&input.old_string, &input.new_string);
    fs.write(&p, new.clone().into_bytes())
        .await
        .map_err(fs_error)?;
    Ok(EditOutput {
        diff: unified_diff(&p, &old, &new),
        path: p,
        replacements: count,
    })
}

/// `move_file` input.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct MoveInput {
    pub source: String,
    pub destination: String,
    /// Replace an existing destination file (default: refuse with `EEXIST`).
    #[serde(default)]
    pub overwrite: bool,
}

/// `move_file` output.
#[derive(Debug, Clone, Serialize)]
pub struct MoveOutput {
    pub source: String,
    pub destination: String,
    /// An existing destination was replaced.
    pub replaced: bool,
}

/// Moves or renames a file or directory (parent directories of the destination are created).
pub async fn move_file(fs: &dyn AgentFs, input: MoveInput) -> Result<MoveOutput> {
    let (s, d) = (path_of(&input.source)?, path_of(&input.destination)?);
    fs.check_writable(&s).map_err(fs_error)?;
    fs.check_writable(&d).map_err(fs_error)?;
    let replaced = s != d && fs.exists(&d).await;
    if replaced && !input.overwrite {
        return Err(fs_error(crate::paths::err(Errno::EEXIST, "rename", &d)));
    }
    if !fs.exists(&s).await {
        return Err(fs_error(crate::paths::err(Errno::ENOENT, "rename", &s)));
    }
    parents(fs, &d).await?;
    fs.mv(&s, &d).await.map_err(fs_error)?;
    Ok(MoveOutput {
        source: s,
        destination: d,
        replaced,
    })
}

/// `create_directory` input.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct MkdirInput {
    pub path: String,
}

/// `create_directory` output.
#[derive(Debug, Clone, Serialize)]
pub struct MkdirOutput {
    pub path: String,
}

/// Creates a directory and its parents (succeeds when it exists).
pub async fn create_directory(fs: &dyn AgentFs, input: MkdirInput) -> Result<MkdirOutput> {
    let p = path_of(&input.path)?;
    fs.check_writable(&p).map_err(fs_error)?;
    fs.mkdir(&p, true).await.map_err(fs_error)?;
    Ok(MkdirOutput { path: p })
}

/// `delete_file` input.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct DeleteInput {
    pub path: String,
    /// Required to delete a non-empty directory.
    #[serde(default)]
    pub recursive: bool,
}

/// `delete_file` output.
#[derive(Debug, Clone, Serialize)]
pub struct DeleteOutput {
    pub path: String,
}

/// Deletes a file, link or (with `recursive`) directory.
pub async fn delete_file(fs: &dyn AgentFs, input: DeleteInput) -> Result<DeleteOutput> {
    let p = path_of(&input.path)?;
    fs.check_writable(&p).map_err(fs_error)?;
    fs.rm(&p, input.recursive, false).await.map_err(fs_error)?;
    Ok(DeleteOutput { path: p })
}

/// `apply_patch` input: an envelope patch, or per-operation patches (exactly one of them).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct PatchInput {
    /// `*** Begin Patch` … `*** End Patch`, optionally heredoc-wrapped.
    #[serde(default)]
    pub patch: Option<String>,
    /// `{type, path, diff, move_to?}` operations.
    #[serde(default)]
    pub operations: Vec<Operation>,
    #[serde(default)]
    pub mode: BatchMode,
}

/// `apply_patch` output.
#[derive(Debug, Clone, Serialize)]
pub struct PatchOutput {
    pub applied: Vec<patch::Applied>,
}

/// Applies a patch. On failure the error says what failed; in ordered mode the operations
/// before it stay applied and are listed in the message.
pub async fn apply_patch(fs: &dyn AgentFs, input: PatchInput) -> Result<PatchOutput> {
    let ops = match (&input.patch, input.operations.is_empty()) {
        (Some(text), true) => patch::parse_patch(text)?,
        (None, false) => patch::parse_operations(&input.operations)?,
        _ => {
            return Err(SupabashError::new(
                ErrorCode::InvalidPatch,
                "give either `patch` or `operations`",
            ))
        }
    };
    match patch::apply(fs, &ops, input.mode).await {
        Ok(applied) => Ok(PatchOutput { applied }),
        Err(e) if e.applied.is_empty() => Err(e.error),
        Err(e) => {
            let done: Vec<&str> = e.applied.iter().map(|a| a.path.as_str()).collect();
            let message = format!(
                "{} (applied before it: {})",
                e.error.message(),
                done.join(", ")
            );
            let mut err = SupabashError::new(e.error.code(), message);
            if let Some(path) = e.error.path() {
                err = err.with_path(path);
            }
            Err(err)
        }
    }
}

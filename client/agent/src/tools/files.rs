//! The reading tools: read a file (line ranges, numbered lines, caps), list a directory, print
//! a tree, file information, and image viewing.

use super::text::cap;
use super::walk::walk;
use super::ToolOptions;
use crate::paths::{canon, fs_error};
use crate::AgentFs;
use base64::Engine;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::time::UNIX_EPOCH;
use supabash::error::{Result, SupabashError};
use supabash::tree::FileKind;
use supabash_core::ErrorCode;

fn path_of(p: &str) -> Result<String> {
    canon(p).map_err(fs_error)
}

fn kind_name(k: FileKind) -> &'static str {
    match k {
        FileKind::File => "file",
        FileKind::Directory => "directory",
        FileKind::Symlink => "symlink",
        _ => "other",
    }
}

/// Reads a text file as UTF-8.
pub(crate) async fn read_text(fs: &dyn AgentFs, p: &str) -> Result<String> {
    let bytes = fs.read(p).await.map_err(fs_error)?;
    String::from_utf8(bytes).map_err(|_| {
        SupabashError::new(
            ErrorCode::UnsupportedContent,
            format!("{p} is not UTF-8 text"),
        )
        .with_path(p)
    })
}

/// `read_file` input.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ReadInput {
    pub path: String,
    /// First line to return, 1-based (default 1).
    #[serde(default)]
    pub offset: Option<usize>,
    /// Most lines to return (default and maximum: the tool limit).
    #[serde(default)]
    pub limit: Option<usize>,
    /// Prefix each line with its number and a tab.
    #[serde(default)]
    pub line_numbers: bool,
}

/// `read_file` output.
#[derive(Debug, Clone, Serialize)]
pub struct ReadOutput {
    pub path: String,
    pub content: String,
    /// First and last line returned (1-based; `end_line < start_line` when none).
    pub start_line: usize,
    pub end_line: usize,
    pub total_lines: usize,
    /// Lines or bytes were left out (the content then ends with the truncation marker).
    pub truncated: bool,
}

/// Reads a range of lines of a text file, capped in lines and bytes.
pub async fn read_file(fs: &dyn AgentFs, input: ReadInput, o: &ToolOptions) -> Result<ReadOutput> {
    let p = path_of(&input.path)?;
    let text = read_text(fs, &p).await?;
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let start = input.offset.unwrap_or(1).max(1);
    let limit = input
        .limit
        .unwrap_or(o.read_max_lines)
        .min(o.read_max_lines);
    let picked: Vec<&str> = lines.iter().skip(start - 1).take(limit).copied().collect();
    let mut content = String::new();
    for (i, line) in picked.iter().enumerate() {
        if input.line_numbers {
            content.push_str(&format!("{:>6}\t", start + i));
        }
        content.push_str(line);
    }
    let more_lines = start - 1 + picked.len() < lines.len();
    let (mut content, cut) = cap(&content, o.read_max_bytes);
    if more_lines && !cut {
        content.push_str(crate::TRUNCATION_MARKER);
    }
    Ok(ReadOutput {
        path: p,
        content,
        start_line: start,
        end_line: start + picked.len() - 1,
        total_lines: lines.len(),
        truncated: cut || more_lines,
    })
}

/// `list_directory` input.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ListInput {
    pub path: String,
}

/// One entry of a listing.
#[derive(Debug, Clone, Serialize)]
pub struct ListEntry {
    pub name: String,
    pub kind: &'static str,
    /// Bytes, for files.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

/// `list_directory` output.
#[derive(Debug, Clone, Serialize)]
pub struct ListOutput {
    pub path: String,
    pub entries: Vec<ListEntry>,
    /// More entries exist than the tool limit let through.
    pub truncated: bool,
}

/// Lists a directory, sorted by name, capped in entries.
pub async fn list_directory(
    fs: &dyn AgentFs,
    input: ListInput,
    o: &ToolOptions,
) -> Result<ListOutput> {
    let p = path_of(&input.path)?;
    let all = fs.readdir(&p).await.map_err(fs_error)?;
    let truncated = all.len() > o.max_entries;
    let mut entries = Vec::new();
    for e in all.into_iter().take(o.max_entries) {
        let child = if p == "/" {
            format!("/{}", e.name)
        } else {
            format!("{p}/{}", e.name)
        };
        let size = match e.kind {
            FileKind::File => fs.stat(&child).await.ok().map(|s| s.size),
            _ => None,
        };
        entries.push(ListEntry {
            name: e.name,
            kind: kind_name(e.kind),
            size,
        });
    }
    Ok(ListOutput {
        path: p,
        entries,
        truncated,
    })
}

/// `directory_tree` input.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct TreeInput {
    #[serde(default = "root")]
    pub path: String,
    /// Levels below `path` (default 3).
    #[serde(default)]
    pub depth: Option<usize>,
}

fn root() -> String {
    "/".into()
}

/// `directory_tree` output: an indented listing, directories ending in `/`.
#[derive(Debug, Clone, Serialize)]
pub struct TreeOutput {
    pub path: String,
    pub tree: String,
    pub truncated: bool,
}

/// Prints the tree below a directory, to a depth, capped in entries.
pub async fn directory_tree(
    fs: &dyn AgentFs,
    input: TreeInput,
    o: &ToolOptions,
) -> Result<TreeOutput> {
    let p = path_of(&input.path)?;
    let depth = input.depth.unwrap_or(3).max(1);
    let (found, cut) = walk(fs, &p, depth, o.max_entries).await.map_err(fs_error)?;
    let mut tree = String::new();
    for f in found {
        let name = f.path.rsplit('/').next().unwrap_or("");
        let slash = if f.kind == FileKind::Directory {
            "/"
        } else {
            ""
        };
        tree.push_str(&format!("{}{name}{slash}\n", "  ".repeat(f.depth - 1)));
    }
    if cut {
        tree.push_str(crate::TRUNCATION_MARKER);
    }
    Ok(TreeOutput {
        path: p,
        tree,
        truncated: cut,
    })
}

/// `file_info` input.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct InfoInput {
    pub path: String,
}

/// `file_info` output.
#[derive(Debug, Clone, Serialize)]
pub struct InfoOutput {
    pub path: String,
    pub kind: &'static str,
    pub size: u64,
    /// Permission bits in octal, e.g. `644`.
    pub mode: String,
    /// Seconds since the Unix epoch.
    pub modified: u64,
    /// Lines, for UTF-8 text files.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lines: Option<usize>,
}

/// Kind, size, mode, modification time and (for text) line count of a path.
pub async fn file_info(fs: &dyn AgentFs, input: InfoInput) -> Result<InfoOutput> {
    let p = path_of(&input.path)?;
    let st = fs.lstat(&p).await.map_err(fs_error)?;
    let lines = match st.kind {
        FileKind::File => fs
            .read(&p)
            .await
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .map(|t| t.split_inclusive('\n').count()),
        _ => None,
    };
    Ok(InfoOutput {
        path: p,
        kind: kind_name(st.kind),
        size: st.size,
        mode: format!("{:o}", st.mode),
        modified: st
            .mtime
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
        lines,
    })
}

/// `view_image` input.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ImageInput {
    pub path: String,
}

/// `view_image` output: the image as base64 with its detected MIME type.
#[derive(Debug, Clone, Serialize)]
pub struct ImageOutput {
    pub path: String,
    pub mime: &'static str,
    pub bytes: usize,
    pub base64: String,
}

/// The MIME type of an allowed image format, by magic bytes.
pub fn image_mime(b: &[u8]) -> Option<&'static str> {
    if b.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if b.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if b.starts_with(b"GIF87a") || b.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if b.len() >= 12 && &b[..4] == b"RIFF" && &b[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// Returns an image (PNG, JPEG, GIF or WebP by magic bytes, at most the byte limit) as base64.
pub async fn view_image(
    fs: &dyn AgentFs,
    input: ImageInput,
    o: &ToolOptions,
) -> Result<ImageOutput> {
    let p = path_of(&input.path)?;
    let st = fs.stat(&p).await.map_err(fs_error)?;
    if st.size > o.image_max_bytes as u64 {
        return Err(SupabashError::quota(format!(
            "{p} is {} bytes; images are at most {}",
            st.size, o.image_max_bytes
        ))
        .with_path(&p));
    }
    let bytes = fs.read(&p).await.map_err(fs_error)?;
    let mime = image_mime(&bytes).ok_or_else(|| {
        SupabashError::new(
            ErrorCode::UnsupportedContent,
            format!("{p} is not a PNG, JPEG, GIF or WebP image"),
        )
        .with_path(&p)
    })?;
    Ok(ImageOutput {
        path: p,
        mime,
        bytes: bytes.len(),
        base64: base64::engine::general_purpose::STANDARD.encode(&bytes),
    })
}

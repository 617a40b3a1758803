//! File tools shaped like the ones models know, over any [`AgentFs`]: each has a name, a
//! description, a serde input and output, and read-only/destructive annotations as data
//! ([`SPECS`]). [`call`] runs one by name with JSON input. No tool commits, discards,
//! checkpoints, reads history or restores: those stay with the host.

mod edit;
mod files;
mod search;
mod text;
mod walk;

pub use edit::{
    apply_patch, create_directory, delete_file, edit_file, move_file, unified_diff, write_file,
    DeleteInput, DeleteOutput, EditInput, EditOutput, MkdirInput, MkdirOutput, MoveInput,
    MoveOutput, PatchInput, PatchOutput, WriteInput, WriteOutput,
};
pub use files::{
    directory_tree, file_info, image_mime, list_directory, read_file, view_image, ImageInput,
    ImageOutput, InfoInput, InfoOutput, ListEntry, ListInput, ListOutput, ReadInput, ReadOutput,
    TreeInput, TreeOutput,
};
pub use search::{glob, grep, GlobInput, GlobOutput, GrepInput, GrepMatch, GrepOutput};
pub use text::cap;

use super::AgentFs;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use supabash::error::{Result, SupabashError};
use supabash_core::ErrorCode;

/// Caps the tools apply.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolOptions {
    /// Most lines `read_file` returns (default 2,000).
    pub read_max_lines: usize,
    /// Most bytes `read_file` returns (default 256 KiB).
    pub read_max_bytes: usize,
    /// Most entries `list_directory`, `directory_tree` and `glob` return (default 1,000).
    pub max_entries: usize,
    /// Most paths a search walks (default 20,000).
    pub max_walk: usize,
    /// Most lines `grep` returns (default 200).
    pub max_matches: usize,
    /// Longest line `grep` returns, in bytes (default 500).
    pub max_line_bytes: usize,
    /// Largest image `view_image` returns (default 5 MiB).
    pub image_max_bytes: usize,
    /// Whether `view_image` is offered (default true).
    pub images: bool,
}

supabash::setters! {
    impl ToolOptions {
        with_read_max_lines(read_max_lines: usize),
        with_read_max_bytes(read_max_bytes: usize),
        with_max_entries(max_entries: usize),
        with_max_walk(max_walk: usize),
        with_max_matches(max_matches: usize),
        with_max_line_bytes(max_line_bytes: usize),
        with_image_max_bytes(image_max_bytes: usize),
        with_images(images: bool),
    }
}

impl Default for ToolOptions {
    fn default() -> Self {
        ToolOptions {
            read_max_lines: 2_000,
            read_max_bytes: 256 * 1024,
            max_entries: 1_000,
            max_walk: 20_000,
            max_matches: 200,
            max_line_bytes: 500,
            image_max_bytes: 5 * 1024 * 1024,
            images: true,
        }
    }
}

/// A tool's name, description, input schema and annotations.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct ToolSpec {
    pub name: &'static str,
    pub description: &'static str,
    /// The JSON Schema of the input (from the input struct and its doc comments).
    #[serde(skip)]
    pub input_schema: fn() -> Value,
    /// Changes nothing.
    pub read_only: bool,
    /// May replace or remove existing content.
    pub destructive: bool,
    /// Repeating the call with the same input changes nothing more.
    pub idempotent: bool,
}

fn schema<T: JsonSchema>() -> Value {
    serde_json::to_value(schemars::schema_for!(T)).expect("schemas serialise")
}

const fn reader(
    name: &'static str,
    input_schema: fn() -> Value,
    description: &'static str,
) -> ToolSpec {
    ToolSpec {
        name,
        description,
        input_schema,
        read_only: true,
        destructive: false,
        idempotent: true,
    }
}

const fn writer(
    name: &'static str,
    input_schema: fn() -> Value,
    description: &'static str,
    destructive: bool,
    idempotent: bool,
) -> ToolSpec {
    ToolSpec {
        name,
        description,
        input_schema,
        read_only: false,
        destructive,
        idempotent,
    }
}

/// Every file tool. `view_image` is last so hosts that disable images can drop it.
pub const SPECS: [ToolSpec; 13] = [
    reader(
        "read_file",
        schema::<ReadInput>,
        "Read a UTF-8 text file. Optional `offset` (first line, 1-based) and `limit` (lines); \
         `line_numbers` prefixes each line with its number. Long output ends with \
         \"\\n[truncated]\\n\".",
    ),
    writer(
        "write_file",
        schema::<WriteInput>,
        "Create a file or replace its whole content; parent directories are created.",
        true,
        true,
    ),
    writer(
        "edit_file",
        schema::<EditInput>,
        "Replace `old_string` with `new_string` in a file. `old_string` must occur exactly \
         once (or set `replace_all`); answers a unified diff.",
        true,
        false,
    ),
    writer(
        "apply_patch",
        schema::<PatchInput>,
        "Apply a V4A patch: `patch` holds `*** Begin Patch` … `*** End Patch` (Add File, \
         Delete File, Update File with optional Move to, @@ chunks), or `operations` holds \
         {type: create_file|update_file|delete_file, path, diff, move_to?}. All-or-nothing \
         unless `mode` is \"ordered\".",
        true,
        false,
    ),
    reader(
        "list_directory",
        schema::<ListInput>,
        "List a directory: names, kinds and file sizes.",
    ),
    reader(
        "directory_tree",
        schema::<TreeInput>,
        "Print the tree below a directory (default `/`) to `depth` levels (default 3).",
    ),
    reader(
        "glob",
        schema::<GlobInput>,
        "Find paths matching a glob (e.g. `**/*.md`) relative to `path` (default `/`).",
    ),
    reader(
        "grep",
        schema::<GrepInput>,
        "Search file contents with a regular expression under `path`; optional `glob` filter, \
         `case_insensitive`, `max_results`. Answers path, line number and line.",
    ),
    writer(
        "move_file",
        schema::<MoveInput>,
        "Move or rename a file or directory. An existing destination is refused unless \
         `overwrite` is set.",
        true,
        false,
    ),
    writer(
        "delete_file",
        schema::<DeleteInput>,
        "Delete a file, or a directory (non-empty ones need `recursive`).",
        true,
        false,
    ),
    writer(
        "create_directory",
        schema::<MkdirInput>,
        "Create a directory and any missing parents; succeeds when it exists.",
        false,
        true,
    ),
    reader(
        "file_info",
        schema::<InfoInput>,
        "Kind, size, mode, modification time and line count of a path.",
    ),
    reader(
        "view_image",
        schema::<ImageInput>,
        "View a PNG, JPEG, GIF or WebP image (base64 with its MIME type), within a byte limit.",
    ),
];

/// The spec of a tool by name.
pub fn spec(name: &str) -> Option<&'static ToolSpec> {
    SPECS.iter().find(|s| s.name == name)
}

fn input<T: DeserializeOwned>(name: &str, v: Value) -> Result<T> {
    serde_json::from_value(v)
        .map_err(|e| SupabashError::new(ErrorCode::InvalidArgument, format!("{name} input: {e}")))
}

fn output<T: Serialize>(r: Result<T>) -> Result<Value> {
    r.map(|v| serde_json::to_value(v).expect("tool outputs serialise"))
}

/// Runs the tool `name` with JSON `args` over `fs`.
pub async fn call(fs: &dyn AgentFs, name: &str, args: Value, o: &ToolOptions) -> Result<Value> {
    match name {
        "read_file" => output(read_file(fs, input(name, args)?, o).await),
        "write_file" => output(write_file(fs, input(name, args)?).await),
        "edit_file" => output(edit_file(fs, input(name, args)?).await),
        "apply_patch" => output(apply_patch(fs, input(name, args)?).await),
        "list_directory" => output(list_directory(fs, input(name, args)?, o).await),
        "directory_tree" => output(directory_tree(fs, input(name, args)?, o).await),
        "glob" => output(glob(fs, input(name, args)?, o).await),
        "grep" => output(grep(fs, input(name, args)?, o).await),
        "move_file" => output(move_file(fs, input(name, args)?).await),
        "create_directory" => output(create_directory(fs, input(name, args)?).await),
        "delete_file" => output(delete_file(fs, input(name, args)?).await),
        "file_info" => output(file_info(fs, input(name, args)?).await),
        "view_image" if o.images => output(view_image(fs, input(name, args)?, o).await),
        _ => Err(SupabashError::new(
            ErrorCode::InvalidArgument,
            format!("no tool named {name:?}"),
        )),
    }
}

#[cfg(test)]
mod tests;

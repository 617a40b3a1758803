//! The tools `supabash mcp` serves: the file tools of [`crate::tools`] (read, write,
//! edit, apply_patch, list, tree, glob, grep, move, delete, create directory, file info, view
//! image) and `bash`. Each is described by name, description, input schema and hints; none of
//! them commits, discards, checkpoints, reads history or restores: those stay with the host.

use crate::shell::{Shell, ShellOutput};
use crate::tools::{self as file_tools, ToolOptions, ToolSpec, SPECS};
use crate::AgentFs;
use serde::Deserialize;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use supabash::error::Result;
use supabash_core::ErrorCode;

/// What every tool call works on.
pub struct Session {
    /// The filesystem the agent edits (one workspace, or several mounted side by side).
    pub fs: Arc<dyn AgentFs>,
    /// bash over `fs`.
    pub shell: Shell,
    /// Caps of the file tools.
    pub options: ToolOptions,
}

/// Arguments of `bash`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct BashArgs {
    /// The bash command or script to run (working directory `/`, a fresh shell every call).
    pub command: String,
    /// A shorter deadline in milliseconds (the server's deadline is the most).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

fn bash_schema() -> Value {
    serde_json::to_value(schemars::schema_for!(BashArgs)).expect("schemas serialise")
}

/// The `bash` tool.
pub const BASH: ToolSpec = ToolSpec {
    name: "bash",
    description: "Run a bash command in the workspace (an in-process bash with the usual tools: \
         cat, grep, sed, awk, find, sort, mv, rm, mkdir, heredocs, pipes, loops). Every call \
         starts in / with a fresh shell; files persist between calls, /tmp is scratch that is \
         never kept. No network. Edits are staged: you cannot commit, discard or read history, \
         the host decides. Output is capped and secrets are redacted.",
    input_schema: bash_schema,
    read_only: false,
    destructive: true,
    idempotent: false,
};

/// The tools served, in order: the file tools (without `view_image` when images are off),
/// then `bash`.
pub fn specs(options: &ToolOptions) -> Vec<ToolSpec> {
    SPECS
        .iter()
        .filter(|s| options.images || s.name != "view_image")
        .copied()
        .chain([BASH])
        .collect()
}

impl Session {
    /// Runs the tool `name` with JSON `args`.
    pub async fn call(&self, name: &str, args: Value) -> Result<Value> {
        if name != BASH.name {
            return file_tools::call(self.fs.as_ref(), name, args, &self.options).await;
        }
        let args: BashArgs = serde_json::from_value(args).map_err(|e| {
            supabash::SupabashError::new(ErrorCode::InvalidArgument, format!("bash input: {e}"))
        })?;
        let limit = self.shell.config().timeout;
        let timeout = args
            .timeout_ms
            .map(Duration::from_millis)
            .map_or(limit, |t| t.min(limit));
        let out: ShellOutput = self.shell.run_with_timeout(&args.command, timeout).await?;
        Ok(serde_json::to_value(out).expect("shell output serialises"))
    }
}

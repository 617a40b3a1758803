//! The tools `supabash mcp` serves, independent of the transport: each has a name, a
//! description, an input schema, honest hints (read-only, destructive, idempotent; never open
//! world) and a handler over the session's agent filesystem. None of them commits, discards,
//! checkpoints, reads history or restores: those stay with the host.

use crate::agent::patch::{self, BatchMode, Operation};
use crate::agent::shell::{Shell, ShellOutput};
use crate::agent::AgentFs;
use crate::error::{Result, SupabashError};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use supabash_core::ErrorCode;

/// What every tool call works on: the agent filesystem and the shell over it.
pub struct Session {
    /// The filesystem the agent edits (one workspace, or several mounted side by side).
    pub fs: Arc<dyn AgentFs>,
    /// bash over `fs`.
    pub shell: Shell,
}

/// How a tool behaves, as MCP annotations report it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hints {
    /// Changes nothing.
    pub read_only: bool,
    /// May overwrite or delete what exists.
    pub destructive: bool,
    /// Calling it twice with the same input changes nothing more.
    pub idempotent: bool,
}

type Output = Pin<Box<dyn Future<Output = Result<Value>> + Send>>;
type Handler = Arc<dyn Fn(Arc<Session>, Value) -> Output + Send + Sync>;

/// One tool.
#[derive(Clone)]
pub struct ToolDef {
    /// The tool name.
    pub name: &'static str,
    /// What it does, for the model.
    pub description: &'static str,
    /// JSON Schema of its arguments (an object schema).
    pub input_schema: Value,
    /// Annotations.
    pub hints: Hints,
    handler: Handler,
}

impl ToolDef {
    /// A tool whose arguments deserialize into `I` and whose result serializes from `O`.
    pub fn new<I, O, F, Fut>(
        name: &'static str,
        description: &'static str,
        input_schema: Value,
        hints: Hints,
        f: F,
    ) -> Self
    where
        I: DeserializeOwned + Send + 'static,
        O: Serialize + 'static,
        F: Fn(Arc<Session>, I) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O>> + Send + 'static,
    {
        let f = Arc::new(f);
        let handler: Handler = Arc::new(move |session, args| {
            let f = f.clone();
            Box::pin(async move {
                let input: I = serde_json::from_value(args).map_err(|e| {
                    SupabashError::new(ErrorCode::InvalidArgument, format!("arguments: {e}"))
                })?;
                let out = f(session, input).await?;
                serde_json::to_value(out)
                    .map_err(|e| SupabashError::new(ErrorCode::InvalidArgument, e.to_string()))
            })
        });
        ToolDef {
            name,
            description,
            input_schema,
            hints,
            handler,
        }
    }

    /// Runs the tool.
    pub async fn call(&self, session: Arc<Session>, args: Value) -> Result<Value> {
        (self.handler)(session, args).await
    }
}

/// Arguments of `bash`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct BashArgs {
    /// The bash command or script to run (working directory `/`, fresh shell every call).
    pub command: String,
    /// A shorter deadline in milliseconds (the server's deadline is the most).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

/// Arguments of `apply_patch`: an envelope, or per-operation patches.
#[derive(Debug, Deserialize)]
pub struct PatchArgs {
    #[serde(default)]
    pub input: Option<String>,
    #[serde(default)]
    pub operations: Option<Vec<Operation>>,
    #[serde(default)]
    pub mode: Option<BatchMode>,
}

fn schema_of<T: schemars::JsonSchema>() -> Value {
    serde_json::to_value(schemars::schema_for!(T)).unwrap_or_else(|_| json!({"type": "object"}))
}

async fn bash(session: Arc<Session>, args: BashArgs) -> Result<ShellOutput> {
    let limit = session.shell.config().timeout;
    let timeout = args
        .timeout_ms
        .map(Duration::from_millis)
        .map_or(limit, |t| t.min(limit));
    session.shell.run_with_timeout(&args.command, timeout).await
}

async fn apply_patch(session: Arc<Session>, args: PatchArgs) -> Result<Value> {
    let ops = match (&args.input, &args.operations) {
        (Some(text), None) => patch::parse_patch(text)?,
        (None, Some(ops)) => patch::parse_operations(ops)?,
        _ => {
            return Err(SupabashError::new(
                ErrorCode::InvalidArgument,
                "give exactly one of `input` (a *** Begin Patch envelope) or `operations`",
            ))
        }
    };
    let mode = args.mode.unwrap_or_default();
    match patch::apply(session.fs.as_ref(), &ops, mode).await {
        Ok(applied) => Ok(json!({ "status": "completed", "applied": applied })),
        Err(e) => Err(e.error),
    }
}

fn patch_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "input": {
                "type": "string",
                "description": "A V4A patch: *** Begin Patch, then *** Add File / *** Update File (with @@ chunks, optional *** Move to) / *** Delete File sections, then *** End Patch."
            },
            "operations": {
                "type": "array",
                "description": "Per-operation patches, instead of `input`.",
                "items": {
                    "type": "object",
                    "properties": {
                        "type": { "type": "string", "enum": ["create_file", "update_file", "delete_file"] },
                        "path": { "type": "string" },
                        "diff": { "type": "string", "description": "create_file: the file as + lines; update_file: @@ chunks with ' ', '-' and '+' lines" },
                        "move_to": { "type": "string" }
                    },
                    "required": ["type", "path"]
                }
            },
            "mode": {
                "type": "string",
                "enum": ["all_or_nothing", "ordered"],
                "description": "all_or_nothing (default): every operation applies or none; ordered: stop at the first failure and keep the ones before."
            }
        }
    })
}

/// The tools served: `bash` and `apply_patch`.
pub fn tools() -> Vec<ToolDef> {
    vec![
        ToolDef::new(
            "bash",
            "Run a bash command in the workspace (an in-process bash with the usual tools: cat, \
             grep, sed, awk, find, sort, mv, rm, mkdir, heredocs, pipes, loops). Every call \
             starts in / with a fresh shell; files persist between calls, /tmp is scratch that \
             is never kept. No network. Edits are staged; you cannot commit, discard or read \
             history: the host decides. Output is capped and secrets are redacted.",
            schema_of::<BashArgs>(),
            Hints {
                read_only: false,
                destructive: true,
                idempotent: false,
            },
            bash,
        ),
        ToolDef::new(
            "apply_patch",
            "Apply a V4A patch (the *** Begin Patch envelope in `input`, or per-operation \
             patches in `operations`) to the workspace. All-or-nothing by default: a failure \
             changes nothing. Edits are staged; the host commits.",
            patch_schema(),
            Hints {
                read_only: false,
                destructive: true,
                idempotent: false,
            },
            apply_patch,
        ),
    ]
}

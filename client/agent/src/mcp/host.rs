//! Host tools, served only when the host opts in (`supabash mcp --host-tools`): commit,
//! history, diff, restore and checkpoint as MCP tools, for setups where the MCP client is the
//! host (a desktop agent app). Each is annotated for what it does and titled as a host action.

use crate::tools::ToolSpec;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::Arc;
use supabash::error::Result;
use supabash::workspace::{CheckpointOptions, CommitOptions, DiffRef};
use supabash::{SupabashError, Workspace};
use supabash_core::ErrorCode;

/// Tool names.
pub const COMMIT: &str = "commit";
pub const HISTORY: &str = "history";
pub const DIFF: &str = "diff";
pub const RESTORE: &str = "restore";
pub const CHECKPOINT: &str = "checkpoint";

/// The title prefix that marks a host tool in its annotations.
pub const HOST_TITLE: &str = "Host action: ";

/// Which workspace (its label; needed only when several are served).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct CommitArgs {
    #[serde(default)]
    pub workspace: Option<String>,
    /// Why: recorded as the revision's cause.
    #[serde(default)]
    pub message: Option<String>,
}

/// A page of history, oldest first.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct HistoryArgs {
    #[serde(default)]
    pub workspace: Option<String>,
    /// The last revision id of the previous page.
    #[serde(default)]
    pub cursor: Option<String>,
}

/// A diff between two sides: a revision id, "head" or "staged".
#[derive(Debug, Deserialize, JsonSchema)]
pub struct DiffArgs {
    #[serde(default)]
    pub workspace: Option<String>,
    /// Default "head".
    #[serde(default)]
    pub from: Option<String>,
    /// Default "staged".
    #[serde(default)]
    pub to: Option<String>,
}

/// Stages the tree of an earlier revision (committed by a later commit).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct RestoreArgs {
    #[serde(default)]
    pub workspace: Option<String>,
    pub revision: String,
}

/// Names a revision (default the head) so purge keeps it.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct CheckpointArgs {
    #[serde(default)]
    pub workspace: Option<String>,
    #[serde(default)]
    pub label: Option<String>,
    #[serde(default)]
    pub revision: Option<String>,
}

fn schema<T: JsonSchema>() -> Value {
    serde_json::to_value(schemars::schema_for!(T)).expect("schemas serialise")
}

/// The host tools, in order.
pub const SPECS: [ToolSpec; 5] = [
    ToolSpec {
        name: COMMIT,
        description: "Host action: commit the staged changes as one new revision (with the \
             audit records of the calls that made them).",
        input_schema: schema::<CommitArgs>,
        read_only: false,
        destructive: false,
        idempotent: false,
    },
    ToolSpec {
        name: HISTORY,
        description: "Host action: one page of the workspace's revisions, oldest first.",
        input_schema: schema::<HistoryArgs>,
        read_only: true,
        destructive: false,
        idempotent: true,
    },
    ToolSpec {
        name: DIFF,
        description: "Host action: what differs between two sides (a revision id, \"head\" or \
             \"staged\"; default head to staged).",
        input_schema: schema::<DiffArgs>,
        read_only: true,
        destructive: false,
        idempotent: true,
    },
    ToolSpec {
        name: RESTORE,
        description: "Host action: replace the staged tree with an earlier revision's (staged \
             edits are lost; a commit then makes it the head).",
        input_schema: schema::<RestoreArgs>,
        read_only: false,
        destructive: true,
        idempotent: true,
    },
    ToolSpec {
        name: CHECKPOINT,
        description: "Host action: checkpoint a revision (default the head) so purge keeps it.",
        input_schema: schema::<CheckpointArgs>,
        read_only: false,
        destructive: false,
        idempotent: false,
    },
];

/// The workspaces the host tools act on, by label, and the actor their commits record.
pub struct HostTools {
    pub workspaces: Vec<(String, Arc<Workspace>)>,
    pub actor: String,
}

fn input<T: serde::de::DeserializeOwned>(name: &str, args: Value) -> Result<T> {
    serde_json::from_value(args)
        .map_err(|e| SupabashError::new(ErrorCode::InvalidArgument, format!("{name} input: {e}")))
}

fn side(s: Option<&str>, default: DiffRef) -> DiffRef {
    match s {
        None => default,
        Some("head") => DiffRef::Head,
        Some("staged") => DiffRef::Staged,
        Some(r) => DiffRef::Revision(r.to_owned()),
    }
}

fn to_json<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).expect("answers serialise")
}

impl HostTools {
    fn pick(&self, label: Option<&str>) -> Result<&Workspace> {
        match (label, self.workspaces.as_slice()) {
            (None, [(_, ws)]) => Ok(ws),
            (None, _) => Err(SupabashError::new(
                ErrorCode::InvalidArgument,
                "several workspaces are served: name one with `workspace`",
            )),
            (Some(l), all) => all
                .iter()
                .find(|(label, _)| label == l)
                .map(|(_, ws)| ws.as_ref())
                .ok_or_else(|| {
                    SupabashError::new(
                        ErrorCode::InvalidArgument,
                        format!("no workspace labelled {l:?}"),
                    )
                }),
        }
    }

    /// Runs host tool `name`.
    pub async fn call(&self, name: &str, args: Value) -> Result<Value> {
        match name {
            COMMIT => {
                let a: CommitArgs = input(name, args)?;
                let mut options = CommitOptions::new(self.actor.clone());
                if let Some(m) = a.message {
                    options = options.with_cause(m);
                }
                let done = self.pick(a.workspace.as_deref())?.commit(options).await?;
                Ok(json!({ "receipt": to_json(&done.receipt), "replayed": done.replayed }))
            }
            HISTORY => {
                let a: HistoryArgs = input(name, args)?;
                let ws = self.pick(a.workspace.as_deref())?;
                Ok(to_json(&ws.history(a.cursor.as_deref(), None).await?))
            }
            DIFF => {
                let a: DiffArgs = input(name, args)?;
                let ws = self.pick(a.workspace.as_deref())?;
                let from = side(a.from.as_deref(), DiffRef::Head);
                let to = side(a.to.as_deref(), DiffRef::Staged);
                Ok(to_json(&ws.diff(from, to, None, None).await?))
            }
            RESTORE => {
                let a: RestoreArgs = input(name, args)?;
                let ws = self.pick(a.workspace.as_deref())?;
                let restored = ws.restore(&a.revision).await?;
                Ok(json!({
                    "sourceRevision": restored.source_revision,
                    "changes": to_json(&restored.changes),
                }))
            }
            CHECKPOINT => {
                let a: CheckpointArgs = input(name, args)?;
                let ws = self.pick(a.workspace.as_deref())?;
                let mut options = CheckpointOptions::default();
                if let Some(l) = a.label {
                    options = options.with_label(l);
                }
                if let Some(r) = a.revision {
                    options = options.with_revision(r);
                }
                Ok(to_json(&ws.checkpoint(options).await?))
            }
            other => Err(SupabashError::new(
                ErrorCode::InvalidArgument,
                format!("no host tool named {other:?}"),
            )),
        }
    }
}

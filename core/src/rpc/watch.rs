//! Change announcements: what the database says after a commit, restore, purge or redaction
//! commits (workspace id, kind, position, revision; never paths or content), the channel it
//! says it on, and `supabash_may_watch`, the authorization a Supabase Realtime private channel
//! asks of its subscribers.

use super::declare::{request, rpc, WorkspaceRequest};
use super::Rpc;
use crate::capability::Operation;
use serde::{Deserialize, Serialize};
use serde_with::skip_serializing_none;

/// What every workspace channel's name starts with.
pub const CHANNEL_PREFIX: &str = "supabash:";

/// The channel of workspace `workspace_id`: the `LISTEN` channel on a direct connection and
/// the private Realtime topic.
pub fn channel(workspace_id: &str) -> String {
    format!("{CHANNEL_PREFIX}{workspace_id}")
}

/// What changed a workspace. It is also the Realtime broadcast's event name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangeKind {
    /// A commit (a restore and a fork's first revision included).
    Commit,
    Purge,
    Redact,
}

impl ChangeKind {
    /// The wire name, e.g. `commit`.
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeKind::Commit => "commit",
            ChangeKind::Purge => "purge",
            ChangeKind::Redact => "redact",
        }
    }
}

/// One announcement: the workspace's head after the change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Announcement {
    pub workspace_id: String,
    pub kind: ChangeKind,
    /// The head's position and revision (null for a workspace with no revision).
    pub position: Option<i64>,
    pub revision: Option<String>,
}

request! {
    "supabash_may_watch", mutates = false, bool;
    /// `supabash_may_watch`: whether the caller may receive the workspace's announcements:
    /// its owner, or `service_role` presenting a delegated grant holding `history` in the
    /// `x-supabash-grant` request header (the only way Realtime passes one: it has no
    /// argument for it); false for anyone else, never an error for a refusal. The Realtime
    /// policy on `realtime.messages` asks it.
    pub struct MayWatch {
        pub workspace_id: String,
    }
}

impl WorkspaceRequest for MayWatch {
    const NEEDS: &'static [Operation] = &[Operation::History];
    fn workspace_id(&self) -> &str {
        &self.workspace_id
    }
    /// Only the header carries a grant here.
    fn delegated_grant(&self) -> Option<&str> {
        None
    }
}

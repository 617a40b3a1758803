//! Change announcements: after a write commits, listeners learn that a workspace changed and
//! where its head is (workspace id, kind, position, revision; never paths or content). One
//! channel per workspace, `supabash:<workspace id>`, through `pg_notify`, which PostgreSQL
//! delivers only when the writing transaction commits (and drops on rollback).

use crate::pg::db;
use crate::pg::fail::Outcome;
use serde_json::json;

/// What changed a workspace.
#[derive(Clone, Copy)]
pub enum Kind {
    /// A commit (a restore and a fork's first revision included).
    Commit,
    Purge,
    Redact,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Commit => "commit",
            Kind::Purge => "purge",
            Kind::Redact => "redact",
        }
    }
}

/// The channel of workspace `ws`.
pub fn channel(ws: &str) -> String {
    format!("supabash:{ws}")
}

/// Announces, at commit, that `ws` changed and that its head is `revision` at `position`.
pub fn announce(
    ws: &str,
    kind: Kind,
    position: Option<i64>,
    revision: Option<&str>,
) -> Outcome<()> {
    let payload = json!({
        "workspaceId": ws,
        "kind": kind.as_str(),
        "position": position,
        "revision": revision,
    });
    // A kept plan: no planning on the commit path.
    db::exec_kept(
        "SELECT pg_notify($1, $2)",
        &[channel(ws).into(), payload.to_string().into()],
    )
}

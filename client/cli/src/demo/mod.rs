//! `supabash demo`: a whole session on a throwaway local PostgreSQL, printed step by step.
//! Part of the binary, not of the library. [`run`] calls the steps in order; each step is a
//! function of its own: the session's basics in [`session`], what a host does beyond them
//! (a delegated job, forks, redaction) in [`host`], and a real program on a FUSE mount in
//! [`mount`].

mod host;
mod mount;
mod session;

use serde_json::json;
use std::sync::Arc;
use supabash::{PostgresTransport, Workspace};
use supabash_cli::output::{moved_from, short};
use supabash_devcluster::Cluster;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Stops the cluster however the demo ends.
struct Running(Cluster);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.stop();
    }
}

/// Runs the whole demo; the cluster is removed at the end, also when a step fails.
pub async fn run() -> Result<(), BoxError> {
    let cluster = start_cluster()?;
    let user = uuid::Uuid::new_v4().to_string();
    let (transport, ws) = open_workspace(&cluster.0, &user).await?;
    let first = session::first_edits(&ws).await?;
    let second = session::bash_edits(&ws).await?;
    session::history(&ws).await?;
    session::diff(&transport, &ws, &first, &second).await?;
    session::restore_forward(&ws, &first).await?;
    session::committed_tree(&ws).await?;
    host::delegated_job(&cluster.0, ws.id()).await?;
    // The job committed through its own handle: the host opens the head again.
    let reopen = || Workspace::builder(transport.clone()).open(ws.id());
    host::fork_and_merge(&reopen().await?).await?;
    host::redaction(&reopen().await?).await?;
    mount::git_on_a_mount(&cluster.0, &reopen().await?, &user).await?;
    println!("\nDone; removing the throwaway cluster.");
    Ok(())
}

/// Step 1: starts the throwaway cluster with the extension installed.
fn start_cluster() -> Result<Running, BoxError> {
    println!("1. Starting a throwaway PostgreSQL (initdb, bootstrap roles, CREATE EXTENSION supabash)...");
    let cluster = Running(Cluster::try_start()?);
    println!(
        "   listening on 127.0.0.1:{} (data in {})",
        cluster.0.port,
        cluster.0.dir.display()
    );
    Ok(cluster)
}

/// Step 2: a signed-in user connects as PostgREST would and creates a workspace.
async fn open_workspace(
    cluster: &Cluster,
    user: &str,
) -> Result<(Arc<PostgresTransport>, Workspace), BoxError> {
    println!("\n2. A signed-in user {} opens a new workspace (direct Postgres transport, claims as PostgREST sets them)", short(user));
    let claims = json!({ "role": "authenticated", "sub": user, "aud": "authenticated" });
    let transport =
        Arc::new(PostgresTransport::connect(&cluster.dsn("authenticator"), claims).await?);
    let ws = Workspace::builder(transport.clone()).create().await?;
    println!("   workspace {}", ws.id());
    Ok((transport, ws))
}

/// `text` indented by four spaces, line by line.
fn indent(text: &str) -> String {
    text.lines().map(|l| format!("    {l}\n")).collect()
}

/// Prints the staged changes, one per line.
fn show_changes(ws: &Workspace) -> supabash::Result<()> {
    for c in ws.changes()? {
        let from = moved_from(c.from.as_deref());
        println!("    {:?} {}{from}", c.kind, c.path);
    }
    Ok(())
}

//! A host written once over `HostWorkspace` (docs/host-api.md), run on a user's workspace
//! through PostgREST, on a delegated job's workspace when a capability is given, and (built
//! with `--features storage`) on a Storage workspace.
//!
//! ```text
//! SUPABASE_URL=https://<project>.supabase.co SUPABASE_ANON_KEY=... USER_JWT=... \
//!   [SERVICE_ROLE_KEY=... CAPABILITY=...] cargo run --example generic_host
//! ```

use std::sync::Arc;
use supabash::workspace::CommitOptions;
use supabash::{DelegatedWorkspace, HostWorkspace, Limits, PostgrestTransport, Workspace};
use supabash_core::capability::{Operation, OperationSet};

/// A staged-tree error or a workspace one.
type Error = Box<dyn std::error::Error + Send + Sync>;

/// Lets the "agent" write its report, shows what it changed, and commits it: the same code
/// for every backend. Answers the new revision (`None`: nothing to commit).
async fn run_job<W: HostWorkspace>(ws: &W, actor: &str) -> Result<Option<String>, Error> {
    ws.fs().write("/report.md", "all green\n").await?;
    let changes = ws.changes()?;
    if changes.is_empty() {
        return Ok(None);
    }
    println!("committing {} change(s): {changes:?}", changes.len());
    let committed = ws.commit(CommitOptions::new(actor)).await?;
    Ok(Some(committed.receipt.revision))
}

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("set {name}"))
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let rest = format!("{}/rest/v1", env("SUPABASE_URL"));
    let anon = env("SUPABASE_ANON_KEY");

    // A user's own workspace.
    let user = Arc::new(PostgrestTransport::new(&rest, &anon, &env("USER_JWT")));
    let ws = Workspace::builder(user).create().await?;
    println!(
        "user workspace {}: {:?}",
        ws.id(),
        run_job(&ws, "host").await?
    );

    // A delegated job's workspace: the same host function.
    if let Ok(capability) = std::env::var("CAPABILITY") {
        let service = Arc::new(PostgrestTransport::new(
            &rest,
            &anon,
            &env("SERVICE_ROLE_KEY"),
        ));
        let operations = OperationSet::new([Operation::Read, Operation::Write, Operation::Commit])
            .expect("a valid operation set");
        let job =
            DelegatedWorkspace::open(service, &capability, &operations, Limits::default()).await?;
        println!("delegated: {:?}", run_job(&job, "ignored").await?);
    }

    // A Storage workspace in the user's folder: the same host function again.
    #[cfg(feature = "storage")]
    {
        use supabash::storage::{StorageConfig, StorageWorkspace};
        let config =
            StorageConfig::new(format!("{}/storage/v1", env("SUPABASE_URL")), "workspaces");
        let session = supabash::auth::Session {
            access_token: env("USER_JWT"),
            user_id: env("USER_ID"),
        };
        let storage =
            StorageWorkspace::open_for_session(&config, &session, Limits::default()).await?;
        println!(
            "storage {}: {:?}",
            storage.scope(),
            run_job(&storage, "host").await?
        );
    }
    Ok(())
}

//! Steps 9 to 11 of the demo, what a host does beyond edits and commits: a delegated job
//! with a capability, two forks of which one merges back, and a redaction.

use super::{BoxError, Cluster};
use serde_json::json;
use std::sync::Arc;
use supabash::capability::postgres::PostgresSigner;
use supabash::delegated::DelegatedWorkspace;
use supabash::workspace::{CommitOptions, ForkOptions, PurgeOptions, RedactOptions};
use supabash::{Limits, PostgresTransport, Workspace};
use supabash_cli::output::short;
use supabash_core::capability::{Operation, OperationSet};

/// Step 9: a background job with no user session: the database owner registers a verifier, the
/// trusted issuer mints a capability, service_role exchanges it for a grant that opens one
/// workspace for exactly read + write + commit.
pub async fn delegated_job(cluster: &Cluster, workspace: &str) -> Result<(), BoxError> {
    println!("\n9. A nightly job gets a delegated capability (no user session)");
    let secret = cluster.psql(
        "app",
        "SELECT supabash_register_capability_verifier('jobs-1', 'https://jobs.example', \
         'supabash', 'https://project.example')",
    );
    println!(
        "   the database owner registered verifier jobs-1 (Ed25519: the private key is returned once, the database keeps the public key)"
    );
    let signer = PostgresSigner::new(
        "jobs-1",
        secret.trim(),
        "https://jobs.example",
        "supabash",
        "https://project.example",
    )?;
    let ops = OperationSet::new([Operation::Read, Operation::Write, Operation::Commit])?;
    let token = signer.mint("nightly-report", workspace, &ops, 300, Some("run-1"))?;
    println!("   the job's issuer minted a 300 s capability: read, write, commit");
    let service = Arc::new(
        PostgresTransport::connect(
            &cluster.dsn("authenticator"),
            json!({ "role": "service_role" }),
        )
        .await?,
    );
    let job = DelegatedWorkspace::open(service, &token, &ops, Limits::default()).await?;
    println!(
        "   service_role exchanged it for a grant (expires {})",
        job.delegation().expires_at()
    );
    job.fs()
        .append("/notes/todo.md", "- nightly report\n")
        .await?;
    let receipt = job.commit(CommitOptions::new("ignored")).await?.receipt;
    println!(
        "   committed revision {} as actor {:?}, correlation id {:?}",
        short(&receipt.revision),
        receipt.actor,
        receipt.correlation_id.as_deref().unwrap_or("-")
    );
    match job.purge(PurgeOptions::default()).await {
        Err(e) => println!("   purge is not among its operations: {}", e.code()),
        Ok(_) => return Err("a grant without purge purged".into()),
    }
    Ok(())
}

/// Step 10: two attempts at one task, each in a fork (no bytes copied); the better one merges back.
pub async fn fork_and_merge(ws: &Workspace) -> Result<(), BoxError> {
    println!("\n10. Two attempts at one task, each in its own fork; the better one merges back");
    let a = ws
        .fork(ForkOptions::new("demo-host").with_label("attempt A"))
        .await?
        .workspace;
    let b = ws
        .fork(ForkOptions::new("demo-host").with_label("attempt B"))
        .await?
        .workspace;
    println!(
        "   forks {} and {} of {}",
        short(a.id()),
        short(b.id()),
        short(ws.id())
    );
    a.fs()
        .write("/notes/plan.md", "# Plan\n\nAttempt A: ship it.\n")
        .await?;
    a.commit(CommitOptions::new("agent-a")).await?;
    b.fs()
        .write("/notes/plan.md", "# Plan\n\nAttempt B: rewrite it.\n")
        .await?;
    b.commit(CommitOptions::new("agent-b")).await?;
    ws.fs()
        .write(
            "/notes/todo.md",
            "# Todo\n- write the demo\n- pick an attempt\n",
        )
        .await?;
    ws.commit(CommitOptions::new("demo-host")).await?;
    println!("   meanwhile the host commits /notes/todo.md to the source");
    let merged = a
        .merge_into_source(CommitOptions::new("demo-host").with_cause("attempt A won"))
        .await?;
    println!(
        "   attempt A merged: revision {} (rebased from {})",
        short(&merged.receipt.revision),
        short(merged.receipt.rebased_from.as_deref().unwrap_or("-"))
    );
    match b.merge_into_source(CommitOptions::new("demo-host")).await {
        Err(e) => println!(
            "   attempt B touched the same file: {} (nothing written)",
            e.code()
        ),
        Ok(_) => return Err("an overlapping merge went through".into()),
    }
    b.delete().await?;
    println!("   attempt B deleted");
    Ok(())
}

/// Step 11: a secret committed by mistake leaves history for good.
pub async fn redaction(ws: &Workspace) -> Result<(), BoxError> {
    println!("\n11. A secret lands in a file, then leaves history for good (redaction)");
    ws.fs()
        .write("/.env", "API_KEY=sk-demo-0123456789\n")
        .await?;
    let leaked = ws.commit(CommitOptions::new("demo-host")).await?;
    ws.fs().rm("/.env", false, false).await?;
    ws.commit(CommitOptions::new("demo-host")).await?;
    let dry = ws.redact(RedactOptions::new().path("/.env")).await?;
    println!(
        "   dry run: {} version(s), {} body(ies) would go",
        dry.versions,
        dry.bodies.len()
    );
    let report = ws
        .redact(
            RedactOptions::new()
                .path("/.env")
                .reason("leaked key")
                .apply(),
        )
        .await?;
    println!(
        "   applied: {} bytes removed from the database, redaction epoch now {}",
        report.bytes, report.epoch
    );
    let old = ws.read_revision(&leaked.receipt.revision).await?;
    println!(
        "   revision {} now shows {:?} as redacted",
        short(&leaked.receipt.revision),
        old.redacted
    );
    Ok(())
}

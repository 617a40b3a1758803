//! Steps 3 to 8 of the demo: edits through file calls and bash, commits, history, a diff, a
//! forward restore with a checkpoint, and the committed tree.

use super::{indent, show_changes, BoxError};
use std::sync::Arc;
use supabash::workspace::{CheckpointOptions, CommitOptions, DiffRef};
use supabash::{PostgresTransport, Workspace};
use supabash_agent::shell::Shell;
use supabash_agent::AgentFs;
use supabash_cli::output::{moved_from, short};
use supabash_core::rpc::CommitResult;

/// Step 3: the agent writes notes (and shell scratch that never commits); the host commits.
pub async fn first_edits(ws: &Workspace) -> Result<CommitResult, BoxError> {
    println!("\n3. The agent edits its staged tree (nothing is durable yet)");
    let fs = ws.fs();
    fs.mkdir("/notes", true).await?;
    fs.write("/notes/todo.md", "# Todo\n- write the demo\n")
        .await?;
    fs.write("/notes/ideas.md", "Ideas: 日本語, émoji 🚀\n")
        .await?;
    fs.mkdir("/tmp", true).await?;
    fs.write("/tmp/scratch.txt", "shell scratch space, never committed\n")
        .await?;
    show_changes(ws)?;
    let first = ws
        .commit(
            CommitOptions::new("demo-agent")
                .with_correlation_id("demo-1")
                .with_cause("first notes"),
        )
        .await?;
    println!(
        "   committed revision {} ({} changes, position {})",
        short(&first.receipt.revision),
        first.receipt.changes.len(),
        first.receipt.position
    );
    Ok(first)
}

/// Step 4: more edits through bash on the same staged tree; the host commits them.
pub async fn bash_edits(ws: &Workspace) -> Result<CommitResult, BoxError> {
    println!("\n4. More edits, through bash on the same staged tree (sed -i, mv, a heredoc)");
    let shell = Shell::new(ws.fs().clone() as Arc<dyn AgentFs>);
    let script = concat!(
        "sed -i 's/write the demo/write the demo (done)/' /notes/todo.md\n",
        "echo '- show history' >> /notes/todo.md\n",
        "mkdir -p /archive && mv /notes/ideas.md /archive/ideas.md\n",
        "cat > /notes/done.md <<'END'\nnothing yet\nEND\n",
        "grep -rn demo /notes",
    );
    print!("{}", indent(script));
    println!("   output:");
    let out = shell.run(script).await?;
    print!("{}", indent(&out.stdout));
    show_changes(ws)?;
    let second = ws
        .commit(CommitOptions::new("demo-agent").with_cause("reorganise"))
        .await?;
    println!("   committed revision {}", short(&second.receipt.revision));
    Ok(second)
}

/// Step 5: the history, oldest first, with each revision's changes.
pub async fn history(ws: &Workspace) -> Result<(), BoxError> {
    println!("\n5. History (oldest first)");
    for r in ws.history(None, None).await?.records {
        println!(
            "    {} by {} at {}: {}",
            short(&r.revision),
            r.actor,
            r.committed_at,
            r.cause.unwrap_or_default()
        );
        for line in r.changes {
            let from = line.from.map(|f| format!(" from {f}")).unwrap_or_default();
            println!("        {} {}{from}", line.op, line.path);
        }
    }
    Ok(())
}

/// Step 6: the unified diff between the two revisions, as `supabash diff` prints it.
pub async fn diff(
    transport: &PostgresTransport,
    ws: &Workspace,
    first: &CommitResult,
    second: &CommitResult,
) -> Result<(), BoxError> {
    println!("\n6. Diff between the two revisions (unified; `supabash diff` prints the same)");
    let diff = supabash_cli::history::diff::unified_between(
        transport,
        ws.id(),
        DiffRef::Revision(first.receipt.revision.clone()),
        DiffRef::Revision(second.receipt.revision.clone()),
        supabash_cli::history::diff::ColorChoice::Auto.enabled(),
    )
    .await?;
    print!("{}", indent(&diff));
    Ok(())
}

/// Step 7: a forward restore to the first revision, committed, then pinned by a checkpoint.
pub async fn restore_forward(ws: &Workspace, first: &CommitResult) -> Result<(), BoxError> {
    println!("\n7. Restore forward to the first revision (history is never rewound)");
    let restored = ws.restore(&first.receipt.revision).await?;
    for c in &restored.changes {
        let from = moved_from(c.from.as_deref());
        println!("    staged {:?} {}{from}", c.kind, c.path);
    }
    let third = ws.commit(CommitOptions::new("demo-host")).await?;
    println!(
        "   committed revision {} with parent {} and source revision {}",
        short(&third.receipt.revision),
        short(third.receipt.parent_revision.as_deref().unwrap_or("-")),
        short(third.receipt.source_revision.as_deref().unwrap_or("-")),
    );
    let cp = ws
        .checkpoint(CheckpointOptions::default().with_label("after restore"))
        .await?;
    println!("   checkpoint {} pins it", short(&cp.checkpoint_id));
    Ok(())
}

/// Step 8: the committed tree, file by file.
pub async fn committed_tree(ws: &Workspace) -> Result<(), BoxError> {
    println!("\n8. The committed tree now");
    for (path, bytes) in ws.committed_snapshot().await?.files {
        println!("    {path}: {:?}", String::from_utf8_lossy(&bytes));
    }
    Ok(())
}

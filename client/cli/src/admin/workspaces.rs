//! `supabash workspaces`, `supabash fork` and `supabash delete-workspace`: the caller's
//! workspaces as a whole. Human-readable lines by default, one JSON document with `--json`
//! (the contract's answer types).

use crate::connect::{ConnectArgs, Target};
use crate::exit::usage;
use crate::flags::Recorded;
use crate::history::revision::resolve_given;
use crate::output;
use supabash::transport::call;
use supabash::Workspace;
use supabash_core::rpc::requests as rq;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Arguments of `supabash workspaces`: lists, or `create`s.
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct ListArgs {
    #[command(subcommand)]
    pub action: Option<WorkspacesAction>,
    #[command(flatten)]
    pub connect: ConnectArgs,
    /// Print one JSON array of every workspace.
    #[arg(long)]
    pub json: bool,
}

/// What `supabash workspaces` does besides listing.
#[derive(Debug, clap::Subcommand)]
pub enum WorkspacesAction {
    /// Create a new, empty workspace owned by the caller and print its id.
    Create(CreateArgs),
}

/// Arguments of `supabash workspaces create`.
#[derive(Debug, clap::Args)]
pub struct CreateArgs {
    #[command(flatten)]
    pub connect: ConnectArgs,
    /// A name for people (1 to 256 bytes), shown by `supabash workspaces`.
    #[arg(long)]
    pub label: Option<String>,
    /// Store plain files only (the text-only behaviour): a commit holding a symbolic link, a
    /// directory entry or a mode other than 0644 is refused with UNSUPPORTED_CONTENT. Fixed at
    /// creation; forks inherit it.
    #[arg(long)]
    pub files_only: bool,
    /// Print the answer as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `supabash workspaces create`: creates and prints the new workspace's id (`--json`: the
/// answer).
pub async fn create(args: CreateArgs) -> Result<(), BoxError> {
    let transport = args.connect.connect().await?;
    let created = call(
        transport.as_ref(),
        &rq::CreateWorkspace {
            label: args.label,
            files_only: args.files_only.then_some(true),
        },
    )
    .await?;
    if args.json {
        output::json(&created)?;
    } else {
        println!("{}", created.workspace_id);
    }
    Ok(())
}

/// Arguments of `supabash fork`.
#[derive(Debug, clap::Args)]
pub struct ForkArgs {
    #[command(flatten)]
    pub target: Target,
    /// The revision to fork (head, an id, a position or an id prefix; default: the head).
    #[arg(long)]
    pub revision: Option<String>,
    /// A name for the fork.
    #[arg(long)]
    pub label: Option<String>,
    #[command(flatten)]
    pub recorded: Recorded,
    /// Print the answer as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `supabash delete-workspace`.
#[derive(Debug, clap::Args)]
pub struct DeleteArgs {
    #[command(flatten)]
    pub connect: ConnectArgs,
    /// The workspace to delete, with its history.
    #[arg(long)]
    pub workspace: String,
    /// Confirms the deletion (nothing happens without it).
    #[arg(long)]
    pub yes: bool,
    /// Print the answer as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `supabash workspaces`: every page of the caller's workspaces (or its `create`).
pub async fn list(args: ListArgs) -> Result<(), BoxError> {
    if let Some(WorkspacesAction::Create(create_args)) = args.action {
        return create(create_args).await;
    }
    let transport = args.connect.connect().await?;
    let mut all = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let page = Workspace::list(transport.as_ref(), cursor.as_deref(), None).await?;
        all.extend(page.workspaces);
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    if args.json {
        return output::json(&all);
    }
    for w in all {
        let forked = w
            .forked_from
            .map(|f| format!(" forked from {}@{}", f.workspace_id, f.revision))
            .unwrap_or_default();
        let files_only = if w.files_only { "  files only" } else { "" };
        println!(
            "{}  {}  head {}  {} bytes stored{}{}",
            w.workspace_id,
            w.label.as_deref().unwrap_or("-"),
            w.head_position.map_or("-".to_owned(), |p| p.to_string()),
            w.store_bytes,
            forked,
            files_only
        );
    }
    Ok(())
}

/// `supabash fork`: forks and prints the new workspace's id.
pub async fn fork(args: ForkArgs) -> Result<(), BoxError> {
    let (transport, ws) = args.target.open().await?;
    let revision = resolve_given(transport.as_ref(), &ws, args.revision.as_deref()).await?;
    let request = rq::Fork {
        workspace_id: ws,
        revision,
        label: args.label,
        actor: Some(args.recorded.actor),
        cause: args.recorded.cause,
        delegated_grant: None,
    };
    let forked = call(transport.as_ref(), &request).await?;
    if args.json {
        output::json(&forked)?;
    } else {
        println!("{}", forked.workspace_id);
    }
    Ok(())
}

/// `supabash delete-workspace`: deletes after `--yes`.
pub async fn delete(args: DeleteArgs) -> Result<(), BoxError> {
    if !args.yes {
        return Err(usage(
            "delete-workspace removes the workspace and its history: add --yes",
        ));
    }
    let transport = args.connect.connect().await?;
    let request = rq::DeleteWorkspace {
        workspace_id: args.workspace.clone(),
    };
    let deleted = call(transport.as_ref(), &request).await?;
    if args.json {
        output::json(&deleted)?;
    } else {
        let kept = if deleted.kept_for_forks {
            " (kept, hidden, for its forks)"
        } else {
            ""
        };
        println!(
            "deleted {}{kept}: {} bodies, {} bytes reclaimed",
            deleted.workspace_id, deleted.bodies, deleted.bytes
        );
    }
    Ok(())
}

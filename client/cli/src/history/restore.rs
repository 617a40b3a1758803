//! `supabash restore REV`: a forward restore, one new revision whose tree is an older
//! revision's (history is never rewound).

use crate::connect::Target;
use crate::flags::Recorded;
use crate::history::revision::resolve;
use crate::history::show::change_line;
use crate::output::{self, short};
use supabash::workspace::CommitOptions;
use supabash::Workspace;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Arguments of `supabash restore`.
#[derive(Debug, clap::Args)]
pub struct RestoreArgs {
    #[command(flatten)]
    pub target: Target,
    /// The revision whose tree becomes the new head (head, an id, a position or a prefix).
    pub rev: String,
    #[command(flatten)]
    pub recorded: Recorded,
    /// Print the commit's answer as JSON ({"receipt": ..., "replayed": bool}).
    #[arg(long)]
    pub json: bool,
}

/// `supabash restore REV`: commits a new revision whose tree is REV's (history is never
/// rewound; the receipt records REV as its source revision).
pub async fn restore(args: RestoreArgs) -> Result<(), BoxError> {
    let (transport, ws) = args.target.open().await?;
    let source = resolve(transport.as_ref(), &ws, &args.rev).await?.id;
    let workspace = Workspace::builder(transport).open(&ws).await?;
    workspace.restore(&source).await?;
    let mut options = CommitOptions::new(args.recorded.actor);
    options.cause = args.recorded.cause;
    let committed = workspace.commit(options).await?;
    if args.json {
        return output::json(&committed);
    }
    let r = &committed.receipt;
    println!(
        "restored {} as revision {} (position {}, {} change(s))",
        short(&source),
        r.revision,
        r.position,
        r.changes.len()
    );
    for line in &r.changes {
        println!("    {}", change_line(line));
    }
    Ok(())
}

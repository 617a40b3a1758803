//! `supabash show REV`: one revision's receipt and its notes, and how receipts read for people
//! ([`render_receipt`], [`change_line`]).

use crate::connect::Target;
use crate::history::revision::resolve;
use crate::output;
use supabash::transport::call;
use supabash_core::rpc::requests as rq;
use supabash_core::rpc::{Receipt, ReceiptLine};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Arguments of `supabash show`.
#[derive(Debug, clap::Args)]
pub struct ShowArgs {
    #[command(flatten)]
    pub target: Target,
    /// The revision (head, an id, a position or an id prefix).
    #[arg(default_value = "head")]
    pub rev: String,
    /// Print the receipt as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `supabash show REV`: one revision's receipt and its notes (with `--json`, the receipt
/// with a `notes` array when it has any).
pub async fn show(args: ShowArgs) -> Result<(), BoxError> {
    let (transport, ws) = args.target.open().await?;
    let found = resolve(transport.as_ref(), &ws, &args.rev).await?;
    let receipt = match found.receipt {
        Some(r) => r,
        None => {
            let request = rq::LoadRevision {
                workspace_id: ws.clone(),
                revision: found.id,
                delegated_grant: None,
            };
            call(transport.as_ref(), &request).await?.receipt
        }
    };
    let notes = crate::history::notes::fetch(transport.as_ref(), &ws, &receipt.revision).await?;
    if args.json {
        let mut shown = serde_json::to_value(&receipt)?;
        if !notes.is_empty() {
            shown["notes"] = serde_json::to_value(&notes)?;
        }
        return output::json(&shown);
    }
    print!("{}", render_receipt(&receipt));
    print!("{}", crate::history::notes::render(&notes));
    Ok(())
}

/// A receipt as people read it.
pub fn render_receipt(r: &Receipt) -> String {
    let mut out = String::new();
    let mut field = |name: &str, value: Option<&str>| {
        if let Some(v) = value {
            out.push_str(&format!("{name:<15} {v}\n"));
        }
    };
    field("revision", Some(&r.revision));
    field("position", Some(&r.position.to_string()));
    field("parent", r.parent_revision.as_deref());
    field("committed at", Some(&r.committed_at));
    field("actor", Some(&r.actor));
    field("cause", r.cause.as_deref());
    field("correlation id", r.correlation_id.as_deref());
    field("transaction id", Some(&r.transaction_id));
    field("source revision", r.source_revision.as_deref());
    field("rebased from", r.rebased_from.as_deref());
    let forked = r
        .forked_from
        .as_ref()
        .map(|f| format!("{}@{}", f.workspace_id, f.revision));
    field("forked from", forked.as_deref());
    field("delegation key", r.delegation_key_id.as_deref());
    let metadata = (!r.metadata.is_null() && r.metadata != serde_json::json!({}))
        .then(|| r.metadata.to_string());
    field("metadata", metadata.as_deref());
    out.push_str(&format!("changes         {}\n", r.changes.len()));
    for line in &r.changes {
        out.push_str(&format!("    {}\n", change_line(line)));
    }
    out
}

/// One line of a receipt's change list as people read it: `OP PATH (from OLD) [redacted]`.
pub fn change_line(line: &ReceiptLine) -> String {
    let from = output::moved_from(line.from.as_deref());
    let redacted = if line.redacted { " [redacted]" } else { "" };
    format!("{:<6} {}{from}{redacted}", line.op, line.path)
}

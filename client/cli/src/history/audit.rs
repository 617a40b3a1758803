//! `supabash audit [REV]`: the audit trail of a workspace (every page, oldest first), or only
//! the records of one revision: which agent actions produced it (docs/audit.md).

use crate::connect::Target;
use crate::history::revision::resolve_given;
use crate::output;
use supabash::transport::call;
use supabash_core::rpc::audit::{ActionOutcome, Audit, AuditRecord};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Arguments of `supabash audit`.
#[derive(Debug, clap::Args)]
pub struct AuditArgs {
    #[command(flatten)]
    pub target: Target,
    /// Only the records of this revision (head, an id, a position or an id prefix); default:
    /// every record, discarded sessions' too.
    pub rev: Option<String>,
    /// Print the records as one JSON array.
    #[arg(long)]
    pub json: bool,
}

/// `supabash audit`.
pub async fn run(args: AuditArgs) -> Result<(), BoxError> {
    let (transport, ws) = args.target.open().await?;
    let revision = resolve_given(transport.as_ref(), &ws, args.rev.as_deref()).await?;
    let mut records: Vec<AuditRecord> = Vec::new();
    let mut cursor = None;
    loop {
        let request = Audit {
            workspace_id: ws.clone(),
            revision: revision.clone(),
            cursor,
            page_size: None,
            delegated_grant: None,
        };
        let page = call(transport.as_ref(), &request).await?;
        records.extend(page.records);
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    if args.json {
        return output::json(&records);
    }
    for r in &records {
        println!("{}", line(r));
    }
    Ok(())
}

/// One record as people read it.
fn line(r: &AuditRecord) -> String {
    let outcome = match &r.outcome {
        ActionOutcome::Ok => "ok".to_owned(),
        ActionOutcome::Error { code } => format!("error {code}"),
        ActionOutcome::Denied { reason } => format!("denied ({reason})"),
    };
    let revision = match (&r.revision, r.discarded) {
        (_, true) => "discarded".to_owned(),
        (Some(rev), false) => format!("revision {}", output::short(rev)),
        (None, false) => "staged".to_owned(),
    };
    format!(
        "{} {} {} by {}: {outcome}, {} ms, {} path(s), {} bytes, {revision}",
        r.at,
        r.kind.as_str(),
        r.tool,
        r.actor,
        r.duration_ms,
        r.paths.len(),
        r.bytes_changed
    )
}

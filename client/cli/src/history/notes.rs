//! `supabash note REV KEY JSON`: appends a note to an existing revision without a new one
//! (`supabash_add_note`); [`fetch`] and [`render`] are how `show` and `log` print a
//! revision's notes.

use crate::connect::Target;
use crate::exit::usage;
use crate::history::revision::resolve;
use crate::output;
use supabash::transport::call;
use supabash::Transport;
use supabash_core::rpc::notes::{AddNote, Notes, RevisionNote};
use supabash_core::Marker;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Arguments of `supabash note`.
#[derive(Debug, clap::Args)]
pub struct NoteArgs {
    #[command(flatten)]
    pub target: Target,
    /// The revision (head, an id, a position or an id prefix).
    pub rev: String,
    /// The note's key; a second note under it becomes its next version.
    pub key: String,
    /// The note: any JSON value but null (a bare word that is not JSON is taken as a string).
    pub value: String,
    /// Recorded with the note.
    #[arg(long, default_value = "supabash-cli")]
    pub actor: String,
    /// Print the stored note as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `supabash note`: appends the note and prints it.
pub async fn note(args: NoteArgs) -> Result<(), BoxError> {
    let (transport, ws) = args.target.open().await?;
    let value = serde_json::from_str(&args.value)
        .unwrap_or_else(|_| serde_json::Value::String(args.value.clone()));
    let revision = resolve(transport.as_ref(), &ws, &args.rev).await?.id;
    let request = AddNote {
        workspace_id: ws,
        revision,
        key: args.key,
        value,
        actor: Some(args.actor),
        delegated_grant: None,
    };
    request.check_fields().map_err(|e| usage(e.to_string()))?;
    let stored = call(transport.as_ref(), &request).await?;
    if args.json {
        return output::json(&stored);
    }
    print!("{}", render(std::slice::from_ref(&stored)));
    Ok(())
}

/// The notes of `revision` of `workspace`, every version by key; none on a database whose
/// schema predates notes (0.5.0), so `show` keeps working there.
pub async fn fetch(
    transport: &dyn Transport,
    workspace: &str,
    revision: &str,
) -> Result<Vec<RevisionNote>, BoxError> {
    let request = Notes {
        workspace_id: workspace.to_owned(),
        revision: revision.to_owned(),
        key: None,
        delegated_grant: None,
    };
    match call(transport, &request).await {
        Err(e) if predates_notes(&e) => Ok(Vec::new()),
        answer => Ok(answer?),
    }
}

/// Whether `e` says the database has no notes: a 0.5.0 schema, where `supabash_notes` does
/// not exist (42883 directly, PGRST202 through PostgREST) or is refused as outdated.
fn predates_notes(e: &supabash::SupabashError) -> bool {
    let code = std::error::Error::source(e)
        .and_then(|s| s.downcast_ref::<supabash::transport::RpcError>())
        .and_then(|r| r.code.as_deref());
    matches!(code, Some("42883" | "PGRST202"))
        || e.message().starts_with(Marker::SchemaOutdated.as_str())
}

/// Notes as people read them: `note KEY#VERSION  TIME  ACTOR  VALUE`, one a line.
pub fn render(notes: &[RevisionNote]) -> String {
    notes
        .iter()
        .map(|n| {
            format!(
                "note            {}#{}  {}  {}  {}\n",
                n.key, n.version, n.noted_at, n.actor, n.value
            )
        })
        .collect()
}

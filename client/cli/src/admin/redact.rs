//! `supabash redact`: removes content from a workspace's history for good. A dry run (the
//! report of what would go) unless `--apply`.

use crate::connect::Target;
use crate::output;
use supabash::workspace::{RedactOptions, RedactReport};
use supabash::Workspace;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Arguments of `supabash redact`.
#[derive(Debug, clap::Args)]
pub struct RedactArgs {
    #[command(flatten)]
    pub target: Target,
    /// An exact path whose versions before the boundary are redacted (repeatable).
    #[arg(long = "path", value_name = "PATH")]
    pub paths: Vec<String>,
    /// A body hash (hex SHA-256 of the bytes) whose versions are redacted (repeatable).
    #[arg(long = "hash", value_name = "HASH")]
    pub hashes: Vec<String>,
    /// The exclusive boundary revision (default: the head).
    #[arg(long = "before", value_name = "REV")]
    pub before: Option<String>,
    /// Why (recorded with the redaction).
    #[arg(long)]
    pub reason: Option<String>,
    /// A metadata key removed from the selected revisions (repeatable).
    #[arg(long = "strip-metadata", value_name = "KEY")]
    pub strip_metadata: Vec<String>,
    /// Clears the cause of the selected revisions.
    #[arg(long)]
    pub clear_cause: bool,
    /// Apply it (without, nothing changes: a dry run).
    #[arg(long)]
    pub apply: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

impl RedactArgs {
    /// The client's options for these arguments.
    pub fn options(&self) -> RedactOptions {
        let mut o = RedactOptions::new();
        o.paths = self.paths.clone();
        o.body_hashes = self.hashes.clone();
        o.before_revision = self.before.clone();
        o.reason = self.reason.clone();
        o.metadata_keys = self.strip_metadata.clone();
        o.clear_cause = self.clear_cause;
        o.apply = self.apply;
        o
    }
}

/// The report as people read it.
pub fn render(report: &RedactReport) -> String {
    let mut out = format!(
        "{}redaction {}: {} version(s) in {} revision(s), {} bod{} ({} bytes) removed, epoch {}\n",
        if report.dry_run { "dry run of " } else { "" },
        report.redaction_id,
        report.versions,
        report.revisions.len(),
        report.bodies.len(),
        if report.bodies.len() == 1 { "y" } else { "ies" },
        report.bytes,
        report.epoch,
    );
    for r in &report.revisions {
        out.push_str(&format!("  revision {r}\n"));
    }
    for b in &report.bodies {
        out.push_str(&format!("  body {b}\n"));
    }
    if report.dry_run {
        out.push_str("nothing changed: run again with --apply\n");
    }
    out
}

/// Runs `supabash redact`.
pub async fn run(args: RedactArgs) -> Result<(), BoxError> {
    let (transport, id) = args.target.open().await?;
    let ws = Workspace::builder(transport).open(&id).await?;
    // What the redaction removes leaves this host's body cache too.
    crate::connect::body_cache::attach(&ws);
    let report = ws.redact(args.options()).await?;
    if args.json {
        output::json(&report)?;
    } else {
        print!("{}", render(&report));
    }
    Ok(())
}

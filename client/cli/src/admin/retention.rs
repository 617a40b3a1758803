//! `supabash checkpoint`, `checkpoints` and `purge`: pins that keep revisions, and dropping
//! the old revisions nothing pins (a dry run unless `--apply`).

use crate::connect::Target;
use crate::exit::usage;
use crate::history::revision::resolve_given;
use crate::output::{self, short};
use supabash::transport::call;
use supabash::SupabashError;
use supabash_core::rpc::requests as rq;
use supabash_core::rpc::{Checkpoint, PurgeReport};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Arguments of `supabash checkpoint`.
#[derive(Debug, clap::Args)]
pub struct CheckpointArgs {
    #[command(flatten)]
    pub target: Target,
    /// The revision to pin (head, an id, a position or an id prefix; default: the head).
    #[arg(long, short = 'r', value_name = "REV")]
    pub rev: Option<String>,
    /// A name for people.
    #[arg(long)]
    pub label: Option<String>,
    /// A retention class (free text, kept with the checkpoint).
    #[arg(long)]
    pub retention_class: Option<String>,
    /// Makes a retry return the checkpoint the first attempt made.
    #[arg(long)]
    pub idempotency_key: Option<String>,
    /// Print the checkpoint as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `supabash checkpoint`: pins a revision so purge keeps it.
pub async fn checkpoint(args: CheckpointArgs) -> Result<(), BoxError> {
    let (transport, ws) = args.target.open().await?;
    let revision = resolve_given(transport.as_ref(), &ws, args.rev.as_deref()).await?;
    let request = rq::Checkpoint {
        workspace_id: ws,
        label: args.label,
        retention_class: args.retention_class,
        idempotency_key: args.idempotency_key,
        revision,
        delegated_grant: None,
    };
    request.check_fields().map_err(SupabashError::field)?;
    let cp = call(transport.as_ref(), &request).await?;
    if args.json {
        return output::json(&cp);
    }
    println!("{}", checkpoint_line(&cp));
    Ok(())
}

fn checkpoint_line(cp: &Checkpoint) -> String {
    format!(
        "{}  revision {}  {}  {}{}",
        cp.checkpoint_id,
        short(&cp.revision),
        cp.created_at,
        cp.label.as_deref().unwrap_or("-"),
        cp.retention_class
            .as_deref()
            .map(|c| format!(" ({c})"))
            .unwrap_or_default()
    )
}

/// Arguments of `supabash checkpoints`.
#[derive(Debug, clap::Args)]
pub struct CheckpointsArgs {
    #[command(flatten)]
    pub target: Target,
    /// Print a JSON array of checkpoints.
    #[arg(long)]
    pub json: bool,
}

/// `supabash checkpoints`: every checkpoint, oldest first.
pub async fn checkpoints(args: CheckpointsArgs) -> Result<(), BoxError> {
    let (transport, ws) = args.target.open().await?;
    let request = rq::Checkpoints {
        workspace_id: ws,
        delegated_grant: None,
    };
    let all = call(transport.as_ref(), &request).await?;
    if args.json {
        return output::json(&all);
    }
    for cp in &all {
        println!("{}", checkpoint_line(cp));
    }
    Ok(())
}

/// Arguments of `supabash purge`.
#[derive(Debug, clap::Args)]
pub struct PurgeArgs {
    #[command(flatten)]
    pub target: Target,
    /// Keep the newest N revisions (with neither --keep nor --max-age the server keeps 50).
    #[arg(long, value_name = "N")]
    pub keep: Option<i32>,
    /// Keep revisions younger than this: seconds, or a number with s, m, h or d.
    #[arg(long, value_name = "AGE", value_parser = parse_age)]
    pub max_age: Option<i64>,
    /// Keep this revision and every later one.
    #[arg(long, value_name = "REV")]
    pub floor: Option<String>,
    /// Drop them (without, nothing changes: a dry run shows what would go).
    #[arg(long)]
    pub apply: bool,
    /// Also drop the audit records purge keeps by default (denied and discarded actions, and
    /// those of delegated actors) with their revisions.
    #[arg(long)]
    pub purge_audit: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// An age in seconds: `90`, `90s`, `15m`, `12h`, `7d`.
pub fn parse_age(text: &str) -> Result<i64, String> {
    let (digits, unit) = match text.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => text.split_at(i),
        None => (text, "s"),
    };
    let n: i64 = digits
        .parse()
        .map_err(|_| format!("{text:?} is not an age (e.g. 3600, 90m, 7d)"))?;
    let factor = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(format!("{text:?}: the unit is s, m, h or d")),
    };
    n.checked_mul(factor)
        .ok_or_else(|| format!("{text:?} is too long"))
}

/// `supabash purge`: what would go (or, with `--apply`, what went).
pub async fn purge(args: PurgeArgs) -> Result<(), BoxError> {
    if args.keep.is_some_and(|k| k < 1) {
        return Err(usage("--keep is at least 1 (the head always stays)"));
    }
    let (transport, ws) = args.target.open().await?;
    let floor_revision = resolve_given(transport.as_ref(), &ws, args.floor.as_deref()).await?;
    let request = rq::Purge {
        workspace_id: ws,
        keep_revisions: args.keep,
        max_age_seconds: args.max_age,
        floor_revision,
        dry_run: Some(!args.apply),
        delegated_grant: None,
        purge_audit: args.purge_audit.then_some(true),
    };
    let report = call(transport.as_ref(), &request).await?;
    if args.json {
        return output::json(&report);
    }
    print!("{}", render_purge(&report));
    Ok(())
}

/// A purge report as people read it.
pub fn render_purge(r: &PurgeReport) -> String {
    let verb = if r.dry_run { "would drop" } else { "dropped" };
    let mut out = format!(
        "{verb} {} revision(s): {} entries, {} bodies, {} bytes\n",
        r.revisions.len(),
        r.entries,
        r.bodies,
        r.bytes
    );
    for rev in &r.revisions {
        out.push_str(&format!("  revision {rev}\n"));
    }
    if r.dry_run {
        out.push_str("nothing changed: run again with --apply\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_take_units() {
        assert_eq!(parse_age("90"), Ok(90));
        assert_eq!(parse_age("15m"), Ok(900));
        assert_eq!(parse_age("7d"), Ok(604_800));
        assert!(parse_age("7w").is_err() && parse_age("d").is_err() && parse_age("").is_err());
    }
}

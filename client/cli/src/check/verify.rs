//! `supabash verify` (does a workspace's stored history hold together?) and `supabash gc`
//! (orphan bodies and idle workspaces of the caller; deletes orphans only with `--apply`).
//! Both ask the database (`supabash_verify`, `supabash_garbage`); nothing is repaired.

use crate::connect::{ConnectArgs, Target};
use supabash::transport::call;
use supabash_core::rpc::verify::{Garbage, GarbageReport, Verify, VerifyReport, DEFAULT_IDLE_DAYS};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Arguments of `supabash verify`.
#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    #[command(flatten)]
    pub target: Target,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `supabash gc`.
#[derive(Debug, clap::Args)]
pub struct GcArgs {
    #[command(flatten)]
    pub connect: ConnectArgs,
    /// Days without a change after which a workspace is reported idle.
    #[arg(long, default_value_t = DEFAULT_IDLE_DAYS)]
    pub idle_days: i32,
    /// Delete the orphan bodies (without, nothing changes: a dry run). Idle workspaces are
    /// only reported: delete one with `supabash delete-workspace`.
    #[arg(long)]
    pub apply: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Verifies the workspace.
pub async fn verify(args: &VerifyArgs) -> Result<VerifyReport, BoxError> {
    let (transport, workspace_id) = args.target.open().await?;
    let request = Verify {
        workspace_id,
        delegated_grant: None,
    };
    Ok(call(transport.as_ref(), &request).await?)
}

/// The verify report as people read it: a summary line, then one line per problem.
pub fn render_verify(report: &VerifyReport) -> String {
    let c = &report.checked;
    let mut out = format!(
        "workspace {}: {} ({} entries, {} bodies, {} revisions, {} receipts checked)\n",
        report.workspace_id,
        match report.problem_count {
            0 => "ok".to_owned(),
            1 => "1 problem".to_owned(),
            n => format!("{n} problems"),
        },
        c.entries,
        c.bodies,
        c.revisions,
        c.receipts
    );
    for p in &report.problems {
        let mut at = Vec::new();
        if let Some(path) = &p.path {
            at.push(path.clone());
        }
        if let Some(position) = p.position {
            at.push(format!("position {position}"));
        }
        if let Some(revision) = &p.revision {
            at.push(format!("revision {revision}"));
        }
        if let Some(hash) = &p.hash {
            at.push(format!("hash {hash}"));
        }
        out.push_str(&format!("  {} [{}]: {}\n", p.kind, at.join(", "), p.detail));
    }
    if report.truncated {
        out.push_str(&format!(
            "  ... {} more (only the first {} are listed)\n",
            report.problem_count - report.problems.len() as i64,
            report.problems.len()
        ));
    }
    out
}

/// `supabash verify`: prints the report; fails with [`crate::exit::problems`] (status 8) when
/// it found problems.
pub async fn run_verify(args: VerifyArgs) -> Result<(), BoxError> {
    let report = verify(&args).await?;
    if args.json {
        crate::output::json(&report)?;
    } else {
        print!("{}", render_verify(&report));
    }
    if report.ok {
        return Ok(());
    }
    Err(crate::exit::problems(format!(
        "workspace {}: {} problem(s) found",
        report.workspace_id, report.problem_count
    )))
}

/// Looks for garbage (and deletes orphan bodies with `--apply`).
pub async fn gc(args: &GcArgs) -> Result<GarbageReport, BoxError> {
    let transport = args.connect.connect().await?;
    let request = Garbage {
        idle_days: Some(args.idle_days),
        apply: Some(args.apply),
    };
    Ok(call(transport.as_ref(), &request).await?)
}

/// The garbage report as people read it.
pub fn render_gc(report: &GarbageReport) -> String {
    let mut out = format!(
        "{} orphan bod{} ({} bytes) referenced by nothing{}\n",
        report.orphan_bodies,
        if report.orphan_bodies == 1 {
            "y"
        } else {
            "ies"
        },
        report.orphan_bytes,
        if report.dry_run {
            String::new()
        } else {
            format!(
                ": {} deleted ({} bytes)",
                report.deleted_bodies, report.deleted_bytes
            )
        }
    );
    for o in &report.orphans {
        out.push_str(&format!(
            "  body {} ({} bytes) in store {}\n",
            o.hash, o.size, o.store_id
        ));
    }
    out.push_str(&format!(
        "{} workspace(s) idle for at least {} days\n",
        report.idle_count, report.idle_days
    ));
    for w in &report.idle_workspaces {
        out.push_str(&format!(
            "  {}  {}  head {}  last changed {} ({} days ago)\n",
            w.workspace_id,
            w.label.as_deref().unwrap_or("-"),
            w.head_position.map_or("-".to_owned(), |p| p.to_string()),
            w.updated_at,
            w.idle_days
        ));
    }
    if report.dry_run && report.orphan_bodies > 0 {
        out.push_str("nothing deleted: run again with --apply to delete the orphan bodies\n");
    }
    out
}

/// `supabash gc`.
pub async fn run_gc(args: GcArgs) -> Result<(), BoxError> {
    let report = gc(&args).await?;
    if args.json {
        crate::output::json(&report)?;
    } else {
        print!("{}", render_gc(&report));
    }
    Ok(())
}

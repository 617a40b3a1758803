//! `supabash log`, `show REV` and `restore REV`: a workspace's history, one receipt, and a
//! forward restore. Revisions are named as [`resolve`] reads them (`crate::history::revision`).

use crate::connect::Target;
use crate::history::revision::{for_each_page, page};
use crate::history::show::change_line;
use crate::output::{self, short};
use supabash::transport::call;
use supabash::Transport;
use supabash_core::rpc::path_history::{PathHistory, PathHistoryPage};
use supabash_core::rpc::HistoryPage;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Arguments of `supabash log`.
#[derive(Debug, clap::Args)]
pub struct LogArgs {
    #[command(flatten)]
    pub target: Target,
    /// One page of at most N revisions (default: every page).
    #[arg(long, value_name = "N")]
    pub limit: Option<i32>,
    /// One page of the revisions after this one (a revision id, as `nextCursor` gives it).
    #[arg(long, value_name = "REV")]
    pub cursor: Option<String>,
    /// One line per revision, without its changes.
    #[arg(long)]
    pub oneline: bool,
    /// Print the page as JSON ({"records": [receipt...], "nextCursor": id|null}; with PATH
    /// {"versions": [...], "nextCursor": position|null}).
    #[arg(long)]
    pub json: bool,
    /// Only the versions of this path, newest first (`supabash_path_history`).
    #[arg(value_name = "PATH")]
    pub path: Option<String>,
    /// With PATH: follow a version that arrived by a move back to the path it came from.
    #[arg(long, requires = "path")]
    pub follow_moves: bool,
    /// With PATH: oldest first.
    #[arg(long, requires = "path")]
    pub reverse: bool,
    /// After the history, keep printing each change as it happens (`position  revision
    /// kind`; with --json one announcement a line) until interrupted. A dropped connection is
    /// made again and the commits it missed are printed from history.
    #[arg(long, conflicts_with_all = ["path", "limit", "cursor"])]
    pub follow: bool,
}

/// `supabash log`: history oldest first, one page or all of them; with a path, that path's
/// versions.
pub async fn log(args: LogArgs) -> Result<(), BoxError> {
    let (transport, ws) = args.target.open().await?;
    if let Some(path) = args.path.clone() {
        return log_path(transport.as_ref(), &ws, &path, &args).await;
    }
    let history = if args.limit.is_some() || args.cursor.is_some() {
        page(transport.as_ref(), &ws, args.cursor.clone(), args.limit).await?
    } else {
        let (mut records, mut notes) = (Vec::new(), Vec::new());
        for_each_page(transport.as_ref(), &ws, |p| {
            records.extend(p.records);
            notes.extend(p.notes);
        })
        .await?;
        HistoryPage {
            records,
            next_cursor: None,
            notes,
        }
    };
    if args.json {
        return output::json(&history);
    }
    for r in &history.records {
        println!(
            "{:>4}  {}  {}  {}  {}",
            r.position,
            short(&r.revision),
            r.committed_at,
            r.actor,
            r.cause.as_deref().unwrap_or("")
        );
        if !args.oneline {
            for line in &r.changes {
                println!("        {}", change_line(line));
            }
            let notes: Vec<_> = history
                .notes
                .iter()
                .filter(|n| n.revision == r.revision)
                .cloned()
                .collect();
            for line in crate::history::notes::render(&notes).lines() {
                println!("        {}", line.trim_start_matches("note").trim_start());
            }
        }
    }
    if let Some(next) = &history.next_cursor {
        eprintln!("more: --cursor {next}");
    }
    if args.follow {
        let last = history.records.last().map(|r| supabash::watch::WatchPoint {
            position: r.position,
            revision: r.revision.clone(),
        });
        return follow(transport, ws, last, args.json).await;
    }
    Ok(())
}

/// `supabash log --follow`: the announcements after `last`, one a line, until interrupted.
async fn follow(
    transport: std::sync::Arc<dyn Transport>,
    ws: String,
    last: Option<supabash::watch::WatchPoint>,
    json: bool,
) -> Result<(), BoxError> {
    let mut watch = supabash::watch::Watch::start(transport, ws, last).await?;
    loop {
        let a = watch.next().await?;
        if json {
            println!("{}", serde_json::to_string(&a)?);
        } else {
            println!(
                "{:>4}  {}  {}",
                a.position.map(|p| p.to_string()).unwrap_or_default(),
                a.revision.as_deref().map(short).unwrap_or_default(),
                a.kind.as_str()
            );
        }
    }
}

/// `supabash log PATH`: the versions of one path, one page or all of them.
async fn log_path(
    transport: &dyn Transport,
    ws: &str,
    path: &str,
    args: &LogArgs,
) -> Result<(), BoxError> {
    let mut request = PathHistory {
        workspace_id: ws.to_owned(),
        path: path.to_owned(),
        cursor: args.cursor.clone(),
        page_size: args.limit,
        follow_moves: Some(args.follow_moves),
        oldest_first: Some(args.reverse),
        delegated_grant: None,
    };
    let one_page = args.limit.is_some() || args.cursor.is_some();
    let mut all = PathHistoryPage {
        versions: Vec::new(),
        next_cursor: None,
    };
    loop {
        let page = call(transport, &request).await?;
        all.versions.extend(page.versions);
        all.next_cursor = page.next_cursor;
        match (&all.next_cursor, one_page) {
            (Some(next), false) => request.cursor = Some(next.clone()),
            _ => break,
        }
    }
    if args.json {
        return output::json(&all);
    }
    for v in &all.versions {
        let op = serde_json::to_value(v.op)?;
        let from = output::moved_from(v.from.as_deref());
        let redacted = if v.redacted { " [redacted]" } else { "" };
        println!(
            "{:>4}  {}  {}  {}  {:<6} {}{from}{redacted}  {}",
            v.position,
            v.revision.as_deref().map(short).unwrap_or("(purged)"),
            v.committed_at.as_deref().unwrap_or("-"),
            v.actor.as_deref().unwrap_or("-"),
            op.as_str().unwrap_or("?"),
            v.path,
            v.size.map(|s| format!("{s} bytes")).unwrap_or_default(),
        );
    }
    if let Some(next) = &all.next_cursor {
        eprintln!("more: --cursor {next}");
    }
    Ok(())
}

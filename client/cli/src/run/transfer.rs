//! `supabash import DIR` (the staged tree made to match a directory, committed with
//! `--commit`) and `supabash export [--revision R] DIR` (the staged tree or a revision written
//! into an empty directory), on the library's `disk` module, with a progress bar on a
//! terminal.

use crate::connect::Target;
use crate::flags::CommitFlags;
use crate::run::{print_synced, SessionOutcome};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;
use supabash::disk::{MaterialiseOptions, Progress, ProgressFn};
use supabash::Workspace;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Arguments of `supabash import`.
#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    #[command(flatten)]
    pub target: Target,
    /// The directory whose files the staged tree takes (what it lacks is deleted).
    pub dir: PathBuf,
    #[command(flatten)]
    pub commit: CommitFlags,
    #[command(flatten)]
    pub exclude: crate::flags::ExcludeFlags,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `supabash export`.
#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    #[command(flatten)]
    pub target: Target,
    /// Write this revision (default: the staged tree, which is the head's when nothing is
    /// staged).
    #[arg(long)]
    pub revision: Option<String>,
    /// The target directory: created when missing, refused when not empty.
    pub dir: PathBuf,
    /// Print one JSON document (the record of what was written).
    #[arg(long)]
    pub json: bool,
}

/// A progress bar on stderr when it is a terminal, and its observer.
fn progress_bar(what: &'static str) -> Option<(ProgressBar, ProgressFn)> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::new(0);
    let style = ProgressStyle::with_template("{msg} {bar:30} {pos}/{len} files")
        .map(|s| s.progress_chars("=> "))
        .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style);
    bar.set_message(what);
    let shown = bar.clone();
    let observe: ProgressFn = Arc::new(move |p: Progress| {
        shown.set_length(p.total_files.unwrap_or(p.files));
        shown.set_position(p.files);
    });
    Some((bar, observe))
}

/// `supabash import`.
pub async fn import(args: ImportArgs) -> Result<(), BoxError> {
    let started = Instant::now();
    let (transport, id) = args.target.open().await?;
    let ws = Workspace::builder(transport).open(&id).await?;
    let record = ws.staged_record();
    let bar = progress_bar("hashing");
    let exclude = crate::run::ignore_list::load(&args.dir, &args.exclude)?;
    let progress = bar.as_ref().map(|(_, f)| f.clone());
    let synced = ws
        .stage_from_dir_excluding(&args.dir, &record, progress, exclude)
        .await;
    if let Some((bar, _)) = bar {
        bar.finish_and_clear();
    }
    let synced = synced?;
    let revision = args.commit.commit(&ws, !synced.changes.is_empty()).await?;
    let command = vec!["import".to_owned(), args.dir.display().to_string()];
    let outcome = SessionOutcome::new(&id, command, None, started, Some(&synced), revision);
    if args.json {
        println!("{}", json!({ "session": outcome, "sync": synced }));
    } else {
        print_synced(&synced);
        if let Some(r) = &outcome.revision {
            println!("committed revision {r}");
        }
    }
    Ok(())
}

/// `supabash export`.
pub async fn export(args: ExportArgs) -> Result<(), BoxError> {
    let (transport, id) = args.target.open().await?;
    // The whole manifest in one request: every file is written out anyway.
    let ws = Workspace::builder(transport)
        .open_mode(supabash::OpenMode::Eager)
        .open(&id)
        .await?;
    crate::connect::body_cache::attach(&ws);
    let mut options = MaterialiseOptions::default();
    if let Some(r) = &args.revision {
        options = options.with_revision(r.clone());
    }
    let bar = progress_bar("writing");
    if let Some((_, observe)) = &bar {
        options = options.with_progress(observe.clone());
    }
    let written = ws.materialise_with(&args.dir, options).await;
    if let Some((bar, _)) = bar {
        bar.finish_and_clear();
    }
    let written = written?;
    if args.json {
        println!("{}", json!(written));
    } else {
        let bytes: u64 = written.files.values().map(|f| f.size).sum();
        println!(
            "wrote {} files ({bytes} bytes) and {} directories into {}",
            written.files.len(),
            written.directories.len(),
            args.dir.display()
        );
        for s in &written.skipped {
            println!("  not written: {}: {}", s.path, s.reason);
        }
    }
    Ok(())
}

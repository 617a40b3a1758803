//! Staging a scanned directory's differences from its record: moves first (keeping bodies the
//! tree already holds), then deletes, directories, created and edited files, modes. Any
//! failure puts the staged tree back as it was.

use super::scan::{self, Scan};
use super::write::on_disk;
use super::{
    blocking, DirChange, DirChangeKind, Materialised, NotStaged, NotStagedReason, Synced,
    DEFAULT_FILE_MODE,
};
use crate::error::{Result, SupabashError};
use crate::tree::sync::Entry;
use crate::tree::{FsError, StagedTree};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use supabash_core::{moves, path, ErrorCode};

/// The differences to stage.
#[derive(Default)]
struct Plan {
    moves: Vec<(String, String)>,
    /// (path, size, whether the record had it).
    upserts: Vec<(String, u64, bool)>,
    deletes: Vec<String>,
    dirs_created: Vec<String>,
    /// Deepest first.
    dirs_removed: Vec<String>,
    /// (path, mode) of files whose mode differs from what the tree would write.
    modes: Vec<(String, u32)>,
    /// (path, time) of files whose time differs from the record's.
    times: Vec<(String, i64)>,
    /// Links created or retargeted (path, target), and links gone.
    links: Vec<(String, String)>,
    links_removed: Vec<String>,
}

/// The symbolic link of the staged tree at or above `p`, if any.
fn link_above<'a>(links: &'a [String], p: &str) -> Option<&'a String> {
    links.iter().find(|l| {
        p == l.as_str()
            || p.strip_prefix(l.as_str())
                .is_some_and(|r| r.starts_with('/'))
    })
}

/// Leaves out (and reports) what lies at or below a symbolic link of the staged tree: the
/// tree cannot hold a file there.
fn drop_below_links(scan: &mut Scan, links: &[String]) {
    if links.is_empty() {
        return;
    }
    let mut below = Vec::new();
    scan.files.retain(|p, _| match link_above(links, p) {
        Some(l) => {
            below.push((p.clone(), l.clone()));
            false
        }
        None => true,
    });
    scan.dirs.retain(|p| match link_above(links, p) {
        Some(l) => {
            below.push((p.clone(), l.clone()));
            false
        }
        None => true,
    });
    scan.not_staged
        .extend(below.into_iter().map(|(path, link)| NotStaged {
            path,
            reason: NotStagedReason::BelowSymlink { link },
        }));
}

fn plan(record: &Materialised, scan: &Scan) -> Plan {
    let gone = record
        .files
        .iter()
        .filter(|(p, _)| !scan.files.contains_key(*p))
        .map(|(p, f)| (f.content_hash.clone(), p.clone()));
    let changed = scan
        .files
        .iter()
        .filter(|(p, f)| record.files.get(*p).map(|r| &r.content_hash) != Some(&f.content_hash))
        .map(|(p, f)| (f.content_hash.clone(), p.clone()));
    let paired = moves::pair(gone, changed);
    let mut out = Plan {
        deletes: paired.sources,
        ..Plan::default()
    };
    for (from, to) in &paired.moves {
        out.moves.push((from.clone(), to.clone()));
    }
    for p in paired.targets {
        let size = scan.files[&p].size;
        out.upserts
            .push((p.clone(), size, record.files.contains_key(&p)));
    }
    let moved_from: BTreeMap<&str, &str> = paired
        .moves
        .iter()
        .map(|(f, t)| (t.as_str(), f.as_str()))
        .collect();
    for (p, f) in &scan.files {
        let before = moved_from.get(p.as_str()).map_or(p.as_str(), |s| *s);
        let expected = record
            .files
            .get(before)
            .map_or(DEFAULT_FILE_MODE, |r| r.mode);
        if f.mode != expected {
            out.modes.push((p.clone(), f.mode));
        }
        // A time the record knew and the disk moved; new and edited files take theirs below.
        if record
            .files
            .get(before)
            .and_then(|r| r.mtime_ns)
            .is_some_and(|t| t != f.mtime_ns)
        {
            out.times.push((p.clone(), f.mtime_ns));
        }
    }
    let upserted: Vec<(String, i64)> = out
        .upserts
        .iter()
        .map(|(p, _, _)| (p.clone(), scan.files[p].mtime_ns))
        .filter(|(p, _)| !out.times.iter().any(|(q, _)| q == p))
        .collect();
    out.times.extend(upserted);
    out.links = scan
        .links
        .iter()
        .filter(|(p, t)| record.links.get(*p) != Some(*t))
        .map(|(p, t)| (p.clone(), t.clone()))
        .collect();
    out.links_removed = record
        .links
        .keys()
        .filter(|p| !scan.links.contains_key(*p))
        .cloned()
        .collect();
    out.dirs_created = scan
        .dirs
        .iter()
        .filter(|d| !record.directories.contains(*d))
        .cloned()
        .collect();
    out.dirs_removed = record
        .directories
        .iter()
        .rev()
        .filter(|d| !scan.dirs.contains(*d))
        .cloned()
        .collect();
    out
}

fn fs_error(e: FsError) -> SupabashError {
    match e {
        FsError::Supabash(e) => e,
        FsError::Posix { errno, op, path } => {
            SupabashError::new(errno.code(), format!("{errno}, {op}")).with_path(path)
        }
    }
}

/// Moves `from` to `to` in the tree when it still holds what the record says; `false` when
/// the move cannot keep the body (the caller then stages the file's bytes instead).
async fn try_move(
    tree: &StagedTree,
    entries: &BTreeMap<String, Entry>,
    record: &Materialised,
    from: &str,
    to: &str,
) -> bool {
    let recorded = record.files.get(from).map(|f| &f.content_hash);
    let held = match entries.get(from) {
        Some(Entry::File { content_hash, .. }) => Some(content_hash),
        _ => None,
    };
    if recorded.is_none() || recorded != held {
        return false;
    }
    let parent = path::parent(to);
    if parent != "/" && tree.mkdir(parent, true).await.is_err() {
        return false;
    }
    tree.mv(from, to).await.is_ok()
}

/// Applies `plan` to the staged tree and answers what it changed, in the order of the module
/// documentation.
async fn stage(
    tree: &StagedTree,
    root: &Path,
    record: &Materialised,
    mut plan: Plan,
) -> Result<Vec<DirChange>> {
    let mut applied = stage_moves(tree, root, record, &mut plan).await;
    stage_removals_and_dirs(tree, &mut plan, &mut applied).await?;
    stage_files(tree, root, &plan.upserts, &mut applied).await?;
    for p in &plan.links_removed {
        tree.rm(p, false, true).await.map_err(fs_error)?;
        applied.push(dir_change(DirChangeKind::Deleted, p));
    }
    for (p, target) in &plan.links {
        tree.rm(p, false, true).await.map_err(fs_error)?;
        tree.symlink(target, p).await.map_err(fs_error)?;
        applied.push(dir_change(DirChangeKind::Created, p));
    }
    for (p, mode) in &plan.modes {
        tree.chmod(p, *mode).await.map_err(fs_error)?;
    }
    for (p, ns) in &plan.times {
        tree.utimes(p, crate::tree::from_ns(*ns))
            .await
            .map_err(fs_error)?;
    }
    Ok(applied)
}

/// A change without a source or size.
fn dir_change(kind: DirChangeKind, path: &str) -> DirChange {
    DirChange {
        kind,
        path: path.to_owned(),
        from: None,
        size: None,
    }
}

/// Makes the planned moves in the tree (keeping the bodies it holds); a move it cannot make
/// is planned as a delete and an upsert instead.
async fn stage_moves(
    tree: &StagedTree,
    root: &Path,
    record: &Materialised,
    plan: &mut Plan,
) -> Vec<DirChange> {
    let entries: BTreeMap<String, Entry> = tree.entries().into_iter().collect();
    let mut applied = Vec::new();
    for (from, to) in std::mem::take(&mut plan.moves) {
        if try_move(tree, &entries, record, &from, &to).await {
            applied.push(DirChange {
                kind: DirChangeKind::Moved,
                path: to,
                from: Some(from),
                size: None,
            });
        } else {
            plan.deletes.push(from);
            let size = std::fs::symlink_metadata(on_disk(root, &to)).map_or(0, |m| m.len());
            let known = record.files.contains_key(&to);
            plan.upserts.push((to, size, known));
        }
    }
    applied
}

/// Deletes the planned files, removes and creates the planned directories.
async fn stage_removals_and_dirs(
    tree: &StagedTree,
    plan: &mut Plan,
    applied: &mut Vec<DirChange>,
) -> Result<()> {
    plan.deletes.sort();
    for p in &plan.deletes {
        tree.rm(p, false, true).await.map_err(fs_error)?;
        applied.push(dir_change(DirChangeKind::Deleted, p));
    }
    for d in &plan.dirs_removed {
        tree.rm(d, true, true).await.map_err(fs_error)?;
        applied.push(dir_change(DirChangeKind::DirRemoved, d));
    }
    for d in &plan.dirs_created {
        tree.mkdir(d, true).await.map_err(fs_error)?;
        applied.push(dir_change(DirChangeKind::DirCreated, d));
    }
    Ok(())
}

/// Stages the created and edited files' contents, read from disk, in one step; a file where
/// the tree holds a directory is refused.
async fn stage_files(
    tree: &StagedTree,
    root: &Path,
    upserts: &[(String, u64, bool)],
    applied: &mut Vec<DirChange>,
) -> Result<()> {
    let now: BTreeMap<String, Entry> = tree.entries().into_iter().collect();
    let mut files = Vec::new();
    for (p, _, known) in upserts {
        if matches!(now.get(p), Some(Entry::Dir)) {
            return Err(SupabashError::new(
                ErrorCode::InvalidArgument,
                "the staged tree holds a directory where the directory on disk holds a file",
            )
            .with_path(p));
        }
        let (at, shown, limits) = (on_disk(root, p), p.clone(), tree.limits().clone());
        let bytes = blocking(move || scan::read(&at, &shown, &limits)).await?;
        applied.push(DirChange {
            kind: if *known {
                DirChangeKind::Edited
            } else {
                DirChangeKind::Created
            },
            path: p.clone(),
            from: None,
            size: Some(bytes.len() as u64),
        });
        files.push((p.clone(), bytes));
    }
    tree.apply_files(files, &[]).await?;
    tree.check_limits()
}

/// Stages what `scanned` (the walk of `root`) shows changed since `record` was written.
pub(super) async fn apply(
    tree: &Arc<StagedTree>,
    root: &Path,
    record: &Materialised,
    mut scanned: Scan,
) -> Result<Synced> {
    let links: Vec<String> = tree
        .entries()
        .into_iter()
        .filter(|(_, e)| matches!(e, Entry::Symlink { .. }))
        .map(|(p, _)| p)
        .collect();
    drop_below_links(&mut scanned, &links);
    let plan = plan(record, &scanned);
    let mut not_staged = std::mem::take(&mut scanned.not_staged);
    not_staged.sort_by(|a, b| a.path.cmp(&b.path));
    let saved = tree.save_nodes();
    let staged = match stage(tree, root, record, plan).await {
        Ok(applied) => tree.changes().map(|changes| (applied, changes)),
        Err(e) => Err(e),
    };
    match staged {
        Ok((applied, changes)) => Ok(Synced {
            changes,
            applied,
            ignored: scanned.ignored,
            not_staged,
        }),
        Err(e) => {
            tree.restore_nodes(saved);
            Err(e)
        }
    }
}

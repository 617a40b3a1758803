//! Walking a directory of an [`AgentFs`] breadth-first, in name order, without following links.

use crate::AgentFs;
use supabash::tree::{FileKind, FsResult};

/// One path found by a walk.
pub struct Found {
    pub path: String,
    pub kind: FileKind,
    /// 1 for the children of the start directory.
    pub depth: usize,
}

fn child(dir: &str, name: &str) -> String {
    if dir == "/" {
        format!("/{name}")
    } else {
        format!("{dir}/{name}")
    }
}

/// Everything below `dir` down to `max_depth`, in tree order (each directory before its
/// contents, names sorted); stops after `limit` entries (the flag says whether it stopped).
pub async fn walk(
    fs: &dyn AgentFs,
    dir: &str,
    max_depth: usize,
    limit: usize,
) -> FsResult<(Vec<Found>, bool)> {
    let mut out = Vec::new();
    let mut stack = vec![(dir.to_owned(), 0usize)];
    let mut cut = false;
    'walk: while let Some((d, depth)) = stack.pop() {
        let entries = fs.readdir(&d).await?;
        let mut dirs = Vec::new();
        for e in entries {
            if out.len() >= limit {
                cut = true;
                break 'walk;
            }
            let p = child(&d, &e.name);
            if e.kind == FileKind::Directory && depth + 1 < max_depth {
                dirs.push((p.clone(), depth + 1));
            }
            out.push(Found {
                path: p,
                kind: e.kind,
                depth: depth + 1,
            });
        }
        stack.extend(dirs.into_iter().rev());
    }
    sort_depth_first(&mut out);
    Ok((out, cut))
}

/// Orders paths as a tree prints them: each directory followed by its contents.
fn sort_depth_first(found: &mut [Found]) {
    found.sort_by(|a, b| {
        let ka = a.path.split('/');
        let kb = b.path.split('/');
        ka.cmp(kb)
    });
}

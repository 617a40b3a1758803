//! `supabash ls`, `tree` and `cat`: a workspace's files at a revision (default: the head),
//! read from the manifest (`ls`, `tree`) or one document (`cat`, verified against its hashes).

use crate::connect::Target;
use crate::history::revision::resolve_given;
use crate::output;
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::Write;
use supabash::documents::StoredFile;
use supabash::transport::call;
use supabash::{ErrorCode, SupabashError, Transport};
use supabash_core::rpc::requests as rq;
use supabash_core::rpc::{File, Tree};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Where to look: a path and a revision.
#[derive(Debug, clap::Args)]
pub struct At {
    #[command(flatten)]
    pub target: Target,
    /// The revision (head, an id, a position or an id prefix; default: the head).
    #[arg(long, short = 'r', value_name = "REV")]
    pub rev: Option<String>,
    /// The last revision committed at or before this time (RFC 3339, e.g.
    /// 2026-12-03T12:00:00.123456Z).
    #[arg(long = "at", value_name = "TIME", conflicts_with = "rev")]
    pub time: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

impl At {
    /// The revision asked for: `--at` or `--rev` (a time is resolved by the server).
    fn pin(&self) -> Option<&str> {
        self.time.as_deref().or(self.rev.as_deref())
    }
}

/// The manifest at `rev` (default: the head).
async fn manifest(
    transport: &dyn Transport,
    ws: &str,
    rev: Option<&str>,
) -> Result<Tree, BoxError> {
    let revision = resolve_given(transport, ws, rev).await?;
    Ok(supabash::workspace::load_manifest(transport, ws, revision.as_deref()).await?)
}

/// `path` as the manifest spells paths: absolute, no trailing slash (the root is `/`).
fn normalise(path: &str) -> String {
    let trimmed = path.trim_end_matches('/');
    if trimmed.is_empty() {
        "/".to_owned()
    } else if trimmed.starts_with('/') {
        trimmed.to_owned()
    } else {
        format!("/{trimmed}")
    }
}

/// The part of `file` below directory `dir`, when it lies below it.
fn below<'a>(dir: &str, file: &'a str) -> Option<&'a str> {
    if dir == "/" {
        return file.strip_prefix('/');
    }
    file.strip_prefix(dir)?.strip_prefix('/')
}

/// One `ls` entry.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    pub name: String,
    pub path: String,
    /// `file` or `directory`.
    pub kind: &'static str,
    /// Files only: rendered size in bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<i64>,
    /// Files only: SHA-256 of the rendered bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_hash: Option<String>,
    /// Files only: a tombstone (its content was redacted).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub redacted: bool,
}

/// What `ls --json` prints.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Listing {
    pub workspace_id: String,
    pub revision: Option<String>,
    pub path: String,
    pub entries: Vec<Entry>,
}

fn file_entry(name: &str, f: &File) -> Entry {
    Entry {
        name: name.to_owned(),
        path: f.path.clone(),
        kind: "file",
        size: Some(f.size),
        content_hash: Some(f.content_hash.clone()),
        redacted: f.redacted,
    }
}

/// The entries of directory (or file) `path` in `tree`; `NOT_FOUND` when nothing is there.
pub fn list(tree: &Tree, path: &str) -> Result<Vec<Entry>, SupabashError> {
    let path = normalise(path);
    if let Some(f) = tree.files.iter().find(|f| f.path == path) {
        let name = path.rsplit('/').next().unwrap_or(&path);
        return Ok(vec![file_entry(name, f)]);
    }
    let mut entries: BTreeMap<String, Entry> = BTreeMap::new();
    for f in &tree.files {
        let Some(rest) = below(&path, &f.path) else {
            continue;
        };
        match rest.split_once('/') {
            None => {
                entries.insert(rest.to_owned(), file_entry(rest, f));
            }
            Some((dir, _)) => {
                let child = if path == "/" {
                    format!("/{dir}")
                } else {
                    format!("{path}/{dir}")
                };
                entries.entry(dir.to_owned()).or_insert(Entry {
                    name: dir.to_owned(),
                    path: child,
                    kind: "directory",
                    size: None,
                    content_hash: None,
                    redacted: false,
                });
            }
        }
    }
    if entries.is_empty() && path != "/" {
        return Err(
            SupabashError::new(ErrorCode::NotFound, "no such file or directory").with_path(path),
        );
    }
    Ok(entries.into_values().collect())
}

/// Arguments of `supabash ls`.
#[derive(Debug, clap::Args)]
pub struct LsArgs {
    #[command(flatten)]
    pub at: At,
    /// The directory (or file) to list.
    #[arg(default_value = "/")]
    pub path: String,
    /// Long lines: kind, size, content hash.
    #[arg(long, short = 'l')]
    pub long: bool,
}

/// `supabash ls [PATH]`.
pub async fn ls(args: LsArgs) -> Result<(), BoxError> {
    let (transport, ws) = args.at.target.open().await?;
    let tree = manifest(transport.as_ref(), &ws, args.at.pin()).await?;
    let entries = list(&tree, &args.path)?;
    if args.at.json {
        return output::json(&Listing {
            workspace_id: tree.workspace_id,
            revision: tree.revision,
            path: normalise(&args.path),
            entries,
        });
    }
    for e in entries {
        let slash = if e.kind == "directory" { "/" } else { "" };
        if args.long {
            let size = e.size.map_or("-".to_owned(), |s| s.to_string());
            let hash = e.content_hash.as_deref().map_or("-", output::short);
            let redacted = if e.redacted { "  [redacted]" } else { "" };
            println!(
                "{:<9} {size:>10}  {hash:<8}  {}{slash}{redacted}",
                e.kind, e.name
            );
        } else {
            println!("{}{slash}", e.name);
        }
    }
    Ok(())
}

/// Arguments of `supabash tree`.
#[derive(Debug, clap::Args)]
pub struct TreeArgs {
    #[command(flatten)]
    pub at: At,
    /// The directory to show.
    #[arg(default_value = "/")]
    pub path: String,
}

/// The tree below `path` drawn with indentation, in path order.
pub fn draw(tree: &Tree, path: &str) -> String {
    let path = normalise(path);
    let mut out = format!("{path}\n");
    let mut shown_dirs: Vec<String> = Vec::new();
    let mut files: Vec<&File> = tree
        .files
        .iter()
        .filter(|f| below(&path, &f.path).is_some())
        .collect();
    files.sort_by(|a, b| a.path.cmp(&b.path));
    for f in files {
        let rest = below(&path, &f.path).unwrap_or_default();
        let parts: Vec<&str> = rest.split('/').collect();
        for depth in 0..parts.len() - 1 {
            let dir = parts[..=depth].join("/");
            if !shown_dirs.contains(&dir) {
                out.push_str(&format!("{}{}/\n", "    ".repeat(depth + 1), parts[depth]));
                shown_dirs.push(dir);
            }
        }
        let redacted = if f.redacted { " [redacted]" } else { "" };
        out.push_str(&format!(
            "{}{} ({} bytes){redacted}\n",
            "    ".repeat(parts.len()),
            parts[parts.len() - 1],
            f.size
        ));
    }
    out
}

/// `supabash tree [PATH]`: every file below PATH; `--json` prints the contract's manifest
/// (`supabash_load_manifest`'s answer) limited to those files.
pub async fn tree(args: TreeArgs) -> Result<(), BoxError> {
    let (transport, ws) = args.at.target.open().await?;
    let mut tree = manifest(transport.as_ref(), &ws, args.at.pin()).await?;
    let path = normalise(&args.path);
    if path != "/" {
        tree.files
            .retain(|f| f.path == path || below(&path, &f.path).is_some());
        if tree.files.is_empty() {
            return Err(
                SupabashError::new(ErrorCode::NotFound, "no such file or directory")
                    .with_path(path)
                    .into(),
            );
        }
    }
    if args.at.json {
        return output::json(&tree);
    }
    print!("{}", draw(&tree, &path));
    Ok(())
}

/// Arguments of `supabash cat`.
#[derive(Debug, clap::Args)]
pub struct CatArgs {
    #[command(flatten)]
    pub at: At,
    /// The file.
    pub path: String,
}

/// The bytes of `path` at `revision` (default: the head), verified against the recorded
/// hashes; `REDACTED` for a tombstone.
pub async fn read(
    transport: &dyn Transport,
    ws: &str,
    path: &str,
    revision: Option<&str>,
) -> Result<Vec<u8>, SupabashError> {
    let request = rq::LoadDocument {
        workspace_id: ws.to_owned(),
        path: normalise(path),
        revision: revision.map(str::to_owned),
        delegated_grant: None,
    };
    let doc = call(transport, &request).await?;
    StoredFile::try_from(doc.file)?.verified(None)
}

/// `supabash cat PATH`: the file's bytes on stdout, unchanged; `--json` prints the contract's
/// document (`supabash_load_document`'s answer, the body as `text` or `base64`).
pub async fn cat(args: CatArgs) -> Result<(), BoxError> {
    let (transport, ws) = args.at.target.open().await?;
    let revision = resolve_given(transport.as_ref(), &ws, args.at.pin()).await?;
    if args.at.json {
        let request = rq::LoadDocument {
            workspace_id: ws,
            path: normalise(&args.path),
            revision,
            delegated_grant: None,
        };
        return output::json(&call(transport.as_ref(), &request).await?);
    }
    let bytes = read(transport.as_ref(), &ws, &args.path, revision.as_deref()).await?;
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(&bytes)?;
    stdout.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree_of(paths: &[&str]) -> Tree {
        Tree {
            workspace_id: "w".into(),
            revision: Some("r".into()),
            position: Some(1),
            files: paths
                .iter()
                .map(|p| File {
                    path: (*p).into(),
                    content_hash: "abcdef0123".into(),
                    size: 3,
                    body_hash: "abcdef0123".into(),
                    body_size: 3,
                    metadata: serde_json::json!({}),
                    text: None,
                    base64: None,
                    redacted: false,
                    kind: Default::default(),
                    mode: 0o644,
                    mtime_ns: None,
                })
                .collect(),
            redaction_epoch: 0,
            restore_floor: None,
            files_only: false,
        }
    }

    #[test]
    fn ls_shows_files_and_directories_of_one_level() {
        let t = tree_of(&["/a.md", "/notes/b.md", "/notes/deep/c.md", "/notesx.md"]);
        let names = |p: &str| -> Vec<(String, &'static str)> {
            list(&t, p)
                .unwrap()
                .into_iter()
                .map(|e| (e.name, e.kind))
                .collect()
        };
        assert_eq!(
            names("/"),
            [
                ("a.md".into(), "file"),
                ("notes".into(), "directory"),
                ("notesx.md".into(), "file")
            ]
        );
        assert_eq!(
            names("notes/"),
            [("b.md".into(), "file"), ("deep".into(), "directory")]
        );
        assert_eq!(list(&t, "/notes").unwrap()[1].path, "/notes/deep");
        assert_eq!(names("/notes/b.md"), [("b.md".into(), "file")]);
        assert_eq!(list(&t, "/nope").unwrap_err().code(), ErrorCode::NotFound);
        assert!(list(&tree_of(&[]), "/").unwrap().is_empty());
    }

    #[test]
    fn tree_draws_directories_once() {
        let t = tree_of(&["/notes/deep/c.md", "/notes/b.md", "/a.md"]);
        assert_eq!(
            draw(&t, "/"),
            "/\n    a.md (3 bytes)\n    notes/\n        b.md (3 bytes)\n        deep/\n            c.md (3 bytes)\n"
        );
    }
}

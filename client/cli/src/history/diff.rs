//! `supabash diff A B`: the contract's diff entries (`supabash_diff`) turned into a unified
//! diff (git's layout: renames as renames, new and deleted files, binary files named) or a
//! `--stat` summary. Colour only on a terminal unless `--color=always`. The demo prints its
//! diff step with [`unified_between`].

use crate::connect::Target;
use crate::history::files::read;
use crate::history::revision::resolve;
use crate::output;
use serde::Serialize;
use similar::{ChangeTag, TextDiff};
use std::io::IsTerminal;
use std::time::Duration;
use supabash::workspace::{Diff, DiffEntry, DiffKind, DiffRef};
use supabash::{ErrorCode, SupabashError, Transport};
use supabash_core::posix::Kind;
use supabash_core::rpc::requests as rq;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// When to colour.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    /// When stdout is a terminal and NO_COLOR is unset.
    #[default]
    Auto,
    Always,
    Never,
}

impl ColorChoice {
    /// Whether to colour stdout.
    pub fn enabled(self) -> bool {
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => {
                std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none()
            }
        }
    }
}

/// ANSI styles, or none.
#[derive(Debug, Clone, Copy)]
struct Paint(bool);

impl Paint {
    fn with(self, code: &str, text: &str) -> String {
        if self.0 {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }
    fn header(self, t: &str) -> String {
        self.with("1", t)
    }
    fn hunk(self, t: &str) -> String {
        self.with("36", t)
    }
    fn deleted(self, t: &str) -> String {
        self.with("31", t)
    }
    fn added(self, t: &str) -> String {
        self.with("32", t)
    }
}

/// One side of one entry.
#[derive(Debug, Clone, PartialEq)]
pub enum Side {
    /// The path does not exist on this side.
    Absent,
    Text(String),
    Binary,
    /// A tombstone: redaction removed this version's content.
    Redacted,
}

impl Side {
    fn text(&self) -> &str {
        match self {
            Side::Text(t) => t,
            _ => "",
        }
    }
}

/// One entry with the content of both sides.
#[derive(Debug, Clone, PartialEq)]
pub struct FileDiff {
    pub entry: DiffEntry,
    pub before: Side,
    pub after: Side,
}

impl FileDiff {
    /// A move whose content did not change.
    fn pure_rename(&self) -> bool {
        self.entry.kind == DiffKind::Moved && self.entry.before_hash == self.entry.after_hash
    }

    fn is_binary(&self) -> bool {
        self.entry.binary || self.before == Side::Binary || self.after == Side::Binary
    }

    fn is_text(&self) -> bool {
        !self.is_binary() && self.before != Side::Redacted && self.after != Side::Redacted
    }

    /// Lines inserted and deleted.
    fn counts(&self) -> (usize, usize) {
        if !self.is_text() || self.pure_rename() {
            return (0, 0);
        }
        let diff = TextDiff::from_lines(self.before.text(), self.after.text());
        diff.iter_all_changes()
            .fold((0, 0), |(i, d), c| match c.tag() {
                ChangeTag::Insert => (i + 1, d),
                ChangeTag::Delete => (i, d + 1),
                ChangeTag::Equal => (i, d),
            })
    }

    /// The git modes of both sides (`100644`, `100755`, `120000`, `040000`), where known.
    fn modes(&self) -> (Option<String>, Option<String>) {
        let e = &self.entry;
        let mode = |k: Option<Kind>, m: Option<u32>| m.map(|m| k.unwrap_or_default().git_mode(m));
        (
            mode(e.before_kind, e.before_mode),
            mode(e.after_kind, e.after_mode),
        )
    }

    /// Only the mode changed: git prints no content for it.
    fn mode_only(&self) -> bool {
        self.entry.kind == DiffKind::Modified && self.entry.before_hash == self.entry.after_hash
    }

    /// A directory on either side: it has no content to show.
    fn directory(&self) -> bool {
        [self.entry.before_kind, self.entry.after_kind].contains(&Some(Kind::Directory))
    }

    /// The path before (for a move: where it came from).
    fn old_path(&self) -> &str {
        self.entry.from.as_deref().unwrap_or(&self.entry.path)
    }
}

/// Compares two sides of workspace `ws` (no previews: the contents come from [`load`]).
pub async fn compare(
    transport: &dyn Transport,
    ws: &str,
    from: DiffRef,
    to: DiffRef,
    paths: Option<Vec<String>>,
) -> Result<Diff, SupabashError> {
    let request = rq::Diff {
        workspace_id: ws.to_owned(),
        from_ref: from,
        to_ref: to,
        paths,
        preview_bytes: Some(0),
        staged: None,
        delegated_grant: None,
    };
    supabash::transport::call(transport, &request).await
}

/// The content of `path` at `revision` (`None`: the empty side before the first commit).
async fn side(
    transport: &dyn Transport,
    ws: &str,
    path: &str,
    revision: Option<&str>,
) -> Result<Side, SupabashError> {
    let Some(revision) = revision else {
        return Ok(Side::Absent);
    };
    match read(transport, ws, path, Some(revision)).await {
        Ok(bytes) => Ok(String::from_utf8(bytes).map_or(Side::Binary, Side::Text)),
        Err(e) if e.code() == ErrorCode::Redacted => Ok(Side::Redacted),
        Err(e) => Err(e),
    }
}

/// Loads both sides of every entry of `diff` (one document read per changed side; none for
/// binary files and pure renames).
pub async fn load(
    transport: &dyn Transport,
    ws: &str,
    diff: &Diff,
) -> Result<Vec<FileDiff>, SupabashError> {
    let (from, to) = (diff.from.as_deref(), diff.to.as_deref());
    let mut out = Vec::with_capacity(diff.entries.len());
    for e in &diff.entries {
        let mut f = FileDiff {
            entry: e.clone(),
            before: Side::Absent,
            after: Side::Absent,
        };
        if e.binary {
            f.before = if e.kind == DiffKind::Added {
                Side::Absent
            } else {
                Side::Binary
            };
            f.after = if e.kind == DiffKind::Deleted {
                Side::Absent
            } else {
                Side::Binary
            };
        } else if !f.pure_rename() && !f.mode_only() && !f.directory() {
            if e.kind != DiffKind::Added {
                f.before = side(transport, ws, f.old_path(), from).await?;
            }
            if e.kind != DiffKind::Deleted {
                f.after = side(transport, ws, &e.path, to).await?;
            }
        }
        out.push(f);
    }
    Ok(out)
}

/// `/notes/a.md` as diff headers name it: `notes/a.md`.
fn rel(path: &str) -> &str {
    path.strip_prefix('/').unwrap_or(path)
}

/// The unified diff of `files`, git's layout.
pub fn unified(files: &[FileDiff], color: bool) -> String {
    unified_within(files, color, None)
}

/// [`unified`], where each file's diff may take `timeout` at most: past it the differ stops
/// looking for the smallest diff and answers a larger one, still correct (the viewer bounds
/// its answers so; the command line waits for the smallest).
pub fn unified_within(files: &[FileDiff], color: bool, timeout: Option<Duration>) -> String {
    let paint = Paint(color);
    let mut out = String::new();
    for f in files {
        let (old, new) = (rel(f.old_path()), rel(&f.entry.path));
        out.push_str(&paint.header(&format!("diff --git a/{old} b/{new}")));
        out.push('\n');
        let mut header = |line: String| {
            out.push_str(&paint.header(&line));
            out.push('\n');
        };
        let (old_mode, new_mode) = f.modes();
        let changed_mode = old_mode.is_some() && new_mode.is_some() && old_mode != new_mode;
        if changed_mode && f.entry.kind != DiffKind::Added && f.entry.kind != DiffKind::Deleted {
            header(format!("old mode {}", old_mode.clone().unwrap_or_default()));
            header(format!("new mode {}", new_mode.clone().unwrap_or_default()));
        }
        match f.entry.kind {
            DiffKind::Added => header(match &new_mode {
                Some(m) => format!("new file mode {m}"),
                None => "new file".into(),
            }),
            DiffKind::Deleted => header(match &old_mode {
                Some(m) => format!("deleted file mode {m}"),
                None => "deleted file".into(),
            }),
            DiffKind::Moved => {
                if f.pure_rename() {
                    header("similarity index 100%".into());
                }
                header(format!("rename from {old}"));
                header(format!("rename to {new}"));
            }
            DiffKind::Modified => {}
        }
        if f.pure_rename() || f.mode_only() || f.directory() {
            continue;
        }
        let a = if f.before == Side::Absent {
            "/dev/null".to_owned()
        } else {
            format!("a/{old}")
        };
        let b = if f.after == Side::Absent {
            "/dev/null".to_owned()
        } else {
            format!("b/{new}")
        };
        if f.is_binary() {
            out.push_str(&format!("Binary files {a} and {b} differ\n"));
            continue;
        }
        if !f.is_text() {
            out.push_str("a redacted version: its content is gone\n");
            continue;
        }
        header(format!("--- {a}"));
        header(format!("+++ {b}"));
        let mut config = TextDiff::configure();
        if let Some(t) = timeout {
            config.timeout(t);
        }
        let diff = config.diff_lines(f.before.text(), f.after.text());
        for hunk in diff.unified_diff().context_radius(3).iter_hunks() {
            out.push_str(&paint.hunk(&hunk.header().to_string()));
            out.push('\n');
            for change in hunk.iter_changes() {
                let line = format!("{}{}", change.tag(), change.value().trim_end_matches('\n'));
                out.push_str(&match change.tag() {
                    ChangeTag::Delete => paint.deleted(&line),
                    ChangeTag::Insert => paint.added(&line),
                    ChangeTag::Equal => line,
                });
                out.push('\n');
                if change.missing_newline() {
                    out.push_str("\\ No newline at end of file\n");
                }
            }
        }
    }
    out
}

/// One file of a `--stat`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileStat {
    pub kind: DiffKind,
    pub path: String,
    /// For a move: where it came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    pub insertions: usize,
    pub deletions: usize,
    pub binary: bool,
}

/// What `diff --stat --json` prints.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DiffStat {
    pub from: Option<String>,
    pub to: Option<String>,
    pub files: Vec<FileStat>,
    pub insertions: usize,
    pub deletions: usize,
}

/// The per-file counts of `files`.
pub fn stat(diff: &Diff, files: &[FileDiff]) -> DiffStat {
    let files: Vec<FileStat> = files
        .iter()
        .map(|f| {
            let (insertions, deletions) = f.counts();
            FileStat {
                kind: f.entry.kind,
                path: f.entry.path.clone(),
                from: f.entry.from.clone(),
                insertions,
                deletions,
                binary: f.is_binary(),
            }
        })
        .collect();
    DiffStat {
        from: diff.from.clone(),
        to: diff.to.clone(),
        insertions: files.iter().map(|f| f.insertions).sum(),
        deletions: files.iter().map(|f| f.deletions).sum(),
        files,
    }
}

/// A `--stat` as people read it (git's layout, bars at most 40 wide).
pub fn render_stat(s: &DiffStat, color: bool) -> String {
    let paint = Paint(color);
    let names: Vec<String> = s
        .files
        .iter()
        .map(|f| match &f.from {
            Some(from) => format!("{} => {}", rel(from), rel(&f.path)),
            None => rel(&f.path).to_owned(),
        })
        .collect();
    let width = names.iter().map(|n| n.chars().count()).max().unwrap_or(0);
    let most = s
        .files
        .iter()
        .map(|f| f.insertions + f.deletions)
        .max()
        .unwrap_or(0);
    let scale = |n: usize| {
        if most <= 40 {
            n
        } else {
            (n * 40).div_ceil(most)
        }
    };
    let mut out = String::new();
    for (f, name) in s.files.iter().zip(&names) {
        let counts = if f.binary {
            "Bin".to_owned()
        } else {
            let total = f.insertions + f.deletions;
            format!(
                "{total} {}{}",
                paint.added(&"+".repeat(scale(f.insertions))),
                paint.deleted(&"-".repeat(scale(f.deletions)))
            )
        };
        out.push_str(&format!(" {name:<width$} | {}\n", counts.trim_end()));
    }
    let plural = |n: usize, one: &str, many: &str| {
        if n == 1 {
            one.to_owned()
        } else {
            many.to_owned()
        }
    };
    out.push_str(&format!(
        " {} {} changed, {} {}(+), {} {}(-)\n",
        s.files.len(),
        plural(s.files.len(), "file", "files"),
        s.insertions,
        plural(s.insertions, "insertion", "insertions"),
        s.deletions,
        plural(s.deletions, "deletion", "deletions"),
    ));
    out
}

/// The unified diff between two sides of `ws`, as `supabash diff` prints it.
pub async fn unified_between(
    transport: &dyn Transport,
    ws: &str,
    from: DiffRef,
    to: DiffRef,
    color: bool,
) -> Result<String, SupabashError> {
    let diff = compare(transport, ws, from, to, None).await?;
    Ok(unified(&load(transport, ws, &diff).await?, color))
}

/// Arguments of `supabash diff`.
#[derive(Debug, clap::Args)]
pub struct DiffArgs {
    #[command(flatten)]
    pub target: Target,
    /// The old side (head, an id, a position or an id prefix).
    pub from: String,
    /// The new side (default: the head).
    #[arg(default_value = "head")]
    pub to: String,
    /// Only these paths and what lies below them (repeatable).
    #[arg(long = "path", value_name = "PATH")]
    pub paths: Vec<String>,
    /// Per-file counts of inserted and deleted lines instead of the diff.
    #[arg(long)]
    pub stat: bool,
    /// When to colour.
    #[arg(long, value_enum, default_value_t, value_name = "WHEN")]
    pub color: ColorChoice,
    /// Print JSON: the contract's diff ({"from","to","entries"}), or with --stat the counts.
    #[arg(long)]
    pub json: bool,
}

async fn diff_ref(transport: &dyn Transport, ws: &str, rev: &str) -> Result<DiffRef, BoxError> {
    if rev.eq_ignore_ascii_case("head") {
        return Ok(DiffRef::Head);
    }
    Ok(DiffRef::Revision(resolve(transport, ws, rev).await?.id))
}

/// `supabash diff A [B]`.
pub async fn run(args: DiffArgs) -> Result<(), BoxError> {
    let (transport, ws) = args.target.open().await?;
    let t = transport.as_ref();
    let from = diff_ref(t, &ws, &args.from).await?;
    let to = diff_ref(t, &ws, &args.to).await?;
    let paths = (!args.paths.is_empty()).then(|| args.paths.clone());
    let diff = compare(t, &ws, from, to, paths).await?;
    if args.json && !args.stat {
        return output::json(&diff);
    }
    let files = load(t, &ws, &diff).await?;
    let color = args.color.enabled();
    if args.stat {
        let s = stat(&diff, &files);
        if args.json {
            return output::json(&s);
        }
        print!("{}", render_stat(&s, color));
    } else {
        print!("{}", unified(&files, color));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(kind: DiffKind, path: &str, from: Option<&str>, same: bool) -> DiffEntry {
        DiffEntry {
            kind,
            path: path.into(),
            from: from.map(Into::into),
            before_hash: Some("h1".into()),
            after_hash: Some(if same { "h1" } else { "h2" }.into()),
            preview: None,
            binary: false,
            before_mode: None,
            after_mode: None,
            before_kind: None,
            after_kind: None,
        }
    }

    fn text(s: &str) -> Side {
        Side::Text(s.into())
    }

    #[test]
    fn mode_changes_and_links_print_as_git_does() {
        let mut chmod = entry(DiffKind::Modified, "/run.sh", None, true);
        (chmod.before_mode, chmod.after_mode) = (Some(0o644), Some(0o755));
        let mut link = entry(DiffKind::Added, "/l", None, false);
        (link.after_mode, link.after_kind) = (Some(0o777), Some(Kind::Symlink));
        let files = vec![
            FileDiff {
                entry: chmod,
                before: Side::Absent,
                after: Side::Absent,
            },
            FileDiff {
                entry: link,
                before: Side::Absent,
                after: text("run.sh"),
            },
        ];
        assert_eq!(
            unified(&files, false),
            "diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n\
             diff --git a/l b/l\nnew file mode 120000\n--- /dev/null\n+++ b/l\n@@ -0,0 +1 @@\n+run.sh\n\\ No newline at end of file\n"
        );
    }

    #[test]
    fn renames_show_as_renames_and_edits_as_hunks() {
        let files = vec![
            FileDiff {
                entry: entry(DiffKind::Moved, "/b.md", Some("/a.md"), true),
                before: Side::Absent,
                after: Side::Absent,
            },
            FileDiff {
                entry: entry(DiffKind::Modified, "/c.md", None, false),
                before: text("one\ntwo\n"),
                after: text("one\n2\n"),
            },
            FileDiff {
                entry: entry(DiffKind::Added, "/d.md", None, false),
                before: Side::Absent,
                after: text("new"),
            },
        ];
        let out = unified(&files, false);
        assert_eq!(
            out,
            "diff --git a/a.md b/b.md\nsimilarity index 100%\nrename from a.md\nrename to b.md\n\
             diff --git a/c.md b/c.md\n--- a/c.md\n+++ b/c.md\n@@ -1,2 +1,2 @@\n one\n-two\n+2\n\
             diff --git a/d.md b/d.md\nnew file\n--- /dev/null\n+++ b/d.md\n@@ -0,0 +1 @@\n+new\n\\ No newline at end of file\n"
        );
        assert!(unified(&files, true).contains("\x1b[31m-two\x1b[0m"));
        let diff = Diff {
            from: Some("r1".into()),
            to: Some("r2".into()),
            entries: vec![],
        };
        let s = stat(&diff, &files);
        assert_eq!((s.insertions, s.deletions), (2, 1));
        assert_eq!(
            render_stat(&s, false),
            " a.md => b.md | 0\n c.md         | 2 +-\n d.md         | 1 +\n 3 files changed, 2 insertions(+), 1 deletion(-)\n"
        );
    }

    #[test]
    fn binary_and_redacted_sides_are_named_not_shown() {
        let mut bin = entry(DiffKind::Modified, "/x.png", None, false);
        bin.binary = true;
        let files = vec![
            FileDiff {
                entry: bin,
                before: Side::Binary,
                after: Side::Binary,
            },
            FileDiff {
                entry: entry(DiffKind::Modified, "/.env", None, false),
                before: Side::Redacted,
                after: text("ok\n"),
            },
        ];
        let out = unified(&files, false);
        assert!(
            out.contains("Binary files a/x.png and b/x.png differ\n"),
            "{out}"
        );
        assert!(out.contains("a redacted version"), "{out}");
        let s = stat(
            &Diff {
                from: None,
                to: None,
                entries: vec![],
            },
            &files,
        );
        assert!(s.files[0].binary && s.insertions == 0);
    }
}

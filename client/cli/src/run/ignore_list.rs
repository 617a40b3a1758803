//! Ignore lists for `run`, `import` and `mount` commits (gitignore syntax, through the `ignore`
//! crate): the `.supabashignore` at the root of the directory synced (of the staged tree, for
//! a mount), plus `--exclude PATTERN` and the
//! opt-in `--exclude-preset build` (`target/`, `node_modules/`, `.venv/`). Nothing is ignored
//! by default. What a list leaves out is reported as ignored (reason `excluded`), neither
//! staged nor deleted.

use crate::flags::{ExcludeFlags, Preset};
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use std::path::Path;
use std::sync::Arc;
use supabash::disk::Exclude;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The file at the root of a synced directory whose patterns leave paths out.
pub const IGNORE_FILE: &str = ".supabashignore";

/// The same file at the root of a staged tree.
pub const TREE_IGNORE_FILE: &str = "/.supabashignore";

/// The patterns of `--exclude-preset build`: build output and environments.
pub const BUILD_PRESET: &[&str] = &["target/", "node_modules/", ".venv/"];

/// A compiled ignore list.
struct IgnoreList(Gitignore);

impl Exclude for IgnoreList {
    fn excluded(&self, p: &str, is_dir: bool) -> bool {
        let relative = p.trim_start_matches('/');
        !relative.is_empty() && self.0.matched(relative, is_dir).is_ignore()
    }
}

/// The ignore list for directory `root`: its `.supabashignore` (when it is a regular file)
/// and the flags' patterns; `None` when there is none. A pattern that does not parse is an
/// error naming it.
pub fn load(root: &Path, flags: &ExcludeFlags) -> Result<Option<Arc<dyn Exclude>>, BoxError> {
    let file = root.join(IGNORE_FILE);
    let text = if std::fs::symlink_metadata(&file).is_ok_and(|m| m.file_type().is_file()) {
        Some(std::fs::read_to_string(&file).map_err(|e| format!("{IGNORE_FILE}: {e}"))?)
    } else {
        None
    };
    build(text.as_deref(), flags)
}

/// The ignore list of a `.supabashignore` holding `file` (if any) and the flags' patterns;
/// `None` when there is none.
pub fn build(
    file: Option<&str>,
    flags: &ExcludeFlags,
) -> Result<Option<Arc<dyn Exclude>>, BoxError> {
    let mut builder = GitignoreBuilder::new("/");
    let mut any = false;
    for line in file.unwrap_or_default().lines() {
        builder
            .add_line(None, line)
            .map_err(|e| format!("{IGNORE_FILE}: {line:?}: {e}"))?;
        any = true;
    }
    let preset = match flags.exclude_preset {
        Some(Preset::Build) => BUILD_PRESET,
        None => &[],
    };
    for pattern in flags
        .exclude
        .iter()
        .map(String::as_str)
        .chain(preset.iter().copied())
    {
        builder
            .add_line(None, pattern)
            .map_err(|e| format!("--exclude {pattern:?}: {e}"))?;
        any = true;
    }
    if !any {
        return Ok(None);
    }
    let list = builder.build().map_err(|e| format!("ignore list: {e}"))?;
    Ok(Some(Arc::new(IgnoreList(list))))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(patterns: &[&str], preset: bool) -> ExcludeFlags {
        ExcludeFlags {
            exclude: patterns.iter().map(|p| p.to_string()).collect(),
            exclude_preset: preset.then_some(Preset::Build),
        }
    }

    #[test]
    fn patterns_follow_gitignore_rules() {
        let root = std::env::temp_dir().join(format!("supabash-ignore-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join(IGNORE_FILE), "*.log\n!keep.log\n/build/\n").unwrap();
        let list = load(&root, &flags(&["docs/**/*.tmp"], true))
            .unwrap()
            .unwrap();
        assert!(list.excluded("/a.log", false));
        assert!(list.excluded("/deep/b.log", false));
        assert!(!list.excluded("/keep.log", false));
        assert!(list.excluded("/build", true));
        assert!(!list.excluded("/src/build", true), "anchored to the root");
        assert!(!list.excluded("/build", false), "a directory pattern");
        assert!(list.excluded("/docs/x/y.tmp", false));
        assert!(list.excluded("/target", true) && list.excluded("/app/node_modules", true));
        assert!(list.excluded("/.venv", true));
        assert!(!list.excluded("/src/main.rs", false));
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn nothing_is_ignored_by_default() {
        let root = std::env::temp_dir().join(format!("supabash-ignore-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&root).unwrap();
        assert!(load(&root, &flags(&[], false)).unwrap().is_none());
        // A tree's file alone makes a list.
        let list = build(Some("# comment\n*.o\n"), &flags(&[], false))
            .unwrap()
            .unwrap();
        assert!(list.excluded("/x.o", false) && !list.excluded("/x.c", false));
        std::fs::remove_dir_all(&root).unwrap();
    }
}

//! A view: a subtree of an [`AgentFs`] presented as `/`, with configured paths hidden. Hidden
//! paths read as absent (`ENOENT`) and every change to them is refused (`EACCES`, which is
//! `POLICY_DENIED`); operations on a directory
//! holding a hidden path are refused with `EACCES`, so nothing hidden is listed, copied, moved
//! or removed. Links cannot be created through a view, and a path whose links resolve outside
//! the view or into a hidden path is refused: every operation, `readlink` and `lstat`
//! included, resolves its path as the kernel does (`supabash_core::links`), whether what the
//! links lead to exists or not, so a write through a dangling link into a hidden path is
//! refused too. Errors name visible paths.

use super::paths::{below, canon, err, join, rename_error};
use super::AgentFs;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::SystemTime;
use supabash::tree::{DirEntry, Errno, FsError, FsResult, Stat};
use supabash_core::links::{self, Absolute, LinkError};

/// A subtree of another filesystem, presented as `/`, minus hidden paths.
pub struct View {
    inner: Arc<dyn AgentFs>,
    root: String,
    hidden: Vec<String>,
}

impl View {
    /// A view of `inner` rooted at `root` (a path of `inner`) hiding `hidden` (paths as the
    /// view shows them, e.g. `/.internal`).
    pub fn new(inner: Arc<dyn AgentFs>, root: &str, hidden: &[&str]) -> FsResult<Self> {
        let root = canon(root)?;
        let mut hide = Vec::new();
        for h in hidden {
            let h = canon(h)?;
            if h == "/" {
                return Err(err(Errno::EINVAL, "view", "/"));
            }
            hide.push(h);
        }
        hide.sort();
        hide.dedup();
        Ok(View {
            inner,
            root,
            hidden: hide,
        })
    }

    /// The path of `inner` shown as `/`.
    pub fn root(&self) -> &str {
        &self.root
    }

    /// The hidden paths, as the view shows them.
    pub fn hidden(&self) -> &[String] {
        &self.hidden
    }

    /// The path of `inner` behind a visible path; `None` when it is invalid or hidden.
    pub fn to_inner(&self, visible: &str) -> Option<String> {
        let v = canon(visible).ok()?;
        (!self.is_hidden(&v)).then(|| join(&self.root, &v))
    }

    /// The visible path of a path of `inner`; `None` when it lies outside the root or is hidden.
    pub fn to_visible(&self, inner: &str) -> Option<String> {
        let v = below(&canon(inner).ok()?, &self.root)?;
        (!self.is_hidden(&v)).then_some(v)
    }

    fn is_hidden(&self, v: &str) -> bool {
        self.hidden.iter().any(|h| below(v, h).is_some())
    }

    /// True when a hidden path lies strictly below `v`.
    fn hides_below(&self, v: &str) -> bool {
        self.hidden.iter().any(|h| h != v && below(h, v).is_some())
    }

    fn out(&self, e: FsError) -> FsError {
        rename_error(e, |p| below(p, &self.root))
    }

    /// Checks that `inner_path`, resolved as the kernel resolves it (every link on the way,
    /// the last one too when `follow_last`, whether what it leads to exists or not), and every
    /// link followed on the way, stay inside the view and out of hidden paths: `EACCES`
    /// otherwise (`ELOOP` for a loop).
    async fn guard(
        &self,
        inner_path: &str,
        op: &'static str,
        visible: &str,
        follow_last: bool,
    ) -> FsResult<()> {
        let visible_here = |p: &str| below(p, &self.root).is_some_and(|v| !self.is_hidden(&v));
        match self.resolve(inner_path, follow_last).await {
            Err(LinkError::TooManyLinks) => Err(err(Errno::ELOOP, op, visible)),
            Err(_) => Err(err(Errno::EACCES, op, visible)),
            Ok((real, followed))
                if visible_here(&real) && followed.iter().all(|l| visible_here(l)) =>
            {
                Ok(())
            }
            Ok(_) => Err(err(Errno::EACCES, op, visible)),
        }
    }

    /// Resolves `inner_path` in the inner filesystem with `supabash_core::links` (absolute
    /// targets from its root, as the staged tree reads them), asking the inner filesystem
    /// which paths are links as the walk meets them; answers the path and the links followed.
    async fn resolve(
        &self,
        inner_path: &str,
        follow_last: bool,
    ) -> Result<(String, Vec<String>), LinkError> {
        let mut known: HashMap<String, Option<String>> = HashMap::new();
        loop {
            let (mut missing, mut followed) = (Vec::new(), Vec::new());
            let resolved =
                links::resolve(
                    inner_path,
                    follow_last,
                    Absolute::FromRoot,
                    |q| match known.get(q) {
                        Some(t) => {
                            if t.is_some() {
                                followed.push(q.to_owned());
                            }
                            t.clone()
                        }
                        None => {
                            missing.push(q.to_owned());
                            None
                        }
                    },
                );
            // Every pass learns at least one path the walk meets: it ends.
            if missing.is_empty() {
                return resolved.map(|p| (p, followed));
            }
            for q in missing {
                let target = self.inner.readlink(&q).await.ok();
                known.insert(q, target);
            }
        }
    }

    /// The inner path for reading `p` (hidden: `ENOENT`).
    async fn reading(&self, p: &str, op: &'static str) -> FsResult<String> {
        let v = canon(p)?;
        if self.is_hidden(&v) {
            return Err(err(Errno::ENOENT, op, &v));
        }
        let inner = join(&self.root, &v);
        self.guard(&inner, op, &v, true).await?;
        Ok(inner)
    }

    /// The inner path for changing `p` (hidden, or holding hidden paths: `EACCES`).
    async fn changing(&self, p: &str, op: &'static str) -> FsResult<String> {
        let v = canon(p)?;
        if self.is_hidden(&v) || self.hides_below(&v) {
            return Err(err(Errno::EACCES, op, &v));
        }
        let inner = join(&self.root, &v);
        self.guard(&inner, op, &v, true).await?;
        Ok(inner)
    }

    /// Like [`Self::changing`], and the view's root itself is refused too.
    async fn replacing(&self, p: &str, op: &'static str) -> FsResult<String> {
        let inner = self.changing(p, op).await?;
        if inner == self.root {
            return Err(err(Errno::EACCES, op, "/"));
        }
        Ok(inner)
    }
}

#[async_trait::async_trait]
impl AgentFs for View {
    async fn read(&self, p: &str) -> FsResult<Vec<u8>> {
        let i = self.reading(p, "open").await?;
        self.inner.read(&i).await.map_err(|e| self.out(e))
    }
    async fn write(&self, p: &str, data: Vec<u8>) -> FsResult<()> {
        let i = self.changing(p, "open").await?;
        self.inner.write(&i, data).await.map_err(|e| self.out(e))
    }
    async fn append(&self, p: &str, data: Vec<u8>) -> FsResult<()> {
        let i = self.changing(p, "open").await?;
        self.inner.append(&i, data).await.map_err(|e| self.out(e))
    }
    async fn exists(&self, p: &str) -> bool {
        match self.reading(p, "access").await {
            Ok(i) => self.inner.exists(&i).await,
            Err(_) => false,
        }
    }
    async fn stat(&self, p: &str) -> FsResult<Stat> {
        let i = self.reading(p, "stat").await?;
        self.inner.stat(&i).await.map_err(|e| self.out(e))
    }
    async fn lstat(&self, p: &str) -> FsResult<Stat> {
        let v = canon(p)?;
        if self.is_hidden(&v) {
            return Err(err(Errno::ENOENT, "lstat", &v));
        }
        let i = join(&self.root, &v);
        self.guard(&i, "lstat", &v, false).await?;
        self.inner.lstat(&i).await.map_err(|e| self.out(e))
    }
    async fn mkdir(&self, p: &str, recursive: bool) -> FsResult<()> {
        let i = self.changing(p, "mkdir").await?;
        self.inner
            .mkdir(&i, recursive)
            .await
            .map_err(|e| self.out(e))
    }
    async fn readdir(&self, p: &str) -> FsResult<Vec<DirEntry>> {
        let v = canon(p)?;
        let i = self.reading(&v, "scandir").await?;
        let entries = self.inner.readdir(&i).await.map_err(|e| self.out(e))?;
        Ok(entries
            .into_iter()
            .filter(|e| !self.is_hidden(&join(&v, &format!("/{}", e.name))))
            .collect())
    }
    async fn rm(&self, p: &str, recursive: bool, force: bool) -> FsResult<()> {
        let i = self.replacing(p, "rm").await?;
        self.inner
            .rm(&i, recursive, force)
            .await
            .map_err(|e| self.out(e))
    }
    async fn cp(&self, src: &str, dst: &str, recursive: bool) -> FsResult<()> {
        let s = self.reading(src, "cp").await?;
        let vs = canon(src)?;
        if self.hides_below(&vs) {
            return Err(err(Errno::EACCES, "cp", &vs));
        }
        let d = self.replacing(dst, "cp").await?;
        self.inner
            .cp(&s, &d, recursive)
            .await
            .map_err(|e| self.out(e))
    }
    async fn mv(&self, src: &str, dst: &str) -> FsResult<()> {
        let s = self.replacing(src, "rename").await?;
        let d = self.replacing(dst, "rename").await?;
        self.inner.mv(&s, &d).await.map_err(|e| self.out(e))
    }
    async fn chmod(&self, p: &str, mode: u32) -> FsResult<()> {
        let i = self.changing(p, "chmod").await?;
        self.inner.chmod(&i, mode).await.map_err(|e| self.out(e))
    }
    async fn utimes(&self, p: &str, mtime: SystemTime) -> FsResult<()> {
        let i = self.changing(p, "utime").await?;
        self.inner.utimes(&i, mtime).await.map_err(|e| self.out(e))
    }
    async fn symlink(&self, _target: &str, link: &str) -> FsResult<()> {
        Err(err(Errno::EACCES, "symlink", &canon(link)?))
    }
    async fn readlink(&self, p: &str) -> FsResult<String> {
        let v = canon(p)?;
        if self.is_hidden(&v) {
            return Err(err(Errno::ENOENT, "readlink", &v));
        }
        let i = join(&self.root, &v);
        self.guard(&i, "readlink", &v, false).await?;
        self.inner.readlink(&i).await.map_err(|e| self.out(e))
    }
    async fn realpath(&self, p: &str) -> FsResult<String> {
        let i = self.reading(p, "realpath").await?;
        let real = self.inner.realpath(&i).await.map_err(|e| self.out(e))?;
        self.to_visible(&real)
            .ok_or_else(|| err(Errno::EACCES, "realpath", p))
    }
    fn check_writable(&self, p: &str) -> FsResult<()> {
        let v = canon(p)?;
        if self.is_hidden(&v) || self.hides_below(&v) {
            return Err(err(Errno::EACCES, "open", &v));
        }
        self.inner
            .check_writable(&join(&self.root, &v))
            .map_err(|e| self.out(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use supabash::tree::StagedTree;
    use supabash::{ErrorCode, Limits};
    use supabash_core::path;

    async fn fixture() -> (Arc<StagedTree>, View) {
        let tree = Arc::new(StagedTree::empty(Limits::default()));
        for (p, t) in [
            ("/ws/a.md", "a"),
            ("/ws/.internal/secret", "s"),
            ("/ws/docs/b.md", "b"),
            ("/outside", "o"),
        ] {
            tree.mkdir(path::parent(p), true).await.unwrap();
            tree.write(p, t).await.unwrap();
        }
        let view = View::new(tree.clone(), "/ws", &["/.internal"]).unwrap();
        (tree, view)
    }

    #[tokio::test]
    async fn a_view_shows_its_subtree_as_root_and_hides_paths() {
        let (tree, view) = fixture().await;
        assert_eq!(view.read("/a.md").await.unwrap(), b"a");
        let entries = view.readdir("/").await.unwrap();
        let names: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["a.md", "docs"]);
        let e = view.read("/.internal/secret").await.unwrap_err();
        assert_eq!(e.errno(), Some(Errno::ENOENT));
        let e = view
            .write("/.internal/new", b"x".to_vec())
            .await
            .unwrap_err();
        assert_eq!(e.code(), ErrorCode::PolicyDenied);
        assert!(view.read("/../outside").await.is_err());
        view.write("/c.md", b"c".to_vec()).await.unwrap();
        assert_eq!(tree.read("/ws/c.md").await.unwrap(), b"c");
        let e = view.read("/nope").await.unwrap_err();
        assert_eq!(
            e.to_string(),
            "ENOENT: no such file or directory, open '/nope'"
        );
    }

    #[tokio::test]
    async fn directory_operations_never_touch_hidden_paths() {
        let (tree, view) = fixture().await;
        for e in [
            view.rm("/", true, false).await.unwrap_err(),
            view.mv("/", "/x").await.unwrap_err(),
            view.cp("/", "/copy", true).await.unwrap_err(),
            view.symlink("/a.md", "/l").await.unwrap_err(),
        ] {
            assert_eq!(e.code(), ErrorCode::PolicyDenied, "{e}");
        }
        assert!(tree.exists("/ws/.internal/secret").await);
        tree.symlink("/outside", "/ws/escape").await.unwrap();
        let e = view.read("/escape").await.unwrap_err();
        assert_eq!(e.errno(), Some(Errno::EACCES));
    }

    /// Issue 36, item 4: a dangling link into a hidden path is no way in, for writes or for
    /// `readlink`.
    #[tokio::test]
    async fn links_into_hidden_paths_are_refused_dangling_or_not() {
        let (tree, view) = fixture().await;
        tree.symlink(".internal/planted.txt", "/ws/notes")
            .await
            .unwrap();
        tree.symlink(".internal", "/ws/d").await.unwrap();
        tree.symlink("tok-abc123", "/ws/.internal/l").await.unwrap();
        for e in [
            view.write("/notes", b"x".to_vec()).await.unwrap_err(),
            view.append("/notes", b"x".to_vec()).await.unwrap_err(),
            view.readlink("/d/l").await.unwrap_err(),
            view.lstat("/d/l").await.unwrap_err(),
            view.read("/d/secret").await.unwrap_err(),
            view.write("/d/new", b"x".to_vec()).await.unwrap_err(),
        ] {
            assert_eq!(e.code(), ErrorCode::PolicyDenied, "{e}");
        }
        assert!(!tree.exists("/ws/.internal/planted.txt").await);
        assert!(!tree.exists("/ws/.internal/new").await);
        // A visible link's own target is its content; links inside the view still work.
        assert_eq!(
            view.readlink("/notes").await.unwrap(),
            ".internal/planted.txt"
        );
        tree.symlink("docs/b.md", "/ws/b").await.unwrap();
        assert_eq!(view.read("/b").await.unwrap(), b"b");
        tree.symlink("docs/new.md", "/ws/n").await.unwrap();
        view.write("/n", b"n".to_vec()).await.unwrap();
        assert_eq!(tree.read("/ws/docs/new.md").await.unwrap(), b"n");
        // A loop is ELOOP.
        tree.symlink("l2", "/ws/l1").await.unwrap();
        let e = view.read("/l1").await.unwrap_err();
        assert!(
            e.errno().is_some() || e.code() == ErrorCode::PolicyDenied,
            "{e}"
        );
    }

    #[test]
    fn translation_goes_both_ways() {
        let tree = Arc::new(StagedTree::empty(Limits::default()));
        let view = View::new(tree, "/ws", &["/.internal"]).unwrap();
        assert_eq!(view.to_inner("/a/b").as_deref(), Some("/ws/a/b"));
        assert_eq!(view.to_inner("/").as_deref(), Some("/ws"));
        assert_eq!(view.to_visible("/ws/a/b").as_deref(), Some("/a/b"));
        assert_eq!(view.to_visible("/ws").as_deref(), Some("/"));
        assert_eq!(view.to_inner("/.internal/x"), None);
        assert_eq!(view.to_visible("/ws/.internal"), None);
        assert_eq!(view.to_visible("/other"), None);
    }
}

//! The mount over an in-memory staged tree (no database): what real tools do on it. The
//! end-to-end tests with a cluster and the `supabash` binary are in `tests/tests/mount.rs`.

use crate::fuse::{start, unmount};
use crate::fuse_fs::MountFs;
use crate::fuse_ops::Kernel;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use supabash::{Limits, StagedTree};

struct Mounted {
    dir: PathBuf,
    tree: Arc<StagedTree>,
    done: Option<tokio::sync::oneshot::Receiver<std::io::Result<()>>>,
}

impl Mounted {
    fn new(read_only: bool) -> Option<Mounted> {
        if !Path::new("/dev/fuse").exists() {
            eprintln!("SKIPPED: /dev/fuse is missing, the mount tests need FUSE");
            return None;
        }
        let dir = std::env::temp_dir().join(format!("supabash-fuse-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let tree = Arc::new(StagedTree::empty(Limits::default().with_max_files(50_000)));
        let fs = Arc::new(MountFs::new(tree.clone(), read_only, (0, 0)));
        let kernel = Kernel {
            fs,
            runtime: tokio::runtime::Handle::current(),
        };
        let done = start(kernel, &dir, read_only).unwrap();
        Some(Mounted {
            dir,
            tree,
            done: Some(done),
        })
    }

    fn sh(&self, script: &str) -> String {
        let out = Command::new("sh")
            .arg("-c")
            .arg(script)
            .current_dir(&self.dir)
            .env("HOME", &self.dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{script}\nstdout: {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn fails(&self, script: &str) -> String {
        let out = Command::new("sh")
            .arg("-c")
            .arg(script)
            .current_dir(&self.dir)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{script} succeeded");
        String::from_utf8_lossy(&out.stderr).into_owned()
    }

    async fn unmount(mut self) {
        // The kernel releases the last handles of exited processes asynchronously.
        let mut tries = 0;
        while let Err(e) = unmount(&self.dir) {
            tries += 1;
            assert!(tries < 50, "unmount: {e}");
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        if let Some(done) = self.done.take() {
            done.await.unwrap().unwrap();
        }
        let _ = std::fs::remove_dir(&self.dir);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_work_and_every_change_reaches_the_tree() {
    let Some(m) = Mounted::new(false) else { return };
    let dir = m.dir.display().to_string();
    let m = tokio::task::spawn_blocking(move || {
        m.sh("mkdir -p a/b && printf hello > a/b/f.txt && cat a/b/f.txt");
        assert_eq!(m.sh("cat a/b/f.txt"), "hello");
        m.sh("printf ' world' >> a/b/f.txt");
        assert_eq!(m.sh("cat a/b/f.txt"), "hello world");
        m.sh("mv a/b/f.txt a/g.txt && test ! -e a/b/f.txt");
        m.sh("truncate -s 5 a/g.txt");
        assert_eq!(m.sh("cat a/g.txt"), "hello");
        m.sh("chmod 755 a/g.txt && test -x a/g.txt");
        m.sh("ln -s g.txt a/link && test \"$(readlink a/link)\" = g.txt && cat a/link >/dev/null");
        let err = m.fails("ln -s /etc/passwd escape");
        assert!(err.contains("not permitted"), "{err}");
        let err = m.fails("ln a/g.txt hard");
        assert!(err.contains("not permitted"), "{err}");
        let err = m.fails("mkdir .supabash");
        assert!(err.contains("ermission denied"), "{err}");
        m.fails("ls .supabash");
        m.sh("rmdir a/b && mkdir c && rm -r c");
        m.sh("python3 -c \"import os\nopen('t.tmp','w').write('x'*100000)\nos.replace('t.tmp','t.txt')\"");
        m.sh("git init -q && git add -A && git -c user.email=a@b -c user.name=n commit -qm x && git status --porcelain");
        m
    })
    .await
    .unwrap();
    assert_eq!(m.tree.read("/a/g.txt").await.unwrap(), b"hello");
    assert_eq!(m.tree.read("/t.txt").await.unwrap().len(), 100_000);
    assert!(!m.tree.exists("/t.tmp").await);
    assert_eq!(
        m.tree.readlink("/a/link").await.unwrap(),
        "g.txt",
        "links are entries of the tree"
    );
    assert_eq!(m.tree.stat("/a/g.txt").await.unwrap().mode, 0o755);
    let objects: Vec<String> = m
        .tree
        .changes()
        .unwrap()
        .into_iter()
        .map(|c| c.path)
        .filter(|p| p.starts_with("/.git/objects/"))
        .collect();
    assert!(objects.len() >= 3, "{objects:?} in {dir}");
    m.unmount().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_mount_refuses_writes() {
    let Some(m) = Mounted::new(true) else { return };
    let m = tokio::task::spawn_blocking(move || {
        let err = m.fails("echo x > f");
        assert!(err.contains("Read-only"), "{err}");
        m.fails("mkdir d");
        m
    })
    .await
    .unwrap();
    assert!(m.tree.changes().unwrap().is_empty());
    m.unmount().await;
}

/// A read-only handle opened while no buffer of its file is held is a snapshot: it reads what
/// it opened until the mount changes something, then what the file holds now (a writer's
/// buffer), and still what it opened once the file is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_handle_sees_later_writes_and_outlives_unlink() {
    use crate::fuse_inodes::ROOT;
    let tree = Arc::new(StagedTree::empty(Limits::default()));
    tree.write("/f.txt", b"old".to_vec()).await.unwrap();
    let fs = MountFs::new(tree.clone(), false, (0, 0));
    let name = std::ffi::OsStr::new("f.txt");
    let ino = fs.lookup(ROOT, name).await.unwrap().ino.0;
    let (reader, keep) = fs.open(ino, false, false).await.unwrap();
    assert!(
        !keep,
        "a first open on a writable mount drops the page cache"
    );
    assert_eq!(fs.read(reader, 0, 100).await.unwrap(), b"old");
    let (again, keep) = fs.open(ino, false, false).await.unwrap();
    assert!(keep, "an unchanged file keeps its page cache");
    fs.release(again).await.unwrap();
    let (writer, _) = fs.open(ino, true, false).await.unwrap();
    fs.write(writer, 0, b"new").await.unwrap();
    assert_eq!(
        fs.read(reader, 0, 100).await.unwrap(),
        b"new",
        "the writer's buffer"
    );
    fs.release(writer).await.unwrap();
    assert_eq!(tree.read("/f.txt").await.unwrap(), b"new");
    assert_eq!(fs.read(reader, 0, 100).await.unwrap(), b"new", "the tree's");
    fs.flush(reader).await.unwrap();
    fs.unlink(ROOT, name).await.unwrap();
    assert_eq!(
        fs.read(reader, 0, 100).await.unwrap(),
        b"new",
        "what it opened"
    );
    fs.release(reader).await.unwrap();
    assert_eq!(fs.read(reader, 0, 1).await, Err(fuser::Errno::EBADF));
}

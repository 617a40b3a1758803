//! The mount over an in-memory staged tree (no database): what real tools do on it. The
//! end-to-end tests with a cluster and the `supabash` binary are in `tests/tests/mount.rs`.

use crate::mount::fuse::kernel::Kernel;
use crate::mount::fuse::MountFs;
use crate::mount::{start, unmount};
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
        tokio::spawn(crate::mount::fuse::write_behind(Arc::downgrade(&fs)));
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

/// Waits for what the write-behind promises: every buffer left alone for
/// [`crate::mount::fuse::WRITE_BEHIND`] reaches the tree at its next tick (here, within 5 s
/// however busy the machine), so each of `expected` reads its bytes.
async fn settled(tree: &StagedTree, expected: &[(&str, &[u8])]) {
    for (path, bytes) in expected {
        let mut waited = 0;
        while tree.read(path).await.ok().as_deref() != Some(*bytes) {
            waited += 1;
            assert!(waited < 250, "{path}'s buffer did not reach the tree");
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
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
        // Files have no handles: O_TRUNC comes as a size change, and a file removed or
        // replaced while open still reads (and takes writes) through its descriptor.
        m.sh("printf 'a longer line' > o.txt && printf short > o.txt && test \"$(cat o.txt)\" = short");
        m.sh("printf kept > u.txt && exec 3< u.txt && rm u.txt && test \"$(cat <&3)\" = kept");
        m.sh("printf old > r.txt && exec 4< r.txt && printf new > r2.txt && mv r2.txt r.txt && test \"$(cat <&4)\" = old && test \"$(cat r.txt)\" = new");
        m.sh("python3 -c \"import os\nf=open('w.txt','w+')\nos.unlink('w.txt')\nf.write('x'*10)\nf.flush()\nf.seek(0)\nassert f.read()=='x'*10\"");
        m
    })
    .await
    .unwrap();
    // What the shell wrote reaches the tree on its own once left alone: each buffer when it
    // has been idle for the write-behind's interval, so each is waited for (they go at
    // different times: `/r.txt`'s was written last).
    let t = vec![b'x'; 100_000];
    settled(
        &m.tree,
        &[
            ("/o.txt", b"short"),
            ("/r.txt", b"new"),
            ("/a/g.txt", b"hello"),
            ("/t.txt", &t),
        ],
    )
    .await;
    assert!(!m.tree.exists("/u.txt").await && !m.tree.exists("/w.txt").await);
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

/// Files have no handles: reads and writes go by inode, a write reaches the tree once left
/// alone or at `fsync`, and a file removed or replaced while it may be open keeps its content
/// (and takes writes) until the kernel forgets it, without ever reaching the tree again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_reach_the_tree_when_left_alone_and_removed_files_live_until_forgotten() {
    use crate::mount::fuse::inodes::ROOT;
    use std::ffi::OsStr;
    use std::time::Duration;
    let tree = Arc::new(StagedTree::empty(Limits::default()));
    tree.write("/f.txt", b"old".to_vec()).await.unwrap();
    let fs = MountFs::new(tree.clone(), false, (0, 0));
    let name = OsStr::new("f.txt");
    let ino = fs.lookup(ROOT, name).await.unwrap().ino.0;
    assert_eq!(fs.read(ino, 0, 100).await.unwrap(), b"old");
    fs.write(ino, 0, b"new!").await.unwrap();
    assert_eq!(fs.read(ino, 0, 100).await.unwrap(), b"new!", "the buffer");
    assert_eq!(fs.getattr(ino).await.unwrap().size, 4);
    fs.persist_idle(Duration::from_secs(60)).await;
    assert_eq!(
        tree.read("/f.txt").await.unwrap(),
        b"old",
        "written just now"
    );
    fs.persist_idle(Duration::ZERO).await;
    assert_eq!(tree.read("/f.txt").await.unwrap(), b"new!", "left alone");
    fs.write(ino, 4, b"?").await.unwrap();
    fs.fsync(ino).await.unwrap();
    assert_eq!(tree.read("/f.txt").await.unwrap(), b"new!?", "fsync");
    let before = tree.stat("/f.txt").await.unwrap().mtime;
    fs.fallocate(ino, 0, 2, 0).await.unwrap();
    fs.persist_idle(Duration::ZERO).await;
    let after = tree.stat("/f.txt").await.unwrap().mtime;
    assert_eq!(
        after, before,
        "a change that changed nothing writes nothing"
    );

    fs.write(ino, 0, b"N").await.unwrap();
    fs.unlink(ROOT, name).await.unwrap();
    assert!(!tree.exists("/f.txt").await);
    assert_eq!(fs.read(ino, 0, 100).await.unwrap(), b"New!?");
    fs.write(ino, 5, b"+").await.unwrap();
    assert_eq!(fs.getattr(ino).await.unwrap().size, 6);
    fs.persist_idle(Duration::ZERO).await;
    assert!(
        !tree.exists("/f.txt").await,
        "an orphan stays out of the tree"
    );
    fs.forget(ino).await;
    assert_eq!(fs.read(ino, 0, 1).await, Err(fuser::Errno::ENOENT));

    tree.write("/a", b"A".to_vec()).await.unwrap();
    tree.write("/b", b"B".to_vec()).await.unwrap();
    let a = fs.lookup(ROOT, OsStr::new("a")).await.unwrap().ino.0;
    let b = fs.lookup(ROOT, OsStr::new("b")).await.unwrap().ino.0;
    fs.rename(ROOT, OsStr::new("b"), ROOT, OsStr::new("a"), false)
        .await
        .unwrap();
    assert_eq!(fs.read(a, 0, 9).await.unwrap(), b"A", "the replaced file");
    assert_eq!(fs.read(b, 0, 9).await.unwrap(), b"B");
    assert_eq!(tree.read("/a").await.unwrap(), b"B");
    fs.forget(a).await;
    assert_eq!(fs.read(a, 0, 1).await, Err(fuser::Errno::ENOENT));
}

/// Buffers never hold more than the staged-bytes limit (`ENOSPC` at the write), and one the
/// tree refuses stays readable, fails `fsync` and reaches the tree once room is made.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_buffer_over_the_limits_is_refused_and_kept() {
    use crate::mount::fuse::inodes::ROOT;
    use std::ffi::OsStr;
    use std::time::Duration;
    let tree = Arc::new(StagedTree::empty(
        Limits::default().with_max_staged_bytes(8),
    ));
    let fs = MountFs::new(tree.clone(), false, (0, 0));
    let f1 = fs.create(ROOT, OsStr::new("one"), 0o644, true).await;
    let f2 = fs.create(ROOT, OsStr::new("two"), 0o644, true).await;
    let (f1, f2) = (f1.unwrap().ino.0, f2.unwrap().ino.0);
    fs.write(f1, 0, b"123456").await.unwrap();
    assert_eq!(fs.write(f2, 0, b"123456").await, Err(fuser::Errno::ENOSPC));
    assert_eq!(
        fs.getattr(f2).await.unwrap().size,
        0,
        "a refused write leaves nothing"
    );
    fs.persist_idle(Duration::ZERO).await;
    fs.write(f2, 0, b"abc").await.unwrap();
    assert_eq!(fs.fsync(f2).await, Err(fuser::Errno::ENOSPC), "9 bytes > 8");
    assert_eq!(fs.read(f2, 0, 9).await.unwrap(), b"abc", "kept");
    assert_eq!(tree.read("/two").await.unwrap(), b"");
    fs.setattr(f1, None, Some(0), None).await.unwrap();
    assert_eq!(
        tree.read("/one").await.unwrap(),
        b"",
        "a truncate reaches the tree"
    );
    fs.write(f2, 3, b"d").await.unwrap();
    fs.persist_idle(Duration::ZERO).await;
    assert_eq!(tree.read("/two").await.unwrap(), b"abcd");
}

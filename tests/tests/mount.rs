//! `supabash mount`: the built binary mounts a workspace of a real cluster with FUSE, real tools
//! (git, rustc, python, rsync) run on it, and `supabash commit --mount` from another process
//! commits what they did. Skipped, with a message, only where /dev/fuse is absent.

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};
use supabash::Workspace;
use supabash_tests::client::{cluster, new_user, reopen, workspace_with, Via};

fn fuse_missing() -> bool {
    if Path::new("/dev/fuse").exists() {
        return false;
    }
    eprintln!("SKIPPED: /dev/fuse is absent on this machine; the mount tests need FUSE");
    true
}

fn supabash(user: &str) -> Command {
    let mut c = Command::new(supabash_tests::binary::supabash());
    c.env("SUPABASH_DSN", cluster().dsn("authenticator"))
        .env("SUPABASH_SUB", user);
    c
}

/// A running `supabash mount` process.
struct Mount {
    dir: PathBuf,
    child: Option<Child>,
    stdout: Option<BufReader<std::process::ChildStdout>>,
}

impl Mount {
    /// Mounts `workspace` of `user` with `extra` arguments; waits until it serves. The
    /// workspace comes from SUPABASH_WORKSPACE, as for every command on one workspace.
    fn start(user: &str, workspace: &str, extra: &[&str]) -> Mount {
        let dir = std::env::temp_dir().join(format!("supabash-mount-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut child = supabash(user)
            .arg("mount")
            .arg(&dir)
            .env("SUPABASH_WORKSPACE", workspace)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        stdout.read_line(&mut line).unwrap();
        if !line.starts_with("mounted ") {
            let out = child.wait_with_output().unwrap();
            panic!(
                "the mount did not start: {line}{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Mount {
            dir,
            child: Some(child),
            stdout: Some(stdout),
        }
    }

    /// Runs `script` with sh in the mount; panics with its output unless it succeeds.
    fn sh(&self, script: &str) -> String {
        let out = self.shell(script);
        assert!(
            out.status.success(),
            "{script}\nstdout: {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Runs `script`, which must fail; returns its stderr.
    fn fails(&self, script: &str) -> String {
        let out = self.shell(script);
        assert!(!out.status.success(), "{script} succeeded");
        String::from_utf8_lossy(&out.stderr).into_owned()
    }

    fn shell(&self, script: &str) -> Output {
        Command::new("sh")
            .args(["-c", script])
            .current_dir(&self.dir)
            .env("HOME", std::env::temp_dir())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "agent")
            .env("GIT_AUTHOR_EMAIL", "agent@example.com")
            .env("GIT_COMMITTER_NAME", "agent")
            .env("GIT_COMMITTER_EMAIL", "agent@example.com")
            .output()
            .unwrap()
    }

    /// `supabash commit --mount DIR --json` from another process.
    fn commit(&self, user: &str, message: &str) -> Result<Value, String> {
        let out = supabash(user)
            .args(["commit", "--json", "-m", message, "--mount"])
            .arg(&self.dir)
            .output()
            .unwrap();
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).into_owned());
        }
        Ok(serde_json::from_slice(&out.stdout).unwrap())
    }

    /// `supabash changes --mount DIR --json`.
    fn changes(&self, user: &str) -> Vec<Value> {
        let out = supabash(user)
            .args(["changes", "--json", "--mount"])
            .arg(&self.dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<Value>(&out.stdout)
            .unwrap()
            .as_array()
            .unwrap()
            .clone()
    }

    /// Stops the mount with SIGTERM (a clean unmount) and returns its exit, and its stderr
    /// after what it printed on stdout.
    fn stop(mut self) -> (bool, String) {
        let child = self.child.take().unwrap();
        terminate(&child);
        let mut printed = String::new();
        if let Some(mut stdout) = self.stdout.take() {
            std::io::Read::read_to_string(&mut stdout, &mut printed).unwrap();
        }
        let out = wait(child);
        let _ = std::fs::remove_dir(&self.dir);
        let stderr = String::from_utf8_lossy(&out.stderr);
        (out.status.success(), format!("{printed}{stderr}"))
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        if let Some(child) = self.child.take() {
            terminate(&child);
            let _ = wait(child);
            let _ = Command::new("fusermount3")
                .arg("-u")
                .arg(&self.dir)
                .status();
        }
    }
}

fn terminate(child: &Child) {
    // SAFETY: kill with a pid this test spawned and has not reaped yet.
    #[allow(unsafe_code)]
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
}

fn wait(mut child: Child) -> Output {
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the mount process did not end");
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

async fn seeded(user: &str) -> Workspace {
    workspace_with(
        Via::Postgres,
        user,
        &[("/README.md", "# seed\n"), ("/src/lib.rs", "")],
    )
    .await
}

async fn committed_paths(user: &str, id: &str) -> Vec<String> {
    let ws = reopen(Via::Postgres, user, id).await;
    ws.committed_snapshot()
        .await
        .unwrap()
        .files
        .into_keys()
        .collect()
}

/// Runs blocking tool calls off the async test's threads.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.unwrap()
}

/// Starts a mount of a new user's seeded workspace, runs `body` on it (with the user's id),
/// ends the session without committing, asserts it ended cleanly and answers its stderr.
async fn on_a_seeded_mount(body: impl FnOnce(&Mount, &str) + Send + 'static) -> String {
    let user = new_user();
    let ws = seeded(&user).await;
    let id = ws.id().to_owned();
    let (ok, stderr) = blocking(move || {
        let m = Mount::start(&user, &id, &[]);
        body(&m, &user);
        m.stop()
    })
    .await;
    assert!(ok, "{stderr}");
    stderr
}

#[tokio::test(flavor = "multi_thread")]
async fn git_runs_and_nothing_is_committed_until_asked() {
    if fuse_missing() {
        return;
    }
    let user = new_user();
    let ws = seeded(&user).await;
    let seed = ws.base_revision().unwrap();
    let id = ws.id().to_owned();
    let (mount, staged) = blocking({
        let (user, id) = (user.clone(), id.clone());
        move || {
            let m = Mount::start(&user, &id, &[]);
            assert_eq!(m.sh("cat README.md"), "# seed\n", "base files read lazily");
            m.sh("git init -q && git add -A && git commit -qm x");
            assert_eq!(m.sh("git status --porcelain"), "");
            let staged = m.changes(&user);
            (m, staged)
        }
    })
    .await;
    assert!(staged
        .iter()
        .any(|c| c["path"].as_str().unwrap().starts_with("/.git/objects/")));
    let head = reopen(Via::Postgres, &user, &id).await.base_revision();
    assert_eq!(
        head.as_deref(),
        Some(seed.as_str()),
        "nothing committed without commit"
    );
    let (mount, receipt) = blocking({
        let user = user.clone();
        move || {
            let r = mount.commit(&user, "git init").unwrap();
            (mount, r)
        }
    })
    .await;
    assert_eq!(receipt["receipt"]["cause"], "git init");
    let paths = committed_paths(&user, &id).await;
    let objects = paths
        .iter()
        .filter(|p| p.starts_with("/.git/objects/"))
        .count();
    assert!(objects >= 3, "the revision holds git's objects: {paths:?}");
    assert!(paths.contains(&"/.git/HEAD".to_owned()));
    assert!(paths.contains(&"/README.md".to_owned()));
    // After the commit the mount goes on with the new base: git still sees a clean tree.
    let (ok, stderr) = blocking(move || {
        assert_eq!(mount.sh("git status --porcelain"), "");
        mount.stop()
    })
    .await;
    assert!(ok, "{stderr}");
    let revision = receipt["receipt"]["revision"].as_str().unwrap();
    assert!(
        stderr.contains(&format!("\"commits\":[\"{revision}\"]")),
        "the session summary names its commit: {stderr}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_compile_and_an_atomic_python_rename_work() {
    if fuse_missing() {
        return;
    }
    let stderr = on_a_seeded_mount(|m, user| {
        m.sh("printf 'fn main() { println!(\"hi from a mount\"); }\\n' > hello.rs");
        m.sh("rustc -C debuginfo=0 hello.rs -o hello");
        assert_eq!(m.sh("./hello"), "hi from a mount\n");
        let script = "import os, json\n\
            for i in range(20):\n\
            \x20   tmp = f'data/.out{i}.tmp'\n\
            \x20   os.makedirs('data', exist_ok=True)\n\
            \x20   with open(tmp, 'w') as f:\n\
            \x20       json.dump({'i': i}, f)\n\
            \x20       f.flush(); os.fsync(f.fileno())\n\
            \x20   os.replace(tmp, f'data/out{i}.json')\n\
            print(sorted(os.listdir('data'))[:2])\n";
        std::fs::write(m.dir.join("atomic.py"), script).unwrap();
        assert_eq!(m.sh("python3 atomic.py"), "['out0.json', 'out1.json']\n");
        assert_eq!(m.sh("cat data/out7.json"), "{\"i\": 7}");
        let changes = m.changes(user);
        let paths: Vec<&str> = changes
            .iter()
            .map(|c| c["path"].as_str().unwrap())
            .collect();
        assert!(
            paths.contains(&"/hello") && paths.contains(&"/data/out19.json"),
            "{paths:?}"
        );
        assert!(!paths.iter().any(|p| p.ends_with(".tmp")), "{paths:?}");
    })
    .await;
    assert!(
        stderr.contains("not committed and are discarded"),
        "{stderr}"
    );
}

/// Directories stay in the kernel's cache across opens: every change made through the mount
/// (create, mkdir, rename within and across directories, unlink, rmdir, symlink) shows in the
/// next listing of each directory it touched.
#[tokio::test(flavor = "multi_thread")]
async fn every_listing_shows_the_changes_made_before_it() {
    if fuse_missing() {
        return;
    }
    on_a_seeded_mount(|m, _| {
        m.sh("mkdir -p a b && touch a/one");
        // Each step lists both directories (cached from then on), changes them, lists again.
        let steps = [
            ("touch a/two", "one two", ""),
            ("mv a/one b/one", "two", "one"),
            ("mv b/one b/uno", "two", "uno"),
            ("mkdir a/sub && echo x > a/sub/f", "sub two", "uno"),
            ("rm a/two", "sub", "uno"),
            ("mv a/sub b/sub", "", "sub uno"),
            ("rm -r b/sub", "", "uno"),
            ("ln -s uno b/link", "", "link uno"),
        ];
        for (script, a, b) in steps {
            m.sh("ls a b > /dev/null");
            m.sh(script);
            let listed = |d: &str| m.sh(&format!("ls -A {d} | tr '\\n' ' '"));
            assert_eq!(listed("a").trim_end(), a, "a after {script}");
            assert_eq!(listed("b").trim_end(), b, "b after {script}");
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn rsync_round_trips_a_thousand_files() {
    if fuse_missing() {
        return;
    }
    let user = new_user();
    let ws = seeded(&user).await;
    let id = ws.id().to_owned();
    let work = std::env::temp_dir().join(format!("supabash-rsync-{}", uuid::Uuid::new_v4()));
    let (src, back) = (work.join("src"), work.join("back"));
    for i in 0..1000 {
        let d = src.join(format!("d{}", i % 25));
        std::fs::create_dir_all(&d).unwrap();
        let bytes: Vec<u8> = (0..(i * 37 % 3000))
            .map(|j| ((i * 131 + j * 7) % 256) as u8)
            .collect();
        std::fs::write(d.join(format!("f{i}.bin")), bytes).unwrap();
    }
    let (ok, stderr) = blocking({
        let (src, back) = (src.clone(), back.clone());
        move || {
            let m = Mount::start(&user, &id, &[]);
            let run = |args: &[&Path]| {
                let st = Command::new("rsync").arg("-a").args(args).status().unwrap();
                assert!(st.success());
            };
            run(&[&src.join(""), &m.dir.join("tree")]);
            run(&[&m.dir.join("tree").join(""), &back]);
            let diff = Command::new("diff")
                .arg("-r")
                .arg(&src)
                .arg(&back)
                .output()
                .unwrap();
            assert!(
                diff.status.success(),
                "{}",
                String::from_utf8_lossy(&diff.stdout)
            );
            assert_eq!(m.sh("find tree -type f | wc -l").trim(), "1000");
            m.commit(&user, "rsync").unwrap();
            m.stop()
        }
    })
    .await;
    assert!(ok, "{stderr}");
    let _ = std::fs::remove_dir_all(&work);
}

#[tokio::test(flavor = "multi_thread")]
async fn commit_on_unmount_commits_once_the_mount_ends() {
    if fuse_missing() {
        return;
    }
    let user = new_user();
    let ws = seeded(&user).await;
    let id = ws.id().to_owned();
    let (ok, stderr) = blocking({
        let (user, id) = (user.clone(), id.clone());
        move || {
            let m = Mount::start(&user, &id, &["--commit-on-unmount", "-m", "at the end"]);
            m.sh("echo done > result.txt && rm src/lib.rs");
            m.stop()
        }
    })
    .await;
    assert!(ok, "{stderr}");
    assert!(
        stderr.contains("committed revision"),
        "the receipt is printed: {stderr}"
    );
    let paths = committed_paths(&user, &id).await;
    assert_eq!(paths, ["/README.md", "/result.txt"]);
    let ws = reopen(Via::Postgres, &user, &id).await;
    let last = ws.history(None, None).await.unwrap().records.pop().unwrap();
    assert_eq!(last.cause.as_deref(), Some("at the end"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_revision_mounts_read_only_and_reserved_paths_stay_unreachable() {
    if fuse_missing() {
        return;
    }
    let user = new_user();
    let ws = seeded(&user).await;
    let seed = ws.base_revision().unwrap();
    ws.fs().write("/README.md", "# newer\n").await.unwrap();
    ws.commit(supabash::workspace::CommitOptions::new("t"))
        .await
        .unwrap();
    let id = ws.id().to_owned();
    let (user, id2) = blocking(move || {
        let m = Mount::start(&user, &id, &["--revision", &seed]);
        assert_eq!(m.sh("cat README.md"), "# seed\n");
        for script in [
            "echo x > new.txt",
            "echo x >> README.md",
            "mkdir d",
            "rm README.md",
            "mv README.md R.md",
            "chmod 600 README.md",
        ] {
            let err = m.fails(script);
            assert!(err.contains("Read-only file system"), "{script}: {err}");
        }
        let err = m.commit(&user, "nothing").unwrap_err();
        assert!(err.contains("READ_ONLY"), "{err}");
        let (ok, stderr) = m.stop();
        assert!(ok, "{stderr}");
        let m = Mount::start(&user, &id, &[]);
        assert!(m.fails("ls .supabash").contains("No such file"));
        assert!(m.fails("mkdir .supabash").contains("Permission denied"));
        assert!(m
            .fails("echo x > .supabash-x")
            .contains("Permission denied"));
        assert!(m
            .fails("mkdir -p a/.supabash/b")
            .contains("Permission denied"));
        assert!(m.fails("touch src/.supabash").contains("Permission denied"));
        // Only the empty directory `mkdir -p` made before it was refused (issue 24: an empty
        // directory is an entry).
        let changes: Vec<Value> = m.changes(&user);
        let paths: Vec<&str> = changes
            .iter()
            .map(|c| c["path"].as_str().unwrap())
            .collect();
        assert_eq!(paths, ["/a"]);
        let (ok, stderr) = m.stop();
        assert!(ok, "{stderr}");
        (user, id)
    })
    .await;
    let head = reopen(Via::Postgres, &user, &id2)
        .await
        .committed_snapshot()
        .await
        .unwrap();
    assert_eq!(head.files["/README.md"], b"# newer\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn another_users_workspace_and_a_missing_mount_are_refused() {
    if fuse_missing() {
        return;
    }
    let owner = new_user();
    let ws = seeded(&owner).await;
    let id = ws.id().to_owned();
    blocking(move || {
        let dir = std::env::temp_dir().join(format!("supabash-mount-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let out = supabash(&new_user())
            .arg("mount")
            .arg(&dir)
            .args(["--workspace", &id])
            .output()
            .unwrap();
        // Exit statuses from the one table (docs/cli.md): 4 permission, 1 other, 2 usage.
        assert_eq!(
            out.status.code(),
            Some(4),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.stdout.is_empty(), "nothing was mounted");
        let out = supabash(&owner)
            .args(["commit", "--mount"])
            .arg(&dir)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1));
        assert!(String::from_utf8_lossy(&out.stderr).contains("no supabash mount answers"));
        let out = supabash(&owner)
            .arg("mount")
            .arg(&dir)
            .args(["--workspace", "not-a-uuid"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        let _ = std::fs::remove_dir(&dir);
    })
    .await;
}

/// Issue 24, durable git: a repository with an executable script, a symbolic link and empty
/// directories, committed from a mount, comes back whole in a second mount on another path
/// and through `export`: `git status` clean, `git fsck` passes, the script runs, the link
/// resolves, the empty directories are there.
#[tokio::test(flavor = "multi_thread")]
async fn a_git_repository_with_modes_links_and_empty_directories_survives_a_remount() {
    if fuse_missing() {
        return;
    }
    let user = new_user();
    let ws = seeded(&user).await;
    let id = ws.id().to_owned();
    let check = "git status --porcelain && git fsck --strict 2>&1 && ./run.sh \
                 && test \"$(readlink link)\" = run.sh && cat link >/dev/null \
                 && test -d empty && test -d .git/refs/tags && test -x run.sh";
    let (user, out) = blocking(move || {
        let m = Mount::start(&user, &id, &[]);
        m.sh(
            "git init -q && printf '#!/bin/sh\\necho ran\\n' > run.sh && chmod +x run.sh \
              && ln -s run.sh link && mkdir empty && git add -A && git commit -qm posix",
        );
        assert_eq!(m.sh("git status --porcelain"), "");
        // Inode numbers and times (the change time is the modification time) are what a
        // remount shows again, so git's index still matches without reading the files.
        let identity = "stat -c '%i %.9Y %.9Z' run.sh link empty";
        let before = m.sh(identity);
        m.commit(&user, "a repository").unwrap();
        let (ok, stderr) = m.stop();
        assert!(ok, "{stderr}");

        let again = Mount::start(&user, &id, &[]);
        assert_eq!(
            again.sh(identity),
            before,
            "numbers and times survive a remount"
        );
        for line in before.lines() {
            let f: Vec<&str> = line.split(' ').collect();
            assert_eq!(
                f[1], f[2],
                "the change time is the modification time: {line}"
            );
        }
        let out = again.sh(check);
        let (ok, stderr) = again.stop();
        assert!(ok, "{stderr}");

        let export = std::env::temp_dir().join(format!("supabash-export-{}", uuid::Uuid::new_v4()));
        let done = supabash(&user)
            .env("SUPABASH_WORKSPACE", &id)
            .arg("export")
            .arg(&export)
            .output()
            .unwrap();
        assert!(
            done.status.success(),
            "{}",
            String::from_utf8_lossy(&done.stderr)
        );
        let exported = Command::new("sh")
            .args(["-c", check])
            .current_dir(&export)
            .env("HOME", std::env::temp_dir())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .unwrap();
        assert!(
            exported.status.success(),
            "export: {}{}",
            String::from_utf8_lossy(&exported.stdout),
            String::from_utf8_lossy(&exported.stderr)
        );
        assert!(String::from_utf8_lossy(&exported.stdout).ends_with("ran\n"));
        std::fs::remove_dir_all(&export).ok();
        (user, out)
    })
    .await;
    assert!(out.ends_with("ran\n"), "{out}");
    assert!(
        !out.lines()
            .any(|l| l.starts_with(' ') || l.starts_with('?')),
        "{out}"
    );
    let _ = user;
}

/// Issue 23, item 11: a mount session committed twice writes each part once. The first
/// commit's record lists the paths written before it; the second commit (with no changes)
/// records none of them again.
#[tokio::test(flavor = "multi_thread")]
async fn each_commit_of_a_mount_records_only_its_own_part() {
    if fuse_missing() {
        return;
    }
    let user = new_user();
    let ws = seeded(&user).await;
    let id = ws.id().to_owned();
    let (first, second) = blocking({
        let (user, id) = (user.clone(), id.clone());
        move || {
            let m = Mount::start(&user, &id, &[]);
            m.sh("echo one > one.txt && echo two > two.txt");
            let first = m.commit(&user, "first").unwrap();
            let second = m.commit(&user, "again").unwrap();
            let (ok, stderr) = m.stop();
            assert!(ok, "{stderr}");
            (first, second)
        }
    })
    .await;
    let ws = reopen(Via::Postgres, &user, &id).await;
    let of = |r: &Value| r["receipt"]["revision"].as_str().unwrap().to_owned();
    let records = |page: supabash::audit::AuditPage| {
        page.records
            .into_iter()
            .filter(|r| r.kind == supabash::audit::ActionKind::MountSession)
            .collect::<Vec<_>>()
    };
    let one = records(ws.audit(Some(&of(&first)), None).await.unwrap());
    assert_eq!(one.len(), 1, "{one:?}");
    assert!(one[0].paths.contains(&"/one.txt".to_owned()), "{one:?}");
    assert!(one[0].bytes_changed >= 8, "{one:?}");
    if of(&second) != of(&first) {
        let two = records(ws.audit(Some(&of(&second)), None).await.unwrap());
        assert!(
            two.iter()
                .all(|r| r.paths.is_empty() && r.bytes_changed == 0),
            "{two:?}"
        );
    }
}

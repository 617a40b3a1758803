//! The mount section: the same commands on a `supabash mount` of a workspace and on a local
//! directory holding the same 10,000-file git repository, interleaved run by run: `git
//! status`, reading every file once (`tar`), writing 1,000 small files.

use crate::charts::{Chart, Kind};
use crate::report::{ms, stats, Report};
use crate::{f2, text};
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Instant;
use supabash::workspace::CommitOptions;
use supabash::{Limits, PostgresTransport, Workspace};
use supabash_devcluster::Cluster;

const FILES: usize = 10_000;
const ROUNDS: usize = 7;

/// The `supabash` binary next to this one (built with the same profile when missing;
/// `SUPABASH_BIN` overrides).
fn binary() -> PathBuf {
    if let Some(bin) = std::env::var_os("SUPABASH_BIN") {
        return PathBuf::from(bin);
    }
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap();
    let mut build = Command::new("cargo");
    build
        .args(["build", "-q", "-p", "supabash-cli", "--bin", "supabash"])
        .current_dir(supabash_tests::cluster::repo_root());
    if dir.ends_with("release") {
        build.arg("--release");
    }
    assert!(
        build.status().unwrap().success(),
        "building supabash failed"
    );
    dir.join("supabash")
}

fn sh(dir: &Path, script: &str) {
    let out = Command::new("sh")
        .args(["-c", script])
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .stdout(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{script}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn timed(dir: &Path, script: &str) -> f64 {
    let t = Instant::now();
    sh(dir, script);
    ms(t)
}

/// Every file below `dir` as (path in the workspace, bytes).
fn files(dir: &Path, prefix: &str, out: &mut Vec<(String, Vec<u8>)>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().into_string().unwrap();
        let p = format!("{prefix}/{name}");
        if e.file_type().unwrap().is_dir() {
            files(&e.path(), &p, out);
        } else {
            out.push((p, std::fs::read(e.path()).unwrap()));
        }
    }
}

struct Mounted(Child, PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("fusermount3").arg("-u").arg(&self.1).status();
        let _ = self.0.wait();
    }
}

const GIT_STATUS: &str = "git status --porcelain >/dev/null";
// GNU tar skips reading when its output is /dev/null itself.
const READ_ALL: &str = "tar cf - . | cat >/dev/null";
const WRITE_1000: &str =
    "mkdir w && i=0; while [ $i -lt 1000 ]; do echo \"small file $i\" > w/f$i; i=$((i+1)); done";

/// Mounts workspace `id` at `mnt` as `user`, with the host body cache in `cache`.
fn mount(bin: &Path, mnt: &Path, id: &str, dsn: &str, user: &str, cache: &Path) -> Mounted {
    mount_with(bin, mnt, id, dsn, user, cache, &[])
}

/// [`mount`] with `extra` arguments.
fn mount_with(
    bin: &Path,
    mnt: &Path,
    id: &str,
    dsn: &str,
    user: &str,
    cache: &Path,
    extra: &[&str],
) -> Mounted {
    let mut child = Command::new(bin)
        .arg("mount")
        .arg(mnt)
        .args(["--workspace", id, "--max-files", &(2 * FILES).to_string()])
        .args(extra)
        .env("SUPABASH_DSN", dsn)
        .env("SUPABASH_SUB", user)
        .env("SUPABASH_CACHE_DIR", cache)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.starts_with("mounted"), "the mount did not start");
    Mounted(child, mnt.to_owned())
}

/// The file system type and mount options of the mount `dir` is on, from /proc/mounts (the
/// longest mount point that is a prefix of it).
fn fs_of(dir: &Path) -> String {
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    mounts
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            (f.len() > 3 && dir.starts_with(f[1]))
                .then(|| (f[1].len(), format!("{} ({})", f[2], f[3])))
        })
        .max_by_key(|(n, _)| *n)
        .map_or_else(|| "unknown".into(), |(_, fs)| fs)
}

/// `supabash run -- git status` on workspace `id` with its scratch directory under `tmp`,
/// timed end to end.
fn run_git_status(
    bin: &Path,
    dir: &Path,
    id: &str,
    dsn: &str,
    user: &str,
    cache: &Path,
    tmp: Option<&Path>,
) -> f64 {
    let t = Instant::now();
    let mut cmd = Command::new(bin);
    cmd.args(["run", "--workspace", id, "--max-files"])
        .arg((2 * FILES).to_string())
        .args(["--", "git", "status", "--porcelain"])
        .current_dir(dir)
        .env("SUPABASH_DSN", dsn)
        .env("SUPABASH_SUB", user)
        .env("SUPABASH_CACHE_DIR", cache)
        .env_remove("TMPDIR");
    if let Some(tmp) = tmp {
        cmd.env("TMPDIR", tmp);
    }
    let out = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let took = ms(t);
    assert!(
        out.status.success(),
        "supabash run failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    took
}

pub async fn mount_vs_local(cluster: &Cluster, r: &mut Report) {
    if !Path::new("/dev/fuse").exists() {
        r.section("Mount (FUSE) vs local directory");
        r.line("Not measured: /dev/fuse is absent on this machine.");
        return;
    }
    let bin = binary();
    let root = std::env::temp_dir().join(format!("supabash-bench-mount-{}", uuid::Uuid::new_v4()));
    let (local, mnt) = (root.join("local"), root.join("mnt"));
    for i in 0..FILES {
        let d = local.join(format!("src/d{:03}", i / 100));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join(format!("f{i:05}.md")), text(i as u64, 256)).unwrap();
    }
    sh(
        &local,
        "git init -q && git add -A && git -c gc.auto=0 -c user.email=b@e -c user.name=bench commit -qm seed && git gc -q",
    );
    let user = uuid::Uuid::new_v4().to_string();
    let claims = json!({ "role": "authenticated", "sub": user, "aud": "authenticated" });
    let dsn = cluster.dsn("authenticator");
    let transport = Arc::new(PostgresTransport::connect(&dsn, claims).await.unwrap());
    let limits = Limits::default().with_max_files(2 * FILES);
    let ws = Workspace::builder(transport)
        .limits(limits)
        .create()
        .await
        .unwrap();
    let mut all = Vec::new();
    files(&local, "", &mut all);
    let tracked = all.len();
    for (p, bytes) in all {
        let parent = &p[..p.rfind('/').unwrap().max(1)];
        ws.fs().mkdir(parent, true).await.unwrap();
        ws.fs().write(&p, bytes).await.unwrap();
    }
    ws.commit(CommitOptions::new("bench")).await.unwrap();
    std::fs::create_dir_all(&mnt).unwrap();
    // An empty host body cache of its own: the first read is cold.
    let cache = root.join("cache");
    let mounted = mount(&bin, &mnt, ws.id(), &dsn, &user, &cache);
    // `git gc` packed every ref and left `.git/refs` empty: the workspace was filled from a
    // file list, which has no empty directories (the commit below stores them).
    sh(&mnt, "mkdir -p .git/refs/heads .git/refs/tags");
    // First touches: every body loads lazily (and is verified) once; git refreshes its index.
    let cold_read = timed(&mnt, READ_ALL);
    let cold_status = timed(&mnt, GIT_STATUS);
    sh(&local, GIT_STATUS);
    let commands = [
        ("git status", GIT_STATUS),
        ("read every file (tar)", READ_ALL),
        ("write 1,000 small files", WRITE_1000),
    ];
    let mut times = vec![(Vec::new(), Vec::new()); commands.len()];
    for round in 0..ROUNDS {
        for (k, (_, script)) in commands.iter().enumerate() {
            let dirs = if round % 2 == 0 {
                [&local, &mnt]
            } else {
                [&mnt, &local]
            };
            for dir in dirs {
                let t = timed(dir, script);
                if dir == &local {
                    times[k].0.push(t);
                } else {
                    times[k].1.push(t);
                }
            }
            if k == 2 {
                sh(&local, "rm -rf w");
                sh(&mnt, "rm -rf w");
            }
        }
    }
    // The mount's work is committed (git's refreshed index, `.git/refs`), the mount ends, and
    // the workspace is mounted again with the host cache warm: where inode numbers and times
    // survive a remount, git's index still matches and `git status` reads no file; otherwise
    // it reads every file again, from the cache. The local side's comparison is a copy of the
    // repository (`cp -a`: new inode numbers, so git re-reads every file).
    let committed = Command::new(&bin)
        .args(["commit", "-m", "bench", "--mount"])
        .arg(&mnt)
        .stdout(Stdio::null())
        .output()
        .unwrap();
    assert!(
        committed.status.success(),
        "supabash commit --mount: {}",
        String::from_utf8_lossy(&committed.stderr)
    );
    drop(mounted);
    let t = Instant::now();
    let remounted = mount(&bin, &mnt, ws.id(), &dsn, &user, &cache);
    let remount_start = ms(t);
    let remount_status = timed(&mnt, GIT_STATUS);
    let copy = root.join("copy");
    sh(&root, "cp -a local copy");
    let local_copy_status = timed(&copy, GIT_STATUS);
    let local_status = stats(&times[0].0).median;
    // `supabash run -- git status`: a first run, then three more (the mount's reads above
    // filled the cache for all of them) with the scratch directory where `run` puts it by
    // default (`TMPDIR` unset: `/dev/shm` when it is a tmpfs with room), alternating with
    // three with `TMPDIR` set to the disk's temporary directory (where creating and deleting
    // 10,000 files costs the file system's journal, and its discard when mounted so).
    let scratch = root.join("scratch");
    std::fs::create_dir_all(&scratch).unwrap();
    let disk_tmp = std::env::temp_dir();
    let run = |tmp| run_git_status(&bin, &scratch, ws.id(), &dsn, &user, &cache, tmp);
    let run_cold = run(None);
    let (mut run_warm, mut run_disk) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        run_warm.push(run(None));
        run_disk.push(run(Some(&disk_tmp)));
    }
    let (run_warm, run_disk) = (stats(&run_warm).median, stats(&run_disk).median);
    // Reading every file of a read-only mount, cached (its files open without a request).
    let ro = root.join("ro");
    std::fs::create_dir_all(&ro).unwrap();
    let read_only = mount_with(&bin, &ro, ws.id(), &dsn, &user, &cache, &["--read-only"]);
    sh(&ro, READ_ALL);
    let mut ro_times = (Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        let dirs = if round % 2 == 0 {
            [&local, &ro]
        } else {
            [&ro, &local]
        };
        for dir in dirs {
            let t = timed(dir, READ_ALL);
            if dir == &local {
                ro_times.0.push(t);
            } else {
                ro_times.1.push(t);
            }
        }
    }
    drop(read_only);
    let (ro_local, ro_mount) = (stats(&ro_times.0).median, stats(&ro_times.1).median);
    let ro_ratio = ro_mount / ro_local;
    r.section("Mount (FUSE) vs local directory");
    r.line(&format!(
        "A git repository of {FILES} files of 256 B in 100 directories (objects packed: \
         {tracked} files in all), committed to a workspace and mounted with `supabash mount` \
         (the release binary; direct Postgres transport), next to the same repository in a \
         local directory (tmpfs or disk, as `std::env::temp_dir()` is here). Each command runs \
         through `sh -c`, alternating which side goes first, {ROUNDS} rounds, medians. Before \
         the rounds the mount was read once cold: every body fetched and verified (`tar`: \
         {} ms) and git refreshed its index against the mount (`git status`: {} ms).",
        f2(cold_read),
        f2(cold_status)
    ));
    r.table(&[
        "command",
        "local median ms",
        "mount median ms",
        "mount / local",
    ]);
    let mut read_ratio = 0.0;
    for (k, (name, _)) in commands.iter().enumerate() {
        let (l, m) = (stats(&times[k].0), stats(&times[k].1));
        let ratio = m.median / l.median;
        if k == 1 {
            read_ratio = ratio;
        }
        r.row(&[
            (*name).into(),
            f2(l.median),
            f2(m.median),
            format!("{ratio:.1}×"),
        ]);
    }
    r.chart(Chart {
        file: "mount-vs-local.svg",
        title: "Mount (FUSE) against a local directory".into(),
        kind: Kind::Bars,
        x: "command".into(),
        y: "median ms".into(),
        categories: commands
            .iter()
            .map(|(name, _)| (*name).to_owned())
            .collect(),
        series: vec![
            (
                "local".into(),
                times.iter().map(|t| stats(&t.0).median).collect(),
            ),
            (
                "mount".into(),
                times.iter().map(|t| stats(&t.1).median).collect(),
            ),
        ],
    });
    let status_ratio = stats(&times[0].1).median / local_status;
    r.line(&format!(
        "Then the mount's work was committed (`supabash commit --mount`: git's refreshed \
         index and `.git/refs`), the mount ended and the workspace was mounted again with the \
         host body cache warm: the mount started in {} ms (from the command to its `mounted` \
         line) and the first `git status` took {} ms, against {} ms for the first `git status` in a \
         copy of the local repository (`cp -a`, which re-reads the same way) and {} ms for \
         the local median above. `supabash run -- git status` on the workspace (a fresh \
         directory, every file written out, git run, nothing to stage; `TMPDIR` unset, so the \
         scratch directory went where `run` puts it by default: `/dev/shm` when it is a tmpfs \
         with room, here `{}`) took {} ms the first time and {} ms in the next three (median), \
         the host cache warm for all of them from the mount's reads above.",
        f2(remount_start),
        f2(remount_status),
        f2(local_copy_status),
        f2(local_status),
        fs_of(Path::new("/dev/shm")),
        f2(run_cold),
        f2(run_warm)
    ));
    r.line(&format!(
        "The same warm runs with `TMPDIR={}` (the scratch directory on `{}`), alternating \
         with those above: {} ms (median of 3). The difference is the file system creating and \
         deleting 10,000 files.",
        disk_tmp.display(),
        fs_of(&disk_tmp),
        f2(run_disk)
    ));
    r.line(&format!(
        "On a `--read-only` mount of the workspace (no writes to buffer), reading \
         every file once cached (`tar`, {ROUNDS} rounds alternating with the local directory) \
         took {} ms (median) against {} ms locally.",
        f2(ro_mount),
        f2(ro_local)
    ));
    r.summary(
        "Mount, 10,000 files: cold read of every file (empty host cache)",
        format!("{} s", f2(cold_read / 1000.0)),
        "≤ 10 s".into(),
        Some(cold_read <= 10_000.0),
    );
    r.summary(
        "Mount, 10,000 files: git status / read every file, cached",
        format!("{status_ratio:.1}× / {read_ratio:.1}× local"),
        "≤ 2× local".into(),
        Some(status_ratio <= 2.0 && read_ratio <= 2.0),
    );
    r.summary(
        "Read-only mount, 10,000 files: read every file, cached",
        format!("{ro_ratio:.1}× local"),
        "≤ 2× local".into(),
        Some(ro_ratio <= 2.0),
    );
    let remount_ratio = remount_status / local_copy_status;
    r.summary(
        "Remount with a warm host cache, then git status (10,000 files)",
        format!("{remount_ratio:.1}× local (a fresh copy)"),
        "≤ 3× local".into(),
        Some(remount_ratio <= 3.0),
    );
    r.summary(
        "`supabash run -- git status`, 10,000 files, warm host cache (default scratch directory)",
        format!("{} s", f2(run_warm / 1000.0)),
        "≤ 2 s".into(),
        Some(run_warm <= 2_000.0),
    );
    r.summary(
        "`supabash run -- git status`, 10,000 files, warm host cache, `TMPDIR` on the disk",
        format!("{} s ({})", f2(run_disk / 1000.0), fs_of(&disk_tmp)),
        "(context: the file system's cost)".into(),
        None,
    );
    drop(remounted);
    let _ = std::fs::remove_dir_all(&root);
}

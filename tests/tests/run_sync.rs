//! Run and sync, import and export against a real PostgreSQL with the extension: the library
//! (`Workspace::materialise` / `stage_from_dir`) and the built `supabash` binary (`run`,
//! `import`, `export`) with real tools: git, rustc, python3, sh.

use serde_json::Value;
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};
use supabash::disk::{DirChangeKind, NotStagedReason};
use supabash::workspace::CommitOptions;
use supabash::{ErrorCode, Limits, Workspace};
use supabash_tests::client::{cluster, new_user, reopen, transport, workspace_with, Via};

/// A fresh scratch directory under the system temp dir, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Scratch {
        let dir = std::env::temp_dir().join(format!("run-sync-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir(&dir).unwrap();
        Scratch(dir)
    }

    fn join(&self, p: &str) -> PathBuf {
        self.0.join(p)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `supabash ARGS` acting as `user` over a direct connection.
fn supabash(user: &str, args: &[&str]) -> Output {
    supabash_env(user, args, &[])
}

fn supabash_env(user: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(supabash_tests::binary::supabash())
        .args(args)
        .env("SUPABASH_DSN", cluster().dsn("authenticator"))
        .env("SUPABASH_SUB", user)
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The JSON document of a `--json` run that exited with `status`.
fn json_with_status(out: &Output, status: i32) -> Value {
    assert_eq!(out.status.code(), Some(status), "{}", stderr(out));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            stderr(out)
        )
    })
}

/// `supabash run --workspace WS --json EXTRA... -- CMD...` as `user`.
fn run(user: &str, ws: &str, extra: &[&str], cmd: &[&str]) -> Output {
    let mut args = vec!["run", "--workspace", ws, "--json"];
    args.extend_from_slice(extra);
    args.push("--");
    args.extend_from_slice(cmd);
    supabash(user, &args)
}

/// (kind, path, from) of each staged change in a run's JSON.
fn changes(doc: &Value) -> Vec<(String, String, Option<String>)> {
    doc["sync"]["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["kind"].as_str().unwrap().to_owned(),
                c["path"].as_str().unwrap().to_owned(),
                c["from"].as_str().map(str::to_owned),
            )
        })
        .collect()
}

fn kinds_of<'a>(changes: &'a [(String, String, Option<String>)], path: &str) -> Vec<&'a str> {
    changes
        .iter()
        .filter(|c| c.1 == path)
        .map(|c| c.0.as_str())
        .collect()
}

async fn revision_files(ws: &Workspace, revision: &str) -> BTreeMap<String, Vec<u8>> {
    ws.read_revision(revision).await.unwrap().files
}

/// Every regular file under `root` (relative path → bytes) and every directory.
fn tree_on_disk(root: &Path) -> (BTreeMap<String, Vec<u8>>, Vec<String>) {
    let (mut files, mut dirs) = (BTreeMap::new(), Vec::new());
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let rel = e
                .path()
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let kind = e.file_type().unwrap();
            if kind.is_dir() {
                dirs.push(rel);
                stack.push(e.path());
            } else if kind.is_symlink() {
                // Links are checked where a test makes them.
            } else {
                files.insert(rel, std::fs::read(e.path()).unwrap());
            }
        }
    }
    dirs.sort();
    (files, dirs)
}

fn binary_blob() -> Vec<u8> {
    (0..=255u8)
        .cycle()
        .take(70_000)
        .chain([0, 0xff, 0xfe])
        .collect()
}

#[tokio::test]
async fn library_round_trip_stages_exactly_the_differences() {
    let user = new_user();
    let seeded = workspace_with(
        Via::Postgres,
        &user,
        &[
            ("/keep.md", "unchanged\n"),
            ("/edit.md", "before\n"),
            ("/gone.md", "deleted on disk\n"),
            ("/docs/old-name.md", "moved by content\n"),
        ],
    )
    .await;
    // A fresh handle: base bodies are lazy and load while materialising.
    let ws = reopen(Via::Postgres, &user, seeded.id()).await;
    ws.fs().mkdir("/empty", false).await.unwrap();
    ws.fs().mkdir("/tmp", true).await.unwrap();
    ws.fs().write("/tmp/scratch", "shell-owned").await.unwrap();
    let dir = Scratch::new();
    let work = dir.join("w");
    let record = ws.materialise(&work).await.unwrap();
    assert_eq!(
        std::fs::read_to_string(work.join("docs/old-name.md")).unwrap(),
        "moved by content\n"
    );
    assert!(work.join("empty").is_dir());
    assert!(
        !work.join("tmp").exists(),
        "shell-owned paths are not written"
    );
    assert_eq!(record.files.len(), 4);
    assert!(record.directories.contains("/empty"));
    assert_eq!(
        std::fs::metadata(work.join("keep.md"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o644
    );

    // What a program does to the directory.
    std::fs::write(work.join("edit.md"), "after\n").unwrap();
    std::fs::remove_file(work.join("gone.md")).unwrap();
    std::fs::create_dir(work.join("archive")).unwrap();
    std::fs::rename(
        work.join("docs/old-name.md"),
        work.join("archive/new-name.md"),
    )
    .unwrap();
    std::fs::write(work.join("blob.bin"), binary_blob()).unwrap();
    std::fs::write(work.join("été 日本.txt"), "non-ASCII name\n").unwrap();
    std::fs::create_dir(work.join("new-empty")).unwrap();
    std::fs::remove_dir(work.join("empty")).unwrap();
    std::fs::create_dir_all(work.join("tmp/cache")).unwrap();
    std::fs::write(work.join("tmp/cache/x"), "scratch").unwrap();
    std::fs::create_dir(work.join(".supabash")).unwrap();
    std::fs::write(work.join(".supabash/state"), "reserved").unwrap();
    std::fs::write(work.join("back\\slash"), "invalid name").unwrap();
    std::fs::write(
        work.join(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(b"bad\xffname")),
        "not UTF-8",
    )
    .unwrap();
    std::os::unix::fs::symlink("/etc/passwd", work.join("escape")).unwrap();
    std::os::unix::fs::symlink("keep.md", work.join("inner-link")).unwrap();
    std::fs::set_permissions(work.join("keep.md"), std::fs::Permissions::from_mode(0o755)).unwrap();

    let synced = ws.stage_from_dir(&work, &record).await.unwrap();
    let staged: Vec<(String, &str, Option<&str>)> = synced
        .changes
        .iter()
        .map(|c| (format!("{:?}", c.kind), c.path.as_str(), c.from.as_deref()))
        .collect();
    assert_eq!(
        staged,
        [
            (
                "Move".into(),
                "/archive/new-name.md",
                Some("/docs/old-name.md")
            ),
            ("Upsert".into(), "/blob.bin", None),
            // A directory the move emptied, and a new empty one, are entries (issue 24).
            ("Upsert".into(), "/docs", None),
            ("Upsert".into(), "/edit.md", None),
            ("Upsert".into(), "/inner-link", None),
            ("Upsert".into(), "/new-empty", None),
            ("Upsert".into(), "/été 日本.txt", None),
            ("Setattr".into(), "/keep.md", None),
            ("Delete".into(), "/gone.md", None),
        ]
    );
    let ignored: Vec<(&str, &str)> = synced
        .ignored
        .iter()
        .map(|i| (i.path.as_str(), i.reason.as_str()))
        .collect();
    assert_eq!(
        ignored,
        [
            ("/.supabash", "reserved-segment"),
            ("/back\\slash", "backslash"),
            ("/bad\u{fffd}name", "not-utf-8"),
            ("/tmp", "shell-owned"),
        ]
    );
    let not_staged: Vec<(&str, &NotStagedReason)> = synced
        .not_staged
        .iter()
        .map(|n| (n.path.as_str(), &n.reason))
        .collect();
    assert_eq!(
        not_staged,
        [(
            "/escape",
            &NotStagedReason::Symlink {
                target: "/etc/passwd".into()
            }
        ),]
    );
    // A link inside the workspace and a mode change are staged (issue 24).
    assert_eq!(ws.fs().readlink("/inner-link").await.unwrap(), "keep.md");
    assert_eq!(ws.fs().stat("/keep.md").await.unwrap().mode, 0o755);
    let dir_changes: Vec<(DirChangeKind, &str)> = synced
        .applied
        .iter()
        .filter(|c| {
            matches!(
                c.kind,
                DirChangeKind::DirCreated | DirChangeKind::DirRemoved
            )
        })
        .map(|c| (c.kind, c.path.as_str()))
        .collect();
    assert_eq!(
        dir_changes,
        [
            (DirChangeKind::DirRemoved, "/empty"),
            (DirChangeKind::DirCreated, "/archive"),
            (DirChangeKind::DirCreated, "/new-empty"),
        ]
    );
    assert!(ws.fs().exists("/new-empty").await && !ws.fs().exists("/empty").await);
    assert_eq!(
        ws.fs().read("/tmp/scratch").await.unwrap(),
        b"shell-owned",
        "the tree's own scratch stays"
    );
    assert_eq!(synced.bytes_changed(), 70_003 + 6 + 15);

    let receipt = ws
        .commit(CommitOptions::new("run-sync"))
        .await
        .unwrap()
        .receipt;
    let files = revision_files(&ws, &receipt.revision).await;
    assert_eq!(files["/blob.bin"], binary_blob());
    assert_eq!(files["/été 日本.txt"], b"non-ASCII name\n");
    assert_eq!(files["/archive/new-name.md"], b"moved by content\n");
    assert!(!files.contains_key("/gone.md") && !files.contains_key("/escape"));

    // Materialised again, the commit's tree comes back byte for byte.
    let again = dir.join("again");
    let record = ws.materialise(&again).await.unwrap();
    let (on_disk, _) = tree_on_disk(&again);
    assert_eq!(
        std::fs::read_link(again.join("inner-link")).unwrap(),
        Path::new("keep.md"),
        "the link comes back as a link"
    );
    let expected: BTreeMap<String, Vec<u8>> = files
        .into_iter()
        .map(|(p, b)| (p[1..].to_owned(), b))
        .collect();
    assert_eq!(on_disk, expected);
    let unchanged = ws.stage_from_dir(&again, &record).await.unwrap();
    assert!(unchanged.changes.is_empty() && unchanged.applied.is_empty());
}

#[tokio::test]
async fn too_large_files_stage_nothing_and_name_the_path() {
    let user = new_user();
    let seeded = workspace_with(Via::Postgres, &user, &[("/a.md", "a\n")]).await;
    let ws = Workspace::builder(transport(Via::Postgres, &user).await)
        .limits(Limits::default().with_max_file_bytes(1024))
        .open(seeded.id())
        .await
        .unwrap();
    let dir = Scratch::new();
    let record = ws.materialise(&dir.join("w")).await.unwrap();
    std::fs::write(dir.join("w/small.txt"), "fits").unwrap();
    std::fs::write(dir.join("w/big.bin"), vec![7u8; 4096]).unwrap();
    std::fs::remove_file(dir.join("w/a.md")).unwrap();
    let err = ws
        .stage_from_dir(&dir.join("w"), &record)
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::QuotaExceeded);
    assert_eq!(err.path(), Some("/big.bin"));
    assert!(ws.changes().unwrap().is_empty(), "nothing staged");

    // A materialise target must be empty.
    let err = ws.materialise(&dir.join("w")).await.unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument);
}

#[tokio::test]
async fn a_revision_materialises_and_its_changes_stage_onto_the_tree() {
    let user = new_user();
    let ws = workspace_with(Via::Postgres, &user, &[("/v.txt", "one\n")]).await;
    let first = ws.base_revision().unwrap();
    ws.fs().write("/v.txt", "two\n").await.unwrap();
    ws.fs().write("/w.txt", "new\n").await.unwrap();
    ws.commit(CommitOptions::new("t")).await.unwrap();
    let dir = Scratch::new();
    let record = ws
        .materialise_with(
            &dir.join("r"),
            supabash::disk::MaterialiseOptions::default().with_revision(first.clone()),
        )
        .await
        .unwrap();
    assert_eq!(record.revision.as_deref(), Some(first.as_str()));
    assert_eq!(std::fs::read(dir.join("r/v.txt")).unwrap(), b"one\n");
    assert!(!dir.join("r/w.txt").exists());
    std::fs::write(dir.join("r/added.txt"), "from the old tree\n").unwrap();
    let synced = ws.stage_from_dir(&dir.join("r"), &record).await.unwrap();
    let paths: Vec<&str> = synced.changes.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(paths, ["/added.txt"], "only what the command changed");
}

#[tokio::test]
async fn git_inside_run_commits_its_objects() {
    let user = new_user();
    let ws = workspace_with(Via::Postgres, &user, &[("/src/main.txt", "hello\n")]).await;
    let script = "git init -q && git add -A && \
        git -c user.name=agent -c user.email=agent@example.com commit -q -m first";
    let out = run(
        &user,
        ws.id(),
        &["--commit", "-m", "git ran"],
        &["sh", "-c", script],
    );
    let doc = json_with_status(&out, 0);
    let staged = changes(&doc);
    assert!(kinds_of(&staged, "/.git/HEAD") == ["upsert"], "{staged:?}");
    let revision = doc["session"]["revision"].as_str().unwrap();
    let files = revision_files(&ws, revision).await;
    assert!(files["/.git/HEAD"].starts_with(b"ref: refs/heads/"));
    assert!(files.keys().any(|p| p.starts_with("/.git/objects/")));
    // The committed repository works when materialised again.
    let check = run(
        &user,
        ws.id(),
        &[],
        &["sh", "-c", "git log --format=%s && git status --porcelain"],
    );
    assert_eq!(check.status.code(), Some(0), "{}", stderr(&check));
    assert!(
        stderr(&check).contains("first"),
        "--json sends the command's output to stderr: {}",
        stderr(&check)
    );
}

#[tokio::test]
async fn a_compile_shows_its_binary_and_stages_its_mode() {
    let user = new_user();
    let ws = workspace_with(
        Via::Postgres,
        &user,
        &[("/hello.rs", "fn main() { println!(\"hi\"); }\n")],
    )
    .await;
    // The toolchain's own rustc: a rustup shim would look for its settings in HOME, which is
    // private to the command.
    let sysroot = Command::new("rustc")
        .args(["--print", "sysroot"])
        .output()
        .unwrap();
    let rustc = format!(
        "{}/bin/rustc",
        String::from_utf8(sysroot.stdout).unwrap().trim()
    );
    let out = run(&user, ws.id(), &[], &[&rustc, "-o", "hello", "hello.rs"]);
    let doc = json_with_status(&out, 0);
    let staged = changes(&doc);
    assert_eq!(kinds_of(&staged, "/hello"), ["upsert"], "{staged:?}");
    let size = doc["sync"]["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["path"] == "/hello")
        .and_then(|c| c["afterSize"].as_u64())
        .unwrap();
    assert!(size > 1000, "a binary of {size} bytes");
    // The executable bit is staged with the binary (issue 24).
    let hello = doc["sync"]["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["path"] == "/hello")
        .unwrap();
    assert_eq!(hello["afterMode"], 0o755, "{hello}");
    assert_eq!(doc["session"]["staged"], true);
    assert!(
        doc["session"]["revision"].is_null(),
        "no commit without --commit"
    );
}

#[tokio::test]
async fn an_atomic_replace_is_an_edit_and_a_rename_is_a_move() {
    let user = new_user();
    let ws = workspace_with(
        Via::Postgres,
        &user,
        &[
            ("/config.json", "{\"v\": 1}\n"),
            ("/old.txt", "same bytes\n"),
        ],
    )
    .await;
    let script = "import os\n\
        with open('config.json.tmp', 'w') as f:\n    f.write('{\"v\": 2}\\n')\n\
        os.replace('config.json.tmp', 'config.json')\n\
        os.rename('old.txt', 'new.txt')\n";
    let out = run(&user, ws.id(), &["--commit"], &["python3", "-c", script]);
    let doc = json_with_status(&out, 0);
    let staged = changes(&doc);
    assert_eq!(
        staged,
        [
            ("move".into(), "/new.txt".into(), Some("/old.txt".into())),
            ("upsert".into(), "/config.json".into(), None),
        ]
    );
    assert!(
        doc["sync"]["changes"][1]["beforeHash"].is_string(),
        "an edit of an existing file"
    );
    let revision = doc["session"]["revision"].as_str().unwrap();
    let receipt = ws.read_revision(revision).await.unwrap().receipt;
    let ops: Vec<(&str, &str)> = receipt
        .changes
        .iter()
        .map(|l| (l.op.as_str(), l.path.as_str()))
        .collect();
    assert!(ops.contains(&("move", "/new.txt")), "{ops:?}");
}

#[tokio::test]
async fn a_failing_command_stages_nothing_unless_asked() {
    let user = new_user();
    let ws = workspace_with(Via::Postgres, &user, &[("/a.txt", "a\n")]).await;
    let head = ws.base_revision();
    let out = run(
        &user,
        ws.id(),
        &["--commit"],
        &["sh", "-c", "echo changed > a.txt; exit 3"],
    );
    let doc = json_with_status(&out, 3);
    assert!(doc["sync"].is_null());
    assert_eq!(doc["session"]["exit"]["status"], "exited");
    assert_eq!(doc["session"]["exit"]["code"], 3);
    assert_eq!(
        reopen(Via::Postgres, &user, ws.id()).await.base_revision(),
        head
    );

    let out = run(
        &user,
        ws.id(),
        &["--stage-on-failure", "--commit"],
        &["sh", "-c", "echo changed > a.txt; exit 3"],
    );
    let doc = json_with_status(&out, 3);
    assert_eq!(changes(&doc)[0].1, "/a.txt");
    let revision = doc["session"]["revision"].as_str().unwrap();
    assert_eq!(revision_files(&ws, revision).await["/a.txt"], b"changed\n");

    // A command that cannot start.
    let out = run(&user, ws.id(), &[], &["/nonexistent/tool"]);
    assert_eq!(out.status.code(), Some(127), "{}", stderr(&out));
}

#[tokio::test]
async fn a_timeout_kills_the_process_group_and_stages_nothing() {
    let user = new_user();
    let ws = workspace_with(Via::Postgres, &user, &[("/a.txt", "a\n")]).await;
    let head = ws.base_revision();
    let started = Instant::now();
    // The background sleep keeps the output pipes open: `output()` returns only once the
    // whole group is gone.
    let out = run(
        &user,
        ws.id(),
        &["--timeout", "1s", "--commit"],
        &["sh", "-c", "sleep 60 & echo late > a.txt; sleep 60"],
    );
    assert!(started.elapsed() < Duration::from_secs(30));
    let doc = json_with_status(&out, 124);
    assert_eq!(doc["session"]["exit"]["status"], "timed-out");
    assert!(doc["sync"].is_null());
    assert_eq!(
        reopen(Via::Postgres, &user, ws.id()).await.base_revision(),
        head
    );
}

#[tokio::test]
async fn the_command_gets_a_cleared_environment() {
    let user = new_user();
    let ws = workspace_with(Via::Postgres, &user, &[("/a.txt", "a\n")]).await;
    let out = supabash_env(
        &user,
        &[
            "run",
            "--workspace",
            ws.id(),
            "--json",
            "--commit",
            "--env",
            "RUN_SYNC_PASSED",
            "--",
            "sh",
            "-c",
            "env > env.txt",
        ],
        &[("RUN_SYNC_PASSED", "yes"), ("RUN_SYNC_NOT_PASSED", "no")],
    );
    let doc = json_with_status(&out, 0);
    let revision = doc["session"]["revision"].as_str().unwrap();
    let env = String::from_utf8(revision_files(&ws, revision).await["/env.txt"].clone()).unwrap();
    assert!(env.contains("RUN_SYNC_PASSED=yes\n"), "{env}");
    assert!(!env.contains("RUN_SYNC_NOT_PASSED"), "{env}");
    assert!(!env.contains("SUPABASH"), "{env}");
    let home = env.lines().find_map(|l| l.strip_prefix("HOME=")).unwrap();
    assert!(home.contains("supabash-run-"), "a private home: {home}");

    // Credentials are refused by name and by value; nothing runs.
    let marker = std::env::temp_dir().join(format!("run-sync-marker-{}", uuid::Uuid::new_v4()));
    let touch = format!("touch {}", marker.display());
    for (name, value) in [
        ("SUPABASH_DSN", "x"),
        (
            "RUN_SYNC_VALUE",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJlLXZhbHVl",
        ),
        ("RUN_SYNC_URL", "postgres://user:pw@localhost/db"),
        ("GITHUB_TOKEN", "plain"),
    ] {
        let out = supabash_env(
            &user,
            &[
                "run",
                "--workspace",
                ws.id(),
                "--env",
                name,
                "--",
                "sh",
                "-c",
                &touch,
            ],
            &[(name, value)],
        );
        // A refused argument is a usage failure (status 2, docs/cli.md).
        assert_eq!(out.status.code(), Some(2), "{name}");
        assert!(
            stderr(&out).starts_with("supabash: USAGE: --env "),
            "{name}: {}",
            stderr(&out)
        );
        assert!(stderr(&out).contains("refused"), "{name}: {}", stderr(&out));
        assert!(!stderr(&out).contains(value) || value == "x", "{name}");
        assert!(!marker.exists(), "{name}: the command ran");
    }
}

#[tokio::test]
async fn another_users_workspace_runs_nothing() {
    let owner = new_user();
    let ws = workspace_with(Via::Postgres, &owner, &[("/a.txt", "a\n")]).await;
    let marker = std::env::temp_dir().join(format!("run-sync-marker-{}", uuid::Uuid::new_v4()));
    let touch = format!("touch {}", marker.display());
    let intruder = new_user();
    let out = run(&intruder, ws.id(), &[], &["sh", "-c", &touch]);
    // Exit statuses follow the error taxonomy (docs/cli.md): 4 permission, 2 usage.
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(!marker.exists());
    let out = run(&owner, "not-a-uuid", &[], &["sh", "-c", &touch]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(!marker.exists());
    let dir = Scratch::new();
    let target = dir.join("out");
    let out = supabash(
        &intruder,
        &["export", "--workspace", ws.id(), target.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(!target.exists(), "nothing written");
}

#[tokio::test]
async fn import_and_export_round_trip_byte_for_byte() {
    let user = new_user();
    let ws = workspace_with(Via::Postgres, &user, &[("/stale.txt", "goes\n")]).await;
    let dir = Scratch::new();
    let src = dir.join("src");
    std::fs::create_dir_all(src.join("deep/er")).unwrap();
    std::fs::create_dir_all(src.join("empty")).unwrap();
    std::fs::write(src.join("blob.bin"), binary_blob()).unwrap();
    std::fs::write(src.join("deep/er/ünï cödé.txt"), "ü\n").unwrap();
    std::fs::write(src.join("zero"), b"").unwrap();
    let out = supabash(
        &user,
        &[
            "import",
            src.to_str().unwrap(),
            "--workspace",
            ws.id(),
            "--commit",
            "-m",
            "import",
            "--json",
        ],
    );
    let doc = json_with_status(&out, 0);
    let staged = changes(&doc);
    assert_eq!(
        kinds_of(&staged, "/stale.txt"),
        ["delete"],
        "import mirrors the directory"
    );
    let revision = doc["session"]["revision"].as_str().unwrap().to_owned();

    let out_dir = dir.join("out");
    let out = supabash(
        &user,
        &[
            "export",
            "--revision",
            &revision,
            "--workspace",
            ws.id(),
            out_dir.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let (exported, _) = tree_on_disk(&out_dir);
    let (original, _) = tree_on_disk(&src);
    assert_eq!(exported, original);
    // Into a directory that is not empty: refused.
    let again = supabash(
        &user,
        &["export", "--workspace", ws.id(), out_dir.to_str().unwrap()],
    );
    assert_eq!(again.status.code(), Some(2), "{}", stderr(&again));
    assert!(stderr(&again).contains("not empty"), "{}", stderr(&again));

    // Through the library in one session, empty directories come back too.
    let lib = reopen(Via::Postgres, &user, ws.id()).await;
    std::fs::create_dir(src.join("new-empty")).unwrap();
    lib.stage_from_dir(&src, &lib.staged_record())
        .await
        .unwrap();
    let copy = dir.join("copy");
    lib.materialise(&copy).await.unwrap();
    let (files, dirs) = tree_on_disk(&copy);
    assert_eq!(files, original);
    assert_eq!(dirs, ["deep", "deep/er", "empty", "new-empty"]);
}

/// What `import` prints about a directory is what the revision then holds: an empty
/// directory is committed as an entry of its own (0.6.0), not "in the staged tree only".
#[tokio::test]
async fn import_says_what_the_revision_keeps_of_a_directory() {
    let user = new_user();
    let ws = workspace_with(Via::Postgres, &user, &[]).await;
    let dir = Scratch::new();
    let src = dir.join("src");
    std::fs::create_dir_all(src.join("emptydir")).unwrap();
    std::fs::write(src.join("a.txt"), "a\n").unwrap();
    let out = supabash(
        &user,
        &[
            "import",
            src.to_str().unwrap(),
            "--workspace",
            ws.id(),
            "--commit",
            "-m",
            "import",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(
            "DirCreated /emptydir (staged: the next commit keeps it, an empty directory as an \
             entry of its own)"
        ),
        "{stdout}"
    );
    assert!(!stdout.contains("staged tree only"), "{stdout}");
    // The committed revision holds the directory.
    let again = reopen(Via::Postgres, &user, ws.id()).await;
    let stat = again.fs().lstat("/emptydir").await.unwrap();
    assert_eq!(stat.kind, supabash::tree::FileKind::Directory);
}

#[tokio::test]
async fn two_thousand_files_round_trip_unchanged() {
    let user = new_user();
    let ws = workspace_with(Via::Postgres, &user, &[]).await;
    let dir = Scratch::new();
    let src = dir.join("src");
    for i in 0..2000 {
        let d = src.join(format!("d{}", i % 20));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(
            d.join(format!("f{i}.txt")),
            format!("file {i}\n").repeat(20),
        )
        .unwrap();
    }
    let started = Instant::now();
    let synced = ws.stage_from_dir(&src, &ws.staged_record()).await.unwrap();
    let staged_in = started.elapsed();
    assert_eq!(synced.changes.len(), 2000);
    ws.commit(CommitOptions::new("bulk")).await.unwrap();
    // A command that changes nothing: open, materialise (every body loads), compare.
    let started = Instant::now();
    let doc = json_with_status(&run(&user, ws.id(), &[], &["true"]), 0);
    let run_in = started.elapsed();
    assert!(doc["sync"]["changes"].as_array().unwrap().is_empty());
    assert!(doc["sync"]["applied"].as_array().unwrap().is_empty());
    eprintln!("2000 files: staged from a directory in {staged_in:?}; `run -- true` in {run_in:?}");
}

#[tokio::test]
async fn an_interrupt_kills_the_group_and_stages_nothing() {
    let user = new_user();
    let ws = workspace_with(Via::Postgres, &user, &[("/a.txt", "a\n")]).await;
    let head = ws.base_revision();
    let dir = Scratch::new();
    let started = dir.join("started");
    let script = format!(
        "echo changed > a.txt; touch {}; sleep 60",
        started.display()
    );
    let child = Command::new(supabash_tests::binary::supabash())
        .args(["run", "--workspace", ws.id(), "--commit", "--json", "--"])
        .args(["sh", "-c", &script])
        .env("SUPABASH_DSN", cluster().dsn("authenticator"))
        .env("SUPABASH_SUB", &user)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !started.exists() {
        assert!(Instant::now() < deadline, "the command never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    let pid = i32::try_from(child.id()).unwrap();
    #[allow(unsafe_code)]
    // SAFETY: kill(2) only sends a signal to the process the test started.
    unsafe {
        libc::kill(pid, libc::SIGINT);
    }
    let waited = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(
        waited.elapsed() < Duration::from_secs(30),
        "the group was killed"
    );
    let doc = json_with_status(&out, 130);
    assert_eq!(doc["session"]["exit"]["status"], "interrupted");
    assert!(doc["sync"].is_null());
    assert_eq!(
        reopen(Via::Postgres, &user, ws.id()).await.base_revision(),
        head
    );
}

/// Issue 23, item 7: the command cannot read supabash's credentials. Its parent's environment
/// in `/proc` no longer holds the DSN or any secret variable (they are overwritten before the
/// command starts, and the process is not dumpable); a secret on supabash's own command line
/// is refused before anything runs.
#[tokio::test]
async fn the_command_cannot_read_supabashs_credentials() {
    let user = new_user();
    let ws = workspace_with(Via::Postgres, &user, &[("/a.txt", "a\n")]).await;
    let dsn = cluster().dsn("authenticator");
    let token = "run-sync-api-token-0123456789abcdef";
    let out = supabash_env(
        &user,
        &[
            "run",
            "--workspace",
            ws.id(),
            "--json",
            "--commit",
            "--",
            "sh",
            "-c",
            "cat /proc/$PPID/environ > environ.txt 2>&1; cat /proc/$PPID/cmdline > cmdline.txt 2>&1; true",
        ],
        &[("RUN_SYNC_API_TOKEN", token)],
    );
    let doc = json_with_status(&out, 0);
    let revision = doc["session"]["revision"].as_str().unwrap();
    let files = revision_files(&ws, revision).await;
    let environ = String::from_utf8_lossy(&files["/environ.txt"]).into_owned();
    assert!(!environ.contains(&dsn), "{environ}");
    assert!(!environ.contains(token), "{environ}");
    assert!(
        environ.contains("SUPABASH_SUB="),
        "the rest stays: {environ}"
    );
    let cmdline = String::from_utf8_lossy(&files["/cmdline.txt"]).into_owned();
    assert!(!cmdline.contains(&dsn), "{cmdline}");

    // A DSN with a password or a token on the command line is refused; nothing runs.
    let marker = std::env::temp_dir().join(format!("run-sync-marker-{}", uuid::Uuid::new_v4()));
    let touch = format!("touch {}", marker.display());
    for flags in [
        ["--dsn", "postgres://authenticator:pw@127.0.0.1:1/db"],
        ["--token", "a-token-on-the-command-line"],
    ] {
        let mut args = vec!["run", "--workspace", ws.id()];
        args.extend(flags);
        args.extend(["--", "sh", "-c", &touch]);
        let out = supabash(&user, &args);
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("refuses a secret on its command line"),
            "{}",
            stderr(&out)
        );
        assert!(!marker.exists(), "{flags:?}: the command ran");
    }
}

/// Issue 23, item 7: `--sandbox` runs the command under bubblewrap: it sees its own process
/// tree only (no supabash environment anywhere in `/proc`), no network but loopback, an empty
/// `/root` and `/home`, and writes only its work directory. Without bubblewrap on PATH the
/// option fails clearly.
#[tokio::test]
async fn the_sandbox_hides_the_machine_from_the_command() {
    if Command::new("bwrap").arg("--version").output().is_err() {
        eprintln!("bubblewrap is not installed: only the refusal is tested");
    } else {
        let user = new_user();
        let ws = workspace_with(Via::Postgres, &user, &[("/a.txt", "a\n")]).await;
        let dsn = cluster().dsn("authenticator");
        let script = "cat /proc/[0-9]*/environ > environ.txt 2>/dev/null; \
                      tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' > net.txt; ls -A /root /home > home.txt 2>&1; \
                      (touch /var/tmp/run-sync-escape && echo wrote || echo refused) > outside.txt; \
                      echo inside > inside.txt";
        let out = run(
            &user,
            ws.id(),
            &["--sandbox", "--commit"],
            &["sh", "-c", script],
        );
        let doc = json_with_status(&out, 0);
        let revision = doc["session"]["revision"].as_str().unwrap();
        let files = revision_files(&ws, revision).await;
        let text = |p: &str| String::from_utf8_lossy(&files[p]).into_owned();
        assert!(!text("/environ.txt").contains(&dsn));
        assert!(
            !text("/environ.txt").contains("SUPABASH"),
            "{}",
            text("/environ.txt")
        );
        assert_eq!(text("/net.txt").trim(), "lo", "no network");
        assert_eq!(text("/outside.txt").trim(), "refused");
        assert_eq!(text("/inside.txt"), "inside\n");
        assert!(
            !text("/home.txt")
                .lines()
                .any(|l| !l.ends_with(':') && !l.is_empty()),
            "{}",
            text("/home.txt")
        );
    }
    // No bubblewrap on PATH: a clear refusal, nothing runs.
    let user = new_user();
    let ws = workspace_with(Via::Postgres, &user, &[("/a.txt", "a\n")]).await;
    let out = supabash_env(
        &user,
        &[
            "run",
            "--workspace",
            ws.id(),
            "--sandbox",
            "--",
            "/bin/true",
        ],
        &[("PATH", "/nonexistent")],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("bubblewrap"), "{}", stderr(&out));
}

/// The scratch directory: `--scratch-dir` when given, `$TMPDIR` when set, else `/dev/shm` on a
/// machine where it is a tmpfs with room (as here: the tree is a few bytes), else `/tmp`. It is
/// removed when the run ends.
#[tokio::test]
async fn the_scratch_directory_goes_where_asked_else_to_ram() {
    let user = new_user();
    let ws = workspace_with(Via::Postgres, &user, &[("/a.txt", "a\n")]).await;
    let work_dir = |extra: &[&str], tmpdir: Option<&Path>| {
        let mut args = vec!["run", "--workspace", ws.id()];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--", "pwd"]);
        let mut cmd = Command::new(supabash_tests::binary::supabash());
        cmd.args(&args)
            .env("SUPABASH_DSN", cluster().dsn("authenticator"))
            .env("SUPABASH_SUB", &user)
            .env_remove("TMPDIR");
        if let Some(t) = tmpdir {
            cmd.env("TMPDIR", t);
        }
        let out = cmd.output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let dir = PathBuf::from(
            String::from_utf8(out.stdout)
                .unwrap()
                .lines()
                .next()
                .unwrap(),
        );
        assert!(!dir.exists(), "removed after the run: {}", dir.display());
        dir
    };
    let chosen = Scratch::new();
    let asked = work_dir(&["--scratch-dir", chosen.0.to_str().unwrap()], None);
    assert!(asked.starts_with(&chosen.0), "{}", asked.display());
    let tmp = Scratch::new();
    let from_env = work_dir(&[], Some(&tmp.0));
    assert!(from_env.starts_with(&tmp.0), "{}", from_env.display());
    let shm_is_tmpfs = std::fs::read_to_string("/proc/mounts")
        .unwrap()
        .lines()
        .any(|l| l.split(' ').nth(1) == Some("/dev/shm") && l.split(' ').nth(2) == Some("tmpfs"));
    let default = work_dir(&[], None);
    let expected = if shm_is_tmpfs { "/dev/shm" } else { "/tmp" };
    assert!(default.starts_with(expected), "{}", default.display());
}

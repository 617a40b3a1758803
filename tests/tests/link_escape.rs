//! Symbolic links resolved as the kernel resolves them (issue 36, item 3): the server refuses a
//! commit leaving a link that leads outside the workspace through other links, or a loop;
//! import leaves such links out; and a tree stored around those checks (rows written by the
//! database owner, as a 0.6.0 database could hold them) never reaches outside the directory
//! `export` or `run` writes it into.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use supabash::workspace::CommitOptions;
use supabash_tests::client::{cluster, new_user, workspace_with, Via};
use supabash_tests::{Caller, Cluster, SqlRpc};

async fn commit(
    rest: &mut SqlRpc,
    who: &Caller,
    ws: &str,
    changes: Value,
) -> Result<Value, String> {
    rest.commit_at_head(who, ws, "links", changes).await
}

fn link(path: &str, target: &str) -> Value {
    json!({"op": "upsert", "path": path, "text": target, "kind": "symlink"})
}

fn refused(r: Result<Value, String>, naming: &str) {
    let e = r.expect_err("refused");
    assert!(e.starts_with("SUPABASH_INVALID_PATH"), "{e}");
    assert!(e.contains(naming), "{e}");
}

#[tokio::test]
async fn the_server_refuses_links_that_leave_the_workspace_or_loop() {
    let mut rest = SqlRpc::connect(&Cluster::shared().dsn("authenticator")).await;
    let alice = Caller::new_user();
    // b, then c: c climbs out through b.
    let ws = rest.create_workspace(&alice).await;
    commit(
        &mut rest,
        &alice,
        &ws,
        json!([link("/x/y/b", "../.."), link("/latest", "x/y")]),
    )
    .await
    .unwrap();
    refused(
        commit(
            &mut rest,
            &alice,
            &ws,
            json!([link("/x/y/c", "b/../../../etc")]),
        )
        .await,
        "/x/y/c",
    );
    // c, then b: b makes c climb out.
    let ws = rest.create_workspace(&alice).await;
    commit(
        &mut rest,
        &alice,
        &ws,
        json!([link("/x/y/c", "b/../../../etc")]),
    )
    .await
    .unwrap();
    refused(
        commit(&mut rest, &alice, &ws, json!([link("/x/y/b", "../..")])).await,
        "/x/y/c",
    );
    // Moved into place: refused too.
    commit(&mut rest, &alice, &ws, json!([link("/z/w/b", "../..")]))
        .await
        .unwrap();
    refused(
        commit(
            &mut rest,
            &alice,
            &ws,
            json!([{"op": "move", "from": "/z/w/b", "path": "/x/y/b"}]),
        )
        .await,
        "/x/y/c",
    );
    // Both in one commit.
    let ws = rest.create_workspace(&alice).await;
    refused(
        commit(
            &mut rest,
            &alice,
            &ws,
            json!([link("/x/y/b", "../.."), link("/x/y/c", "b/../../../etc")]),
        )
        .await,
        "/x/y/c",
    );
    // A loop, in one commit and in two.
    refused(
        commit(
            &mut rest,
            &alice,
            &ws,
            json!([link("/l1", "l2"), link("/l2", "l1")]),
        )
        .await,
        "more than 40",
    );
    commit(&mut rest, &alice, &ws, json!([link("/l1", "l2")]))
        .await
        .unwrap();
    refused(
        commit(&mut rest, &alice, &ws, json!([link("/l2", "l1")])).await,
        "/l1",
    );
    // Ordinary links, and files beside them, still commit.
    commit(
        &mut rest,
        &alice,
        &ws,
        json!([link("/d/up", ".."), link("/d/side", "../e/f"),
               {"op": "upsert", "path": "/e/f", "text": "f"}]),
    )
    .await
    .unwrap();
}

/// A fresh scratch directory under the system temp dir, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Scratch {
        let dir = std::env::temp_dir().join(format!("link-escape-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir(&dir).unwrap();
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn supabash(user: &str, args: &[&str]) -> Output {
    Command::new(supabash_tests::binary::supabash())
        .args(args)
        .env("SUPABASH_DSN", cluster().dsn("authenticator"))
        .env("SUPABASH_SUB", user)
        .output()
        .unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Every file named `name` under `dir`, links not followed.
fn find(dir: &Path, name: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let t = e.file_type().unwrap();
        if t.is_dir() {
            found.extend(find(&e.path(), name));
        } else if e.file_name() == name {
            found.push(e.path());
        }
    }
    found
}

/// A workspace whose stored tree holds what the checks refuse: `/x/y/b -> ../..` with
/// `/x/y/c -> b/../../../etc`, `/x/y/c2 -> b/..` (the directory holding the export) with a
/// file below it, and a loop `/l1 -> l2`, `/l2 -> l1`. Committed as files, then turned into
/// links (and the file moved below one) by the database owner.
async fn hostile_workspace(user: &str) -> (String, String) {
    let ws = workspace_with(
        Via::Postgres,
        user,
        &[
            ("/x/y/b", "../.."),
            ("/x/y/c2", "b/.."),
            ("/planted.txt", "pwned\n"),
            ("/l2", "l1"),
            ("/ok.txt", "ok\n"),
        ],
    )
    .await;
    ws.fs().symlink("b/../../../etc", "/x/y/c").await.unwrap();
    ws.fs().symlink("l2", "/l1").await.unwrap();
    let head = ws.commit(CommitOptions::new("links")).await.unwrap();
    let admin = supabash_tests::support::admin(cluster()).await;
    let changed = admin
        .execute(
            "UPDATE supabash.entries SET kind = 'symlink', mode = 511
              WHERE workspace_id = $1::text::uuid AND valid_until IS NULL
                AND path IN ('/x/y/b', '/x/y/c2', '/l2')",
            &[&ws.id()],
        )
        .await
        .unwrap();
    assert_eq!(changed, 3);
    let changed = admin
        .execute(
            "UPDATE supabash.entries SET path = '/x/y/c2/planted.txt'
              WHERE workspace_id = $1::text::uuid AND path = '/planted.txt'",
            &[&ws.id()],
        )
        .await
        .unwrap();
    assert_eq!(changed, 1);
    (ws.id().to_owned(), head.receipt.revision)
}

/// No link under `root` resolves outside it.
fn links_stay_inside(root: &Path) {
    let root = std::fs::canonicalize(root).unwrap();
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let t = e.file_type().unwrap();
            if t.is_dir() {
                stack.push(e.path());
            } else if t.is_symlink() {
                if let Ok(real) = std::fs::canonicalize(e.path()) {
                    assert!(
                        real.starts_with(&root),
                        "{} -> {}",
                        e.path().display(),
                        real.display()
                    );
                }
            }
        }
    }
}

#[tokio::test]
async fn export_and_run_of_a_hostile_stored_tree_stay_inside_their_directory() {
    let user = new_user();
    let (ws, head) = hostile_workspace(&user).await;
    let scratch = Scratch::new();
    for revision in [None, Some(head.as_str())] {
        let out_dir = scratch.0.join(format!("out-{}", revision.is_some()));
        let mut args = vec!["export", "--workspace", &ws, out_dir.to_str().unwrap()];
        if let Some(r) = revision {
            args.extend(["--revision", r]);
        }
        let out = supabash(&user, &args);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let shown = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
        assert!(shown.contains("not written"), "{shown}");
        for gone in ["x/y/c", "x/y/c2", "l1", "l2"] {
            assert!(
                std::fs::symlink_metadata(out_dir.join(gone)).is_err(),
                "{gone} written: {shown}"
            );
        }
        assert_eq!(
            std::fs::read_link(out_dir.join("x/y/b")).unwrap(),
            Path::new("../..")
        );
        assert_eq!(
            std::fs::read_to_string(out_dir.join("ok.txt")).unwrap(),
            "ok\n"
        );
        links_stay_inside(&out_dir);
    }
    assert_eq!(find(&scratch.0, "planted.txt"), Vec::<PathBuf>::new());

    // `run` writes the same tree into its private directory (the command sees no way out),
    // then refuses to stage onto a tree holding such links: the links are named.
    let out = supabash(
        &user,
        &[
            "run",
            "--workspace",
            &ws,
            "--scratch-dir",
            scratch.0.to_str().unwrap(),
            "--json",
            "--",
            "sh",
            "-c",
            "ls x/y; test ! -e x/y/c && test ! -e x/y/c2 && test ! -e l1",
        ],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("INVALID_PATH") && err.contains("/l1"), "{err}");
    assert_eq!(find(&scratch.0, "planted.txt"), Vec::<PathBuf>::new());
}

#[tokio::test]
async fn import_leaves_out_links_that_leave_the_directory() {
    let user = new_user();
    let ws = workspace_with(Via::Postgres, &user, &[("/a.txt", "a\n")]).await;
    let scratch = Scratch::new();
    let src = scratch.0.join("src");
    std::fs::create_dir_all(src.join("x/y")).unwrap();
    std::os::unix::fs::symlink("../..", src.join("x/y/b")).unwrap();
    std::os::unix::fs::symlink("b/../../../etc", src.join("x/y/c")).unwrap();
    std::os::unix::fs::symlink("l2", src.join("l1")).unwrap();
    std::os::unix::fs::symlink("l1", src.join("l2")).unwrap();
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
            "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let not_staged: Vec<&str> = doc["sync"]["notStaged"]
        .as_array()
        .unwrap_or_else(|| panic!("{doc}"))
        .iter()
        .map(|n| n["path"].as_str().unwrap())
        .collect();
    assert_eq!(not_staged, ["/l1", "/l2", "/x/y/c"], "{doc}");
    let revision = doc["session"]["revision"].as_str().unwrap();
    let tree = supabash(
        &user,
        &["tree", "--workspace", ws.id(), "--rev", revision, "--json"],
    );
    let listed = String::from_utf8_lossy(&tree.stdout);
    assert!(
        listed.contains("/x/y/b") && !listed.contains("/x/y/c"),
        "{listed}"
    );
}

#[tokio::test]
async fn a_mount_of_a_hostile_stored_tree_hands_the_kernel_no_way_out() {
    if !Path::new("/dev/fuse").exists() {
        eprintln!("SKIPPED: /dev/fuse is absent on this machine");
        return;
    }
    let user = new_user();
    let (ws, _) = hostile_workspace(&user).await;
    let scratch = Scratch::new();
    let dir = scratch.0.join("mnt");
    std::fs::create_dir(&dir).unwrap();
    let mut child = Command::new(supabash_tests::binary::supabash())
        .arg("mount")
        .arg(&dir)
        .env("SUPABASH_DSN", cluster().dsn("authenticator"))
        .env("SUPABASH_SUB", &user)
        .env("SUPABASH_WORKSPACE", &ws)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    std::io::BufRead::read_line(&mut stdout, &mut line).unwrap();
    assert!(line.starts_with("mounted "), "{line}");
    let script = "cat x/y/c2/planted.txt; echo more > x/y/c2/planted2.txt; ls x/y/c/ ; \
                  readlink -f x/y/c; cat l1; cat ok.txt";
    let out = Command::new("sh")
        .args(["-c", script])
        .current_dir(&dir)
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&out.stdout).into_owned();
    // SAFETY: kill with a pid this test spawned and has not reaped yet.
    #[allow(unsafe_code)]
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let ended = child.wait_with_output().unwrap();
    let _ = Command::new("fusermount3").arg("-u").arg(&dir).status();
    let logged = String::from_utf8_lossy(&ended.stderr).into_owned();
    // Only ok.txt reads; nothing lands in the directory holding the mount.
    assert_eq!(
        shown.trim_end(),
        "ok",
        "{shown}\n{}\n{logged}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(logged.contains("not followed"), "{logged}");
    assert_eq!(find(&scratch.0, "planted2.txt"), Vec::<PathBuf>::new());
    assert!(std::fs::read_dir(&scratch.0).unwrap().count() == 1);
}

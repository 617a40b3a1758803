//! The `supabash` operator commands, run as the built binary against a throwaway cluster with
//! the extension, over both transports (direct Postgres acting as a user, and postrust with a
//! user's token): output and `--json` shapes, exit statuses, secrets kept out of every output,
//! profiles from a config file, completion scripts, and diffs that show renames as renames.
//!
//! The binary comes from `supabash_tests::binary` (`$SUPABASH_BIN`, else the build's own).

use serde_json::Value;
use std::process::{Command, Output};
use supabash::workspace::CommitOptions;
use supabash::Workspace;
use supabash_tests::client::{
    cluster, new_user, postrust_url, sign, user_claims, workspace_with, Via, BOTH,
};

/// How the binary reaches the database: environment variables only (no secret on the command
/// line).
#[derive(Clone)]
struct Conn {
    env: Vec<(String, String)>,
}

impl Conn {
    fn new(via: Via, user: &str) -> Conn {
        let env = match via {
            Via::Postgres => vec![
                ("SUPABASH_DSN".into(), cluster().dsn("authenticator")),
                ("SUPABASH_SUB".into(), user.to_owned()),
            ],
            Via::Postgrest => vec![
                ("SUPABASH_URL".into(), postrust_url().to_owned()),
                ("SUPABASH_TOKEN".into(), sign(&user_claims(user))),
                ("SUPABASH_APIKEY".into(), "test-publishable-key".into()),
            ],
        };
        Conn { env }
    }

    fn with(mut self, key: &str, value: &str) -> Conn {
        self.env.push((key.into(), value.into()));
        self
    }

    fn run(&self, args: &[&str]) -> Output {
        let mut c = Command::new(supabash_tests::binary::supabash());
        c.args(args);
        for k in [
            "SUPABASH_DSN",
            "SUPABASH_SUB",
            "SUPABASH_URL",
            "SUPABASH_TOKEN",
            "SUPABASH_APIKEY",
            "SUPABASH_WORKSPACE",
            "SUPABASH_PROFILE",
            "SUPABASH_CONFIG",
            "SUPABASH_ADMIN_DSN",
            "NO_COLOR",
        ] {
            c.env_remove(k);
        }
        // No config file of the machine's user is read.
        c.env("HOME", "/nonexistent").env_remove("XDG_CONFIG_HOME");
        for (k, v) in &self.env {
            c.env(k, v);
        }
        c.output().unwrap()
    }

    /// Runs a command that must succeed; its stdout.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "supabash {args:?}: {}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    fn json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.push("--json");
        serde_json::from_str(&self.ok(&all)).unwrap()
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A workspace with three revisions: seed (a, notes/b, notes/old), an edit of a and a rename
/// of notes/old to archive/old, then a new file c.
async fn three_revisions(via: Via, user: &str) -> (Workspace, Vec<String>) {
    let ws = workspace_with(
        via,
        user,
        &[
            ("/a.md", "one\ntwo\nthree\n"),
            ("/notes/b.md", "b\n"),
            ("/notes/old.md", "moving\n"),
        ],
    )
    .await;
    let mut revs = vec![ws.base_revision().unwrap()];
    ws.fs()
        .write("/a.md", "one\n2\nthree\nfour\n")
        .await
        .unwrap();
    ws.fs().mkdir("/archive", true).await.unwrap();
    ws.fs()
        .mv("/notes/old.md", "/archive/old.md")
        .await
        .unwrap();
    let r = ws
        .commit(CommitOptions::new("tester").with_cause("edit and move"))
        .await
        .unwrap();
    revs.push(r.receipt.revision);
    ws.fs().write("/c.md", "c\n").await.unwrap();
    revs.push(
        ws.commit(CommitOptions::new("tester"))
            .await
            .unwrap()
            .receipt
            .revision,
    );
    (ws, revs)
}

#[tokio::test]
async fn history_and_files_over_both_transports() {
    for via in BOTH {
        let user = new_user();
        let (ws, revs) = three_revisions(via, &user).await;
        let c = Conn::new(via, &user).with("SUPABASH_WORKSPACE", ws.id());

        // log: every page, oldest first; one page with --limit, the next with --cursor.
        let log = c.json(&["log"]);
        let records = log["records"].as_array().unwrap();
        let ids: Vec<&str> = records
            .iter()
            .map(|r| r["revision"].as_str().unwrap())
            .collect();
        assert_eq!(
            ids,
            revs.iter().map(String::as_str).collect::<Vec<_>>(),
            "{via:?}"
        );
        assert!(log["nextCursor"].is_null());
        assert_eq!(records[1]["cause"], "edit and move");
        let first = c.json(&["log", "--limit", "2"]);
        assert_eq!(first["records"].as_array().unwrap().len(), 2);
        let cursor = first["nextCursor"].as_str().unwrap();
        let rest = c.json(&["log", "--cursor", cursor]);
        assert_eq!(rest["records"][0]["revision"], revs[2].as_str());
        let text = c.ok(&["log"]);
        assert!(
            text.contains("edit and move")
                && text.contains("move   /archive/old.md (from /notes/old.md)"),
            "{text}"
        );
        assert_eq!(c.ok(&["log", "--oneline"]).lines().count(), 3);
        // log PATH: one path's versions, newest first; a move followed back on request.
        let path_log = c.json(&["log", "/archive/old.md"]);
        assert_eq!(
            path_log["versions"].as_array().unwrap().len(),
            1,
            "{path_log}"
        );
        assert_eq!(path_log["versions"][0]["op"], "move");
        assert_eq!(path_log["versions"][0]["from"], "/notes/old.md");
        let followed = c.json(&["log", "/archive/old.md", "--follow-moves", "--reverse"]);
        let ops: Vec<&str> = followed["versions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["op"].as_str().unwrap())
            .collect();
        assert_eq!(ops, ["add", "move"], "{followed}");
        let text = c.ok(&["log", "/a.md"]);
        assert!(
            text.lines()
                .next()
                .unwrap()
                .contains("modify /a.md  17 bytes"),
            "{text}"
        );

        // show: by id, by position, by prefix, head by default.
        let shown = c.json(&["show", &revs[1]]);
        assert_eq!(shown["revision"], revs[1].as_str());
        assert_eq!(shown["position"], 2);
        assert_eq!(c.json(&["show", "2"])["revision"], revs[1].as_str());
        assert_eq!(
            c.json(&["show", &revs[1][..8]])["revision"],
            revs[1].as_str()
        );
        assert_eq!(c.json(&["show"])["revision"], revs[2].as_str());
        let text = c.ok(&["show", "2"]);
        assert!(text.contains("\ncause           edit and move\n"), "{text}");
        assert!(text.contains("\nchanges         2\n"), "{text}");

        // ls, tree, cat at the head and at an older revision.
        let root = c.json(&["ls"]);
        let names: Vec<(&str, &str)> = root["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| (e["name"].as_str().unwrap(), e["kind"].as_str().unwrap()))
            .collect();
        assert_eq!(
            names,
            [
                ("a.md", "file"),
                ("archive", "directory"),
                ("c.md", "file"),
                ("notes", "directory")
            ]
        );
        assert_eq!(root["revision"], revs[2].as_str());
        assert_eq!(c.ok(&["ls", "/notes", "--rev", "1"]), "b.md\nold.md\n");
        let long = c.ok(&["ls", "-l", "/"]);
        let a = long.lines().find(|l| l.ends_with(" a.md")).unwrap();
        assert!(a.starts_with("file") && a.contains(" 17  "), "{long}");
        assert!(
            long.lines()
                .any(|l| l.starts_with("directory") && l.ends_with(" notes/")),
            "{long}"
        );
        let tree = c.json(&["tree", "/notes", "--rev", &revs[0]]);
        let paths: Vec<&str> = tree["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["path"].as_str().unwrap())
            .collect();
        assert_eq!(paths, ["/notes/b.md", "/notes/old.md"]);
        assert_eq!(tree["revision"], revs[0].as_str());
        assert_eq!(c.ok(&["tree"]), "/\n    a.md (17 bytes)\n    archive/\n        old.md (7 bytes)\n    c.md (2 bytes)\n    notes/\n        b.md (2 bytes)\n");
        assert_eq!(c.ok(&["cat", "/a.md"]), "one\n2\nthree\nfour\n");
        assert_eq!(c.ok(&["cat", "a.md", "-r", "1"]), "one\ntwo\nthree\n");
        // --at: the last revision committed at or before a time.
        let first_at = log["records"][0]["committedAt"].as_str().unwrap();
        assert_eq!(
            c.ok(&["cat", "a.md", "--at", first_at]),
            "one\ntwo\nthree\n"
        );
        assert_eq!(
            c.json(&["show", first_at])["revision"],
            revs[0].as_str(),
            "show takes a time"
        );
        assert_eq!(
            c.json(&["ls", "--at", first_at])["revision"],
            revs[0].as_str()
        );
        let doc = c.json(&["cat", "/a.md", "--rev", "1"]);
        assert_eq!(doc["text"], "one\ntwo\nthree\n");
        assert_eq!(doc["revision"], revs[0].as_str());

        // Not found: a path, a revision, an id nobody has (status 3, the code named).
        let missing = c.run(&["cat", "/nope.md"]);
        assert_eq!(missing.status.code(), Some(3), "{}", stderr(&missing));
        assert!(
            stderr(&missing).starts_with("supabash: NOT_FOUND: "),
            "{}",
            stderr(&missing)
        );
        let missing = c.run(&["show", "9"]);
        assert_eq!(missing.status.code(), Some(3), "{}", stderr(&missing));
        assert!(stderr(&missing).contains("REVISION_NOT_FOUND"));
        let missing = c.run(&["show", &uuid::Uuid::new_v4().to_string(), "--json"]);
        assert_eq!(missing.status.code(), Some(3), "{}", stderr(&missing));
        let report: Value = serde_json::from_str(stderr(&missing).trim()).unwrap();
        assert_eq!(report["error"]["code"], "REVISION_NOT_FOUND");
        assert_eq!(report["error"]["exitStatus"], 3);
        assert_eq!(c.run(&["ls", "/nope"]).status.code(), Some(3));
    }
}

#[tokio::test]
async fn diff_shows_renames_as_renames_and_counts_lines() {
    for via in BOTH {
        let user = new_user();
        let (ws, revs) = three_revisions(via, &user).await;
        let c = Conn::new(via, &user).with("SUPABASH_WORKSPACE", ws.id());
        let text = c.ok(&["diff", "1", "2"]);
        assert_eq!(
            text,
            "diff --git a/a.md b/a.md\n--- a/a.md\n+++ b/a.md\n@@ -1,3 +1,4 @@\n one\n-two\n+2\n three\n+four\n\
             diff --git a/notes/old.md b/archive/old.md\nsimilarity index 100%\nrename from notes/old.md\nrename to archive/old.md\n",
            "{via:?}"
        );
        // Not on a terminal: no colour unless asked for.
        assert!(!text.contains('\x1b'));
        assert!(c
            .ok(&["diff", "1", "2", "--color=always"])
            .contains("\x1b[32m+2\x1b[0m"));
        assert!(!c
            .clone()
            .with("NO_COLOR", "1")
            .ok(&["diff", "1", "2", "--color", "never"])
            .contains('\x1b'));
        let stat = c.ok(&["diff", &revs[0], "--stat"]);
        assert_eq!(
            stat,
            format!(
                " {:<30} | 3 ++-\n {:<30} | 0\n {:<30} | 1 +\n 3 files changed, 3 insertions(+), 1 deletion(-)\n",
                "a.md", "notes/old.md => archive/old.md", "c.md"
            )
        );
        let s = c.json(&["diff", "1", "head", "--stat"]);
        assert_eq!(
            (s["insertions"].as_u64(), s["deletions"].as_u64()),
            (Some(3), Some(1))
        );
        assert_eq!(s["files"][1]["kind"], "moved");
        assert_eq!(s["files"][1]["from"], "/notes/old.md");
        assert_eq!(s["files"][0]["insertions"], 2);
        let d = c.json(&["diff", "1", "2"]);
        assert_eq!(d["from"], revs[0].as_str());
        assert_eq!(d["to"], revs[1].as_str());
        let kinds: Vec<(&str, &str)> = d["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| (e["kind"].as_str().unwrap(), e["path"].as_str().unwrap()))
            .collect();
        assert_eq!(kinds, [("modified", "/a.md"), ("moved", "/archive/old.md")]);
        let only = c.ok(&["diff", "1", "3", "--path", "/c.md"]);
        assert!(
            only.starts_with("diff --git a/c.md b/c.md\nnew file mode 100644\n--- /dev/null\n"),
            "{only}"
        );
    }
}

#[tokio::test]
async fn restore_checkpoints_and_purge() {
    for via in BOTH {
        let user = new_user();
        let (ws, revs) = three_revisions(via, &user).await;
        let c = Conn::new(via, &user).with("SUPABASH_WORKSPACE", ws.id());

        let restored = c.json(&["restore", "1", "--cause", "back to the seed"]);
        let receipt = &restored["receipt"];
        assert_eq!(receipt["sourceRevision"], revs[0].as_str());
        assert_eq!(receipt["parentRevision"], revs[2].as_str());
        assert_eq!(receipt["position"], 4);
        assert_eq!(c.ok(&["cat", "/a.md"]), "one\ntwo\nthree\n");
        assert_eq!(c.run(&["cat", "/c.md"]).status.code(), Some(3));
        let text = c.ok(&["restore", &revs[2]]);
        assert!(
            text.starts_with(&format!("restored {} as revision ", &revs[2][..8])),
            "{text}"
        );

        let cp = c.json(&[
            "checkpoint",
            "--label",
            "keep me",
            "--rev",
            "2",
            "--idempotency-key",
            "k1",
        ]);
        assert_eq!(cp["revision"], revs[1].as_str());
        assert_eq!(cp["label"], "keep me");
        // The same key for another revision: a conflict (status 5).
        let clash = c.run(&["checkpoint", "--rev", "3", "--idempotency-key", "k1"]);
        assert_eq!(clash.status.code(), Some(5), "{}", stderr(&clash));
        assert!(stderr(&clash).starts_with("supabash: IDEMPOTENCY_CONFLICT: "));
        c.ok(&["checkpoint"]);
        let all = c.json(&["checkpoints"]);
        assert_eq!(all.as_array().unwrap().len(), 2);
        assert!(c.ok(&["checkpoints"]).contains("keep me"));

        // purge: a dry run by default; revision 2 is pinned, the head stays.
        let dry = c.json(&["purge", "--keep", "1"]);
        assert_eq!(dry["dryRun"], true);
        let doomed: Vec<&str> = dry["revisions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_str().unwrap())
            .collect();
        let head = c.json(&["show"])["revision"].as_str().unwrap().to_owned();
        assert!(
            !doomed.is_empty() && !doomed.contains(&revs[1].as_str()),
            "{dry}"
        );
        assert!(!doomed.contains(&head.as_str()), "{dry}");
        let text = c.ok(&["purge", "--keep", "1"]);
        assert!(
            text.starts_with(&format!("would drop {} revision(s)", doomed.len())),
            "{text}"
        );
        assert!(text.ends_with("nothing changed: run again with --apply\n"));
        assert_eq!(c.json(&["log"])["records"].as_array().unwrap().len(), 5);
        let applied = c.json(&["purge", "--keep", "1", "--apply"]);
        assert_eq!(applied["dryRun"], false);
        assert_eq!(applied["revisions"], dry["revisions"]);
        assert_eq!(
            c.json(&["log"])["records"].as_array().unwrap().len(),
            5 - doomed.len()
        );
        assert_eq!(c.run(&["purge", "--max-age", "7x"]).status.code(), Some(2));
    }
}

/// `verify`, `run`, `import` and `export` take the workspace from SUPABASH_WORKSPACE as `log`
/// does (`mount`: tests/mount.rs), over both transports.
#[tokio::test]
async fn every_workspace_command_takes_the_workspace_from_the_environment() {
    let user = new_user();
    let (ws, revs) = three_revisions(Via::Postgres, &user).await;
    for via in BOTH {
        let c = Conn::new(via, &user).with("SUPABASH_WORKSPACE", ws.id());
        let report = c.json(&["verify"]);
        assert_eq!(report["workspaceId"], ws.id(), "{via:?}");
        assert_eq!(report["ok"], true, "{via:?} {report}");
        let ran: Value = serde_json::from_str(&c.ok(&["run", "--json", "--", "true"])).unwrap();
        assert_eq!(ran["session"]["workspaceId"], ws.id(), "{via:?}");
        let dir = std::env::temp_dir().join(format!("cli-env-{}", uuid::Uuid::new_v4()));
        let dir_s = dir.to_str().unwrap();
        c.ok(&["export", "--revision", &revs[0], dir_s]);
        assert_eq!(
            std::fs::read(dir.join("notes/old.md")).unwrap(),
            b"moving\n"
        );
        // The head lacks notes/old.md: importing the first revision's files stages it back.
        let imported = c.json(&["import", dir_s]);
        assert_eq!(imported["session"]["workspaceId"], ws.id(), "{via:?}");
        assert!(
            imported["session"]["pathsTouched"]
                .as_array()
                .unwrap()
                .contains(&Value::from("/notes/old.md")),
            "{via:?} {imported}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
    // A problem verify finds: status 8 (a check found problems), the report on stdout first.
    let admin = supabash_tests::support::admin(cluster()).await;
    admin
        .execute(
            "UPDATE supabash.entries SET body_size = body_size + 1
              WHERE workspace_id = $1::text::uuid AND path = '/c.md'",
            &[&ws.id()],
        )
        .await
        .unwrap();
    let c = Conn::new(Via::Postgres, &user).with("SUPABASH_WORKSPACE", ws.id());
    let out = c.run(&["verify", "--json"]);
    assert_eq!(out.status.code(), Some(8), "{}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["ok"], false, "{report}");
    let error: Value = serde_json::from_str(&stderr(&out)).unwrap();
    assert_eq!(error["error"]["code"], "PROBLEMS", "{error}");
    assert_eq!(error["error"]["exitStatus"], 8, "{error}");
}

#[tokio::test]
async fn exit_statuses_name_usage_and_permission_failures() {
    let owner = new_user();
    let (ws, revs) = three_revisions(Via::Postgres, &owner).await;
    for via in BOTH {
        let other = Conn::new(via, &new_user()).with("SUPABASH_WORKSPACE", ws.id());
        for args in [
            &["log"][..],
            &["cat", "/a.md"],
            &["ls"],
            &["checkpoints"],
            &["purge"],
        ] {
            let out = other.run(args);
            assert_eq!(
                out.status.code(),
                Some(4),
                "{via:?} {args:?}: {}",
                stderr(&out)
            );
            assert!(
                stderr(&out).starts_with("supabash: AUTHORIZATION: "),
                "{}",
                stderr(&out)
            );
        }
    }
    // A token signed with another key: authentication (status 4).
    let forged = Conn::new(Via::Postgrest, &owner)
        .with(
            "SUPABASH_TOKEN",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl",
        )
        .with("SUPABASH_WORKSPACE", ws.id());
    let out = forged.run(&["log"]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(stderr(&out).contains("AUTHENTICATION"), "{}", stderr(&out));

    let c = Conn::new(Via::Postgres, &owner);
    // Usage: no workspace, an unknown flag, a malformed revision, no connection at all.
    let out = c.run(&["log"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).starts_with("supabash: USAGE: give --workspace"));
    assert_eq!(c.run(&["log", "--frobnicate"]).status.code(), Some(2));
    assert_eq!(c.run(&["show", "-w", ws.id(), "zz"]).status.code(), Some(2));
    assert_eq!(c.run(&["show", "-w", ws.id(), "ab"]).status.code(), Some(2));
    assert_eq!(
        c.run(&["delete-workspace", "--workspace", ws.id()])
            .status
            .code(),
        Some(2)
    );
    let nothing = Conn { env: vec![] }.run(&["log", "-w", ws.id()]);
    assert_eq!(nothing.status.code(), Some(2), "{}", stderr(&nothing));
    // A malformed workspace id reaches the server: INVALID_ARGUMENT is a usage failure too.
    let out = c.run(&["log", "-w", "not-a-uuid"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).starts_with("supabash: INVALID_ARGUMENT: "),
        "{}",
        stderr(&out)
    );
    // The database is unreachable: retryable (status 6).
    let down = Conn { env: vec![] }
        .with(
            "SUPABASH_DSN",
            "host=127.0.0.1 port=1 user=authenticator dbname=app connect_timeout=2",
        )
        .with("SUPABASH_SUB", &owner);
    let out = down.run(&["log", "-w", ws.id()]);
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    assert!(
        stderr(&out).starts_with("supabash: BACKEND: "),
        "{}",
        stderr(&out)
    );
    // The existing commands follow the same rules.
    let other = Conn::new(Via::Postgres, &new_user());
    let out = other.run(&["fork", "--workspace", ws.id()]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    let out = other.run(&["redact", "-w", ws.id(), "--path", "/a.md"]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    let forked = c.json(&["fork", "-w", ws.id(), "--revision", "1", "--label", "try"]);
    assert_eq!(forked["forkedFrom"]["workspaceId"], ws.id());
    assert_eq!(forked["forkedFrom"]["revision"], revs[0].as_str());
    let fork = forked["workspaceId"].as_str().unwrap();
    assert_eq!(c.ok(&["ls", "-w", fork]), "a.md\nnotes/\n");
    let listed = c.json(&["workspaces"]);
    assert_eq!(listed.as_array().unwrap().len(), 2);
    assert_eq!(listed[1]["label"], "try");
    let deleted = c.json(&["delete-workspace", "--workspace", fork, "--yes"]);
    assert_eq!(deleted["workspaceId"], fork);
}

#[tokio::test]
async fn secrets_never_reach_the_output() {
    let user = new_user();
    let (ws, _) = three_revisions(Via::Postgrest, &user).await;
    let dir = std::env::temp_dir().join(format!(
        "supabash-cli-secrets-{}",
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let token = sign(&user_claims(&user));
    let token_file = dir.join("token");
    std::fs::write(&token_file, format!("{token}\n")).unwrap();
    // The token from a file, the apikey from the environment: no secret on the command line.
    let c = Conn { env: vec![] }
        .with("SUPABASH_URL", postrust_url())
        .with("SUPABASH_TOKEN_FILE", token_file.to_str().unwrap())
        .with("SUPABASH_APIKEY", "apikey-secret-value")
        .with("SUPABASH_WORKSPACE", ws.id());
    let runs = [
        c.run(&["log", "--json"]),
        c.run(&["show", "--json"]),
        c.run(&["cat", "/nope", "--json"]),
        c.run(&["diff", "1", "3"]),
        c.run(&["purge"]),
        c.run(&["log", "-w", &new_user()]),
        c.run(&["log", "--help"]),
    ];
    assert!(runs[0].status.success(), "{}", stderr(&runs[0]));
    for out in &runs {
        for text in [
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        ] {
            assert!(
                !text.contains(&token) && !text.contains("apikey-secret-value"),
                "{text}"
            );
        }
    }
    // A password in the connection string appears in no failure either.
    let dsn = format!(
        "postgres://authenticator:pw-secret-123@127.0.0.1:{}/app",
        cluster().port
    );
    let out = Conn { env: vec![] }
        .with("SUPABASH_DSN", &dsn)
        .with("SUPABASH_SUB", &user)
        .run(&["log", "-w", &new_user(), "--json"]);
    assert!(!out.status.success());
    let all = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    assert!(!all.contains("pw-secret-123"), "{all}");
    assert!(
        serde_json::from_str::<Value>(stderr(&out).trim()).is_ok(),
        "{all}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn profiles_come_from_the_config_file() {
    let user = new_user();
    let (ws, revs) = three_revisions(Via::Postgres, &user).await;
    let dir = std::env::temp_dir().join(format!(
        "supabash-cli-profiles-{}",
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let token_file = dir.join("token");
    std::fs::write(&token_file, sign(&user_claims(&user))).unwrap();
    let dsn_file = dir.join("dsn");
    std::fs::write(&dsn_file, cluster().dsn("authenticator")).unwrap();
    let config = dir.join("config.toml");
    std::fs::write(
        &config,
        format!(
            "default_profile = \"direct\"\n\n\
             [profiles.direct]\ndsn_file = {dsn:?}\nsub = {user:?}\nworkspace = {ws:?}\n\n\
             [profiles.http]\nurl = {url:?}\ntoken_file = {token:?}\napikey = \"test-publishable-key\"\nworkspace = {ws:?}\n\n\
             [profiles.stranger]\ndsn_file = {dsn:?}\nsub = {stranger:?}\nworkspace = {ws:?}\n",
            dsn = dsn_file.to_str().unwrap(),
            user = user,
            ws = ws.id(),
            url = postrust_url(),
            token = token_file.to_str().unwrap(),
            stranger = new_user(),
        ),
    )
    .unwrap();
    let cfg = config.to_str().unwrap();
    let c = Conn { env: vec![] }.with("SUPABASH_CONFIG", cfg);
    // The default profile, a profile by flag, by environment, and --config instead of the
    // environment.
    assert_eq!(c.json(&["show"])["revision"], revs[2].as_str());
    assert_eq!(
        c.json(&["show", "--profile", "http", "1"])["revision"],
        revs[0].as_str()
    );
    assert_eq!(
        c.clone()
            .with("SUPABASH_PROFILE", "http")
            .json(&["show", "2"])["revision"],
        revs[1].as_str()
    );
    assert_eq!(
        Conn { env: vec![] }.json(&["show", "--config", cfg])["revision"],
        revs[2].as_str()
    );
    let out = c.clone().with("SUPABASH_PROFILE", "stranger").run(&["log"]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    // Flags and environment win over the profile.
    let other = Workspace::builder(supabash_tests::client::transport(Via::Postgres, &user).await)
        .create()
        .await
        .unwrap();
    assert_eq!(
        c.json(&["log", "-w", other.id()])["records"]
            .as_array()
            .unwrap()
            .len(),
        0
    );
    // An unknown profile, a broken file: usage (status 2), the file's text never quoted.
    let out = c.run(&["log", "--profile", "nope"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no profile \"nope\"")
            && stderr(&out).contains("direct, http, stranger")
    );
    let broken = dir.join("broken.toml");
    std::fs::write(
        &broken,
        "[profiles.x]\ntoken = \"tok-broken-secret\nsub = 1\n",
    )
    .unwrap();
    let out = Conn { env: vec![] }.run(&["log", "--config", broken.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("line 2") && !stderr(&out).contains("tok-broken-secret"),
        "{}",
        stderr(&out)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn completion_scripts_are_generated() {
    let c = Conn { env: vec![] };
    for (shell, marker) in [
        ("bash", "complete -F"),
        ("zsh", "#compdef supabash"),
        ("fish", "complete -c supabash"),
    ] {
        let script = c.ok(&["completions", shell]);
        assert!(script.contains(marker), "{shell}: {script:.200}");
        for sub in ["log", "diff", "checkpoints", "verifier"] {
            assert!(script.contains(sub), "{shell} lacks {sub}");
        }
    }
    assert_eq!(
        c.run(&["completions", "powershell-9"]).status.code(),
        Some(2)
    );
}

#[tokio::test]
async fn verifiers_are_registered_rotated_and_revoked_by_the_owner() {
    let dir = std::env::temp_dir().join(format!(
        "supabash-cli-verifier-{}",
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let kid = format!("cli-{}", uuid::Uuid::new_v4().simple());
    let owner = Conn { env: vec![] }.with("SUPABASH_ADMIN_DSN", &cluster().dsn("postgres"));
    let key_file = dir.join("private.key");
    let key = key_file.to_str().unwrap();
    let common = [
        "--issuer",
        "https://jobs.example",
        "--origin",
        "https://project.example",
    ];
    let mut args = vec![
        "verifier",
        "register",
        kid.as_str(),
        "--private-key-out",
        key,
    ];
    args.extend(common);
    let mut json_args = args.clone();
    json_args.push("--json");
    let printed = owner.ok(&json_args);
    let registered: Value = serde_json::from_str(&printed).unwrap();
    assert_eq!(registered["keyId"], kid.as_str());
    assert_eq!(registered["rotated"], false);
    assert_eq!(registered["privateKeyFile"], key);
    let private = std::fs::read_to_string(&key_file).unwrap();
    let private = private.trim();
    assert_eq!(private.len(), 43, "32 bytes, unpadded base64url");
    // The private key is in the file only, never in the output.
    assert!(!printed.contains(private), "{printed}");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&key_file).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let signer = supabash::capability::postgres::PostgresSigner::new(
        &kid,
        private,
        "https://jobs.example",
        "supabash",
        "https://project.example",
    )
    .unwrap();
    assert_eq!(registered["publicKey"], signer.public_key().as_str());
    // The key file is never overwritten.
    let again = owner.run(&args);
    assert_eq!(again.status.code(), Some(2), "{}", stderr(&again));
    assert_eq!(std::fs::read_to_string(&key_file).unwrap().trim(), private);
    let issuer_key = supabash::capability::postgres::PostgresSigner::new(
        &kid,
        &supabash_core::capability::b64_encode(&[7u8; 32]),
        "i",
        "a",
        "o",
    )
    .unwrap();
    let public = issuer_key.public_key();
    // Registering an existing key id again: refused (use rotate).
    let mut again = vec![
        "verifier",
        "register",
        kid.as_str(),
        "--public-key",
        public.as_str(),
    ];
    again.extend(common);
    let out = owner.run(&again);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("verifier rotate"), "{}", stderr(&out));
    // Rotate with a public key the issuer generated: nothing secret leaves the database.
    let mut rotate = vec![
        "verifier",
        "rotate",
        kid.as_str(),
        "--public-key",
        public.as_str(),
    ];
    rotate.extend(common);
    let out = owner.ok(&rotate);
    assert!(out.contains("rotated") && !out.contains(private), "{out}");
    let rows = cluster().psql(
        "app",
        &format!("SELECT count(*) FROM supabash.capability_verifiers WHERE key_id = '{kid}'"),
    );
    assert_eq!(rows.trim(), "1");
    let mut missing = vec![
        "verifier",
        "rotate",
        "cli-never-registered",
        "--public-key",
        public.as_str(),
    ];
    missing.extend(common);
    assert_eq!(owner.run(&missing).status.code(), Some(3));
    // Without a place for the private key: refused before anything is registered.
    let mut nowhere = vec!["verifier", "register", "cli-nowhere"];
    nowhere.extend(common);
    assert_eq!(owner.run(&nowhere).status.code(), Some(2));
    // A PostgREST role may not register: permission (status 4).
    let intruder = Conn { env: vec![] }.with("SUPABASH_ADMIN_DSN", &cluster().dsn("authenticator"));
    let mut sneaky = vec![
        "verifier",
        "register",
        "cli-sneaky",
        "--public-key",
        public.as_str(),
    ];
    sneaky.extend(common);
    let out = intruder.run(&sneaky);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert_eq!(
        intruder.run(&["verifier", "revoke", &kid]).status.code(),
        Some(4)
    );
    // Malformed input: the database's INVALID_ARGUMENT, status 2.
    let mut bad = vec![
        "verifier",
        "register",
        "cli-bad",
        "--public-key",
        "not-a-key",
    ];
    bad.extend(common);
    let out = owner.run(&bad);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let revoked = owner.json(&["verifier", "revoke", &kid]);
    assert_eq!(revoked["revoked"], true);
    assert_eq!(
        owner.run(&["verifier", "revoke", &kid]).status.code(),
        Some(3)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `supabash audit`: every record, or one revision's, over both transports; a discarded
/// session's record is listed as discarded.
#[tokio::test]
async fn audit_lists_a_revisions_actions_and_discarded_ones() {
    use supabash::audit::{Action, ActionKind, ActionOutcome};
    for via in BOTH {
        let user = new_user();
        let ws = workspace_with(via, &user, &[("/a.md", "a\n")]).await;
        ws.fs().write("/b.md", "b\n").await.unwrap();
        ws.record(
            Action::new(ActionKind::Bash, "bash")
                .with_arguments(serde_json::json!({ "command": "echo b > /b.md" }))
                .with_paths(vec!["/b.md".into()])
                .with_bytes_changed(2),
        );
        let rev = ws
            .commit(CommitOptions::new("tester"))
            .await
            .unwrap()
            .receipt
            .revision;
        ws.fs().write("/c.md", "c\n").await.unwrap();
        ws.record(
            Action::new(ActionKind::McpTool, "write").with_outcome(ActionOutcome::Denied {
                reason: "path-reserved".into(),
            }),
        );
        ws.discard().await.unwrap();

        let conn = Conn::new(via, &user).with("SUPABASH_WORKSPACE", ws.id());
        let of_rev = conn.json(&["audit", &rev]);
        let records = of_rev.as_array().unwrap();
        assert_eq!(records.len(), 1, "{via:?}: {of_rev}");
        assert_eq!(records[0]["kind"], "bash");
        assert_eq!(records[0]["paths"], serde_json::json!(["/b.md"]));
        assert_eq!(records[0]["revision"], rev.as_str());
        let all = conn.json(&["audit"]);
        assert_eq!(all.as_array().unwrap().len(), 2, "{via:?}: {all}");
        let text = conn.ok(&["audit"]);
        assert!(text.contains("bash bash by tester: ok"), "{text}");
        assert!(
            text.contains("denied (path-reserved)") && text.contains("discarded"),
            "{text}"
        );
        // Another user sees nothing of it: permission status.
        let other = Conn::new(via, &new_user()).with("SUPABASH_WORKSPACE", ws.id());
        assert_eq!(other.run(&["audit"]).status.code(), Some(4), "{via:?}");
    }
}

/// `note` adds a note that `show` and `log` print; `log --follow` prints each new commit as it
/// lands (over both transports: PostgREST polls).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notes_show_in_show_and_log_and_log_follows() {
    for via in BOTH {
        let user = new_user();
        let (ws, revs) = three_revisions(via, &user).await;
        let c = Conn::new(via, &user).with("SUPABASH_WORKSPACE", ws.id());
        let added = c.ok(&[
            "note",
            &revs[0],
            "eval",
            r#"{"score":0.5}"#,
            "--actor",
            "grader",
        ]);
        assert!(
            added.contains("eval#1") && added.contains("grader"),
            "{via:?}: {added}"
        );
        c.ok(&["note", "1", "eval", "0.75", "--actor", "grader"]);
        let shown = c.ok(&["show", &revs[0]]);
        assert!(
            shown.contains("eval#1") && shown.contains("eval#2"),
            "{via:?}: {shown}"
        );
        let json = c.json(&["show", &revs[0]]);
        assert_eq!(
            json["notes"][1]["value"],
            serde_json::json!(0.75),
            "{via:?}"
        );
        assert!(
            c.json(&["show", &revs[1]]).get("notes").is_none(),
            "{via:?}"
        );
        let log = c.ok(&["log"]);
        assert!(log.contains("eval#2"), "{via:?}: {log}");

        // --follow: the history, then each commit as it lands.
        let mut cmd = Command::new(supabash_tests::binary::supabash());
        cmd.args(["log", "--oneline", "--follow"])
            .env("HOME", "/nonexistent")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null());
        for (k, v) in &c.env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(stdout).lines() {
                if tx.send(line.unwrap()).is_err() {
                    return;
                }
            }
        });
        let wait_for = |want: &dyn Fn(&str) -> bool| loop {
            let line = rx
                .recv_timeout(std::time::Duration::from_secs(15))
                .expect("log --follow prints");
            if want(&line) {
                return line;
            }
        };
        wait_for(&|l: &str| l.contains(&revs[2][..8]));
        ws.fs().write("/d.md", "d\n").await.unwrap();
        let r = ws
            .commit(CommitOptions::new("tester"))
            .await
            .unwrap()
            .receipt;
        let line = wait_for(&|l: &str| l.ends_with("commit"));
        assert_eq!(
            line,
            format!("   4  {}  commit", &r.revision[..8]),
            "{via:?}"
        );
        child.kill().unwrap();
        child.wait().unwrap();
    }
}

/// On a database still on the 0.5.0 schema (no notes), `show` shows the receipt and no notes;
/// `note` fails.
#[tokio::test]
async fn show_works_on_a_schema_without_notes() {
    let c = cluster();
    let db = "cli_schema_050";
    c.fresh_database(db);
    c.psql(db, "CREATE EXTENSION supabash VERSION '0.5.0'");
    let dsn = c.dsn_on("authenticator", db);
    let mut rest = supabash_tests::SqlRpc::connect(&dsn).await;
    let user = new_user();
    let owner = supabash_tests::Caller::User(user.clone());
    let ws = rest.create_workspace(&owner).await;
    let r1 = rest
        .commit_as(
            &owner,
            &ws,
            None,
            serde_json::json!([{"op": "upsert", "path": "/a.md", "text": "a"}]),
        )
        .await;
    let conn = Conn {
        env: vec![
            ("SUPABASH_DSN".into(), dsn.clone()),
            ("SUPABASH_SUB".into(), user.clone()),
            ("SUPABASH_WORKSPACE".into(), ws.clone()),
        ],
    };
    let shown = conn.ok(&["show", &r1]);
    assert!(shown.contains(&r1) && !shown.contains("note"), "{shown}");
    let out = conn.run(&["note", &r1, "eval", "1"]);
    assert!(!out.status.success(), "{}", stderr(&out));
    drop(rest);
}

/// `workspaces create --files-only`: the workspace stores plain files only, and the listing
/// says so (JSON and lines).
#[tokio::test]
async fn workspaces_create_files_only() {
    let c = Conn::new(Via::Postgres, &new_user());
    let created = c.json(&["workspaces", "create", "--files-only", "--label", "plain"]);
    assert_eq!(created["filesOnly"], true, "{created}");
    let plain = c.json(&["workspaces", "create"]);
    assert_eq!(plain["filesOnly"], false, "{plain}");
    let listed = c.json(&["workspaces"]);
    assert_eq!(listed[0]["filesOnly"], true, "{listed}");
    assert_eq!(listed[1]["filesOnly"], false, "{listed}");
    let lines = c.ok(&["workspaces"]);
    let id = created["workspaceId"].as_str().unwrap();
    assert!(
        lines
            .lines()
            .any(|l| l.starts_with(id) && l.ends_with("files only")),
        "{lines}"
    );
}

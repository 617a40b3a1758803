//! Mounts over real workspaces: two private writable workspaces (one seen through a view) and a
//! shared read-only snapshot of a publisher's revision. Every mutation path (the filesystem
//! methods, every changing tool, apply_patch) against every read-only, hidden and unmounted
//! path is POLICY_DENIED and changes nothing; each writable workspace commits separately;
//! the manifest records the snapshot's revision and digest.

use supabash_tests::client as support;

use serde_json::{json, Value};
use std::sync::Arc;
use std::time::SystemTime;
use supabash::workspace::CommitOptions;
use supabash::{ErrorCode, Workspace};
use supabash_agent::snapshot::digest;
use supabash_agent::tools::{self, ToolOptions};
use supabash_agent::{AgentFs, Mount, MountedFs, SharedSnapshot, SnapshotLimits, ViewSpec};
use support::{new_user, workspace_with, Via};

struct Setup {
    memory: Workspace,
    scratch: Workspace,
    publisher: Workspace,
    published: String,
    fs: MountedFs,
}

async fn setup() -> Setup {
    let user = new_user();
    let memory = workspace_with(
        Via::Postgres,
        &user,
        &[
            ("/memory/profile.md", "likes tea\n"),
            ("/memory/.internal/key", "secret\n"),
            ("/other/unseen.md", "outside the view\n"),
        ],
    )
    .await;
    let scratch = workspace_with(Via::Postgres, &user, &[]).await;
    let publisher_user = new_user();
    let publisher = workspace_with(
        Via::Postgres,
        &publisher_user,
        &[
            ("/guides/calendar.md", "# Calendar\n"),
            ("/guides/meds.md", "# Meds\n"),
        ],
    )
    .await;
    let published = publisher.base_revision().unwrap();
    // The publisher moves on; the snapshot keeps the selected revision.
    publisher
        .fs()
        .write("/guides/calendar.md", "# Calendar v2\n")
        .await
        .unwrap();
    publisher
        .commit(CommitOptions::new("publisher"))
        .await
        .unwrap();
    let docs = SharedSnapshot::from_revision(
        &publisher,
        "app-docs",
        &published,
        SnapshotLimits::default(),
    )
    .await
    .unwrap();
    let view = ViewSpec::default()
        .with_root("/memory")
        .with_hidden(vec!["/.internal".into()]);
    let fs = MountedFs::new(vec![
        Mount::workspace("/memories", &memory, Some(view)).unwrap(),
        Mount::workspace("/scratch", &scratch, None).unwrap(),
        Mount::snapshot("/docs", Arc::new(docs), None).unwrap(),
    ])
    .unwrap();
    Setup {
        memory,
        scratch,
        publisher,
        published,
        fs,
    }
}

fn denied(what: &str, r: Result<Value, supabash::SupabashError>) {
    let e = r.expect_err(what);
    assert_eq!(e.code(), ErrorCode::PolicyDenied, "{what}: {e}");
}

#[tokio::test]
async fn every_mutation_of_read_only_hidden_and_unmounted_paths_is_denied() {
    let s = setup().await;
    let fs = &s.fs;
    let o = ToolOptions::default();
    // Read-only (inside the snapshot, existing or not, and its mount point), hidden, unmounted
    // (the root, a path beside the mounts) and a writable mount point itself.
    let targets = [
        "/docs/guides/calendar.md",
        "/docs/new.md",
        "/docs",
        "/memories/.internal/key",
        "/memories/.internal/new",
        "/",
        "/elsewhere.md",
        "/memories",
    ];
    for t in targets {
        // A directory below the target (below a writable mount point: a hidden one).
        let sub = match t {
            "/memories" => "/memories/.internal/d".to_string(),
            t => format!("{t}/d"),
        };
        let fs_calls = [
            ("write", fs.write(t, b"x".to_vec()).await),
            ("append", fs.append(t, b"x".to_vec()).await),
            ("mkdir", fs.mkdir(&sub, true).await),
            ("rm", fs.rm(t, true, false).await),
            ("rm -f", fs.rm(t, true, true).await),
            ("cp into", fs.cp("/memories/profile.md", t, true).await),
            ("mv into", fs.mv("/memories/profile.md", t).await),
            ("mv from", fs.mv(t, "/memories/taken.md").await),
            ("chmod", fs.chmod(t, 0o600).await),
            ("utimes", fs.utimes(t, SystemTime::UNIX_EPOCH).await),
            ("symlink", fs.symlink("/memories/profile.md", t).await),
        ];
        for (op, r) in fs_calls {
            let e = r.expect_err(&format!("{op} {t}"));
            assert_eq!(e.code(), ErrorCode::PolicyDenied, "{op} {t}: {e}");
        }
        let tool_calls = [
            ("write_file", json!({"path": t, "content": "x"})),
            (
                "edit_file",
                json!({"path": t, "old_string": "#", "new_string": "!"}),
            ),
            (
                "move_file",
                json!({"source": t, "destination": "/memories/taken.md"}),
            ),
            (
                "move_file",
                json!({"source": "/memories/profile.md", "destination": t, "overwrite": true}),
            ),
            ("create_directory", json!({"path": sub})),
            ("delete_file", json!({"path": t, "recursive": true})),
            (
                "apply_patch",
                json!({"patch": format!("*** Begin Patch\n*** Add File: {t}\n+x\n*** End Patch")}),
            ),
            (
                "apply_patch",
                json!({"patch": format!("*** Begin Patch\n*** Delete File: {t}\n*** End Patch")}),
            ),
            (
                "apply_patch",
                json!({"patch": format!("*** Begin Patch\n*** Update File: {t}\n@@\n-# Calendar\n+x\n*** End Patch")}),
            ),
            (
                "apply_patch",
                json!({"patch": format!("*** Begin Patch\n*** Update File: /memories/profile.md\n*** Move to: {t}\n@@\n-likes tea\n+likes coffee\n*** End Patch")}),
            ),
            (
                "apply_patch",
                json!({"operations": [{"type": "create_file", "path": t, "diff": "+x\n"}]}),
            ),
            (
                "apply_patch",
                json!({"operations": [{"type": "update_file", "path": t, "diff": "-# Meds\n+x\n"}]}),
            ),
            (
                "apply_patch",
                json!({"operations": [{"type": "delete_file", "path": t}]}),
            ),
        ];
        for (tool, args) in tool_calls {
            denied(
                &format!("{tool} {args}"),
                tools::call(fs, tool, args.clone(), &o).await,
            );
        }
    }
    // Nothing changed anywhere.
    assert!(s.memory.changes().unwrap().is_empty());
    assert!(s.scratch.changes().unwrap().is_empty());
    assert_eq!(
        fs.read("/docs/guides/calendar.md").await.unwrap(),
        b"# Calendar\n"
    );
    assert_eq!(
        fs.read("/memories/profile.md").await.unwrap(),
        b"likes tea\n"
    );
    // Hidden and unviewed paths read as absent.
    assert!(!fs.exists("/memories/.internal/key").await);
    assert!(fs.read("/memories/../other/unseen.md").await.is_err());
    let entries = fs.readdir("/memories").await.unwrap();
    let names: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["profile.md"]);
}

#[tokio::test]
async fn writable_mounts_commit_separately_and_the_manifest_records_the_snapshot() {
    let s = setup().await;
    let fs = &s.fs;
    let o = ToolOptions::default();
    let entries = fs.readdir("/").await.unwrap();
    let root: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(root, ["docs", "memories", "scratch"]);

    tools::call(
        fs,
        "edit_file",
        json!({"path": "/memories/profile.md", "old_string": "tea", "new_string": "coffee"}),
        &o,
    )
    .await
    .unwrap();
    tools::call(
        fs,
        "write_file",
        json!({"path": "/scratch/plan.md", "content": "plan\n"}),
        &o,
    )
    .await
    .unwrap();
    // A copy from the read-only snapshot into a writable mount becomes private staged data.
    fs.cp("/docs/guides", "/memories/guides", true)
        .await
        .unwrap();
    // Moves across mounts are refused, even between two writable ones.
    let e = fs
        .mv("/scratch/plan.md", "/memories/plan.md")
        .await
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::PolicyDenied);
    let hits = tools::call(fs, "grep", json!({"pattern": "Calendar"}), &o)
        .await
        .unwrap();
    let paths: Vec<&str> = hits["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        ["/docs/guides/calendar.md", "/memories/guides/calendar.md"]
    );

    let manifest = fs.manifest();
    let docs = &manifest[2];
    assert_eq!(
        (docs.mount_point.as_str(), docs.source_id.as_str()),
        ("/docs", "app-docs")
    );
    assert_eq!(docs.revision.as_deref(), Some(s.published.as_str()));
    let old = s.publisher.read_revision(&s.published).await.unwrap();
    assert_eq!(docs.digest.as_deref(), Some(digest(&old.files).as_str()));
    assert!(!docs.writable);
    assert_eq!(
        (manifest[0].source_id.as_str(), manifest[0].root.as_str()),
        (s.memory.id(), "/memory")
    );
    assert_eq!(manifest[0].revision, s.memory.base_revision());
    assert!(manifest[0].writable && manifest[0].digest.is_none());
    let recorded = serde_json::to_value(&manifest).unwrap();
    assert_eq!(recorded[2]["digest"], json!(docs.digest));
    assert_eq!(recorded[0]["mountPoint"], "/memories");

    assert_eq!(
        fs.to_source("/memories/profile.md").unwrap().path,
        "/memory/profile.md"
    );
    assert_eq!(
        fs.to_visible("/memories", "/memory/profile.md").as_deref(),
        Some("/memories/profile.md")
    );

    let memory = s
        .memory
        .commit(CommitOptions::new("agent"))
        .await
        .unwrap()
        .receipt;
    let mut paths: Vec<&str> = memory.changes.iter().map(|c| c.path.as_str()).collect();
    paths.sort();
    assert_eq!(
        paths,
        [
            "/memory/guides/calendar.md",
            "/memory/guides/meds.md",
            "/memory/profile.md"
        ]
    );
    assert_eq!(memory.workspace_id, s.memory.id());
    let scratch = s
        .scratch
        .commit(CommitOptions::new("agent"))
        .await
        .unwrap()
        .receipt;
    let paths: Vec<&str> = scratch.changes.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(paths, ["/plan.md"]);
    assert_ne!(memory.revision, scratch.revision);
    assert!(s.publisher.changes().unwrap().is_empty());
    // Two snapshots of the same rows share a digest whatever their order.
    let rows: Vec<(String, Vec<u8>)> = old.files.into_iter().rev().collect();
    let again = SharedSnapshot::from_rows("rows", None, rows, SnapshotLimits::default())
        .await
        .unwrap();
    assert_eq!(Some(again.digest()), docs.digest.as_deref());
}

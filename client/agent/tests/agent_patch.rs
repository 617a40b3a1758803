//! apply_patch against a real workspace whose base files load lazily from PostgreSQL: add,
//! delete, move, several chunks, missing context, the end-of-file marker, final newlines,
//! Unicode dashes, a heredoc-wrapped envelope, the per-operation form, and a mid-batch failure
//! that leaves the staged tree untouched. Patched files then commit.

use supabash_tests::client as support;

use std::collections::BTreeMap;
use supabash::workspace::CommitOptions;
use supabash::{ErrorCode, Workspace};
use supabash_agent::patch::{self, BatchMode, Operation, OperationKind};
use supabash_agent::tools::{self, PatchInput};
use support::{new_user, reopen, workspace_with, Via};

const BASE: [(&str, &str); 5] = [
    (
        "/src/lib.rs",
        "use std::fmt;\n\nfn one() {\n    1\n}\n\nfn two() {\n    2\n}\n\nfn three() {\n    3\n}\n",
    ),
    ("/notes.md", "alpha\nbeta\ngamma\n"),
    ("/no-newline.txt", "first\nlast"),
    (
        "/dashes.md",
        "Range: 1\u{2013}10 \u{2014} \u{201C}quoted\u{201D}\n",
    ),
    ("/gone.md", "to delete\n"),
];

/// A workspace holding `BASE` at its head, reopened so bodies load from the database.
async fn workspace() -> Workspace {
    let user = new_user();
    let seeded = workspace_with(Via::Postgres, &user, &BASE).await;
    reopen(Via::Postgres, &user, seeded.id()).await
}

async fn staged(ws: &Workspace) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let fs = ws.fs();
    let mut dirs = vec!["/".to_string()];
    while let Some(d) = dirs.pop() {
        for e in fs.readdir(&d).await.unwrap() {
            let p = if d == "/" {
                format!("/{}", e.name)
            } else {
                format!("{d}/{}", e.name)
            };
            if e.kind == supabash::tree::FileKind::Directory {
                dirs.push(p);
            } else {
                out.insert(p.clone(), fs.read_text(&p).await.unwrap());
            }
        }
    }
    out
}

async fn run(ws: &Workspace, text: &str) -> Result<Vec<patch::Applied>, patch::PatchError> {
    let ops = patch::parse_patch(text).map_err(|error| patch::PatchError {
        error,
        applied: vec![],
    })?;
    patch::apply(ws.fs().as_ref(), &ops, BatchMode::AllOrNothing).await
}

#[tokio::test]
async fn add_delete_move_and_several_chunks_then_commit() {
    let ws = workspace().await;
    let applied = run(
        &ws,
        "*** Begin Patch\n\
         *** Add File: /new/hello.md\n+# Hello\n+\n+world\n\
         *** Delete File: /gone.md\n\
         *** Update File: /src/lib.rs\n\
         *** Move to: /src/numbers.rs\n\
         @@ fn one() {\n-    1\n+    10\n }\n\
         @@ fn three() {\n-    3\n+    30\n }\n\
         *** End Patch\n",
    )
    .await
    .unwrap();
    assert_eq!(applied.len(), 3);
    assert_eq!(applied[2].move_to.as_deref(), Some("/src/numbers.rs"));
    let files = staged(&ws).await;
    assert_eq!(files["/new/hello.md"], "# Hello\n\nworld\n");
    assert!(!files.contains_key("/gone.md") && !files.contains_key("/src/lib.rs"));
    assert_eq!(
        files["/src/numbers.rs"],
        "use std::fmt;\n\nfn one() {\n    10\n}\n\nfn two() {\n    2\n}\n\nfn three() {\n    30\n}\n"
    );
    let receipt = ws
        .commit(CommitOptions::new("patch"))
        .await
        .unwrap()
        .receipt;
    let ops: Vec<(&str, &str)> = receipt
        .changes
        .iter()
        .map(|c| (c.op.as_str(), c.path.as_str()))
        .collect();
    assert_eq!(
        ops,
        [
            ("upsert", "/new/hello.md"),
            ("upsert", "/src/numbers.rs"),
            ("delete", "/gone.md"),
            ("delete", "/src/lib.rs"),
        ]
    );
}

#[tokio::test]
async fn missing_context_names_the_line_and_changes_nothing() {
    let ws = workspace().await;
    let before = staged(&ws).await;
    let e = run(
        &ws,
        "*** Begin Patch\n*** Update File: /notes.md\n@@\n alpha\n-delta\n+DELTA\n*** End Patch",
    )
    .await
    .unwrap_err();
    assert_eq!(e.error.code(), ErrorCode::InvalidPatch);
    assert_eq!(e.error.path(), Some("/notes.md"));
    assert!(
        e.error.message().contains("line \"delta\" does not occur"),
        "{}",
        e.error
    );
    let e = run(
        &ws,
        "*** Begin Patch\n*** Update File: /notes.md\n@@ no such anchor\n-beta\n*** End Patch",
    )
    .await
    .unwrap_err();
    assert!(
        e.error
            .message()
            .contains("context \"no such anchor\" not found"),
        "{}",
        e.error
    );
    assert_eq!(staged(&ws).await, before);
    assert!(ws.changes().unwrap().is_empty());
}

#[tokio::test]
async fn end_of_file_marker_and_final_newlines() {
    let ws = workspace().await;
    // Both "x" lines match; the end-of-file marker picks the last one.
    ws.fs().write("/xs.md", "x\nmid\nx\n").await.unwrap();
    run(
        &ws,
        "*** Begin Patch\n*** Update File: /xs.md\n@@\n-x\n+y\n*** End of File\n*** End Patch",
    )
    .await
    .unwrap();
    assert_eq!(ws.fs().read_text("/xs.md").await.unwrap(), "x\nmid\ny\n");
    // A file without a final newline keeps lacking one; one with it keeps it.
    run(
        &ws,
        "*** Begin Patch\n*** Update File: /no-newline.txt\n@@\n first\n-last\n+LAST\n*** End of File\n\
         *** Update File: /notes.md\n@@\n gamma\n+delta\n*** End Patch",
    )
    .await
    .unwrap();
    assert_eq!(
        ws.fs().read_text("/no-newline.txt").await.unwrap(),
        "first\nLAST"
    );
    assert_eq!(
        ws.fs().read_text("/notes.md").await.unwrap(),
        "alpha\nbeta\ngamma\ndelta\n"
    );
    // A trailing empty context line stands for the final newline.
    run(
        &ws,
        "*** Begin Patch\n*** Update File: /notes.md\n@@\n-delta\n+omega\n \n*** End Patch",
    )
    .await
    .unwrap();
    assert_eq!(
        ws.fs().read_text("/notes.md").await.unwrap(),
        "alpha\nbeta\ngamma\nomega\n"
    );
}

#[tokio::test]
async fn unicode_punctuation_and_whitespace_tolerance() {
    let ws = workspace().await;
    run(
        &ws,
        "*** Begin Patch\n*** Update File: /dashes.md\n@@\n-Range: 1-10 - \"quoted\"\n+Range: 1-20\n*** End Patch",
    )
    .await
    .unwrap();
    assert_eq!(
        ws.fs().read_text("/dashes.md").await.unwrap(),
        "Range: 1-20\n"
    );
    run(
        &ws,
        "*** Begin Patch\n*** Update File: /notes.md\n@@\n-  beta   \n+BETA\n*** End Patch",
    )
    .await
    .unwrap();
    assert_eq!(
        ws.fs().read_text("/notes.md").await.unwrap(),
        "alpha\nBETA\ngamma\n"
    );
}

#[tokio::test]
async fn a_heredoc_wrapped_envelope_applies() {
    let ws = workspace().await;
    run(
        &ws,
        "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: /notes.md\n@@\n-alpha\n+ALPHA\n*** End Patch\nEOF\n",
    )
    .await
    .unwrap();
    assert_eq!(
        ws.fs().read_text("/notes.md").await.unwrap(),
        "ALPHA\nbeta\ngamma\n"
    );
}

#[tokio::test]
async fn the_per_operation_form_applies_through_the_tool() {
    let ws = workspace().await;
    let input = PatchInput {
        operations: vec![
            Operation {
                kind: OperationKind::UpdateFile,
                path: "/notes.md".into(),
                diff: "-alpha\n+beta\n".into(),
                move_to: Some("/renamed.md".into()),
            },
            Operation {
                kind: OperationKind::CreateFile,
                path: "/made.md".into(),
                diff: "+made\n".into(),
                move_to: None,
            },
            Operation {
                kind: OperationKind::DeleteFile,
                path: "/gone.md".into(),
                diff: String::new(),
                move_to: None,
            },
        ],
        ..PatchInput::default()
    };
    let out = tools::apply_patch(ws.fs().as_ref(), input).await.unwrap();
    assert_eq!(out.applied.len(), 3);
    let files = staged(&ws).await;
    assert_eq!(files["/renamed.md"], "beta\nbeta\ngamma\n");
    assert_eq!(files["/made.md"], "made\n");
    assert!(!files.contains_key("/gone.md") && !files.contains_key("/notes.md"));
}

#[tokio::test]
async fn a_mid_batch_failure_leaves_the_tree_untouched() {
    let ws = workspace().await;
    let before = staged(&ws).await;
    let batch = "*** Begin Patch\n\
        *** Add File: /added.md\n+added\n\
        *** Delete File: /gone.md\n\
        *** Update File: /notes.md\n*** Move to: /moved.md\n@@\n-alpha\n+ALPHA\n\
        *** Update File: /src/lib.rs\n@@\n-fn four() {\n+fn FOUR() {\n\
        *** Update File: /dashes.md\n@@\n-Range\n+r\n\
        *** End Patch";
    let e = run(&ws, batch).await.unwrap_err();
    assert_eq!(e.error.code(), ErrorCode::InvalidPatch);
    assert_eq!(e.error.path(), Some("/src/lib.rs"));
    assert!(e.applied.is_empty());
    assert_eq!(staged(&ws).await, before);
    assert!(ws.changes().unwrap().is_empty(), "nothing staged");
    assert!(!ws.fs().exists("/added.md").await);

    // The same batch in ordered mode keeps the operations before the failure.
    let ops = patch::parse_patch(batch).unwrap();
    let e = patch::apply(ws.fs().as_ref(), &ops, BatchMode::Ordered)
        .await
        .unwrap_err();
    assert_eq!(e.applied.len(), 3);
    let files = staged(&ws).await;
    assert!(files.contains_key("/added.md") && files.contains_key("/moved.md"));
    assert_eq!(files["/dashes.md"], BASE[3].1, "nothing after the failure");
}

//! Batches against a staged tree in memory: all-or-nothing, ordered, undo after a failed
//! write, and refusals before anything is read.

use super::*;
use supabash::tree::StagedTree;
use supabash::Limits;

async fn tree(files: &[(&str, &str)], limits: Limits) -> StagedTree {
    let t = StagedTree::empty(limits);
    for (p, text) in files {
        t.mkdir(supabash_core::path::parent(p), true).await.unwrap();
        t.write(p, *text).await.unwrap();
    }
    t
}

async fn files(t: &StagedTree) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut stack = vec!["/".to_owned()];
    while let Some(dir) = stack.pop() {
        for e in t.readdir(&dir).await.unwrap() {
            let p = if dir == "/" {
                format!("/{}", e.name)
            } else {
                format!("{dir}/{}", e.name)
            };
            match e.kind {
                supabash::tree::FileKind::Directory => stack.push(p),
                _ => out.push((p.clone(), t.read_text(&p).await.unwrap())),
            }
        }
    }
    out.sort();
    out
}

const BATCH: &str = "*** Begin Patch\n*** Add File: /new/a.md\n+hello\n\
    *** Update File: /b.md\n@@\n-two\n+TWO\n*** Update File: /c.md\n@@\n-absent\n+x\n\
    *** End Patch\n";

#[tokio::test]
async fn a_failed_batch_changes_nothing() {
    let t = tree(
        &[("/b.md", "one\ntwo\n"), ("/c.md", "c\n")],
        Limits::default(),
    )
    .await;
    let before = files(&t).await;
    let ops = parse_patch(BATCH).unwrap();
    let e = apply(&t, &ops, BatchMode::AllOrNothing).await.unwrap_err();
    assert_eq!(e.error.code(), ErrorCode::InvalidPatch);
    assert_eq!(e.error.path(), Some("/c.md"));
    assert!(
        e.error.message().contains("\"absent\" does not occur"),
        "{}",
        e.error
    );
    assert!(e.applied.is_empty());
    assert_eq!(files(&t).await, before);
    assert!(!t.exists("/new").await);
}

#[tokio::test]
async fn ordered_batches_keep_what_applied_before_the_failure() {
    let t = tree(
        &[("/b.md", "one\ntwo\n"), ("/c.md", "c\n")],
        Limits::default(),
    )
    .await;
    let ops = parse_patch(BATCH).unwrap();
    let e = apply(&t, &ops, BatchMode::Ordered).await.unwrap_err();
    assert_eq!(e.applied.len(), 2);
    assert_eq!(t.read_text("/new/a.md").await.unwrap(), "hello\n");
    assert_eq!(t.read_text("/b.md").await.unwrap(), "one\nTWO\n");
    assert_eq!(t.read_text("/c.md").await.unwrap(), "c\n");
}

#[tokio::test]
async fn a_write_that_fails_late_is_undone() {
    let limits = Limits::default().with_max_files(3);
    let t = tree(&[("/a", "a\n"), ("/b", "b\n")], limits).await;
    let before = files(&t).await;
    let ops = parse_patch(
        "*** Begin Patch\n*** Delete File: /a\n*** Update File: /b\n@@\n-b\n+B\n\
         *** Add File: /d/x\n+x\n*** Add File: /d/y\n+y\n*** Add File: /d/z\n+z\n*** End Patch",
    )
    .unwrap();
    let e = apply(&t, &ops, BatchMode::AllOrNothing).await.unwrap_err();
    assert_eq!(e.error.code(), ErrorCode::QuotaExceeded);
    assert_eq!(files(&t).await, before);
    assert!(!t.exists("/d").await);
}

#[tokio::test]
async fn moves_deletes_and_per_operation_patches() {
    let t = tree(
        &[("/a.md", "x\ny\n"), ("/gone.md", "g\n")],
        Limits::default(),
    )
    .await;
    let ops = parse_operations(&[
        Operation {
            kind: OperationKind::UpdateFile,
            path: "/a.md".into(),
            diff: " x\n-y\n+z\n".into(),
            move_to: Some("/moved/a.md".into()),
        },
        Operation {
            kind: OperationKind::DeleteFile,
            path: "/gone.md".into(),
            diff: String::new(),
            move_to: None,
        },
        Operation {
            kind: OperationKind::CreateFile,
            path: "/n.md".into(),
            diff: "+first\n+second\n".into(),
            move_to: None,
        },
    ])
    .unwrap();
    let done = apply(&t, &ops, BatchMode::default()).await.unwrap();
    assert_eq!(done[0].move_to.as_deref(), Some("/moved/a.md"));
    assert_eq!(
        files(&t).await,
        [
            ("/moved/a.md".to_string(), "x\nz\n".to_string()),
            ("/n.md".to_string(), "first\nsecond\n".to_string()),
        ]
    );
    let again = parse_patch("*** Begin Patch\n*** Add File: /n.md\n+dup\n*** End Patch").unwrap();
    let e = apply(&t, &again, BatchMode::default()).await.unwrap_err();
    assert!(e.error.message().contains("already exists"), "{}", e.error);
}

#[test]
fn oversized_patches_are_refused() {
    let big = format!(
        "*** Begin Patch\n*** Add File: /a\n+{}\n*** End Patch\n",
        "x".repeat(MAX_PATCH_BYTES)
    );
    assert_eq!(
        parse_patch(&big).unwrap_err().code(),
        ErrorCode::InvalidPatch
    );
    let op = Operation {
        kind: OperationKind::CreateFile,
        path: "/a".into(),
        diff: "+".repeat(MAX_PATCH_BYTES + 1),
        move_to: None,
    };
    assert_eq!(
        parse_operations(&[op]).unwrap_err().code(),
        ErrorCode::InvalidPatch
    );
}

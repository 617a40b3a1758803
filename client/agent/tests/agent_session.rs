//! A scripted agent session: a fixed list of tool calls a model might make (create, edit,
//! patch, move, delete, overwrite-move, scratch work that is undone or lives in /tmp) over a
//! real workspace, through both transports, ending in one atomic commit whose receipt is
//! checked line by line.

use supabash_tests::client as support;

use serde_json::{json, Value};
use std::collections::BTreeMap;
use supabash::workspace::CommitOptions;
use supabash_agent::tools::{self, ToolOptions};
use supabash_core::hash::sha256_hex;
use supabash_core::rpc::ReceiptLine;
use support::{new_user, reopen, workspace_with, BOTH};

const BASE: [(&str, &str); 6] = [
    ("/README.md", "# Project\n"),
    ("/src/app.py", "def greet():\n    return 'hello'\n"),
    (
        "/config.toml",
        "[server]\nport = 8080\nhost = \"localhost\"\n",
    ),
    ("/docs/old.md", "old notes\n"),
    ("/docs/keep.md", "the page to keep\n"),
    ("/docs/index.md", "an outdated index\n"),
];

/// The session: (tool, arguments) in the order a model would call them.
fn script() -> Vec<(&'static str, Value)> {
    vec![
        ("directory_tree", json!({})),
        (
            "read_file",
            json!({"path": "/src/app.py", "line_numbers": true}),
        ),
        (
            "write_file",
            json!({"path": "/notes/todo.md", "content": "- ship it\n"}),
        ),
        (
            "edit_file",
            json!({"path": "/src/app.py", "old_string": "'hello'", "new_string": "'hello, world'"}),
        ),
        (
            "apply_patch",
            json!({"patch": "*** Begin Patch\n*** Update File: /config.toml\n@@ [server]\n-port = 8080\n+port = 9090\n host = \"localhost\"\n*** End Patch\n"}),
        ),
        (
            "move_file",
            json!({"source": "/docs/old.md", "destination": "/docs/archive/old.md"}),
        ),
        (
            "write_file",
            json!({"path": "/draft.md", "content": "thinking out loud\n"}),
        ),
        ("delete_file", json!({"path": "/draft.md"})),
        (
            "write_file",
            json!({"path": "/tmp/scratch.txt", "content": "never committed\n"}),
        ),
        ("delete_file", json!({"path": "/README.md"})),
        (
            "move_file",
            json!({"source": "/docs/keep.md", "destination": "/docs/index.md", "overwrite": true}),
        ),
        ("grep", json!({"pattern": "9090"})),
    ]
}

fn hash(text: &str) -> Option<String> {
    Some(sha256_hex(text.as_bytes()))
}

fn size(text: &str) -> Option<i64> {
    Some(text.len() as i64)
}

fn line(op: &str, path: &str) -> ReceiptLine {
    ReceiptLine {
        op: op.into(),
        path: path.into(),
        from: None,
        before_hash: None,
        before_size: None,
        after_hash: None,
        after_size: None,
        replaced_hash: None,
        replaced_size: None,
        redacted: false,
        before_mode: None,
        after_mode: None,
        kind: None,
    }
}

#[tokio::test]
async fn a_scripted_session_ends_in_one_atomic_commit() {
    for via in BOTH {
        let user = new_user();
        let seeded = workspace_with(via, &user, &BASE).await;
        // Reopen so every base file loads lazily from the database.
        let ws = reopen(via, &user, seeded.id()).await;

        let fs = ws.fs().as_ref();
        let options = ToolOptions::default();
        let mut answers = Vec::new();
        for (tool, args) in script() {
            let answer = tools::call(fs, tool, args.clone(), &options)
                .await
                .unwrap_or_else(|e| panic!("{via:?} {tool} {args}: {e}"));
            answers.push(answer);
        }
        assert!(answers[1]["content"]
            .as_str()
            .unwrap()
            .starts_with("     1\tdef greet():\n"));
        assert!(answers[3]["diff"]
            .as_str()
            .unwrap()
            .contains("-    return 'hello'\n+    return 'hello, world'\n"));
        assert_eq!(answers[10]["replaced"], true);
        assert_eq!(answers[11]["matches"][0]["path"], "/config.toml");

        let result = ws.commit(CommitOptions::new("agent")).await.unwrap();
        let app_new = "def greet():\n    return 'hello, world'\n";
        let cfg_new = "[server]\nport = 9090\nhost = \"localhost\"\n";
        let expected = vec![
            ReceiptLine {
                from: Some("/docs/old.md".into()),
                before_hash: hash("old notes\n"),
                before_size: size("old notes\n"),
                after_hash: hash("old notes\n"),
                after_size: size("old notes\n"),
                ..line("move", "/docs/archive/old.md")
            },
            ReceiptLine {
                from: Some("/docs/keep.md".into()),
                before_hash: hash("the page to keep\n"),
                before_size: size("the page to keep\n"),
                after_hash: hash("the page to keep\n"),
                after_size: size("the page to keep\n"),
                replaced_hash: hash("an outdated index\n"),
                replaced_size: size("an outdated index\n"),
                ..line("move", "/docs/index.md")
            },
            ReceiptLine {
                before_hash: hash(BASE[2].1),
                before_size: size(BASE[2].1),
                after_hash: hash(cfg_new),
                after_size: size(cfg_new),
                ..line("upsert", "/config.toml")
            },
            ReceiptLine {
                after_hash: hash("- ship it\n"),
                after_size: size("- ship it\n"),
                ..line("upsert", "/notes/todo.md")
            },
            ReceiptLine {
                before_hash: hash(BASE[1].1),
                before_size: size(BASE[1].1),
                after_hash: hash(app_new),
                after_size: size(app_new),
                ..line("upsert", "/src/app.py")
            },
            ReceiptLine {
                before_hash: hash("# Project\n"),
                before_size: size("# Project\n"),
                ..line("delete", "/README.md")
            },
        ];
        let got = &result.receipt.changes;
        assert_eq!(got.len(), expected.len(), "{via:?}: {got:#?}");
        for (g, e) in got.iter().zip(&expected) {
            // Modes are checked where they are committed (tests/tests/posix.rs).
            let g = ReceiptLine {
                before_mode: None,
                after_mode: None,
                ..g.clone()
            };
            assert_eq!(&g, e, "{via:?}");
        }
        assert_eq!(result.receipt.actor, "agent");
        assert!(ws.changes().unwrap().is_empty(), "nothing left staged");

        let committed = ws.committed_snapshot().await.unwrap().files;
        let want: BTreeMap<String, Vec<u8>> = [
            ("/config.toml", cfg_new),
            ("/docs/archive/old.md", "old notes\n"),
            ("/docs/index.md", "the page to keep\n"),
            ("/notes/todo.md", "- ship it\n"),
            ("/src/app.py", app_new),
        ]
        .into_iter()
        .map(|(p, t)| (p.to_string(), t.as_bytes().to_vec()))
        .collect();
        assert_eq!(committed, want, "{via:?}");
        let history = ws.history(None, None).await.unwrap();
        assert_eq!(history.records.len(), 2, "seed and one agent commit");
    }
}

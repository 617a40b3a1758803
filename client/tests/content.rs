//! Content round trips, one atomic commit of every kind of change, tampered lazy bytes and
//! forward restore, through both transports.

use supabash_tests::client as support;

use std::collections::BTreeMap;
use supabash::workspace::CommitOptions;
use supabash::{ErrorCode, FsError};
use support::{assert_receipt, cluster, new_user, new_workspace, reopen, BOTH};

fn texts() -> Vec<(&'static str, String)> {
    vec![
        ("/utf8/caf\u{e9}-nfc.md", "caf\u{e9} NFC\n".into()),
        ("/utf8/cafe\u{301}-nfd.md", "cafe\u{301} NFD\n".into()),
        ("/utf8/emoji.md", "🚀 family: 👨‍👩‍👧‍👦, flag 🇫🇷\n".into()),
        ("/utf8/日本語/東京.md", "漢字かなカナ 한국어 中文\n".into()),
        ("/utf8/tabs.tsv", "a\tb\tc\r\n1\t2\t3\n\n".into()),
        (
            "/utf8/frontmatter-like.md",
            "---\ntitle: x\n---\nbody\n".into(),
        ),
        ("/utf8/empty", String::new()),
    ]
}

#[tokio::test]
async fn utf8_and_binary_round_trip() {
    for via in BOTH {
        let user = new_user();
        let ws = new_workspace(via, &user).await;
        let fs = ws.fs();
        fs.mkdir("/utf8/日本語", true).await.unwrap();
        fs.mkdir("/bin-data", true).await.unwrap();
        let mut want: BTreeMap<String, Vec<u8>> = BTreeMap::new();
        for (p, t) in texts() {
            fs.write(p, t.as_bytes()).await.unwrap();
            want.insert(p.into(), t.into_bytes());
        }
        let binary: Vec<u8> = (0..=255u8).chain([0xff, 0xfe, 0, 0xc3]).collect();
        fs.write("/bin-data/all-bytes.bin", binary.clone())
            .await
            .unwrap();
        want.insert("/bin-data/all-bytes.bin".into(), binary);
        let r = ws.commit(CommitOptions::new("e2e")).await.unwrap();
        assert_eq!(r.receipt.changes.len(), want.len(), "{via:?}");

        // A second host opens lazily and reads every file back, byte for byte.
        let again = reopen(via, &user, ws.id()).await;
        for (p, bytes) in &want {
            assert_eq!(&again.fs().read(p).await.unwrap(), bytes, "{via:?} {p}");
        }
        assert!(again.fs().exists("/utf8/caf\u{e9}-nfc.md").await);
        assert!(!again.fs().exists("/utf8/cafe\u{301}-nfc.md").await);
        assert_eq!(again.committed_snapshot().await.unwrap().files, want);
        assert!(again.changes().unwrap().is_empty());
    }
}

#[tokio::test]
async fn one_atomic_commit_with_every_kind_of_change() {
    for via in BOTH {
        let user = new_user();
        let ws = new_workspace(via, &user).await;
        let fs = ws.fs();
        for (p, t) in [
            ("/keep", "k"),
            ("/edit", "e0"),
            ("/gone", "g"),
            ("/old-name", "moved"),
            ("/src", "over"),
            ("/dst", "dst0"),
        ] {
            fs.write(p, t).await.unwrap();
        }
        let first = ws.commit(CommitOptions::new("e2e")).await.unwrap();

        fs.write("/edit", "e1").await.unwrap();
        fs.write("/new", "n").await.unwrap();
        fs.rm("/gone", false, false).await.unwrap();
        fs.mkdir("/dir", false).await.unwrap();
        fs.mv("/old-name", "/dir/new-name").await.unwrap();
        fs.mv("/src", "/dst").await.unwrap(); // overwrite-move
        let r = ws.commit(CommitOptions::new("e2e")).await.unwrap();
        assert_receipt(
            &r.receipt,
            &first.receipt.revision,
            &[
                ("move", "/dir/new-name", Some("/old-name")),
                ("move", "/dst", Some("/src")),
                ("upsert", "/edit", None),
                ("upsert", "/new", None),
                ("delete", "/gone", None),
            ],
            &format!("{via:?}"),
        );

        let snap = ws.committed_snapshot().await.unwrap().files;
        let names: Vec<&str> = snap.keys().map(String::as_str).collect();
        assert_eq!(
            names,
            ["/dir/new-name", "/dst", "/edit", "/keep", "/new"],
            "{via:?}"
        );
        assert_eq!(snap["/dst"], b"over");
        assert_eq!(snap["/dir/new-name"], b"moved");
    }
}

#[tokio::test]
async fn tampered_lazy_bytes_are_history_corruption() {
    for via in BOTH {
        let user = new_user();
        let ws = new_workspace(via, &user).await;
        ws.fs().write("/secret.md", "the real bytes").await.unwrap();
        ws.fs().write("/fine.md", "untouched").await.unwrap();
        ws.commit(CommitOptions::new("e2e")).await.unwrap();
        cluster().psql(
            "app",
            &format!(
                // Short bodies are stored plain: codec byte 0, then the bytes.
                "UPDATE supabash.bodies SET body = '\\x00'::bytea || convert_to('the fake bytes', 'UTF8')
                  WHERE workspace_id = '{}' AND body = '\\x00'::bytea || convert_to('the real bytes', 'UTF8')",
                ws.id()
            ),
        );
        let lazy = reopen(via, &user, ws.id()).await;
        match lazy.fs().read("/secret.md").await.unwrap_err() {
            FsError::Supabash(e) => {
                assert_eq!(e.code(), ErrorCode::HistoryCorruption, "{via:?} {e}");
                assert_eq!(e.path(), Some("/secret.md"));
            }
            other => panic!("{other}"),
        }
        assert_eq!(lazy.fs().read_text("/fine.md").await.unwrap(), "untouched");
        let e = lazy.committed_snapshot().await.unwrap_err();
        assert_eq!(e.code(), ErrorCode::HistoryCorruption);
    }
}

#[tokio::test]
async fn restore_goes_forward() {
    for via in BOTH {
        let user = new_user();
        let ws = new_workspace(via, &user).await;
        let fs = ws.fs();
        fs.write("/a.md", "v1").await.unwrap();
        fs.write("/b.md", "b").await.unwrap();
        let r1 = ws.commit(CommitOptions::new("e2e")).await.unwrap().receipt;
        fs.write("/a.md", "v2").await.unwrap();
        fs.rm("/b.md", false, false).await.unwrap();
        fs.write("/later.md", "later").await.unwrap();
        let r2 = ws.commit(CommitOptions::new("e2e")).await.unwrap().receipt;

        fs.mkdir("/tmp", false).await.unwrap();
        fs.write("/tmp/keep-scratch", "x").await.unwrap();
        let restored = ws.restore(&r1.revision).await.unwrap();
        assert_eq!(restored.changes.len(), 3, "{via:?} {:?}", restored.changes);
        assert_eq!(fs.read_text("/a.md").await.unwrap(), "v1");
        assert!(!fs.exists("/later.md").await);
        assert!(fs.exists("/tmp/keep-scratch").await);
        let r3 = ws.commit(CommitOptions::new("e2e")).await.unwrap().receipt;
        assert_eq!(r3.parent_revision.as_deref(), Some(r2.revision.as_str()));
        assert_eq!(r3.source_revision.as_deref(), Some(r1.revision.as_str()));
        let old = ws.read_revision(&r1.revision).await.unwrap();
        assert_eq!(ws.committed_snapshot().await.unwrap().files, old.files);
        let history = ws.history(None, None).await.unwrap();
        assert_eq!(history.records.len(), 3);
        // The next commit records no source revision again.
        fs.write("/after.md", "x").await.unwrap();
        let r4 = ws.commit(CommitOptions::new("e2e")).await.unwrap().receipt;
        assert_eq!(r4.source_revision, None);
    }
}

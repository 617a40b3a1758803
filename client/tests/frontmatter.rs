//! The YAML frontmatter codec end to end, through both transports: the database stores body and
//! metadata, the client's rendering hashes as the server's, a workspace opened without the
//! codec shows the same bytes, and a metadata-only edit is a `modified` diff entry.
#![cfg(feature = "frontmatter")]

use supabash_tests::client as support;

use serde_json::json;
use std::sync::Arc;
use supabash::transport::{call, Transport};
use supabash::workspace::{CommitOptions, DiffKind, DiffRef};
use supabash::{ErrorCode, FrontmatterCodec, Workspace};
use supabash_core::hash::sha256_hex;
use supabash_core::rpc::requests::LoadDocument;
use support::{new_user, reopen, transport, BOTH};

const STAGED: &str =
    "---\ntitle: Hello world\ncount: 3\ndraft: false\nbig: 1e16\nratio: 0.250\nnote: ~\n---\n# Body\n";
const CANONICAL: &str = "---\nbig: 10000000000000000\ncount: 3\ndraft: false\nnote: null\nratio: 0.25\ntitle: \"Hello world\"\n---\n# Body\n";

async fn load(t: &dyn Transport, ws: &Workspace, path: &str, revision: &str) -> serde_json::Value {
    let request = LoadDocument {
        workspace_id: ws.id().to_owned(),
        path: path.to_owned(),
        revision: Some(revision.to_owned()),
        delegated_grant: None,
    };
    serde_json::to_value(call(t, &request).await.unwrap()).unwrap()
}

#[tokio::test]
async fn frontmatter_is_stored_as_body_and_metadata() {
    for via in BOTH {
        let user = new_user();
        let t = transport(via, &user).await;
        let ws = Workspace::builder(t.clone())
            .codec(Arc::new(FrontmatterCodec))
            .create()
            .await
            .unwrap();
        let fs = ws.fs();
        fs.write("/doc.md", STAGED).await.unwrap();
        fs.write("/plain.md", "no frontmatter\n").await.unwrap();
        let r1 = ws.commit(CommitOptions::new("e2e")).await.unwrap();
        let r1 = r1.receipt.revision;

        // The staged tree now holds the canonical rendering: no phantom change.
        assert_eq!(fs.read("/doc.md").await.unwrap(), CANONICAL.as_bytes());
        assert!(ws.changes().unwrap().is_empty(), "{via:?}");

        let doc = load(t.as_ref(), &ws, "/doc.md", &r1).await;
        assert_eq!(doc["text"], "# Body\n", "{via:?}");
        assert_eq!(
            doc["metadata"],
            json!({"big": 10_000_000_000_000_000u64, "count": 3, "draft": false, "note": null,
                   "ratio": 0.25, "title": "Hello world"})
        );
        assert_eq!(doc["contentHash"], sha256_hex(CANONICAL.as_bytes()));
        assert_eq!(doc["size"], CANONICAL.len());
        let plain = load(t.as_ref(), &ws, "/plain.md", &r1).await;
        assert_eq!(plain["text"], "no frontmatter\n");
        assert_eq!(plain["metadata"], json!({}));

        // Without the codec the same rendered bytes show, and nothing is staged.
        let other = reopen(via, &user, ws.id()).await;
        assert_eq!(
            other.fs().read("/doc.md").await.unwrap(),
            CANONICAL.as_bytes()
        );
        assert!(other.changes().unwrap().is_empty());

        // A metadata-only edit is `modified`, staged and committed; the body stays.
        let edited = CANONICAL.replace("draft: false", "draft: true");
        fs.write("/doc.md", edited.as_str()).await.unwrap();
        let staged = ws
            .diff(DiffRef::Head, DiffRef::Staged, None, None)
            .await
            .unwrap();
        assert_eq!(staged.entries.len(), 1, "{via:?} {staged:?}");
        assert_eq!(
            (
                staged.entries[0].kind.as_str(),
                staged.entries[0].path.as_str()
            ),
            ("modified", "/doc.md")
        );
        let r2 = ws
            .commit(CommitOptions::new("e2e"))
            .await
            .unwrap()
            .receipt
            .revision;
        let diff = other
            .diff(
                DiffRef::Revision(r1.clone()),
                DiffRef::Revision(r2.clone()),
                None,
                None,
            )
            .await
            .unwrap();
        assert_eq!(diff.entries.len(), 1, "{via:?} {diff:?}");
        assert_eq!(diff.entries[0].kind, DiffKind::Modified);
        assert_eq!(diff.entries[0].path, "/doc.md");
        let doc = load(t.as_ref(), &ws, "/doc.md", &r2).await;
        assert_eq!(doc["text"], "# Body\n");
        assert_eq!(doc["metadata"]["draft"], true);
        assert_eq!(doc["contentHash"], sha256_hex(edited.as_bytes()));

        // Re-spelling the YAML alone stages a change (the bytes differ); committing it leaves
        // the canonical bytes staged and nothing pending.
        fs.write("/doc.md", edited.replace("draft: true", "draft:    true"))
            .await
            .unwrap();
        assert_eq!(ws.changes().unwrap().len(), 1);
        let r2 = ws
            .commit(CommitOptions::new("e2e"))
            .await
            .unwrap()
            .receipt
            .revision;
        assert_eq!(fs.read("/doc.md").await.unwrap(), edited.as_bytes());
        assert!(ws.changes().unwrap().is_empty());

        // Refusals name the path and commit nothing.
        fs.write("/bad.md", "---\ntitle: no closing fence\n")
            .await
            .unwrap();
        let e = ws.commit(CommitOptions::new("e2e")).await.unwrap_err();
        assert_eq!(e.code(), ErrorCode::UnsupportedContent, "{via:?} {e}");
        assert_eq!(e.path(), Some("/bad.md"));
        fs.write("/bad.md", "---\nlist: [1, 2]\n---\n")
            .await
            .unwrap();
        let e = ws.commit(CommitOptions::new("e2e")).await.unwrap_err();
        assert_eq!(e.code(), ErrorCode::UnsupportedContent, "{via:?} {e}");
        assert_eq!(ws.base_revision().as_deref(), Some(r2.as_str()));
    }
}

#[tokio::test]
async fn a_validate_callback_refuses_the_commit_and_nothing_is_stored() {
    for via in BOTH {
        let user = new_user();
        let t = transport(via, &user).await;
        let codec = FrontmatterCodec::with_validate(|path, metadata| {
            if path.ends_with(".md") && !metadata.contains_key("description") {
                return Err(format!("{path} needs a description"));
            }
            Ok(())
        });
        let ws = Workspace::builder(t.clone())
            .codec(Arc::new(codec))
            .create()
            .await
            .unwrap();
        ws.fs()
            .write("/ok.md", "---\ndescription: kept\n---\nbody\n")
            .await
            .unwrap();
        let first = ws.commit(CommitOptions::new("host")).await.unwrap();
        ws.fs().write("/bad.md", "no frontmatter\n").await.unwrap();
        let e = ws.commit(CommitOptions::new("host")).await.unwrap_err();
        assert_eq!(e.code(), ErrorCode::UnsupportedContent, "{via:?}: {e}");
        assert_eq!(e.message(), "/bad.md needs a description");
        assert_eq!(e.path(), Some("/bad.md"));
        // Nothing was committed; the staged edit is still there to fix.
        let again = reopen(via, &user, ws.id()).await;
        assert_eq!(again.base_revision(), Some(first.receipt.revision.clone()));
        assert!(again.fs().read("/bad.md").await.is_err());
        assert_eq!(ws.changes().unwrap().len(), 1);
    }
}

//! The file tools against a staged tree in memory.

use super::*;
use serde_json::json;
use supabash::tree::StagedTree;
use supabash::Limits;

async fn fixture() -> StagedTree {
    let t = StagedTree::empty(Limits::default());
    for (p, text) in [
        ("/src/main.rs", "fn main() {\n    println!(\"hi\");\n}\n"),
        ("/src/lib.rs", "pub fn add() {}\n// TODO: more\n"),
        ("/docs/a.md", "# A\ntodo: write\n"),
        ("/notes.txt", "one\ntwo\nthree\nfour\n"),
    ] {
        t.mkdir(supabash_core::path::parent(p), true).await.unwrap();
        t.write(p, text).await.unwrap();
    }
    t
}

#[tokio::test]
async fn read_file_returns_ranges_numbers_and_marks_truncation() {
    let t = fixture().await;
    let o = ToolOptions::default();
    let r = call(
        &t,
        "read_file",
        json!({"path": "/notes.txt", "offset": 2, "limit": 2, "line_numbers": true}),
        &o,
    )
    .await
    .unwrap();
    assert_eq!(r["content"], "     2\ttwo\n     3\tthree\n\n[truncated]\n");
    assert_eq!(
        (r["start_line"].as_u64(), r["end_line"].as_u64()),
        (Some(2), Some(3))
    );
    assert_eq!(r["total_lines"], 4);
    assert_eq!(r["truncated"], true);
    let small = ToolOptions {
        read_max_bytes: 5,
        ..ToolOptions::default()
    };
    let r = call(&t, "read_file", json!({"path": "notes.txt"}), &small)
        .await
        .unwrap();
    assert_eq!(r["content"], "one\nt\n[truncated]\n");
    let whole = call(&t, "read_file", json!({"path": "/notes.txt"}), &o)
        .await
        .unwrap();
    assert_eq!(
        (whole["content"].as_str(), &whole["truncated"]),
        (Some("one\ntwo\nthree\nfour\n"), &json!(false))
    );
}

#[tokio::test]
async fn edit_file_needs_exactly_one_match_and_answers_a_diff() {
    let t = fixture().await;
    let o = ToolOptions::default();
    let e = call(
        &t,
        "edit_file",
        json!({"path": "/notes.txt", "old_string": "o", "new_string": "0"}),
        &o,
    )
    .await
    .unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidArgument);
    assert!(e.message().contains("occurs 3 times"), "{}", e.message());
    let e = call(
        &t,
        "edit_file",
        json!({"path": "/notes.txt", "old_string": "five", "new_string": "5"}),
        &o,
    )
    .await
    .unwrap_err();
    assert!(e.message().contains("occurs 0 times"), "{}", e.message());
    let r = call(
        &t,
        "edit_file",
        json!({"path": "/notes.txt", "old_string": "two\n", "new_string": "2\n"}),
        &o,
    )
    .await
    .unwrap();
    assert_eq!(r["replacements"], 1);
    assert_eq!(
        r["diff"],
        "--- a/notes.txt\n+++ b/notes.txt\n@@ -1,4 +1,4 @@\n one\n-two\n+2\n three\n four\n"
    );
    assert_eq!(
        t.read_text("/notes.txt").await.unwrap(),
        "one\n2\nthree\nfour\n"
    );
}

#[tokio::test]
async fn search_tools_find_paths_and_lines() {
    let t = fixture().await;
    let o = ToolOptions::default();
    let g = call(&t, "glob", json!({"pattern": "**/*.rs"}), &o)
        .await
        .unwrap();
    assert_eq!(g["paths"], json!(["/src/lib.rs", "/src/main.rs"]));
    let g = call(&t, "glob", json!({"pattern": "*.rs"}), &o)
        .await
        .unwrap();
    assert_eq!(g["paths"], json!([]), "* stays within a segment");
    let m = call(
        &t,
        "grep",
        json!({"pattern": "todo", "case_insensitive": true}),
        &o,
    )
    .await
    .unwrap();
    assert_eq!(m["matches"].as_array().unwrap().len(), 2);
    assert_eq!(
        m["matches"][0],
        json!({"path": "/docs/a.md", "line": 2, "text": "todo: write"})
    );
    let m = call(
        &t,
        "grep",
        json!({"pattern": "todo", "case_insensitive": true, "glob": "src/**"}),
        &o,
    )
    .await
    .unwrap();
    assert_eq!(m["matches"][0]["path"], "/src/lib.rs");
    let capped = call(&t, "grep", json!({"pattern": ".", "max_results": 3}), &o)
        .await
        .unwrap();
    assert_eq!(
        (
            capped["matches"].as_array().unwrap().len(),
            &capped["truncated"]
        ),
        (3, &json!(true))
    );
    let e = call(&t, "grep", json!({"pattern": "("}), &o)
        .await
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidArgument);
    let tree = call(&t, "directory_tree", json!({}), &o).await.unwrap();
    assert_eq!(
        tree["tree"],
        "docs/\n  a.md\nnotes.txt\nsrc/\n  lib.rs\n  main.rs\n"
    );
    let shallow = call(&t, "directory_tree", json!({"depth": 1}), &o)
        .await
        .unwrap();
    assert_eq!(shallow["tree"], "docs/\nnotes.txt\nsrc/\n");
    let l = call(&t, "list_directory", json!({"path": "/src"}), &o)
        .await
        .unwrap();
    assert_eq!(
        l["entries"][0],
        json!({"name": "lib.rs", "kind": "file", "size": 30})
    );
    let i = call(&t, "file_info", json!({"path": "/notes.txt"}), &o)
        .await
        .unwrap();
    assert_eq!(
        (i["kind"].as_str(), i["lines"].as_u64(), i["mode"].as_str()),
        (Some("file"), Some(4), Some("644"))
    );
}

#[tokio::test]
async fn moves_refuse_to_overwrite_unless_asked() {
    let t = fixture().await;
    let o = ToolOptions::default();
    let e = call(
        &t,
        "move_file",
        json!({"source": "/notes.txt", "destination": "/docs/a.md"}),
        &o,
    )
    .await
    .unwrap_err();
    assert!(e.message().starts_with("EEXIST"), "{}", e.message());
    let r = call(
        &t,
        "move_file",
        json!({"source": "/notes.txt", "destination": "/docs/a.md", "overwrite": true}),
        &o,
    )
    .await
    .unwrap();
    assert_eq!(r["replaced"], true);
    assert_eq!(
        t.read_text("/docs/a.md").await.unwrap(),
        "one\ntwo\nthree\nfour\n"
    );
    call(
        &t,
        "move_file",
        json!({"source": "/src", "destination": "/new/place/src"}),
        &o,
    )
    .await
    .unwrap();
    assert!(t.exists("/new/place/src/main.rs").await);
    call(&t, "create_directory", json!({"path": "/x/y"}), &o)
        .await
        .unwrap();
    call(&t, "create_directory", json!({"path": "/x/y"}), &o)
        .await
        .unwrap();
    call(
        &t,
        "delete_file",
        json!({"path": "/x", "recursive": true}),
        &o,
    )
    .await
    .unwrap();
    assert!(!t.exists("/x").await);
}

#[tokio::test]
async fn images_are_allow_listed_by_magic_bytes_and_size() {
    let t = fixture().await;
    let png = b"\x89PNG\r\n\x1a\nrest".to_vec();
    t.write("/i.png", png.clone()).await.unwrap();
    t.write("/fake.png", "<svg/>").await.unwrap();
    let o = ToolOptions::default();
    let r = call(&t, "view_image", json!({"path": "/i.png"}), &o)
        .await
        .unwrap();
    assert_eq!(r["mime"], "image/png");
    assert_eq!(r["base64"], "iVBORw0KGgpyZXN0");
    let e = call(&t, "view_image", json!({"path": "/fake.png"}), &o)
        .await
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::UnsupportedContent);
    let tiny = ToolOptions {
        image_max_bytes: 4,
        ..ToolOptions::default()
    };
    let e = call(&t, "view_image", json!({"path": "/i.png"}), &tiny)
        .await
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::QuotaExceeded);
    let off = ToolOptions {
        images: false,
        ..ToolOptions::default()
    };
    assert!(call(&t, "view_image", json!({"path": "/i.png"}), &off)
        .await
        .is_err());
    assert_eq!(image_mime(b"GIF89a..."), Some("image/gif"));
    assert_eq!(image_mime(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
    assert_eq!(image_mime(&[0xFF, 0xD8, 0xFF, 0xE0]), Some("image/jpeg"));
}

#[test]
fn specs_annotate_every_tool_and_none_reaches_the_host_api() {
    let names: Vec<&str> = SPECS.iter().map(|s| s.name).collect();
    for host_only in ["commit", "discard", "checkpoint", "history", "restore"] {
        assert!(names.iter().all(|n| !n.contains(host_only)));
    }
    for s in SPECS {
        assert!(!(s.read_only && s.destructive), "{}", s.name);
    }
    assert!(spec("read_file").unwrap().read_only);
    assert!(spec("write_file").unwrap().destructive);
    assert!(!spec("create_directory").unwrap().destructive);
    let read = (spec("read_file").unwrap().input_schema)();
    assert_eq!(read["required"], json!(["path"]));
    assert!(read["properties"]["line_numbers"]["description"]
        .as_str()
        .unwrap()
        .contains("number"));
    let patch = (spec("apply_patch").unwrap().input_schema)();
    assert!(patch["properties"]["operations"].is_object());
    for s in SPECS {
        assert_eq!((s.input_schema)()["type"], "object", "{}", s.name);
    }
}

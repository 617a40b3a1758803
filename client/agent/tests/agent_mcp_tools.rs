//! The MCP tool list in process (no transport): `McpServer::with_tools` serves exactly the
//! named tools and refuses any other by name, an unknown name in the allowlist is an error that
//! lists the served tools, and `read_only` serves no tool that can change anything. Every
//! refused call leaves the staged tree unchanged. (`client/cli/tests/mcp.rs` drives the same
//! rules through rmcp's client over stdio.)

use serde_json::{json, Value};
use std::sync::Arc;
use supabash::{Limits, StagedTree};
use supabash_agent::mcp::{McpServer, Session};
use supabash_agent::redact::Redactor;
use supabash_agent::shell::{Shell, ShellConfig};
use supabash_agent::tools::ToolOptions;
use supabash_agent::AgentFs;

/// A server over an empty staged tree holding `/a.md`.
async fn server() -> (McpServer, Arc<StagedTree>) {
    let tree = Arc::new(StagedTree::empty(Limits::default()));
    tree.write("/a.md", "kept\n").await.unwrap();
    let fs: Arc<dyn AgentFs> = tree.clone();
    let session = Session {
        shell: Shell::with_config(fs.clone(), ShellConfig::default()),
        fs,
        options: ToolOptions::default(),
    };
    (McpServer::new(session, Redactor::default()), tree)
}

fn text(r: &rmcp::model::CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect()
}

/// Every path and content of the staged tree, to compare before and after.
async fn snapshot(tree: &StagedTree) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for p in ["/a.md", "/b.md"] {
        if let Ok(bytes) = tree.read(p).await {
            out.push((p.to_owned(), bytes.to_vec()));
        }
    }
    out
}

#[tokio::test]
async fn the_tool_list_follows_the_allowlist_and_a_hidden_tool_is_refused_by_name() {
    let (full, tree) = server().await;
    assert!(full.tool_names().contains(&"bash"));
    assert!(full.tool_names().contains(&"write_file"));
    let served = full
        .with_tools(&["read_file", "list_directory"])
        .expect("both are served");
    assert_eq!(served.tool_names(), ["read_file", "list_directory"]);
    let listed: Vec<String> = served
        .tool_list()
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    assert_eq!(listed, ["read_file", "list_directory"]);
    let before = snapshot(&tree).await;
    for (tool, args) in [
        ("bash", json!({ "command": "echo x > /b.md" })),
        ("write_file", json!({ "path": "/b.md", "content": "x" })),
        (
            "edit_file",
            json!({ "path": "/a.md", "old_string": "kept", "new_string": "gone" }),
        ),
    ] {
        let r = served.call(tool, args).await;
        assert_eq!(r.is_error, Some(true), "{tool}");
        assert!(
            text(&r).contains(&format!("no tool named \"{tool}\"")),
            "{tool}: {}",
            text(&r)
        );
    }
    assert_eq!(
        snapshot(&tree).await,
        before,
        "a refused tool changed the tree"
    );
    let r = served.call("read_file", json!({ "path": "/a.md" })).await;
    assert_ne!(r.is_error, Some(true));
    assert!(text(&r).contains("kept"));

    // A name the server does not serve is an error naming the ones it does.
    let (full, _) = server().await;
    let e = full
        .with_tools(&["read_file", "no_such_tool"])
        .err()
        .expect("refused");
    assert!(
        e.contains("no_such_tool") && e.contains("read_file") && e.contains("bash"),
        "{e}"
    );
}

#[tokio::test]
async fn read_only_serves_no_mutating_tool() {
    let (full, tree) = server().await;
    let served = full.read_only();
    let tools = served.tool_list();
    assert!(!tools.is_empty());
    for t in &tools {
        let hint = t.annotations.as_ref().and_then(|a| a.read_only_hint);
        assert_eq!(hint, Some(true), "{} is not read-only", t.name);
    }
    let names = served.tool_names();
    for mutating in ["bash", "write_file", "edit_file"] {
        assert!(!names.contains(&mutating), "{mutating} is served read-only");
    }
    let before = snapshot(&tree).await;
    let r = served
        .call("write_file", json!({ "path": "/b.md", "content": "x" }))
        .await;
    assert_eq!(r.is_error, Some(true));
    assert!(text(&r).contains("no tool named \"write_file\""));
    let r: Value = serde_json::to_value(
        served
            .call("bash", json!({ "command": "rm /a.md" }))
            .await
            .is_error,
    )
    .unwrap();
    assert_eq!(r, json!(true));
    assert_eq!(snapshot(&tree).await, before);
}

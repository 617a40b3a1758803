//! A PostgREST error's `hint` and `details` reach the host and the model: over HTTP, the
//! transport keeps them, `SupabashError::hint()` / `details()` answer them, and an MCP host
//! tool's error shows them (text and structured content). The server is a JSON test server
//! answering PostgREST's documented error shape (`{"code", "message", "details", "hint"}`);
//! opening the workspace gets what the real database answered for an empty one.

use serde_json::{json, Value};
use std::sync::Arc;
use supabash::{ErrorCode, PostgrestTransport, Transport, Workspace};
use supabash_agent::mcp::{HostTools, McpServer, Session};
use supabash_agent::redact::Redactor;
use supabash_agent::shell::{Shell, ShellConfig};
use supabash_agent::tools::ToolOptions;
use supabash_agent::AgentFs;
use supabash_tests::client::{json_test_server, new_user, new_workspace, transport, Via};

const HINT: &str = "ask the owner for a grant with history";
const DETAILS: &str = r#"{"workspace":"4b1f0a4e-0000-4000-8000-000000000000"}"#;

/// Opening a workspace answers what the real database answered for an empty one; every
/// other RPC is refused with a hint.
async fn server() -> String {
    let user = new_user();
    let real = transport(Via::Postgres, &user).await;
    let id = new_workspace(Via::Postgres, &user).await.id().to_owned();
    let mut opened = Vec::new();
    for (rpc, args) in [
        (
            "supabash_list_directory",
            json!({ "workspace_id": id, "path": "/", "totals": true }),
        ),
        ("supabash_load_manifest", json!({ "workspace_id": id })),
    ] {
        let Value::Object(args) = args else {
            unreachable!()
        };
        let answer = real.call(rpc, args).await.unwrap();
        opened.push((format!("/rpc/{rpc}"), answer.to_string()));
    }
    json_test_server(move |head| {
        if let Some((_, answer)) = opened.iter().find(|(path, _)| head.contains(path.as_str())) {
            return ("200 OK", answer.clone());
        }
        let refused = json!({
            "code": "42501",
            "message": "SUPABASH_WORKSPACE_DENIED: the grant does not hold history",
            "details": DETAILS,
            "hint": HINT,
        });
        ("403 Forbidden", refused.to_string())
    })
    .await
}

#[tokio::test]
async fn the_hint_and_details_reach_the_host_and_the_model() {
    let url = server().await;
    let http: Arc<dyn Transport> = Arc::new(PostgrestTransport::new(
        &url,
        "test-publishable-key",
        "a-token",
    ));
    let ws = Arc::new(
        Workspace::builder(http)
            .open("4b1f0a4e-0000-4000-8000-000000000000")
            .await
            .unwrap(),
    );

    // The host: the error's accessors.
    let e = ws.history(None, None).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::Authorization, "{e}");
    assert_eq!(e.hint(), Some(HINT));
    assert_eq!(e.details(), Some(DETAILS));

    // The model: the host tool's error, as text and as structured content.
    let fs: Arc<dyn AgentFs> = ws.fs().clone();
    let session = Session {
        shell: Shell::with_config(fs.clone(), ShellConfig::default()),
        fs,
        options: ToolOptions::default(),
    };
    let server = McpServer::new(session, Redactor::default()).with_host_tools(HostTools {
        workspaces: vec![("main".into(), ws.clone())],
        actor: "host".into(),
    });
    let r = server.call("history", json!({})).await;
    assert_eq!(r.is_error, Some(true));
    let text: String = r
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect();
    assert!(text.contains(&format!("hint: {HINT}")), "{text}");
    assert!(text.contains("details: "), "{text}");
    let structured: Value = r.structured_content.unwrap();
    assert_eq!(structured["hint"], json!(HINT));
    assert_eq!(structured["details"], json!(DETAILS));
}

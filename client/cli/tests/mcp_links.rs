//! `supabash mcp --mount /w=WS --hide /w=/.internal` with links planted in the workspace
//! (issue 36, item 4): neither a write through a dangling link nor `readlink` below a link
//! reaches the hidden path, and `--commit-on-exit` commits nothing there.

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::ServiceExt;
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use supabash::workspace::CommitOptions;
use supabash_tests::client::{cluster, new_user, new_workspace, reopen, Via};

async fn call(
    client: &rmcp::service::RunningService<rmcp::RoleClient, ()>,
    tool: &str,
    args: Value,
) -> CallToolResult {
    let Value::Object(args) = args else {
        panic!("arguments must be an object")
    };
    client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(args))
        .await
        .unwrap()
}

fn shown(r: &CallToolResult) -> String {
    let text: Vec<String> = r
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect();
    format!("{} {:?}", text.join(""), r.structured_content)
}

#[tokio::test]
async fn links_into_a_hidden_path_are_no_way_in() {
    let user = new_user();
    let ws = new_workspace(Via::Postgres, &user).await;
    ws.fs().mkdir("/.internal", true).await.unwrap();
    ws.fs().write("/.internal/secret.md", "s\n").await.unwrap();
    ws.fs().write("/readme.md", "r\n").await.unwrap();
    ws.fs()
        .symlink(".internal/planted.txt", "/notes")
        .await
        .unwrap();
    ws.fs().symlink(".internal", "/d").await.unwrap();
    ws.fs().symlink("tok-abc123", "/.internal/l").await.unwrap();
    ws.commit(CommitOptions::new("host")).await.unwrap();
    let dsn = cluster().dsn("authenticator");
    let mount = format!("/w={}", ws.id());
    let child = TokioChildProcess::new(
        tokio::process::Command::new(env!("CARGO_BIN_EXE_supabash")).configure(|c| {
            c.args(["mcp", "--dsn", &dsn, "--sub", &user]).args([
                "--mount",
                &mount,
                "--hide",
                "/w=/.internal",
                "--commit-on-exit",
            ]);
        }),
    )
    .unwrap();
    let client = ().serve(child).await.unwrap();
    let r = call(
        &client,
        "write_file",
        json!({ "path": "/w/notes", "content": "x" }),
    )
    .await;
    assert_eq!(r.is_error, Some(true), "{}", shown(&r));
    let r = call(&client, "bash", json!({ "command": "readlink /w/d/l" })).await;
    let out = shown(&r);
    assert!(!out.contains("tok-abc123"), "{out}");
    let r = call(
        &client,
        "bash",
        json!({ "command": "echo x > /w/notes; cat /w/d/secret.md" }),
    )
    .await;
    let out = shown(&r);
    assert!(!out.contains("s\\n") && !out.contains("\"s\""), "{out}");
    // What is visible still works.
    let r = call(
        &client,
        "bash",
        json!({ "command": "cat /w/readme.md && readlink /w/notes" }),
    )
    .await;
    assert!(
        shown(&r).contains("r\\n.internal/planted.txt"),
        "{}",
        shown(&r)
    );
    let r = call(
        &client,
        "write_file",
        json!({ "path": "/w/new.md", "content": "n" }),
    )
    .await;
    assert_ne!(r.is_error, Some(true), "{}", shown(&r));
    client.cancel().await.unwrap();
    // Committed at exit: new.md, and nothing in the hidden directory.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let now = reopen(Via::Postgres, &user, ws.id()).await;
        if now.fs().read("/new.md").await.is_ok() {
            assert!(!now.fs().exists("/.internal/planted.txt").await);
            break;
        }
        assert!(Instant::now() < deadline, "not committed at exit");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

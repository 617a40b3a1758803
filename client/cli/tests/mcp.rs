//! `supabash mcp` end to end: the built binary, spawned over stdio and driven by rmcp's own
//! client, against a real PostgreSQL with the extension. Lists the tools and their
//! annotations, runs an agent session of tool calls, and when the session ends the host's
//! launch-time decision (--commit-on-exit) commits through the workspace API; the receipt and
//! the committed tree are checked through the API.

use supabash_tests::client as support;

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use supabash::workspace::CommitOptions;
use supabash::Workspace;
use support::{cluster, new_user, new_workspace, reopen, transport, Via};

type Client = RunningService<RoleClient, ()>;

async fn call(client: &Client, tool: &str, args: Value) -> CallToolResult {
    let Value::Object(args) = args else {
        panic!("arguments must be an object")
    };
    client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(args))
        .await
        .unwrap()
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("")
}

async fn bash_ok(client: &Client, command: &str) -> Value {
    let r = call(client, "bash", json!({ "command": command })).await;
    assert_ne!(r.is_error, Some(true), "{command}: {}", text(&r));
    let out = r.structured_content.clone().unwrap();
    assert_eq!(out["exit_code"], 0, "{command}: {out}");
    out
}

/// `supabash mcp` for `user` over the shared cluster, with `args` after `--dsn` and `--sub`,
/// spawned over stdio and driven by rmcp's client.
async fn serve_stdio(user: &str, args: &[&str]) -> Client {
    let dsn = cluster().dsn("authenticator");
    let child = TokioChildProcess::new(
        tokio::process::Command::new(env!("CARGO_BIN_EXE_supabash")).configure(|c| {
            c.args(["mcp", "--dsn", &dsn, "--sub", user]).args(args);
        }),
    )
    .unwrap();
    ().serve(child).await.unwrap()
}

/// The receipt lines at `path` once there are at least `count` (waited for up to a minute);
/// the file is then removed.
async fn wait_for_receipts(path: &std::path::Path, count: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(60);
    let lines = loop {
        let lines: Vec<Value> = std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        if lines.len() >= count {
            break lines;
        }
        assert!(Instant::now() < deadline, "receipts were not written");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let _ = std::fs::remove_file(path);
    lines
}

#[tokio::test]
async fn stdio_session_then_the_host_commits() {
    let user = new_user();
    let ws = new_workspace(Via::Postgres, &user).await;
    ws.fs()
        .write("/readme.md", "status: draft\n")
        .await
        .unwrap();
    ws.fs().write("/old.md", "old\n").await.unwrap();
    let base = ws.commit(CommitOptions::new("host")).await.unwrap();

    let receipts = std::env::temp_dir().join(format!("supabash-mcp-{user}.jsonl"));
    let dsn = cluster().dsn("authenticator");
    let client = serve_stdio(
        &user,
        &[
            "--workspace",
            ws.id(),
            "--commit-on-exit",
            "--actor",
            "mcp-e2e",
            "--receipts",
            receipts.to_str().unwrap(),
        ],
    )
    .await;

    // The tool list: the agent tools with honest annotations, and no host action.
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    for want in [
        "bash",
        "apply_patch",
        "read_file",
        "write_file",
        "edit_file",
        "list_directory",
        "directory_tree",
        "glob",
        "grep",
        "move_file",
        "delete_file",
        "create_directory",
        "file_info",
    ] {
        assert!(names.contains(&want), "{names:?}");
    }
    for host_only in [
        "commit",
        "discard",
        "checkpoint",
        "history",
        "restore",
        "diff",
    ] {
        assert!(
            !names.iter().any(|n| n.contains(host_only)),
            "{host_only} must not be a tool: {names:?}"
        );
    }
    for t in &tools {
        let a = t.annotations.as_ref().expect("annotations");
        assert_eq!(a.open_world_hint, Some(false), "{}", t.name);
        let read_only = a.read_only_hint == Some(true);
        assert!(
            !(read_only && a.destructive_hint == Some(true)),
            "{} cannot be read-only and destructive",
            t.name
        );
        assert_eq!(
            t.input_schema.get("type"),
            Some(&json!("object")),
            "{}",
            t.name
        );
    }
    let bash = tools.iter().find(|t| t.name == "bash").unwrap();
    let a = bash.annotations.as_ref().unwrap();
    assert_eq!(
        (a.read_only_hint, a.destructive_hint),
        (Some(false), Some(true))
    );
    assert!(bash.input_schema["properties"].get("command").is_some());
    let annotation = |name: &str| {
        let a = tools
            .iter()
            .find(|t| t.name == name)
            .unwrap()
            .annotations
            .clone()
            .unwrap();
        (a.read_only_hint, a.destructive_hint)
    };
    assert_eq!(annotation("read_file"), (Some(true), Some(false)));
    assert_eq!(annotation("grep"), (Some(true), Some(false)));
    assert_eq!(annotation("delete_file"), (Some(false), Some(true)));
    assert_eq!(annotation("apply_patch"), (Some(false), Some(true)));

    // An agent session.
    bash_ok(
        &client,
        "mkdir -p /notes && echo 'first note' > /notes/a.md",
    )
    .await;
    let patch = "*** Begin Patch\n*** Add File: /notes/b.md\n+from a patch\n*** Update File: /readme.md\n@@\n-status: draft\n+status: review\n*** End Patch\n";
    let r = call(&client, "apply_patch", json!({ "patch": patch })).await;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    let applied = &r.structured_content.as_ref().unwrap()["applied"];
    assert_eq!(applied.as_array().map(Vec::len), Some(2), "{applied}");
    let edited = call(
        &client,
        "edit_file",
        json!({ "path": "/notes/a.md", "old_string": "first", "new_string": "edited" }),
    )
    .await;
    assert_ne!(edited.is_error, Some(true), "{}", text(&edited));
    let read = call(&client, "read_file", json!({ "path": "/notes/a.md" })).await;
    assert!(text(&read).contains("edited note"), "{}", text(&read));
    let found = call(&client, "grep", json!({ "pattern": "patch", "path": "/" })).await;
    assert!(text(&found).contains("/notes/b.md"), "{}", text(&found));
    bash_ok(
        &client,
        "sed -i 's/review/final/' /readme.md && mv /old.md /notes/old.md",
    )
    .await;
    let out = bash_ok(&client, "cat /readme.md; ls /notes | sort").await;
    assert_eq!(out["stdout"], "status: final\na.md\nb.md\nold.md\n");
    assert!(
        text(&call(&client, "bash", json!({"command": "echo hi"})).await).contains("[exit code 0]")
    );

    // Refusals come back as tool errors the model can read; nothing runs.
    let denied = call(&client, "bash", json!({ "command": "cd / && rm -rf ." })).await;
    assert_eq!(denied.is_error, Some(true));
    assert!(text(&denied).contains("POLICY_DENIED"), "{}", text(&denied));
    assert!(
        text(&denied).contains("recursive-root"),
        "{}",
        text(&denied)
    );
    let bad_patch = call(
        &client,
        "apply_patch",
        json!({ "patch": "*** Begin Patch\n*** Update File: /notes/a.md\n@@\n-not there\n+x\n*** End Patch\n" }),
    )
    .await;
    assert_eq!(bad_patch.is_error, Some(true));
    assert!(
        text(&bad_patch).contains("INVALID_PATCH"),
        "{}",
        text(&bad_patch)
    );
    let unknown = call(&client, "commit", json!({})).await;
    assert_eq!(unknown.is_error, Some(true));
    // Secrets the server was launched with never come back.
    let leak = bash_ok(&client, &format!("echo '{dsn}'")).await;
    assert!(!leak["stdout"].as_str().unwrap().contains(&dsn));

    // The session ends; the host's --commit-on-exit commits through the workspace API.
    client.cancel().await.unwrap();
    let written = wait_for_receipts(&receipts, 1).await[0].clone();
    assert_eq!(written["workspace"], ws.id());
    let receipt = &written["receipt"];
    assert_eq!(receipt["actor"], "mcp-e2e");
    assert_eq!(receipt["parentRevision"], base.receipt.revision.as_str());
    let mut lines: Vec<(String, String)> = receipt["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["op"].as_str().unwrap().into(),
                l["path"].as_str().unwrap().into(),
            )
        })
        .collect();
    lines.sort();
    assert_eq!(
        lines,
        [
            ("move".into(), "/notes/old.md".into()),
            ("upsert".into(), "/notes/a.md".into()),
            ("upsert".into(), "/notes/b.md".into()),
            ("upsert".into(), "/readme.md".into()),
        ]
    );

    // The host reads it back through the API.
    let again = reopen(Via::Postgres, &user, ws.id()).await;
    assert_eq!(
        again.base_revision().as_deref(),
        receipt["revision"].as_str()
    );
    let files = again.committed_snapshot().await.unwrap().files;
    assert_eq!(files["/readme.md"], b"status: final\n");
    assert_eq!(files["/notes/b.md"], b"from a patch\n");
    assert_eq!(files["/notes/a.md"], b"edited note\n");
    assert_eq!(files.len(), 4, "{:?}", files.keys().collect::<Vec<_>>());
    let history = again.history(None, None).await.unwrap().records;
    assert_eq!(
        history.last().unwrap().revision,
        receipt["revision"].as_str().unwrap()
    );
}

/// One JSON-RPC exchange over streamable HTTP; answers the response object (from a JSON body
/// or from the `data:` lines of an event stream) and the session header.
async fn rpc(
    http: &reqwest::Client,
    url: &str,
    session: Option<&str>,
    body: Value,
) -> (Option<Value>, Option<String>) {
    let mut request = http
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(body.to_string());
    if let Some(s) = session {
        request = request
            .header("mcp-session-id", s)
            .header("mcp-protocol-version", "2025-06-18");
    }
    let response = request.send().await.unwrap();
    assert!(response.status().is_success(), "{}", response.status());
    let session = response
        .headers()
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_owned());
    let text = response.text().await.unwrap();
    let answer = serde_json::from_str::<Value>(&text).ok().or_else(|| {
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .find(|v| v.get("id").is_some())
    });
    (answer, session)
}

#[tokio::test]
async fn streamable_http_session_then_the_host_commits() {
    use std::io::BufRead;
    let user = new_user();
    let ws = new_workspace(Via::Postgres, &user).await;
    let receipts = std::env::temp_dir().join(format!("supabash-mcp-http-{user}.jsonl"));
    let dsn = cluster().dsn("authenticator");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_supabash"))
        .args(["mcp", "--dsn", &dsn, "--sub", &user, "--workspace", ws.id()])
        .args(["--http", "127.0.0.1:0", "--commit-on-exit", "--receipts"])
        .arg(&receipts)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let url = line
        .trim()
        .strip_prefix("supabash mcp: serving ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_owned();

    let http = reqwest::Client::new();
    let init = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": { "name": "e2e", "version": "0" }
        }
    });
    let (answer, session) = rpc(&http, &url, None, init).await;
    let answer = answer.unwrap();
    assert_eq!(
        answer["result"]["serverInfo"]["name"], "supabash",
        "{answer}"
    );
    let session = session.expect("a session id");
    let note = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    rpc(&http, &url, Some(&session), note).await;

    let list = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" });
    let (answer, _) = rpc(&http, &url, Some(&session), list).await;
    let tools = answer.unwrap()["result"]["tools"].clone();
    let bash = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "bash")
        .expect("bash is served")
        .clone();
    assert_eq!(bash["annotations"]["destructiveHint"], true);
    assert_eq!(bash["annotations"]["openWorldHint"], false);

    let run = json!({
        "jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": { "name": "bash", "arguments": { "command": "echo over http > /http.md && cat /http.md" } }
    });
    let (answer, _) = rpc(&http, &url, Some(&session), run).await;
    let result = answer.unwrap()["result"].clone();
    assert_eq!(
        result["structuredContent"]["stdout"], "over http\n",
        "{result}"
    );

    // Ctrl-C ends the server; the host's --commit-on-exit commits.
    // SAFETY: signalling the child this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    let written: Value = serde_json::from_str(
        std::fs::read_to_string(&receipts)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    let _ = std::fs::remove_file(&receipts);
    assert_eq!(written["receipt"]["changes"][0]["path"], "/http.md");
    let again = reopen(Via::Postgres, &user, ws.id()).await;
    assert_eq!(
        again.committed_snapshot().await.unwrap().files["/http.md"],
        b"over http\n"
    );
}

#[tokio::test]
async fn two_workspaces_side_by_side_commit_separately() {
    let user = new_user();
    let t = transport(Via::Postgres, &user).await;
    let notes = Workspace::builder(t.clone()).create().await.unwrap();
    let code = Workspace::builder(t).create().await.unwrap();
    code.fs().write("/main.rs", "fn main() {}\n").await.unwrap();
    code.commit(CommitOptions::new("host")).await.unwrap();

    let receipts = std::env::temp_dir().join(format!("supabash-mcp-two-{user}.jsonl"));
    let notes_arg = format!("notes={}", notes.id());
    let code_arg = format!("code={}", code.id());
    let client = serve_stdio(
        &user,
        &[
            "--workspace",
            &notes_arg,
            "--workspace",
            &code_arg,
            "--commit-on-exit",
            "--receipts",
            receipts.to_str().unwrap(),
        ],
    )
    .await;

    // bashkit adds its read-only system directories (/bin, /etc, /proc, …) beside the mounts.
    let out = bash_ok(
        &client,
        "ls / | grep -v -x -e bin -e dev -e etc -e proc -e root -e tmp -e usr; cat /code/main.rs",
    )
    .await;
    assert_eq!(out["stdout"], "code\nnotes\nfn main() {}\n");
    bash_ok(
        &client,
        "echo todo > /notes/todo.md && echo scratch > /tmp/s && sed -i 's/main/start/' /code/main.rs",
    )
    .await;
    // A move between workspaces is refused; nothing changes.
    let out = call(
        &client,
        "bash",
        json!({ "command": "mv /notes/todo.md /code/todo.md" }),
    )
    .await;
    assert_ne!(out.structured_content.unwrap()["exit_code"], 0);
    client.cancel().await.unwrap();

    let lines = wait_for_receipts(&receipts, 2).await;
    assert_eq!(lines.len(), 2, "{lines:?}");
    let by_label = |label: &str| lines.iter().find(|l| l["label"] == label).unwrap().clone();
    let paths = |line: &Value| -> Vec<String> {
        line["receipt"]["changes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["path"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(paths(&by_label("notes")), ["/todo.md"]);
    assert_eq!(paths(&by_label("code")), ["/main.rs"]);
    assert_eq!(by_label("code")["workspace"], code.id());
}

/// `supabash mcp` with `args` that must refuse to start: its stderr.
fn refused(user: &str, args: &[&str]) -> String {
    let dsn = cluster().dsn("authenticator");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_supabash"))
        .args(["mcp", "--dsn", &dsn, "--sub", user])
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success(), "{args:?} started");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn tool_names(tools: &[rmcp::model::Tool]) -> Vec<String> {
    tools.iter().map(|t| t.name.to_string()).collect()
}

#[tokio::test]
async fn mounts_a_pinned_snapshot_next_to_a_writable_workspace() {
    let user = new_user();
    let memories = new_workspace(Via::Postgres, &user).await;
    let docs = new_workspace(Via::Postgres, &user).await;
    docs.fs().write("/guide.md", "v1\n").await.unwrap();
    docs.fs().write("/secret.md", "hidden\n").await.unwrap();
    let r1 = docs.commit(CommitOptions::new("host")).await.unwrap();
    docs.fs().write("/guide.md", "v2\n").await.unwrap();
    docs.commit(CommitOptions::new("host")).await.unwrap();
    let pinned = format!("/docs={}@{}", docs.id(), r1.receipt.revision);
    let rw = format!("/memories={}", memories.id());

    let client = serve_stdio(
        &user,
        &[
            "--mount",
            &rw,
            "--mount",
            &pinned,
            "--hide",
            "/docs=/secret.md",
            "--commit-on-exit",
        ],
    )
    .await;
    let names = tool_names(&client.list_all_tools().await.unwrap());
    assert!(names.contains(&"bash".to_owned()) && names.contains(&"write_file".to_owned()));
    let r = call(&client, "read_file", json!({ "path": "/docs/guide.md" })).await;
    assert!(text(&r).contains("v1"), "the pinned revision: {}", text(&r));
    let r = call(
        &client,
        "write_file",
        json!({ "path": "/docs/guide.md", "content": "x" }),
    )
    .await;
    assert_eq!(
        r.is_error,
        Some(true),
        "the snapshot is read-only: {}",
        text(&r)
    );
    let r = call(&client, "read_file", json!({ "path": "/docs/secret.md" })).await;
    assert_eq!(r.is_error, Some(true), "hidden: {}", text(&r));
    let out = bash_ok(
        &client,
        "ls /docs && echo note > /memories/m.md && cat /memories/m.md",
    )
    .await;
    assert_eq!(out["stdout"], "guide.md\nnote\n");
    client.cancel().await.unwrap();
    // The writable mount was committed at exit; the snapshot's workspace was not touched.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let ws = reopen(Via::Postgres, &user, memories.id()).await;
        if ws.fs().read("/m.md").await.is_ok() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the writable mount was not committed"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let docs_now = reopen(Via::Postgres, &user, docs.id()).await;
    assert_eq!(docs_now.fs().read("/guide.md").await.unwrap(), b"v2\n");

    // A tool allowlist: only those are listed, any other is refused by name.
    let client = serve_stdio(
        &user,
        &["--mount", &rw, "--tools", "read_file,list_directory"],
    )
    .await;
    let names = tool_names(&client.list_all_tools().await.unwrap());
    assert_eq!(names, ["read_file", "list_directory"]);
    let r = call(&client, "bash", json!({ "command": "echo hi" })).await;
    assert_eq!(r.is_error, Some(true));
    assert!(text(&r).contains("no tool named \"bash\""), "{}", text(&r));
    client.cancel().await.unwrap();

    // Every mount read-only: no tool that changes anything.
    let ro = format!("/memories={}:ro", memories.id());
    let client = serve_stdio(&user, &["--mount", &ro, "--mount", &pinned]).await;
    let tools = client.list_all_tools().await.unwrap();
    assert!(!tools.is_empty());
    for t in &tools {
        let read_only = t.annotations.as_ref().and_then(|a| a.read_only_hint);
        assert_eq!(read_only, Some(true), "{} is served read-only", t.name);
    }
    assert!(!tool_names(&tools).contains(&"bash".to_owned()));
    let r = call(&client, "read_file", json!({ "path": "/memories/m.md" })).await;
    assert!(text(&r).contains("note"), "{}", text(&r));
    client.cancel().await.unwrap();

    // Bad specs never start a server.
    let inner = format!("/memories/docs={}@{}", docs.id(), r1.receipt.revision);
    let e = refused(&user, &["--mount", &rw, "--mount", &inner]);
    assert!(e.contains("overlap"), "{e}");
    let missing = format!(
        "/docs={}@{}",
        docs.id(),
        "00000000-0000-4000-8000-000000000000"
    );
    let e = refused(&user, &["--mount", &missing]);
    assert!(e.contains("cannot be read"), "{e}");
    let e = refused(
        &user,
        &[
            "--mount",
            &format!("/docs={}@{}:rw", docs.id(), r1.receipt.revision),
        ],
    );
    assert!(e.contains("read-only snapshot"), "{e}");
    let e = refused(
        &user,
        &["--mount", &rw, "--tools", "read_file,no_such_tool"],
    );
    assert!(e.contains("no_such_tool"), "{e}");
    let e = refused(&user, &["--mount", &rw, "--hide", "/elsewhere=/x"]);
    assert!(e.contains("not a --mount point"), "{e}");
}

#[tokio::test]
async fn a_view_root_and_read_only_mode_through_the_mcp_client() {
    let user = new_user();
    let ws = new_workspace(Via::Postgres, &user).await;
    ws.fs().mkdir("/team", true).await.unwrap();
    ws.fs().mkdir("/other", true).await.unwrap();
    ws.fs().write("/team/a.md", "team\n").await.unwrap();
    ws.fs().write("/other/b.md", "other\n").await.unwrap();
    ws.commit(CommitOptions::new("host")).await.unwrap();
    let mount = format!("/s={}", ws.id());
    // A writable mount served with --read-only: no tool that changes anything, and only the
    // view root is visible.
    let client = serve_stdio(
        &user,
        &[
            "--mount",
            &mount,
            "--view-root",
            "/s=/team",
            "--read-only",
            "--commit-on-exit",
        ],
    )
    .await;
    let tools = client.list_all_tools().await.unwrap();
    for t in &tools {
        let read_only = t.annotations.as_ref().and_then(|a| a.read_only_hint);
        assert_eq!(read_only, Some(true), "{} is served read-only", t.name);
    }
    let names = tool_names(&tools);
    assert!(!names.contains(&"bash".to_owned()) && !names.contains(&"write_file".to_owned()));
    let r = call(&client, "list_directory", json!({ "path": "/s" })).await;
    assert!(
        text(&r).contains("a.md") && !text(&r).contains("b.md"),
        "{}",
        text(&r)
    );
    let r = call(&client, "read_file", json!({ "path": "/s/a.md" })).await;
    assert!(text(&r).contains("team"), "{}", text(&r));
    let r = call(&client, "read_file", json!({ "path": "/s/other/b.md" })).await;
    assert_eq!(
        r.is_error,
        Some(true),
        "outside the view root: {}",
        text(&r)
    );
    let r = call(
        &client,
        "write_file",
        json!({ "path": "/s/new.md", "content": "x" }),
    )
    .await;
    assert_eq!(r.is_error, Some(true));
    assert!(
        text(&r).contains("no tool named \"write_file\""),
        "{}",
        text(&r)
    );
    client.cancel().await.unwrap();
    // Nothing was staged, so nothing was committed at exit.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let again = reopen(Via::Postgres, &user, ws.id()).await;
    assert_eq!(again.base_revision(), ws.base_revision());
    assert!(again.fs().read("/team/new.md").await.is_err());
}

#[tokio::test]
async fn serves_a_delegated_workspace_from_a_capability_file() {
    use supabash::capability::PostgresSigner;
    use supabash_core::capability::{Operation, OperationSet};
    let user = new_user();
    let ws = new_workspace(Via::Postgres, &user).await;
    ws.fs().write("/brief.md", "for the job\n").await.unwrap();
    ws.commit(CommitOptions::new("host")).await.unwrap();
    let kid = format!("mcp-{user}");
    let (iss, aud, origin) = ("https://issuer.mcp", "supabash", "https://project.mcp");
    let key = supabash_tests::capability::register(cluster(), &kid, iss, aud, origin);
    let signer = PostgresSigner::new(&kid, &key, iss, aud, origin).unwrap();
    let read = OperationSet::new([Operation::Read]).unwrap();
    let token = signer.mint("job-mcp", ws.id(), &read, 300, None).unwrap();
    let path = std::env::temp_dir().join(format!("supabash-cap-{user}"));
    std::fs::write(&path, &token).unwrap();

    // The operations must be exactly the granted ones: refused before the exchange.
    let e = refused(
        &user,
        &[
            "--capability-file",
            path.to_str().unwrap(),
            "--operations",
            "read,write",
        ],
    );
    assert!(
        e.contains("INVALID_CAPABILITY") || e.contains("not valid"),
        "{e}"
    );
    let client = serve_stdio(
        &user,
        &[
            "--capability-file",
            path.to_str().unwrap(),
            "--operations",
            "read",
        ],
    )
    .await;
    let tools = client.list_all_tools().await.unwrap();
    assert!(
        !tool_names(&tools).contains(&"write_file".to_owned()),
        "a read grant serves read-only tools"
    );
    let r = call(&client, "read_file", json!({ "path": "/brief.md" })).await;
    assert!(text(&r).contains("for the job"), "{}", text(&r));
    client.cancel().await.unwrap();
    // The token was spent by that exchange: serving it again is refused.
    let e = refused(
        &user,
        &[
            "--capability-file",
            path.to_str().unwrap(),
            "--operations",
            "read",
        ],
    );
    assert!(
        e.contains("INVALID_CAPABILITY") || e.contains("not valid"),
        "{e}"
    );
    let _ = std::fs::remove_file(&path);
}

//! `supabash ui` in a real browser: the built binary serves a seeded workspace on a real
//! PostgreSQL with the extension, and headless Chromium (Debian's `chromium` and
//! `chromium-driver`) drives the page over WebDriver: the workspaces, the timeline, a diff, an
//! audit record followed to its revision, search, a commit from another connection appearing
//! without a reload, hostile names and contents that run no script, and every route refused
//! without the token. Screenshots of the views go to `$SUPABASH_UI_SCREENSHOTS` (docs/ui/
//! holds the committed ones), else to the target directory.

mod ui_support;
// The numbers (`SUPABASH_UI_BENCH=1`) and the diff views, in files of their own.
#[path = "ui_browser/bench.rs"]
mod bench;
#[path = "ui_browser/diffs.rs"]
mod diffs;

use fantoccini::{Client, Locator};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;
use supabash::audit::{Action, ActionKind};
use supabash::transport::call;
use supabash::workspace::{CommitOptions, PurgeOptions, RedactOptions};
use supabash::Workspace;
use supabash_core::rpc::requests::CreateWorkspace;
use supabash_tests::client::{cluster, new_user, reopen, transport, workspace_with, Via};
use ui_support::{
    browser, click_link, find, screenshot, start_ui, start_ui_on, wait_text, Killed, Proxy,
};

fn action(tool: &str, args: Value, paths: &[&str], bytes: u64) -> Action {
    Action::new(ActionKind::FileTool, tool)
        .with_arguments(args)
        .with_duration(Duration::from_millis(12))
        .with_paths(paths.iter().map(|p| p.to_string()).collect())
        .with_bytes_changed(bytes)
}

fn by(actor: &str, cause: &str) -> CommitOptions {
    let mut o = CommitOptions::new(actor);
    o.cause = Some(cause.into());
    o
}

/// A workspace with a label, four commits, audit records on the second, a rename, a mode
/// change, a link and an image.
async fn seeded(user: &str) -> Workspace {
    let label = CreateWorkspace {
        label: Some("demo project".into()),
        files_only: None,
    };
    let t = transport(Via::Postgres, user).await;
    let created = call(t.as_ref(), &label).await.unwrap();
    let ws = reopen(Via::Postgres, user, &created.workspace_id).await;
    let fs = ws.fs();
    fs.mkdir("/src", true).await.unwrap();
    fs.write("/README.md", "# demo\n\nA small project.\n")
        .await
        .unwrap();
    fs.write("/src/main.rs", "fn main() {}\n").await.unwrap();
    fs.write("/run.sh", "#!/bin/sh\necho run\n").await.unwrap();
    ws.commit(by("alice", "seed the project")).await.unwrap();
    ws.record(action(
        "edit",
        json!({"path": "/src/main.rs", "old": "{}", "new": "{ hi }"}),
        &["/src/main.rs"],
        44,
    ));
    ws.record(action(
        "write",
        json!({"path": "/notes/todo.md"}),
        &["/notes/todo.md"],
        30,
    ));
    fs.write("/src/main.rs", "fn main() {\n    println!(\"hi\");\n}\n")
        .await
        .unwrap();
    fs.mkdir("/notes", true).await.unwrap();
    fs.write("/notes/todo.md", "- find the needle in here\n")
        .await
        .unwrap();
    ws.commit(by("agent-7", "add a greeting")).await.unwrap();
    fs.mkdir("/docs", true).await.unwrap();
    fs.mv("/README.md", "/docs/README.md").await.unwrap();
    fs.chmod("/run.sh", 0o755).await.unwrap();
    fs.symlink("docs/README.md", "/README").await.unwrap();
    // A 1x1 GIF (no checksums to get wrong).
    let gif: &[u8] = b"GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff\x21\xf9\x04\x01\x00\x00\x00\x00\x2c\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x01\x44\x00\x3b";
    fs.write("/logo.gif", gif.to_vec()).await.unwrap();
    ws.commit(by("agent-7", "tidy the layout")).await.unwrap();
    ws
}

#[tokio::test]
async fn the_viewer_walks_history_diffs_audit_search_and_live_updates() {
    let user = new_user();
    let ws = seeded(&user).await;
    let (_ui, url) = start_ui(&user);
    let (_driver, c) = browser().await;
    c.goto(&url).await.unwrap();
    // Workspaces: the label links to the timeline.
    wait_text(&c, "#workspaces", "demo project").await;
    screenshot(&c, "workspaces").await;
    click_link(&c, "#workspaces a", "demo project").await;
    // Timeline: three revisions, their actors and causes.
    wait_text(&c, "table.timeline", "tidy the layout").await;
    wait_text(&c, "#live", "live").await;
    let rows = c
        .find_all(Locator::Css("table.timeline tbody tr"))
        .await
        .unwrap();
    assert_eq!(rows.len(), 3);
    screenshot(&c, "timeline").await;
    // A revision with its diff and the audit records that produced it.
    click_link(&c, "table.timeline a", "#2").await;
    wait_text(&c, "#revision", "add a greeting").await;
    wait_text(
        &c,
        "section.file-diff[data-path='/src/main.rs'] pre.diff",
        "+    println!(\"hi\");",
    )
    .await;
    wait_text(&c, "table.audit", "edit").await;
    screenshot(&c, "revision").await;
    // From the record to the audit trail, and from the trail back to the revision.
    click_link(&c, "table.audit a", "in the trail").await;
    wait_text(&c, "#audit tr.marked", "edit").await;
    screenshot(&c, "audit").await;
    click_link(&c, "#audit tr.marked a", "revision").await;
    wait_text(&c, "#revision h1", "Revision #2").await;
    // The third revision: a rename, a mode change, a link, an image.
    click_link(&c, "nav.tabs a", "Timeline").await;
    click_link(&c, "table.timeline a", "#3").await;
    let third = wait_text(&c, "#revision", "tidy the layout").await;
    let text = third.text().await.unwrap();
    assert!(text.contains("rename from README.md"), "{text}");
    assert!(
        text.contains("old mode 100644") && text.contains("new mode 100755"),
        "{text}"
    );
    assert!(
        text.contains("+docs/README.md"),
        "the link's target: {text}"
    );
    assert!(text.contains("Binary files"), "{text}");
    screenshot(&c, "revision-rename").await;
    // Files: the tree at the head, a directory, a file, an image.
    click_link(&c, "nav.tabs a", "Files").await;
    click_link(&c, "table.listing a", "docs/").await;
    click_link(&c, "table.listing a", "README.md").await;
    wait_text(&c, "#file pre.text", "A small project.").await;
    screenshot(&c, "file").await;
    click_link(&c, "nav.tabs a", "Files").await;
    click_link(&c, "table.listing a", "logo.gif").await;
    let img = find(&c, "#file img.shown").await;
    let natural = c
        .execute("return arguments[0].naturalWidth", vec![json!(img)])
        .await
        .unwrap();
    assert_eq!(natural, json!(1), "the GIF was served as an image");
    // Search, linked to the file.
    click_link(&c, "nav.tabs a", "Search").await;
    find(&c, "#q").await.send_keys("needle").await.unwrap();
    find(&c, "#go").await.click().await.unwrap();
    wait_text(&c, "#results", "find the needle in here").await;
    screenshot(&c, "search").await;
    click_link(&c, "#results h3 a", "/notes/todo.md").await;
    wait_text(&c, "#file pre.text", "needle").await;
    // A path's history, and one version against the one before it.
    let base = url.split('?').next().unwrap();
    c.goto(&format!(
        "{base}#history?ws={}&path=%2Fsrc%2Fmain.rs",
        ws.id()
    ))
    .await
    .unwrap();
    click_link(&c, "#history a", "diff").await;
    wait_text(&c, "#pathdiff pre.diff", "+    println!(\"hi\");").await;
    screenshot(&c, "path-diff").await;
    // Live: a commit from another connection appears on the timeline without a reload.
    click_link(&c, "nav.tabs a", "Timeline").await;
    wait_text(&c, "table.timeline", "tidy the layout").await;
    wait_text(&c, "#live", "live").await;
    c.execute("window.notReloaded = true", vec![])
        .await
        .unwrap();
    let other = reopen(Via::Postgres, &user, ws.id()).await;
    other
        .fs()
        .write("/late.txt", "arrived live\n")
        .await
        .unwrap();
    other
        .commit(by("bob", "a commit from elsewhere"))
        .await
        .unwrap();
    wait_text(&c, "table.timeline", "a commit from elsewhere").await;
    wait_text(&c, "#head", "#4").await;
    let same_page = c
        .execute("return window.notReloaded === true", vec![])
        .await
        .unwrap();
    assert_eq!(same_page, json!(true), "the page was not reloaded");
    screenshot(&c, "timeline-live").await;
    c.close().await.unwrap();
}

/// Names agents could write (the server refuses a bidi override in a path: it goes in the
/// contents and the cause instead).
const HOSTILE_NAMES: [&str; 3] = [
    "/\"><img src=x onerror=\"document.title='pwned';window.pwned=1\">.md",
    "/<script>window.pwned=1<",
    "/javascript:alert(1)",
];

/// A JavaScript file whose strings, comments and code carry markup.
const HOSTILE_JS: &str =
    "const a = \"<script>window.pwned=1</script>\"; // <img src=x onerror=\"window.pwned=1\">\n\
/* </span><img src=x onerror=window.pwned=1> */ let b = '<b onmouseover=alert(1)>';\n\
`${window.pwned=1}` <script>alert(1)</script>\n";

#[tokio::test]
async fn hostile_names_and_contents_run_no_script_and_show_as_text() {
    let user = new_user();
    let files: Vec<(&str, &str)> = HOSTILE_NAMES
        .iter()
        .map(|n| {
            (
                *n,
                "<script>window.pwned=1</script><img src=x onerror=\"window.pwned=1\">\nevil\u{202E}gpj.exe\n",
            )
        })
        .collect();
    let ws = workspace_with(Via::Postgres, &user, &files).await;
    ws.fs()
        .write(
            "/x.svg",
            "<svg xmlns='http://www.w3.org/2000/svg' onload='window.pwned=1'/>",
        )
        .await
        .unwrap();
    // Highlighted as JavaScript: the payloads land in strings, comments and plain text.
    ws.fs().write("/evil.js", HOSTILE_JS).await.unwrap();
    ws.commit(by(
        "<img src=x onerror=window.pwned=1>",
        "\"><script>window.pwned=1</script>",
    ))
    .await
    .unwrap();
    let (_ui, url) = start_ui(&user);
    let (_driver, c) = browser().await;
    let base = url.split('?').next().unwrap().to_owned();
    c.goto(&url).await.unwrap();
    find(&c, "#workspaces").await;
    let clean = |c: Client| async move {
        let seen = c
            .execute(
                "return [document.title, window.pwned === undefined, \
                 document.querySelectorAll('main img:not(.shown), main script').length]",
                vec![],
            )
            .await
            .unwrap();
        assert_eq!(
            seen,
            json!(["supabash", true, 0]),
            "a script ran or markup was parsed"
        );
    };
    let ws_q = format!("ws={}", ws.id());
    c.goto(&format!("{base}#ws?{ws_q}")).await.unwrap();
    wait_text(&c, "table.timeline", "<script>window.pwned=1</script>").await;
    clean(c.clone()).await;
    c.goto(&format!("{base}#tree?{ws_q}")).await.unwrap();
    let listing = wait_text(&c, "table.listing", "javascript:alert(1)").await;
    let text = listing.text().await.unwrap();
    assert!(text.contains("\"><img src=x onerror="), "{text}");
    for a in c.find_all(Locator::Css("main a")).await.unwrap() {
        let href = a.attr("href").await.unwrap().unwrap_or_default();
        assert!(href.starts_with('#') || href.starts_with("/api/"), "{href}");
    }
    screenshot(&c, "hostile").await;
    clean(c.clone()).await;
    click_link(&c, "table.listing a", "javascript:alert(1)").await;
    let body = wait_text(&c, "#file pre.text", "<script>window.pwned=1</script>").await;
    let body = body.text().await.unwrap();
    assert!(
        body.contains("evil<U+202E>gpj.exe"),
        "the override is shown, not applied: {body}"
    );
    clean(c.clone()).await;
    c.goto(&format!("{base}#file?{ws_q}&path=%2Fx.svg"))
        .await
        .unwrap();
    wait_text(&c, "#file pre.text", "onload").await;
    clean(c.clone()).await;
    c.goto(&format!("{base}#file?{ws_q}&path=%2Fevil.js"))
        .await
        .unwrap();
    let js = wait_text(&c, "#file pre.text", "onerror").await;
    assert_eq!(js.text().await.unwrap(), HOSTILE_JS.trim_end());
    find(&c, "#file pre.text span.tok-str").await;
    clean(c.clone()).await;
    click_link(&c, "nav.tabs a", "Timeline").await;
    click_link(&c, "table.timeline a", "#1").await;
    wait_text(&c, "#revision", "+<script>window.pwned=1</script>").await;
    clean(c.clone()).await;
    // Side by side, the same: text only.
    click_link(&c, "nav.tabs a", "Timeline").await;
    click_link(&c, "table.timeline a", "#2").await;
    find(&c, "button[data-layout='split']")
        .await
        .click()
        .await
        .unwrap();
    wait_text(
        &c,
        "section.file-diff[data-path='/evil.js'] .diff.split",
        "onerror",
    )
    .await;
    clean(c.clone()).await;
    c.close().await.unwrap();
}

#[tokio::test]
async fn every_route_is_refused_without_the_token_and_answers_carry_the_policy() {
    let user = new_user();
    let ws = workspace_with(Via::Postgres, &user, &[("/a.md", "a\n")]).await;
    ws.fs()
        .write("/x.svg", "<svg onload='alert(1)'/>")
        .await
        .unwrap();
    ws.commit(by("alice", "an svg")).await.unwrap();
    let (_ui, url) = start_ui(&user);
    let base = url.split("/?").next().unwrap().to_owned();
    let token = url.split("token=").nth(1).unwrap().to_owned();
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let id = ws.id();
    let routes = [
        "/".to_owned(),
        "/assets/app.js".to_owned(),
        "/api/workspaces".to_owned(),
        format!("/api/ws/{id}"),
        format!("/api/ws/{id}/timeline"),
        format!("/api/ws/{id}/revision?rev=x"),
        format!("/api/ws/{id}/tree"),
        format!("/api/ws/{id}/file?path=/a.md"),
        format!("/api/ws/{id}/raw?path=/a.md"),
        format!("/api/ws/{id}/history?path=/a.md"),
        format!("/api/ws/{id}/search?q=a"),
        format!("/api/ws/{id}/audit"),
        format!("/api/ws/{id}/events"),
        "/nowhere".to_owned(),
    ];
    for r in &routes {
        let res = http.get(format!("{base}{r}")).send().await.unwrap();
        assert_eq!(res.status(), 401, "{r} without the token");
        assert_eq!(res.headers()["x-content-type-options"], "nosniff");
        let sep = if r.contains('?') { '&' } else { '?' };
        let res = http
            .get(format!("{base}{r}{sep}token=0123"))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 403, "{r} with a wrong token");
        let res = http
            .get(format!("{base}{r}"))
            .header(
                "cookie",
                format!("supabash_ui_{}=forged", base.rsplit(':').next().unwrap()),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 403, "{r} with a forged cookie");
    }
    // The token is exchanged once for an HttpOnly, SameSite=Strict cookie.
    let res = http
        .get(format!("{base}/?token={token}"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 303);
    let cookie = res.headers()["set-cookie"].to_str().unwrap().to_owned();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let session = cookie.split(';').next().unwrap().to_owned();
    let again = http
        .get(format!("{base}/?token={token}"))
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 403, "the token works once");
    let get = |path: String| {
        http.get(format!("{base}{path}"))
            .header("cookie", session.clone())
            .send()
    };
    let page = get("/".into()).await.unwrap();
    assert_eq!(page.status(), 200);
    let csp = page.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        csp.contains("default-src 'none'") && csp.contains("script-src 'self'"),
        "{csp}"
    );
    assert!(
        !page.text().await.unwrap().contains("<script>"),
        "no inline script"
    );
    let svg = get(format!("/api/ws/{id}/raw?path=/x.svg")).await.unwrap();
    assert_eq!(svg.headers()["content-type"], "application/octet-stream");
    assert_eq!(svg.headers()["content-disposition"], "attachment");
    let list = get("/api/workspaces".into())
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let list: Value = serde_json::from_str(&list).unwrap();
    assert_eq!(list["workspaces"].as_array().unwrap().len(), 1, "{list}");
    // Another user's workspace is not this identity's to read.
    let stranger = workspace_with(Via::Postgres, &new_user(), &[("/s.md", "secret")]).await;
    let refused = get(format!("/api/ws/{}/file?path=/s.md", stranger.id()))
        .await
        .unwrap();
    assert!(
        matches!(refused.status().as_u16(), 403 | 404),
        "{}",
        refused.status()
    );
    let unknown = get(format!("/api/ws/{}", uuid::Uuid::new_v4()))
        .await
        .unwrap();
    assert_eq!(unknown.status(), 404);
}

// Multi-threaded: the proxy must answer while `start_ui_on` waits for the address.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_gets_a_clear_page_and_a_lost_database_recovers() {
    let user = new_user();
    let ws = workspace_with(
        Via::Postgres,
        &user,
        &[("/a.md", "one\n"), ("/secret.env", "TOKEN=abc\n")],
    )
    .await;
    let first = ws.base_revision().unwrap();
    ws.fs().write("/a.md", "two\n").await.unwrap();
    ws.commit(by("alice", "edit a.md")).await.unwrap();
    let second = ws.base_revision().unwrap();
    ws.fs().write("/a.md", "three\n").await.unwrap();
    ws.fs().rm("/secret.env", false, false).await.unwrap();
    ws.commit(by("alice", "drop the secret")).await.unwrap();
    ws.redact(RedactOptions::new().path("/secret.env").apply())
        .await
        .unwrap();
    let mut keep_two = PurgeOptions::default();
    keep_two.keep_revisions = Some(2);
    ws.purge(keep_two).await.unwrap();
    let dsn = cluster().dsn("authenticator");
    let port: u16 = dsn
        .split_whitespace()
        .find_map(|kv| kv.strip_prefix("port="))
        .unwrap()
        .parse()
        .unwrap();
    let proxy = Proxy::start(port).await;
    let (_ui, url) = start_ui_on(
        &user,
        &dsn.replace(&format!("port={port}"), &format!("port={}", proxy.port)),
    );
    let (_driver, c) = browser().await;
    let base = url.split('?').next().unwrap().to_owned();
    c.goto(&url).await.unwrap();
    find(&c, "#workspaces").await;
    let id = ws.id();
    c.goto(&format!("{base}#ws?ws={}", uuid::Uuid::new_v4()))
        .await
        .unwrap();
    wait_text(&c, ".error h2", "Not found").await;
    c.goto(&format!("{base}#rev?ws={id}&rev={first}"))
        .await
        .unwrap();
    wait_text(&c, ".error h2", "purge removed it").await;
    c.goto(&format!(
        "{base}#file?ws={id}&path=%2Fsecret.env&rev={second}"
    ))
    .await
    .unwrap();
    wait_text(&c, "#file", "Redacted").await;
    screenshot(&c, "redacted").await;
    // The database goes away: the page says so; when it is back, "Try again" recovers.
    proxy.set_down(true);
    c.goto(&format!("{base}#tree?ws={id}")).await.unwrap();
    wait_text(&c, ".error h2", "Lost the connection to the database").await;
    wait_text(&c, "#banner", "ost").await;
    screenshot(&c, "lost-connection").await;
    proxy.set_down(false);
    find(&c, ".error button").await.click().await.unwrap();
    wait_text(&c, "table.listing", "a.md").await;
    c.close().await.unwrap();
}

/// The viewer over PostgREST with the user's token reads as that user: their workspace's
/// timeline, nobody else's workspaces.
#[tokio::test]
async fn over_postgrest_the_viewer_reads_as_the_token_user() {
    let user = new_user();
    let ws = workspace_with(Via::Postgres, &user, &[("/a.md", "a\n")]).await;
    let other = workspace_with(Via::Postgres, &new_user(), &[("/b.md", "b\n")]).await;
    let claims = supabash_tests::client::user_claims(&user);
    let mut child = Command::new(env!("CARGO_BIN_EXE_supabash"))
        .arg("ui")
        .env_remove("SUPABASH_DSN")
        .env_remove("SUPABASH_WORKSPACE")
        .env("SUPABASH_URL", supabash_tests::client::postrust_url())
        .env("SUPABASH_TOKEN", supabash_tests::client::sign(&claims))
        .env("SUPABASH_APIKEY", "test-publishable-key")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut url = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut url)
        .unwrap();
    let _ui = Killed(child);
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let res = http.get(url.trim()).send().await.unwrap();
    assert_eq!(res.status(), 303, "{url}");
    let session = res.headers()["set-cookie"].to_str().unwrap();
    let session = session.split(';').next().unwrap().to_owned();
    let base = url.trim().split("/?").next().unwrap().to_owned();
    let get = |path: String| {
        let (http, session, base) = (http.clone(), session.clone(), base.clone());
        async move {
            let res = http
                .get(format!("{base}{path}"))
                .header("cookie", session)
                .send()
                .await
                .unwrap();
            let status = res.status().as_u16();
            let body: Value = serde_json::from_str(&res.text().await.unwrap()).unwrap();
            (status, body)
        }
    };
    let (status, list) = get("/api/workspaces".into()).await;
    assert_eq!(status, 200, "{list}");
    let ids: Vec<&str> = list["workspaces"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w["workspaceId"].as_str())
        .collect();
    assert_eq!(ids, [ws.id()], "{list}");
    let (status, timeline) = get(format!("/api/ws/{}/timeline", ws.id())).await;
    assert_eq!(status, 200, "{timeline}");
    assert_eq!(timeline["records"][0]["actor"], "seed", "{timeline}");
    let (status, refused) = get(format!("/api/ws/{}/file?path=/b.md", other.id())).await;
    assert!(matches!(status, 403 | 404), "{status} {refused}");
}

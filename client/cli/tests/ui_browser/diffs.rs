//! The diff views in the browser: a text diff of over 1 MiB drawn whole (read after the rest of
//! the revision, streamed in slices), the side-by-side layout, syntax highlighting in files and
//! diffs, and a path's diff between any two of its versions.

use super::by;
use super::ui_support::{browser, find, screenshot, start_ui, wait_text};
use fantoccini::{Client, Locator};
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use supabash::Workspace;
use supabash_tests::client::{new_user, reopen, Via};

/// Lines of the big file: 16,384 of 64 bytes, 1 MiB.
pub const BIG_LINES: usize = 16_384;

/// The big file: every line numbered; with `edited`, every fourth line changed (a diff of
/// 4,096 lines out, 4,096 in and the rest as context: over 1.5 MiB of diff text).
pub fn big_text(edited: bool) -> String {
    let mut out = String::with_capacity(BIG_LINES * 64);
    for i in 0..BIG_LINES {
        let word = if edited && i % 4 == 0 {
            "changed"
        } else {
            "written"
        };
        let line = format!("{i:05} {word} ");
        out.push_str(&line);
        out.push_str(&"x".repeat(63 - line.len()));
        out.push('\n');
    }
    assert_eq!(out.len(), 1 << 20);
    out
}

/// A workspace whose third revision edits the big file and `/src/lib.rs` (three versions).
pub async fn with_big_diff(user: &str) -> (Workspace, Vec<String>) {
    let ws = supabash_tests::client::new_workspace(Via::Postgres, user).await;
    let ws = reopen(Via::Postgres, user, ws.id()).await;
    let fs = ws.fs();
    fs.mkdir("/src", true).await.unwrap();
    let mut revisions = Vec::new();
    let versions = [
        "fn one() -> u32 { 1 } // first\n",
        "fn one() -> u32 { 1 }\nfn two() -> &'static str { \"two\" }\n",
        "fn three() {}\n",
    ];
    for (i, lib) in versions.iter().enumerate() {
        fs.write("/src/lib.rs", *lib).await.unwrap();
        if i != 1 {
            fs.write("/big.txt", big_text(i == 2)).await.unwrap();
        }
        ws.commit(by("agent", &format!("version {}", i + 1)))
            .await
            .unwrap();
        revisions.push(ws.base_revision().unwrap());
    }
    (ws, revisions)
}

/// Waits until the diff of `path` on the page is drawn whole; answers the page's count of its
/// lines added, deleted and kept, and the bytes of its text.
pub async fn drawn(c: &Client, path: &str) -> Value {
    let script = format!(
        "const box = document.querySelector('section.file-diff[data-path=\"{path}\"] .diff[data-complete]');
         if (!box) return null;
         const n = (sel) => box.querySelectorAll(sel).length;
         return {{ add: n('div.add, .cell.add'), del: n('div.del, .cell.del'), bytes: box.textContent.length,
                  last: box.lastElementChild.lastElementChild.textContent }};"
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let v = c.execute(&script, vec![]).await.unwrap();
        if !v.is_null() {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "the diff of {path} was never drawn whole"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_large_diff_side_by_side_highlighting_and_any_two_versions() {
    let user = new_user();
    let (ws, revs) = with_big_diff(&user).await;
    let (_ui, url) = start_ui(&user);
    let (_driver, c) = browser().await;
    let base = url.split('?').next().unwrap().to_owned();
    c.goto(&url).await.unwrap();
    find(&c, "#workspaces").await;
    let id = ws.id();
    // The large diff: read after the rest of the revision, drawn whole, nothing cut.
    c.goto(&format!("{base}#rev?ws={id}&rev={}", revs[2]))
        .await
        .unwrap();
    wait_text(&c, "section.file-diff[data-path='/src/lib.rs']", "fn three").await;
    let big = drawn(&c, "/big.txt").await;
    // Every fourth line changed: 4,096 out and 4,096 in (more if the server's differ ran out
    // of time and answered a larger diff), as many in as out; over 1 MiB of text drawn.
    let (add, del) = (big["add"].as_u64().unwrap(), big["del"].as_u64().unwrap());
    assert!(add >= (BIG_LINES / 4) as u64 && add == del, "{big}");
    assert!(big["bytes"].as_u64().unwrap() > 1 << 20, "{big}");
    // The last line drawn is the file's last (after its mark: a space, or + when larger).
    let last = big["last"].as_str().unwrap();
    assert!(
        last[1..].starts_with(&format!("{:05} written", BIG_LINES - 1)),
        "{big}"
    );
    let section = find(&c, "section.file-diff[data-path='/big.txt'] h3").await;
    assert!(!section.text().await.unwrap().contains("cut"));
    // Highlighting: Rust keywords and strings in the diff, as spans of text.
    let kw = find(
        &c,
        "section.file-diff[data-path='/src/lib.rs'] pre.diff span.tok-kw",
    )
    .await;
    assert_eq!(kw.text().await.unwrap(), "fn");
    // Side by side: the line taken out beside the one put in, the rest beside nothing.
    find(&c, "button[data-layout='split']")
        .await
        .click()
        .await
        .unwrap();
    let lib = "section.file-diff[data-path='/src/lib.rs'] .diff.split[data-complete]";
    find(&c, lib).await;
    let pairs = c
        .execute(
            &format!(
                "return [...document.querySelectorAll(\"{lib} .row\")]
                   .filter((r) => r.querySelector('.cell.del, .cell.add'))
                   .map((r) => [...r.querySelectorAll('.cell')].map((x) => x.className.replace('cell ', '') + ':' + x.textContent))"
            ),
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(
        pairs,
        json!([
            ["del:fn one() -> u32 { 1 }", "add:fn three() {}"],
            ["del:fn two() -> &'static str { \"two\" }", "empty:"]
        ]),
        "{pairs}"
    );
    let split = drawn(&c, "/big.txt").await;
    assert_eq!(split["add"], big["add"], "{split}");
    screenshot(&c, "revision-split").await;
    // The layout is remembered: a reload draws side by side again.
    c.refresh().await.unwrap();
    find(&c, lib).await;
    find(&c, "button[data-layout='unified']")
        .await
        .click()
        .await
        .unwrap();
    find(
        &c,
        "section.file-diff[data-path='/src/lib.rs'] pre.diff[data-complete]",
    )
    .await;
    // A file highlighted: keywords and strings as spans, the text unchanged.
    c.goto(&format!(
        "{base}#file?ws={id}&rev={}&path=%2Fsrc%2Flib.rs",
        revs[1]
    ))
    .await
    .unwrap();
    let text = wait_text(&c, "#file pre.text", "fn two()").await;
    assert_eq!(
        text.text().await.unwrap(),
        "fn one() -> u32 { 1 }\nfn two() -> &'static str { \"two\" }"
    );
    let strings = c
        .find_all(Locator::Css("#file pre.text span.tok-str"))
        .await
        .unwrap();
    assert_eq!(strings.len(), 1);
    assert_eq!(strings[0].text().await.unwrap(), "\"two\"");
    screenshot(&c, "file-highlighted").await;
    // Any two versions: the first against the third, without the second's line.
    c.goto(&format!("{base}#history?ws={id}&path=%2Fsrc%2Flib.rs"))
        .await
        .unwrap();
    find(&c, "#history tbody tr:last-child input[name='from']")
        .await
        .click()
        .await
        .unwrap();
    find(&c, "#history tbody tr:first-child input[name='to']")
        .await
        .click()
        .await
        .unwrap();
    screenshot(&c, "history").await;
    find(&c, "#compare").await.click().await.unwrap();
    let diff = wait_text(&c, "#pathdiff .diff", "fn three() {}").await;
    let diff = diff.text().await.unwrap();
    assert!(diff.contains("-fn one() -> u32 { 1 } // first"), "{diff}");
    assert!(diff.contains("+fn three() {}"), "{diff}");
    assert!(
        !diff.contains("fn two"),
        "the first against the third: {diff}"
    );
    screenshot(&c, "path-diff-any").await;
    c.close().await.unwrap();
}

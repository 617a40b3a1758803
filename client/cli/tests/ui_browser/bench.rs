//! The viewer's numbers in headless Chromium (bench/ANALYSIS.md, "The web viewer in a
//! headless browser"), with `SUPABASH_UI_BENCH=1` only: the first render of a large
//! workspace's timeline and root, opening a directory of 1,000 entries, and a 1 MiB text diff.

use super::by;
use super::ui_support::{browser, find, start_ui, start_ui_bin, wait_text};
use fantoccini::Client;
use std::time::{Duration, Instant};
use supabash_tests::client::{new_user, reopen, Via};

/// The median of `runs` measurements.
fn median(mut runs: Vec<u64>) -> u64 {
    runs.sort_unstable();
    runs[runs.len() / 2]
}

/// Waits for the view to finish and answers its `data-rendered-at` or `data-rendered`.
async fn rendered(c: &Client, css: &str, key: &str) -> u64 {
    find(c, css).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let v = c
            .execute(
                &format!(
                    "return document.querySelector('main[aria-busy]') ? null : document.body.dataset.{key}"
                ),
                vec![],
            )
            .await
            .unwrap();
        if let Some(ms) = v.as_str().and_then(|s| s.parse().ok()) {
            return ms;
        }
        assert!(Instant::now() < deadline, "{css} never finished");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Where the page's time went since navigation: each request's start and end (ms), the
/// document's first, then the view drawn.
async fn requests(c: &Client) -> String {
    let v = c
        .execute(
            "const r = (x) => Math.round(x);
             const nav = performance.getEntriesByType('navigation')[0];
             const out = [['page', r(nav.requestStart), r(nav.responseEnd)]];
             for (const e of performance.getEntriesByType('resource')) {
               out.push([e.name.replace(location.origin, '').replace(/[?].*/, '').replace(/[0-9a-f-]{36}/, 'ID'),
                         r(e.startTime), r(e.responseEnd)]);
             }
             out.push(['drawn', null, Number(document.body.dataset.renderedAt)]);
             return out.map(([n, a, b]) => n + ' ' + a + '-' + b).join(', ');",
            vec![],
        )
        .await
        .unwrap();
    v.as_str().unwrap_or_default().to_owned()
}

/// One round on the viewer at `base` (ms): the timeline's and the root's first render after
/// the page is requested, and opening the 1,000-entry `/big`.
async fn first_renders(c: &Client, base: &str, id: &str) -> [u64; 3] {
    c.goto("about:blank").await.unwrap();
    c.goto(&format!("{base}#ws?ws={id}")).await.unwrap();
    let timeline = rendered(c, "table.timeline", "renderedAt").await;
    eprintln!("ui bench: timeline requests {}", requests(c).await);
    c.goto("about:blank").await.unwrap();
    c.goto(&format!("{base}#tree?ws={id}")).await.unwrap();
    let root = rendered(c, "table.listing", "renderedAt").await;
    c.execute(
        &format!("location.hash = '#tree?ws={id}&path=%2Fbig'"),
        vec![],
    )
    .await
    .unwrap();
    wait_text(c, "table.listing", "file-0999.txt").await;
    [
        timeline,
        root,
        rendered(c, "table.listing", "rendered").await,
    ]
}

/// With `SUPABASH_UI_BENCH=1` (else it returns at once): in headless Chromium, the first render
/// of a 10,000-file workspace's timeline (100 revisions) and root after the page is requested,
/// and opening a directory of 1,000 entries (bench/ANALYSIS.md). `SUPABASH_UI_BENCH_BASE=BIN`
/// measures the `supabash` at BIN too, in turn with this build's, round by round.
#[tokio::test]
async fn bench_first_render_of_a_large_workspace() {
    if std::env::var_os("SUPABASH_UI_BENCH").is_none() {
        return;
    }
    let user = new_user();
    let ws = reopen(
        Via::Postgres,
        &user,
        supabash_tests::client::new_workspace(Via::Postgres, &user)
            .await
            .id(),
    )
    .await;
    let fs = ws.fs();
    for d in 0..10 {
        let dir = if d == 0 {
            "/big".to_owned()
        } else {
            format!("/d{d:02}")
        };
        fs.mkdir(&dir, true).await.unwrap();
        for f in 0..1000 {
            fs.write(&format!("{dir}/file-{f:04}.txt"), format!("{dir} {f}\n"))
                .await
                .unwrap();
        }
    }
    ws.commit(by("seed", "10,000 files")).await.unwrap();
    for i in 1..100 {
        fs.write("/big/file-0000.txt", format!("edit {i}\n"))
            .await
            .unwrap();
        ws.commit(by("agent", &format!("edit {i}"))).await.unwrap();
    }
    // This build's viewer, and with SUPABASH_UI_BENCH_BASE another build's `supabash` (an
    // older commit's, say) measured in turn with it, round by round, under the same load.
    let mut viewers = vec![("this build".to_owned(), start_ui(&user))];
    if let Ok(bin) = std::env::var("SUPABASH_UI_BENCH_BASE") {
        let dsn = supabash_tests::client::cluster().dsn("authenticator");
        viewers.push((bin.clone(), start_ui_bin(&bin, &user, &dsn)));
    }
    let (_driver, c) = browser().await;
    for (_, (_, url)) in &viewers {
        c.goto(url).await.unwrap();
        find(&c, "#workspaces").await;
    }
    let mut runs = vec![[Vec::new(), Vec::new(), Vec::new()]; viewers.len()];
    for _ in 0..5 {
        for (v, (_, (_, url))) in viewers.iter().enumerate() {
            let base = url.split('?').next().unwrap();
            let [t, r, d] = first_renders(&c, base, ws.id()).await;
            runs[v][0].push(t);
            runs[v][1].push(r);
            runs[v][2].push(d);
        }
    }
    for ((label, _), [timeline, root, dir]) in viewers.iter().zip(runs) {
        eprintln!(
            "ui bench ({label}): timeline first render {} ms, root first render {} ms, 1,000-entry directory {} ms (medians of 5: {timeline:?} {root:?} {dir:?})",
            median(timeline.clone()),
            median(root.clone()),
            median(dir.clone())
        );
    }
    c.close().await.unwrap();
}

/// One draw of the large diff (ms): the revision's first render and the large diff drawn
/// whole (both since the address changed), the longest task and the longest gap between timer
/// ticks while it drew, the time its `/compare` request took, and the drawing after it.
async fn draw_large_diff(c: &Client, id: &str, rev: &str, layout: &str) -> [u64; 6] {
    c.execute(
        &format!("localStorage.setItem('supabash.diffLayout', '{layout}'); location.hash = '#workspaces'"),
        vec![],
    )
    .await
    .unwrap();
    find(c, "#workspaces").await;
    c.execute(
        &format!(
            "window.benchLong = 0; window.benchGap = 0;
             if (!window.benchObserver) {{
               window.benchObserver = new PerformanceObserver((l) => {{
                 for (const e of l.getEntries()) window.benchLong = Math.max(window.benchLong, e.duration);
               }});
               window.benchObserver.observe({{ type: 'longtask' }});
             }}
             clearInterval(window.benchTick);
             let last = performance.now();
             window.benchTick = setInterval(() => {{
               const now = performance.now();
               window.benchGap = Math.max(window.benchGap, now - last);
               last = now;
             }}, 5);
             performance.clearResourceTimings();
             window.benchT0 = performance.now();
             location.hash = '#rev?ws={id}&rev={rev}';"
        ),
        vec![],
    )
    .await
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let v = c
            .execute(
                "const box = document.querySelector('section.file-diff[data-path=\"/big.txt\"] .diff[data-complete]');
                 if (!box) return null;
                 clearInterval(window.benchTick);
                 const asked = performance.getEntriesByType('resource').filter((e) => e.name.includes('/compare')).pop();
                 return [Number(document.body.dataset.renderedAt) - window.benchT0,
                         Number(box.dataset.doneAt) - window.benchT0, window.benchLong, window.benchGap,
                         asked.responseEnd - asked.startTime, Number(box.dataset.doneAt) - asked.responseEnd]
                   .map(Math.round);",
                vec![],
            )
            .await
            .unwrap();
        if let Some(a) = v.as_array() {
            let n = |i: usize| a[i].as_u64().unwrap_or(0);
            return [n(0), n(1), n(2), n(3), n(4), n(5)];
        }
        assert!(Instant::now() < deadline, "the large diff was never drawn");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// With `SUPABASH_UI_BENCH=1`: a revision whose diff of a 1 MiB text file (every fourth line
/// changed, 1.5 MiB of diff text) is drawn in headless Chromium, unified and side by side.
#[tokio::test]
async fn bench_a_large_diff() {
    if std::env::var_os("SUPABASH_UI_BENCH").is_none() {
        return;
    }
    let user = new_user();
    let (ws, revs) = super::diffs::with_big_diff(&user).await;
    let (_ui, url) = start_ui(&user);
    let (_driver, c) = browser().await;
    c.goto(&url).await.unwrap();
    find(&c, "#workspaces").await;
    for layout in ["unified", "split"] {
        let runs: Vec<[u64; 6]> = {
            let mut v = Vec::new();
            for _ in 0..5 {
                v.push(draw_large_diff(&c, ws.id(), &revs[2], layout).await);
            }
            v
        };
        let col = |i: usize| runs.iter().map(|r| r[i]).collect::<Vec<_>>();
        eprintln!(
            "ui bench: 1 MiB diff, {layout}: revision drawn {} ms, large diff drawn whole {} ms, \
             longest task {} ms, longest timer gap {} ms; its /compare answered in {} ms, drawn in {} ms \
             after (medians of 5: {runs:?})",
            median(col(0)),
            median(col(1)),
            median(col(2)),
            median(col(3)),
            median(col(4)),
            median(col(5)),
        );
    }
    c.close().await.unwrap();
}

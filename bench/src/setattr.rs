//! A commit that changes only the mode of one file of 10,000 (`setattr`, issue 24), side by
//! side with a one-file content commit in the same workspace: no body may be stored, and the
//! latency stays within 1.2× of the content commit's.

use crate::report::{ms, stats, Report};
use crate::{f2, text, upsert, Ws};
use serde_json::json;
use std::time::Instant;
use supabash_devcluster::Cluster;
use supabash_tests::SqlRpc;

const FILES: usize = 10_000;
const WARMUP: usize = 10;
const ROUNDS: usize = 200;

/// The bodies stored for workspace `id`.
fn bodies(cluster: &Cluster, id: &str) -> i64 {
    let out = cluster.psql(
        "app",
        &format!("SELECT count(*) FROM supabash.bodies WHERE workspace_id = '{id}'"),
    );
    out.trim().parse().expect("a count")
}

pub async fn mode_only_commit(cluster: &Cluster, rest: &mut SqlRpc, r: &mut Report) {
    let mut ws = Ws::create(rest).await;
    for start in (0..FILES).step_by(1000) {
        let files = (start..(start + 1000).min(FILES))
            .map(|i| upsert(&format!("/src/f{i:05}.md"), &text(i as u64, 512)))
            .collect();
        ws.commit(rest, files).await;
    }
    cluster.psql("app", "VACUUM ANALYZE");
    let (mut content, mut mode) = (Vec::new(), Vec::new());
    let (mut mode_bodies, mut content_bodies) = (0, 0);
    for round in 0..WARMUP + ROUNDS {
        let path = format!("/src/f{:05}.md", (round * 7) % FILES);
        let body = text(2_000_000 + round as u64, 512);
        let bits = if round % 2 == 0 { 0o755 } else { 0o644 };
        let setattr = json!({ "op": "setattr", "path": path, "mode": bits });
        // Alternate which of the two goes first.
        for k in [round % 2, 1 - round % 2] {
            let before = bodies(cluster, &ws.id);
            let t = Instant::now();
            if k == 0 {
                ws.commit(rest, vec![upsert(&path, &body)]).await;
            } else {
                ws.commit(rest, vec![setattr.clone()]).await;
            }
            let took = ms(t);
            let stored = bodies(cluster, &ws.id) - before;
            if round < WARMUP {
                continue;
            }
            if k == 0 {
                content.push(took);
                content_bodies += stored;
            } else {
                mode.push(took);
                mode_bodies += stored;
            }
        }
    }
    let (c, m) = (stats(&content), stats(&mode));
    let ratio = m.median / c.median;
    r.section("Mode-only commit (issue 24)");
    r.line(&format!(
        "One workspace of {FILES} files of 512 B. Each round commits, in alternating order, \
         a new 512 B text for one file (`upsert`) and a mode change of one file (`setattr`, \
         0o755 and 0o644 in turn), each one `supabash_commit` on the last head, timed around \
         the PostgREST-shaped transaction. {WARMUP} warm-up rounds are discarded. Bodies stored \
         are counted in `supabash.bodies` around each commit."
    ));
    r.table(&["commit", "N", "median ms", "p90 ms", "bodies stored"]);
    r.row(&[
        "one file's content".into(),
        c.n.to_string(),
        f2(c.median),
        f2(c.p90),
        content_bodies.to_string(),
    ]);
    r.row(&[
        "one file's mode".into(),
        m.n.to_string(),
        f2(m.median),
        f2(m.p90),
        mode_bodies.to_string(),
    ]);
    r.summary(
        "Mode-only commit, one file of 10,000: bodies stored / latency vs a content commit",
        format!("{mode_bodies} / {ratio:.2}×"),
        "0 / ≤ 1.2×".into(),
        Some(mode_bodies == 0 && ratio <= 1.2),
    );
}

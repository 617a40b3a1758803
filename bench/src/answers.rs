//! The answers section (issue 25): one path's history in a workspace of 10,000 revisions, for
//! a path with few versions and one with many, and the plan that reads it.

use crate::report::{ms, stats, Report};
use crate::{f2, text, upsert, Ws};
use serde_json::json;
use std::time::Instant;
use supabash_devcluster::Cluster;
use supabash_tests::SqlRpc;

const REVISIONS: usize = 10_000;
/// Files the commits cycle through: each gets `REVISIONS / HOT` versions.
const HOT: usize = 100;
const WARMUP: usize = 3;
const ROUNDS: usize = 30;

pub async fn path_history(cluster: &Cluster, rest: &mut SqlRpc, r: &mut Report) {
    let mut ws = Ws::create(rest).await;
    for i in 0..REVISIONS {
        let mut changes = vec![upsert(
            &format!("/hot/f{:03}.md", i % HOT),
            &text(3_000_000 + i as u64, 256),
        )];
        // The rare file: written at the first revision, the middle one and the last one.
        if i == 0 || i == REVISIONS / 2 || i == REVISIONS - 1 {
            changes.push(upsert("/rare.md", &text(i as u64, 256)));
        }
        ws.commit(rest, changes).await;
    }
    cluster.psql("app", "VACUUM ANALYZE");
    let plan = cluster.psql(
        "app",
        &format!(
            "EXPLAIN SELECT valid_from, valid_until FROM supabash.entries
              WHERE workspace_id = '{}'::uuid AND path = '/rare.md' ORDER BY valid_from",
            ws.id
        ),
    );
    let index = plan
        .lines()
        .find(|l| l.contains("Index"))
        .map(|l| l.trim().to_owned())
        .unwrap_or_else(|| format!("NO INDEX: {plan}"));
    let cases = [
        ("/rare.md (3 versions)", "/rare.md", 3),
        ("/hot/f007.md (100 versions)", "/hot/f007.md", 100),
    ];
    r.section("Path history");
    r.line(&format!(
        "A workspace with {REVISIONS} revisions: single-file commits cycling through {HOT} files \
         of 256 B (100 versions each), and a file written at the first, the middle and the last \
         revision; then `VACUUM ANALYZE`. `supabash_path_history` newest first, `page_size` 100, \
         one call per round, {WARMUP} warm-up rounds discarded; side by side, the first page of \
         `supabash_history` (100 receipts) on the same workspace. The entries are read by \
         `{index}`."
    ));
    r.table(&["call", "versions", "N", "median ms", "p90 ms"]);
    let mut medians = Vec::new();
    for (label, path, versions) in cases {
        let mut times = Vec::new();
        for round in 0..WARMUP + ROUNDS {
            let t = Instant::now();
            let page = ws
                .read(rest, "supabash_path_history", json!({ "path": path }))
                .await;
            let took = ms(t);
            assert_eq!(
                page["versions"].as_array().map(Vec::len),
                Some(versions),
                "{path}"
            );
            if round >= WARMUP {
                times.push(took);
            }
        }
        let s = stats(&times);
        medians.push(s.median);
        r.row(&[
            format!("path history {label}"),
            versions.to_string(),
            s.n.to_string(),
            f2(s.median),
            f2(s.p90),
        ]);
    }
    let mut times = Vec::new();
    for round in 0..WARMUP + ROUNDS {
        let t = Instant::now();
        ws.read(rest, "supabash_history", json!({ "page_size": 100 }))
            .await;
        if round >= WARMUP {
            times.push(ms(t));
        }
    }
    let h = stats(&times);
    r.row(&[
        "history, first page".into(),
        "100 receipts".into(),
        h.n.to_string(),
        f2(h.median),
        f2(h.p90),
    ]);
    r.summary(
        "Path history at 10,000 revisions",
        format!(
            "{} ms (3 versions), {} ms (100 versions)",
            f2(medians[0]),
            f2(medians[1])
        ),
        "cost follows the path's versions".into(),
        None,
    );
}

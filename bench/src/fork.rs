//! The fork section: forking a 10,000- and a 100,000-file workspace, side by side with a
//! single-file commit on the same workspaces, the rows a fork adds, and a fork's manifest
//! next to its source's.

use crate::report::{ms, stats, Report};
use crate::{f2, text, upsert, Ws};
use serde_json::json;
use std::time::Instant;
use supabash_devcluster::Cluster;
use supabash_tests::SqlRpc;

const SIZES: [usize; 2] = [10_000, 100_000];
const WARMUP: usize = 3;
const ROUNDS: usize = 30;

/// Rows in the tables a fork could copy into: (workspaces, revisions, entries, bodies).
fn rows(cluster: &Cluster) -> [i64; 4] {
    let out = cluster.psql(
        "app",
        "SELECT (SELECT count(*) FROM supabash.workspaces) || ',' ||
                (SELECT count(*) FROM supabash.revisions) || ',' ||
                (SELECT count(*) FROM supabash.entries) || ',' ||
                (SELECT count(*) FROM supabash.bodies)",
    );
    let v: Vec<i64> = out.trim().split(',').map(|x| x.parse().unwrap()).collect();
    [v[0], v[1], v[2], v[3]]
}

pub async fn fork_cost(cluster: &Cluster, rest: &mut SqlRpc, r: &mut Report) {
    let mut spaces = Vec::new();
    for n in SIZES {
        let mut ws = Ws::create(rest).await;
        for start in (0..n).step_by(1000) {
            let files = (start..n.min(start + 1000))
                .map(|i| {
                    upsert(
                        &format!("/src/d{:03}/f{i:06}.md", i / 1000),
                        &text(i as u64, 512),
                    )
                })
                .collect();
            ws.commit(rest, files).await;
        }
        spaces.push(ws);
    }
    cluster.psql("app", "VACUUM ANALYZE");
    let (mut fork_ms, mut commit_ms) = (vec![Vec::new(); 2], vec![Vec::new(); 2]);
    let mut added = [[0i64; 4]; 2];
    let mut forks = vec![String::new(); 2];
    for round in 0..WARMUP + ROUNDS {
        for (j, ws) in spaces.iter_mut().enumerate() {
            let before = rows(cluster);
            let t = Instant::now();
            let forked = ws
                .read(
                    rest,
                    "supabash_fork",
                    json!({ "actor": "bench", "label": format!("round {round}") }),
                )
                .await;
            let took = ms(t);
            let after = rows(cluster);
            for k in 0..4 {
                added[j][k] = added[j][k].max(after[k] - before[k]);
            }
            forks[j] = forked["workspaceId"].as_str().unwrap().to_owned();
            let path = format!("/src/d000/f{:06}.md", (round * 7) % 1000);
            let t2 = Instant::now();
            ws.commit(
                rest,
                vec![upsert(&path, &text(9_000_000 + round as u64, 512))],
            )
            .await;
            let took2 = ms(t2);
            if round >= WARMUP {
                fork_ms[j].push(took);
                commit_ms[j].push(took2);
            }
        }
    }
    // A fork with ten files of its own, read next to its source.
    let (mut src_manifest, mut fork_manifest) = (Vec::new(), Vec::new());
    let source = &spaces[0];
    let mut fork = Ws {
        who: source.who.clone(),
        id: forks[0].clone(),
        head: None,
    };
    let head = fork.read(rest, "supabash_load_manifest", json!({})).await;
    fork.head = head["revision"].as_str().map(str::to_owned);
    let own = (0..10)
        .map(|i| upsert(&format!("/src/d001/f{:06}.md", 1000 + i), "forked"))
        .collect();
    fork.commit(rest, own).await;
    for round in 0..WARMUP + 10 {
        let t = Instant::now();
        source.read(rest, "supabash_load_manifest", json!({})).await;
        let a = ms(t);
        let t = Instant::now();
        fork.read(rest, "supabash_load_manifest", json!({})).await;
        let b = ms(t);
        if round >= WARMUP {
            src_manifest.push(a);
            fork_manifest.push(b);
        }
    }
    let f: Vec<_> = fork_ms.iter().map(|l| stats(l)).collect();
    let c: Vec<_> = commit_ms.iter().map(|l| stats(l)).collect();
    r.section("Fork");
    r.line(&format!(
        "Two workspaces are seeded with 10,000 and 100,000 files of 512 B (commits of 1,000 \
         files), then `VACUUM ANALYZE`. Each round forks each workspace at its head \
         (`supabash_fork`, the PostgREST-shaped transaction) and then commits a one-file edit \
         to it, so both are measured side by side on the same workspace; {WARMUP} warm-up \
         rounds are discarded. Rows added is the largest change, over all rounds, in the row \
         counts of workspaces, revisions, entries and bodies around one fork."
    ));
    r.table(&[
        "files",
        "N",
        "fork median ms",
        "fork p90 ms",
        "commit median ms",
        "fork / commit",
        "rows added (ws, rev, entries, bodies)",
    ]);
    for (j, n) in SIZES.iter().enumerate() {
        r.row(&[
            n.to_string(),
            f[j].n.to_string(),
            f2(f[j].median),
            f2(f[j].p90),
            f2(c[j].median),
            format!("{:.2}", f[j].median / c[j].median),
            format!("{:?}", added[j]),
        ]);
    }
    let growth = f[1].median / f[0].median;
    r.line(&format!(
        "\nFork median at 100,000 / at 10,000 files: **{growth:.2}** (the cost does not grow \
         with the tree). Manifest of the 10,000-file source vs a fork of it with 10 files of its \
         own (medians of 10): {} ms vs {} ms.",
        f2(stats(&src_manifest).median),
        f2(stats(&fork_manifest).median)
    ));
    let o1 = added.iter().all(|a| a == &[1, 1, 0, 0]);
    r.summary(
        "Fork of 10,000 / 100,000 files, median",
        format!(
            "{} / {} ms, rows added {:?}",
            f2(f[0].median),
            f2(f[1].median),
            added[1]
        ),
        "≤ 50 ms, O(1) rows".into(),
        Some(f[0].median <= 50.0 && f[1].median <= 50.0 && o1),
    );
}

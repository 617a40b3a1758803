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

const GREP_FILES: usize = 10_000;
const GREP_FILE_BYTES: usize = 4096;
/// Files that hold the needle.
const NEEDLES: usize = 10;

/// Rounds measured per search case (after the warm-up ones).
const GREP_ROUNDS: usize = 10;

/// Server-side search of 10,000 files of 4 KiB, a fixed string and a regex, beside reading the
/// same bodies from a plain table (to the client, and searched by PostgreSQL itself).
pub async fn grep(cluster: &Cluster, rest: &mut SqlRpc, r: &mut Report) {
    cluster.psql(
        "app",
        "CREATE TABLE public.grep_plain (path text PRIMARY KEY, body text);
         GRANT SELECT, INSERT ON public.grep_plain TO authenticator",
    );
    let mut ws = Ws::create(rest).await;
    let body = |i: usize| {
        let mut t = text(5_000_000 + i as u64, GREP_FILE_BYTES);
        if i % (GREP_FILES / NEEDLES) == 7 {
            t.replace_range(100..114, "NEEDLE-4242 ok");
        }
        t
    };
    for start in (0..GREP_FILES).step_by(1000) {
        let files: Vec<(String, String)> = (start..start + 1000)
            .map(|i| (format!("/src/d{:02}/f{i:05}.md", i / 1000), body(i)))
            .collect();
        ws.commit(rest, files.iter().map(|(p, b)| upsert(p, b)).collect())
            .await;
        let paths: Vec<&str> = files.iter().map(|(p, _)| p.as_str()).collect();
        let bodies: Vec<&str> = files.iter().map(|(_, b)| b.as_str()).collect();
        rest.client
            .execute(
                "INSERT INTO public.grep_plain SELECT * FROM unnest($1::text[], $2::text[])",
                &[&paths, &bodies],
            )
            .await
            .unwrap();
    }
    cluster.psql("app", "VACUUM ANALYZE");
    let cases = [
        (
            "fixed string",
            json!({"pattern": "NEEDLE-4242", "fixed_strings": true}),
        ),
        (
            "regex",
            json!({"pattern": r"needle-\d{4}\s+ok|zz+top", "ignore_case": true}),
        ),
    ];
    r.section("Server-side search");
    r.line(&format!(
        "{GREP_FILES} files of {GREP_FILE_BYTES} B of prose-like text in one workspace, \
         {NEEDLES} of them holding the needle; the same paths and bodies in a plain table \
         `(path text, body text)`. `supabash_grep` at the head (`max_matches` 1000: one page \
         holds every match), beside reading every body of the plain table to the client and \
         PostgreSQL's own `LIKE` / `~` over the plain table, in one run. {WARMUP} warm-up \
         rounds discarded, {GREP_ROUNDS} measured."
    ));
    r.table(&["call", "matches", "median ms", "p90 ms"]);
    let mut medians = Vec::new();
    for (label, args) in cases {
        let mut args = args;
        args["max_matches"] = json!(1000);
        let page = ws.read(rest, "supabash_grep", args.clone()).await;
        let n = page["matches"].as_array().unwrap().len();
        assert_eq!(n, NEEDLES, "{label}: {page}");
        assert_eq!(page["filesSearched"], json!(GREP_FILES));
        let mut times = Vec::new();
        for round in 0..WARMUP + GREP_ROUNDS {
            let t = Instant::now();
            ws.read(rest, "supabash_grep", args.clone()).await;
            if round >= WARMUP {
                times.push(ms(t));
            }
        }
        let s = stats(&times);
        let (median, p90) = (s.median, s.p90);
        medians.push(median);
        r.row(&[
            format!("supabash_grep, {label}"),
            n.to_string(),
            f2(median),
            f2(p90),
        ]);
    }
    let plain = [
        (
            "plain table: every body to the client",
            "SELECT path, body FROM public.grep_plain",
        ),
        (
            "plain table: `body LIKE '%NEEDLE-4242%'`",
            "SELECT path FROM public.grep_plain WHERE body LIKE '%NEEDLE-4242%'",
        ),
        (
            "plain table: `body ~* 'needle-\\d{4}\\s+ok|zz+top'`",
            r"SELECT path FROM public.grep_plain WHERE body ~* 'needle-\d{4}\s+ok|zz+top'",
        ),
    ];
    for (label, sql) in plain {
        let rows = rest.client.query(sql, &[]).await.unwrap().len();
        let mut times = Vec::new();
        for round in 0..WARMUP + GREP_ROUNDS {
            let t = Instant::now();
            rest.client.query(sql, &[]).await.unwrap();
            if round >= WARMUP {
                times.push(ms(t));
            }
        }
        let s = stats(&times);
        r.row(&[label.into(), rows.to_string(), f2(s.median), f2(s.p90)]);
    }
    let met = medians.iter().all(|m| *m <= 1000.0);
    r.summary(
        "Search 10,000 files x 4 KiB (supabash_grep)",
        format!(
            "{} ms fixed string, {} ms regex",
            f2(medians[0]),
            f2(medians[1])
        ),
        "≤ 1000 ms".into(),
        Some(met),
    );
}

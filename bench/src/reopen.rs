//! The reopen section (issue 25, item 6): a 10,000-file workspace opened by the client, cold
//! (the whole manifest decoded into the tree) and again from the host's manifest cache after
//! a one-file commit (one `supabash_manifest_changes` call), side by side with the server's
//! manifest answer alone and with a lazy open of a 100,000-file workspace plus its root
//! listing, round by round (SUPABASH_BENCH_ONLY section `reopen`): the three numbers of
//! item 6 in one run.

use crate::charts::{Chart, Kind};
use crate::listing::{transport, wide_workspace, WIDE};
use crate::report::{ms, stats, Report};
use crate::{f2, upsert, Ws};
use serde_json::json;
use std::time::Instant;
use supabash::{ManifestCache, OpenMode, Transport, Workspace};
use supabash_devcluster::Cluster;
use supabash_tests::SqlRpc;

const FILES: usize = 10_000;
const PER_COMMIT: usize = 1000;
const WARMUP: usize = 3;
const ROUNDS: usize = 20;

pub async fn reopen(cluster: &Cluster, rest: &mut SqlRpc, r: &mut Report) {
    let (wide, seeded) = wide_workspace(cluster, rest).await;
    let wide_t = transport(&crate::dsn(cluster, "app"), &wide.who).await;
    let mut ws = Ws::create(rest).await;
    for c in 0..FILES / PER_COMMIT {
        let changes = (0..PER_COMMIT)
            .map(|i| {
                let n = c * PER_COMMIT + i;
                upsert(
                    &format!("/d{:02}/f{n:05}.md", n % 100),
                    &format!("file {n}\n"),
                )
            })
            .collect();
        ws.commit(rest, changes).await;
    }
    cluster.psql("app", "VACUUM ANALYZE");
    let t = transport(&crate::dsn(cluster, "app"), &ws.who).await;
    let cache = ManifestCache::new();
    let ws_id = ws.id.clone();
    let open = |cache: Option<&ManifestCache>| {
        let mut b = Workspace::builder(t.clone()).open_mode(OpenMode::Eager);
        if let Some(c) = cache {
            b = b.manifest_cache(c.clone());
        }
        let id = ws_id.clone();
        async move {
            let opened = b.open(&id).await.unwrap();
            assert_eq!(opened.fs().readdir("/").await.unwrap().len(), 100);
            opened
        }
    };
    let lazy_open = |t: std::sync::Arc<dyn Transport>, id: String| async move {
        let opened = Workspace::builder(t)
            .open_mode(OpenMode::Auto)
            .open(&id)
            .await
            .unwrap();
        assert!(opened.fs().is_partially_loaded());
        assert_eq!(opened.fs().readdir("/").await.unwrap().len(), WIDE.0);
    };
    let (mut server, mut compact, mut cold, mut warm, mut lazy) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for round in 0..WARMUP + ROUNDS {
        ws.commit(
            rest,
            vec![upsert(
                "/d07/f00007.md",
                &format!("edited in round {round}\n"),
            )],
        )
        .await;
        let at = Instant::now();
        let m = ws.read(rest, "supabash_load_manifest", json!({})).await;
        let server_ms = ms(at);
        assert_eq!(m["files"].as_array().map(Vec::len), Some(FILES));
        let at = Instant::now();
        let m = ws
            .read(rest, "supabash_load_manifest", json!({"compact": true}))
            .await;
        let compact_ms = ms(at);
        assert_eq!(m["files"].as_array().map(Vec::len), Some(FILES));
        let at = Instant::now();
        let c = open(None).await;
        let cold_ms = ms(at);
        let at = Instant::now();
        let w = open(Some(&cache)).await;
        let warm_ms = ms(at);
        assert_eq!(w.fs().base_revision(), ws.head);
        assert_eq!(c.fs().base_revision(), ws.head);
        let at = Instant::now();
        lazy_open(wide_t.clone(), wide.id.clone()).await;
        let lazy_ms = ms(at);
        if round >= WARMUP {
            server.push(server_ms);
            compact.push(compact_ms);
            cold.push(cold_ms);
            warm.push(warm_ms);
            lazy.push(lazy_ms);
        }
    }
    let (server, compact) = (stats(&server), stats(&compact));
    let (cold, warm, lazy) = (stats(&cold), stats(&warm), stats(&lazy));
    let (plpgsql, sql) = wrappers(cluster, rest, &ws).await;
    r.section("Reopen from the host's manifest cache");
    r.line(&format!(
        "A workspace of {FILES} small files in 100 directories (commits of {PER_COMMIT}), then \
         `VACUUM ANALYZE`. Each round commits a one-file edit, then, in this order: the server's \
         `supabash_load_manifest` answer alone (PostgREST-shaped transaction, decoded into \
         JSON), in the full form and in the compact one (`compact => true`, which the client \
         asks for); the client opening the workspace cold (`OpenMode::Eager`, no cache: the whole \
         manifest decoded into the staged tree) plus `readdir /`; the client opening it with a \
         `ManifestCache` that holds the previous round's manifest (one \
         `supabash_manifest_changes` call, the cached manifest patched into the tree) plus \
         `readdir /`; then the client opening a workspace of 100 directories of 1,000 small \
         files (100,000, seeded in {seeded:.1} s in commits of 25,000) with `OpenMode::Auto` \
         (lazy at this size: the root listed with the tree's totals) plus `readdir /`. Every \
         client open uses a direct Postgres connection (`PostgresTransport`). {ROUNDS} rounds \
         after {WARMUP} discarded."
    ));
    r.table(&["open", "N", "median ms", "p90 ms"]);
    for (what, s) in [
        ("server: `supabash_load_manifest` alone", &server),
        ("server: the same, `compact => true`", &compact),
        ("client, cold: whole manifest into the tree", &cold),
        ("client, reopen after a one-file commit (cache warm)", &warm),
        (
            "client, 100,000 files: open (auto → lazy) + `readdir /`",
            &lazy,
        ),
    ] {
        r.row(&[what.into(), s.n.to_string(), f2(s.median), f2(s.p90)]);
    }
    let opens = [&server, &compact, &cold, &warm, &lazy];
    r.chart(Chart {
        file: "manifest-and-open.svg",
        title: format!("Manifest and open, {FILES} files (100,000 for lazy)"),
        kind: Kind::Bars,
        x: "call".into(),
        y: "ms".into(),
        categories: [
            "manifest",
            "compact manifest",
            "open cold",
            "reopen warm",
            "open lazy",
        ]
        .map(String::from)
        .to_vec(),
        series: vec![
            ("median".into(), opens.iter().map(|s| s.median).collect()),
            ("p90".into(), opens.iter().map(|s| s.p90).collect()),
        ],
    });
    r.line(&format!(
        "\nThe manifest's wrapper, interleaved call by call on the same head ({ROUNDS} pairs \
         after {WARMUP}): `supabash_load_manifest` as installed {} ms (p90 {}), the same call \
         through a `LANGUAGE sql` copy of the wrapper (as 0.5.0 declared it) {} ms (p90 {}).",
        f2(plpgsql.median),
        f2(plpgsql.p90),
        f2(sql.median),
        f2(sql.p90)
    ));
    r.summary(
        "Client open of 10,000 files, cold (manifest decoded into the tree)",
        format!("{} ms (p90 {})", f2(cold.median), f2(cold.p90)),
        "≤ 28 ms".into(),
        Some(cold.median <= 28.0),
    );
    r.summary(
        "Reopen of 10,000 files after a one-file commit, cache warm",
        format!(
            "{} ms (p90 {}; cold {})",
            f2(warm.median),
            f2(warm.p90),
            f2(cold.median)
        ),
        "≤ 5 ms".into(),
        Some(warm.median <= 5.0),
    );
    r.summary(
        "Open 100,000-file workspace (lazy) + list root, beside the 10,000-file opens",
        format!("{} ms (p90 {})", f2(lazy.median), f2(lazy.p90)),
        "≤ 20 ms".into(),
        Some(lazy.median <= 20.0),
    );
}

/// The manifest through the installed wrapper and through a `LANGUAGE sql` copy of it (the
/// wrapper 0.5.0 declared, whose result row goes through a tuplestore), interleaved call by
/// call: medians of each.
async fn wrappers(
    cluster: &Cluster,
    rest: &mut SqlRpc,
    ws: &Ws,
) -> (crate::report::Stats, crate::report::Stats) {
    cluster.psql(
        "app",
        "CREATE OR REPLACE FUNCTION public.bench_manifest_sql(workspace_id text,
           revision text DEFAULT NULL, delegated_grant text DEFAULT NULL)
         RETURNS json LANGUAGE sql STABLE SECURITY DEFINER
         SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
           SELECT supabash._read('load_manifest', json_build_object('workspace_id', workspace_id,
             'revision', revision, 'delegated_grant', delegated_grant))
         $$;
         GRANT EXECUTE ON FUNCTION public.bench_manifest_sql(text, text, text) TO authenticated",
    );
    let (mut installed, mut sql) = (Vec::new(), Vec::new());
    for round in 0..WARMUP + ROUNDS {
        for step in 0..2 {
            let copy = (round + step) % 2 == 1;
            let function = if copy {
                "bench_manifest_sql"
            } else {
                "supabash_load_manifest"
            };
            let at = Instant::now();
            let m = ws.read(rest, function, json!({})).await;
            let took = ms(at);
            assert_eq!(m["files"].as_array().map(Vec::len), Some(FILES));
            if round >= WARMUP {
                if copy { &mut sql } else { &mut installed }.push(took);
            }
        }
    }
    cluster.psql(
        "app",
        "DROP FUNCTION public.bench_manifest_sql(text, text, text)",
    );
    (stats(&installed), stats(&sql))
}

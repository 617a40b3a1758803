//! Reads as fast as the bytes allow, and lazy directories at 100,000 files: the snapshot next
//! to a plain-table reference, every read RPC's answer size and time, and a 100,000-file
//! workspace opened lazily and listed (SUPABASH_BENCH_ONLY sections `reads` and `listing`).

use crate::report::{ms, stats, Report};
use crate::{f2, text, upsert, Ws};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Instant;
use supabash::{OpenMode, PostgresTransport, Transport, Workspace};
use supabash_tests::{Caller, SqlRpc};

/// The plain-table reference: the snapshot's bodies in a `(path, body)` table.
const PLAIN_FILES: &str =
    "CREATE TABLE IF NOT EXISTS public.plain_files (path text PRIMARY KEY, body text NOT NULL);
     GRANT SELECT, INSERT ON public.plain_files TO authenticator";

/// The reference read: the same bodies as one JSON aggregate, as a PostgREST-shaped function
/// over a plain table would answer them.
const PLAIN_SNAPSHOT: &str =
    "SELECT json_agg(json_build_object('path', path, 'text', body) ORDER BY path) FROM public.plain_files";

/// Median milliseconds of `runs` timed calls of `f` after `warm` discarded ones.
async fn timed<F, Fut, T>(warm: usize, runs: usize, mut f: F) -> (f64, f64, T)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = T>,
{
    let mut lat = Vec::with_capacity(runs);
    let mut last = None;
    for i in 0..warm + runs {
        let t = Instant::now();
        let out = f().await;
        if i >= warm {
            lat.push(ms(t));
        }
        last = Some(out);
    }
    let s = stats(&lat);
    (s.median, s.p90, last.expect("ran"))
}

/// Snapshot of 1,000 × 4 KiB files next to the plain-table reference, interleaved, then every
/// read RPC's answer size and time on the same workspace.
pub async fn reads(cluster: &supabash_devcluster::Cluster, rest: &mut SqlRpc, r: &mut Report) {
    const FILES: usize = 1000;
    const SIZE: usize = 4096;
    const RUNS: usize = 25;
    cluster.psql("app", PLAIN_FILES);
    let mut ws = Ws::create(rest).await;
    let bodies: Vec<(String, String)> = (0..FILES)
        .map(|i| {
            (
                format!("/snap/f{i:04}.md"),
                text(7_000_000 + i as u64, SIZE),
            )
        })
        .collect();
    let changes: Vec<Value> = bodies.iter().map(|(p, b)| upsert(p, b)).collect();
    ws.commit(rest, changes).await;
    let first = ws.head.clone().expect("committed");
    ws.commit(rest, vec![upsert("/snap/f0000.md", "edited")])
        .await;
    for (p, b) in &bodies {
        rest.client
            .execute(
                "INSERT INTO public.plain_files (path, body) VALUES ($1, $2)",
                &[p, b],
            )
            .await
            .unwrap();
    }
    cluster.psql("app", "VACUUM ANALYZE");
    let (mut ours, mut plain) = (Vec::new(), Vec::new());
    let mut sizes = (0, 0);
    for run in 0..RUNS + 3 {
        for step in 0..2 {
            let t = Instant::now();
            if (step + run) % 2 == 0 {
                let s = ws
                    .read(rest, "supabash_load_snapshot", json!({ "revision": first }))
                    .await;
                assert_eq!(s["files"].as_array().map(Vec::len), Some(FILES));
                sizes.0 = s.to_string().len();
                if run >= 3 {
                    ours.push(ms(t));
                }
            } else {
                let row = rest.client.query_one(PLAIN_SNAPSHOT, &[]).await.unwrap();
                let v: Value = row.get(0);
                assert_eq!(v.as_array().map(Vec::len), Some(FILES));
                sizes.1 = v.to_string().len();
                if run >= 3 {
                    plain.push(ms(t));
                }
            }
        }
    }
    let (o, p) = (stats(&ours), stats(&plain));
    let ratio = o.median / p.median;
    r.section("Snapshot against a plain table");
    r.line(&format!(
        "`supabash_load_snapshot` of {FILES} distinct {SIZE}-byte text files (a pinned revision, \
         so the answer is every body, {} B of JSON), next to the same bodies selected from a plain \
         table `(path text PRIMARY KEY, body text)` as one JSON aggregate \
         (`{PLAIN_SNAPSHOT}`, {} B), interleaved run by run over one connection, each timed \
         around the round trip including decoding the JSON on the client. 3 warm-up runs \
         discarded.",
        sizes.0, sizes.1
    ));
    r.table(&["variant", "N", "median ms", "p90 ms"]);
    r.row(&[
        "supabash_load_snapshot".into(),
        o.n.to_string(),
        f2(o.median),
        f2(o.p90),
    ]);
    r.row(&[
        "plain-table JSON aggregate".into(),
        p.n.to_string(),
        f2(p.median),
        f2(p.p90),
    ]);
    r.line(&format!(
        "\nRatio of medians, snapshot / plain table: **{ratio:.2}** (target ≤ 1.1)."
    ));
    r.summary(
        "Snapshot of 1,000 × 4 KiB vs plain table",
        format!("{} vs {} ms, ratio {ratio:.2}", f2(o.median), f2(p.median)),
        "≤ 1.1".into(),
        Some(ratio <= 1.1),
    );
    every_read(rest, &ws, &first, r).await;
}

/// Answer size and median time of every read RPC on the snapshot's workspace.
async fn every_read(rest: &mut SqlRpc, ws: &Ws, first: &str, r: &mut Report) {
    let cp = ws
        .read(rest, "supabash_checkpoint", json!({ "label": "bench" }))
        .await;
    let cp = cp["checkpointId"].as_str().unwrap().to_owned();
    let calls: Vec<(&str, &str, Value)> = vec![
        ("supabash_list_workspaces", "", json!({})),
        ("supabash_load_manifest", "head", json!({})),
        (
            "supabash_load_document",
            "one 4 KiB file",
            json!({ "path": "/snap/f0500.md" }),
        ),
        ("supabash_load_snapshot", "head", json!({})),
        (
            "supabash_load_revision",
            "first revision",
            json!({ "revision": first }),
        ),
        ("supabash_history", "2 revisions", json!({})),
        (
            "supabash_diff",
            "first → head",
            json!({ "from_ref": {"revision": first}, "to_ref": {"head": true} }),
        ),
        (
            "supabash_diff",
            "checkpoint → staged (1 file)",
            json!({ "from_ref": {"checkpoint": cp}, "to_ref": {"staged": true},
                    "staged": [{"path": "/snap/f0001.md", "text": "staged"}] }),
        ),
        ("supabash_checkpoints", "", json!({})),
        ("supabash_lease", "none held", json!({})),
        (
            "supabash_list_directory",
            "/snap, 1,000 files",
            json!({ "path": "/snap" }),
        ),
        (
            "supabash_list_directory",
            "/, with totals",
            json!({ "path": "/", "totals": true }),
        ),
    ];
    r.section("Every read RPC");
    r.line(
        "Each read RPC on the 1,000-file workspace of the snapshot benchmark (two revisions, one \
         checkpoint), 20 calls after 3 discarded, timed around the PostgREST-shaped round trip \
         including decoding; the answer size is its JSON text.",
    );
    r.table(&["RPC", "case", "answer bytes", "median ms", "p90 ms"]);
    for (rpc, case, args) in calls {
        let mut size = 0;
        let mut lat = Vec::new();
        for i in 0..23 {
            let mut a = args.clone();
            if rpc != "supabash_list_workspaces" {
                a["workspace_id"] = json!(ws.id);
            }
            let t = Instant::now();
            let v = rest.call(&ws.who, rpc, a).await;
            let v = v.unwrap_or_else(|e| panic!("{rpc}: {e}"));
            if i >= 3 {
                lat.push(ms(t));
            }
            size = v.to_string().len();
        }
        let s = stats(&lat);
        r.row(&[
            format!("`{rpc}`"),
            case.into(),
            size.to_string(),
            f2(s.median),
            f2(s.p90),
        ]);
    }
}

/// A transport for `who` the way a trusted host connects (direct Postgres).
pub(crate) async fn transport(dsn: &str, who: &Caller) -> Arc<dyn Transport> {
    let Caller::User(sub) = who else {
        unreachable!("bench workspaces belong to users")
    };
    let claims = json!({ "role": "authenticated", "sub": sub });
    Arc::new(PostgresTransport::connect(dsn, claims).await.unwrap())
}

/// Directories and files per directory of [`wide_workspace`].
pub(crate) const WIDE: (usize, usize) = (100, 1000);

/// Files per commit of [`wide_workspace`]'s seed: large commits of small files keep the seed
/// to seconds (100 commits of 1,000 took minutes on a loaded machine).
const SEED_PER_COMMIT: usize = 25_000;

/// A fresh user's workspace of 100 directories of 1,000 small files (100,000), committed in
/// a few large commits, then `VACUUM ANALYZE`; and the seconds the seed took.
pub(crate) async fn wide_workspace(
    cluster: &supabash_devcluster::Cluster,
    rest: &mut SqlRpc,
) -> (Ws, f64) {
    let (dirs, per_dir) = WIDE;
    let at = Instant::now();
    let mut ws = Ws::create(rest).await;
    let all: Vec<(usize, usize)> = (0..dirs)
        .flat_map(|d| (0..per_dir).map(move |f| (d, f)))
        .collect();
    for chunk in all.chunks(SEED_PER_COMMIT) {
        let changes: Vec<Value> = chunk
            .iter()
            .map(|(d, f)| {
                upsert(
                    &format!("/dir{d:03}/f{f:04}.md"),
                    &format!("file {d}/{f}\n"),
                )
            })
            .collect();
        ws.commit(rest, changes).await;
    }
    cluster.psql("app", "VACUUM ANALYZE");
    (ws, at.elapsed().as_secs_f64())
}

/// A 100,000-file workspace (100 directories of 1,000 files): opening it lazily and listing
/// its root, listing one directory, and an eager open for context.
pub async fn listing(cluster: &supabash_devcluster::Cluster, rest: &mut SqlRpc, r: &mut Report) {
    const DIRS: usize = WIDE.0;
    const PER_DIR: usize = WIDE.1;
    let dsn = crate::dsn(cluster, "app");
    let (ws, seeded) = wide_workspace(cluster, rest).await;
    eprintln!("bench: 100,000 files seeded in {seeded:.1} s");
    let t = transport(&dsn, &ws.who).await;
    let (t, id) = (&t, ws.id.as_str());
    let open = move |mode: OpenMode| async move {
        Workspace::builder(t.clone())
            .open_mode(mode)
            .open(id)
            .await
            .unwrap()
    };
    let (open_lazy, open_lazy_p90, root) = timed(3, 15, move || async move {
        let opened = open(OpenMode::Auto).await;
        assert!(opened.fs().is_partially_loaded());
        opened.fs().readdir("/").await.unwrap().len()
    })
    .await;
    assert_eq!(root, DIRS);
    // Side by side, round by round: the same open with the head's stored totals cleared, so
    // they are counted by a scan of the tree's index (as before revisions kept them).
    let head = ws.head.clone().expect("a head");
    let kept = cluster.psql(
        "app",
        &format!(
            "SELECT tree_files || ', ' || tree_bytes FROM supabash.revisions
              WHERE revision_id = '{head}'"
        ),
    );
    let kept = kept.trim().to_owned();
    assert!(kept.starts_with(&(DIRS * PER_DIR).to_string()), "{kept}");
    let set_totals = |unknown: bool| {
        let totals = if unknown { "NULL, NULL" } else { kept.as_str() };
        cluster.psql(
            "app",
            &format!(
                "UPDATE supabash.revisions SET (tree_files, tree_bytes) = ({totals})
                  WHERE revision_id = '{head}'"
            ),
        );
    };
    let (mut stored, mut scanned) = (Vec::new(), Vec::new());
    for round in 0..18 {
        for unknown in [true, false] {
            set_totals(unknown);
            let t = Instant::now();
            let opened = open(OpenMode::Auto).await;
            assert_eq!(opened.fs().readdir("/").await.unwrap().len(), DIRS);
            if round >= 3 {
                if unknown { &mut scanned } else { &mut stored }.push(ms(t));
            }
        }
    }
    let (stored, scanned) = (stats(&stored), stats(&scanned));
    let (open_dir, open_dir_p90, n) = timed(3, 15, move || async move {
        let opened = open(OpenMode::Lazy).await;
        opened.fs().readdir("/dir042").await.unwrap().len()
    })
    .await;
    assert_eq!(n, PER_DIR);
    let (eager, eager_p90, _) = timed(1, 3, move || async move {
        let opened = open(OpenMode::Eager).await;
        opened.fs().readdir("/").await.unwrap().len()
    })
    .await;
    let (list_dir, list_dir_p90, bytes) = list_rpc(rest, &ws, json!({ "path": "/dir042" })).await;
    let (root_rpc, root_rpc_p90, _) =
        list_rpc(rest, &ws, json!({ "path": "/", "totals": true })).await;
    r.section("Lazy directories at 100,000 files");
    r.line(&format!(
        "A workspace of {DIRS} directories of {PER_DIR} small files (100,000 files), opened with \
         the client over direct Postgres (`PostgresTransport`): `OpenMode::Auto` lists the root \
         with the tree's totals and, the tree being large, opens lazily. Timed around the whole \
         open plus `readdir`, 15 runs after 3 discarded (the eager open: 3 after 1). The \
         1,000-entry listing is one `supabash_list_directory` page ({bytes} B of JSON) over the \
         PostgREST-shaped transaction."
    ));
    r.table(&["operation", "median ms", "p90 ms"]);
    for (what, m, p) in [
        ("open (auto → lazy) + `readdir /`", open_lazy, open_lazy_p90),
        (
            "open (lazy) + `readdir /dir042` (1,000 files)",
            open_dir,
            open_dir_p90,
        ),
        (
            "`supabash_list_directory` /dir042, 1,000 files",
            list_dir,
            list_dir_p90,
        ),
        (
            "`supabash_list_directory` /, with totals",
            root_rpc,
            root_rpc_p90,
        ),
        (
            "open (eager: whole manifest) + `readdir /`",
            eager,
            eager_p90,
        ),
        (
            "open (auto → lazy) + `readdir /`, totals stored with the revision (interleaved)",
            stored.median,
            stored.p90,
        ),
        (
            "open (auto → lazy) + `readdir /`, totals counted by scan (interleaved)",
            scanned.median,
            scanned.p90,
        ),
    ] {
        r.row(&[what.into(), f2(m), f2(p)]);
    }
    r.summary(
        "Open 100,000-file workspace + list root",
        format!(
            "{} ms (p90 {}; interleaved: stored totals {}, counted by scan {})",
            f2(open_lazy),
            f2(open_lazy_p90),
            f2(stored.median),
            f2(scanned.median)
        ),
        "≤ 20 ms".into(),
        Some(open_lazy <= 20.0),
    );
    r.summary(
        "List a 1,000-entry directory (100,000-file tree)",
        format!("{} ms (p90 {})", f2(list_dir), f2(list_dir_p90)),
        "≤ 10 ms".into(),
        Some(list_dir <= 10.0),
    );
}

/// Median and p90 milliseconds of 20 `supabash_list_directory` calls (after 3 discarded), and
/// the answer's size.
async fn list_rpc(rest: &mut SqlRpc, ws: &Ws, args: Value) -> (f64, f64, usize) {
    let (mut lat, mut bytes) = (Vec::new(), 0);
    for i in 0..23 {
        let t = Instant::now();
        let page = ws.read(rest, "supabash_list_directory", args.clone()).await;
        if i >= 3 {
            lat.push(ms(t));
        }
        bytes = page.to_string().len();
    }
    let s = stats(&lat);
    (s.median, s.p90, bytes)
}

//! The core paths against plain PostgreSQL in the same run (issue 22): the single-file commit
//! next to a PostgREST-shaped transaction that INSERTs one row with the same body, at 100,
//! 10,000 and 100,000 files (SUPABASH_BENCH_ONLY section `plain`), and the server CPU a
//! backend spends per call, read from `/proc/<backend pid>/schedstat` (the bench runs on the
//! server's machine).

use crate::report::{ms, stats, Report};
use crate::{f2, text, upsert, Ws};
use serde_json::json;
use std::time::Instant;
use supabash_tests::{Caller, SqlRpc};

/// The backend process id of `rest`'s connection.
pub async fn backend_pid(rest: &SqlRpc) -> i32 {
    let row = rest
        .client
        .query_one("SELECT pg_backend_pid()", &[])
        .await
        .expect("backend pid");
    row.get(0)
}

/// Nanoseconds the process `pid` has run on a CPU (first field of `/proc/<pid>/schedstat`).
pub fn cpu_ns(pid: i32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/schedstat"))
        .unwrap_or_else(|e| panic!("/proc/{pid}/schedstat: {e} (is the server on this machine?)"));
    s.split_whitespace()
        .next()
        .and_then(|x| x.parse().ok())
        .expect("schedstat's first field")
}

/// A plain table written as PostgREST writes one row: `(id bigserial, body text)`.
const PLAIN_ROWS: &str =
    "CREATE TABLE IF NOT EXISTS public.plain_rows (id bigserial PRIMARY KEY, body text NOT NULL);
     GRANT SELECT, INSERT ON public.plain_rows TO authenticated;
     GRANT USAGE ON SEQUENCE public.plain_rows_id_seq TO authenticated";

/// One PostgREST-shaped transaction (claims, `SET LOCAL ROLE authenticated`, the INSERT with
/// `RETURNING`, COMMIT) that inserts `body` into the plain table.
async fn plain_insert_one(rest: &mut SqlRpc, who: &Caller, body: &str) {
    let Caller::User(sub) = who else {
        unreachable!("a user")
    };
    let claims = json!({ "role": "authenticated", "sub": sub, "aud": "authenticated" });
    let tx = rest.client.transaction().await.unwrap();
    tx.execute(
        "SELECT set_config('request.jwt.claims', $1, true)",
        &[&claims.to_string()],
    )
    .await
    .unwrap();
    tx.batch_execute("SET LOCAL ROLE authenticated")
        .await
        .unwrap();
    tx.query_one(
        "INSERT INTO public.plain_rows (body) VALUES ($1) RETURNING id",
        &[&body],
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
}

/// Per variant: round-trip milliseconds and backend CPU milliseconds of each call.
#[derive(Default)]
struct Calls {
    lat: Vec<f64>,
    cpu: Vec<f64>,
}

/// The single-file commit of a 4 KiB body at 100, 10,000 and 100,000 files next to a plain
/// one-row INSERT of the same body, all interleaved round by round on one connection.
pub async fn commit_vs_insert(
    cluster: &supabash_devcluster::Cluster,
    rest: &mut SqlRpc,
    r: &mut Report,
) {
    const SIZES: [usize; 3] = [100, 10_000, 100_000];
    const SEED_SIZE: usize = 256;
    const SIZE: usize = 4096;
    const WARMUP: usize = 10;
    const ROUNDS: usize = 150;
    cluster.psql("app", PLAIN_ROWS);
    let mut spaces = Vec::new();
    for n in SIZES {
        eprintln!("bench: seeding {n} files");
        let mut ws = Ws::create(rest).await;
        for start in (0..n).step_by(2000) {
            let files = (start..n.min(start + 2000))
                .map(|i| {
                    let dir = i / 1000;
                    upsert(
                        &format!("/d{dir:03}/f{i:06}.md"),
                        &text(i as u64, SEED_SIZE),
                    )
                })
                .collect();
            ws.commit(rest, files).await;
        }
        ws.commit(rest, vec![upsert("/hot.md", &text(42, SIZE))])
            .await;
        spaces.push(ws);
    }
    cluster.psql("app", "VACUUM ANALYZE");
    let pid = crate::core_paths::backend_pid(rest).await;
    let plain_who = Caller::new_user();
    let mut calls: Vec<Calls> = (0..=SIZES.len()).map(|_| Calls::default()).collect();
    for round in 0..WARMUP + ROUNDS {
        let body = text(5_000_000 + round as u64, SIZE);
        for k in 0..=SIZES.len() {
            // Rotate which variant goes first; index SIZES.len() is the plain INSERT.
            let j = (round + k) % (SIZES.len() + 1);
            let (t, c) = (Instant::now(), cpu_ns(pid));
            if j < SIZES.len() {
                spaces[j].commit(rest, vec![upsert("/hot.md", &body)]).await;
            } else {
                plain_insert_one(rest, &plain_who, &body).await;
            }
            if round >= WARMUP {
                calls[j].lat.push(ms(t));
                calls[j].cpu.push((cpu_ns(pid) - c) as f64 / 1e6);
            }
        }
    }
    let lat: Vec<_> = calls.iter().map(|c| stats(&c.lat)).collect();
    let cpu: Vec<_> = calls.iter().map(|c| stats(&c.cpu)).collect();
    let plain = SIZES.len();
    r.section("Single-file commit against a plain INSERT");
    r.line(&format!(
        "Three workspaces are seeded with 100, 10,000 and 100,000 files of {SEED_SIZE} B \
         (commits of 2,000 files, 1,000 per directory) and a file `/hot.md` of {SIZE} B, then \
         `VACUUM ANALYZE`. Each round overwrites `/hot.md` in each workspace with a new {SIZE}-B \
         text (one `supabash_commit` on the last head) and runs a PostgREST-shaped transaction \
         that INSERTs one row with the same text into a plain table `(id bigserial PRIMARY KEY, \
         body text)` (claims, `SET LOCAL ROLE authenticated`, `INSERT … RETURNING id`, COMMIT), \
         rotating which goes first, all on one connection. Backend CPU per call is the \
         connection's backend's CPU time (`/proc/<pid>/schedstat`) across the call. \
         {WARMUP} warm-up rounds discarded; {ROUNDS} rounds."
    ));
    r.table(&[
        "call",
        "N",
        "median ms",
        "p90 ms",
        "backend CPU median ms",
        "ratio to plain INSERT (medians)",
    ]);
    for (j, n) in SIZES.iter().enumerate() {
        r.row(&[
            format!("commit at {n} files"),
            lat[j].n.to_string(),
            f2(lat[j].median),
            f2(lat[j].p90),
            f2(cpu[j].median),
            f2(lat[j].median / lat[plain].median),
        ]);
    }
    r.row(&[
        "plain INSERT, one row".into(),
        lat[plain].n.to_string(),
        f2(lat[plain].median),
        f2(lat[plain].p90),
        f2(cpu[plain].median),
        "1.00".into(),
    ]);
    let at_10k = lat[1].median / lat[plain].median;
    let flat = lat[2].median / lat[0].median;
    r.line(&format!(
        "\nCommit at 10,000 files / plain INSERT: **{at_10k:.2}** (target ≤ 1.5); commit at \
         100,000 / 100 files: **{flat:.2}** (flat)."
    ));
    r.summary(
        "Single-file 4 KiB commit at 10,000 files / plain one-row INSERT",
        format!(
            "{} vs {} ms, ratio {at_10k:.2}",
            f2(lat[1].median),
            f2(lat[plain].median)
        ),
        "≤ 1.5".into(),
        Some(at_10k <= 1.5),
    );
    r.summary(
        "Single-file commit, 100 / 10,000 / 100,000 files (backend CPU)",
        format!(
            "{} / {} / {} ms ({} / {} / {} ms CPU), 100,000 / 100 = {flat:.2}",
            f2(lat[0].median),
            f2(lat[1].median),
            f2(lat[2].median),
            f2(cpu[0].median),
            f2(cpu[1].median),
            f2(cpu[2].median)
        ),
        "flat (≤ 1.2)".into(),
        Some(flat <= 1.2),
    );
}

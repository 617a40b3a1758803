//! The Python and JavaScript examples of docs/examples.md, run as written against the shared
//! cluster with the extension and postrust (the PostgREST stand-in): each step's JSON output is
//! checked against the database. Python uses the PostgREST client of supabase-py at postrust's
//! root; supabase-js adds `/rest/v1` to its project URL as Supabase's gateway serves it, so a
//! small proxy here strips that prefix before postrust (which serves RPCs at the root).
//! The transaction examples (`files_and_rows`) use a direct connection instead: psycopg 3 and
//! node-postgres. `scripts/setup.sh --examples` installs every client.

use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use supabash::capability::postgres::PostgresSigner;
use supabash_core::capability::{Operation, OperationSet};
use supabash_tests::capability::register;
use supabash_tests::client::{
    cluster, new_user, postrust_url, sign, user_claims, workspace_with, Via,
};
use supabash_tests::cluster::repo_root;
use supabash_tests::support::admin;

const ISS: &str = "https://jobs.example";
const AUD: &str = "supabash";
const ORIGIN: &str = "examples";

/// Which example, and how to run one of its steps.
#[derive(Clone, Copy)]
enum Lang {
    Python,
    JavaScript,
}

struct Example {
    lang: Lang,
    env: Vec<(&'static str, String)>,
}

fn examples_dir() -> PathBuf {
    repo_root().join("docs/examples")
}

/// A command running the example `script` in `lang` with the client scripts/setup.sh
/// --examples installs (the test fails saying so when it is missing).
fn example_command(lang: Lang, script: &str) -> Command {
    match lang {
        Lang::Python => {
            let python = repo_root().join(".venv-examples/bin/python");
            assert!(
                python.exists(),
                "the Python example's client is missing: run scripts/setup.sh --examples"
            );
            let mut c = Command::new(python);
            c.arg(examples_dir().join("python").join(script));
            c
        }
        Lang::JavaScript => {
            let js = examples_dir().join("js");
            assert!(
                js.join("node_modules/@supabase/supabase-js").exists()
                    && js.join("node_modules/pg").exists(),
                "the JavaScript example's client is missing: run scripts/setup.sh --examples"
            );
            let mut c = Command::new("node");
            c.current_dir(js);
            c.arg(script);
            c
        }
    }
}

impl Example {
    fn command(&self) -> Command {
        let script = match self.lang {
            Lang::Python => "supabash_example.py",
            Lang::JavaScript => "supabash_example.mjs",
        };
        example_command(self.lang, script)
    }

    /// Runs one step and parses the JSON object it prints; fails the test with its stderr.
    async fn step(&self, args: &[&str], extra: &[(&str, &str)]) -> Value {
        let mut c = self.command();
        c.args(args).envs(self.env.iter().map(|(k, v)| (*k, v)));
        c.envs(extra.iter().copied());
        let out: Output = tokio::task::spawn_blocking(move || c.output())
            .await
            .unwrap()
            .expect("the example runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "step {args:?} failed ({}):\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_str(stdout.trim())
            .unwrap_or_else(|e| panic!("step {args:?} prints one JSON object ({e}): {stdout}"))
    }
}

/// An HTTP proxy that serves postrust under `/rest/v1`, as Supabase's gateway does.
async fn rest_v1_proxy(upstream: &str) -> String {
    let upstream = upstream.to_owned();
    let http = reqwest::Client::new();
    let app = axum::Router::new().fallback(move |req: Request| {
        let (upstream, http) = (upstream.clone(), http.clone());
        async move {
            let path_and_query = req
                .uri()
                .path_and_query()
                .map(|p| p.as_str())
                .unwrap_or("/");
            let Some(rest) = path_and_query.strip_prefix("/rest/v1") else {
                return Response::builder().status(404).body(Body::empty()).unwrap();
            };
            let url = format!("{upstream}{rest}");
            let (parts, body) = req.into_parts();
            let body = axum::body::to_bytes(body, usize::MAX).await.unwrap();
            let mut forward = http.request(parts.method, url).body(body);
            for (name, value) in &parts.headers {
                if name != "host" {
                    forward = forward.header(name, value);
                }
            }
            let answer = forward.send().await.expect("postrust answers");
            let mut response = Response::builder().status(answer.status());
            for (name, value) in answer.headers() {
                response = response.header(name, value);
            }
            response
                .body(Body::from(answer.bytes().await.unwrap()))
                .unwrap()
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

fn service_token() -> String {
    let exp = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 3600;
    sign(&json!({ "role": "service_role", "iss": "supabase", "exp": exp }))
}

async fn example(lang: Lang) -> Example {
    let user = new_user();
    let mut env = vec![
        ("SUPABASH_USER_TOKEN", sign(&user_claims(&user))),
        ("SUPABASH_SERVICE_TOKEN", service_token()),
    ];
    match lang {
        Lang::Python => env.push(("SUPABASH_REST_URL", postrust_url().to_owned())),
        Lang::JavaScript => {
            env.push(("SUPABASE_URL", rest_v1_proxy(postrust_url()).await));
            env.push(("SUPABASE_PUBLISHABLE_KEY", "sb_publishable_example".into()));
        }
    }
    Example { lang, env }
}

/// Every step of one example, each checked against the database.
async fn run_example(lang: Lang, kid: &str) {
    let ex = example(lang).await;
    let db = admin(cluster()).await;

    // basics: create, two commits, a read, history one page at a time, a 409 handled.
    let basics = ex.step(&["basics"], &[]).await;
    let ws = basics["workspace"].as_str().unwrap().to_owned();
    let pages = basics["historyPages"].as_array().unwrap();
    assert_eq!(pages.len(), 2, "one receipt per page: {basics}");
    assert_eq!(
        basics["position"], 3,
        "the conflict was retried on the head: {basics}"
    );
    let head: String = db
        .query_one(
            "SELECT head_revision::text FROM supabash.workspaces WHERE id = $1::text::uuid",
            &[&ws],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(basics["head"], head.as_str());
    assert_eq!(
        basics["conflictHead"], pages[1][0],
        "the 409 named the head"
    );

    // retry: the workspace row lock is held for 2.5 s, so the first attempts meet
    // SUPABASH_COMMIT_COORDINATION (the commit waits 1 s for the lock) and a retry lands.
    let (locked, is_locked) = tokio::sync::oneshot::channel();
    let lock_ws = ws.clone();
    let release = tokio::spawn(async move {
        let mut locker = admin(cluster()).await;
        let tx = locker.transaction().await.unwrap();
        tx.execute(
            "SELECT 1 FROM supabash.workspaces WHERE id = $1::text::uuid FOR UPDATE",
            &[&lock_ws],
        )
        .await
        .unwrap();
        locked.send(()).unwrap();
        tokio::time::sleep(Duration::from_millis(2500)).await;
        tx.rollback().await.unwrap();
    });
    is_locked.await.unwrap();
    let retried = ex.step(&["retry", &ws], &[]).await;
    release.await.unwrap();
    assert!(
        retried["attempts"].as_u64().unwrap() >= 2,
        "the first attempt met the lock: {retried}"
    );
    let commits: i64 = db
        .query_one(
            "SELECT count(*) FROM supabash.revisions WHERE workspace_id = $1::text::uuid \
             AND transaction_id = $2::text::uuid",
            &[&ws, &retried["transactionId"].as_str().unwrap()],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(commits, 1, "retries with one transaction id commit once");

    // delegated: the host's issuer signs a capability; the example exchanges and uses it.
    let private_key = register(cluster(), kid, ISS, AUD, ORIGIN);
    let signer = PostgresSigner::new(kid, &private_key, ISS, AUD, ORIGIN).unwrap();
    let ops = OperationSet::new([Operation::Read, Operation::Write, Operation::Commit]).unwrap();
    let capability = signer.mint("job-42", &ws, &ops, 300, None).unwrap();
    let delegated = ex
        .step(&["delegated", &ws], &[("SUPABASH_CAPABILITY", &capability)])
        .await;
    assert_eq!(delegated["actor"], "delegated:job-42");
    let actor: String = db
        .query_one(
            "SELECT actor FROM supabash.revisions WHERE workspace_id = $1::text::uuid \
             AND revision_id = $2::text::uuid",
            &[&ws, &delegated["revision"].as_str().unwrap()],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(actor, "delegated:job-42");
    assert_eq!(
        delegated["files"],
        json!([
            "/bin-tools/run.sh",
            "/cache",
            "/latest",
            "/notes/hello.md",
            "/notes/retried.md"
        ])
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn python_example_runs_as_documented() {
    run_example(Lang::Python, "examples-python").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn javascript_example_runs_as_documented() {
    run_example(Lang::JavaScript, "examples-js").await;
}

/// docs/examples/{python/files_and_rows.py, js/files_and_rows.mjs} commit a file and a `tasks`
/// row in one transaction over a direct connection (psycopg 3, node-postgres): the rolled-back
/// attempt leaves no revision, no row and no lock; the same transaction id then commits both.
#[tokio::test(flavor = "multi_thread")]
async fn python_commits_files_and_rows_in_one_transaction() {
    files_and_rows(Lang::Python).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn javascript_commits_files_and_rows_in_one_transaction() {
    files_and_rows(Lang::JavaScript).await;
}

/// The transaction example in `lang`, run and checked against the database.
async fn files_and_rows(lang: Lang) {
    let db = admin(cluster()).await;
    // One test at a time creates it (the two languages' tests run in parallel).
    db.batch_execute(
        "BEGIN;
         SELECT pg_advisory_xact_lock(hashtext('examples: public.tasks'));
         CREATE TABLE IF NOT EXISTS public.tasks (
           id bigserial PRIMARY KEY, workspace_id uuid NOT NULL, revision uuid NOT NULL,
           title text NOT NULL);
         GRANT SELECT, INSERT ON public.tasks TO authenticated;
         GRANT USAGE ON SEQUENCE public.tasks_id_seq TO authenticated;
         COMMIT;",
    )
    .await
    .unwrap();
    let user = new_user();
    let ws = workspace_with(Via::Postgres, &user, &[("/task.md", "draft\n")]).await;
    // A postgres:// URL, which both drivers read.
    let dsn = cluster().dsn("authenticator");
    let port = dsn
        .split_whitespace()
        .find_map(|kv| kv.strip_prefix("port="))
        .expect("the cluster's port");
    let url = format!("postgres://authenticator@127.0.0.1:{port}/app");
    let script = match lang {
        Lang::Python => "files_and_rows.py",
        Lang::JavaScript => "files_and_rows.mjs",
    };
    let mut c = example_command(lang, script);
    c.arg(ws.id())
        .env("SUPABASH_DB_URL", url)
        .env("SUPABASH_USER_TOKEN", sign(&user_claims(&user)));
    let out = tokio::task::spawn_blocking(move || c.output())
        .await
        .unwrap()
        .expect("the example runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the transaction example failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let answer: Value = serde_json::from_str(stdout.trim()).unwrap();
    let text = |k: &str| answer[k].as_str().unwrap().to_owned();
    assert!(answer["locksDuring"].as_i64().unwrap() > 0, "{answer}");
    assert_eq!(answer["locksAfterRollback"], 0, "{answer}");
    // Neither rolled-back commit left a revision; the committed one is the head, with its
    // transaction id, and the one task row names it.
    for gone in [text("rolledBack"), text("otherCommit")] {
        let n: i64 = db
            .query_one(
                "SELECT count(*) FROM supabash.revisions WHERE revision_id = $1::text::uuid",
                &[&gone],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!(n, 0, "{gone} was rolled back");
    }
    let row = db
        .query_one(
            "SELECT w.head_revision::text, r.transaction_id::text
               FROM supabash.workspaces w
               JOIN supabash.revisions r ON r.revision_id = w.head_revision
              WHERE w.id = $1::text::uuid",
            &[&ws.id()],
        )
        .await
        .unwrap();
    assert_eq!(row.get::<_, String>(0), text("committed"));
    assert_eq!(row.get::<_, String>(1), text("transactionId"));
    let tasks: Vec<String> = db
        .query(
            "SELECT revision::text FROM public.tasks WHERE workspace_id = $1::text::uuid",
            &[&ws.id()],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(tasks, [text("committed")]);
}

/// docs/examples.md shows each example file whole, as it ran.
#[test]
fn the_docs_show_the_code_that_runs() {
    let doc = std::fs::read_to_string(repo_root().join("docs/examples.md")).unwrap();
    for (fence, file) in [
        ("```python\n", "python/supabash_example.py"),
        ("```javascript\n", "js/supabash_example.mjs"),
    ] {
        let code = std::fs::read_to_string(examples_dir().join(file)).unwrap();
        let start = doc.find(fence).expect("a fenced block") + fence.len();
        let end = start + doc[start..].find("\n```\n").expect("a closed block") + 1;
        assert!(
            doc[start..end] == code,
            "docs/examples.md must show {file} exactly as it is"
        );
    }
    // The transaction examples, in their own section.
    let section = doc
        .find("## Files and application rows in one transaction")
        .expect("the transaction section");
    for (fence, file) in [
        ("```python\n", "python/files_and_rows.py"),
        ("```javascript\n", "js/files_and_rows.mjs"),
    ] {
        let code = std::fs::read_to_string(examples_dir().join(file)).unwrap();
        let start = section + doc[section..].find(fence).expect("a fenced block") + fence.len();
        let end = start + doc[start..].find("\n```\n").expect("a closed block") + 1;
        assert!(
            doc[start..end] == code,
            "docs/examples.md must show {file} exactly as it is"
        );
    }
}

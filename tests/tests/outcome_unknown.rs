//! A commit whose answer is lost: the built `supabash` binary talks to the database (or to
//! PostgREST) through a TCP proxy that forwards everything, except that it closes the
//! connection instead of forwarding the server's answer to the commit. The commit landed, so
//! the command must say that its outcome is unknown (status 7, `outcomeUnknown` in `--json`),
//! how to check, and whether rerunning is safe; and a connection lost before the transaction's
//! COMMIT (nothing applied) must stay an ordinary retryable failure (status 6).

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use supabash_tests::client::{cluster, new_user, postrust_url, reopen, sign, user_claims};
use supabash_tests::client::{workspace_with, Via};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Which answer the proxy loses.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Lose {
    /// Postgres: the answer to the `COMMIT` that ends the transaction calling
    /// `supabash_commit` (the revision is committed).
    Commit,
    /// Postgres: the answer to the statement calling `supabash_commit`, before the
    /// transaction's `COMMIT` was sent (the server rolls everything back).
    Call,
    /// HTTP: the response to `POST /rpc/supabash_commit` (PostgREST committed before it
    /// answered).
    Http,
}

/// What the client sends that calls the commit RPC: the statement names the function quoted
/// (the catalog lookup of its signature binds the bare name, and must go through).
fn trigger(lose: Lose) -> &'static [u8] {
    match lose {
        Lose::Commit | Lose::Call => b"\"supabash_commit\"",
        Lose::Http => b"/rpc/supabash_commit",
    }
}

/// A TCP proxy to `upstream`, on a thread of its own (the tests run the binary blocking).
/// Armed, it loses one answer (`lose`), then forwards everything again.
struct Proxy {
    addr: SocketAddr,
    armed: Arc<AtomicBool>,
    lost: Arc<AtomicUsize>,
}

impl Proxy {
    fn start(upstream: SocketAddr, lose: Lose) -> Proxy {
        let armed = Arc::new(AtomicBool::new(true));
        let lost = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = std::sync::mpsc::channel();
        let (flag, count) = (armed.clone(), lost.clone());
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
                tx.send(listener.local_addr().unwrap()).unwrap();
                while let Ok((client, _)) = listener.accept().await {
                    let Ok(server) = TcpStream::connect(upstream).await else {
                        continue;
                    };
                    tokio::spawn(relay(client, server, lose, flag.clone(), count.clone()));
                }
            });
        });
        let addr = rx.recv().unwrap();
        Proxy { addr, armed, lost }
    }

    /// How many answers it lost.
    fn lost(&self) -> usize {
        self.lost.load(Ordering::SeqCst)
    }

    /// Loses one more answer.
    fn arm(&self) {
        self.armed.store(true, Ordering::SeqCst);
    }
}

/// Forwards one connection both ways until either side ends, or until the answer to lose
/// arrives: then it closes both instead of forwarding it.
async fn relay(
    client: TcpStream,
    server: TcpStream,
    lose: Lose,
    armed: Arc<AtomicBool>,
    lost: Arc<AtomicUsize>,
) {
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    // Set before the request that gets the answer to lose is forwarded, so that answer
    // (which only comes after) is never forwarded.
    let drop_answer = Arc::new(AtomicBool::new(false));
    let dropping = drop_answer.clone();
    let upstream = tokio::spawn(async move {
        let mut buf = vec![0u8; 64 * 1024];
        // The end of the previous read, so a trigger split across two reads is seen.
        let mut tail: Vec<u8> = Vec::new();
        let mut called = false;
        loop {
            let n = match client_read.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let chunk = &buf[..n];
            let mut seen = std::mem::take(&mut tail);
            seen.extend_from_slice(chunk);
            if armed.load(Ordering::SeqCst) {
                if !called && contains(&seen, trigger(lose)) {
                    called = true;
                    if lose != Lose::Commit {
                        drop_answer.store(true, Ordering::SeqCst);
                    }
                } else if called && lose == Lose::Commit && contains(chunk, b"COMMIT\0") {
                    drop_answer.store(true, Ordering::SeqCst);
                }
                if drop_answer.load(Ordering::SeqCst) {
                    armed.store(false, Ordering::SeqCst);
                }
            }
            if server_write.write_all(chunk).await.is_err() {
                break;
            }
            tail = seen[seen.len().saturating_sub(64)..].to_vec();
        }
    });
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match server_read.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if dropping.load(Ordering::SeqCst) {
            lost.fetch_add(1, Ordering::SeqCst);
            break;
        }
        if client_write.write_all(&buf[..n]).await.is_err() {
            break;
        }
    }
    upstream.abort();
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// A proxy in front of the test cluster, and a connection string through it.
fn postgres_proxy(lose: Lose) -> (Proxy, String) {
    let proxy = Proxy::start(SocketAddr::from(([127, 0, 0, 1], cluster().port)), lose);
    let dsn = format!(
        "host=127.0.0.1 port={} user=authenticator dbname=app",
        proxy.addr.port()
    );
    (proxy, dsn)
}

/// `supabash ARGS` as `user` on `workspace`, connected by `env` (nothing else of this
/// machine's settings).
fn supabash(env: &[(&str, &str)], workspace: &str, args: &[&str]) -> Command {
    let mut c = Command::new(supabash_tests::binary::supabash());
    c.args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", "/nonexistent")
        .env("SUPABASH_WORKSPACE", workspace)
        .envs(env.iter().copied());
    c
}

fn run(env: &[(&str, &str)], workspace: &str, args: &[&str]) -> Output {
    supabash(env, workspace, args).output().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The error object a `--json` failure printed on stderr.
fn error_json(out: &Output) -> Value {
    let v: Value =
        serde_json::from_slice(&out.stderr).unwrap_or_else(|e| panic!("{e}: {}", stderr(out)));
    v["error"].clone()
}

/// A directory holding `files`, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn with(files: &[(&str, &str)]) -> Scratch {
        let dir = std::env::temp_dir().join(format!("outcome-unknown-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        for (name, text) in files {
            std::fs::write(dir.join(name), text).unwrap();
        }
        Scratch(dir)
    }

    fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The causes of the workspace's revisions, oldest first (read directly, not through a proxy).
async fn causes(user: &str, id: &str) -> Vec<String> {
    let ws = reopen(Via::Postgres, user, id).await;
    let page = ws.history(None, None).await.unwrap();
    page.records
        .into_iter()
        .map(|r| r.cause.unwrap_or_default())
        .collect()
}

/// Asserts the `--json` report of a commit whose answer was lost.
fn assert_unknown(out: &Output, rerun_safe: bool) {
    assert_eq!(out.status.code(), Some(7), "{}", stderr(out));
    let error = error_json(out);
    assert_eq!(error["code"], "BACKEND", "{error}");
    assert_eq!(error["outcomeUnknown"], true, "{error}");
    assert_eq!(error["rerunSafe"], rerun_safe, "{error}");
    assert_eq!(error["exitStatus"], 7, "{error}");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains(
            "the outcome is unknown: the change may have been applied (check with `supabash log`)"
        ),
        "{message}"
    );
}

#[tokio::test]
async fn an_import_whose_commit_answer_is_lost_says_so_and_reruns_safely() {
    let user = new_user();
    let ws = workspace_with(Via::Postgres, &user, &[("/old.txt", "old\n")]).await;
    let (proxy, dsn) = postgres_proxy(Lose::Commit);
    let env = [("SUPABASH_DSN", dsn.as_str()), ("SUPABASH_SUB", &user)];
    let dir = Scratch::with(&[("new.txt", "new\n")]);
    let out = run(
        &env,
        ws.id(),
        &["import", dir.path(), "--commit", "-m", "imported", "--json"],
    );
    assert_eq!(proxy.lost(), 1, "the proxy lost the COMMIT's answer");
    assert_unknown(&out, true);
    assert!(
        error_json(&out)["message"]
            .as_str()
            .unwrap()
            .contains("rerunning is safe"),
        "{}",
        stderr(&out)
    );
    // It landed: the revision is there.
    assert_eq!(causes(&user, ws.id()).await, ["", "imported"]);
    // Rerunning stages nothing and commits nothing more.
    let again = run(&env, ws.id(), &["import", dir.path(), "--commit", "--json"]);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    let doc: Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(doc["session"]["revision"], Value::Null, "{doc}");
    assert_eq!(causes(&user, ws.id()).await, ["", "imported"]);
}

#[tokio::test]
async fn a_run_whose_commit_answer_is_lost_says_rerunning_is_not_safe() {
    let user = new_user();
    let ws = workspace_with(Via::Postgres, &user, &[("/log.txt", "one\n")]).await;
    let (proxy, dsn) = postgres_proxy(Lose::Commit);
    let env = [("SUPABASH_DSN", dsn.as_str()), ("SUPABASH_SUB", &user)];
    let out = run(
        &env,
        ws.id(),
        &[
            "run",
            "--commit",
            "-m",
            "appended",
            "--",
            "sh",
            "-c",
            "echo two >> log.txt",
        ],
    );
    assert_eq!(proxy.lost(), 1);
    assert_eq!(out.status.code(), Some(7), "{}", stderr(&out));
    let line = stderr(&out);
    assert!(line.starts_with("supabash: BACKEND: "), "{line}");
    assert!(
        line.contains("the change may have been applied (check with `supabash log`); rerunning is not safe: it runs the command again"),
        "{line}"
    );
    assert_eq!(causes(&user, ws.id()).await, ["", "appended"]);
}

#[tokio::test]
async fn an_import_whose_http_answer_is_lost_says_so() {
    let user = new_user();
    let ws = workspace_with(Via::Postgres, &user, &[("/old.txt", "old\n")]).await;
    let upstream: SocketAddr = postrust_url()
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .parse()
        .unwrap();
    let proxy = Proxy::start(upstream, Lose::Http);
    let url = format!("http://{}", proxy.addr);
    let token = sign(&user_claims(&user));
    let env = [
        ("SUPABASH_URL", url.as_str()),
        ("SUPABASH_TOKEN", &token),
        ("SUPABASH_APIKEY", "test-publishable-key"),
    ];
    let dir = Scratch::with(&[("new.txt", "new\n")]);
    let out = run(
        &env,
        ws.id(),
        &[
            "import",
            dir.path(),
            "--commit",
            "-m",
            "over http",
            "--json",
        ],
    );
    assert_eq!(proxy.lost(), 1, "the proxy lost the RPC's response");
    assert_unknown(&out, true);
    assert_eq!(causes(&user, ws.id()).await, ["", "over http"]);
}

#[tokio::test]
async fn a_connection_lost_before_commit_is_retryable_and_leaves_nothing() {
    let user = new_user();
    let ws = workspace_with(Via::Postgres, &user, &[("/old.txt", "old\n")]).await;
    let (proxy, dsn) = postgres_proxy(Lose::Call);
    let env = [("SUPABASH_DSN", dsn.as_str()), ("SUPABASH_SUB", &user)];
    let dir = Scratch::with(&[("new.txt", "new\n")]);
    let out = run(
        &env,
        ws.id(),
        &["import", dir.path(), "--commit", "-m", "never", "--json"],
    );
    assert_eq!(proxy.lost(), 1);
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    let error = error_json(&out);
    assert_eq!(error["outcomeUnknown"], false, "{error}");
    assert_eq!(error["retryable"], true, "{error}");
    assert!(error.get("rerunSafe").is_none(), "{error}");
    assert_eq!(causes(&user, ws.id()).await, [""]);
}

/// A running `supabash mount`, stopped with fusermount3 on drop.
struct Mount {
    dir: Scratch,
    child: Child,
    /// Its stdout, kept open while it runs.
    _stdout: BufReader<std::process::ChildStdout>,
}

impl Mount {
    fn start(env: &[(&str, &str)], workspace: &str) -> Mount {
        let dir = Scratch::with(&[]);
        let mut child = supabash(env, workspace, &["mount", dir.path()])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        stdout.read_line(&mut line).unwrap();
        assert!(
            line.starts_with("mounted "),
            "the mount did not start: {line}"
        );
        Mount {
            dir,
            child,
            _stdout: stdout,
        }
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("fusermount3")
            .args(["-u", self.dir.path()])
            .status();
        let _ = self.child.wait();
    }
}

#[tokio::test]
async fn a_mount_sends_a_commit_whose_answer_was_lost_again_and_gets_its_receipt() {
    if !Path::new("/dev/fuse").exists() {
        eprintln!("SKIPPED: /dev/fuse is absent on this machine; the mount case needs FUSE");
        return;
    }
    let user = new_user();
    let ws = workspace_with(Via::Postgres, &user, &[("/old.txt", "old\n")]).await;
    let (proxy, dsn) = postgres_proxy(Lose::Commit);
    let env = [("SUPABASH_DSN", dsn.as_str()), ("SUPABASH_SUB", &user)];
    let mount = Mount::start(&env, ws.id());
    std::fs::write(mount.dir.0.join("new.txt"), "new\n").unwrap();
    let commit = |message: &str| {
        let mut args = vec!["commit", "--json", "--mount", mount.dir.path()];
        args.extend(["-m", message]);
        run(&env, ws.id(), &args)
    };
    let out = commit("from the mount");
    assert_eq!(proxy.lost(), 1);
    assert_unknown(&out, true);
    assert!(
        stderr(&out).contains("the mount sends the same commit again"),
        "{}",
        stderr(&out)
    );
    // Rerun (with another message: the mount sends the first attempt again).
    let again = commit("a second try");
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    let answer: Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(answer["replayed"], true, "{answer}");
    assert_eq!(answer["receipt"]["cause"], "from the mount", "{answer}");
    // One revision, not two; and the mount commits on from it.
    assert_eq!(causes(&user, ws.id()).await, ["", "from the mount"]);
    std::fs::write(mount.dir.0.join("later.txt"), "later\n").unwrap();
    proxy.arm();
    let lost = commit("later");
    assert_unknown(&lost, true);
    let retried = commit("later");
    assert_eq!(retried.status.code(), Some(0), "{}", stderr(&retried));
    assert_eq!(
        causes(&user, ws.id()).await,
        ["", "from the mount", "later"]
    );
    drop(mount);
}

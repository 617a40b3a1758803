//! A commit over direct Postgres whose connection dies mid-call, through a test proxy that
//! understands just enough of the PostgreSQL frontend protocol (startup, then typed messages)
//! to cut the connection at a chosen point: after the `supabash_commit` call was sent, or
//! after the `COMMIT` that follows it was sent (the server commits; its answer never arrives).

use supabash_tests::client as support;

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Arc;
use supabash::workspace::CommitOptions;
use supabash::{ErrorCode, PostgresTransport, Workspace};
use support::{cluster, new_user, user_claims};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};

/// Where the proxy cuts the next connection that calls `supabash_commit`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Cut {
    /// Nothing armed.
    Off = 0,
    /// After the call was executed (Execute + Sync forwarded), before its answer: the
    /// transaction never commits.
    AfterCall = 1,
    /// After the `COMMIT` was forwarded, before its answer (the transaction commits).
    AfterCommit = 2,
}

/// What one proxy has armed (a [`Cut`]).
struct Plan {
    armed: AtomicU8,
}

struct PgProxy {
    dsn: String,
    plan: Arc<Plan>,
}

impl PgProxy {
    async fn start(upstream_port: u16) -> PgProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let plan = Arc::new(Plan {
            armed: AtomicU8::new(Cut::Off as u8),
        });
        let shared = plan.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let server = TcpStream::connect(("127.0.0.1", upstream_port))
                    .await
                    .unwrap();
                tokio::spawn(relay(client, server, shared.clone()));
            }
        });
        PgProxy {
            dsn: format!("host=127.0.0.1 port={port} user=authenticator dbname=app"),
            plan,
        }
    }

    fn cut_next_commit(&self, cut: Cut) {
        self.plan.armed.store(cut as u8, Ordering::SeqCst);
    }
}

async fn read_exact(r: &mut OwnedReadHalf, n: usize) -> Option<Vec<u8>> {
    let mut buf = vec![0u8; n];
    r.read_exact(&mut buf).await.ok()?;
    Some(buf)
}

/// Forwards frontend messages one by one. Before forwarding the message after which the
/// connection must be cut, raises `cut`; stops then or when either side closed.
async fn frontend(
    mut cr: OwnedReadHalf,
    mut sw: OwnedWriteHalf,
    plan: Arc<Plan>,
    cut_now: Arc<AtomicBool>,
) {
    // The startup message has no type byte: a length (counting itself) and the rest.
    let Some(len) = read_exact(&mut cr, 4).await else {
        return;
    };
    let n = u32::from_be_bytes(len[..4].try_into().unwrap()) as usize;
    let Some(rest) = read_exact(&mut cr, n - 4).await else {
        return;
    };
    if sw.write_all(&len).await.is_err() || sw.write_all(&rest).await.is_err() {
        return;
    }
    let (mut call_seen, mut executed) = (false, false);
    loop {
        let Some(head) = read_exact(&mut cr, 5).await else {
            return;
        };
        let n = u32::from_be_bytes(head[1..5].try_into().unwrap()) as usize;
        let Some(body) = read_exact(&mut cr, n - 4).await else {
            return;
        };
        let text = String::from_utf8_lossy(&body);
        let armed = plan.armed.load(Ordering::SeqCst);
        let is_call = text.contains("supabash_commit");
        let is_commit = head[0] == b'Q' && text.starts_with("COMMIT");
        call_seen |= armed != Cut::Off as u8 && is_call;
        executed |= call_seen && head[0] == b'E';
        let cut = call_seen
            && ((armed == Cut::AfterCall as u8 && executed && head[0] == b'S')
                || (armed == Cut::AfterCommit as u8 && is_commit));
        if cut {
            plan.armed.store(Cut::Off as u8, Ordering::SeqCst);
            cut_now.store(true, Ordering::SeqCst);
        }
        if sw.write_all(&head).await.is_err() || sw.write_all(&body).await.is_err() || cut {
            return;
        }
    }
}

/// Relays one connection. Once the cutting message is on its way, the next bytes the server
/// sends are its answer (the client sent nothing more, and everything before was delivered):
/// they are dropped and both sides closed.
async fn relay(client: TcpStream, server: TcpStream, plan: Arc<Plan>) {
    let (cr, mut cw) = client.into_split();
    let (mut sr, sw) = server.into_split();
    let cut_now = Arc::new(AtomicBool::new(false));
    let up = tokio::spawn(frontend(cr, sw, plan, cut_now.clone()));
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match sr.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(_) if cut_now.load(Ordering::SeqCst) => break,
            Ok(n) => {
                if cw.write_all(&buf[..n]).await.is_err() {
                    break;
                }
            }
        }
    }
    up.abort();
}

async fn workspace_via(proxy: &PgProxy, user: &str) -> Workspace {
    let transport = PostgresTransport::connect(&proxy.dsn, user_claims(user))
        .await
        .unwrap();
    Workspace::builder(Arc::new(transport))
        .create()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_lost_commit_answer_is_outcome_unknown_and_the_retry_replays() {
    let proxy = PgProxy::start(cluster().port).await;
    let user = new_user();
    let ws = workspace_via(&proxy, &user).await;
    ws.fs().write("/once.md", "exactly once").await.unwrap();

    proxy.cut_next_commit(Cut::AfterCommit);
    let e = ws.commit(CommitOptions::new("e2e")).await.unwrap_err();
    assert!(e.outcome_unknown() && e.is_retryable(), "{e}");
    assert_eq!(e.code(), ErrorCode::Backend);
    assert_eq!(ws.changes().unwrap().len(), 1, "the staged tree is kept");

    // The transport connects again; the same transaction id finds the commit that happened.
    let retry = ws.commit(CommitOptions::new("e2e")).await.unwrap();
    assert!(retry.replayed, "the server already had it");
    assert!(ws.changes().unwrap().is_empty());
    let history = ws.history(None, None).await.unwrap();
    assert_eq!(history.records.len(), 1, "exactly one revision");
    assert_eq!(
        history.records[0].transaction_id,
        retry.receipt.transaction_id
    );
    let other = Workspace::builder(support::transport(support::Via::Postgres, &user).await)
        .open(ws.id())
        .await
        .unwrap();
    assert_eq!(
        other.fs().read_text("/once.md").await.unwrap(),
        "exactly once"
    );
}

#[tokio::test]
async fn a_connection_lost_before_commit_leaves_nothing_and_the_retry_commits() {
    let proxy = PgProxy::start(cluster().port).await;
    let user = new_user();
    let ws = workspace_via(&proxy, &user).await;
    ws.fs().write("/once.md", "exactly once").await.unwrap();

    proxy.cut_next_commit(Cut::AfterCall);
    let e = ws.commit(CommitOptions::new("e2e")).await.unwrap_err();
    assert!(e.is_retryable(), "{e}");
    assert!(!e.outcome_unknown(), "COMMIT was never sent: {e}");
    assert!(ws.history(None, None).await.unwrap().records.is_empty());

    let retry = ws.commit(CommitOptions::new("e2e")).await.unwrap();
    assert!(!retry.replayed);
    assert_eq!(ws.history(None, None).await.unwrap().records.len(), 1);
}

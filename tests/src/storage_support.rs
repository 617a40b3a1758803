//! Support for the Storage backend tests: the shared cluster with `sql/storage.sql` applied, a
//! Storage API test server per test, sessions for fresh users, and a dump of a staged tree
//! (every entry with kind, mode, mtime and content) to compare trees across reopens.

use crate::storage_server::StorageServer;
use crate::Cluster;
use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::time::SystemTime;
use supabash::auth::Session;
use supabash::storage::{StorageApi, StorageConfig, StorageWorkspace};
use supabash::tree::FileKind;
use supabash::{Limits, StagedTree};

pub const BUCKET: &str = "workspaces";

/// This process's cluster for the Storage tests, with the Storage schema, bucket and
/// policies (no extension: the Storage backend needs none). Its watchdog stops it when the
/// process ends.
pub fn cluster() -> &'static Cluster {
    static CLUSTER: OnceLock<Cluster> = OnceLock::new();
    CLUSTER.get_or_init(|| {
        let c = Cluster::start_without_extension();
        c.psql("app", include_str!("../../sql/storage.sql"));
        c
    })
}

/// A Storage API test server over the shared cluster.
pub async fn server() -> StorageServer {
    StorageServer::start(&cluster().dsn("postgres")).await
}

/// A session for a fresh user.
pub fn new_session() -> Session {
    let user_id = uuid::Uuid::new_v4().to_string();
    Session {
        access_token: StorageServer::user_token(&user_id),
        user_id,
    }
}

pub fn config(server: &StorageServer) -> StorageConfig {
    // The fault tests reopen as another host right after a simulated crash: the dead
    // host's intent is abandoned at once (the race test keeps the default window).
    StorageConfig::new(server.url.clone(), BUCKET)
        .with_stale_intent_after(std::time::Duration::ZERO)
}

/// The Storage API on `session`'s folder with the service key, to inspect what is stored.
pub fn service_api(server: &StorageServer, session: &Session) -> StorageApi {
    folder_api(server, session, &StorageServer::service_key())
}

/// The Storage API on `session`'s folder with the user's own token.
pub fn user_api(server: &StorageServer, session: &Session) -> StorageApi {
    folder_api(server, session, &session.access_token)
}

fn folder_api(server: &StorageServer, session: &Session, token: &str) -> StorageApi {
    let prefix = format!("{}/", session.user_id);
    StorageApi::new(&server.url, BUCKET, &prefix, token, None).unwrap()
}

/// Uploads `bytes` at `key` (upsert), as a writer outside supabash would.
pub async fn put(api: &StorageApi, key: &str, bytes: &[u8], content_type: &str) {
    let bytes = bytes.to_vec();
    api.upload(key, bytes, content_type, &serde_json::json!({}), true)
        .await
        .unwrap();
}

/// Revision records stored in `session`'s folder.
pub async fn revision_records(server: &StorageServer, session: &Session) -> usize {
    service_api(server, session)
        .list(&format!("{}/.supabash/revisions/", session.user_id))
        .await
        .unwrap()
        .len()
}

pub async fn open(server: &StorageServer, session: &Session) -> StorageWorkspace {
    StorageWorkspace::open_for_session(&config(server), session, Limits::default())
        .await
        .expect("open")
}

/// One entry of a dump: kind, mode, mtime, and bytes (files) or target (links).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dumped {
    pub kind: FileKind,
    pub mode: u32,
    pub mtime_ms: i64,
    pub content: Vec<u8>,
}

fn ms(t: SystemTime) -> i64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// Every entry of the tree below `/` (except shell-owned roots).
pub async fn dump(tree: &StagedTree) -> BTreeMap<String, Dumped> {
    let mut out = BTreeMap::new();
    let mut dirs = vec!["/".to_owned()];
    while let Some(dir) = dirs.pop() {
        for e in tree.readdir(&dir).await.expect("readdir") {
            let p = if dir == "/" {
                format!("/{}", e.name)
            } else {
                format!("{dir}/{}", e.name)
            };
            if ["/tmp", "/dev", "/proc", "/bin", "/usr"].contains(&p.as_str()) {
                continue;
            }
            let st = tree.lstat(&p).await.expect("lstat");
            let content = match st.kind {
                FileKind::File => tree.read(&p).await.expect("read"),
                FileKind::Symlink => tree.readlink(&p).await.expect("readlink").into_bytes(),
                FileKind::Directory => {
                    dirs.push(p.clone());
                    Vec::new()
                }
                other => panic!("{p}: unexpected kind {other:?}"),
            };
            out.insert(
                p,
                Dumped {
                    kind: st.kind,
                    mode: st.mode,
                    mtime_ms: ms(st.mtime),
                    content,
                },
            );
        }
    }
    out
}

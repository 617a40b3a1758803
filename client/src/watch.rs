//! [`Watch`]: a workspace's change announcements as a stream (`Workspace::watch`) that
//! survives lost connections. On a direct Postgres connection it `LISTEN`s on the workspace's
//! channel (`supabash:<id>`); when that connection drops, the next [`Watch::next`] listens
//! again and first recovers what it missed from `supabash_history` (every commit after the
//! last position it gave), so no commit is skipped and none is given twice. PostgREST cannot
//! listen: there the watch polls `supabash_history` every [`Watch::poll_interval`].
//!
//! Recovered commits carry kind `commit` (a restore is one). Purges and redactions are
//! announced live only: history does not record them, so one that happened while the
//! connection was down is not recovered (the revisions and contents it removed are simply
//! gone from later reads).

use crate::error::{Result, SupabashError};
use crate::transport::{call, Listening, Transport};
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;
use supabash_core::limits::MAX_HISTORY_PAGE;
use supabash_core::rpc::listing::ListDirectory;
use supabash_core::rpc::requests::History;
use supabash_core::rpc::watch::{channel, Announcement, ChangeKind};

/// How often a watch over a transport that cannot listen asks `supabash_history`.
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(1);

/// The last commit a watch gave: where it resumes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchPoint {
    pub position: i64,
    /// The revision at `position` (the history cursor a resume starts from).
    pub revision: String,
}

/// A workspace's announcements, oldest first: see the module docs.
pub struct Watch {
    transport: Arc<dyn Transport>,
    workspace: String,
    last: Option<WatchPoint>,
    listening: Option<Listening>,
    /// False once the transport said it cannot listen: the watch polls.
    can_listen: bool,
    backlog: VecDeque<Announcement>,
    reconnects: u64,
    poll_interval: Duration,
}

impl Watch {
    /// A watch of `workspace` through `transport` giving what comes after `after` (`None`:
    /// after the head when the watch starts, read with one `supabash_list_directory` page of
    /// one entry). `Workspace::watch` is the usual way in.
    pub async fn start(
        transport: Arc<dyn Transport>,
        workspace: String,
        after: Option<WatchPoint>,
    ) -> Result<Watch> {
        let mut watch = Watch {
            transport,
            workspace,
            last: after,
            listening: None,
            can_listen: true,
            backlog: VecDeque::new(),
            reconnects: 0,
            poll_interval: DEFAULT_POLL_INTERVAL,
        };
        // Listen before reading where the head is, so nothing falls between the two.
        watch.listen().await?;
        if watch.last.is_none() {
            let page = call(
                watch.transport.as_ref(),
                &ListDirectory {
                    workspace_id: watch.workspace.clone(),
                    path: "/".into(),
                    page_size: Some(1),
                    ..Default::default()
                },
            )
            .await?;
            watch.last = page
                .position
                .zip(page.revision)
                .map(|(position, revision)| WatchPoint { position, revision });
        } else {
            watch.catch_up().await?;
        }
        Ok(watch)
    }

    /// Sets how often a watch that cannot listen (PostgREST) polls.
    pub fn poll_interval(mut self, every: Duration) -> Self {
        self.poll_interval = every;
        self
    }

    /// The last commit given (or the start point): pass it to `Workspace::watch` to resume
    /// in another process.
    pub fn last(&self) -> Option<&WatchPoint> {
        self.last.as_ref()
    }

    /// How many times the watch listened again after its connection dropped.
    pub fn reconnects(&self) -> u64 {
        self.reconnects
    }

    /// The next announcement. A dropped connection is listened to again and what it missed
    /// read from history before anything newer; an error (the database unreachable, access
    /// revoked) is returned, and the next call tries again from the same point.
    pub async fn next(&mut self) -> Result<Announcement> {
        loop {
            if let Some(a) = self.backlog.pop_front() {
                self.note(&a);
                return Ok(a);
            }
            if !self.can_listen {
                tokio::time::sleep(self.poll_interval).await;
                self.catch_up().await?;
                continue;
            }
            let Some(listening) = self.listening.as_mut() else {
                self.reconnects += 1;
                self.listen().await?;
                self.catch_up().await?;
                continue;
            };
            match listening.recv().await {
                Some(payload) => {
                    let Ok(a) = serde_json::from_str::<Announcement>(&payload) else {
                        continue;
                    };
                    if a.workspace_id == self.workspace && self.is_new(&a) {
                        self.note(&a);
                        return Ok(a);
                    }
                }
                None => self.listening = None,
            }
        }
    }

    /// Whether `a` is not one given already: a commit at or before the last position was
    /// (recovered from history, or announced twice); purges and redactions always are new.
    fn is_new(&self, a: &Announcement) -> bool {
        match (a.kind, &self.last, a.position) {
            (ChangeKind::Commit, Some(last), Some(p)) => p > last.position,
            _ => true,
        }
    }

    fn note(&mut self, a: &Announcement) {
        if let (ChangeKind::Commit, Some(position), Some(revision)) =
            (a.kind, a.position, &a.revision)
        {
            self.last = Some(WatchPoint {
                position,
                revision: revision.clone(),
            });
        }
    }

    /// Listens on the workspace's channel (or learns that the transport cannot).
    async fn listen(&mut self) -> Result<()> {
        let listening = self
            .transport
            .listen(&channel(&self.workspace))
            .await
            .map_err(|e| SupabashError::from_rpc(e, false))?;
        self.can_listen = listening.is_some();
        self.listening = listening;
        Ok(())
    }

    /// Queues, as commit announcements, the revisions after the last point that history
    /// holds (all of history when there is none; from the oldest retained revision when purge
    /// removed the last point's).
    async fn catch_up(&mut self) -> Result<()> {
        let after = self.last.as_ref().map_or(i64::MIN, |l| l.position);
        let mut cursor = self.last.as_ref().map(|l| l.revision.clone());
        let queued = self
            .backlog
            .back()
            .and_then(|a| a.position)
            .unwrap_or(after);
        loop {
            let page = call(
                self.transport.as_ref(),
                &History {
                    workspace_id: self.workspace.clone(),
                    cursor: cursor.clone(),
                    page_size: Some(MAX_HISTORY_PAGE as i32),
                    restart_if_missing: Some(true),
                    delegated_grant: None,
                },
            )
            .await?;
            for r in &page.records {
                if r.position > after.max(queued) {
                    self.backlog.push_back(Announcement {
                        workspace_id: self.workspace.clone(),
                        kind: ChangeKind::Commit,
                        position: Some(r.position),
                        revision: Some(r.revision.clone()),
                    });
                }
            }
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => return Ok(()),
            }
        }
    }
}

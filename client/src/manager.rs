//! The workspace manager: one host process handing out workspaces to sessions. `acquire(id)`
//! takes the workspace's single-writer lease in the database (so two hosts, or two processes
//! of one, never write one workspace at once) and returns a handle that derefs to the
//! [`Workspace`]; a background heartbeat renews the leases of the handles that are out;
//! `release(handle)` ends the lease and keeps the workspace cached, so the next acquire is
//! *warm* (no reload) when the cached staged tree is clean and still at the head. Idle cached
//! workspaces are evicted after `idle_ttl`, and the least recently used ones whenever the
//! cache's memory estimate passes `memory_budget_bytes`.
//!
//! What the manager's sessions keep on local disk is budgeted next to memory: with a
//! `work_dir`, [`WorkspaceHandle::materialise`] writes a session's tree into
//! `<work_dir>/<workspace id>` (for a program to run in, as `supabash run` does), and the bytes
//! every such directory holds (measured, programs' own files included) count against
//! `disk_budget_bytes`. Over it, the directories of cached workspaces go first, least recently
//! used first (evicting the workspace); a tree that does not fit next to the directories of the
//! handles that are out is refused with `QUOTA_EXCEEDED` and nothing of it is kept. The
//! host's body cache (`crate::cache`) is shared by every process of the user and bounded on its
//! own (`SUPABASH_CACHE_MAX_MB`), so it is not counted here.
//!
//! Typed [`ManagerEvent`]s report all of it for metrics and logs; they carry workspace ids,
//! never paths, contents or tokens.
//!
//! ```no_run
//! # async fn demo(transport: std::sync::Arc<dyn supabash::Transport>) -> Result<(), Box<dyn std::error::Error>> {
//! use supabash::manager::{ManagerOptions, WorkspaceManager};
//! use supabash::workspace::CommitOptions;
//! use supabash::Workspace;
//! let manager = WorkspaceManager::new(Workspace::builder(transport), ManagerOptions::new("host-a"))?;
//! let ws = manager.acquire("4b1f0a4e-0000-4000-8000-000000000000").await?;
//! ws.fs().write("/notes.md", "# session 1").await?;
//! ws.commit(CommitOptions::new("agent")).await?;
//! manager.release(ws).await?;
//! # Ok(()) }
//! ```
//!
//! The manager needs a tokio runtime (its heartbeat is a task); dropping it stops the
//! heartbeat, after which leases of handles still out expire on their own.

use crate::disk::Materialised;
use crate::error::{Result, SupabashError};
use crate::open::WorkspaceBuilder;
use crate::workspace::{acquire_lease, release_lease, Lease, Restored, Workspace};
use std::collections::{HashMap, HashSet};
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};
use supabash_core::limits::{MAX_LEASE_TTL_SECONDS, MIN_LEASE_TTL_SECONDS};
use supabash_core::ErrorCode;
use tokio::sync::broadcast;

/// How a [`WorkspaceManager`] leases, renews and caches.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ManagerOptions {
    /// This host's id, recorded as the lease holder (1 to 256 bytes).
    pub host_id: String,
    /// How long a lease lives without renewal (whole seconds, 1 s to 1 h). Default 30 s.
    pub lease_ttl: Duration,
    /// How often the leases of handles that are out are renewed; shorter than `lease_ttl`.
    /// Default 10 s.
    pub heartbeat: Duration,
    /// A released workspace idle this long is evicted (at the next acquire or sweep).
    /// Default 30 min.
    pub idle_ttl: Duration,
    /// The memory estimate (see [`crate::StagedTree::memory_bytes`]) of all managed
    /// workspaces above which cached ones are evicted, least recently used first.
    /// Default 256 MiB.
    pub memory_budget_bytes: usize,
    /// The directory the manager owns for its sessions' materialised trees (one
    /// subdirectory per workspace id, see [`WorkspaceHandle::materialise`]). Default none:
    /// materialising through the manager is refused.
    pub work_dir: Option<PathBuf>,
    /// The bytes all of `work_dir`'s session directories may hold together; above it, the
    /// directories of cached workspaces are removed (least recently used first) and a tree
    /// that still does not fit is refused. Default 1 GiB.
    pub disk_budget_bytes: u64,
}

impl ManagerOptions {
    /// The defaults, for host `host_id`.
    pub fn new(host_id: impl Into<String>) -> Self {
        ManagerOptions {
            host_id: host_id.into(),
            lease_ttl: Duration::from_secs(30),
            heartbeat: Duration::from_secs(10),
            idle_ttl: Duration::from_secs(30 * 60),
            memory_budget_bytes: 256 << 20,
            work_dir: None,
            disk_budget_bytes: 1 << 30,
        }
    }

    /// Sets the lease TTL.
    pub fn lease_ttl(mut self, ttl: Duration) -> Self {
        self.lease_ttl = ttl;
        self
    }

    /// Sets the heartbeat interval.
    pub fn heartbeat(mut self, every: Duration) -> Self {
        self.heartbeat = every;
        self
    }

    /// Sets the idle TTL of cached workspaces.
    pub fn idle_ttl(mut self, ttl: Duration) -> Self {
        self.idle_ttl = ttl;
        self
    }

    /// Sets the memory budget.
    pub fn memory_budget_bytes(mut self, bytes: usize) -> Self {
        self.memory_budget_bytes = bytes;
        self
    }

    /// Sets the directory the manager materialises its sessions' trees in.
    pub fn work_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.work_dir = Some(dir.into());
        self
    }

    /// Sets the disk budget of the sessions' directories.
    pub fn disk_budget_bytes(mut self, bytes: u64) -> Self {
        self.disk_budget_bytes = bytes;
        self
    }

    fn check(&self) -> Result<()> {
        let secs = self.lease_ttl.as_secs();
        let whole = self.lease_ttl.subsec_nanos() == 0;
        let bounds = (MIN_LEASE_TTL_SECONDS as u64)..=(MAX_LEASE_TTL_SECONDS as u64);
        if !whole || !bounds.contains(&secs) {
            return Err(invalid(format!(
                "lease_ttl must be whole seconds, {MIN_LEASE_TTL_SECONDS} to {MAX_LEASE_TTL_SECONDS}"
            )));
        }
        if self.heartbeat.is_zero() || self.heartbeat >= self.lease_ttl {
            return Err(invalid(
                "heartbeat must be shorter than lease_ttl, and not zero",
            ));
        }
        Ok(())
    }
}

fn invalid(message: impl Into<String>) -> SupabashError {
    SupabashError::new(ErrorCode::InvalidArgument, message)
}

/// Why a cached workspace left the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EvictReason {
    /// Idle longer than `idle_ttl`.
    Ttl,
    /// The memory budget was exceeded (least recently used first).
    Budget,
    /// The disk budget was exceeded: the workspace's directory was removed with it (least
    /// recently used first).
    DiskBudget,
    /// [`WorkspaceManager::evict`].
    Explicit,
}

/// What the manager did, for metrics and logs: ids, counts and durations only.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ManagerEvent {
    /// A handle was handed out; `warm` when the cached workspace was reused without a reload.
    Acquire {
        workspace_id: String,
        warm: bool,
        duration: Duration,
    },
    /// A handle came back and its lease was released.
    Release { workspace_id: String },
    /// A cached workspace was dropped.
    Evict {
        workspace_id: String,
        reason: EvictReason,
    },
    /// A sweep ended: how many cached workspaces it evicted and how many stay.
    Sweep { evicted: usize, kept: usize },
    /// The heartbeat found a handle's lease gone (expired or taken over): its commits fail
    /// `LEASE_LOST` until the handle is released and the workspace acquired again.
    LeaseLost { workspace_id: String },
    /// An acquire found the backend's head elsewhere than the cached workspace's base (another
    /// host or process committed meanwhile): the workspace was opened anew at `head_revision`.
    BackendHead {
        workspace_id: String,
        cached_revision: Option<String>,
        head_revision: Option<String>,
    },
    /// A handle staged a restore ([`WorkspaceHandle::restore`]): the revision it came from and
    /// how many changes it staged.
    Restore {
        workspace_id: String,
        source_revision: String,
        changes: usize,
    },
}

struct Cached {
    ws: Arc<Workspace>,
    last_used: Instant,
}

#[derive(Default)]
struct State {
    cached: HashMap<String, Cached>,
    /// Handles that are out, by workspace id (the heartbeat renews their leases).
    out: HashMap<String, Arc<Workspace>>,
    /// Acquires under way.
    pending: HashSet<String>,
    /// The lease tokens dropped handles left live, by workspace id: only a lease's token
    /// re-acquires it before it expires, so the next acquire presents it.
    dropped: HashMap<String, String>,
    /// The bytes each workspace's directory under `work_dir` held when last measured (or,
    /// while it is being written, the bytes reserved for it).
    disk: HashMap<String, u64>,
    /// The directories being written: their reservation stands until the write ends.
    writing: HashSet<String>,
}

struct Shared {
    builder: WorkspaceBuilder,
    options: ManagerOptions,
    state: Mutex<State>,
    events: broadcast::Sender<ManagerEvent>,
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().expect("manager state lock")
    }

    fn emit(&self, event: ManagerEvent) {
        // Nobody listening is fine.
        let _ = self.events.send(event);
    }

    /// Evicts cached workspaces idle past the TTL, then the least recently used ones while
    /// the memory estimate exceeds the budget; emits an event per eviction and returns the
    /// count.
    fn evict(&self, state: &mut State) -> usize {
        let now = Instant::now();
        let ttl = self.options.idle_ttl;
        let mut gone: Vec<(String, EvictReason)> = state
            .cached
            .iter()
            .filter(|(_, c)| now.duration_since(c.last_used) >= ttl)
            .map(|(id, _)| (id.clone(), EvictReason::Ttl))
            .collect();
        for (id, _) in &gone {
            state.cached.remove(id);
        }
        let size = |ws: &Workspace| ws.fs().memory_bytes();
        let mut total: usize = state.cached.values().map(|c| size(&c.ws)).sum::<usize>()
            + state.out.values().map(|ws| size(ws)).sum::<usize>();
        let mut by_age: Vec<(Instant, String, usize)> = state
            .cached
            .iter()
            .map(|(id, c)| (c.last_used, id.clone(), size(&c.ws)))
            .collect();
        by_age.sort();
        for (_, id, bytes) in by_age {
            if total <= self.options.memory_budget_bytes {
                break;
            }
            state.cached.remove(&id);
            total -= bytes;
            gone.push((id, EvictReason::Budget));
        }
        for (id, _) in &gone {
            self.forget_dir(state, id);
        }
        gone.extend(
            self.make_room(state, 0)
                .into_iter()
                .map(|id| (id, EvictReason::DiskBudget)),
        );
        let n = gone.len();
        for (workspace_id, reason) in gone {
            self.emit(ManagerEvent::Evict {
                workspace_id,
                reason,
            });
        }
        n
    }

    /// The directory of workspace `id` under `work_dir`, or the error saying none is set.
    fn session_dir(&self, id: &str) -> Result<PathBuf> {
        let root = self.options.work_dir.as_ref().ok_or_else(|| {
            invalid("this manager has no work_dir: set ManagerOptions::work_dir to materialise")
        })?;
        Ok(root.join(id))
    }

    /// Removes workspace `id`'s directory (if any) and forgets its bytes.
    fn forget_dir(&self, state: &mut State, id: &str) {
        if state.disk.remove(id).is_some() {
            if let Ok(dir) = self.session_dir(id) {
                // Already gone is fine; anything else is found again by the next measure.
                let _ = std::fs::remove_dir_all(dir);
            }
        }
    }

    /// Removes the directories (and the cache entries) of cached workspaces, least recently
    /// used first, until the directories hold at most the disk budget less `wanted` bytes;
    /// answers the ids evicted.
    fn make_room(&self, state: &mut State, wanted: u64) -> Vec<String> {
        let budget = self.options.disk_budget_bytes.saturating_sub(wanted);
        let mut used: u64 = state.disk.values().sum();
        let mut by_age: Vec<(Instant, String)> = state
            .cached
            .iter()
            .filter(|(id, _)| state.disk.contains_key(*id))
            .map(|(id, c)| (c.last_used, id.clone()))
            .collect();
        by_age.sort();
        let mut gone = Vec::new();
        for (_, id) in by_age {
            if used <= budget {
                break;
            }
            used -= state.disk.get(&id).copied().unwrap_or(0);
            state.cached.remove(&id);
            self.forget_dir(state, &id);
            gone.push(id);
        }
        gone
    }

    /// Reports the workspaces [`Self::make_room`] evicted.
    fn emit_disk_evictions(&self, ids: Vec<String>) {
        for workspace_id in ids {
            self.emit(ManagerEvent::Evict {
                workspace_id,
                reason: EvictReason::DiskBudget,
            });
        }
    }

    /// Measures again what every known session directory holds (programs write there too).
    fn measure(&self, state: &mut State) {
        let ids: Vec<String> = state
            .disk
            .keys()
            .filter(|id| !state.writing.contains(*id))
            .cloned()
            .collect();
        for id in ids {
            if let Ok(dir) = self.session_dir(&id) {
                state.disk.insert(id, dir_bytes(&dir));
            }
        }
    }

    /// Renews the lease of every handle that is out.
    async fn heartbeat(&self) {
        let out: Vec<(String, Arc<Workspace>)> = self
            .state()
            .out
            .iter()
            .map(|(id, ws)| (id.clone(), ws.clone()))
            .collect();
        for (workspace_id, ws) in out {
            if !ws.holds_lease() {
                continue;
            }
            // Other failures (a network blip) are retried at the next beat.
            if let Err(e) = ws.renew_lease(self.options.lease_ttl).await {
                if e.code() == ErrorCode::LeaseLost {
                    self.emit(ManagerEvent::LeaseLost { workspace_id });
                }
            }
        }
    }
}

/// Hands out leased workspaces and caches released ones (see the module docs).
pub struct WorkspaceManager {
    shared: Arc<Shared>,
    heartbeat: tokio::task::JoinHandle<()>,
}

impl Drop for WorkspaceManager {
    fn drop(&mut self) {
        self.heartbeat.abort();
    }
}

/// A workspace handed out by [`WorkspaceManager::acquire`]; derefs to the [`Workspace`].
/// Give it back with [`WorkspaceManager::release`]. Dropped without a release, its lease is
/// no longer renewed (it expires) and the workspace is not cached.
pub struct WorkspaceHandle {
    ws: Arc<Workspace>,
    shared: Weak<Shared>,
    lease: Lease,
    returned: bool,
}

impl WorkspaceHandle {
    /// The lease this handle holds as it was acquired (holder and times; its token is
    /// presented by every commit of the workspace).
    pub fn lease(&self) -> &Lease {
        &self.lease
    }

    /// Writes the staged tree into this session's directory, `<work_dir>/<workspace id>`
    /// (what an earlier call wrote there is replaced), within the manager's disk budget: the
    /// directories of cached workspaces are removed first when the tree needs their room
    /// ([`EvictReason::DiskBudget`]); a tree that does not fit next to the directories of the
    /// handles that are out is refused with `QUOTA_EXCEEDED` before anything is written. A
    /// program's own files in the directory count from the next measure (release, sweep, or
    /// this call again). Refused with `INVALID_ARGUMENT` when the manager has no `work_dir`.
    pub async fn materialise(&self) -> Result<(PathBuf, Materialised)> {
        let shared = self
            .shared
            .upgrade()
            .ok_or_else(|| invalid("the manager is gone"))?;
        let id = self.ws.id().to_owned();
        let dir = shared.session_dir(&id)?;
        self.ws.fs().load_all().await?;
        let need: u64 = self
            .ws
            .fs()
            .entries()
            .iter()
            .map(|(_, e)| match e {
                crate::tree::sync::Entry::File { size, .. } => *size,
                _ => 0,
            })
            .sum();
        let evicted = {
            let mut state = shared.state();
            shared.forget_dir(&mut state, &id);
            let evicted = shared.make_room(&mut state, need);
            let used: u64 = state.disk.values().sum();
            if used.saturating_add(need) > shared.options.disk_budget_bytes {
                drop(state);
                shared.emit_disk_evictions(evicted);
                return Err(SupabashError::new(
                    ErrorCode::QuotaExceeded,
                    format!(
                        "the manager's disk budget ({} bytes) cannot hold this workspace's tree ({need} bytes) next to the {used} bytes the directories of its other sessions keep: release handles, or raise ManagerOptions::disk_budget_bytes",
                        shared.options.disk_budget_bytes
                    ),
                ));
            }
            // Counted before the write, so concurrent materialisations see the room taken.
            state.disk.insert(id.clone(), need);
            state.writing.insert(id.clone());
            evicted
        };
        shared.emit_disk_evictions(evicted);
        let written = self.write_session_dir(&dir).await;
        let measured = dir.clone();
        // A directory that cannot be measured counts as its reservation until the next measure.
        let bytes = crate::disk::blocking(move || Ok(dir_bytes(&measured)))
            .await
            .unwrap_or(need);
        let mut state = shared.state();
        state.writing.remove(&id);
        state.disk.insert(id.clone(), bytes);
        match written {
            Ok(m) => Ok((dir, m)),
            Err(e) => {
                shared.forget_dir(&mut state, &id);
                Err(e)
            }
        }
    }

    /// Writes the staged tree into `dir`, emptied first (an earlier process or a program may
    /// have left files there).
    async fn write_session_dir(&self, dir: &Path) -> Result<Materialised> {
        if let Some(root) = dir.parent() {
            let root = root.to_owned();
            let stale = dir.to_owned();
            crate::disk::blocking(move || {
                let _ = std::fs::remove_dir_all(&stale);
                std::fs::create_dir_all(&root).map_err(|e| {
                    crate::disk::local_error(&root.display().to_string(), "the work directory", e)
                })
            })
            .await?;
        }
        self.ws.materialise(dir).await
    }

    /// [`Workspace::restore`], reported as [`ManagerEvent::Restore`] when it staged.
    pub async fn restore(&self, revision: &str) -> Result<Restored> {
        let restored = self.ws.restore(revision).await?;
        if let Some(shared) = self.shared.upgrade() {
            shared.emit(ManagerEvent::Restore {
                workspace_id: self.ws.id().to_owned(),
                source_revision: restored.source_revision.clone(),
                changes: restored.changes.len(),
            });
        }
        Ok(restored)
    }
}

impl std::fmt::Debug for WorkspaceHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkspaceHandle")
            .field("workspace_id", &self.ws.id())
            .finish_non_exhaustive()
    }
}

impl Deref for WorkspaceHandle {
    type Target = Workspace;
    fn deref(&self) -> &Workspace {
        &self.ws
    }
}

impl Drop for WorkspaceHandle {
    fn drop(&mut self) {
        if self.returned {
            return;
        }
        if let Some(shared) = self.shared.upgrade() {
            let mut state = shared.state();
            state.out.remove(self.ws.id());
            shared.forget_dir(&mut state, self.ws.id());
            state
                .dropped
                .insert(self.ws.id().to_owned(), self.lease.token.clone());
        }
    }
}

/// Clears an acquire's pending mark however the acquire ends (even if its future is dropped).
struct PendingMark<'a> {
    shared: &'a Shared,
    id: &'a str,
}

impl Drop for PendingMark<'_> {
    fn drop(&mut self) {
        self.shared.state().pending.remove(self.id);
    }
}

impl WorkspaceManager {
    /// A manager opening workspaces with `builder` (its transport, limits and codec). Must be
    /// called inside a tokio runtime. Fails on options out of bounds.
    pub fn new(builder: WorkspaceBuilder, options: ManagerOptions) -> Result<Self> {
        options.check()?;
        let every = options.heartbeat;
        let shared = Arc::new(Shared {
            builder,
            options,
            state: Mutex::default(),
            events: broadcast::channel(1024).0,
        });
        let weak = Arc::downgrade(&shared);
        let heartbeat = tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            tick.tick().await;
            loop {
                tick.tick().await;
                let Some(shared) = weak.upgrade() else { break };
                shared.heartbeat().await;
            }
        });
        Ok(WorkspaceManager { shared, heartbeat })
    }

    /// Receives every event from now on (a slow receiver loses the oldest, see
    /// [`broadcast`]).
    pub fn subscribe(&self) -> broadcast::Receiver<ManagerEvent> {
        self.shared.events.subscribe()
    }

    /// Takes workspace `id`'s lease for this host and hands out a handle: warm (the cached
    /// workspace, no reload) when its staged tree is clean and still at the head, cold (opened
    /// anew) otherwise. Fails `LEASE_HELD` (retryable) while another holder's lease lives, and
    /// also while a handle for `id` is already out in this process or being acquired.
    /// Evicts idle cached workspaces first.
    pub async fn acquire(&self, id: &str) -> Result<WorkspaceHandle> {
        let started = Instant::now();
        let shared = &self.shared;
        let (cached, dropped) = {
            let mut state = shared.state();
            if state.out.contains_key(id) || !state.pending.insert(id.to_owned()) {
                return Err(SupabashError::new(
                    ErrorCode::LeaseHeld,
                    format!("workspace {id} is already acquired in this process: release its handle first"),
                ));
            }
            shared.evict(&mut state);
            (state.cached.remove(id), state.dropped.remove(id))
        };
        let _mark = PendingMark { shared, id };
        let o = &shared.options;
        let lease = match acquire_lease(
            shared.builder.transport().as_ref(),
            id,
            &o.host_id,
            o.lease_ttl,
            dropped.as_deref(),
        )
        .await
        {
            Ok(lease) => lease,
            Err(e) => {
                let mut state = shared.state();
                if let Some(c) = cached {
                    state.cached.insert(id.to_owned(), c);
                }
                if let Some(t) = dropped {
                    state.dropped.insert(id.to_owned(), t);
                }
                return Err(e);
            }
        };
        let (ws, warm) = match self.leased(id, cached, &lease).await {
            Ok(opened) => opened,
            Err(e) => {
                // Best effort: otherwise the lease expires by itself.
                let transport = shared.builder.transport();
                let _ = release_lease(transport.as_ref(), id, &lease.token).await;
                return Err(e);
            }
        };
        ws.adopt_lease(&lease);
        shared.state().out.insert(id.to_owned(), ws.clone());
        shared.emit(ManagerEvent::Acquire {
            workspace_id: id.to_owned(),
            warm,
            duration: started.elapsed(),
        });
        Ok(WorkspaceHandle {
            ws,
            shared: Arc::downgrade(shared),
            lease,
            returned: false,
        })
    }

    /// The workspace under a fresh `lease`: the cached one when its tree is clean and at the
    /// lease's head (warm), else opened anew (cold). While the lease lives nobody else
    /// commits, so the head a cold open reads is the lease's.
    async fn leased(
        &self,
        id: &str,
        cached: Option<Cached>,
        lease: &Lease,
    ) -> Result<(Arc<Workspace>, bool)> {
        if let Some(c) = cached {
            if c.ws.base_revision() == lease.head_revision && c.ws.is_clean()? {
                return Ok((c.ws, true));
            }
            if c.ws.base_revision() != lease.head_revision {
                self.shared.emit(ManagerEvent::BackendHead {
                    workspace_id: id.to_owned(),
                    cached_revision: c.ws.base_revision(),
                    head_revision: lease.head_revision.clone(),
                });
            }
        }
        let ws = self.shared.builder.clone().open(id).await?;
        Ok((Arc::new(ws), false))
    }

    /// Gives a handle back: releases its lease and keeps the workspace cached (then evicts
    /// over budget). The workspace is cached even when the release fails (the lease then
    /// expires by itself); the error is returned.
    pub async fn release(&self, mut handle: WorkspaceHandle) -> Result<()> {
        handle.returned = true;
        let ws = handle.ws.clone();
        drop(handle);
        let released = ws.release_lease().await;
        let id = ws.id().to_owned();
        {
            let mut state = self.shared.state();
            state.out.remove(&id);
            state.cached.insert(
                id.clone(),
                Cached {
                    ws,
                    last_used: Instant::now(),
                },
            );
            self.shared.emit(ManagerEvent::Release { workspace_id: id });
            self.shared.measure(&mut state);
            self.shared.evict(&mut state);
        }
        released.map(|_| ())
    }

    /// Measures the sessions' directories again, then evicts cached workspaces idle past the
    /// TTL and, while over the memory or the disk budget, the least recently used; emits
    /// [`ManagerEvent::Sweep`] and returns how many went.
    pub fn sweep(&self) -> usize {
        let mut state = self.shared.state();
        self.shared.measure(&mut state);
        let evicted = self.shared.evict(&mut state);
        let kept = state.cached.len();
        self.shared.emit(ManagerEvent::Sweep { evicted, kept });
        evicted
    }

    /// Drops cached workspace `id`; false when it is not cached (a handle that is out is
    /// never evicted).
    pub fn evict(&self, id: &str) -> bool {
        let mut state = self.shared.state();
        let gone = state.cached.remove(id).is_some();
        if gone {
            self.shared.forget_dir(&mut state, id);
            drop(state);
            self.shared.emit(ManagerEvent::Evict {
                workspace_id: id.to_owned(),
                reason: EvictReason::Explicit,
            });
        }
        gone
    }

    /// The bytes the sessions' directories under `work_dir` held when last measured.
    pub fn disk_bytes(&self) -> u64 {
        self.shared.state().disk.values().sum()
    }

    /// The ids of the cached (released) workspaces, sorted.
    pub fn cached(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.shared.state().cached.keys().cloned().collect();
        ids.sort();
        ids
    }
}

/// The bytes of the regular files under `dir` (symbolic links are not followed; a missing
/// directory holds none).
fn dir_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => dir_bytes(&e.path()),
            Ok(t) if t.is_file() => e.metadata().map_or(0, |m| m.len()),
            _ => 0,
        })
        .sum()
}

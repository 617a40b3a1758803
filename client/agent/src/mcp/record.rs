//! The audit record of every tool call (`supabash::audit`): [`RecordingFs`] notes which paths
//! a call changed and how many bytes it wrote (per call, through a task-local log, so
//! concurrent calls do not mix), and [`AuditTargets`] stages one action per call in the audit
//! queue of each workspace it concerns.

use crate::AgentFs;
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;
use supabash::audit::{Action, ActionKind, ActionOutcome, AuditQueue};
use supabash::tree::{DirEntry, FsResult, Stat};

/// What one call changed.
#[derive(Debug, Default)]
pub(crate) struct Touched {
    pub(crate) paths: BTreeSet<String>,
    pub(crate) bytes: u64,
}

tokio::task_local! {
    static TOUCHED: Arc<Mutex<Touched>>;
}

/// Runs `call` with a fresh change log and returns what it changed through a [`RecordingFs`].
pub(crate) async fn tracking<T>(call: impl std::future::Future<Output = T>) -> (T, Touched) {
    let log = Arc::new(Mutex::new(Touched::default()));
    let out = TOUCHED.scope(log.clone(), call).await;
    let touched = std::mem::take(&mut *log.lock().unwrap_or_else(|p| p.into_inner()));
    (out, touched)
}

fn note(paths: &[&str], bytes: usize) {
    let _ = TOUCHED.try_with(|log| {
        let mut log = log.lock().unwrap_or_else(|p| p.into_inner());
        // The shell-owned roots (`/tmp`, ...) are never committed: no change of the tree.
        log.paths.extend(
            paths
                .iter()
                .filter(|p| !supabash_core::path::is_shell_owned(p))
                .map(|p| (*p).to_owned()),
        );
        log.bytes += bytes as u64;
    });
}

/// An [`AgentFs`] that forwards everything and notes, for the tool call running, every path it
/// is asked to change (whether or not the change succeeds; a directory only when it did not
/// exist) and the bytes written.
pub struct RecordingFs(pub Arc<dyn AgentFs>);

#[async_trait::async_trait]
impl AgentFs for RecordingFs {
    async fn read(&self, path: &str) -> FsResult<Vec<u8>> {
        self.0.read(path).await
    }
    async fn write(&self, path: &str, data: Vec<u8>) -> FsResult<()> {
        note(&[path], data.len());
        self.0.write(path, data).await
    }
    async fn append(&self, path: &str, data: Vec<u8>) -> FsResult<()> {
        note(&[path], data.len());
        self.0.append(path, data).await
    }
    async fn exists(&self, path: &str) -> bool {
        self.0.exists(path).await
    }
    async fn stat(&self, path: &str) -> FsResult<Stat> {
        self.0.stat(path).await
    }
    async fn lstat(&self, path: &str) -> FsResult<Stat> {
        self.0.lstat(path).await
    }
    async fn mkdir(&self, path: &str, recursive: bool) -> FsResult<()> {
        // Tools create parents they may already have: only a new directory is a change.
        if !self.0.exists(path).await {
            note(&[path], 0);
        }
        self.0.mkdir(path, recursive).await
    }
    async fn readdir(&self, path: &str) -> FsResult<Vec<DirEntry>> {
        self.0.readdir(path).await
    }
    async fn rm(&self, path: &str, recursive: bool, force: bool) -> FsResult<()> {
        note(&[path], 0);
        self.0.rm(path, recursive, force).await
    }
    async fn cp(&self, src: &str, dst: &str, recursive: bool) -> FsResult<()> {
        note(&[dst], 0);
        self.0.cp(src, dst, recursive).await
    }
    async fn mv(&self, src: &str, dst: &str) -> FsResult<()> {
        note(&[src, dst], 0);
        self.0.mv(src, dst).await
    }
    async fn chmod(&self, path: &str, mode: u32) -> FsResult<()> {
        note(&[path], 0);
        self.0.chmod(path, mode).await
    }
    async fn utimes(&self, path: &str, mtime: SystemTime) -> FsResult<()> {
        note(&[path], 0);
        self.0.utimes(path, mtime).await
    }
    async fn symlink(&self, target: &str, link: &str) -> FsResult<()> {
        note(&[link], 0);
        self.0.symlink(target, link).await
    }
    async fn readlink(&self, path: &str) -> FsResult<String> {
        self.0.readlink(path).await
    }
    async fn realpath(&self, path: &str) -> FsResult<String> {
        self.0.realpath(path).await
    }
    fn check_writable(&self, path: &str) -> FsResult<()> {
        self.0.check_writable(path)
    }
    async fn search_on_server(
        &self,
        pattern: &str,
        dir: &str,
        ignore_case: bool,
        max: usize,
    ) -> Option<supabash::Result<supabash::tree::ServerSearch>> {
        self.0
            .search_on_server(pattern, dir, ignore_case, max)
            .await
    }
    async fn prefetch(&self, paths: &[String]) {
        self.0.prefetch(paths).await
    }
}

/// The audit queues tool calls are recorded in: one workspace served at `/`, or several, each
/// mounted at `/<label>`.
#[derive(Clone, Default)]
pub struct AuditTargets(Vec<(String, AuditQueue)>);

impl AuditTargets {
    /// One workspace served at `/`.
    pub fn single(queue: AuditQueue) -> Self {
        AuditTargets(vec![(String::new(), queue)])
    }

    /// Workspaces mounted side by side: `(mount point, queue)`, e.g. `("/docs", q)`.
    pub fn mounted(targets: Vec<(String, AuditQueue)>) -> Self {
        AuditTargets(targets)
    }

    /// Stages one action per concerned workspace: each whose tree the call changed (with its
    /// own paths, relative to its mount), or every one when it changed none.
    pub(crate) fn record(&self, action: Action, touched: &Touched) {
        let of = |prefix: &str| -> Vec<String> {
            touched
                .paths
                .iter()
                .filter_map(|p| {
                    if prefix.is_empty() {
                        return Some(p.clone());
                    }
                    let rest = p.strip_prefix(prefix)?;
                    (rest.is_empty() || rest.starts_with('/'))
                        .then(|| if rest.is_empty() { "/" } else { rest }.to_owned())
                })
                .collect()
        };
        let touched_any = self.0.iter().any(|(p, _)| !of(p).is_empty());
        for (prefix, queue) in &self.0 {
            let paths = of(prefix);
            if touched_any && paths.is_empty() {
                continue;
            }
            queue.record(action.clone().with_paths(paths));
        }
    }
}

/// The kind of a tool's actions.
pub(crate) fn kind(tool: &str, known: bool) -> ActionKind {
    match tool {
        _ if !known => ActionKind::McpTool,
        "bash" => ActionKind::Bash,
        "apply_patch" => ActionKind::ApplyPatch,
        crate::mcp::host::COMMIT
        | crate::mcp::host::HISTORY
        | crate::mcp::host::DIFF
        | crate::mcp::host::RESTORE
        | crate::mcp::host::CHECKPOINT => ActionKind::McpTool,
        _ => ActionKind::FileTool,
    }
}

/// How a tool call ended: an error's code, a policy denial's (redacted) message as the
/// reason; a bash command that exited non-zero is an error `EXIT_<status>` (`TIMEOUT` when
/// stopped at its deadline).
pub(crate) fn outcome(
    result: &Result<serde_json::Value, supabash::SupabashError>,
    redact: impl Fn(&str) -> String,
) -> ActionOutcome {
    match result {
        Err(e) if e.code() == supabash::ErrorCode::PolicyDenied => ActionOutcome::Denied {
            reason: redact(e.message()),
        },
        Err(e) => ActionOutcome::Error {
            code: e.code().to_string(),
        },
        Ok(v) if v.get("timed_out").and_then(|t| t.as_bool()) == Some(true) => {
            ActionOutcome::Error {
                code: "TIMEOUT".into(),
            }
        }
        Ok(v) => match v.get("exit_code").and_then(|c| c.as_i64()) {
            Some(code) if code != 0 => ActionOutcome::Error {
                code: format!("EXIT_{code}"),
            },
            _ => ActionOutcome::Ok,
        },
    }
}

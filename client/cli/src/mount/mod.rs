//! `supabash mount DIR --workspace ID`: the workspace's staged tree as a FUSE filesystem, so
//! any program (git, compilers, editors) works on it. Reads are lazy and verified; changes are
//! staged, and only `supabash commit --mount DIR` (another process) or `--commit-on-unmount`
//! commits them. A revision (`--revision`) or `--read-only` mount answers `EROFS` to writes.
//! Unmount with `fusermount3 -u DIR`, Ctrl-C or SIGTERM.

pub mod control;
mod fuse;
pub mod summary;

use crate::connect::Target;
use crate::mount::fuse::kernel::Kernel;
use crate::mount::fuse::MountFs;
use control::Control;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use supabash::workspace::CommitOptions;
use supabash::{Limits, OpenMode, Workspace};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Arguments of `supabash mount`.
#[derive(Debug, clap::Args)]
pub struct MountArgs {
    #[command(flatten)]
    pub target: Target,
    /// The directory to mount on (an existing directory).
    pub dir: PathBuf,
    /// Mount this revision, read-only, instead of the staged tree.
    #[arg(long, conflicts_with = "commit_on_unmount")]
    pub revision: Option<String>,
    /// Mount the staged tree read-only.
    #[arg(long, conflicts_with = "commit_on_unmount")]
    pub read_only: bool,
    /// Commit the staged changes when the mount ends.
    #[arg(long)]
    pub commit_on_unmount: bool,
    /// The cause of the commit made at unmount.
    #[arg(short = 'm', long, requires = "commit_on_unmount")]
    pub message: Option<String>,
    /// The actor commits record.
    #[arg(long, default_value = "supabash-mount")]
    pub actor: String,
    #[command(flatten)]
    pub exclude: crate::flags::ExcludeFlags,
    /// Most committable files the staged tree may hold.
    #[arg(long, default_value_t = Limits::default().max_files)]
    pub max_files: usize,
    /// Largest total size of committable files, in MiB.
    #[arg(long, default_value_t = Limits::default().max_staged_bytes >> 20)]
    pub max_staged_mib: usize,
}

/// Why a mount cannot start here, if FUSE is missing.
fn fuse_missing() -> Option<String> {
    let advice = "use `supabash run --workspace ID -- CMD ...`, which needs no FUSE";
    if !cfg!(target_os = "linux") {
        return Some(format!("FUSE mounts are supported on Linux only; {advice}"));
    }
    if !Path::new("/dev/fuse").exists() {
        return Some(format!(
            "FUSE is not available here (/dev/fuse is missing: load the fuse module or give the container the device); {advice}"
        ));
    }
    None
}

/// The uid and gid the mount's files show: the mount directory's owner.
fn owner(dir: &Path) -> std::io::Result<(u32, u32)> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(dir)?;
    Ok((meta.uid(), meta.gid()))
}

/// Mounts `kernel` at `dir` on a thread of its own; returns a receiver that yields when the
/// session ends (unmounted by anyone).
pub(crate) fn start(
    kernel: Kernel,
    dir: &Path,
    read_only: bool,
) -> Result<tokio::sync::oneshot::Receiver<std::io::Result<()>>, BoxError> {
    use fuser::MountOption;
    let mut config = fuser::Config::default();
    config.mount_options = vec![
        MountOption::FSName("supabash".into()),
        MountOption::Subtype("supabash".into()),
        MountOption::NoDev,
        MountOption::NoSuid,
        if read_only {
            MountOption::RO
        } else {
            MountOption::RW
        },
    ];
    // Requests are served concurrently: one waiting on the network holds up no other.
    config.n_threads = Some(8);
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let (done_tx, done_rx) = tokio::sync::oneshot::channel();
    let dir = dir.to_owned();
    std::thread::Builder::new()
        .name("supabash-fuse".into())
        .spawn(move || match fuser::Session::new(kernel, &dir, &config) {
            Ok(session) => {
                let _ = ready_tx.send(Ok(()));
                let _ = done_tx.send(session.run());
            }
            Err(e) => {
                let _ = ready_tx.send(Err(e));
            }
        })?;
    ready_rx
        .recv()
        .map_err(|_| "the FUSE session thread ended before mounting")?
        .map_err(|e| format!("mounting failed: {e} (is fusermount3 installed?)"))?;
    Ok(done_rx)
}

/// Lists every directory of the mount at `dir` once, in the background, right after it
/// starts (a tree listed whole only, so no listing waits on the network): with `READDIRPLUS`
/// the kernel then holds every entry with its attributes, and the first program that walks
/// the tree (`git status` after a remount) finds them without a `lookup` each. The walk goes
/// in path order, as git looks at its index, and prefetches no bodies.
fn warm(fs: Arc<MountFs>, dir: PathBuf) {
    let walk = move || {
        #[allow(unsafe_code)]
        // SAFETY: gettid(2) only answers the calling thread's id.
        let tid = unsafe { libc::gettid() };
        fs.set_walker(u32::try_from(tid).unwrap_or(0));
        let mut stack = vec![dir];
        while let Some(d) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&d) else {
                continue;
            };
            let mut dirs: Vec<PathBuf> = entries
                .flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.path())
                .collect();
            dirs.sort_unstable_by(|a, b| b.cmp(a));
            stack.extend(dirs);
        }
        fs.set_walker(0);
    };
    let _ = std::thread::Builder::new()
        .name("supabash-warm".into())
        .spawn(walk);
}

/// Unmounts `dir` (as `fusermount3 -u` does; a busy mount stays and can be retried).
pub(crate) fn unmount(dir: &Path) -> Result<(), String> {
    let out = std::process::Command::new("fusermount3")
        .arg("-u")
        .arg(dir)
        .output()
        .map_err(|e| format!("fusermount3: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    Err(String::from_utf8_lossy(&out.stderr).trim().to_owned())
}

/// Waits for Ctrl-C or SIGTERM.
async fn stop_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let Ok(mut term) = signal(SignalKind::terminate()) else {
        let _ = tokio::signal::ctrl_c().await;
        return;
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}

/// `supabash mount`.
pub async fn run(args: MountArgs) -> Result<(), BoxError> {
    if let Some(reason) = fuse_missing() {
        return Err(reason.into());
    }
    let dir =
        std::fs::canonicalize(&args.dir).map_err(|e| format!("{}: {e}", args.dir.display()))?;
    if !dir.is_dir() {
        return Err(format!("{} is not a directory", dir.display()).into());
    }
    let limits = Limits::default()
        .with_max_files(args.max_files)
        .with_max_staged_bytes(args.max_staged_mib << 20);
    let (transport, id) = args.target.open().await?;
    // A tree the mount could hold (within its file limit) is listed whole, in one request,
    // as `run` does: afterwards no lookup waits on a directory listing. A larger one (a
    // read-only mount of a huge workspace) opens lazily. A revision mount serves the
    // revision's manifest (`tree_at`), never the head's tree: that one opens lazily.
    let mode = match &args.revision {
        Some(_) => OpenMode::Lazy,
        None => OpenMode::EagerUpTo(args.max_files as u64),
    };
    let ws = Arc::new(
        Workspace::builder(transport)
            .limits(limits)
            .open_mode(mode)
            .open(&id)
            .await?,
    );
    let read_only = args.read_only || args.revision.is_some();
    crate::connect::body_cache::attach(&ws);
    // What the ignore list leaves out stays in the mount, out of every commit.
    let ignore_file = match ws
        .fs()
        .read(crate::run::ignore_list::TREE_IGNORE_FILE)
        .await
    {
        Ok(bytes) => Some(String::from_utf8_lossy(&bytes).into_owned()),
        Err(_) => None,
    };
    if let Some(exclude) = crate::run::ignore_list::build(ignore_file.as_deref(), &args.exclude)? {
        ws.fs().keep_local(exclude);
    }
    let tree = match &args.revision {
        Some(r) => Arc::new(ws.tree_at(r).await?),
        None => ws.fs().clone(),
    };
    let fs = Arc::new(MountFs::new(tree, read_only, owner(&dir)?));
    let control = Control::bind(&dir).await?;
    let kernel = Kernel {
        fs: fs.clone(),
        runtime: tokio::runtime::Handle::current(),
    };
    let mut done = start(kernel, &dir, read_only)?;
    if fs.fully_listed() {
        warm(fs.clone(), dir.clone());
    }
    if !read_only {
        tokio::spawn(crate::mount::fuse::write_behind(Arc::downgrade(&fs)));
    }
    let session = control::Session {
        read_only,
        actor: args.actor.clone(),
    };
    let serving = tokio::spawn(control.serve(fs.clone(), ws.clone(), session));
    let what = match &args.revision {
        Some(r) => format!("revision {r} (read-only)"),
        None if read_only => "the staged tree (read-only)".to_owned(),
        None => "the staged tree".to_owned(),
    };
    eprintln!(
        "supabash mount: workspace {} {what} at {}; commit with `supabash commit --mount {}`, unmount with `fusermount3 -u {}` or Ctrl-C",
        ws.id(),
        dir.display(),
        dir.display(),
        dir.display()
    );
    control::say(&format!("mounted {}\n", dir.display()));
    let ended = loop {
        tokio::select! {
            ended = &mut done => break ended,
            _ = stop_signal() => {
                if let Err(e) = unmount(&dir) {
                    eprintln!("supabash mount: unmount failed ({e}); still mounted, close what uses {} and try again", dir.display());
                }
            }
        }
    };
    serving.abort();
    if let Ok(Err(e)) = &ended {
        eprintln!("supabash mount: the FUSE session ended with an error: {e}");
    }
    finish(&args, &fs, &ws, read_only).await
}

/// The end of a session: the commit at unmount when asked, and the summary line.
async fn finish(
    args: &MountArgs,
    fs: &MountFs,
    ws: &Workspace,
    read_only: bool,
) -> Result<(), BoxError> {
    let mut outcome: Result<(), BoxError> = Ok(());
    if args.commit_on_unmount {
        let mut options = CommitOptions::new(args.actor.clone());
        if let Some(m) = &args.message {
            options = options.with_cause(m.clone());
        }
        match fs.commit(ws, options, true).await {
            Ok(result) => control::print_receipt(&result),
            Err(e) => {
                // The error itself, so its report keeps the code and an unknown outcome.
                let message = format!("the commit at unmount failed: {}", e.message());
                outcome = Err(Box::new(e.with_message(message)));
            }
        }
    }
    let staged = if read_only {
        0
    } else {
        fs.changes(ws).await.map(|c| c.len()).unwrap_or(0)
    };
    if staged > 0 {
        eprintln!("supabash mount: {staged} staged change(s) were not committed and are discarded with the session");
        // The session's audit record stays visible, marked discarded.
        ws.record(fs.take_session_action().await);
        if let Err(e) = ws.discard().await {
            eprintln!("supabash mount: the session's audit record could not be written: {e}");
        }
    }
    let report = fs.summary().await.report(staged > 0);
    eprintln!(
        "supabash mount: session {}",
        serde_json::to_string(&report).unwrap_or_default()
    );
    outcome
}

#[cfg(test)]
mod tests;

//! `supabash run`: materialises a workspace's staged tree (or a revision) in a private temporary
//! directory, runs a command there with a cleared environment and a timeout, stages exactly
//! what the command changed (when it succeeded, or with `--stage-on-failure`), prints the
//! staged change list and commits only with `--commit`.
//!
//! The outcome of a session (command, exit status, duration, paths touched, bytes changed) is
//! known in one place, [`SessionOutcome`], which [`run`] builds once.

pub mod ignore_list;
pub mod transfer;

use crate::connect::Target;
use crate::exit::usage;
use crate::flags::CommitFlags;
use serde::Serialize;
use serde_json::json;
use std::ffi::OsString;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use supabash::audit::{Action, ActionKind, ActionOutcome};
use supabash::disk::{MaterialiseOptions, Synced};
use supabash::Workspace;
use supabash_agent::redact::Redactor;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The exit status of `supabash run` when the command timed out (as `timeout(1)` uses).
pub const EXIT_TIMED_OUT: i32 = 124;
/// The exit status after an interrupt (SIGINT, as a shell reports it).
pub const EXIT_INTERRUPTED: i32 = 130;
/// The exit status when the command could not be started (as a shell uses).
pub const EXIT_NOT_STARTED: i32 = 127;

/// Arguments of `supabash run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub target: Target,
    /// Materialise this revision instead of the staged tree (what the command changes is
    /// staged onto the staged tree all the same).
    #[arg(long)]
    pub revision: Option<String>,
    /// Kill the command's whole process group after this long (e.g. 90s, 10m, 1h).
    #[arg(long, default_value = "10m", value_parser = parse_duration)]
    pub timeout: Duration,
    /// Pass this variable of supabash's environment to the command (repeatable). Names and
    /// values that look like credentials (and SUPABASH_*) are refused.
    #[arg(long = "env", value_name = "NAME")]
    pub env: Vec<String>,
    /// Stage the changes of a command that failed too (default: nothing is staged).
    #[arg(long)]
    pub stage_on_failure: bool,
    #[command(flatten)]
    pub commit: CommitFlags,
    #[command(flatten)]
    pub exclude: crate::flags::ExcludeFlags,
    /// Print one JSON document (the command's own output then goes to stderr).
    #[arg(long)]
    pub json: bool,
    /// Run the command in a bubblewrap sandbox (`bwrap`, from the distribution): private
    /// `/proc` and process tree, no network (unless `--network`), the file system read-only
    /// with `/home`, `/root`, `/tmp` and `/run` empty, and only its work directory and home
    /// writable. Fails when bubblewrap is not installed.
    #[arg(long)]
    pub sandbox: bool,
    /// With `--sandbox`: keep the network.
    #[arg(long, requires = "sandbox")]
    pub network: bool,
    /// Make the scratch directory (the work tree and the command's home) under this directory.
    /// Default: `$TMPDIR` when set, else `/dev/shm` when it is a tmpfs that lets programs run
    /// and has room for twice the tree plus 256 MiB, else `/tmp` (see docs/run.md).
    #[arg(long, value_name = "DIR")]
    pub scratch_dir: Option<PathBuf>,
    /// Most committable files the staged tree may hold.
    #[arg(long, default_value_t = supabash::Limits::default().max_files)]
    pub max_files: usize,
    /// The command and its arguments (after `--`).
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

/// How the command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum Exit {
    /// It exited with this code.
    Exited { code: i32 },
    /// A signal ended it.
    Signalled { signal: i32 },
    /// The timeout ended it (its process group was killed).
    TimedOut,
    /// It could not be started.
    NotStarted,
    /// supabash was interrupted (SIGINT) and killed the command's process group.
    Interrupted,
}

impl Exit {
    /// Whether the command succeeded.
    pub fn success(self) -> bool {
        self == Exit::Exited { code: 0 }
    }

    /// The exit status `supabash run` ends with.
    pub fn status(self) -> i32 {
        match self {
            Exit::Exited { code } => code,
            Exit::Signalled { signal } => 128 + signal,
            Exit::TimedOut => EXIT_TIMED_OUT,
            Exit::NotStarted => EXIT_NOT_STARTED,
            Exit::Interrupted => EXIT_INTERRUPTED,
        }
    }
}

/// The outcome of one run (or import) session: the single record of what it did.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionOutcome {
    pub workspace_id: String,
    /// The command and its arguments (lossily decoded).
    pub command: Vec<String>,
    /// How the command ended (`None`: no command, an import).
    pub exit: Option<Exit>,
    pub duration_ms: u64,
    /// Paths created, edited, deleted or moved (both ends), sorted.
    pub paths_touched: Vec<String>,
    /// Bytes of the files created or edited.
    pub bytes_changed: u64,
    /// Whether the differences were staged.
    pub staged: bool,
    /// The revision committed (`--commit`).
    pub revision: Option<String>,
}

impl SessionOutcome {
    /// The outcome of a session on `workspace` that ran `command` (with `exit`) for the time
    /// since `started`, staged `synced` (or nothing) and committed `revision`.
    pub fn new(
        workspace: &str,
        command: Vec<String>,
        exit: Option<Exit>,
        started: Instant,
        synced: Option<&Synced>,
        revision: Option<String>,
    ) -> Self {
        SessionOutcome {
            workspace_id: workspace.to_owned(),
            command,
            exit,
            duration_ms: started.elapsed().as_millis() as u64,
            paths_touched: synced.map(Synced::paths_touched).unwrap_or_default(),
            bytes_changed: synced.map_or(0, Synced::bytes_changed),
            staged: synced.is_some(),
            revision,
        }
    }
}

/// The audit record of a run session: the command (redacted with the agent's rules and the
/// connection's own secrets), how it ended, how long it took, what it changed.
fn session_action(
    command: &[String],
    exit: Exit,
    started: Instant,
    synced: Option<&Synced>,
    secrets: &[&String],
) -> Action {
    let redactor = secrets
        .iter()
        .fold(Redactor::default(), |r, s| r.with_literal(s.as_str()));
    let argv: Vec<String> = command.iter().map(|a| redactor.redact(a)).collect();
    let code = match exit {
        _ if exit.success() => None,
        Exit::TimedOut => Some("TIMED_OUT"),
        Exit::Interrupted => Some("INTERRUPTED"),
        Exit::NotStarted => Some("NOT_STARTED"),
        Exit::Exited { .. } | Exit::Signalled { .. } => Some("COMMAND_FAILED"),
    };
    let outcome = code.map_or(ActionOutcome::Ok, |c| ActionOutcome::Error {
        code: c.into(),
    });
    Action::new(ActionKind::RunSession, "run")
        .with_arguments(json!({ "command": argv, "exit": exit, "staged": synced.is_some() }))
        .with_outcome(outcome)
        .with_duration(started.elapsed())
        .with_paths(synced.map(Synced::paths_touched).unwrap_or_default())
        .with_bytes_changed(synced.map_or(0, Synced::bytes_changed))
}

/// Parses `90s`, `10m`, `1h`, `500ms` or a number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (digits, unit) = s.split_at(split);
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("{s:?} is not a duration (e.g. 90s, 10m, 1h)"))?;
    let d = match unit {
        "" | "s" => Duration::from_secs(n),
        "ms" => Duration::from_millis(n),
        "m" => Duration::from_secs(n * 60),
        "h" => Duration::from_secs(n * 3600),
        _ => return Err(format!("{s:?}: the unit is one of ms, s, m, h")),
    };
    if d.is_zero() {
        return Err("the timeout must be longer than zero".to_owned());
    }
    Ok(d)
}

/// Names a `--env` may never pass, whatever their value.
fn refused_name(name: &str) -> Option<&'static str> {
    let upper = name.to_ascii_uppercase();
    if upper.starts_with("SUPABASH_") {
        return Some("supabash's own settings are never passed");
    }
    if upper == "HOME" {
        return Some("the command gets a private HOME");
    }
    if ["DSN", "DATABASE_URL", "PGPASSWORD", "PGPASSFILE"]
        .iter()
        .any(|p| upper.contains(p))
    {
        return Some("it may hold a connection string or a database password");
    }
    None
}

/// The environment the command gets besides HOME (its private home, set once the scratch
/// directory exists): PATH, LANG, LC_ALL, TERM, USER, and the `--env` names, each refused when
/// it looks like a credential (the agent redaction rules, with the connection's secrets as
/// literals) or a connection string.
pub fn child_env(
    passed: &[String],
    secrets: &[&String],
) -> Result<Vec<(String, OsString)>, BoxError> {
    let inherited = |name: &str| std::env::var_os(name);
    let mut env = vec![
        (
            "PATH".to_owned(),
            inherited("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into()),
        ),
        (
            "LANG".to_owned(),
            inherited("LANG").unwrap_or_else(|| "C.UTF-8".into()),
        ),
    ];
    for name in ["LC_ALL", "TERM", "USER"] {
        if let Some(v) = inherited(name) {
            env.push((name.to_owned(), v));
        }
    }
    let redactor = secrets
        .iter()
        .fold(Redactor::default(), |r, s| r.with_literal(s.as_str()));
    for name in passed {
        if name.is_empty() || name.contains('=') {
            return Err(usage(format!("--env takes a variable name, not {name:?}")));
        }
        if let Some(why) = refused_name(name) {
            return Err(usage(format!("--env {name} is refused: {why}")));
        }
        let Some(value) = inherited(name) else {
            continue;
        };
        let text = format!("{name}={}", value.to_string_lossy());
        let url_credentials = text.contains("://") && text.contains('@');
        if redactor.redact(&text) != text || url_credentials {
            return Err(usage(format!(
                "--env {name} is refused: its value looks like a credential"
            )));
        }
        env.retain(|(n, _)| n != name);
        env.push((name.clone(), value));
    }
    Ok(env)
}

/// Refuses a secret on supabash's own command line: every local process, the command
/// included, can read it in `/proc/<pid>/cmdline`. A token or API key given as an argument,
/// or a DSN with a password, must come from the environment or a `*_file` instead.
fn check_command_line(connect: &crate::connect::ConnectArgs) -> Result<(), BoxError> {
    let argv: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let on_line = |v: &str| !v.is_empty() && argv.iter().any(|a| a.contains(v));
    let dsn_has_password = |d: &str| {
        d.contains("password=")
            || d.split_once("://").is_some_and(|(_, rest)| {
                rest.split(['/', '?']).next().is_some_and(|auth| {
                    auth.contains('@') && auth.split('@').next().is_some_and(|u| u.contains(':'))
                })
            })
    };
    let flagged = [
        (
            "--dsn",
            connect.dsn.as_deref().filter(|d| dsn_has_password(d)),
        ),
        ("--token", connect.token.as_deref()),
        ("--apikey", connect.apikey.as_deref()),
    ]
    .into_iter()
    .find(|(_, v)| v.is_some_and(on_line));
    match flagged {
        Some((flag, _)) => Err(usage(format!(
            "supabash run refuses a secret on its command line ({flag}): the command could read it in /proc; pass it in the environment (SUPABASH_DSN, SUPABASH_TOKEN, SUPABASH_APIKEY) or a file (--dsn-file, --token-file, --apikey-file)"
        ))),
        None => Ok(()),
    }
}

/// Whether a variable of supabash's own environment is a secret the command must not find in
/// it: supabash's settings, connection strings and passwords, and anything the redaction rules
/// (with the connection's own secrets) would redact.
fn secret_variable(name: &str, value: &str, redactor: &Redactor) -> bool {
    if refused_name(name).is_some() {
        return true;
    }
    let text = format!("{name}={value}");
    redactor.redact(&text) != text || (value.contains("://") && value.contains('@'))
}

/// Clears the secrets from this process before the command starts: the values of secret
/// variables are overwritten in the process's original environment block (what
/// `/proc/<pid>/environ` shows) and the variables removed, and the process is made
/// non-dumpable (`PR_SET_DUMPABLE` 0), so a process of the same user cannot read its memory,
/// environment or file descriptors through `/proc`. Everything that needs the environment
/// (the connection, `--env`) has read it by then.
#[allow(unsafe_code)]
fn forget_secrets(secrets: &[&String]) -> Result<(), BoxError> {
    extern "C" {
        static mut environ: *mut *mut libc::c_char;
    }
    let redactor = secrets
        .iter()
        .fold(Redactor::default(), |r, s| r.with_literal(s.as_str()));
    // SAFETY: `environ` is the C library's NULL-terminated array of NUL-terminated strings.
    // Only the bytes of values are overwritten in place (never past their NUL), before the
    // command is spawned; supabash reads no variable concurrently at this point.
    unsafe {
        let mut entry = std::ptr::addr_of!(environ).read();
        while !entry.is_null() && !(*entry).is_null() {
            let text = std::ffi::CStr::from_ptr(*entry);
            let bytes = text.to_bytes();
            if let Some(eq) = bytes.iter().position(|b| *b == b'=') {
                let name = String::from_utf8_lossy(&bytes[..eq]);
                let value = String::from_utf8_lossy(&bytes[eq + 1..]);
                if secret_variable(&name, &value, &redactor) {
                    std::ptr::write_bytes((*entry).add(eq + 1), b'*', bytes.len() - eq - 1);
                }
            }
            entry = entry.add(1);
        }
        if libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) != 0 {
            return Err(std::io::Error::last_os_error().into());
        }
    }
    Ok(())
}

/// The bubblewrap command line that runs `command` in `work` (see [`RunArgs::sandbox`]): the
/// file system read-only, `/home`, `/root`, `/tmp` and `/run` empty, `work` and `home`
/// writable, `secret_files` hidden, a private `/proc` and `/dev`, every namespace unshared
/// (the network too unless `network`), and the sandbox ends with supabash.
fn sandboxed(
    command: &[OsString],
    work: &Path,
    home: &Path,
    secret_files: &[PathBuf],
    network: bool,
) -> Result<Vec<OsString>, BoxError> {
    let bwrap = which("bwrap").ok_or_else(|| {
        usage("--sandbox needs bubblewrap (the `bwrap` program, package bubblewrap) on PATH; it is not installed")
    })?;
    let mut argv: Vec<OsString> = vec![bwrap.into()];
    let mut add = |items: &[&std::ffi::OsStr]| argv.extend(items.iter().map(|s| s.to_os_string()));
    add(&["--ro-bind".as_ref(), "/".as_ref(), "/".as_ref()]);
    for dir in ["/home", "/root", "/tmp", "/run"] {
        if Path::new(dir).is_dir() {
            add(&["--tmpfs".as_ref(), dir.as_ref()]);
        }
    }
    add(&[
        "--proc".as_ref(),
        "/proc".as_ref(),
        "--dev".as_ref(),
        "/dev".as_ref(),
    ]);
    for dir in [work, home] {
        add(&["--bind".as_ref(), dir.as_os_str(), dir.as_os_str()]);
    }
    for file in secret_files.iter().filter(|f| f.exists()) {
        add(&["--ro-bind".as_ref(), "/dev/null".as_ref(), file.as_os_str()]);
    }
    add(&["--unshare-all".as_ref()]);
    if network {
        add(&["--share-net".as_ref()]);
    }
    add(&[
        "--die-with-parent".as_ref(),
        "--chdir".as_ref(),
        work.as_os_str(),
        "--".as_ref(),
    ]);
    argv.extend(command.iter().cloned());
    Ok(argv)
}

/// `program` found on PATH.
fn which(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// A private (0700) temporary directory, removed on drop.
pub struct PrivateDir(PathBuf);

impl PrivateDir {
    /// Creates `$TMPDIR/supabash-<what>-<random>`.
    pub fn new(what: &str) -> std::io::Result<Self> {
        Self::new_in(&std::env::temp_dir(), what)
    }

    /// Creates `<parent>/supabash-<what>-<random>`.
    pub fn new_in(parent: &Path, what: &str) -> std::io::Result<Self> {
        let dir = parent.join(format!("supabash-{what}-{}", uuid::Uuid::new_v4()));
        std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
        Ok(PrivateDir(dir))
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for PrivateDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Headroom `/dev/shm` must keep beyond twice the tree for `run` to use it.
const RAM_SCRATCH_SPARE: u64 = 256 << 20;

/// Where `run` makes its scratch directory: `chosen` (`--scratch-dir`), else `$TMPDIR` when
/// set, else `/dev/shm` when it is a tmpfs mounted without `noexec` with room for twice the
/// tree's `tree_bytes` plus [`RAM_SCRATCH_SPARE`], else the system's temporary directory.
/// Writing out and deleting thousands of files costs a disk file system its journal (and,
/// mounted with `discard`, a trim per deleted extent); tmpfs costs neither.
fn scratch_parent(chosen: Option<&Path>, tree_bytes: u64) -> PathBuf {
    if let Some(dir) = chosen {
        return dir.to_path_buf();
    }
    if std::env::var_os("TMPDIR").is_some_and(|t| !t.is_empty()) {
        return std::env::temp_dir();
    }
    let shm = Path::new("/dev/shm");
    let needed = tree_bytes
        .saturating_mul(2)
        .saturating_add(RAM_SCRATCH_SPARE);
    if ram_room(shm).is_some_and(|free| free >= needed) {
        return shm.to_path_buf();
    }
    std::env::temp_dir()
}

/// The bytes free for this user under `dir` when it is a writable tmpfs that lets programs
/// run (`None` otherwise, or when it cannot be told).
#[allow(unsafe_code)]
fn ram_room(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    const TMPFS_MAGIC: libc::c_long = 0x0102_1994;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: `statfs` and `statvfs` fill the zeroed structs for a NUL-terminated path;
    // `access` only reads the path.
    let (fs, vfs) = unsafe {
        let mut fs: libc::statfs = std::mem::zeroed();
        let mut vfs: libc::statvfs = std::mem::zeroed();
        if libc::statfs(path.as_ptr(), &mut fs) != 0
            || libc::statvfs(path.as_ptr(), &mut vfs) != 0
            || libc::access(path.as_ptr(), libc::W_OK) != 0
        {
            return None;
        }
        (fs, vfs)
    };
    let noexec = vfs.f_flag & libc::ST_NOEXEC != 0;
    if fs.f_type as libc::c_long != TMPFS_MAGIC || noexec {
        return None;
    }
    Some(vfs.f_bavail.saturating_mul(vfs.f_frsize))
}

/// Sends SIGKILL to the process group `pgid` (the command and everything it started that
/// stayed in its group). A group already gone is fine.
fn kill_group(pgid: u32) {
    let Ok(pgid) = i32::try_from(pgid) else {
        return;
    };
    #[allow(unsafe_code)]
    // SAFETY: kill(2) with a negative pid only sends a signal; it touches no memory of ours.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
}

/// Runs `command` in `dir` with `env`, its own process group, and `timeout`.
async fn execute(
    command: &[OsString],
    dir: &Path,
    env: Vec<(String, OsString)>,
    timeout: Duration,
    stdout_to_stderr: bool,
) -> Result<Exit, BoxError> {
    use std::os::unix::process::ExitStatusExt;
    let mut cmd = tokio::process::Command::new(&command[0]);
    cmd.args(&command[1..])
        .current_dir(dir)
        .env_clear()
        .envs(env)
        .stdin(Stdio::null())
        .process_group(0)
        .kill_on_drop(true);
    if stdout_to_stderr {
        use std::os::fd::AsFd;
        cmd.stdout(Stdio::from(std::io::stderr().as_fd().try_clone_to_owned()?));
    }
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(e) => {
            eprintln!("supabash run: cannot start {:?}: {e}", command[0]);
            return Ok(Exit::NotStarted);
        }
    };
    let pgid = child
        .id()
        .ok_or("the command ended before it was watched")?;
    // The command has its own process group, so a Ctrl-C at the terminal reaches supabash
    // only: it ends the command's group the same way.
    let waited = tokio::select! {
        waited = tokio::time::timeout(timeout, child.wait()) => Some(waited),
        _ = tokio::signal::ctrl_c() => None,
    };
    // Whatever the command left running in its group must not write during the sync.
    kill_group(pgid);
    Ok(match waited {
        None => {
            child.wait().await?;
            Exit::Interrupted
        }
        Some(Err(_)) => {
            child.wait().await?;
            Exit::TimedOut
        }
        Some(Ok(status)) => {
            let status = status?;
            match (status.code(), status.signal()) {
                (Some(code), _) => Exit::Exited { code },
                (None, Some(signal)) => Exit::Signalled { signal },
                (None, None) => Exit::Exited { code: -1 },
            }
        }
    })
}

/// Prints what a sync staged, for people.
pub fn print_synced(synced: &Synced) {
    if synced.changes.is_empty() {
        println!("nothing staged");
    } else {
        println!("staged changes:");
    }
    for c in &synced.changes {
        let from = crate::output::moved_from(c.from.as_deref());
        let size = c
            .after_size
            .map(|s| format!(", {s} bytes"))
            .unwrap_or_default();
        println!("  {:?} {}{from}{size}", c.kind, c.path);
    }
    for d in &synced.applied {
        // Revisions hold directories (since 0.6.0): an empty one as an entry of its own, any
        // other through the paths below it.
        let what = match d.kind {
            supabash::disk::DirChangeKind::DirCreated => {
                "staged: the next commit keeps it, an empty directory as an entry of its own"
            }
            supabash::disk::DirChangeKind::DirRemoved => "staged: the next commit removes it",
            _ => continue,
        };
        println!("  {:?} {} ({what})", d.kind, d.path);
    }
    let not_staged = synced.not_staged.iter();
    print_capped(
        "not staged",
        not_staged.map(|n| format!("{}: {}", n.path, n.reason)),
    );
    let ignored = synced.ignored.iter();
    print_capped(
        "ignored",
        ignored.map(|i| format!("{} ({})", i.path, i.reason)),
    );
}

/// Prints the first 20 `lines` labelled `label`, then how many more there are.
fn print_capped(label: &str, lines: impl ExactSizeIterator<Item = String>) {
    const SHOWN: usize = 20;
    let more = lines.len().saturating_sub(SHOWN);
    for line in lines.take(SHOWN) {
        println!("  {label}: {line}");
    }
    if more > 0 {
        println!("  {label}: {more} more (see --json)");
    }
}

/// `supabash run`; answers the exit status to end with.
pub async fn run(args: RunArgs) -> Result<i32, BoxError> {
    let started = Instant::now();
    check_command_line(&args.target.connect)?;
    let owned_secrets: Vec<String> = args.target.connect.secrets().collect();
    let secrets: Vec<&String> = owned_secrets.iter().collect();
    let mut env = child_env(&args.env, &secrets)?;
    let (transport, id) = args.target.open().await?;
    // The whole manifest in one request: every file is written out anyway.
    let ws = Workspace::builder(transport)
        .limits(supabash::Limits::default().with_max_files(args.max_files))
        .open_mode(supabash::OpenMode::Eager)
        .open(&id)
        .await?;
    let parent = scratch_parent(args.scratch_dir.as_deref(), ws.fs().file_bytes());
    let scratch = PrivateDir::new_in(&parent, "run")?;
    let (work, home) = (scratch.path().join("work"), scratch.path().join("home"));
    std::fs::DirBuilder::new().mode(0o700).create(&home)?;
    env.push(("HOME".to_owned(), home.as_os_str().to_owned()));
    crate::connect::body_cache::attach(&ws);
    let options = match &args.revision {
        Some(r) => MaterialiseOptions::default().with_revision(r.clone()),
        None => MaterialiseOptions::default(),
    };
    let record = ws.materialise_with(&work, options).await?;
    let command = if args.sandbox {
        let c = &args.target.connect;
        let files: Vec<PathBuf> = [&c.dsn_file, &c.token_file, &c.apikey_file]
            .into_iter()
            .flatten()
            .cloned()
            .collect();
        sandboxed(&args.command, &work, &home, &files, args.network)?
    } else {
        args.command.clone()
    };
    forget_secrets(&secrets)?;
    let exit = execute(&command, &work, env, args.timeout, args.json).await?;
    let failed = matches!(exit, Exit::Exited { .. } | Exit::Signalled { .. });
    let stage = exit.success() || (args.stage_on_failure && failed);
    let synced = if stage {
        let exclude = crate::run::ignore_list::load(&work, &args.exclude)?;
        Some(
            ws.stage_from_dir_excluding(&work, &record, None, exclude)
                .await?,
        )
    } else {
        None
    };
    let command: Vec<String> = args
        .command
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    // The session's audit record travels with the commit it leads to; without one it is
    // written as discarded (this process's staged tree ends with it).
    ws.record(session_action(
        &command,
        exit,
        started,
        synced.as_ref(),
        &secrets,
    ));
    let revision = match &synced {
        Some(s) => args.commit.commit(&ws, !s.changes.is_empty()).await?,
        None => None,
    };
    if revision.is_none() {
        ws.discard().await?;
    }
    let outcome = SessionOutcome::new(&id, command, Some(exit), started, synced.as_ref(), revision);
    if args.json {
        println!("{}", json!({ "session": outcome, "sync": synced }));
    } else {
        match (&synced, exit) {
            (Some(s), _) => print_synced(s),
            (None, Exit::TimedOut) => {
                println!("timed out after {:?}: killed, nothing staged", args.timeout)
            }
            (None, Exit::Interrupted) => println!("interrupted: killed, nothing staged"),
            (None, _) => println!(
                "the command failed ({}): nothing staged (--stage-on-failure stages anyway)",
                exit.status()
            ),
        }
        if let Some(r) = &outcome.revision {
            println!("committed revision {r}");
        }
    }
    Ok(exit.status())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("10m"), Ok(Duration::from_secs(600)));
        assert_eq!(parse_duration("2"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("5d").is_err());
        assert!(parse_duration("m").is_err());
    }

    #[test]
    fn refused_names() {
        for name in [
            "SUPABASH_DSN",
            "supabash_token",
            "HOME",
            "MY_DSN",
            "DATABASE_URL",
            "PGPASSWORD",
        ] {
            assert!(child_env(&[name.to_owned()], &[]).is_err(), "{name}");
        }
        assert!(child_env(&["A=B".to_owned()], &[]).is_err());
    }

    #[test]
    fn ram_room_is_for_a_tmpfs_only() {
        assert_eq!(ram_room(Path::new("/proc")), None);
        assert_eq!(ram_room(Path::new("/no/such/dir")), None);
        let shm_is_tmpfs = std::fs::read_to_string("/proc/mounts")
            .unwrap()
            .lines()
            .any(|l| {
                l.split(' ').nth(1) == Some("/dev/shm") && l.split(' ').nth(2) == Some("tmpfs")
            });
        assert_eq!(ram_room(Path::new("/dev/shm")).is_some(), shm_is_tmpfs);
        assert_eq!(
            scratch_parent(Some(Path::new("/chosen")), u64::MAX),
            Path::new("/chosen")
        );
    }

    #[test]
    fn base_environment_only() {
        let env = child_env(&[], &[]).unwrap();
        let names: Vec<&str> = env.iter().map(|(n, _)| n.as_str()).collect();
        assert!(names
            .iter()
            .all(|n| ["PATH", "LANG", "LC_ALL", "TERM", "USER"].contains(n)));
    }
}

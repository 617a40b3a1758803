//! The control socket of a mount: `supabash commit --mount DIR` and `supabash changes --mount
//! DIR` run in another process and ask the mount process over a Unix socket (mode 0600, in a
//! 0700 directory) whose path derives from the canonical mount directory. One JSON request
//! line, one JSON answer line per connection; a failure answers the error's report
//! ([`crate::exit::Report`]), which `commit --mount` reports as its own.
//!
//! A commit whose outcome is unknown (its answer was lost) is kept by the mount: the next
//! commit request sends that same commit again (same cause, transaction id and idempotency
//! key), so the database answers the first attempt's receipt (`replayed: true`) if it landed.
//! Rerunning `supabash commit --mount` is therefore safe.

use crate::exit::{Relayed, Report};
use crate::mount::fuse::MountFs;
use serde_json::{json, Value};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use supabash::workspace::CommitOptions;
use supabash::{ErrorCode, SupabashError, Workspace};
use supabash_core::rpc::CommitResult;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::Mutex;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The directory control sockets live in: `$XDG_RUNTIME_DIR/supabash`, else `/run/supabash`
/// for root, else `/tmp/supabash-<uid>`.
fn socket_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir).join("supabash");
    }
    let uid = uid();
    if uid == 0 {
        PathBuf::from("/run/supabash")
    } else {
        PathBuf::from(format!("/tmp/supabash-{uid}"))
    }
}

#[allow(unsafe_code)]
fn uid() -> u32 {
    // SAFETY: getuid has no preconditions and cannot fail.
    unsafe { libc::getuid() }
}

/// Makes `dir` the private directory control sockets live in: created exclusively with mode
/// 0700 (never through an existing path's symlink, never recursively), or, when it exists,
/// examined without following a link (`lstat`) and refused unless it is a real directory owned
/// by this user with mode 0700. Another local user could otherwise plant `/tmp/supabash-<uid>`
/// (or a symlink there) and take the sockets.
fn private_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    check_private(dir)
}

/// Refuses `dir` unless it is a real directory (not a symlink), owned by this user, mode 0700.
fn check_private(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::symlink_metadata(dir)?;
    let refused = |why: String| {
        io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "refusing {} for the mount's control socket: {why}",
                dir.display()
            ),
        )
    };
    if !meta.file_type().is_dir() {
        return Err(refused(
            "it is not a directory (a symlink or a file)".into(),
        ));
    }
    if meta.uid() != uid() {
        return Err(refused(format!(
            "it is owned by uid {}, not by this user ({})",
            meta.uid(),
            uid()
        )));
    }
    if meta.mode() & 0o7777 != 0o700 {
        return Err(refused(format!(
            "its mode is {:o}, not 700",
            meta.mode() & 0o7777
        )));
    }
    Ok(())
}

/// The control socket of the mount at `dir` (any spelling of it).
pub fn socket_path(dir: &Path) -> io::Result<PathBuf> {
    let canonical = std::fs::canonicalize(dir)?;
    let digest = supabash_core::hash::sha256_hex(canonical.as_os_str().as_encoded_bytes());
    Ok(socket_dir().join(format!("mount-{}.sock", &digest[..24])))
}

/// The listening socket of a mount; removed when dropped.
pub struct Control {
    path: PathBuf,
    listener: UnixListener,
}

impl Drop for Control {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

impl Control {
    /// Binds the control socket of the mount at `dir`; fails when a live mount holds it.
    pub async fn bind(dir: &Path) -> Result<Control, BoxError> {
        use std::os::unix::fs::PermissionsExt;
        let path = socket_path(dir)?;
        let parent = path.parent().ok_or("control socket without a directory")?;
        private_dir(parent)?;
        if path.exists() {
            if UnixStream::connect(&path).await.is_ok() {
                return Err(format!(
                    "{} is already mounted by another supabash process",
                    dir.display()
                )
                .into());
            }
            std::fs::remove_file(&path)?;
        }
        let listener = UnixListener::bind(&path)?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
        Ok(Control { path, listener })
    }

    /// Answers requests until the task is dropped.
    pub async fn serve(self, fs: Arc<MountFs>, ws: Arc<Workspace>, session: Session) {
        let commits = Arc::new(Commits {
            session,
            unknown: Mutex::new(None),
        });
        loop {
            let Ok((stream, _)) = self.listener.accept().await else {
                continue;
            };
            let (fs, ws, commits) = (fs.clone(), ws.clone(), commits.clone());
            tokio::spawn(async move {
                let _ = answer(stream, &fs, &ws, &commits).await;
            });
        }
    }
}

/// What the control socket needs to know about the mount.
#[derive(Debug, Clone)]
pub struct Session {
    /// Commits are refused (a revision or `--read-only` mount).
    pub read_only: bool,
    /// The actor commits record.
    pub actor: String,
}

/// The mount's commits: the session's settings and the commit whose outcome is unknown.
struct Commits {
    session: Session,
    /// The options of the last commit whose answer was lost; the next commit request sends
    /// it again.
    unknown: Mutex<Option<CommitOptions>>,
}

impl Commits {
    /// Commits the mount's staged changes with `message`, or first sends again the commit
    /// whose outcome is unknown (then `message` is not used). Answers whether it was such a
    /// retry.
    async fn commit(
        &self,
        fs: &MountFs,
        ws: &Workspace,
        message: Option<String>,
    ) -> (supabash::Result<CommitResult>, bool) {
        let mut unknown = self.unknown.lock().await;
        let retry = unknown.is_some();
        let options = unknown.take().unwrap_or_else(|| {
            let mut options = CommitOptions::new(self.session.actor.clone())
                .with_idempotency_key(uuid::Uuid::new_v4().to_string());
            options.cause = message;
            options
        });
        let result = fs.commit(ws, options.clone(), !retry).await;
        if result.as_ref().is_err_and(|e| e.outcome_unknown()) {
            *unknown = Some(options);
        }
        (result, retry)
    }
}

/// The answer to a failed request: the error's report.
fn failure(e: &SupabashError) -> Value {
    json!({ "ok": false, "error": Report::of(e) })
}

async fn answer(
    stream: UnixStream,
    fs: &MountFs,
    ws: &Workspace,
    commits: &Commits,
) -> io::Result<()> {
    let (read, mut write) = stream.into_split();
    let mut line = String::new();
    BufReader::new(read).read_line(&mut line).await?;
    let request: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
    let read_only = commits.session.read_only;
    let reply = match request["op"].as_str() {
        Some("changes") if read_only => json!({ "ok": true, "changes": [] }),
        Some("changes") => match fs.changes(ws).await {
            Ok(changes) => json!({ "ok": true, "changes": changes }),
            Err(e) => failure(&e),
        },
        Some("commit") if read_only => failure(&SupabashError::new(
            ErrorCode::ReadOnly,
            "this mount is read-only: nothing to commit",
        )),
        Some("commit") => {
            let message = request["message"].as_str().map(str::to_owned);
            match commits.commit(fs, ws, message).await {
                (Ok(result), retried) => {
                    json!({ "ok": true, "commit": result, "retried": retried })
                }
                (Err(e), _) => failure(&e),
            }
        }
        _ => failure(&SupabashError::new(
            ErrorCode::InvalidArgument,
            "unknown control request",
        )),
    };
    let mut text = reply.to_string();
    text.push('\n');
    write.write_all(text.as_bytes()).await?;
    write.shutdown().await
}

/// Sends one request to the mount at `dir` and returns its answer (`ok: true`), or fails
/// with the mount's report ([`Relayed`]).
async fn request(dir: &Path, request: Value) -> Result<Value, BoxError> {
    let path = socket_path(dir)?;
    // A socket in a directory another user controls is not our mount's.
    if let Some(parent) = path.parent() {
        check_private(parent)?;
    }
    let stream = UnixStream::connect(&path).await.map_err(|e| {
        format!(
            "no supabash mount answers for {} ({}: {e})",
            dir.display(),
            path.display()
        )
    })?;
    let (read, mut write) = stream.into_split();
    let mut text = request.to_string();
    text.push('\n');
    write.write_all(text.as_bytes()).await?;
    write.shutdown().await?;
    let mut line = String::new();
    BufReader::new(read).read_line(&mut line).await?;
    let answer: Value = serde_json::from_str(&line)?;
    if answer["ok"] == true {
        return Ok(answer);
    }
    match serde_json::from_value::<Report>(answer["error"].clone()) {
        Ok(report) => Err(Box::new(Relayed(report))),
        Err(_) => Err(format!("the mount answered an unknown failure: {answer}").into()),
    }
}

/// Arguments of `supabash commit --mount`.
#[derive(Debug, clap::Args)]
pub struct CommitArgs {
    /// The mount directory whose staged changes to commit.
    #[arg(long)]
    pub mount: PathBuf,
    /// The commit's cause (its message).
    #[arg(short = 'm', long)]
    pub message: Option<String>,
    /// Print the commit result as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `supabash changes --mount`.
#[derive(Debug, clap::Args)]
pub struct ChangesArgs {
    /// The mount directory whose staged changes to list.
    #[arg(long)]
    pub mount: PathBuf,
    /// Print the changes as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Prints `text` on stdout; a closed stdout is not an error of the command (the mount process
/// may outlive whoever read its first line).
pub fn say(text: &str) {
    use std::io::Write;
    let _ = std::io::stdout().write_all(text.as_bytes());
}

/// The lines of a receipt, for people.
pub fn print_receipt(result: &CommitResult) {
    let r = &result.receipt;
    let mut text = format!(
        "committed revision {} ({} change(s), position {}){}\n",
        r.revision,
        r.changes.len(),
        r.position,
        if result.replayed {
            ": the earlier attempt had landed (its receipt, replayed)"
        } else {
            ""
        }
    );
    for line in &r.changes {
        let from = crate::output::moved_from(line.from.as_deref());
        text.push_str(&format!("    {} {}{from}\n", line.op, line.path));
    }
    say(&text);
}

/// `supabash commit --mount DIR`.
pub async fn commit(args: CommitArgs) -> Result<(), BoxError> {
    let answer = request(
        &args.mount,
        json!({ "op": "commit", "message": args.message }),
    )
    .await?;
    if args.json {
        println!("{}", answer["commit"]);
        return Ok(());
    }
    if answer["retried"] == true {
        say("sent again the commit whose outcome was unknown (its message, transaction id and idempotency key)\n");
    }
    print_receipt(&serde_json::from_value(answer["commit"].clone())?);
    Ok(())
}

/// `supabash changes --mount DIR`.
pub async fn changes(args: ChangesArgs) -> Result<(), BoxError> {
    let answer = request(&args.mount, json!({ "op": "changes" })).await?;
    if args.json {
        println!("{}", answer["changes"]);
        return Ok(());
    }
    for c in answer["changes"].as_array().into_iter().flatten() {
        let from = crate::output::moved_from(c["from"].as_str());
        println!(
            "{} {}{from}",
            c["kind"].as_str().unwrap_or("?"),
            c["path"].as_str().unwrap_or("?")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn scratch() -> PathBuf {
        let d = std::env::temp_dir().join(format!("supabash-ctl-test-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir(&d).unwrap();
        d
    }

    #[test]
    fn the_socket_directory_is_created_private() {
        let base = scratch();
        let dir = base.join("supabash");
        private_dir(&dir).unwrap();
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o700);
        // Existing and private: accepted again.
        private_dir(&dir).unwrap();
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn a_planted_directory_or_symlink_is_refused() {
        let base = scratch();
        // Too open (as another user's pre-created directory would be, or one made 0777).
        let open = base.join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = private_dir(&open).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::PermissionDenied);
        assert!(e.to_string().contains("mode is 777"), "{e}");
        // A symlink to a private directory is refused, not followed.
        let target = base.join("target");
        private_dir(&target).unwrap();
        let link = base.join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let e = private_dir(&link).unwrap_err();
        assert!(e.to_string().contains("not a directory"), "{e}");
        // A file.
        let file = base.join("file");
        std::fs::write(&file, "x").unwrap();
        assert!(private_dir(&file).is_err());
        // Another owner (when the test runs as root, a directory given to nobody).
        if uid() == 0 {
            let theirs = base.join("theirs");
            private_dir(&theirs).unwrap();
            std::os::unix::fs::chown(&theirs, Some(65534), None).unwrap();
            let e = private_dir(&theirs).unwrap_err();
            assert!(e.to_string().contains("owned by uid 65534"), "{e}");
        }
        std::fs::remove_dir_all(&base).unwrap();
    }
}

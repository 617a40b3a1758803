//! Steps 12 and 13 of the demo: git on a FUSE mount of the workspace, committed from another
//! process, and the audit trail of that revision.

use super::{indent, BoxError, Cluster};
use supabash::Workspace;
use supabash_cli::output::short;

/// Step 12: a real program on the workspace, git in a FUSE mount of its staged tree (`supabash
/// mount`, a child process), committed from another process (`supabash commit --mount`); then
/// step 13 on that revision. Skipped without /dev/fuse.
pub async fn git_on_a_mount(cluster: &Cluster, ws: &Workspace, user: &str) -> Result<(), BoxError> {
    println!("\n12. git on a FUSE mount of the workspace (`supabash mount`), committed from another process");
    if !std::path::Path::new("/dev/fuse").exists() {
        println!("   skipped: /dev/fuse is missing here; `supabash run --workspace ID -- git ...` works without FUSE (docs/run.md)");
        return Ok(());
    }
    let dir = std::env::temp_dir().join(format!("supabash-demo-mount-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let exe = std::env::current_exe()?;
    // Connection settings through the environment: never a secret on a command line.
    let supabash = |args: &[&str]| {
        let mut c = std::process::Command::new(&exe);
        c.args(args)
            .env("SUPABASH_DSN", cluster.dsn("authenticator"))
            .env("SUPABASH_SUB", user)
            .env("SUPABASH_WORKSPACE", ws.id());
        c
    };
    let dir_s = dir.to_string_lossy().into_owned();
    let mut mount = supabash(&["mount", &dir_s, "--workspace", ws.id()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !std::fs::read_to_string("/proc/self/mountinfo")?.contains(&format!(" {dir_s} ")) {
        if std::time::Instant::now() > deadline || mount.try_wait()?.is_some() {
            return Err("supabash mount did not come up".into());
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let script = "git init -q && git add -A && git commit -qm 'the notes, under git' && git log --oneline --stat | head -8";
    println!(
        "   $ supabash mount {dir_s} --workspace {} &",
        short(ws.id())
    );
    println!("   $ cd {dir_s} && {script}");
    let git = std::process::Command::new("sh")
        .args(["-c", script])
        .current_dir(&dir)
        .env("GIT_AUTHOR_NAME", "demo")
        .env("GIT_AUTHOR_EMAIL", "demo@example.com")
        .env("GIT_COMMITTER_NAME", "demo")
        .env("GIT_COMMITTER_EMAIL", "demo@example.com")
        .output()?;
    print!("{}", indent(&String::from_utf8_lossy(&git.stdout)));
    println!("   $ supabash commit --mount {dir_s} -m 'git history'");
    let commit =
        supabash(&["commit", "--mount", &dir_s, "-m", "git history", "--json"]).output()?;
    let unmounted = std::process::Command::new("fusermount3")
        .args(["-u", &dir_s])
        .status();
    let _ = mount.wait();
    let _ = std::fs::remove_dir(&dir);
    if !git.status.success() || !commit.status.success() || !unmounted?.success() {
        return Err(format!(
            "git on the mount failed: {}{}",
            String::from_utf8_lossy(&git.stderr),
            String::from_utf8_lossy(&commit.stderr)
        )
        .into());
    }
    let answer: serde_json::Value = serde_json::from_slice(&commit.stdout)?;
    let revision = answer["receipt"]["revision"]
        .as_str()
        .ok_or("the commit answered no revision")?
        .to_owned();
    let tree = ws.read_revision(&revision).await?;
    let git_files = tree
        .files
        .keys()
        .filter(|p| p.starts_with("/.git/"))
        .count();
    println!(
        "   committed revision {}: {git_files} files under /.git (objects, refs, HEAD), one revision",
        short(&revision)
    );
    audit_of(ws, &revision).await
}

/// Step 13: the audit records of `revision`: which agent actions produced it.
async fn audit_of(ws: &Workspace, revision: &str) -> Result<(), BoxError> {
    println!("\n13. The audit trail of that revision: which agent actions produced it");
    for r in ws.audit(Some(revision), None).await?.records {
        println!(
            "    {} {} by {}: {:?}, {} ms, {} path(s), {} bytes",
            r.kind.as_str(),
            r.tool,
            r.actor,
            r.outcome,
            r.duration_ms,
            r.paths.len(),
            r.bytes_changed
        );
    }
    Ok(())
}

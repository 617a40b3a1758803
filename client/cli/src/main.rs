//! The `supabash` command-line tool.

#![deny(unsafe_code)]

use clap::{CommandFactory, Parser, Subcommand};
use serde_json::json;
use std::sync::Arc;
use supabash::capability::postgres::PostgresSigner;
use supabash::delegated::DelegatedWorkspace;
use supabash::workspace::{
    CheckpointOptions, CommitOptions, DiffRef, ForkOptions, PurgeOptions, RedactOptions,
};
use supabash::{Limits, PostgresTransport, Workspace};
use supabash_agent::shell::Shell;
use supabash_agent::AgentFs;
use supabash_core::capability::{Operation, OperationSet};
use supabash_devcluster::Cluster;

#[derive(Parser)]
#[command(
    name = "supabash",
    version,
    about = "Versioned workspaces for agents, in Postgres"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Runs a whole session on a throwaway local PostgreSQL it starts and removes: a user, a
    /// workspace, edits (file calls and bash), commits, history, a diff, a forward restore, a
    /// delegated job, two forks of which one merges back, and a redaction. Needs the extension installed (`just install`) and the PostgreSQL 15
    /// server binaries.
    Demo,
    /// Serves the agent tools (bash, apply_patch, file tools) over MCP for one or more
    /// workspaces, on stdio or streamable HTTP. Commit, history and restore are not tools:
    /// they stay with the host.
    Mcp(Box<supabash_cli::mcp::McpArgs>),
    /// Sets a project up for the Storage backend: creates the private bucket with the service
    /// key (when missing), then checks in the database that row-level security confines every
    /// user to their own first folder (the four policies of sql/storage.sql) and that no other
    /// policy widens it, and that the bucket's file_size_limit and allowed_mime_types admit what
    /// the backend uploads (with the default limits). Exits with status 2 when a check fails.
    StorageSetup(StorageSetupArgs),
    /// Lists the caller's workspaces (every page): id, label, head, stored bytes, fork origin.
    Workspaces(supabash_cli::workspaces::ListArgs),
    /// Forks a workspace at a revision (default: the head) without copying anything; prints
    /// the fork's id.
    Fork(supabash_cli::workspaces::ForkArgs),
    /// Deletes a workspace with its history (needs --yes); its forks keep working.
    DeleteWorkspace(supabash_cli::workspaces::DeleteArgs),
    /// Removes content from a workspace's history for good: the versions before a boundary
    /// (default: the head, exclusive) at the given paths or with the given body hashes become
    /// tombstones and their bytes leave the database; metadata keys and causes of the selected
    /// revisions can be scrubbed. A dry run unless --apply. WAL, replicas' copies and backups
    /// are beyond its reach.
    Redact(Box<supabash_cli::redact::RedactArgs>),
    /// Runs a command on the workspace's files: materialises the staged tree (or --revision)
    /// in a private temporary directory, runs the command there (cleared environment, its own
    /// process group, a timeout), stages exactly what it changed when it succeeds, prints the
    /// staged change list, and commits only with --commit. Exits with the command's status
    /// (124 on timeout).
    Run(Box<supabash_cli::run::RunArgs>),
    /// Makes the staged tree match a directory (files it lacks are deleted; moves detected by
    /// content) and prints the staged changes; commits only with --commit.
    Import(Box<supabash_cli::transfer::ImportArgs>),
    /// Writes the staged tree (or --revision) into an empty directory.
    Export(Box<supabash_cli::transfer::ExportArgs>),
    /// Mounts a workspace's staged tree (or a revision, read-only) on DIR with FUSE, so any
    /// program works on it. Changes are staged; nothing is committed unless `supabash commit
    /// --mount DIR` asks or --commit-on-unmount is given. Linux only (elsewhere: `supabash run`).
    Mount(Box<supabash_cli::fuse::MountArgs>),
    /// Commits the staged changes of a running mount (`--mount DIR`) and prints the receipt.
    Commit(supabash_cli::mount_control::CommitArgs),
    /// Lists the staged changes of a running mount (`--mount DIR`).
    Changes(supabash_cli::mount_control::ChangesArgs),
    /// Lists a workspace's history, oldest first: every page, or one with --limit/--cursor.
    Log(Box<supabash_cli::history::LogArgs>),
    /// Shows one revision's receipt (default: the head).
    Show(Box<supabash_cli::history::ShowArgs>),
    /// Lists a directory at a revision (default: the head).
    Ls(Box<supabash_cli::files::LsArgs>),
    /// Shows every file below a directory at a revision (default: the head).
    Tree(Box<supabash_cli::files::TreeArgs>),
    /// Prints a file's bytes at a revision (default: the head), verified against its hashes.
    Cat(Box<supabash_cli::files::CatArgs>),
    /// A unified diff between two revisions (renames as renames), or --stat.
    Diff(Box<supabash_cli::diff::DiffArgs>),
    /// Commits a new revision whose tree is an older revision's (history is never rewound).
    Restore(Box<supabash_cli::history::RestoreArgs>),
    /// Pins a revision (default: the head) so purge keeps it.
    Checkpoint(Box<supabash_cli::retention::CheckpointArgs>),
    /// Lists the workspace's checkpoints.
    Checkpoints(Box<supabash_cli::retention::CheckpointsArgs>),
    /// Drops old revisions nothing pins: a dry run showing what would go unless --apply.
    Purge(Box<supabash_cli::retention::PurgeArgs>),
    /// Registers, rotates or revokes a capability verifier (the database owner only).
    Verifier {
        #[command(subcommand)]
        command: supabash_cli::verifiers::VerifierCommand,
    },
    /// Prints a shell completion script.
    Completions(supabash_cli::completions::CompletionsArgs),
    /// Checks that a workspace's stored history holds together: every entry's body stored,
    /// every body and delta chain decoding to its hash, the revision chain and head, every
    /// receipt against the entries. Reports every problem; repairs nothing. Exits with status
    /// 1 when it finds a problem.
    Verify(supabash_cli::verify::VerifyArgs),
    /// Reports the caller's orphan bodies (stored, referenced by nothing) and idle workspaces;
    /// with --apply deletes the orphan bodies (idle workspaces are only reported).
    Gc(supabash_cli::verify::GcArgs),
    /// Checks the installation, one line per check: connectivity, the extension's version
    /// and pending upgrades, privileges and row-level security, Storage policies, clock skew.
    /// Exits with status 1 when a check fails.
    Doctor(Box<supabash_cli::doctor::DoctorArgs>),
    /// Lists the workspace's audit trail (agent actions: tool calls, bash, apply_patch, mount
    /// and run sessions), or only the records of one revision; discarded sessions' too.
    Audit(Box<supabash_cli::audit::AuditArgs>),
}

/// Arguments of `supabash storage-setup`.
#[derive(clap::Args)]
struct StorageSetupArgs {
    /// The Storage API base URL, e.g. https://<ref>.supabase.co/storage/v1.
    #[arg(long, env = "SUPABASE_STORAGE_URL")]
    storage_url: String,
    /// The service-role key: only it may create a bucket. Never printed.
    #[arg(long, env = "SUPABASE_SERVICE_ROLE_KEY", hide_env_values = true)]
    service_key: String,
    /// A connection string of the project's database, to read the policies from the catalog.
    #[arg(long, env = "SUPABASE_DB_URL", hide_env_values = true)]
    db: String,
    /// The bucket workspaces live in.
    #[arg(long, default_value = "workspaces")]
    bucket: String,
}

/// `supabash storage-setup`; `Ok(false)` when a policy or bucket check failed.
async fn storage_setup(args: StorageSetupArgs) -> Result<bool, Box<dyn std::error::Error>> {
    use supabash::storage::setup::{check_bucket, check_policies, create_bucket};
    let created = create_bucket(&args.storage_url, &args.service_key, &args.bucket).await?;
    println!(
        "bucket {}: {}",
        args.bucket,
        if created {
            "created (private)"
        } else {
            "already exists"
        }
    );
    let (client, connection) = tokio_postgres::connect(&args.db, tokio_postgres::NoTls).await?;
    tokio::spawn(connection);
    let report = check_policies(&client, &args.bucket).await?;
    let mark = |ok: bool| if ok { "ok" } else { "FAILED" };
    println!(
        "row-level security on storage.objects: {}",
        mark(report.rls_enabled)
    );
    println!("bucket is private: {}", mark(report.bucket_private));
    for command in &report.missing {
        println!("missing: a {command} policy for authenticated confined to the user's folder");
    }
    for policy in &report.broad {
        println!("widening: policy {policy:?} reaches the bucket without the folder limit");
    }
    println!("policies: {}", mark(report.ok()));
    let bucket = check_bucket(&client, &args.bucket, &supabash::Limits::default()).await?;
    for advice in bucket.advice(&args.bucket) {
        println!("bucket restriction: {advice}");
    }
    println!("bucket restrictions: {}", mark(bucket.ok()));
    Ok(report.ok() && bucket.ok())
}

/// Stops the cluster however the demo ends.
struct Running(Cluster);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.stop();
    }
}

fn short(id: &str) -> &str {
    &id[..8.min(id.len())]
}

fn show_changes(ws: &Workspace) -> supabash::Result<()> {
    for c in ws.changes()? {
        let from = c.from.map(|f| format!(" (from {f})")).unwrap_or_default();
        println!("    {:?} {}{from}", c.kind, c.path);
    }
    Ok(())
}

async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    println!("1. Starting a throwaway PostgreSQL (initdb, bootstrap roles, CREATE EXTENSION supabash)...");
    let cluster = Running(Cluster::start());
    println!(
        "   listening on 127.0.0.1:{} (data in {})",
        cluster.0.port,
        cluster.0.dir.display()
    );

    let user = uuid::Uuid::new_v4().to_string();
    println!("\n2. A signed-in user {} opens a new workspace (direct Postgres transport, claims as PostgREST sets them)", short(&user));
    let claims = json!({ "role": "authenticated", "sub": user, "aud": "authenticated" });
    let transport =
        Arc::new(PostgresTransport::connect(&cluster.0.dsn("authenticator"), claims).await?);
    let ws = Workspace::builder(transport.clone()).create().await?;
    println!("   workspace {}", ws.id());

    println!("\n3. The agent edits its staged tree (nothing is durable yet)");
    let fs = ws.fs();
    fs.mkdir("/notes", true).await?;
    fs.write("/notes/todo.md", "# Todo\n- write the demo\n")
        .await?;
    fs.write("/notes/ideas.md", "Ideas: 日本語, émoji 🚀\n")
        .await?;
    fs.mkdir("/tmp", true).await?;
    fs.write("/tmp/scratch.txt", "shell scratch space, never committed\n")
        .await?;
    show_changes(&ws)?;
    let first = ws
        .commit(
            CommitOptions::new("demo-agent")
                .with_correlation_id("demo-1")
                .with_cause("first notes"),
        )
        .await?;
    println!(
        "   committed revision {} ({} changes, position {})",
        short(&first.receipt.revision),
        first.receipt.changes.len(),
        first.receipt.position
    );

    println!("\n4. More edits, through bash on the same staged tree (sed -i, mv, a heredoc)");
    let shell = Shell::new(ws.fs().clone() as Arc<dyn AgentFs>);
    let script = concat!(
        "sed -i 's/write the demo/write the demo (done)/' /notes/todo.md\n",
        "echo '- show history' >> /notes/todo.md\n",
        "mkdir -p /archive && mv /notes/ideas.md /archive/ideas.md\n",
        "cat > /notes/done.md <<'END'\nnothing yet\nEND\n",
        "grep -rn demo /notes",
    );
    print!("{}", indent(script));
    println!("   output:");
    let out = shell.run(script).await?;
    print!("{}", indent(&out.stdout));
    show_changes(&ws)?;
    let second = ws
        .commit(CommitOptions::new("demo-agent").with_cause("reorganise"))
        .await?;
    println!("   committed revision {}", short(&second.receipt.revision));

    println!("\n5. History (oldest first)");
    for r in ws.history(None, None).await?.records {
        println!(
            "    {} by {} at {}: {}",
            short(&r.revision),
            r.actor,
            r.committed_at,
            r.cause.unwrap_or_default()
        );
        for line in r.changes {
            let from = line.from.map(|f| format!(" from {f}")).unwrap_or_default();
            println!("        {} {}{from}", line.op, line.path);
        }
    }

    println!("\n6. Diff between the two revisions (unified; `supabash diff` prints the same)");
    let diff = supabash_cli::diff::unified_between(
        transport.as_ref(),
        ws.id(),
        DiffRef::Revision(first.receipt.revision.clone()),
        DiffRef::Revision(second.receipt.revision.clone()),
        supabash_cli::diff::ColorChoice::Auto.enabled(),
    )
    .await?;
    print!("{}", indent(&diff));

    println!("\n7. Restore forward to the first revision (history is never rewound)");
    let restored = ws.restore(&first.receipt.revision).await?;
    for c in &restored.changes {
        let from = c
            .from
            .as_ref()
            .map(|f| format!(" (from {f})"))
            .unwrap_or_default();
        println!("    staged {:?} {}{from}", c.kind, c.path);
    }
    let third = ws.commit(CommitOptions::new("demo-host")).await?;
    println!(
        "   committed revision {} with parent {} and source revision {}",
        short(&third.receipt.revision),
        short(third.receipt.parent_revision.as_deref().unwrap_or("-")),
        short(third.receipt.source_revision.as_deref().unwrap_or("-")),
    );
    let cp = ws
        .checkpoint(CheckpointOptions::default().with_label("after restore"))
        .await?;
    println!("   checkpoint {} pins it", short(&cp.checkpoint_id));

    println!("\n8. The committed tree now");
    for (path, bytes) in ws.committed_snapshot().await?.files {
        println!("    {path}: {:?}", String::from_utf8_lossy(&bytes));
    }
    delegated_job(&cluster.0, ws.id()).await?;
    // The job committed through its own handle: the host opens the head again.
    let ws = Workspace::builder(transport.clone()).open(ws.id()).await?;
    fork_and_merge(&ws).await?;
    let ws = Workspace::builder(transport.clone()).open(ws.id()).await?;
    redaction(&ws).await?;
    let ws = Workspace::builder(transport.clone()).open(ws.id()).await?;
    git_on_a_mount(&cluster.0, &ws, &user).await?;
    println!("\nDone; removing the throwaway cluster.");
    Ok(())
}

/// A real program on the workspace: git in a FUSE mount of its staged tree (`supabash mount`,
/// a child process), committed from another process (`supabash commit --mount`); then the
/// audit records of that revision.
async fn git_on_a_mount(
    cluster: &Cluster,
    ws: &Workspace,
    user: &str,
) -> Result<(), Box<dyn std::error::Error>> {
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

    println!("\n13. The audit trail of that revision: which agent actions produced it");
    for r in ws.audit(Some(&revision), None).await?.records {
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

/// Two attempts at one task, each in a fork (no bytes copied); the better one merges back.
async fn fork_and_merge(ws: &Workspace) -> Result<(), Box<dyn std::error::Error>> {
    println!("\n10. Two attempts at one task, each in its own fork; the better one merges back");
    let a = ws
        .fork(ForkOptions::new("demo-host").with_label("attempt A"))
        .await?
        .workspace;
    let b = ws
        .fork(ForkOptions::new("demo-host").with_label("attempt B"))
        .await?
        .workspace;
    println!(
        "   forks {} and {} of {}",
        short(a.id()),
        short(b.id()),
        short(ws.id())
    );
    a.fs()
        .write("/notes/plan.md", "# Plan\n\nAttempt A: ship it.\n")
        .await?;
    a.commit(CommitOptions::new("agent-a")).await?;
    b.fs()
        .write("/notes/plan.md", "# Plan\n\nAttempt B: rewrite it.\n")
        .await?;
    b.commit(CommitOptions::new("agent-b")).await?;
    ws.fs()
        .write(
            "/notes/todo.md",
            "# Todo\n- write the demo\n- pick an attempt\n",
        )
        .await?;
    ws.commit(CommitOptions::new("demo-host")).await?;
    println!("   meanwhile the host commits /notes/todo.md to the source");
    let merged = a
        .merge_into_source(CommitOptions::new("demo-host").with_cause("attempt A won"))
        .await?;
    println!(
        "   attempt A merged: revision {} (rebased from {})",
        short(&merged.receipt.revision),
        short(merged.receipt.rebased_from.as_deref().unwrap_or("-"))
    );
    match b.merge_into_source(CommitOptions::new("demo-host")).await {
        Err(e) => println!(
            "   attempt B touched the same file: {} (nothing written)",
            e.code()
        ),
        Ok(_) => return Err("an overlapping merge went through".into()),
    }
    b.delete().await?;
    println!("   attempt B deleted");
    Ok(())
}

/// A secret committed by mistake leaves history for good.
async fn redaction(ws: &Workspace) -> Result<(), Box<dyn std::error::Error>> {
    println!("\n11. A secret lands in a file, then leaves history for good (redaction)");
    ws.fs()
        .write("/.env", "API_KEY=sk-demo-0123456789\n")
        .await?;
    let leaked = ws.commit(CommitOptions::new("demo-host")).await?;
    ws.fs().rm("/.env", false, false).await?;
    ws.commit(CommitOptions::new("demo-host")).await?;
    let dry = ws.redact(RedactOptions::new().path("/.env")).await?;
    println!(
        "   dry run: {} version(s), {} body(ies) would go",
        dry.versions,
        dry.bodies.len()
    );
    let report = ws
        .redact(
            RedactOptions::new()
                .path("/.env")
                .reason("leaked key")
                .apply(),
        )
        .await?;
    println!(
        "   applied: {} bytes removed from the database, redaction epoch now {}",
        report.bytes, report.epoch
    );
    let old = ws.read_revision(&leaked.receipt.revision).await?;
    println!(
        "   revision {} now shows {:?} as redacted",
        short(&leaked.receipt.revision),
        old.redacted
    );
    Ok(())
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("    {l}\n")).collect()
}

/// A background job with no user session: the database owner registers a verifier, the
/// trusted issuer mints a capability, service_role exchanges it for a grant that opens one
/// workspace for exactly read + write + commit.
async fn delegated_job(
    cluster: &Cluster,
    workspace: &str,
) -> Result<(), Box<dyn std::error::Error>> {
    println!("\n9. A nightly job gets a delegated capability (no user session)");
    let secret = cluster.psql(
        "app",
        "SELECT supabash_register_capability_verifier('jobs-1', 'https://jobs.example', \
         'supabash', 'https://project.example')",
    );
    println!(
        "   the database owner registered verifier jobs-1 (Ed25519: the private key is returned once, the database keeps the public key)"
    );
    let signer = PostgresSigner::new(
        "jobs-1",
        secret.trim(),
        "https://jobs.example",
        "supabash",
        "https://project.example",
    )?;
    let ops = OperationSet::new([Operation::Read, Operation::Write, Operation::Commit])?;
    let token = signer.mint("nightly-report", workspace, &ops, 300, Some("run-1"))?;
    println!("   the job's issuer minted a 300 s capability: read, write, commit");
    let service = Arc::new(
        PostgresTransport::connect(
            &cluster.dsn("authenticator"),
            json!({ "role": "service_role" }),
        )
        .await?,
    );
    let job = DelegatedWorkspace::open(service, &token, &ops, Limits::default()).await?;
    println!(
        "   service_role exchanged it for a grant (expires {})",
        job.delegation().expires_at()
    );
    job.fs()
        .append("/notes/todo.md", "- nightly report\n")
        .await?;
    let receipt = job.commit(CommitOptions::new("ignored")).await?.receipt;
    println!(
        "   committed revision {} as actor {:?}, correlation id {:?}",
        short(&receipt.revision),
        receipt.actor,
        receipt.correlation_id.as_deref().unwrap_or("-")
    );
    match job.purge(PurgeOptions::default()).await {
        Err(e) => println!("   purge is not among its operations: {}", e.code()),
        Ok(_) => return Err("a grant without purge purged".into()),
    }
    Ok(())
}

fn main() {
    let cli = Cli::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let outcome = match cli.command {
        Command::Demo => runtime.block_on(demo()),
        Command::StorageSetup(args) => match runtime.block_on(storage_setup(args)) {
            Ok(true) => Ok(()),
            Ok(false) => std::process::exit(2),
            Err(e) => Err(e),
        },
        Command::Redact(args) => runtime
            .block_on(supabash_cli::redact::run(*args))
            .map_err(|e| e as _),
        Command::Verify(args) => match runtime.block_on(supabash_cli::verify::run_verify(args)) {
            Ok(true) => Ok(()),
            Ok(false) => std::process::exit(1),
            Err(e) => Err(e as _),
        },
        Command::Audit(args) => runtime
            .block_on(supabash_cli::audit::run(*args))
            .map_err(|e| e as _),
        Command::Gc(args) => runtime
            .block_on(supabash_cli::verify::run_gc(args))
            .map_err(|e| e as _),
        Command::Doctor(args) => match runtime.block_on(supabash_cli::doctor::run_doctor(*args)) {
            Ok(true) => Ok(()),
            Ok(false) => std::process::exit(1),
            Err(e) => Err(e as _),
        },
        Command::Mcp(args) => runtime
            .block_on(supabash_cli::mcp::run(*args))
            .map_err(|e| e as _),
        Command::Mount(args) => runtime
            .block_on(supabash_cli::fuse::run(*args))
            .map_err(|e| e as _),
        Command::Commit(args) => runtime
            .block_on(supabash_cli::mount_control::commit(args))
            .map_err(|e| e as _),
        Command::Changes(args) => runtime
            .block_on(supabash_cli::mount_control::changes(args))
            .map_err(|e| e as _),
        Command::Workspaces(args) => runtime
            .block_on(supabash_cli::workspaces::list(args))
            .map_err(|e| e as _),
        Command::Fork(args) => runtime
            .block_on(supabash_cli::workspaces::fork(args))
            .map_err(|e| e as _),
        Command::DeleteWorkspace(args) => runtime
            .block_on(supabash_cli::workspaces::delete(args))
            .map_err(|e| e as _),
        Command::Run(args) => match runtime.block_on(supabash_cli::run::run(*args)) {
            Ok(0) => Ok(()),
            Ok(status) => std::process::exit(status),
            Err(e) => Err(e as _),
        },
        Command::Import(args) => runtime
            .block_on(supabash_cli::transfer::import(*args))
            .map_err(|e| e as _),
        Command::Export(args) => runtime
            .block_on(supabash_cli::transfer::export(*args))
            .map_err(|e| e as _),
        Command::Log(args) => runtime
            .block_on(supabash_cli::history::log(*args))
            .map_err(|e| e as _),
        Command::Show(args) => runtime
            .block_on(supabash_cli::history::show(*args))
            .map_err(|e| e as _),
        Command::Ls(args) => runtime
            .block_on(supabash_cli::files::ls(*args))
            .map_err(|e| e as _),
        Command::Tree(args) => runtime
            .block_on(supabash_cli::files::tree(*args))
            .map_err(|e| e as _),
        Command::Cat(args) => runtime
            .block_on(supabash_cli::files::cat(*args))
            .map_err(|e| e as _),
        Command::Diff(args) => runtime
            .block_on(supabash_cli::diff::run(*args))
            .map_err(|e| e as _),
        Command::Restore(args) => runtime
            .block_on(supabash_cli::history::restore(*args))
            .map_err(|e| e as _),
        Command::Checkpoint(args) => runtime
            .block_on(supabash_cli::retention::checkpoint(*args))
            .map_err(|e| e as _),
        Command::Checkpoints(args) => runtime
            .block_on(supabash_cli::retention::checkpoints(*args))
            .map_err(|e| e as _),
        Command::Purge(args) => runtime
            .block_on(supabash_cli::retention::purge(*args))
            .map_err(|e| e as _),
        Command::Verifier { command } => runtime
            .block_on(supabash_cli::verifiers::run(command))
            .map_err(|e| e as _),
        Command::Completions(args) => {
            let script = supabash_cli::completions::script(args.shell, &mut Cli::command());
            std::io::Write::write_all(&mut std::io::stdout(), &script).map_err(|e| e.into())
        }
    };
    if let Err(e) = outcome {
        // The status and the message come from the error taxonomy (docs/cli.md).
        supabash_cli::exit::fail(e.as_ref());
    }
}

//! The `supabash` command-line tool: the command line's definition and the dispatch to the
//! library's feature folders (lib.rs lists them; docs/cli.md). `supabash demo` lives in [`demo`].

#![deny(unsafe_code)]

mod demo;
mod manpages;
mod version;

use clap::{CommandFactory, Parser, Subcommand};
use supabash_cli as cli;
use supabash_cli::exit::Rerun;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[derive(Parser)]
#[command(
    name = "supabash",
    version = version::LONG,
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
    Mcp(Box<cli::mcp::McpArgs>),
    /// Serves a read-only web viewer of your workspaces (timelines, diffs, files, search, the
    /// agents' actions, live updates) on 127.0.0.1; prints its address with a one-time token.
    Ui(Box<cli::ui::UiArgs>),
    /// Sets a project up for the Storage backend: creates the private bucket with the service
    /// key (when missing), then checks in the database that row-level security confines every
    /// user to their own first folder (the four policies of sql/storage.sql) and that no other
    /// policy widens it, and that the bucket's file_size_limit and allowed_mime_types admit what
    /// the backend uploads (with the default limits). Exits with status 8 when a check fails.
    StorageSetup(cli::admin::storage_setup::StorageSetupArgs),
    /// Lists the caller's workspaces (every page): id, label, head, stored bytes, fork origin.
    Workspaces(cli::admin::workspaces::ListArgs),
    /// Forks a workspace at a revision (default: the head) without copying anything; prints
    /// the fork's id.
    Fork(cli::admin::workspaces::ForkArgs),
    /// Deletes a workspace with its history (needs --yes); its forks keep working.
    DeleteWorkspace(cli::admin::workspaces::DeleteArgs),
    /// Removes content from a workspace's history for good: the versions before a boundary
    /// (default: the head, exclusive) at the given paths or with the given body hashes become
    /// tombstones and their bytes leave the database; metadata keys and causes of the selected
    /// revisions can be scrubbed. A dry run unless --apply. WAL, replicas' copies and backups
    /// are beyond its reach.
    Redact(Box<cli::admin::redact::RedactArgs>),
    /// Runs a command on the workspace's files: materialises the staged tree (or --revision)
    /// in a private temporary directory, runs the command there (cleared environment, its own
    /// process group, a timeout), stages exactly what it changed when it succeeds, prints the
    /// staged change list, and commits only with --commit. Exits with the command's status
    /// (124 on timeout); a failure of supabash itself exits with its own status (docs/cli.md).
    Run(Box<cli::run::RunArgs>),
    /// Makes the staged tree match a directory (files it lacks are deleted; moves detected by
    /// content) and prints the staged changes; commits only with --commit.
    Import(Box<cli::run::transfer::ImportArgs>),
    /// Writes the staged tree (or --revision) into an empty directory.
    Export(Box<cli::run::transfer::ExportArgs>),
    /// Mounts a workspace's staged tree (or a revision, read-only) on DIR with FUSE, so any
    /// program works on it. Changes are staged; nothing is committed unless `supabash commit
    /// --mount DIR` asks or --commit-on-unmount is given. Linux only (elsewhere: `supabash run`).
    Mount(Box<cli::mount::MountArgs>),
    /// Commits the staged changes of a running mount (`--mount DIR`) and prints the receipt.
    /// Safe to rerun when the outcome was unknown: the mount sends the same commit again.
    Commit(cli::mount::control::CommitArgs),
    /// Lists the staged changes of a running mount (`--mount DIR`).
    Changes(cli::mount::control::ChangesArgs),
    /// Lists a workspace's history, oldest first: every page, or one with --limit/--cursor.
    Log(Box<cli::history::log::LogArgs>),
    /// Shows one revision's receipt (default: the head) and its notes.
    Show(Box<cli::history::show::ShowArgs>),
    /// Appends a JSON note under a key to an existing revision (no new revision).
    Note(Box<cli::history::notes::NoteArgs>),
    /// Lists a directory at a revision (default: the head).
    Ls(Box<cli::history::files::LsArgs>),
    /// Shows every file below a directory at a revision (default: the head).
    Tree(Box<cli::history::files::TreeArgs>),
    /// Prints a file's bytes at a revision (default: the head), verified against its hashes.
    Cat(Box<cli::history::files::CatArgs>),
    /// A unified diff between two revisions (renames as renames), or --stat.
    Diff(Box<cli::history::diff::DiffArgs>),
    /// Commits a new revision whose tree is an older revision's (history is never rewound).
    Restore(Box<cli::history::restore::RestoreArgs>),
    /// Pins a revision (default: the head) so purge keeps it.
    Checkpoint(Box<cli::admin::retention::CheckpointArgs>),
    /// Lists the workspace's checkpoints.
    Checkpoints(Box<cli::admin::retention::CheckpointsArgs>),
    /// Drops old revisions nothing pins: a dry run showing what would go unless --apply.
    Purge(Box<cli::admin::retention::PurgeArgs>),
    /// Registers, rotates or revokes a capability verifier (the database owner only).
    Verifier {
        #[command(subcommand)]
        command: cli::admin::verifiers::VerifierCommand,
    },
    /// Writes the man pages into DIR (scripts/package.sh).
    #[command(hide = true)]
    Manpages { dir: std::path::PathBuf },
    /// Prints a shell completion script.
    Completions(cli::completions::CompletionsArgs),
    /// Checks that a workspace's stored history holds together: every entry's body stored,
    /// every body and delta chain decoding to its hash, the revision chain and head, every
    /// receipt against the entries. Reports every problem; repairs nothing. Exits with status
    /// 8 when it finds a problem.
    Verify(cli::check::verify::VerifyArgs),
    /// Reports the caller's orphan bodies (stored, referenced by nothing) and idle workspaces;
    /// with --apply deletes the orphan bodies (idle workspaces are only reported).
    Gc(cli::check::verify::GcArgs),
    /// Checks the installation, one line per check: connectivity, the extension's version
    /// and pending upgrades, privileges and row-level security, Storage policies, clock skew.
    /// Exits with status 8 when a check fails.
    Doctor(Box<cli::check::doctor::DoctorArgs>),
    /// Lists the workspace's audit trail (agent actions: tool calls, bash, apply_patch, mount
    /// and run sessions), or only the records of one revision; discarded sessions' too.
    Audit(Box<cli::history::audit::AuditArgs>),
}

/// Runs `command`; answers the status to exit with when supabash itself did not fail: 0, or
/// for `run` its command's status.
async fn dispatch(command: Command) -> Result<i32, BoxError> {
    let done = |()| 0;
    match command {
        Command::Demo => demo::run().await.map(done),
        Command::Mcp(args) => cli::mcp::run(*args).await.map(done),
        Command::Ui(args) => cli::ui::run(*args).await.map(done),
        Command::StorageSetup(args) => cli::admin::storage_setup::run(args).await.map(done),
        Command::Workspaces(args) => cli::admin::workspaces::list(args).await.map(done),
        Command::Fork(args) => cli::admin::workspaces::fork(args).await.map(done),
        Command::DeleteWorkspace(args) => cli::admin::workspaces::delete(args).await.map(done),
        Command::Redact(args) => cli::admin::redact::run(*args).await.map(done),
        Command::Run(args) => cli::run::run(*args).await,
        Command::Import(args) => cli::run::transfer::import(*args).await.map(done),
        Command::Export(args) => cli::run::transfer::export(*args).await.map(done),
        Command::Mount(args) => cli::mount::run(*args).await.map(done),
        Command::Commit(args) => cli::mount::control::commit(args).await.map(done),
        Command::Changes(args) => cli::mount::control::changes(args).await.map(done),
        Command::Log(args) => cli::history::log::log(*args).await.map(done),
        Command::Show(args) => cli::history::show::show(*args).await.map(done),
        Command::Note(args) => cli::history::notes::note(*args).await.map(done),
        Command::Ls(args) => cli::history::files::ls(*args).await.map(done),
        Command::Tree(args) => cli::history::files::tree(*args).await.map(done),
        Command::Cat(args) => cli::history::files::cat(*args).await.map(done),
        Command::Diff(args) => cli::history::diff::run(*args).await.map(done),
        Command::Restore(args) => cli::history::restore::restore(*args).await.map(done),
        Command::Checkpoint(args) => cli::admin::retention::checkpoint(*args).await.map(done),
        Command::Checkpoints(args) => cli::admin::retention::checkpoints(*args).await.map(done),
        Command::Purge(args) => cli::admin::retention::purge(*args).await.map(done),
        Command::Verifier { command } => cli::admin::verifiers::run(command).await.map(done),
        Command::Completions(args) => {
            let script = cli::completions::script(args.shell, &mut Cli::command());
            std::io::Write::write_all(&mut std::io::stdout(), &script)?;
            Ok(0)
        }
        Command::Manpages { dir } => Ok(manpages::write(&dir, Cli::command()).map(|()| 0)?),
        Command::Verify(args) => cli::check::verify::run_verify(args).await.map(done),
        Command::Gc(args) => cli::check::verify::run_gc(args).await.map(done),
        Command::Doctor(args) => cli::check::doctor::run_doctor(*args).await.map(done),
        Command::Audit(args) => cli::history::audit::run(*args).await.map(done),
    }
}

/// What running `command` again does when a change it sent was left with an unknown outcome
/// (said in the error report; docs/cli.md).
fn rerun(command: &Command) -> Rerun {
    use cli::admin::verifiers::VerifierCommand as V;
    const LOG: &str = "supabash log";
    match command {
        Command::Import(_) => Rerun::safe(
            "it stages only what still differs from the directory (nothing once the commit landed)",
            LOG,
        ),
        Command::Run(_) => Rerun::not_safe(
            "it runs the command again on the head, which may already hold its changes",
            LOG,
        ),
        Command::Commit(_) => Rerun::safe(
            "the mount sends the same commit again (same transaction id and idempotency key) and gets the first attempt's receipt if it landed",
            LOG,
        ),
        Command::Mount(_) => Rerun::not_safe(
            "the mount's staged changes ended with it; mount again and compare with the head",
            LOG,
        ),
        Command::Mcp(_) => Rerun::not_safe(
            "the session's staged edits ended with it; compare the head with what it should hold",
            LOG,
        ),
        Command::Restore(_) => Rerun::not_safe(
            "it commits again: one more revision with the same tree if the first landed",
            LOG,
        ),
        Command::Checkpoint(_) => Rerun::safe(
            "the same --idempotency-key answers the first checkpoint; without one a second checkpoint pins the same revision",
            "supabash checkpoints",
        ),
        Command::Purge(_) => Rerun::safe("it drops only what is still there", LOG),
        Command::Note(_) => Rerun::not_safe(
            "it appends the note again: one more version under the key if the first landed",
            "supabash show REV",
        ),
        Command::Redact(_) => Rerun::safe(
            "what is already redacted is not found again",
            "supabash redact (a dry run, without --apply)",
        ),
        Command::Gc(_) => Rerun::safe("it deletes only orphans still there", "supabash gc"),
        Command::Fork(_) => Rerun::not_safe(
            "it makes another fork if the first was made",
            "supabash workspaces",
        ),
        Command::DeleteWorkspace(_) => Rerun::safe(
            "a deleted workspace answers NOT_FOUND",
            "supabash workspaces",
        ),
        Command::StorageSetup(_) => Rerun::safe("it creates the bucket only when missing", "supabash storage-setup"),
        Command::Verifier { command } => match command {
            V::Register(_) => Rerun::safe("a registered key id is refused", "supabash verifier rotate"),
            V::Rotate(_) => Rerun::not_safe(
                "it rotates again: the key of the first rotation stops working",
                "the issuer's key",
            ),
            V::Revoke(_) => Rerun::safe("a revoked key id answers NOT_FOUND", "supabash verifier revoke"),
        },
        Command::Demo
        | Command::Workspaces(_)
        | Command::Export(_)
        | Command::Changes(_)
        | Command::Log(_)
        | Command::Show(_)
        | Command::Ls(_)
        | Command::Tree(_)
        | Command::Cat(_)
        | Command::Diff(_)
        | Command::Checkpoints(_)
        | Command::Completions(_)
        | Command::Manpages { .. }
        | Command::Verify(_)
        | Command::Doctor(_)
        | Command::Audit(_)
        | Command::Ui(_) => Rerun::READ,
    }
}

fn main() {
    let args = Cli::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let rerun = rerun(&args.command);
    match runtime.block_on(dispatch(args.command)) {
        Ok(0) => {}
        Ok(status) => std::process::exit(status),
        // The status and the message come from the error taxonomy (docs/cli.md).
        Err(e) => cli::exit::fail(e.as_ref(), rerun),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Flags declared twice (two flattened blocks with one name) fail here, not at run time.
    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }
}

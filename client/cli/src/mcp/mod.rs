//! `supabash mcp`: opens the workspaces the way a host does (a direct Postgres connection
//! acting as a user, or PostgREST with the user's token), serves the tools over stdio or
//! streamable HTTP, and, when the host asked for it at launch, commits each workspace when the
//! session ends. Every tool call is recorded in the audit queue of the workspace it concerns,
//! so the commit (or the discard at the end of an uncommitted session) writes it. With
//! `--host-tools` commit, history, diff, restore and checkpoint are tools too.
//!
//! `--mount POINT=SOURCE[@REVISION][:ro|:rw]` composes the filesystem instead: workspaces
//! read-write (their staged trees) or read-only (a snapshot of the committed base), and
//! read-only snapshots of pinned revisions (shared documentation), each with its own view root
//! and hidden paths ([`mounts`]). `--capability-file` serves a delegated workspace, exactly
//! as a job would open it. `--tools` serves only the named tools; `--read-only` (or every
//! mount read-only) serves no tool that changes anything.

pub mod mounts;

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::ServiceExt;
use serde_json::json;
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use supabash::delegated::DelegatedWorkspace;
use supabash::workspace::CommitOptions;
use supabash::Workspace;
use supabash_agent::mcp::{AuditTargets, HostTools, McpServer, RecordingFs, Session};
use supabash_agent::redact::Redactor;
use supabash_agent::shell::{Shell, ShellConfig};
use supabash_agent::tools::ToolOptions;
use supabash_agent::{AgentFs, Mount, MountedFs, SharedSnapshot, SnapshotLimits, ViewSpec};
use supabash_core::capability::{Operation, OperationSet};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Arguments of `supabash mcp`.
#[derive(Debug, clap::Args)]
pub struct McpArgs {
    #[command(flatten)]
    pub connect: crate::connect::ConnectArgs,
    /// A workspace to serve: ID, or LABEL=ID. With several, each is mounted at /LABEL
    /// (default label: the id). Without it and without --create: $SUPABASH_WORKSPACE, else
    /// the profile's `workspace`.
    #[arg(long = "workspace", value_name = "[LABEL=]ID")]
    pub workspaces: Vec<String>,
    /// Create a new workspace and serve it (its id is printed on stderr).
    #[arg(long)]
    pub create: bool,
    /// Serve streamable HTTP on this address (at /mcp) instead of stdio.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<SocketAddr>,
    /// Wall-clock deadline of one bash command, in seconds.
    #[arg(long, default_value_t = 30)]
    pub timeout_secs: u64,
    /// Cap of a bash command's stdout and of its stderr, in bytes.
    #[arg(long, default_value_t = supabash_agent::shell::DEFAULT_MAX_OUTPUT_BYTES)]
    pub max_output_bytes: usize,
    /// Do not offer `view_image`.
    #[arg(long)]
    pub no_images: bool,
    /// When the session ends (stdin closes, or Ctrl-C for HTTP), commit each workspace that
    /// has staged changes and write its receipt. Without it, staged edits are discarded.
    #[arg(long)]
    pub commit_on_exit: bool,
    /// The actor recorded by --commit-on-exit.
    #[arg(long, default_value = "supabash-mcp")]
    pub actor: String,
    /// Where --commit-on-exit writes receipts, one JSON object per line (default: stderr).
    #[arg(long, value_name = "PATH")]
    pub receipts: Option<PathBuf>,
    /// Also serve commit, history, diff, restore and checkpoint as tools (annotated as host
    /// actions), for setups where the MCP client is the host. Commits record --actor.
    #[arg(long)]
    pub host_tools: bool,
    /// Mount a workspace at POINT: read-write (default) or `:ro` (a snapshot of its committed
    /// revision), or `@REVISION` for a read-only snapshot of that revision. Repeatable;
    /// replaces --workspace.
    #[arg(long = "mount", value_name = "POINT=SOURCE[@REVISION][:ro|:rw]")]
    pub mounts: Vec<String>,
    /// Show only ROOT of the mount at POINT (its paths appear relative to ROOT).
    #[arg(long = "view-root", value_name = "POINT=ROOT")]
    pub view_roots: Vec<String>,
    /// Hide PATH of the mount at POINT (repeatable).
    #[arg(long = "hide", value_name = "POINT=PATH")]
    pub hides: Vec<String>,
    /// Serve the delegated workspace of this capability (a compact JWS, as a job presents it),
    /// exchanged with the service role (--url with the service-role key as token and apikey,
    /// or --dsn). Needs --operations.
    #[arg(long, value_name = "PATH", requires = "operations")]
    pub capability_file: Option<PathBuf>,
    /// The exact operations the capability must grant (comma-separated, e.g. read,write,commit).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub operations: Vec<String>,
    /// Serve only these tools (comma-separated names); others are refused by name.
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub tools: Vec<String>,
    /// Serve no tool that can change anything (also implied when every mount is read-only).
    #[arg(long)]
    pub read_only: bool,
}

/// The literal secrets of the command line, redacted from everything the tools return.
fn redactor(args: &McpArgs) -> Redactor {
    args.connect
        .secrets()
        .fold(Redactor::default(), |r, s| r.with_literal(s.clone()))
}

type Served = Vec<(String, Arc<Workspace>)>;

/// What `--mount` opened: the writable workspaces (committed or discarded at the end, their
/// label the mount point without its leading `/`) and every mount.
struct Mounted {
    writable: Served,
    mounts: Vec<Mount>,
}

async fn open_mounts(args: &McpArgs) -> Result<Mounted, BoxError> {
    let plans = mounts::plan(&args.mounts, &args.view_roots, &args.hides)?;
    let transport = args.connect.connect().await?;
    let mut out = Mounted {
        writable: Vec::new(),
        mounts: Vec::new(),
    };
    for p in plans {
        let view = (p.root.is_some() || !p.hidden.is_empty()).then(|| {
            let v = ViewSpec::default().with_hidden(p.hidden.clone());
            match &p.root {
                Some(r) => v.with_root(r.clone()),
                None => v,
            }
        });
        let ws = Workspace::builder(transport.clone())
            .audit_actor(args.actor.clone())
            .open(&p.source)
            .await
            .map_err(|e| format!("--mount {}: workspace {}: {e}", p.point, p.source))?;
        let mount = if p.writable {
            let m = Mount::workspace(&p.point, &ws, view)?;
            out.writable
                .push((p.point.trim_start_matches('/').to_owned(), Arc::new(ws)));
            m
        } else {
            let limits = SnapshotLimits::default();
            let snapshot = match &p.revision {
                Some(rev) => SharedSnapshot::from_revision(&ws, &p.source, rev, limits)
                    .await
                    .map_err(|e| {
                        format!(
                            "--mount {}: revision {rev} of workspace {} cannot be read: {e}",
                            p.point, p.source
                        )
                    })?,
                None => SharedSnapshot::from_workspace(&ws, &p.source, limits).await?,
            };
            Mount::snapshot(&p.point, Arc::new(snapshot), view)?
        };
        out.mounts.push(mount);
    }
    Ok(out)
}

/// The delegated workspace of `--capability-file`, opened as a job would.
async fn open_delegated(
    args: &McpArgs,
    path: &std::path::Path,
) -> Result<DelegatedWorkspace, BoxError> {
    let token = std::fs::read_to_string(path)
        .map_err(|e| format!("--capability-file {}: {e}", path.display()))?;
    let ops = OperationSet::from_wire(&args.operations).map_err(|_| {
        "--operations: a comma-separated list of distinct operations (read,write,commit,…)"
    })?;
    let transport = args.connect.connect_as_service().await?;
    Ok(
        DelegatedWorkspace::open(transport, token.trim(), &ops, supabash::Limits::default())
            .await?,
    )
}

async fn open(args: &McpArgs) -> Result<Served, BoxError> {
    let transport = args.connect.connect().await?;
    let builder = || Workspace::builder(transport.clone()).audit_actor(args.actor.clone());
    let mut out = Vec::new();
    if args.create {
        let ws = builder().create().await?;
        eprintln!("supabash mcp: created workspace {}", ws.id());
        out.push((ws.id().to_owned(), Arc::new(ws)));
    }
    let mut specs = args.workspaces.clone();
    if specs.is_empty() && !args.create {
        specs.push(match std::env::var(crate::connect::WORKSPACE_ENV) {
            Ok(id) if !id.is_empty() => id,
            _ => args.connect.profile_workspace()?,
        });
    }
    for spec in &specs {
        let (label, id) = spec.split_once('=').unwrap_or((spec, spec));
        let ws = builder().open(id).await?;
        out.push((label.to_owned(), Arc::new(ws)));
    }
    Ok(out)
}

fn filesystem(workspaces: &Served) -> Result<Arc<dyn AgentFs>, BoxError> {
    if let [(_, ws)] = workspaces.as_slice() {
        return Ok(ws.fs().clone());
    }
    let mounts = workspaces
        .iter()
        .map(|(label, ws)| Mount::workspace(&format!("/{label}"), ws.as_ref(), None))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Arc::new(MountedFs::new(mounts)?))
}

/// Where each workspace's tool calls are recorded.
fn audit_targets(workspaces: &Served) -> AuditTargets {
    match workspaces.as_slice() {
        [(_, ws)] => AuditTargets::single(ws.audit_queue()),
        all => AuditTargets::mounted(
            all.iter()
                .map(|(label, ws)| (format!("/{label}"), ws.audit_queue()))
                .collect(),
        ),
    }
}

/// Without --commit-on-exit: what the session staged is thrown away, its audit records are
/// written marked discarded.
async fn discard_all(workspaces: &Served) -> Result<(), BoxError> {
    for (_, ws) in workspaces {
        ws.discard().await?;
    }
    Ok(())
}

async fn commit_all(args: &McpArgs, workspaces: &Served) -> Result<(), BoxError> {
    let mut sink: Box<dyn Write> = match &args.receipts {
        Some(p) => Box::new(std::fs::File::create(p)?),
        None => Box::new(std::io::stderr()),
    };
    for (label, ws) in workspaces {
        let line = if ws.changes()?.is_empty() {
            // Nothing to commit: the session's audit records are kept as discarded.
            ws.discard().await?;
            json!({ "workspace": ws.id(), "label": label, "receipt": null })
        } else {
            let options = CommitOptions::new(args.actor.clone()).with_cause("supabash mcp session");
            let committed = ws.commit(options).await?;
            json!({ "workspace": ws.id(), "label": label, "receipt": committed.receipt })
        };
        writeln!(sink, "{line}")?;
    }
    sink.flush()?;
    Ok(())
}

/// Refuses flags that cannot go together: `--mount` with `--workspace`/`--create`, and
/// `--capability-file` with any other source or `--host-tools`.
fn check_sources(args: &McpArgs) -> Result<(), BoxError> {
    if !args.mounts.is_empty() && (!args.workspaces.is_empty() || args.create) {
        return Err("--mount replaces --workspace and --create: give one or the other".into());
    }
    if args.capability_file.is_some()
        && (!args.mounts.is_empty()
            || !args.workspaces.is_empty()
            || args.create
            || args.host_tools)
    {
        return Err(
            "--capability-file serves the capability's workspace alone (no --mount, --workspace, --create or --host-tools)"
                .into(),
        );
    }
    Ok(())
}

/// What a session serves: the filesystem the tools work on, the workspaces behind it (the
/// writable ones, with their labels) or the delegated workspace, and whether it is read-only.
struct Opened {
    workspaces: Served,
    delegated: Option<DelegatedWorkspace>,
    fs: Arc<dyn AgentFs>,
    read_only: bool,
}

/// Opens what the flags name: a delegated workspace (`--capability-file`), a composition of
/// mounts (`--mount`), or workspaces (`--workspace`, `--create`, else the default one).
async fn open_sources(args: &McpArgs) -> Result<Opened, BoxError> {
    if let Some(path) = &args.capability_file {
        let ws = open_delegated(args, path).await?;
        // The staged tree when the grant allows write, else a read-only snapshot of the
        // committed revision (what DelegatedMount does for a mount point).
        let (fs, read_only): (Arc<dyn AgentFs>, bool) =
            if ws.delegation().operations().contains(Operation::Write) {
                (ws.fs().clone(), args.read_only)
            } else {
                let snap = ws.committed_snapshot().await?;
                let limits = SnapshotLimits::default();
                let snapshot = SharedSnapshot::from_committed(ws.id(), snap, limits).await?;
                (Arc::new(snapshot), true)
            };
        return Ok(Opened {
            workspaces: Vec::new(),
            delegated: Some(ws),
            fs,
            read_only,
        });
    }
    if !args.mounts.is_empty() {
        let mounted = open_mounts(args).await?;
        return Ok(Opened {
            read_only: args.read_only || mounted.writable.is_empty(),
            workspaces: mounted.writable,
            delegated: None,
            fs: Arc::new(MountedFs::new(mounted.mounts)?),
        });
    }
    let workspaces = open(args).await?;
    Ok(Opened {
        fs: filesystem(&workspaces)?,
        workspaces,
        delegated: None,
        read_only: args.read_only,
    })
}

/// The MCP server over `opened`: every tool call recorded, output redacted, the tools the
/// flags select.
fn server(args: &McpArgs, opened: &Opened) -> Result<McpServer, BoxError> {
    let fs: Arc<dyn AgentFs> = Arc::new(RecordingFs(opened.fs.clone()));
    let redactor = redactor(args);
    let config = ShellConfig::default()
        .with_timeout(Duration::from_secs(args.timeout_secs))
        .with_max_output_bytes(args.max_output_bytes)
        .with_redactor(redactor.clone());
    let session = Session {
        shell: Shell::with_config(fs.clone(), config),
        fs,
        options: ToolOptions::default().with_images(!args.no_images),
    };
    let mut server = McpServer::new(session, redactor);
    if !opened.workspaces.is_empty() {
        server = server.with_audit(audit_targets(&opened.workspaces));
    }
    if args.host_tools {
        server = server.with_host_tools(HostTools {
            workspaces: opened.workspaces.clone(),
            actor: args.actor.clone(),
        });
    }
    if !args.tools.is_empty() {
        server = server.with_tools(&args.tools)?;
    }
    if opened.read_only {
        server = server.read_only();
    }
    Ok(server)
}

/// Serves `server` on stdio until the client leaves, or on streamable HTTP at `http` (path
/// `/mcp`) until Ctrl-C.
async fn serve(server: McpServer, http: Option<SocketAddr>) -> Result<(), BoxError> {
    let Some(addr) = http else {
        let running = server.serve(rmcp::transport::stdio()).await?;
        running.waiting().await?;
        return Ok(());
    };
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        LocalSessionManager::default().into(),
        StreamableHttpServerConfig::default(),
    );
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(addr).await?;
    eprintln!(
        "supabash mcp: serving http://{}/mcp",
        listener.local_addr()?
    );
    axum::serve(listener, router)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}

/// Ends the session: commits what it staged with `--commit-on-exit`, else discards it.
async fn end_session(args: &McpArgs, opened: &Opened) -> Result<(), BoxError> {
    if args.commit_on_exit {
        commit_all(args, &opened.workspaces).await?;
        if let Some(ws) = opened
            .delegated
            .as_ref()
            .filter(|ws| ws.changes().is_ok_and(|c| !c.is_empty()))
        {
            let committed = ws.commit(CommitOptions::new(args.actor.clone())).await?;
            eprintln!(
                "{}",
                json!({ "workspace": ws.id(), "receipt": committed.receipt })
            );
        }
    } else {
        discard_all(&opened.workspaces).await?;
        if let Some(ws) = &opened.delegated {
            ws.discard().await?;
        }
    }
    Ok(())
}

/// Runs `supabash mcp`.
pub async fn run(args: McpArgs) -> Result<(), BoxError> {
    check_sources(&args)?;
    let opened = open_sources(&args).await?;
    serve(server(&args, &opened)?, args.http).await?;
    end_session(&args, &opened).await
}

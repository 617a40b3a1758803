//! `supabash mcp`: opens the workspaces the way a host does (a direct Postgres connection
//! acting as a user, or PostgREST with the user's token), serves the tools over stdio or
//! streamable HTTP, and, when the host asked for it at launch, commits each workspace when the
//! session ends. Every tool call is recorded in the audit queue of the workspace it concerns,
//! so the commit (or the discard at the end of an uncommitted session) writes it. With
//! `--host-tools` commit, history, diff, restore and checkpoint are tools too.

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::ServiceExt;
use serde_json::json;
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use supabash::workspace::CommitOptions;
use supabash::Workspace;
use supabash_agent::mcp::{AuditTargets, HostTools, McpServer, RecordingFs, Session};
use supabash_agent::redact::Redactor;
use supabash_agent::shell::{Shell, ShellConfig};
use supabash_agent::tools::ToolOptions;
use supabash_agent::{AgentFs, Mount, MountedFs};

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
}

/// The literal secrets of the command line, redacted from everything the tools return.
fn redactor(args: &McpArgs) -> Redactor {
    args.connect
        .secrets()
        .fold(Redactor::default(), |r, s| r.with_literal(s.clone()))
}

type Served = Vec<(String, Arc<Workspace>)>;

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

/// Runs `supabash mcp`.
pub async fn run(args: McpArgs) -> Result<(), BoxError> {
    let workspaces = open(&args).await?;
    let fs: Arc<dyn AgentFs> = Arc::new(RecordingFs(filesystem(&workspaces)?));
    let redactor = redactor(&args);
    let config = ShellConfig::default()
        .with_timeout(Duration::from_secs(args.timeout_secs))
        .with_max_output_bytes(args.max_output_bytes)
        .with_redactor(redactor.clone());
    let session = Session {
        shell: Shell::with_config(fs.clone(), config),
        fs,
        options: ToolOptions::default().with_images(!args.no_images),
    };
    let mut server = McpServer::new(session, redactor).with_audit(audit_targets(&workspaces));
    if args.host_tools {
        server = server.with_host_tools(HostTools {
            workspaces: workspaces.clone(),
            actor: args.actor.clone(),
        });
    }
    match args.http {
        None => {
            let running = server.serve(rmcp::transport::stdio()).await?;
            running.waiting().await?;
        }
        Some(addr) => {
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
        }
    }
    if args.commit_on_exit {
        commit_all(&args, &workspaces).await?;
    } else {
        discard_all(&workspaces).await?;
    }
    Ok(())
}

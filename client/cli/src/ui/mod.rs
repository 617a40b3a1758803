//! `supabash ui`: a read-only web viewer of the workspaces the connection's identity may see:
//! their timelines, diffs, trees, files, searches and audit records, updated live from the
//! change feed (docs/ui.md). The server ([`router`]) answers JSON ([`api`]) and its embedded
//! page ([`assets`]); every request needs the one-time token the command prints, or the cookie
//! it is exchanged for ([`auth`]), and every answer carries a strict Content-Security-Policy
//! ([`headers`]).

pub mod api;
pub mod assets;
pub mod auth;
pub mod diffs;
pub mod error;
pub mod headers;
pub mod live;
pub mod pool;
pub mod timeline;
pub mod tree;

use crate::connect::{ConnectArgs, WORKSPACE_ENV};
use axum::routing::get;
use axum::Router;
use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use supabash::Transport;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Arguments of `supabash ui`.
#[derive(Debug, clap::Args)]
pub struct UiArgs {
    #[command(flatten)]
    pub connect: ConnectArgs,
    /// The port to listen on (default: a free one).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// The address to listen on. Anything but loopback lets other machines ask for the token.
    #[arg(long, value_name = "ADDR", default_value_t = IpAddr::V4(Ipv4Addr::LOCALHOST))]
    pub bind: IpAddr,
    /// A workspace to open first (default: $SUPABASH_WORKSPACE; else the list).
    #[arg(long, short = 'w', env = WORKSPACE_ENV)]
    pub workspace: Option<String>,
}

/// What every handler shares: the connections (one identity) and the token check.
#[derive(Clone)]
pub struct UiState {
    pub transport: Arc<dyn Transport>,
    pub auth: Arc<auth::Auth>,
    pub receipts: Arc<timeline::ReceiptCache>,
}

/// The whole app: the page, its assets and the API, behind the token and the headers.
pub fn router(state: UiState) -> Router {
    Router::new()
        .route("/", get(assets::index))
        .route("/assets/{name}", get(assets::asset))
        .merge(api::routes())
        .fallback(error::no_route)
        .layer(axum::middleware::from_fn_with_state(
            state.auth.clone(),
            auth::guard,
        ))
        .layer(axum::middleware::from_fn(headers::secure))
        .with_state(state)
}

/// The address to open: the page with the one-time token, and the workspace to show first.
fn page_url(addr: SocketAddr, token: &str, workspace: Option<&str>) -> String {
    let mut url = format!("http://{addr}/?token={token}");
    if let Some(ws) = workspace {
        url.push_str("#ws?ws=");
        // Workspace ids are UUIDs: only their letters, digits and dashes go in.
        url.extend(
            ws.chars()
                .filter(|c| c.is_ascii_alphanumeric() || *c == '-'),
        );
    }
    url
}

/// The viewer's transport: over a direct connection a [`pool::ReadPool`] of
/// [`pool::DIRECT_CONNECTIONS`] connections (made side by side), so the page's requests do not
/// queue on one; over PostgREST one transport (its HTTP requests already run side by side).
async fn connect(args: &ConnectArgs) -> Result<Arc<dyn Transport>, BoxError> {
    if !args.is_direct()? {
        return args.connect().await;
    }
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..pool::DIRECT_CONNECTIONS {
        let args = args.clone();
        tasks.spawn(async move { args.connect().await });
    }
    let mut members = Vec::with_capacity(pool::DIRECT_CONNECTIONS);
    while let Some(joined) = tasks.join_next().await {
        members.push(joined.map_err(|e| -> BoxError { Box::new(e) })??);
    }
    Ok(Arc::new(pool::ReadPool::new(members)))
}

/// `supabash ui`: serves the viewer until Ctrl-C; prints its address (with the token) alone
/// on stdout.
pub async fn run(args: UiArgs) -> Result<(), BoxError> {
    let transport = connect(&args.connect).await?;
    let listener = tokio::net::TcpListener::bind((args.bind, args.port)).await?;
    let addr = listener.local_addr()?;
    let auth = Arc::new(auth::Auth::new(addr.port()));
    let url = page_url(addr, auth.url_token(), args.workspace.as_deref());
    let mut stdout = std::io::stdout();
    writeln!(stdout, "{url}")?;
    stdout.flush()?;
    eprintln!("supabash ui: read-only viewer at {url} (the token works once; Ctrl-C stops)");
    let state = UiState {
        transport,
        auth,
        receipts: Arc::default(),
    };
    axum::serve(listener, router(state))
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}

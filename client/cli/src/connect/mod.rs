//! How a command reaches the RPCs, shared by every subcommand that opens a workspace: a direct
//! Postgres connection acting as a user (trusted hosts), or PostgREST with the user's token.
//! Each setting comes from its flag, else its environment variable, else the profile
//! ([`crate::connect::profile`]); secrets can always come from the environment or a file, and are
//! never printed.

pub(crate) mod body_cache;
pub mod profile;

use crate::exit::{hide, usage};
use profile::Profile;
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;
use supabash::{PostgresTransport, PostgrestTransport, SupabashError, Transport};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Connection arguments (flattened into each command that needs them).
#[derive(Debug, Clone, clap::Args)]
pub struct ConnectArgs {
    /// Direct Postgres connection string (trusted hosts), acting as the user given by --sub.
    #[arg(
        long,
        env = "SUPABASH_DSN",
        hide_env_values = true,
        conflicts_with = "url"
    )]
    pub dsn: Option<String>,
    /// A file holding the direct connection string.
    #[arg(
        long,
        env = "SUPABASH_DSN_FILE",
        value_name = "PATH",
        conflicts_with = "url"
    )]
    pub dsn_file: Option<PathBuf>,
    /// The user id a direct connection acts as (claims: sub, role authenticated).
    #[arg(long, env = "SUPABASH_SUB")]
    pub sub: Option<String>,
    /// PostgREST base URL (Supabase: `https://<project>.supabase.co/rest/v1`).
    #[arg(long, env = "SUPABASH_URL")]
    pub url: Option<String>,
    /// The user's access token, sent as `Authorization: Bearer` (prefer the environment or
    /// --token-file: a flag is visible to other users of the machine).
    #[arg(long, env = "SUPABASH_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// A file holding the access token.
    #[arg(long, env = "SUPABASH_TOKEN_FILE", value_name = "PATH")]
    pub token_file: Option<PathBuf>,
    /// The publishable key, sent as `apikey`.
    #[arg(long, env = "SUPABASH_APIKEY", hide_env_values = true)]
    pub apikey: Option<String>,
    /// A file holding the publishable key.
    #[arg(long, env = "SUPABASH_APIKEY_FILE", value_name = "PATH")]
    pub apikey_file: Option<PathBuf>,
    /// The profile of the config file to use (default: its `default_profile`).
    #[arg(long, env = "SUPABASH_PROFILE")]
    pub profile: Option<String>,
    /// The config file (default: $SUPABASH_CONFIG, else ~/.config/supabash/config.toml).
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,
}

/// Where and as whom to connect, every setting resolved.
enum Endpoint {
    Direct {
        dsn: String,
        sub: String,
    },
    Http {
        url: String,
        token: String,
        apikey: String,
    },
}

impl ConnectArgs {
    /// The profile these arguments select (empty without a config file).
    pub fn load_profile(&self) -> Result<Profile, BoxError> {
        let path = profile::config_path(self.config.as_deref());
        profile::load(path.as_deref(), self.profile.as_deref())
    }

    fn endpoint(&self) -> Result<Endpoint, BoxError> {
        let p = self.load_profile()?;
        let given_dsn = profile::secret(&self.dsn, &self.dsn_file)?;
        // The transport the flags or environment name wins over the profile's as a whole.
        let (dsn, url) = if given_dsn.is_some() || self.url.is_some() {
            (given_dsn, self.url.clone())
        } else {
            (p.dsn()?, p.url.clone())
        };
        if let Some(dsn) = dsn {
            let sub = self
                .sub
                .clone()
                .or(p.sub.clone())
                .ok_or_else(|| usage("a direct connection (--dsn) needs --sub"))?;
            return Ok(Endpoint::Direct { dsn, sub });
        }
        let url = url.ok_or_else(|| {
            usage("give --dsn (with --sub) or --url (with a token and an apikey), or a profile")
        })?;
        let token = match profile::secret(&self.token, &self.token_file)? {
            Some(t) => t,
            None => p.token()?.ok_or_else(|| {
                usage("--url needs a token (SUPABASH_TOKEN, --token-file or the profile)")
            })?,
        };
        let apikey = match profile::secret(&self.apikey, &self.apikey_file)? {
            Some(k) => k,
            None => p.apikey()?.ok_or_else(|| {
                usage("--url needs an apikey (SUPABASH_APIKEY, --apikey-file or the profile)")
            })?,
        };
        Ok(Endpoint::Http { url, token, apikey })
    }

    /// Whether these arguments reach PostgreSQL directly (a transport is one connection, one
    /// call at a time) rather than over PostgREST (HTTP requests, side by side on one).
    pub fn is_direct(&self) -> Result<bool, BoxError> {
        Ok(matches!(self.endpoint()?, Endpoint::Direct { .. }))
    }

    /// The transport these arguments describe.
    pub async fn connect(&self) -> Result<Arc<dyn Transport>, BoxError> {
        self.connect_with(
            |sub| json!({ "role": "authenticated", "sub": sub, "aud": "authenticated" }),
        )
        .await
    }

    /// The transport these arguments describe, as `service_role` (a delegated job's service):
    /// over Postgres with service-role claims, over PostgREST with the token given (which
    /// must then be the service-role key).
    pub async fn connect_as_service(&self) -> Result<Arc<dyn Transport>, BoxError> {
        self.connect_with(|_| json!({ "role": "service_role" }))
            .await
    }

    /// The transport, with `claims` (given the user id) on a direct connection.
    async fn connect_with(
        &self,
        claims: impl FnOnce(&str) -> serde_json::Value,
    ) -> Result<Arc<dyn Transport>, BoxError> {
        match self.endpoint()? {
            Endpoint::Direct { dsn, sub } => {
                let transport = PostgresTransport::connect(&dsn, claims(&sub))
                    .await
                    .map_err(|e| SupabashError::from_rpc(e, false))?;
                Ok(Arc::new(transport))
            }
            Endpoint::Http { url, token, apikey } => {
                Ok(Arc::new(PostgrestTransport::new(&url, &apikey, &token)))
            }
        }
    }

    /// The secrets among these arguments and the profile's (to redact from anything shown to
    /// a model or a log).
    pub fn secrets(&self) -> impl Iterator<Item = String> {
        let mut out: Vec<String> = [&self.dsn, &self.token, &self.apikey]
            .into_iter()
            .flatten()
            .cloned()
            .collect();
        match self.endpoint() {
            Ok(Endpoint::Direct { dsn, .. }) => out.push(dsn),
            Ok(Endpoint::Http { token, apikey, .. }) => out.extend([token, apikey]),
            Err(_) => {}
        }
        for s in &out {
            hide(s);
        }
        out.into_iter()
    }
}

/// The environment variable naming the default workspace.
pub const WORKSPACE_ENV: &str = "SUPABASH_WORKSPACE";

/// A workspace and how to reach it: the one argument block every command on one workspace
/// flattens (`log`, `ls`, `verify`, `run`, `import`, `export`, `mount`, ...).
#[derive(Debug, Clone, clap::Args)]
pub struct Target {
    #[command(flatten)]
    pub connect: ConnectArgs,
    /// The workspace (default: $SUPABASH_WORKSPACE, else the profile's `workspace`).
    #[arg(long, short = 'w', env = WORKSPACE_ENV)]
    pub workspace: Option<String>,
}

impl ConnectArgs {
    /// The workspace the profile names, or a usage error saying where to give one.
    pub fn profile_workspace(&self) -> Result<String, BoxError> {
        self.load_profile()?.workspace.ok_or_else(|| {
            usage("give --workspace (or SUPABASH_WORKSPACE, or a profile's workspace)")
        })
    }
}

impl Target {
    /// The workspace id, from the flag, the environment or the profile.
    pub fn workspace_id(&self) -> Result<String, BoxError> {
        match &self.workspace {
            Some(w) => Ok(w.clone()),
            None => self.connect.profile_workspace(),
        }
    }

    /// The transport and the workspace id.
    pub async fn open(&self) -> Result<(Arc<dyn Transport>, String), BoxError> {
        let id = self.workspace_id()?;
        Ok((self.connect.connect().await?, id))
    }
}

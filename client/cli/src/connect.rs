//! How a command reaches the RPCs, shared by every subcommand that opens a workspace: a direct
//! Postgres connection acting as a user (trusted hosts), or PostgREST with the user's token.
//! Secrets come from flags or the environment and are never printed.

use serde_json::json;
use std::sync::Arc;
use supabash::{PostgresTransport, PostgrestTransport, Transport};

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
    /// The user id a direct connection acts as (claims: sub, role authenticated).
    #[arg(long, env = "SUPABASH_SUB")]
    pub sub: Option<String>,
    /// PostgREST base URL (Supabase: https://<project>.supabase.co/rest/v1).
    #[arg(long, env = "SUPABASH_URL")]
    pub url: Option<String>,
    /// The user's access token, sent as `Authorization: Bearer`.
    #[arg(long, env = "SUPABASH_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// The publishable key, sent as `apikey`.
    #[arg(long, env = "SUPABASH_APIKEY", hide_env_values = true)]
    pub apikey: Option<String>,
}

impl ConnectArgs {
    /// The transport these arguments describe.
    pub async fn connect(&self) -> Result<Arc<dyn Transport>, BoxError> {
        if let Some(dsn) = &self.dsn {
            let sub = self.sub.as_deref().ok_or("--dsn needs --sub")?;
            let claims = json!({ "role": "authenticated", "sub": sub, "aud": "authenticated" });
            return Ok(Arc::new(PostgresTransport::connect(dsn, claims).await?));
        }
        let url = self
            .url
            .as_deref()
            .ok_or("give --dsn (with --sub) or --url (with --token and --apikey)")?;
        let token = self.token.as_deref().ok_or("--url needs --token")?;
        let apikey = self.apikey.as_deref().ok_or("--url needs --apikey")?;
        Ok(Arc::new(PostgrestTransport::new(url, apikey, token)))
    }

    /// The secrets among these arguments (to redact from anything shown to a model or a log).
    pub fn secrets(&self) -> impl Iterator<Item = &String> {
        [&self.dsn, &self.token, &self.apikey].into_iter().flatten()
    }
}

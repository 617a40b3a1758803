//! Direct Postgres for trusted hosts. Each call does what PostgREST does per request, in one
//! transaction: `set_config('request.jwt.claims', ...)`, `SET LOCAL ROLE <claims.role>`, then
//! the function with named arguments whose types come from the catalog (as PostgREST's schema
//! cache does). The claims must come from a token the host has verified.
//!
//! A connection made by [`PostgresTransport::connect`] is made again before the next call once
//! it has died, so a commit whose answer was lost can be retried on the same transport. Only
//! the `COMMIT` decides: a connection lost before it was sent leaves nothing behind (the server
//! rolls back), one lost after it leaves the outcome unknown.

use super::{Delivery, RpcError, Transport};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex as SyncMutex};
use tokio::sync::Mutex;
use tokio_postgres::{Client, NoTls};

/// Named parameters of a function: (name, SQL type), in order.
type Signature = Vec<(String, String)>;

/// A connection plus the verified claims every call runs under.
pub struct PostgresTransport {
    client: Arc<Mutex<Client>>,
    /// Where to connect again when the connection died (`None`: a borrowed connection).
    dsn: Option<Arc<str>>,
    signatures: Arc<SyncMutex<HashMap<String, Signature>>>,
    claims: Value,
    role: String,
}

fn db_error(e: tokio_postgres::Error, lost: bool) -> RpcError {
    match e.as_db_error() {
        Some(db) => RpcError {
            status: None,
            code: Some(db.code().code().to_owned()),
            message: db.message().to_owned(),
            details: db.detail().map(str::to_owned),
            hint: db.hint().map(str::to_owned),
            delivery: Delivery::Answered,
        },
        None => RpcError::transport(
            if lost {
                Delivery::Lost
            } else {
                Delivery::Unreached
            },
            format!("database connection failed: {e}"),
        ),
    }
}

/// A new connection to `dsn`, driven by a background task.
async fn open(dsn: &str) -> Result<Client, RpcError> {
    let (client, conn) = tokio_postgres::connect(dsn, NoTls)
        .await
        .map_err(|e| db_error(e, false))?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(client)
}

fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// The statement calling `rpc` with the named arguments `sig` picks: like PostgREST, it reads
/// them from the JSON body `$1` in one pass with `json_to_record`, typed from the catalog, so a
/// `json` argument (a commit's changes) reaches the function as text, never parsed twice.
pub fn call_statement(rpc: &str, sig: &[&(String, String)]) -> String {
    if sig.is_empty() {
        return format!("SELECT to_jsonb(public.{}()) AS r", quote_ident(rpc));
    }
    let named: Vec<String> = sig
        .iter()
        .map(|(name, _)| format!("{0} => _.{0}", quote_ident(name)))
        .collect();
    let columns: Vec<String> = sig
        .iter()
        .map(|(name, typ)| format!("{} {typ}", quote_ident(name)))
        .collect();
    format!(
        "SELECT to_jsonb(public.{}({})) AS r FROM json_to_record($1::json) AS _({})",
        quote_ident(rpc),
        named.join(", "),
        columns.join(", ")
    )
}

impl PostgresTransport {
    /// Connects (without TLS: use it on trusted networks) as the login role in `dsn`, usually
    /// `authenticator`, and runs every call under `claims` (its `role` becomes the SQL role).
    pub async fn connect(dsn: &str, claims: Value) -> Result<Self, RpcError> {
        let client = open(dsn).await?;
        let mut transport = Self::from_client(client, claims);
        transport.dsn = Some(dsn.into());
        Ok(transport)
    }

    /// Uses an existing connection (not made again if it dies).
    pub fn from_client(client: Client, claims: Value) -> Self {
        let role = claims["role"].as_str().unwrap_or("anon").to_owned();
        PostgresTransport {
            client: Arc::new(Mutex::new(client)),
            dsn: None,
            signatures: Arc::default(),
            claims,
            role,
        }
    }

    /// The same connection under other verified claims.
    pub fn with_claims(&self, claims: Value) -> Self {
        let role = claims["role"].as_str().unwrap_or("anon").to_owned();
        PostgresTransport {
            client: self.client.clone(),
            dsn: self.dsn.clone(),
            signatures: self.signatures.clone(),
            claims,
            role,
        }
    }

    async fn signature(&self, client: &Client, function: &str) -> Result<Signature, RpcError> {
        if let Some(sig) = self.signatures.lock().expect("cache").get(function) {
            return Ok(sig.clone());
        }
        let rows = client
            .query(
                "SELECT n.name, format_type(t.oid, NULL)
                   FROM pg_proc p,
                        unnest(p.proargnames, p.proargtypes::oid[]) WITH ORDINALITY AS n(name, typ, i)
                   JOIN pg_type t ON t.oid = n.typ
                  WHERE p.pronamespace = 'public'::regnamespace AND p.proname = $1
                  ORDER BY n.i",
                &[&function],
            )
            .await
            .map_err(|e| db_error(e, false))?;
        let sig: Signature = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
        self.signatures
            .lock()
            .expect("cache")
            .insert(function.to_owned(), sig.clone());
        Ok(sig)
    }
}

#[async_trait::async_trait]
impl Transport for PostgresTransport {
    async fn call(&self, rpc: &str, args: Map<String, Value>) -> Result<Value, RpcError> {
        let mut client = self.client.lock().await;
        if client.is_closed() {
            if let Some(dsn) = &self.dsn {
                *client = open(dsn).await?;
            }
        }
        let sig = self.signature(&client, rpc).await?;
        if let Some(unknown) = args.keys().find(|k| !sig.iter().any(|(n, _)| n == *k)) {
            return Err(RpcError {
                status: None,
                code: Some("42883".into()),
                message: format!("function public.{rpc} has no parameter {unknown:?}"),
                details: None,
                hint: None,
                delivery: Delivery::Answered,
            });
        }
        let given: Vec<&(String, String)> = sig
            .iter()
            .filter(|(name, _)| args.contains_key(name))
            .collect();
        let sql = call_statement(rpc, &given);
        let claims = self.claims.to_string();
        let arg = Value::Object(args);
        let params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> =
            if given.is_empty() { vec![] } else { vec![&arg] };
        // Until COMMIT is sent nothing can have happened: failures before it are "unreached".
        let tx = client.transaction().await.map_err(|e| db_error(e, false))?;
        tx.execute(
            "SELECT set_config('request.jwt.claims', $1, true)",
            &[&claims],
        )
        .await
        .map_err(|e| db_error(e, false))?;
        tx.batch_execute(&format!("SET LOCAL ROLE {}", quote_ident(&self.role)))
            .await
            .map_err(|e| db_error(e, false))?;
        let row = tx
            .query_one(&sql, &params)
            .await
            .map_err(|e| db_error(e, false))?;
        let out: Option<Value> = row.get(0);
        tx.commit().await.map_err(|e| db_error(e, true))?;
        Ok(out.unwrap_or(Value::Null))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_and_reads_arguments_like_postgrest() {
        assert_eq!(quote_ident("a\"b"), "\"a\"\"b\"");
        let sig = [
            ("p".to_owned(), "integer".to_owned()),
            ("o'k".to_owned(), "json".to_owned()),
        ];
        let sql = call_statement("f", &sig.iter().collect::<Vec<_>>());
        assert_eq!(
            sql,
            "SELECT to_jsonb(public.\"f\"(\"p\" => _.\"p\", \"o'k\" => _.\"o'k\")) AS r \
             FROM json_to_record($1::json) AS _(\"p\" integer, \"o'k\" json)"
        );
        assert_eq!(
            call_statement("g", &[]),
            "SELECT to_jsonb(public.\"g\"()) AS r"
        );
    }
}

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

fn quote_literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// The SQL expression that reads argument `name` of type `typ` from the JSON parameter `$1`.
fn argument_expression(name: &str, typ: &str) -> String {
    let key = quote_literal(name);
    match typ {
        "jsonb" | "json" => format!("($1::jsonb -> {key})::{typ}"),
        t if t.ends_with("[]") => {
            format!("ARRAY(SELECT jsonb_array_elements_text($1::jsonb -> {key}))::{t}")
        }
        t => format!("($1::jsonb ->> {key})::{t}"),
    }
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
        let named: Vec<String> = sig
            .iter()
            .filter(|(name, _)| args.contains_key(name))
            .map(|(name, typ)| {
                format!(
                    "{} => {}",
                    quote_ident(name),
                    argument_expression(name, typ)
                )
            })
            .collect();
        let sql = format!(
            "SELECT to_jsonb(public.{}({})) AS r",
            quote_ident(rpc),
            named.join(", ")
        );
        let claims = self.claims.to_string();
        let arg = Value::Object(args);
        let params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> =
            if named.is_empty() { vec![] } else { vec![&arg] };
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
    fn quotes_and_casts() {
        assert_eq!(quote_ident("a\"b"), "\"a\"\"b\"");
        assert_eq!(
            argument_expression("p", "integer"),
            "($1::jsonb ->> 'p')::integer"
        );
        assert_eq!(
            argument_expression("o'k", "jsonb"),
            "($1::jsonb -> 'o''k')::jsonb"
        );
        assert!(argument_expression("ps", "text[]").starts_with("ARRAY("));
    }
}

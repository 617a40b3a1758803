//! Direct Postgres for trusted hosts. Each call does what PostgREST does per request, in one
//! transaction: `set_config('request.jwt.claims', ...)` and `set_config('role', <claims.role>,
//! true)` (`SET LOCAL ROLE`), then the function with named arguments whose types come from the
//! catalog (as PostgREST's schema cache does). The claims must come from a token the host has
//! verified.
//!
//! A connection made by [`PostgresTransport::connect`] is made again before the next call once
//! it has died, so a commit whose answer was lost can be retried on the same transport. Only
//! the `COMMIT` decides: a connection lost before it was sent leaves nothing behind (the server
//! rolls back), one lost after it leaves the outcome unknown.

use super::{Delivery, Listening, RpcError, Transport};
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

/// A tokio-postgres error as an [`RpcError`]: the server's error as it answered, else a
/// transport failure delivered as `unanswered` (`Unreached` when nothing can have been applied,
/// `Lost` when the statement may have run).
pub fn postgres_error(e: tokio_postgres::Error, unanswered: Delivery) -> RpcError {
    match e.as_db_error() {
        Some(db) => RpcError {
            status: None,
            code: Some(db.code().code().to_owned()),
            message: db.message().to_owned(),
            details: db.detail().map(str::to_owned),
            hint: db.hint().map(str::to_owned),
            delivery: Delivery::Answered,
        },
        None => RpcError::transport(unanswered, format!("database connection failed: {e}")),
    }
}

/// A new connection to `dsn`, driven by a background task.
async fn open(dsn: &str) -> Result<Client, RpcError> {
    let (client, conn) = tokio_postgres::connect(dsn, NoTls)
        .await
        .map_err(|e| postgres_error(e, Delivery::Unreached))?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(client)
}

fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// One RPC call as a statement and its parameters.
pub(crate) struct Call {
    pub(crate) sql: String,
    /// `$1`, `$2`, ...: JSON values (`None` is SQL NULL).
    pub(crate) params: Vec<Option<Value>>,
}

impl Call {
    /// The parameters with their type (every one is `json`; the statement casts where the
    /// function takes `jsonb`), for a statement sent without preparing it first.
    pub(crate) fn typed_params(
        &self,
    ) -> Vec<(
        &(dyn tokio_postgres::types::ToSql + Sync),
        tokio_postgres::types::Type,
    )> {
        self.params
            .iter()
            .map(|p| (p as _, tokio_postgres::types::Type::JSON))
            .collect()
    }
}

/// The statement calling `rpc` with the arguments in `args`, typed by its signature `sig`
/// (name, SQL type) as PostgREST's schema cache types them. `json`/`jsonb` arguments travel as
/// parameters of their own, so a large one (a commit's changes) is parsed once, by the
/// function; the others are read from one JSON object with `json_to_record`, as PostgREST does.
/// Arguments absent from `args` are left out and take their SQL defaults.
pub(crate) fn call_statement(
    rpc: &str,
    sig: &[(String, String)],
    args: Map<String, Value>,
) -> Call {
    let given: Vec<(&String, &String, &Value)> = sig
        .iter()
        .filter_map(|(name, typ)| args.get(name).map(|v| (name, typ, v)))
        .collect();
    let is_json = |typ: &str| typ == "json" || typ == "jsonb";
    let record: Map<String, Value> = given
        .iter()
        .filter(|(_, typ, _)| !is_json(typ))
        .map(|(name, _, v)| ((*name).clone(), (*v).clone()))
        .collect();
    let mut params = Vec::new();
    let mut columns = Vec::new();
    if !record.is_empty() {
        params.push(Some(Value::Object(record)));
    }
    let named: Vec<String> = given
        .iter()
        .map(|(name, typ, value)| {
            let ident = quote_ident(name);
            if is_json(typ) {
                params.push((!value.is_null()).then(|| (*value).clone()));
                format!("{ident} => ${}::{typ}", params.len())
            } else {
                columns.push(format!("{ident} {typ}"));
                format!("{ident} => _.{ident}")
            }
        })
        .collect();
    let from = if columns.is_empty() {
        String::new()
    } else {
        format!(
            " FROM json_to_record($1::json) AS _({})",
            columns.join(", ")
        )
    };
    Call {
        sql: format!(
            "SELECT to_json(public.{}({}))::text AS r{from}",
            quote_ident(rpc),
            named.join(", ")
        ),
        params,
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
            .map_err(|e| postgres_error(e, Delivery::Unreached))?;
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
        let text = self.call_text(rpc, args).await?;
        super::json_answer(&text)
    }

    async fn call_text(&self, rpc: &str, args: Map<String, Value>) -> Result<String, RpcError> {
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
        let call = call_statement(rpc, &sig, args);
        let claims = self.claims.to_string();
        // Until COMMIT is sent nothing can have happened: failures before it are "unreached".
        let tx = client
            .transaction()
            .await
            .map_err(|e| postgres_error(e, Delivery::Unreached))?;
        // The claims and the role (`set_config('role', ..)` is `SET LOCAL ROLE`, as PostgREST
        // sets it), then the call: typed statements (no round trip to prepare them) sent
        // together, so the call costs one round trip after BEGIN. In order: a failed setting
        // aborts the transaction and the call is refused with it.
        let text = tokio_postgres::types::Type::TEXT;
        let setting: [(&(dyn tokio_postgres::types::ToSql + Sync), _); 2] =
            [(&claims, text.clone()), (&self.role, text)];
        let settings = tx.query_typed(
            "SELECT set_config('request.jwt.claims', $1, true), set_config('role', $2, true)",
            &setting,
        );
        let typed = call.typed_params();
        let answer = tx.query_typed(&call.sql, &typed);
        // Biased: polled first, the settings are sent first.
        let (settings, answer) = tokio::join!(biased; settings, answer);
        settings.map_err(|e| postgres_error(e, Delivery::Unreached))?;
        let rows = answer.map_err(|e| postgres_error(e, Delivery::Unreached))?;
        let row = rows.first().ok_or_else(|| {
            RpcError::transport(Delivery::Unreached, "the call answered no row".to_owned())
        })?;
        let out: Option<String> = row.get(0);
        tx.commit()
            .await
            .map_err(|e| postgres_error(e, Delivery::Lost))?;
        Ok(out.unwrap_or_else(|| "null".to_owned()))
    }

    /// `LISTEN` on a new connection to this transport's `dsn` (a borrowed connection, made
    /// without one, cannot listen: `None`). PostgreSQL does not authorise `LISTEN`; the
    /// announcements say only what the channel's name (the workspace id) already does.
    async fn listen(&self, channel: &str) -> Result<Option<Listening>, RpcError> {
        let Some(dsn) = &self.dsn else {
            return Ok(None);
        };
        let (session, mut conn) = tokio_postgres::connect(dsn, NoTls)
            .await
            .map_err(|e| postgres_error(e, Delivery::Unreached))?;
        let (tx, payloads) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Some(message) = std::future::poll_fn(|cx| conn.poll_message(cx)).await {
                match message {
                    Ok(tokio_postgres::AsyncMessage::Notification(n)) => {
                        if tx.send(n.payload().to_owned()).is_err() {
                            return;
                        }
                    }
                    Ok(_) => {}
                    Err(_) => return,
                }
            }
        });
        session
            .batch_execute(&format!("LISTEN {}", quote_ident(channel)))
            .await
            .map_err(|e| postgres_error(e, Delivery::Unreached))?;
        Ok(Some(Listening {
            payloads,
            _session: session,
        }))
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
            ("absent".to_owned(), "text".to_owned()),
        ];
        let args = serde_json::json!({"p": 3, "o'k": [1]});
        let call = call_statement("f", &sig, args.as_object().unwrap().clone());
        assert_eq!(
            call.sql,
            "SELECT to_json(public.\"f\"(\"p\" => _.\"p\", \"o'k\" => $2::json))::text AS r \
             FROM json_to_record($1::json) AS _(\"p\" integer)"
        );
        assert_eq!(
            call.params,
            vec![
                Some(serde_json::json!({"p": 3})),
                Some(serde_json::json!([1]))
            ]
        );
        let only_json = call_statement(
            "h",
            &sig,
            serde_json::json!({"o'k": null})
                .as_object()
                .unwrap()
                .clone(),
        );
        assert_eq!(
            only_json.sql,
            "SELECT to_json(public.\"h\"(\"o'k\" => $1::json))::text AS r"
        );
        assert_eq!(only_json.params, vec![None]);
        let none = call_statement("g", &[], Map::new());
        assert_eq!(none.sql, "SELECT to_json(public.\"g\"())::text AS r");
        assert!(none.params.is_empty());
    }
}

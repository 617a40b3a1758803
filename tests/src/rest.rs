//! Calls an RPC the way PostgREST does: one transaction that sets `request.jwt.claims`,
//! switches role with `SET LOCAL ROLE`, and calls the function with named arguments taken from
//! a JSON object (argument types come from the catalog, as PostgREST's schema cache does).

use serde_json::{json, Value};
use std::collections::HashMap;
use tokio_postgres::{Client, NoTls};

/// Who a request comes from.
#[derive(Clone, Debug)]
pub enum Caller {
    /// No JWT: PostgREST's anonymous role.
    Anon,
    /// A signed-in user (`role: authenticated`, `sub`).
    User(String),
    /// A service-role key.
    Service,
    /// Any claims under any role (`role: None` keeps the login role): for requests PostgREST
    /// would never send, such as a user's claims under another role.
    Raw { role: Option<String>, claims: Value },
}

impl Caller {
    /// A signed-in user with a fresh random id.
    pub fn new_user() -> Caller {
        Caller::User(uuid::Uuid::new_v4().to_string())
    }

    fn role(&self) -> Option<&str> {
        match self {
            Caller::Anon => Some("anon"),
            Caller::User(_) => Some("authenticated"),
            Caller::Service => Some("service_role"),
            Caller::Raw { role, .. } => role.as_deref(),
        }
    }

    fn claims(&self) -> Value {
        match self {
            Caller::User(sub) => {
                json!({ "role": "authenticated", "sub": sub, "aud": "authenticated" })
            }
            Caller::Raw { claims, .. } => claims.clone(),
            other => json!({ "role": other.role() }),
        }
    }
}

/// A database error as PostgREST would report it.
#[derive(Debug, Clone)]
pub struct DbError {
    pub code: String,
    pub message: String,
    pub detail: Option<String>,
    pub hint: Option<String>,
}

impl std::fmt::Display for DbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.code, self.message)
    }
}

impl From<tokio_postgres::Error> for DbError {
    fn from(e: tokio_postgres::Error) -> Self {
        match e.as_db_error() {
            Some(db) => DbError {
                code: db.code().code().to_owned(),
                message: db.message().to_owned(),
                detail: db.detail().map(str::to_owned),
                hint: db.hint().map(str::to_owned),
            },
            None => DbError {
                code: "CONNECTION".into(),
                message: e.to_string(),
                detail: None,
                hint: None,
            },
        }
    }
}

/// One connection as `authenticator`, like one PostgREST pool slot.
pub struct Rest {
    pub client: Client,
    signatures: HashMap<String, Vec<(String, String)>>,
}

impl Rest {
    /// Connects as `authenticator` (or another login role) with a libpq connection string.
    pub async fn connect(dsn: &str) -> Rest {
        let (client, conn) = tokio_postgres::connect(dsn, NoTls).await.expect("connect");
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Rest {
            client,
            signatures: HashMap::new(),
        }
    }

    async fn signature(&mut self, function: &str) -> Result<Vec<(String, String)>, DbError> {
        if let Some(sig) = self.signatures.get(function) {
            return Ok(sig.clone());
        }
        let rows = self
            .client
            .query(
                "SELECT n.name, format_type(t.oid, NULL)
                   FROM pg_proc p, unnest(p.proargnames, p.proargtypes::oid[]) WITH ORDINALITY AS n(name, typ, i)
                   JOIN pg_type t ON t.oid = n.typ
                  WHERE p.pronamespace = 'public'::regnamespace AND p.proname = $1 ORDER BY n.i",
                &[&function],
            )
            .await?;
        let sig: Vec<(String, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
        self.signatures.insert(function.to_owned(), sig.clone());
        Ok(sig)
    }

    /// Calls `public.<function>` with the named arguments in `args` (absent keys take their
    /// SQL defaults) inside one PostgREST-shaped transaction, and returns the JSON result.
    pub async fn call(
        &mut self,
        caller: &Caller,
        function: &str,
        args: Value,
    ) -> Result<Value, DbError> {
        let sig = self.signature(function).await?;
        let obj = args.as_object().cloned().unwrap_or_default();
        let call = supabash::transport::call_statement(function, &sig, obj);
        let tx = self.client.transaction().await?;
        Self::become_caller(&tx, caller).await?;
        let row = tx.query_one(&call.sql, &call.param_refs()).await?;
        let out: Option<Value> = row.get(0);
        tx.commit().await?;
        Ok(out.unwrap_or(Value::Null))
    }

    async fn become_caller(
        tx: &tokio_postgres::Transaction<'_>,
        caller: &Caller,
    ) -> Result<(), DbError> {
        tx.execute(
            "SELECT set_config('request.jwt.claims', $1, true)",
            &[&caller.claims().to_string()],
        )
        .await?;
        if let Some(role) = caller.role() {
            tx.batch_execute(&format!("SET LOCAL ROLE {role}")).await?;
        }
        Ok(())
    }

    /// Runs one SQL statement (no parameters) as `caller`, in one transaction that is rolled
    /// back, and returns the number of rows it returned or touched.
    pub async fn sql_as(&mut self, caller: &Caller, sql: &str) -> Result<u64, DbError> {
        let tx = self.client.transaction().await?;
        Self::become_caller(&tx, caller).await?;
        let n = tx.execute(sql, &[]).await?;
        tx.rollback().await?;
        Ok(n)
    }

    /// True when the connection still answers (the backend did not crash).
    pub async fn alive(&self) -> bool {
        self.client.simple_query("SELECT 1").await.is_ok()
    }
}

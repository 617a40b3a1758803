//! Calls an RPC over a plain SQL connection the way PostgREST would (no HTTP): one transaction that sets `request.jwt.claims`,
//! switches role with `SET LOCAL ROLE`, and calls the function with named arguments taken from
//! a JSON object (argument types come from the catalog, as PostgREST's schema cache does).

use serde_json::{json, Map, Value};
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
pub struct SqlRpc {
    pub client: Client,
    signatures: HashMap<String, Vec<(String, String)>>,
}

impl SqlRpc {
    /// Connects as `authenticator` (or another login role) with a libpq connection string.
    pub async fn connect(dsn: &str) -> SqlRpc {
        let (client, conn) = tokio_postgres::connect(dsn, NoTls).await.expect("connect");
        tokio::spawn(async move {
            let _ = conn.await;
        });
        SqlRpc {
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
        self.call_with_headers(caller, function, args, None).await
    }

    /// [`Self::call`] with the request headers PostgREST would set in `request.headers` (a
    /// JSON object, lower-case names).
    pub async fn call_with_headers(
        &mut self,
        caller: &Caller,
        function: &str,
        args: Value,
        headers: Option<&Value>,
    ) -> Result<Value, DbError> {
        let sig = self.signature(function).await?;
        let obj = args.as_object().cloned().unwrap_or_default();
        let call = call_statement(function, &sig, obj);
        let tx = self.client.transaction().await?;
        if let Some(headers) = headers {
            tx.execute(
                "SELECT set_config('request.headers', $1, true)",
                &[&headers.to_string()],
            )
            .await?;
        }
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

    /// Creates a workspace as `owner` (which must succeed) and returns its id.
    pub async fn create_workspace(&mut self, owner: &Caller) -> String {
        let created = self
            .call(owner, "supabash_create_workspace", json!({}))
            .await;
        created.expect("create workspace")["workspaceId"]
            .as_str()
            .expect("workspaceId")
            .to_owned()
    }

    /// Commits `changes` to `workspace` as `who`, recorded as `actor`, on the head it reads
    /// first; the answer, or the error's message.
    pub async fn commit_at_head(
        &mut self,
        who: &Caller,
        workspace: &str,
        actor: &str,
        changes: Value,
    ) -> Result<Value, String> {
        let head = self
            .call(
                who,
                "supabash_load_manifest",
                json!({ "workspace_id": workspace }),
            )
            .await
            .unwrap();
        self.call(
            who,
            "supabash_commit",
            json!({ "workspace_id": workspace, "actor": actor,
                    "base_revision": head["revision"], "changes": changes }),
        )
        .await
        .map_err(|e| e.message)
    }

    /// Commits `changes` to `workspace` as `owner` on `base` (which must succeed) and returns
    /// the new revision id.
    pub async fn commit_as(
        &mut self,
        owner: &Caller,
        workspace: &str,
        base: Option<&str>,
        changes: Value,
    ) -> String {
        let mut args = json!({ "workspace_id": workspace, "actor": "owner", "changes": changes });
        if let Some(base) = base {
            args["base_revision"] = json!(base);
        }
        let committed = self.call(owner, "supabash_commit", args).await;
        committed.expect("commit")["receipt"]["revision"]
            .as_str()
            .expect("revision")
            .to_owned()
    }

    /// `workspace`'s entry in `supabash_list_workspaces` as `who` sees it (which must hold it).
    pub async fn listed_workspace(&mut self, who: &Caller, workspace: &str) -> Value {
        let page = self
            .call(who, "supabash_list_workspaces", json!({}))
            .await
            .expect("list workspaces");
        page["workspaces"]
            .as_array()
            .and_then(|all| all.iter().find(|w| w["workspaceId"] == workspace))
            .cloned()
            .unwrap_or_else(|| panic!("{workspace} in {page}"))
    }

    /// True when the connection still answers (the backend did not crash).
    pub async fn alive(&self) -> bool {
        self.client.simple_query("SELECT 1").await.is_ok()
    }
}

// PostgREST's call shape, written out here so the harness does not borrow the client's own
// statement builder (`PostgresTransport` keeps an identical one, crate-private).

fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// One RPC call as a statement and its parameters.
struct Call {
    sql: String,
    /// `$1`, `$2`, ...: JSON values (`None` is SQL NULL).
    params: Vec<Option<Value>>,
}

impl Call {
    /// The parameters as tokio-postgres takes them.
    fn param_refs(&self) -> Vec<&(dyn tokio_postgres::types::ToSql + Sync)> {
        self.params.iter().map(|p| p as _).collect()
    }
}

/// The statement calling `rpc` with the arguments in `args`, typed by its signature `sig`
/// (name, SQL type) as PostgREST's schema cache types them. `json`/`jsonb` arguments travel as
/// parameters of their own, so a large one (a commit's changes) is parsed once, by the
/// function; the others are read from one JSON object with `json_to_record`, as PostgREST does.
/// Arguments absent from `args` are left out and take their SQL defaults.
fn call_statement(rpc: &str, sig: &[(String, String)], args: Map<String, Value>) -> Call {
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
            "SELECT to_json(public.{}({})) AS r{from}",
            quote_ident(rpc),
            named.join(", ")
        ),
        params,
    }
}

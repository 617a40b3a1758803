//! `supabash doctor`: checks an installation, one line per check (`ok`, `warn`, `FAIL` or
//! `skipped` with the reason), and fails when any check fails. docs/operations.md lists the
//! checks. Everything it runs only reads, except the privilege drift check, which runs the
//! install's own grant statements in a transaction it always rolls back.

use crate::connect::ConnectArgs;
use serde_json::{json, Value};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use supabash::transport::RpcError;
use tokio_postgres::{Client, NoTls};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The version of this client, which must match the extension's.
pub const CLIENT_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The clock skew allowed when no capability verifier says otherwise (a verifier's default).
pub const DEFAULT_MAX_SKEW_SECONDS: u64 = 60;

/// Arguments of `supabash doctor`.
#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    #[command(flatten)]
    pub connect: ConnectArgs,
    /// A database connection string for the catalog checks (extension version, pending
    /// upgrade, privileges, row-level security, Storage policies, clock); default: --dsn. The
    /// privilege checks need a superuser (the install's helpers are its only).
    #[arg(long, env = "SUPABASE_DB_URL", hide_env_values = true)]
    pub db: Option<String>,
    /// The Storage API base URL; when set, the bucket's policies are checked too.
    #[arg(long, env = "SUPABASE_STORAGE_URL")]
    pub storage_url: Option<String>,
    /// The bucket Storage workspaces live in.
    #[arg(long, default_value = "workspaces")]
    pub bucket: String,
    /// Largest clock difference between this host and the database, in seconds, when no
    /// capability verifier registered in the database allows less.
    #[arg(long, default_value_t = DEFAULT_MAX_SKEW_SECONDS)]
    pub max_skew_seconds: u64,
    /// Pretends this host's clock is this many seconds ahead (tests of the clock check).
    #[arg(
        long,
        env = "SUPABASH_DOCTOR_CLOCK_OFFSET",
        default_value_t = 0,
        allow_hyphen_values = true,
        hide = true
    )]
    pub clock_offset_seconds: i64,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Ok,
    Warn,
    Fail,
    Skipped,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Warn => "warn",
            Status::Fail => "fail",
            Status::Skipped => "skipped",
        }
    }
}

/// One check's outcome.
#[derive(Debug, Clone)]
pub struct Check {
    pub name: &'static str,
    pub status: Status,
    pub detail: String,
}

/// Every check, in order.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub checks: Vec<Check>,
}

impl Report {
    /// True unless a check failed.
    pub fn ok(&self) -> bool {
        self.checks.iter().all(|c| c.status != Status::Fail)
    }

    /// The check named `name`.
    pub fn check(&self, name: &str) -> Option<&Check> {
        self.checks.iter().find(|c| c.name == name)
    }

    fn add(&mut self, name: &'static str, status: Status, detail: impl Into<String>) {
        self.checks.push(Check {
            name,
            status,
            detail: detail.into(),
        });
    }

    /// One line per check.
    pub fn render(&self) -> String {
        self.checks
            .iter()
            .map(|c| {
                let mark = match c.status {
                    Status::Fail => "FAIL",
                    other => other.as_str(),
                };
                format!("{mark:<8}{}: {}\n", c.name, c.detail)
            })
            .collect()
    }

    pub fn to_json(&self) -> Value {
        let checks: Vec<Value> = self
            .checks
            .iter()
            .map(|c| json!({ "check": c.name, "status": c.status.as_str(), "detail": c.detail }))
            .collect();
        json!({ "ok": self.ok(), "checks": checks })
    }
}

/// Runs every check.
pub async fn run(args: &DoctorArgs) -> Report {
    let mut report = Report::default();
    let probe = connectivity(args, &mut report).await;
    let db = match args.db.as_deref().or(args.connect.dsn.as_deref()) {
        Some(dsn) => match tokio_postgres::connect(dsn, NoTls).await {
            Ok((client, connection)) => {
                tokio::spawn(connection);
                Some(client)
            }
            Err(e) => {
                report.add(
                    "database",
                    Status::Fail,
                    format!("cannot connect for the catalog checks: {e}"),
                );
                None
            }
        },
        None => None,
    };
    match &db {
        Some(db) => {
            let installed = extension(db, &mut report).await;
            upgrade(db, &mut report).await;
            if installed {
                privileges(db, &mut report).await;
                trust(db, &mut report).await;
                row_security(db, &mut report).await;
            } else {
                for name in ["privileges", "trust", "row-level security"] {
                    report.add(name, Status::Skipped, "the extension is not installed");
                }
            }
            storage(db, args, &mut report).await;
            clock(db, args, &mut report).await;
        }
        None => {
            extension_by_rpc(probe, &mut report);
            let why = "needs a database connection (--db or --dsn)";
            for name in [
                "upgrade",
                "privileges",
                "trust",
                "row-level security",
                "storage",
                "clock",
            ] {
                report.add(name, Status::Skipped, why);
            }
        }
    }
    report
}

/// `supabash doctor`: prints the report; fails with [`crate::exit::problems`] (status 8) when
/// a check failed.
pub async fn run_doctor(args: DoctorArgs) -> Result<(), BoxError> {
    let report = run(&args).await;
    if args.json {
        crate::output::json(&report.to_json())?;
    } else {
        print!("{}", report.render());
    }
    match report
        .checks
        .iter()
        .filter(|c| c.status == Status::Fail)
        .count()
    {
        0 => Ok(()),
        1 => Err(crate::exit::problems("1 check failed")),
        n => Err(crate::exit::problems(format!("{n} checks failed"))),
    }
}

/// What the connectivity probe's RPC answered (for the extension check without a database).
enum Probe {
    Answered,
    Refused(RpcError),
    None,
}

/// Reaches the RPCs as configured and calls one read (`supabash_list_workspaces`, one row). A
/// structured answer, even 401 or 403, means the server is reachable; only a transport
/// failure (nothing answered) fails the check.
async fn connectivity(args: &DoctorArgs, report: &mut Report) -> Probe {
    let name = "connectivity";
    let via = match (&args.connect.url, &args.connect.dsn) {
        (Some(url), _) => format!("PostgREST at {url}"),
        (None, Some(_)) => "the database (direct connection)".to_owned(),
        (None, None) => {
            report.add(
                name,
                Status::Fail,
                "no connection configured: give --url (with --token and --apikey) or --dsn (with --sub)",
            );
            return Probe::None;
        }
    };
    let transport = match args.connect.connect().await {
        Ok(t) => t,
        Err(e) => {
            report.add(name, Status::Fail, format!("cannot reach {via}: {e}"));
            return Probe::None;
        }
    };
    let mut page = serde_json::Map::new();
    page.insert("page_size".into(), json!(1));
    match transport.call("supabash_list_workspaces", page).await {
        Ok(_) => {
            report.add(name, Status::Ok, format!("{via} answers"));
            Probe::Answered
        }
        Err(e) if e.status.is_some() || e.code.is_some() => {
            let status = e.status.map_or(String::new(), |s| format!("HTTP {s} "));
            report.add(
                name,
                Status::Ok,
                format!(
                    "{via} is reachable (it answered {status}{}; a refusal is an answer)",
                    e.code.as_deref().unwrap_or("an error")
                ),
            );
            Probe::Refused(e)
        }
        Err(e) => {
            report.add(name, Status::Fail, format!("cannot reach {via}: {e}"));
            Probe::None
        }
    }
}

/// The extension check over the RPCs alone: whether they exist (no version is visible there).
fn extension_by_rpc(probe: Probe, report: &mut Report) {
    let name = "extension";
    match probe {
        Probe::Answered => report.add(
            name,
            Status::Ok,
            format!("installed (its RPCs answer); its version needs --db to compare with this client's {CLIENT_VERSION}"),
        ),
        Probe::Refused(e) if e.code.as_deref() == Some("PGRST202") || e.status == Some(404) => {
            report.add(
                name,
                Status::Fail,
                format!("the RPCs are missing (supabash_list_workspaces: {e}): is the extension installed and the schema cache reloaded?"),
            )
        }
        Probe::Refused(e) => report.add(
            name,
            Status::Skipped,
            format!("the server refused the probe ({e}); give --db to check the installed version"),
        ),
        Probe::None => report.add(name, Status::Skipped, "the server is unreachable"),
    }
}

/// The installed version against this client's; answers whether the extension is installed.
async fn extension(db: &Client, report: &mut Report) -> bool {
    let name = "extension";
    let installed = db
        .query_opt(
            "SELECT extversion FROM pg_catalog.pg_extension WHERE extname = 'supabash'",
            &[],
        )
        .await;
    match installed {
        Err(e) => report.add(name, Status::Fail, format!("cannot read pg_extension: {e}")),
        Ok(None) => report.add(
            name,
            Status::Fail,
            "not installed in this database (CREATE EXTENSION supabash)",
        ),
        Ok(Some(row)) => {
            let version: String = row.get(0);
            if version == CLIENT_VERSION {
                report.add(name, Status::Ok, format!("{version}, as this client"));
            } else {
                report.add(
                    name,
                    Status::Fail,
                    format!("installed {version}, but this client is {CLIENT_VERSION}"),
                );
            }
            return true;
        }
    }
    false
}

async fn upgrade(db: &Client, report: &mut Report) {
    let name = "upgrade";
    let row = db
        .query_opt(
            "SELECT default_version, installed_version FROM pg_catalog.pg_available_extensions
              WHERE name = 'supabash'",
            &[],
        )
        .await;
    match row {
        Err(e) => report.add(
            name,
            Status::Fail,
            format!("cannot read pg_available_extensions: {e}"),
        ),
        Ok(None) => report.add(
            name,
            Status::Fail,
            "the server has no supabash extension files (install the extension)",
        ),
        Ok(Some(row)) => {
            let default: String = row.get(0);
            match row.get::<_, Option<String>>(1) {
                None => report.add(name, Status::Skipped, "the extension is not installed"),
                Some(installed) if installed == default => {
                    report.add(name, Status::Ok, format!("none pending ({installed})"))
                }
                Some(installed) => report.add(
                    name,
                    Status::Fail,
                    format!("installed {installed}, the server has {default}: run ALTER EXTENSION supabash UPDATE"),
                ),
            }
        }
    }
}

/// The install's privilege checks, re-run: `supabash._check_install()` in a read-only
/// transaction, and `supabash._assert_privileges()` in one that is rolled back, comparing
/// every grant and owner it would set with what is there. Both are the installing
/// superuser's only.
async fn privileges(db: &Client, report: &mut Report) {
    let name = "privileges";
    let who = db
        .query_one(
            "SELECT current_user::text, rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user",
            &[],
        )
        .await;
    let (role, superuser): (String, bool) = match who {
        Ok(row) => (row.get(0), row.get(1)),
        Err(e) => return report.add(name, Status::Fail, format!("cannot read pg_roles: {e}")),
    };
    if !superuser {
        return report.add(
            name,
            Status::Skipped,
            format!("needs a superuser connection (connected as {role}): the install's checks are the installing superuser's only"),
        );
    }
    match privilege_problems(db).await {
        Ok(problems) if problems.is_empty() => report.add(
            name,
            Status::Ok,
            "the install check passes and every grant and owner is as the install sets them",
        ),
        Ok(problems) => report.add(name, Status::Fail, problems.join("; ")),
        Err(e) => report.add(name, Status::Fail, format!("the check could not run: {e}")),
    }
}

/// Who besides the extension can read every workspace, mint, or read the HS256 key file
/// (`supabash._trust_report()`, docs/capabilities.md "Trust model"): a warning naming each,
/// since the install cannot refuse them. Needs a superuser, like the privilege checks.
async fn trust(db: &Client, report: &mut Report) {
    let name = "trust";
    let superuser = db
        .query_one(
            "SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user",
            &[],
        )
        .await
        .map(|r| r.get::<_, bool>(0));
    match superuser {
        Ok(true) => {}
        Ok(false) => {
            return report.add(
                name,
                Status::Skipped,
                "needs a superuser connection: the trust report is the installing superuser's only",
            )
        }
        Err(e) => return report.add(name, Status::Fail, format!("cannot read pg_roles: {e}")),
    }
    let rows = match db
        .query("SELECT role, why FROM supabash._trust_report()", &[])
        .await
    {
        Ok(rows) => rows,
        Err(e) => return report.add(name, Status::Fail, format!("the report could not run: {e}")),
    };
    if rows.is_empty() {
        return report.add(
            name,
            Status::Ok,
            "no role besides superusers can read every workspace or mint, and no HS256 key file is configured",
        );
    }
    let who: Vec<String> = rows
        .iter()
        .map(|r| format!("{} ({})", r.get::<_, String>(0), r.get::<_, String>(1)))
        .collect();
    report.add(name, Status::Warn, who.join("; "));
}

/// Every grant, column grant and owner of the extension's objects (grants sorted, so only
/// what they allow counts, not their order).
const PRIVILEGES_SQL: &str = "
SELECT 'schema ' || nspname, nspowner::regrole::text,
       coalesce((SELECT string_agg(x::text, ',' ORDER BY x::text) FROM unnest(nspacl) x), '')
  FROM pg_catalog.pg_namespace WHERE nspname = 'supabash'
UNION ALL
SELECT 'relation ' || c.oid::regclass::text, c.relowner::regrole::text,
       coalesce((SELECT string_agg(x::text, ',' ORDER BY x::text) FROM unnest(c.relacl) x), '')
  FROM pg_catalog.pg_class c WHERE c.relnamespace = 'supabash'::regnamespace
UNION ALL
SELECT 'column ' || a.attrelid::regclass::text || '.' || a.attname, '',
       (SELECT string_agg(x::text, ',' ORDER BY x::text) FROM unnest(a.attacl) x)
  FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_class c ON c.oid = a.attrelid
 WHERE c.relnamespace = 'supabash'::regnamespace AND a.attacl IS NOT NULL
UNION ALL
SELECT 'function ' || p.oid::regprocedure::text, p.proowner::regrole::text,
       coalesce((SELECT string_agg(x::text, ',' ORDER BY x::text) FROM unnest(p.proacl) x), '')
  FROM pg_catalog.pg_proc p
 WHERE p.pronamespace = 'supabash'::regnamespace
    OR (p.pronamespace = 'public'::regnamespace AND p.proname LIKE 'supabash\\_%')
ORDER BY 1";

/// What the install's privilege checks find wrong (empty: nothing).
async fn privilege_problems(db: &Client) -> Result<Vec<String>, tokio_postgres::Error> {
    let mut problems = Vec::new();
    let check = db
        .batch_execute(
            "BEGIN READ ONLY; SET LOCAL lock_timeout = '5s'; SELECT supabash._check_install(); ROLLBACK",
        )
        .await;
    if let Err(e) = check {
        db.batch_execute("ROLLBACK").await?;
        problems.push(
            e.as_db_error()
                .map_or_else(|| e.to_string(), |d| d.message().to_owned()),
        );
    }
    // Plain BEGIN and ROLLBACK: the client is shared (`Client::transaction` needs it mutable).
    db.batch_execute("BEGIN; SET LOCAL lock_timeout = '5s'")
        .await?;
    let drift = async {
        let before = snapshot(db).await?;
        db.batch_execute("SELECT supabash._assert_privileges()")
            .await?;
        let after = snapshot(db).await?;
        Ok::<_, tokio_postgres::Error>(drift_lines(&before, &after))
    }
    .await;
    db.batch_execute("ROLLBACK").await?;
    problems.extend(drift?);
    Ok(problems)
}

async fn snapshot(db: &Client) -> Result<Vec<(String, String, String)>, tokio_postgres::Error> {
    Ok(db
        .query(PRIVILEGES_SQL, &[])
        .await?
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect())
}

/// The objects whose owner or grants differ between `now` and what the install sets.
fn drift_lines(
    now: &[(String, String, String)],
    install: &[(String, String, String)],
) -> Vec<String> {
    let now: std::collections::BTreeMap<&str, (&str, &str)> = now
        .iter()
        .map(|(o, w, a)| (o.as_str(), (w.as_str(), a.as_str())))
        .collect();
    let install: std::collections::BTreeMap<&str, (&str, &str)> = install
        .iter()
        .map(|(o, w, a)| (o.as_str(), (w.as_str(), a.as_str())))
        .collect();
    let mut out = Vec::new();
    for (object, want) in &install {
        match now.get(object) {
            Some(have) if have == want => {}
            Some((owner, acl)) => out.push(format!(
                "{object} has owner {owner} and grants {{{acl}}}, the install sets owner {} and grants {{{}}}",
                want.0, want.1
            )),
            None => out.push(format!("{object} has grants the install would add ({})", want.1)),
        }
    }
    for (object, (_, acl)) in &now {
        if !install.contains_key(object) {
            out.push(format!(
                "{object} has grants {{{acl}}} the install would remove"
            ));
        }
    }
    out
}

/// Every table of the extension has row-level security enabled and forced (as the install
/// sets it): a catalog read any role can make.
async fn row_security(db: &Client, report: &mut Report) {
    let name = "row-level security";
    let rows = db
        .query(
            "SELECT c.relname::text FROM pg_catalog.pg_class c
              WHERE c.relnamespace = to_regnamespace('supabash') AND c.relkind IN ('r', 'p')
                AND NOT (c.relrowsecurity AND c.relforcerowsecurity)
              ORDER BY 1",
            &[],
        )
        .await;
    match rows {
        Err(e) => report.add(name, Status::Fail, format!("cannot read pg_class: {e}")),
        Ok(rows) if rows.is_empty() => report.add(
            name,
            Status::Ok,
            "enabled and forced on every table of schema supabash",
        ),
        Ok(rows) => {
            let tables: Vec<String> = rows.iter().map(|r| r.get::<_, String>(0)).collect();
            report.add(
                name,
                Status::Fail,
                format!(
                    "not enabled and forced on supabash.{}: ALTER TABLE ... ENABLE and FORCE ROW LEVEL SECURITY",
                    tables.join(", supabash.")
                ),
            );
        }
    }
}

/// What `supabash storage-setup` checks, when a Storage URL is configured.
async fn storage(db: &Client, args: &DoctorArgs, report: &mut Report) {
    use supabash::storage::setup::{check_bucket, check_policies};
    let name = "storage";
    if args.storage_url.is_none() {
        return report.add(
            name,
            Status::Skipped,
            "no Storage URL configured (--storage-url or SUPABASE_STORAGE_URL)",
        );
    }
    let policies = match check_policies(db, &args.bucket).await {
        Ok(p) => p,
        Err(e) => return report.add(name, Status::Fail, e.to_string()),
    };
    let bucket = match check_bucket(db, &args.bucket, &supabash::Limits::default()).await {
        Ok(b) => b,
        Err(e) => return report.add(name, Status::Fail, e.to_string()),
    };
    let mut problems = Vec::new();
    if !policies.rls_enabled {
        problems.push("row-level security is off on storage.objects".to_owned());
    }
    if !policies.bucket_private {
        problems.push(format!("bucket {} is missing or public", args.bucket));
    }
    for command in &policies.missing {
        problems.push(format!(
            "no {command} policy for authenticated confined to the user's folder"
        ));
    }
    for policy in &policies.broad {
        problems.push(format!(
            "policy {policy:?} reaches the bucket without the folder limit"
        ));
    }
    if policies.bucket_private {
        problems.extend(bucket.advice(&args.bucket));
    }
    if problems.is_empty() {
        report.add(
            name,
            Status::Ok,
            format!(
                "bucket {}: private, policies confine users to their folder, uploads fit",
                args.bucket
            ),
        );
    } else {
        report.add(name, Status::Fail, problems.join("; "));
    }
}

/// The database's clock against this host's: capabilities and grants expire by the
/// database's clock, issuers mint by theirs.
async fn clock(db: &Client, args: &DoctorArgs, report: &mut Report) {
    let name = "clock";
    let now = |offset: i64| {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or(Duration::ZERO)
            .as_secs_f64()
            + offset as f64
    };
    let before = now(args.clock_offset_seconds);
    let row = db
        .query_one("SELECT extract(epoch FROM clock_timestamp())::float8", &[])
        .await;
    let after = now(args.clock_offset_seconds);
    let database: f64 = match row {
        Ok(r) => r.get(0),
        Err(e) => {
            return report.add(
                name,
                Status::Fail,
                format!("cannot read the database clock: {e}"),
            )
        }
    };
    let skew = database - (before + after) / 2.0;
    // The tightest registered verifier decides, when this role may read them.
    let verifier = db
        .query_one(
            "SELECT min(clock_skew_seconds)::bigint FROM supabash.capability_verifiers",
            &[],
        )
        .await
        .ok()
        .and_then(|r| r.get::<_, Option<i64>>(0));
    let (limit, source) = match verifier {
        Some(s) => (s.max(0) as f64, "the strictest capability verifier's skew"),
        None => (args.max_skew_seconds as f64, "--max-skew-seconds"),
    };
    let detail =
        format!("the database clock is {skew:+.1} s from this host's (limit {limit} s, {source})");
    let status = if skew.abs() > limit {
        Status::Fail
    } else if skew.abs() > limit / 2.0 {
        Status::Warn
    } else {
        Status::Ok
    };
    report.add(name, status, detail);
}

//! Setting a project up for the Storage backend (what a CLI command runs): create the private
//! bucket with the service key, and check in the database that row-level security confines
//! each user to their own first folder (the four policies of `sql/storage.sql`).

use super::api::answer_error;
use crate::error::{Result, SupabashError};
use serde_json::{json, Value};
use supabash_core::ErrorCode;

/// Creates the private bucket `bucket` at the Storage URL `url` with `service_key`; `false`
/// when it already existed.
pub async fn create_bucket(url: &str, service_key: &str, bucket: &str) -> Result<bool> {
    let response = reqwest::Client::new()
        .post(format!("{}/bucket", url.trim_end_matches('/')))
        .bearer_auth(service_key)
        .header("apikey", service_key)
        .header("content-type", "application/json")
        .body(json!({ "name": bucket, "id": bucket, "public": false }).to_string())
        .send()
        .await
        .map_err(|e| SupabashError::new(ErrorCode::Backend, format!("storage unreachable: {e}")))?;
    let status = response.status().as_u16();
    let body = response.bytes().await.unwrap_or_default();
    if (200..300).contains(&status) {
        return Ok(true);
    }
    let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    if v["code"] == "BucketAlreadyExists" {
        return Ok(false);
    }
    Err(answer_error(status, &body, true))
}

/// What [`check_policies`] found.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PolicyReport {
    /// Row-level security is enabled on `storage.objects`.
    pub rls_enabled: bool,
    /// The bucket exists and is private.
    pub bucket_private: bool,
    /// Commands (`SELECT`, `INSERT`, `UPDATE`, `DELETE`) without a policy for `authenticated`
    /// limited to the bucket and the user's own first folder.
    pub missing: Vec<String>,
    /// Policies that let `authenticated` (or everyone) reach the bucket without that folder
    /// limit: they widen access whatever the four policies say.
    pub broad: Vec<String>,
}

impl PolicyReport {
    /// True when every check passed.
    pub fn ok(&self) -> bool {
        self.rls_enabled && self.bucket_private && self.missing.is_empty() && self.broad.is_empty()
    }
}

/// True when a policy expression limits rows to `bucket` and the caller's own first folder.
fn confines(expr: Option<&str>, bucket: &str) -> bool {
    expr.is_some_and(|e| {
        e.contains(&format!("'{bucket}'::text"))
            && e.contains("storage.foldername(name))[1]")
            && e.contains("auth.uid()")
    })
}

/// Checks `storage.objects` in the database `client` is connected to (as a role that may read
/// the catalog): row-level security on, the bucket private, and for each of the four commands
/// a permissive policy for `authenticated` confined to the user's folder of `bucket`, with no
/// other permissive policy for `authenticated` or `public` that is not so confined.
pub async fn check_policies(client: &tokio_postgres::Client, bucket: &str) -> Result<PolicyReport> {
    let db = |e: tokio_postgres::Error| {
        SupabashError::new(ErrorCode::Backend, format!("policy check failed: {e}"))
    };
    let rls_enabled: bool = client
        .query_opt(
            "SELECT relrowsecurity FROM pg_class WHERE oid = to_regclass('storage.objects')",
            &[],
        )
        .await
        .map_err(db)?
        .map(|r| r.get(0))
        .unwrap_or(false);
    let bucket_private = client
        .query_opt(
            "SELECT NOT coalesce(public, false) FROM storage.buckets WHERE id = $1",
            &[&bucket],
        )
        .await
        .map_err(db)?
        .is_some_and(|r| r.get::<_, bool>(0));
    let rows = client
        .query(
            "SELECT policyname::text, cmd, roles::text[], permissive, qual, with_check
               FROM pg_policies WHERE schemaname = 'storage' AND tablename = 'objects'",
            &[],
        )
        .await
        .map_err(db)?;
    let mut report = PolicyReport {
        rls_enabled,
        bucket_private,
        ..Default::default()
    };
    let mut covered = Vec::new();
    for r in &rows {
        let (name, cmd, roles): (String, String, Vec<String>) = (r.get(0), r.get(1), r.get(2));
        let permissive = r.get::<_, String>(3) == "PERMISSIVE";
        let (qual, check): (Option<String>, Option<String>) = (r.get(4), r.get(5));
        let for_users = roles.iter().any(|x| x == "authenticated" || x == "public");
        if !permissive || !for_users {
            continue;
        }
        let confined = match cmd.as_str() {
            "INSERT" => confines(check.as_deref(), bucket),
            "UPDATE" => confines(qual.as_deref(), bucket) && confines(check.as_deref(), bucket),
            "ALL" => {
                confines(qual.as_deref(), bucket)
                    && check.as_deref().is_none_or(|c| confines(Some(c), bucket))
            }
            _ => confines(qual.as_deref(), bucket),
        };
        // A policy about other buckets only is none of our business; one that names this
        // bucket, or no bucket at all, without the folder limit widens access.
        let exprs: Vec<&str> = [qual.as_deref(), check.as_deref()]
            .into_iter()
            .flatten()
            .collect();
        let names_bucket = exprs
            .iter()
            .any(|e| e.contains(&format!("'{bucket}'::text")));
        let names_any_bucket = exprs.iter().any(|e| e.contains("bucket_id"));
        if confined {
            covered.push(cmd);
        } else if names_bucket || !names_any_bucket {
            report.broad.push(name);
        }
    }
    for cmd in ["SELECT", "INSERT", "UPDATE", "DELETE"] {
        if !covered.iter().any(|c| c == cmd || c == "ALL") {
            report.missing.push(cmd.to_owned());
        }
    }
    Ok(report)
}

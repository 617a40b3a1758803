//! Setting a project up for the Storage backend (what a CLI command runs): create the private
//! bucket with the service key, check in the database that row-level security confines each
//! user to their own first folder (the four policies of `sql/storage.sql`), and that the
//! bucket's upload restrictions (`file_size_limit`, `allowed_mime_types`) admit everything the
//! backend uploads.

use super::api::answer_error;
use super::model::CONTENT_TYPES;
use crate::error::{Result, SupabashError};
use crate::limits::Limits;
use serde_json::{json, Value};
use supabash_core::ErrorCode;

/// The most bytes read of an answer to [`create_bucket`]: 64 KiB.
const SETUP_ANSWER_BYTES: usize = 64 * 1024;

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
    // The answer is a short JSON object; anything past the cap is cut off, not buffered.
    let body = crate::transport::answer::read_capped(response, SETUP_ANSWER_BYTES)
        .await
        .unwrap_or_default();
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

/// Bytes a revision record or intent may need per entry of the tree (an entry of about 150
/// bytes in the manifest, a receipt line, before and after entries in the intent), for sizing
/// the bucket's `file_size_limit`.
pub const RECORD_BYTES_PER_ENTRY: u64 = 512;

/// The largest object the backend uploads under `limits`: the largest file, or the records
/// of the largest tree, whichever is bigger (a revision pack stays within it too).
pub fn largest_upload(limits: &Limits) -> u64 {
    (limits.max_file_bytes as u64).max(limits.max_files as u64 * RECORD_BYTES_PER_ENTRY)
}

/// What [`check_bucket`] found about the bucket's upload restrictions.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BucketReport {
    /// The bucket exists.
    pub exists: bool,
    /// Its `file_size_limit` in bytes, when set.
    pub file_size_limit: Option<i64>,
    /// The largest object the backend may upload under the limits checked: the largest file,
    /// or the records of the largest tree, whichever is bigger.
    pub largest_upload: u64,
    /// Content types the backend uploads that the bucket's `allowed_mime_types` refuses.
    pub refused_types: Vec<&'static str>,
}

impl BucketReport {
    /// True when the bucket exists and admits every upload of the backend.
    pub fn ok(&self) -> bool {
        self.exists && !self.too_small() && self.refused_types.is_empty()
    }

    fn too_small(&self) -> bool {
        self.file_size_limit
            .is_some_and(|l| u64::try_from(l).unwrap_or(0) < self.largest_upload)
    }

    /// What to change, one sentence per problem (empty when [`Self::ok`]).
    pub fn advice(&self, bucket: &str) -> Vec<String> {
        let mut out = Vec::new();
        if !self.exists {
            out.push(format!("bucket {bucket} does not exist"));
            return out;
        }
        if let (true, Some(limit)) = (self.too_small(), self.file_size_limit) {
            out.push(format!(
                "file_size_limit is {limit} bytes, below the {} bytes the backend may upload \
                 (Limits::max_file_bytes, or the revision records of Limits::max_files entries): \
                 raise it (update storage.buckets set file_size_limit = {} where id = '{bucket}'), \
                 clear it (= null), or lower those limits",
                self.largest_upload, self.largest_upload
            ));
        }
        if !self.refused_types.is_empty() {
            out.push(format!(
                "allowed_mime_types refuses {}, which the backend uploads: add them (or \
                 application/*) to the list, or clear it (update storage.buckets set \
                 allowed_mime_types = null where id = '{bucket}')",
                self.refused_types.join(", ")
            ));
        }
        out
    }
}

/// Whether an `allowed_mime_types` entry admits `content_type` as Storage matches: the same
/// type and subtype, or the same type and `*`.
fn mime_allowed(allowed: &str, content_type: &str) -> bool {
    match (allowed.split_once('/'), content_type.split_once('/')) {
        (Some((at, asub)), Some((t, sub))) => at == t && (asub == "*" || asub == sub),
        _ => false,
    }
}

/// Checks, in the database `client` is connected to, that `bucket` exists and that its
/// `file_size_limit` and `allowed_mime_types` admit every object the backend uploads under
/// `limits` (its content types are [`CONTENT_TYPES`]). The Storage server's own
/// `FILE_SIZE_LIMIT` (default 50 MB) is not visible here and applies too.
pub async fn check_bucket(
    client: &tokio_postgres::Client,
    bucket: &str,
    limits: &Limits,
) -> Result<BucketReport> {
    let row = client
        .query_opt(
            "SELECT file_size_limit, allowed_mime_types FROM storage.buckets WHERE id = $1",
            &[&bucket],
        )
        .await
        .map_err(|e| SupabashError::new(ErrorCode::Backend, format!("bucket check failed: {e}")))?;
    let largest_upload = largest_upload(limits);
    let Some(row) = row else {
        return Ok(BucketReport {
            largest_upload,
            ..Default::default()
        });
    };
    let allowed: Option<Vec<String>> = row.get(1);
    let refused_types = match allowed.filter(|a| !a.is_empty()) {
        Some(allowed) => CONTENT_TYPES
            .into_iter()
            .filter(|t| !allowed.iter().any(|a| mime_allowed(a, t)))
            .collect(),
        None => Vec::new(),
    };
    Ok(BucketReport {
        exists: true,
        file_size_limit: row.get(0),
        largest_upload,
        refused_types,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mime_types_match_like_storage() {
        assert!(mime_allowed(
            "application/*",
            "application/vnd.supabash.directory"
        ));
        assert!(mime_allowed("application/json", "application/json"));
        assert!(!mime_allowed(
            "application/json",
            "application/octet-stream"
        ));
        assert!(!mime_allowed("*/*", "application/json"));
    }

    #[test]
    fn advice_names_what_to_change() {
        let report = BucketReport {
            exists: true,
            file_size_limit: Some(1000),
            largest_upload: 10 * 1024 * 1024,
            refused_types: vec!["application/json"],
        };
        assert!(!report.ok());
        let advice = report.advice("workspaces").join("\n");
        assert!(advice.contains("file_size_limit is 1000 bytes"), "{advice}");
        assert!(advice.contains("refuses application/json"), "{advice}");
        let fine = BucketReport {
            file_size_limit: None,
            refused_types: Vec::new(),
            ..report
        };
        assert!(fine.ok() && fine.advice("workspaces").is_empty());
    }
}

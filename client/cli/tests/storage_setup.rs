//! Setup of the Storage backend: creating the private bucket with the service key (a user
//! cannot), and checking that the policies of `sql/storage.sql` confine users to their folder
//! (a missing or widening policy is reported).

use supabash_tests::storage_support;

use storage_support::*;
use supabash::storage::setup::{check_policies, create_bucket};
use supabash::ErrorCode;
use supabash_tests::storage_server::StorageServer;

#[tokio::test]
async fn bucket_creation_and_policy_check() {
    let server = server().await;
    let name = format!("extra-{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    assert!(
        create_bucket(&server.url, &StorageServer::service_key(), &name)
            .await
            .unwrap()
    );
    assert!(
        !create_bucket(&server.url, &StorageServer::service_key(), &name)
            .await
            .unwrap()
    );
    let user = new_session();
    let e = create_bucket(&server.url, &user.access_token, "mine")
        .await
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::Authorization);

    let admin = supabash_tests::support::admin(cluster()).await;
    let report = check_policies(&admin, BUCKET).await.unwrap();
    assert!(report.ok(), "{report:?}");
    let other = check_policies(&admin, &name).await.unwrap();
    assert!(other.rls_enabled && other.bucket_private && other.broad.is_empty());
    assert_eq!(other.missing, ["SELECT", "INSERT", "UPDATE", "DELETE"]);

    // The widening policy names the extra bucket, so the CLI test running beside this one still
    // sees the shared bucket's policies unchanged.
    admin
        .batch_execute(&format!(
            "CREATE POLICY widening ON storage.objects FOR SELECT TO authenticated
               USING (bucket_id = '{name}')"
        ))
        .await
        .unwrap();
    let widened = check_policies(&admin, &name).await;
    admin
        .batch_execute("DROP POLICY widening ON storage.objects")
        .await
        .unwrap();
    let widened = widened.unwrap();
    assert_eq!(widened.broad, ["widening"]);
    assert!(!widened.ok());
}

/// `supabash storage-setup` runs the same two steps: exit 0 when everything holds, 2 when a
/// policy is missing (a bucket the four policies do not name).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_creates_the_bucket_and_reports_the_policies() {
    // The test server runs on this runtime; the command blocks one worker, not all of them.
    let server = server().await;
    let run = |bucket: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_supabash"))
            .args(["storage-setup", "--bucket", bucket])
            .env("SUPABASE_STORAGE_URL", &server.url)
            .env("SUPABASE_SERVICE_ROLE_KEY", StorageServer::service_key())
            .env("SUPABASE_DB_URL", cluster().dsn("postgres"))
            .output()
            .expect("run supabash")
    };
    let good = run(BUCKET);
    let out = String::from_utf8_lossy(&good.stdout);
    assert_eq!(good.status.code(), Some(0), "{out}");
    assert!(
        out.contains("bucket workspaces: already exists") && out.contains("policies: ok"),
        "{out}"
    );
    assert!(
        !out.contains(&StorageServer::service_key()),
        "the key is never printed"
    );

    let name = format!("cli-{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    let bad = run(&name);
    let out = String::from_utf8_lossy(&bad.stdout);
    // A check that found problems: status 8 (docs/cli.md), summed up on stderr.
    assert_eq!(bad.status.code(), Some(8), "{out}");
    assert!(
        String::from_utf8_lossy(&bad.stderr).starts_with("supabash: PROBLEMS: "),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );
    assert!(
        out.contains(&format!("bucket {name}: created (private)")),
        "{out}"
    );
    assert!(
        out.contains("missing: SELECT policy") && out.contains("policies: FAILED"),
        "{out}"
    );
    // Issue 23: commands are named as they are ("a INSERT policy" read wrong).
    assert!(
        out.contains("missing: INSERT policy") && !out.contains("a INSERT"),
        "{out}"
    );
    assert!(out.contains("bucket restrictions: ok"), "{out}");

    // A bucket whose restrictions refuse the backend's uploads: named, with what to change.
    let admin = supabash_tests::support::admin(cluster()).await;
    admin
        .batch_execute(&format!(
            "UPDATE storage.buckets SET allowed_mime_types = '{{image/*}}', file_size_limit = 1024
              WHERE id = '{name}'"
        ))
        .await
        .unwrap();
    let restricted = run(&name);
    let out = String::from_utf8_lossy(&restricted.stdout);
    assert_eq!(restricted.status.code(), Some(8), "{out}");
    assert!(out.contains("bucket restrictions: FAILED"), "{out}");
    assert!(
        out.contains("file_size_limit is 1024 bytes")
            && out
                .contains("allowed_mime_types refuses application/octet-stream, application/json"),
        "{out}"
    );
}

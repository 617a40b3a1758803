//! `supabash storage-setup`: creates the Storage backend's private bucket when missing, then
//! checks the bucket's row-level security policies and restrictions in the database.

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Arguments of `supabash storage-setup`.
#[derive(clap::Args)]
pub struct StorageSetupArgs {
    /// The Storage API base URL, e.g. `https://<ref>.supabase.co/storage/v1`.
    #[arg(long, env = "SUPABASE_STORAGE_URL")]
    pub storage_url: String,
    /// The service-role key: only it may create a bucket. Never printed.
    #[arg(long, env = "SUPABASE_SERVICE_ROLE_KEY", hide_env_values = true)]
    pub service_key: String,
    /// A connection string of the project's database, to read the policies from the catalog.
    #[arg(long, env = "SUPABASE_DB_URL", hide_env_values = true)]
    pub db: String,
    /// The bucket workspaces live in.
    #[arg(long, default_value = "workspaces")]
    pub bucket: String,
}

/// `supabash storage-setup`; fails with [`crate::exit::problems`] (status 8) when a policy or
/// bucket check failed.
pub async fn run(args: StorageSetupArgs) -> Result<(), BoxError> {
    use supabash::storage::setup::{check_bucket, check_policies, create_bucket};
    let created = create_bucket(&args.storage_url, &args.service_key, &args.bucket).await?;
    println!(
        "bucket {}: {}",
        args.bucket,
        if created {
            "created (private)"
        } else {
            "already exists"
        }
    );
    let (client, connection) = tokio_postgres::connect(&args.db, tokio_postgres::NoTls).await?;
    tokio::spawn(connection);
    let report = check_policies(&client, &args.bucket).await?;
    let mark = |ok: bool| if ok { "ok" } else { "FAILED" };
    println!(
        "row-level security on storage.objects: {}",
        mark(report.rls_enabled)
    );
    println!("bucket is private: {}", mark(report.bucket_private));
    for command in &report.missing {
        println!("missing: {command} policy for authenticated confined to the user's folder");
    }
    for policy in &report.broad {
        println!("widening: policy {policy:?} reaches the bucket without the folder limit");
    }
    println!("policies: {}", mark(report.ok()));
    let bucket = check_bucket(&client, &args.bucket, &supabash::Limits::default()).await?;
    for advice in bucket.advice(&args.bucket) {
        println!("bucket restriction: {advice}");
    }
    println!("bucket restrictions: {}", mark(bucket.ok()));
    if report.ok() && bucket.ok() {
        return Ok(());
    }
    Err(crate::exit::problems(format!(
        "bucket {}: the checks above failed",
        args.bucket
    )))
}

//! A throwaway PostgreSQL cluster for demos and tests: owned by the `postgres` OS user (initdb
//! refuses root), on a free loopback port, in a temporary directory, with the Supabase roles
//! (`sql/bootstrap.sql`, embedded) and `CREATE EXTENSION supabash` in database `app`. It
//! installs nothing: the extension must already be installed (`just install`).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// The bootstrap that gives plain PostgreSQL the Supabase roles and claim helpers.
pub const BOOTSTRAP_SQL: &str = include_str!("../../../sql/bootstrap.sql");

/// Where Debian keeps the PostgreSQL 15 server binaries; `PG_BIN` overrides it.
fn pg_bin(tool: &str) -> PathBuf {
    let dir = std::env::var("PG_BIN").unwrap_or_else(|_| "/usr/lib/postgresql/15/bin".into());
    Path::new(&dir).join(tool)
}

#[allow(unsafe_code)]
fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// A server tool run as `postgres` when we are root, else as ourselves.
fn pg_command(tool: &str) -> Command {
    if is_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(pg_bin(tool));
        c
    } else {
        Command::new(pg_bin(tool))
    }
}

fn run_as_pg(tool: &str, args: &[&str]) -> std::process::Output {
    let out = pg_command(tool)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{tool}: {e}"));
    assert!(
        out.status.success(),
        "{tool} {args:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A new temporary directory for a cluster, owned by `postgres` when we are root.
fn new_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("supabash-pg-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    if is_root() {
        let ok = Command::new("chown")
            .arg("postgres")
            .arg(&dir)
            .status()
            .unwrap();
        assert!(ok.success(), "chown postgres {dir:?}");
    }
    dir
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A running throwaway cluster with one database, `app`, ready for supabash.
pub struct Cluster {
    pub port: u16,
    pub dir: PathBuf,
}

static SHARED: OnceLock<Cluster> = OnceLock::new();

extern "C" fn stop_shared() {
    if let Some(c) = SHARED.get() {
        c.stop();
    }
}

impl Cluster {
    /// Creates, starts and prepares a new cluster.
    pub fn start() -> Cluster {
        let dir = new_dir();
        let data = dir.join("data");
        let data_s = data.to_str().unwrap();
        run_as_pg(
            "initdb",
            &[
                "-D",
                data_s,
                "-U",
                "postgres",
                "--auth=trust",
                "--no-sync",
                "-E",
                "UTF8",
                "--locale=C.UTF-8",
            ],
        );
        let cluster = Cluster::run(dir);
        cluster.psql("postgres", BOOTSTRAP_SQL);
        cluster.psql("postgres", "CREATE DATABASE app");
        cluster.psql("app", BOOTSTRAP_SQL);
        cluster.psql("app", "CREATE EXTENSION supabash");
        cluster
    }

    /// Starts the server on the data directory under `dir` on a free port.
    fn run(dir: PathBuf) -> Cluster {
        let data = dir.join("data");
        let port = free_port();
        let opts = format!(
            "-p {port} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200 -c shared_buffers=256MB",
            dir.display()
        );
        let log = dir.join("server.log");
        run_as_pg(
            "pg_ctl",
            &[
                "-D",
                data.to_str().unwrap(),
                "-l",
                log.to_str().unwrap(),
                "-o",
                &opts,
                "-w",
                "start",
            ],
        );
        Cluster { port, dir }
    }

    /// Starts a hot standby of this cluster (a streaming replica, as Supabase read replicas
    /// are): a `pg_basebackup` with `standby.signal` and `primary_conninfo`, on its own port.
    /// It serves reads only; see [`Cluster::wait_replayed`].
    pub fn start_replica(&self) -> Cluster {
        let dir = new_dir();
        let data = dir.join("data");
        run_as_pg(
            "pg_basebackup",
            &[
                "-h",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-U",
                "postgres",
                "-D",
                data.to_str().unwrap(),
                "-R",
                "-X",
                "stream",
                "--no-sync",
            ],
        );
        let replica = Cluster::run(dir);
        assert_eq!(
            replica.psql("app", "SELECT pg_is_in_recovery()").trim(),
            "t"
        );
        replica
    }

    /// Restarts the server (for settings that need a restart, such as preloaded libraries).
    pub fn restart(&self) {
        let data = self.dir.join("data");
        let log = self.dir.join("server.log");
        run_as_pg(
            "pg_ctl",
            &[
                "-D",
                data.to_str().unwrap(),
                "-l",
                log.to_str().unwrap(),
                "-w",
                "-m",
                "fast",
                "restart",
            ],
        );
    }

    /// Waits until `replica` has replayed everything this primary has written so far.
    pub fn wait_replayed(&self, replica: &Cluster) {
        let target = self.psql("app", "SELECT pg_current_wal_lsn()");
        let sql = format!(
            "SELECT pg_last_wal_replay_lsn() >= '{}'::pg_lsn",
            target.trim()
        );
        for _ in 0..1000 {
            if replica.psql("app", &sql).trim() == "t" {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        panic!("the replica did not replay {} within 10 s", target.trim());
    }

    /// One cluster per test process, stopped when the process exits.
    pub fn shared() -> &'static Cluster {
        SHARED.get_or_init(|| {
            let c = Cluster::start();
            // SAFETY: registering a plain extern "C" function.
            #[allow(unsafe_code)]
            unsafe {
                libc::atexit(stop_shared)
            };
            c
        })
    }

    /// A libpq connection string for `user` on database `app`.
    pub fn dsn(&self, user: &str) -> String {
        format!("host=127.0.0.1 port={} user={user} dbname=app", self.port)
    }

    /// Runs SQL through psql as the superuser, failing the test on error.
    pub fn psql(&self, db: &str, sql: &str) -> String {
        let out = Command::new("psql")
            .args([
                "-X",
                "-q",
                "-v",
                "ON_ERROR_STOP=1",
                "-h",
                "127.0.0.1",
                "-U",
                "postgres",
                "-p",
            ])
            .arg(self.port.to_string())
            .args(["-d", db, "-At", "-c", sql])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "psql failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Stops the server and removes its files.
    pub fn stop(&self) {
        let data = self.dir.join("data");
        let _ = pg_command("pg_ctl")
            .args(["-D", data.to_str().unwrap(), "-m", "immediate", "stop"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

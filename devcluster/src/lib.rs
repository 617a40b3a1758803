//! supabash-devcluster: a throwaway PostgreSQL cluster for `supabash demo`, the end-to-end
//! tests (`supabash-tests`) and the benchmarks. Owned by the `postgres` OS user when run as
//! root (initdb refuses root), on a free loopback port, in a temporary directory, with the
//! Supabase roles (`sql/bootstrap.sql`, embedded) and `CREATE EXTENSION supabash` in database
//! `app`. It installs nothing: the extension must already be installed (`just install`).
//!
//! **Which PostgreSQL.** The server tools (`initdb`, `pg_ctl`, `pg_basebackup`) come from
//! `$PG_BIN`, else from the directory of `$PG_CONFIG` (as the justfile does), else from
//! Debian's PostgreSQL 15 (`/usr/lib/postgresql/15/bin`); `psql`, a client, is the one on
//! `PATH`.
//!
//! **Cleanup.** Every cluster has a [`watchdog::Watchdog`], started as soon as its directory
//! exists, that stops the server (`pg_ctl stop -m immediate`) and removes the directory when
//! the cluster is stopped or dropped, and also when this process ends without either: at exit
//! (the [`Cluster::shared`] one lives in a static and is never dropped), after a panic, or
//! killed. A test binary therefore never leaves a server or a data directory behind.
//!
//! **Errors.** Every step has a `try_` form answering [`Result`] with an [`Error`] that names
//! what failed (the command and what it printed, or the file); the plain forms panic with that
//! message, which is what tests want.

pub mod watchdog;

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::Duration;
use watchdog::Watchdog;

/// The bootstrap that gives plain PostgreSQL the Supabase roles and claim helpers.
pub const BOOTSTRAP_SQL: &str = include_str!("../../sql/bootstrap.sql");

/// Where Debian keeps the PostgreSQL 15 server binaries, used when neither `PG_BIN` nor
/// `PG_CONFIG` is set.
const DEFAULT_BIN: &str = "/usr/lib/postgresql/15/bin";

/// What went wrong, and the underlying I/O error when there is one.
#[derive(Debug)]
pub struct Error {
    what: String,
    source: Option<std::io::Error>,
}

impl Error {
    fn new(what: impl Into<String>) -> Error {
        Error {
            what: what.into(),
            source: None,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.source {
            Some(e) => write!(f, "{}: {e}", self.what),
            None => f.write_str(&self.what),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_ref().map(|e| e as _)
    }
}

/// A result of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Adds what was being done to an I/O error.
trait Context<T> {
    fn context(self, what: impl FnOnce() -> String) -> Result<T>;
}

impl<T> Context<T> for std::io::Result<T> {
    fn context(self, what: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|e| Error {
            what: what(),
            source: Some(e),
        })
    }
}

/// The directory of the PostgreSQL server tools (see the crate docs).
pub fn pg_bin_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("PG_BIN").filter(|d| !d.is_empty()) {
        return dir.into();
    }
    if let Some(config) = std::env::var_os("PG_CONFIG").filter(|c| !c.is_empty()) {
        if let Some(dir) = Path::new(&config).parent() {
            return dir.to_path_buf();
        }
    }
    DEFAULT_BIN.into()
}

fn pg_bin(tool: &str) -> PathBuf {
    pg_bin_dir().join(tool)
}

#[allow(unsafe_code)]
fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// The program and leading arguments that run server tool `tool` as `postgres` when we are
/// root, else as ourselves.
fn pg_argv(tool: &str) -> Vec<OsString> {
    let mut argv: Vec<OsString> = Vec::new();
    if is_root() {
        argv.extend(["runuser", "-u", "postgres", "--"].map(OsString::from));
    }
    argv.push(pg_bin(tool).into());
    argv
}

fn pg_command(tool: &str) -> Command {
    let argv = pg_argv(tool);
    let mut c = Command::new(&argv[0]);
    c.args(&argv[1..]);
    c
}

/// The command line of `tool args`, for error messages.
fn shown(tool: &str, args: &[&OsStr]) -> String {
    let mut s = pg_bin(tool).display().to_string();
    for a in args {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}

/// Runs server tool `tool` (as `postgres` when we are root); fails unless it succeeds.
fn run_as_pg(tool: &str, args: &[&OsStr]) -> Result<Output> {
    let out = pg_command(tool)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .context(|| format!("running {}", shown(tool, args)))?;
    if !out.status.success() {
        return Err(Error::new(format!(
            "{} failed ({}):\n{}{}",
            shown(tool, args),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(out)
}

/// A new temporary directory for a cluster (owned by `postgres` when we are root), with the
/// watchdog that stops the cluster in it and removes it.
fn new_dir() -> Result<(PathBuf, Watchdog)> {
    let dir = std::env::temp_dir().join(format!("supabash-pg-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).context(|| format!("creating {}", dir.display()))?;
    let watchdog = cluster_watchdog(&dir)?;
    if is_root() {
        let status = Command::new("chown")
            .arg("postgres")
            .arg(&dir)
            .status()
            .context(|| format!("running chown postgres {}", dir.display()))?;
        if !status.success() {
            return Err(Error::new(format!(
                "chown postgres {} failed ({status})",
                dir.display()
            )));
        }
    }
    Ok((dir, watchdog))
}

/// The watchdog of the cluster in `dir`: `pg_ctl stop -m immediate` on `dir/data` (as
/// `postgres` when we are root; nothing happens when no server runs), then `rm -rf dir`.
fn cluster_watchdog(dir: &Path) -> Result<Watchdog> {
    let mut args: Vec<OsString> = vec![dir.into()];
    args.extend(pg_argv("pg_ctl"));
    args.extend(["-D".into(), dir.join("data").into()]);
    args.extend(["-m", "immediate", "stop"].map(OsString::from));
    Watchdog::spawn(
        "dir=$1; shift\n\"$@\" >/dev/null 2>&1\nrm -rf \"$dir\"\n",
        args,
    )
}

fn free_port() -> Result<u16> {
    let listener =
        TcpListener::bind("127.0.0.1:0").context(|| "binding a free loopback port".into())?;
    let addr = listener
        .local_addr()
        .context(|| "reading a bound port".into())?;
    Ok(addr.port())
}

/// A running throwaway cluster with one database, `app`, ready for supabash. Stopped, and its
/// directory removed, on [`Cluster::stop`], on drop, and when this process ends.
pub struct Cluster {
    pub port: u16,
    pub dir: PathBuf,
    watchdog: Watchdog,
}

static SHARED: OnceLock<Cluster> = OnceLock::new();

extern "C" fn stop_shared() {
    if let Some(c) = SHARED.get() {
        c.stop();
    }
}

impl Cluster {
    /// Creates, starts and prepares a new cluster; panics with what failed.
    pub fn start() -> Cluster {
        Cluster::try_start().unwrap_or_else(|e| panic!("starting a throwaway cluster: {e}"))
    }

    /// Creates, starts and prepares a new cluster.
    pub fn try_start() -> Result<Cluster> {
        let cluster = Cluster::try_start_without_extension()?;
        cluster.try_psql("app", "CREATE EXTENSION supabash")?;
        Ok(cluster)
    }

    /// Creates and starts a new cluster with the Supabase roles in `postgres` and `app` but
    /// without the extension (for what needs only PostgreSQL, e.g. the Storage API test
    /// server); panics with what failed.
    pub fn start_without_extension() -> Cluster {
        Cluster::try_start_without_extension()
            .unwrap_or_else(|e| panic!("starting a throwaway cluster: {e}"))
    }

    /// See [`Self::start_without_extension`].
    pub fn try_start_without_extension() -> Result<Cluster> {
        let (dir, watchdog) = new_dir()?;
        let data = dir.join("data");
        let mut args: Vec<&OsStr> = vec!["-D".as_ref(), data.as_os_str()];
        args.extend(
            [
                "-U",
                "postgres",
                "--auth=trust",
                "--no-sync",
                "-E",
                "UTF8",
                "--locale=C.UTF-8",
            ]
            .map(OsStr::new),
        );
        run_as_pg("initdb", &args)?;
        let cluster = Cluster::run(dir, watchdog)?;
        cluster.try_psql("postgres", BOOTSTRAP_SQL)?;
        cluster.try_psql("postgres", "CREATE DATABASE app")?;
        cluster.try_psql("app", BOOTSTRAP_SQL)?;
        Ok(cluster)
    }

    /// Starts the server on the data directory under `dir` on a free port.
    fn run(dir: PathBuf, watchdog: Watchdog) -> Result<Cluster> {
        let data = dir.join("data");
        let port = free_port()?;
        let opts = format!(
            "-p {port} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200 -c shared_buffers=256MB",
            dir.display()
        );
        let log = dir.join("server.log");
        run_as_pg(
            "pg_ctl",
            &[
                "-D".as_ref(),
                data.as_os_str(),
                "-l".as_ref(),
                log.as_os_str(),
                "-o".as_ref(),
                opts.as_ref(),
                "-w".as_ref(),
                "start".as_ref(),
            ],
        )
        .map_err(|e| server_log_in(e, &log))?;
        Ok(Cluster {
            port,
            dir,
            watchdog,
        })
    }

    /// Starts a hot standby of this cluster (a streaming replica, as Supabase read replicas
    /// are): a `pg_basebackup` (after a fast checkpoint) with `standby.signal` and
    /// `primary_conninfo`, on its own port.
    /// It serves reads only; see [`Cluster::wait_replayed`]. Panics with what failed.
    pub fn start_replica(&self) -> Cluster {
        self.try_start_replica()
            .unwrap_or_else(|e| panic!("starting a replica of port {}: {e}", self.port))
    }

    /// [`Cluster::start_replica`], answering what failed.
    pub fn try_start_replica(&self) -> Result<Cluster> {
        let (dir, watchdog) = new_dir()?;
        let data = dir.join("data");
        let port = self.port.to_string();
        let mut args: Vec<&OsStr> = ["-h", "127.0.0.1", "-p", &port, "-U", "postgres", "-D"]
            .map(OsStr::new)
            .to_vec();
        args.push(data.as_os_str());
        // A fast checkpoint: the default spread one paces itself over most of
        // checkpoint_timeout, which made each replica take about 100 s to start.
        args.extend(["-R", "-X", "stream", "--no-sync", "--checkpoint=fast"].map(OsStr::new));
        run_as_pg("pg_basebackup", &args)?;
        let replica = Cluster::run(dir, watchdog)?;
        let recovering = replica.try_psql("app", "SELECT pg_is_in_recovery()")?;
        if recovering.trim() != "t" {
            return Err(Error::new(format!(
                "the replica on port {} is not in recovery (pg_is_in_recovery: {})",
                replica.port,
                recovering.trim()
            )));
        }
        Ok(replica)
    }

    /// Restarts the server (for settings that need a restart, such as preloaded libraries);
    /// panics with what failed.
    pub fn restart(&self) {
        self.try_restart()
            .unwrap_or_else(|e| panic!("restarting the cluster on port {}: {e}", self.port));
    }

    /// [`Cluster::restart`], answering what failed.
    pub fn try_restart(&self) -> Result<()> {
        let data = self.dir.join("data");
        let log = self.dir.join("server.log");
        run_as_pg(
            "pg_ctl",
            &[
                "-D".as_ref(),
                data.as_os_str(),
                "-l".as_ref(),
                log.as_os_str(),
                "-w".as_ref(),
                "-m".as_ref(),
                "fast".as_ref(),
                "restart".as_ref(),
            ],
        )
        .map_err(|e| server_log_in(e, &log))?;
        Ok(())
    }

    /// Waits until `replica` has replayed everything this primary has written so far; panics
    /// when it does not within 10 s.
    pub fn wait_replayed(&self, replica: &Cluster) {
        self.try_wait_replayed(replica)
            .unwrap_or_else(|e| panic!("{e}"));
    }

    /// [`Cluster::wait_replayed`], answering what failed.
    pub fn try_wait_replayed(&self, replica: &Cluster) -> Result<()> {
        let target = self.try_psql("app", "SELECT pg_current_wal_lsn()")?;
        let target = target.trim();
        let sql = format!("SELECT pg_last_wal_replay_lsn() >= '{target}'::pg_lsn");
        for _ in 0..1000 {
            if replica.try_psql("app", &sql)?.trim() == "t" {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Err(Error::new(format!(
            "the replica on port {} did not replay {target} within 10 s",
            replica.port
        )))
    }

    /// One cluster per process, stopped when the process exits (see the crate docs); panics
    /// with what failed when it cannot start.
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
        self.dsn_on(user, "app")
    }

    /// A libpq connection string for `user` on database `db`.
    pub fn dsn_on(&self, user: &str, db: &str) -> String {
        format!("host=127.0.0.1 port={} user={user} dbname={db}", self.port)
    }

    /// Makes `name` a new database (dropping the one of that name) with the Supabase roles,
    /// default privileges and claim helpers of [`BOOTSTRAP_SQL`], and no extension yet.
    pub fn fresh_database(&self, name: &str) {
        self.psql("postgres", &format!("DROP DATABASE IF EXISTS {name}"));
        self.psql("postgres", &format!("CREATE DATABASE {name}"));
        self.psql(name, BOOTSTRAP_SQL);
    }

    /// Runs SQL through psql as the superuser; panics (failing the test) on error.
    pub fn psql(&self, db: &str, sql: &str) -> String {
        self.try_psql(db, sql).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Runs SQL through psql as the superuser on database `db`; answers its output
    /// (unaligned, tuples only).
    pub fn try_psql(&self, db: &str, sql: &str) -> Result<String> {
        let psql = psql_program();
        let out = Command::new(&psql)
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
            .stdin(Stdio::null())
            .output()
            .context(|| format!("running {}", psql.display()))?;
        if !out.status.success() {
            return Err(Error::new(format!(
                "psql on port {} database {db} failed ({}): {}\nstatement: {}",
                self.port,
                out.status,
                String::from_utf8_lossy(&out.stderr).trim_end(),
                abbreviated(sql)
            )));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Stops the server and removes its files (waits until both are done). Later calls do
    /// nothing; dropping the cluster does the same.
    pub fn stop(&self) {
        self.watchdog.fire();
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The `psql` on `PATH` (Debian's, PostgreSQL 15), whichever server runs: it speaks to newer
/// servers, and the `psql` of the relocatable PostgreSQL 17 build scripts/more-pg.sh installs
/// crashes at start (even `psql --version`).
fn psql_program() -> PathBuf {
    "psql".into()
}

/// The first line of a statement, for error messages (the bootstrap is long).
fn abbreviated(sql: &str) -> String {
    let first = sql.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    if first.len() < sql.trim().len() {
        format!("{first} ...")
    } else {
        first.to_owned()
    }
}

/// `e` with the end of the server log at `log`, which says why a server did not start.
fn server_log_in(e: Error, log: &Path) -> Error {
    let tail = std::fs::read_to_string(log)
        .map(|s| {
            let lines: Vec<&str> = s.lines().collect();
            lines[lines.len().saturating_sub(20)..].join("\n")
        })
        .unwrap_or_default();
    if tail.is_empty() {
        e
    } else {
        Error::new(format!("{e}\nserver log ({}):\n{tail}", log.display()))
    }
}

//! The suite cleans up after itself: a test binary that started clusters and postrust leaves
//! none of them running, and no cluster directory behind, whether it exits normally, a test
//! panics, or it is killed with `SIGKILL` (see the harness's crate docs: watchdogs).
//!
//! Each test runs this binary again as a child (the `helper` test, which does nothing unless
//! `CLEANUP_HELPER` names a mode), reads the servers it started from its output, lets it end
//! the chosen way, and then requires, within 30 s: every cluster's postmaster gone, its port
//! closed and its directory removed; postrust gone and its port closed.

use std::io::{BufRead, BufReader, Read};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};
use supabash_tests::Cluster;

const HELPER: &str = "CLEANUP_HELPER";
/// Starts every line the helper announces (libtest may print `test helper ... ` before it).
const MARK: &str = "cleanup-helper:";

/// A server the helper started.
#[derive(Debug)]
enum Server {
    Cluster { port: u16, dir: PathBuf },
    Postrust { pid: u32, port: u16 },
}

fn announce(c: &Cluster) {
    println!("{MARK} cluster {} {}", c.port, c.dir.display());
}

/// The child's side: starts the shared cluster and postrust (statics, never dropped), and per
/// mode: `exit` also leaks an owned cluster (as a static would) and returns; `panic` holds an
/// owned cluster and panics; `kill` waits to be killed.
#[test]
fn helper() {
    let Ok(mode) = std::env::var(HELPER) else {
        return;
    };
    announce(Cluster::shared());
    let postrust = supabash_tests::client::shared_postrust();
    let port = postrust.url.rsplit(':').next().unwrap_or_default();
    println!("{MARK} postrust {} {port}", postrust.pid());
    match mode.as_str() {
        "exit" => {
            let leaked = Cluster::start();
            announce(&leaked);
            std::mem::forget(leaked);
            println!("{MARK} ready");
        }
        "panic" => {
            let owned = Cluster::start();
            announce(&owned);
            println!("{MARK} ready");
            panic!("a failing test (on purpose)");
        }
        "kill" => {
            println!("{MARK} ready");
            loop {
                std::thread::sleep(Duration::from_secs(1));
            }
        }
        other => panic!("unknown {HELPER} mode {other}"),
    }
}

/// Runs the helper in `mode`, killing it once it is ready when `kill`; answers the servers it
/// announced and how it ended.
fn run_helper(mode: &str, kill: bool) -> (Vec<Server>, ExitStatus) {
    let exe = std::env::current_exe().expect("the test binary's path");
    let mut child = Command::new(exe)
        .args(["--exact", "helper", "--nocapture", "--test-threads=1"])
        .env(HELPER, mode)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the test binary runs again");
    let mut out = BufReader::new(child.stdout.take().expect("piped stdout"));
    let mut servers = Vec::new();
    let mut ready = false;
    let mut line = String::new();
    while !ready {
        line.clear();
        if out.read_line(&mut line).expect("reading the helper") == 0 {
            break;
        }
        let Some((_, announced)) = line.split_once(MARK) else {
            continue;
        };
        let words: Vec<&str> = announced.split_whitespace().collect();
        match words.as_slice() {
            ["cluster", port, dir] => servers.push(Server::Cluster {
                port: port.parse().expect("a port"),
                dir: PathBuf::from(dir),
            }),
            ["postrust", pid, port] => servers.push(Server::Postrust {
                pid: pid.parse().expect("a pid"),
                port: port.parse().expect("a port"),
            }),
            ["ready"] => ready = true,
            _ => {}
        }
    }
    if kill && ready {
        child.kill().expect("SIGKILL the helper");
    }
    // Read to the end so the helper never writes into a closed pipe.
    let _ = out.read_to_end(&mut Vec::new());
    let status = child.wait().expect("the helper ends");
    assert!(
        ready,
        "the helper did not get ready ({status}); servers: {servers:?}"
    );
    (servers, status)
}

/// Whether something accepts connections on loopback `port`.
fn listening(port: u16) -> bool {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_ok()
}

/// Live (not zombie) processes whose command line mentions `needle`.
fn processes_mentioning(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let p = e.path();
        let Ok(cmdline) = std::fs::read(p.join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(needle) && !is_zombie(&p) {
            found.push(format!("{}: {cmdline}", p.display()));
        }
    }
    found
}

fn is_zombie(proc_dir: &Path) -> bool {
    let stat = std::fs::read_to_string(proc_dir.join("stat")).unwrap_or_default();
    // The state follows the command name in parentheses, which may itself hold spaces.
    stat.rsplit_once(") ")
        .is_none_or(|(_, rest)| rest.starts_with('Z') || rest.starts_with('X'))
}

/// What of `server` still remains, if anything.
fn remains(server: &Server) -> Option<String> {
    match server {
        Server::Cluster { port, dir } => {
            let procs = processes_mentioning(&dir.display().to_string());
            let mut left = Vec::new();
            if !procs.is_empty() {
                left.push(format!("processes {procs:?}"));
            }
            if listening(*port) {
                left.push(format!("port {port} accepts connections"));
            }
            if dir.exists() {
                left.push(format!("{} exists", dir.display()));
            }
            (!left.is_empty()).then(|| format!("cluster {}: {}", dir.display(), left.join("; ")))
        }
        Server::Postrust { pid, port } => {
            let proc_dir = PathBuf::from(format!("/proc/{pid}"));
            let alive = proc_dir.exists() && !is_zombie(&proc_dir);
            let open = listening(*port);
            (alive || open)
                .then(|| format!("postrust {pid}: alive {alive}, port {port} open {open}"))
        }
    }
}

/// Requires that nothing of `servers` remains within 30 s.
fn assert_cleaned(mode: &str, servers: &[Server]) {
    assert!(
        servers.iter().any(|s| matches!(s, Server::Cluster { .. })),
        "{mode}: the helper announced no cluster"
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let left: Vec<String> = servers.iter().filter_map(remains).collect();
        if left.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{mode}: 30 s after the test binary ended, servers remain: {left:#?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn servers_stop_when_the_test_binary_exits() {
    let (servers, status) = run_helper("exit", false);
    assert!(status.success(), "the helper passes: {status}");
    assert_eq!(servers.len(), 3, "{servers:?}");
    assert_cleaned("exit", &servers);
}

#[test]
fn servers_stop_when_a_test_panics() {
    let (servers, status) = run_helper("panic", false);
    assert_eq!(status.code(), Some(101), "the helper fails: {status}");
    assert_eq!(servers.len(), 3, "{servers:?}");
    assert_cleaned("panic", &servers);
}

#[test]
fn servers_stop_when_the_test_binary_is_killed() {
    let (servers, status) = run_helper("kill", true);
    assert!(!status.success(), "the helper was killed: {status}");
    assert_eq!(servers.len(), 2, "{servers:?}");
    assert_cleaned("kill", &servers);
}

//! `jq`, `curl`/`wget` behind the URL allowlist, and host commands, against a real HTTP server
//! this test starts on loopback: network off by default, URLs refused before any request,
//! redirects re-checked, responses bounded in size and time, bodies redacted; host commands in
//! pipelines and substitutions, inspected by the policy, contained when they panic or never
//! return.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use supabash::{ErrorCode, Limits, StagedTree};
use supabash_agent::policy::{CommandPolicy, Denial, Invocation, Reason};
use supabash_agent::shell::{
    HostCommand, HostInvocation, HostOutput, Shell, ShellConfig, BINARY_NOTICE, PANIC_EXIT_CODE,
    TIMEOUT_EXIT_CODE,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const SECRET: &str = "sk_live_0123456789abcdefghij";

/// A loopback HTTP/1.1 server: `/api/data.json`, redirects into and out of `/api/`, a
/// response of 2 MiB, a binary one, a slow one, and `/private/` (counted: it must never be
/// reached).
struct Server {
    base: String,
    requests: Arc<AtomicUsize>,
    private_hits: Arc<AtomicUsize>,
}

async fn server() -> Server {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let requests = Arc::new(AtomicUsize::new(0));
    let private_hits = Arc::new(AtomicUsize::new(0));
    let (r, p) = (requests.clone(), private_hits.clone());
    tokio::spawn(async move {
        loop {
            let (mut sock, _) = listener.accept().await.unwrap();
            let (r, p) = (r.clone(), p.clone());
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                    match sock.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                r.fetch_add(1, Ordering::SeqCst);
                let head = String::from_utf8_lossy(&buf).into_owned();
                let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
                let (status, extra, body): (&str, String, Vec<u8>) = match path.as_str() {
                    "/api/data.json" => (
                        "200 OK",
                        String::new(),
                        format!(r#"{{"name":"docs","items":[1,2,3],"token":"{SECRET}"}}"#)
                            .into_bytes(),
                    ),
                    "/api/redirect-in" => (
                        "302 Found",
                        "Location: /api/data.json\r\n".into(),
                        Vec::new(),
                    ),
                    "/api/redirect-out" => {
                        ("302 Found", "Location: /private/x\r\n".into(), Vec::new())
                    }
                    "/api/big" => ("200 OK", String::new(), vec![b'a'; 2 * 1024 * 1024]),
                    "/api/binary" => ("200 OK", String::new(), vec![0, 159, 146, 150, 255, 0]),
                    "/api/slow" => {
                        tokio::time::sleep(Duration::from_secs(10)).await;
                        ("200 OK", String::new(), b"late".to_vec())
                    }
                    p_ if p_.starts_with("/private/") => {
                        p.fetch_add(1, Ordering::SeqCst);
                        ("200 OK", String::new(), b"private".to_vec())
                    }
                    _ => ("404 Not Found", String::new(), b"no".to_vec()),
                };
                let head = format!(
                    "HTTP/1.1 {status}\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n",
                    body.len()
                );
                let _ = sock.write_all(head.as_bytes()).await;
                let _ = sock.write_all(&body).await;
                let _ = sock.shutdown().await;
            });
        }
    });
    Server {
        base,
        requests,
        private_hits,
    }
}

fn tree() -> Arc<StagedTree> {
    Arc::new(StagedTree::empty(Limits::default()))
}

fn networked(s: &Server) -> ShellConfig {
    ShellConfig::default()
        .with_policy(
            CommandPolicy::default()
                .allow_url(format!("{}/api/", s.base))
                .allow_private_addresses(true),
        )
        .with_max_response_bytes(64 * 1024)
        .with_http_timeout(Duration::from_secs(1))
}

#[tokio::test]
async fn network_is_off_by_default_and_checked_before_any_request() {
    let s = server().await;
    let t = tree();
    let shell = Shell::new(t.clone());
    for cmd in [
        format!("curl -s {}/api/data.json", s.base),
        format!("wget -qO- {}/api/data.json", s.base),
        format!("echo $(curl -s {}/api/data.json)", s.base),
        format!("curl -s -o /fetched.json {}/api/data.json", s.base),
        format!("wget -qO /fetched.json {}/api/data.json", s.base),
    ] {
        let e = shell.run(&cmd).await.unwrap_err();
        assert_eq!(e.code(), ErrorCode::PolicyDenied, "{cmd}");
        assert!(e.message().contains("network-disabled"), "{e}");
    }
    // Even a URL known only at run time reaches nothing: the build has no allowlist.
    let out = shell
        .run(&format!(
            "U={}/api/data.json; curl -s \"$(echo $U)\"",
            s.base
        ))
        .await;
    assert!(out.is_err() || out.unwrap().exit_code != 0);
    assert_eq!(s.requests.load(Ordering::SeqCst), 0);

    let shell = Shell::with_config(t.clone(), networked(&s));
    for cmd in [
        format!("curl -s -o /private.txt {}/private/x", s.base),
        format!("curl -s {}/private/x", s.base),
        format!("wget -qO- {}/private/x", s.base),
        format!("ls | curl -s {}/api/../private/x", s.base),
        "curl -s http://example.com/api/".to_owned(),
        format!("curl -s {}/api/data.json https://example.com/", s.base),
    ] {
        let e = shell.run(&cmd).await.unwrap_err();
        assert_eq!(e.code(), ErrorCode::PolicyDenied, "{cmd}");
        assert!(e.message().contains("url-not-allowed"), "{cmd}: {e}");
    }
    // Other network commands stay off with an allowlist.
    let e = shell.run("nc 127.0.0.1 80").await.unwrap_err();
    assert!(e.message().contains("network-disabled"), "{e}");
    assert_eq!(s.requests.load(Ordering::SeqCst), 0, "no request was made");
    assert!(
        t.changes().unwrap().is_empty(),
        "a refused command staged something"
    );
}

#[tokio::test]
async fn allowed_urls_work_with_jq_and_every_hop_is_checked() {
    let s = server().await;
    let t = tree();
    let shell = Shell::with_config(t.clone(), networked(&s));
    let out = shell
        .run(&format!(
            "curl -s {}/api/data.json | jq -r '.name, (.items | length)'",
            s.base
        ))
        .await
        .unwrap();
    assert_eq!(
        (out.exit_code, out.stdout.as_str()),
        (0, "docs\n3\n"),
        "{out:?}"
    );
    // Bodies are redacted by the shell's rules, in output and in files the agent reads back.
    let out = shell
        .run(&format!("curl -s {}/api/data.json", s.base))
        .await
        .unwrap();
    assert!(!out.stdout.contains(SECRET), "{out:?}");
    assert!(out.stdout.contains("[REDACTED]"), "{out:?}");
    let out = shell
        .run(&format!(
            "wget -qO /data.json {}/api/data.json && jq .items[1] /data.json",
            s.base
        ))
        .await
        .unwrap();
    assert_eq!(out.stdout.trim(), "2", "{out:?}");
    // A redirect inside the allowlist is followed; one out of it is refused at that hop.
    let out = shell
        .run(&format!(
            "curl -s -L {}/api/redirect-in | jq -r .name",
            s.base
        ))
        .await
        .unwrap();
    assert_eq!(out.stdout, "docs\n", "{out:?}");
    let before = t.changes().unwrap().len();
    let out = shell
        .run(&format!(
            "curl -s -L -o /out.txt {}/api/redirect-out",
            s.base
        ))
        .await
        .unwrap();
    assert_ne!(out.exit_code, 0, "{out:?}");
    // A URL known only at run time is checked by the client.
    let out = shell
        .run(&format!("curl -s \"$(echo {}/private/y)\"", s.base))
        .await
        .unwrap();
    assert_ne!(out.exit_code, 0, "{out:?}");
    assert_eq!(s.private_hits.load(Ordering::SeqCst), 0, "never reached");
    assert_eq!(
        t.changes().unwrap().len(),
        before,
        "the staged tree is unchanged"
    );
    // Over-long and slow responses fail the command.
    let out = shell
        .run(&format!("curl -s -o /big {}/api/big", s.base))
        .await
        .unwrap();
    assert_ne!(out.exit_code, 0, "{out:?}");
    assert!(!t.exists("/big").await);
    let started = std::time::Instant::now();
    let out = shell
        .run(&format!("curl -s {}/api/slow", s.base))
        .await
        .unwrap();
    assert_ne!(out.exit_code, 0, "{out:?}");
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "bounded in time"
    );
    // A binary response is not printed as text.
    let out = shell
        .run(&format!("curl -s {}/api/binary", s.base))
        .await
        .unwrap();
    assert!(out.stdout.starts_with(BINARY_NOTICE), "{out:?}");
    assert!(out.stdout.contains("6 bytes"), "{out:?}");
    assert_eq!(
        t.changes().unwrap().len(),
        before,
        "failed, refused and binary responses staged nothing"
    );
    assert!(!t.exists("/out.txt").await && !t.exists("/big").await);
}

#[tokio::test]
async fn jq_works_on_the_staged_tree() {
    let t = tree();
    let shell = Shell::new(t.clone());
    let out = shell
        .run(r#"echo '{"a":[1,2,3],"b":{"c":"x"}}' > /x.json && jq -c '{n: (.a|add), c: .b.c}' /x.json > /y.json && cat /y.json"#)
        .await
        .unwrap();
    assert_eq!(out.stdout, "{\"n\":6,\"c\":\"x\"}\n", "{out:?}");
    assert_eq!(t.read("/y.json").await.unwrap(), b"{\"n\":6,\"c\":\"x\"}\n");
    let out = shell.run("echo 'not json' | jq .").await.unwrap();
    assert_ne!(out.exit_code, 0);
}

/// `upper [FILE]`: upper-cases stdin (or FILE from the tree) and writes `/upper.log`;
/// refuses `--forbidden` at the policy.
struct Upper;

#[async_trait::async_trait]
impl HostCommand for Upper {
    fn name(&self) -> &str {
        "upper"
    }
    async fn run(&self, call: HostInvocation) -> HostOutput {
        let input = match call.args.first() {
            Some(path) => match call.fs.read(path).await {
                Ok(bytes) => bytes,
                Err(e) => return HostOutput::err(format!("upper: {e}\n"), 1),
            },
            None => call.stdin,
        };
        let text = String::from_utf8_lossy(&input).to_uppercase();
        if let Err(e) = call.fs.write("/upper.log", text.clone().into_bytes()).await {
            return HostOutput::err(format!("upper: {e}\n"), 1);
        }
        HostOutput::ok(format!("{text}(cwd {})\n", call.cwd))
    }
    fn inspect(&self, invocation: &Invocation) -> Result<(), Denial> {
        if invocation.args.iter().flatten().any(|a| a == "--forbidden") {
            return Err(Denial::new(
                Reason::Host("upper-forbidden".into()),
                "upper refuses --forbidden",
            ));
        }
        Ok(())
    }
}

struct Panics;

#[async_trait::async_trait]
impl HostCommand for Panics {
    fn name(&self) -> &str {
        "boom"
    }
    async fn run(&self, _call: HostInvocation) -> HostOutput {
        panic!("the host command's own bug")
    }
}

struct Hangs;

#[async_trait::async_trait]
impl HostCommand for Hangs {
    fn name(&self) -> &str {
        "hang"
    }
    async fn run(&self, _call: HostInvocation) -> HostOutput {
        std::future::pending().await
    }
    fn deadline(&self) -> Option<Duration> {
        Some(Duration::from_millis(300))
    }
}

/// Named like a host escape: registering it is what lets it through.
struct Docker;

#[async_trait::async_trait]
impl HostCommand for Docker {
    fn name(&self) -> &str {
        "docker"
    }
    async fn run(&self, call: HostInvocation) -> HostOutput {
        HostOutput::ok(format!("fake docker {}\n", call.args.join(" ")))
    }
}

#[tokio::test]
async fn host_commands_run_in_pipelines_are_inspected_and_contained() {
    let t = tree();
    let config = ShellConfig::default()
        .with_command(Arc::new(Upper))
        .with_command(Arc::new(Panics))
        .with_command(Arc::new(Hangs))
        .with_command(Arc::new(Docker));
    let shell = Shell::with_config(t.clone(), config);
    let out = shell
        .run("mkdir -p /d && cd /d && echo hello | upper | tr -d '\\n' > /out.txt; cat /out.txt")
        .await
        .unwrap();
    assert_eq!(out.stdout, "HELLO(cwd /d)", "{out:?}");
    assert_eq!(t.read("/upper.log").await.unwrap(), b"HELLO\n");
    t.write("/in.md", b"from the tree".to_vec()).await.unwrap();
    let out = shell.run("echo \"$(upper /in.md)\"").await.unwrap();
    assert!(out.stdout.starts_with("FROM THE TREE"), "{out:?}");
    for cmd in [
        "upper --forbidden",
        "echo x | upper --forbidden",
        "echo $(upper --forbidden)",
        "if true; then upper --forbidden; fi",
        "eval 'upper --forbidden'",
    ] {
        let e = shell.run(cmd).await.unwrap_err();
        assert_eq!(e.code(), ErrorCode::PolicyDenied, "{cmd}");
        assert!(e.message().contains("upper-forbidden"), "{cmd}: {e}");
    }
    let out = shell.run("docker ps").await.unwrap();
    assert_eq!(out.stdout, "fake docker ps\n");
    // Unregistered, the name is still a host escape.
    let e = Shell::new(tree()).run("docker ps").await.unwrap_err();
    assert!(e.message().contains("host-escape"), "{e}");

    let staged = t.changes().unwrap().len();
    let out = shell.run("boom; echo after $?").await.unwrap();
    assert!(
        out.stderr.contains("boom: the host command panicked"),
        "{out:?}"
    );
    assert_eq!(out.stdout, format!("after {PANIC_EXIT_CODE}\n"));
    let started = std::time::Instant::now();
    let out = shell.run("hang; echo after $?").await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(out.stderr.contains("stopped at its deadline"), "{out:?}");
    assert_eq!(out.stdout, format!("after {TIMEOUT_EXIT_CODE}\n"));
    assert_eq!(
        t.changes().unwrap().len(),
        staged,
        "a panicking or stopped host command staged nothing"
    );
    // The shell's own deadline bounds a host command without one of its own.
    let shell = Shell::with_config(
        tree(),
        ShellConfig::default()
            .with_timeout(Duration::from_millis(400))
            .with_command(Arc::new(Hangs2)),
    );
    let out = shell.run("hang2").await.unwrap();
    assert_eq!(out.exit_code, TIMEOUT_EXIT_CODE, "{out:?}");
}

struct Hangs2;

#[async_trait::async_trait]
impl HostCommand for Hangs2 {
    fn name(&self) -> &str {
        "hang2"
    }
    async fn run(&self, _call: HostInvocation) -> HostOutput {
        std::future::pending().await
    }
}

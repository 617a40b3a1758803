//! The shell over the staged tree: a scripted agent session that ends in one atomic commit
//! (real PostgreSQL with the extension), `sed -i` temporaries and `/tmp` kept out of commits,
//! the deadline, the output cap, redaction and policy denials.

use supabash_tests::client as support;

use std::sync::Arc;
use std::time::Duration;
use supabash::tree::StagedChange;
use supabash::workspace::CommitOptions;
use supabash::{ErrorCode, Limits, StagedTree};
use supabash_agent::policy::CommandPolicy;
use supabash_agent::redact::Redactor;
use supabash_agent::shell::{Shell, ShellConfig, ShellOutput, TIMEOUT_EXIT_CODE, TRUNCATED_MARKER};
use supabash_agent::AgentFs;
use support::{assert_receipt, new_user, new_workspace, Via};

async fn ok(shell: &Shell, command: &str) -> ShellOutput {
    let out = shell.run(command).await.unwrap();
    assert_eq!(out.exit_code, 0, "{command}: {out:?}");
    out
}

fn empty_tree() -> Arc<StagedTree> {
    Arc::new(StagedTree::empty(Limits::default()))
}

fn paths(changes: &[StagedChange]) -> Vec<String> {
    let mut p: Vec<String> = changes.iter().map(|c| format!("{c:?}")).collect();
    p.sort();
    p
}

#[tokio::test]
async fn shell_features_work_on_the_staged_tree() {
    let tree = empty_tree();
    let shell = Shell::new(tree.clone());
    ok(
        &shell,
        "mkdir -p /docs/a/b && printf 'one\\ntwo\\nthree\\n' > /docs/a/b/n.txt",
    )
    .await;
    let out = ok(&shell, "cat /docs/a/b/n.txt | grep -n t | wc -l").await;
    assert_eq!(out.stdout.trim(), "2");
    ok(&shell, "cd /docs && sed -i 's/two/TWO/' a/b/n.txt").await;
    assert_eq!(
        tree.read("/docs/a/b/n.txt").await.unwrap(),
        b"one\nTWO\nthree\n"
    );
    let out = ok(&shell, "grep -rn TWO /docs").await;
    assert_eq!(out.stdout, "/docs/a/b/n.txt:2:TWO\n");
    ok(
        &shell,
        "cat > /docs/h.md <<'EOF'\n# Heading $NOT_EXPANDED\nbody\nEOF",
    )
    .await;
    assert_eq!(
        tree.read("/docs/h.md").await.unwrap(),
        b"# Heading $NOT_EXPANDED\nbody\n"
    );
    ok(
        &shell,
        "for i in 1 2 3; do echo \"item $i\" >> /docs/list.txt; done",
    )
    .await;
    assert_eq!(
        tree.read("/docs/list.txt").await.unwrap(),
        b"item 1\nitem 2\nitem 3\n"
    );
    let out = ok(&shell, "find /docs -name '*.txt' | sort").await;
    assert_eq!(out.stdout, "/docs/a/b/n.txt\n/docs/list.txt\n");
    ok(&shell, "mv /docs/list.txt /docs/a/ && rm -r /docs/a/b").await;
    assert!(tree.exists("/docs/a/list.txt").await);
    assert!(!tree.exists("/docs/a/b").await);
    // Every run starts afresh at / with HOME=/; only the filesystem carries over.
    ok(&shell, "X=1; cd /docs").await;
    let out = ok(&shell, "pwd; echo \"x=$X\"; cd ~ && pwd").await;
    assert_eq!(out.stdout, "/\nx=\n/\n");
    // Errors read like bash's.
    let out = shell.run("cat /nope").await.unwrap();
    assert_eq!(out.exit_code, 1);
    assert!(out.stderr.contains("No such file or directory"), "{out:?}");
}

#[tokio::test]
async fn sed_temporaries_and_scratch_never_reach_the_change_set() {
    let tree = empty_tree();
    tree.write("/notes.md", "alpha\nbeta\n").await.unwrap();
    let shell = Shell::new(tree.clone());
    ok(&shell, "sed -i 's/beta/gamma/' /notes.md").await;
    ok(
        &shell,
        "echo scratch > /tmp/work.txt && cp /notes.md /tmp/copy.md",
    )
    .await;
    // The scratch file is there for later runs of the same tree...
    assert_eq!(ok(&shell, "cat /tmp/work.txt").await.stdout, "scratch\n");
    // ...no sed temporary is left anywhere...
    let out = ok(
        &shell,
        "find / -name '*.tmp' -o -name '.bashkit*' | grep -v ^/proc || true",
    )
    .await;
    assert_eq!(out.stdout, "");
    // ...and the change set holds the one real file, nothing under /tmp.
    let changes = tree.changes().unwrap();
    assert_eq!(changes.len(), 1, "{:?}", paths(&changes));
    assert!(format!("{:?}", changes[0]).contains("/notes.md"));
}

#[tokio::test]
async fn the_deadline_stops_a_runaway_command() {
    let config = ShellConfig::default().with_timeout(Duration::from_millis(300));
    let shell = Shell::with_config(empty_tree(), config);
    let out = shell
        .run("echo started > /f; sleep 5; echo never > /g")
        .await
        .unwrap();
    assert!(out.timed_out, "{out:?}");
    assert_eq!(out.exit_code, TIMEOUT_EXIT_CODE);
    assert!(out.stderr.contains("deadline"), "{out:?}");
    // The shell is usable again, and what ran before the deadline stays staged.
    let out = ok(&shell, "cat /f; ls /g 2>/dev/null || echo missing").await;
    assert_eq!(out.stdout, "started\nmissing\n");
}

#[tokio::test]
async fn output_is_capped_with_the_stable_marker() {
    let config = ShellConfig::default().with_max_output_bytes(1000);
    let shell = Shell::with_config(empty_tree(), config);
    let out = ok(&shell, "for i in $(seq 1 500); do echo line-$i; done").await;
    assert!(out.truncated);
    assert!(out.stdout.ends_with(TRUNCATED_MARKER), "{}", out.stdout);
    assert_eq!(out.stdout.len(), 1000 + TRUNCATED_MARKER.len());
    assert!(out.stdout.starts_with("line-1\nline-2\n"));
    let small = ok(&shell, "echo short").await;
    assert!(!small.truncated);
    assert_eq!(small.stdout, "short\n");
    // The default cap is 256 KiB.
    assert_eq!(ShellConfig::default().max_output_bytes, 256 * 1024);
}

#[tokio::test]
async fn secrets_are_redacted_from_stdout_stderr_and_errors() {
    let tree = empty_tree();
    let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJyb2xlIjoic2VydmljZV9yb2xlIn0.sig-nature_value";
    tree.write(
        "/env.txt",
        format!(
            "SERVICE_KEY={jwt}\nAuthorization: Bearer abcdefghijklmnop123\nurl=https://s/o?token=t0k3n-value&x=1\nkey=sb_secret_0123456789abcdef\nhost-token opaque-host-secret-9\n"
        ),
    )
    .await
    .unwrap();
    let config = ShellConfig::default()
        .with_redactor(Redactor::default().with_literal("opaque-host-secret-9"));
    let shell = Shell::with_config(tree, config);
    let out = ok(&shell, "cat /env.txt; cat /env.txt >&2").await;
    for text in [&out.stdout, &out.stderr] {
        for secret in [
            jwt,
            "abcdefghijklmnop123",
            "t0k3n-value",
            "sb_secret_0123456789abcdef",
            "opaque-host-secret-9",
        ] {
            assert!(!text.contains(secret), "{secret} leaked: {text}");
        }
        assert!(text.contains("[REDACTED]"));
        assert!(text.contains("&x=1"), "{text}");
    }
    // A denial quoting the command is redacted too.
    let e = shell
        .run("curl 'https://x/y?token=super-secret-token-value'")
        .await
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::PolicyDenied);
    assert!(
        !e.message().contains("super-secret-token-value"),
        "{}",
        e.message()
    );
}

#[tokio::test]
async fn denied_commands_do_not_run() {
    let tree = empty_tree();
    tree.write("/keep.md", "k").await.unwrap();
    let shell = Shell::new(tree.clone());
    for (command, reason) in [
        ("rm -rf /", "recursive-root"),
        ("cd / && rm -rf .", "recursive-root"),
        ("echo $(curl https://example.com) > /x", "network-disabled"),
        (":(){ :|:& };:", "fork-bomb"),
    ] {
        let e = shell.run(command).await.unwrap_err();
        assert_eq!(e.code(), ErrorCode::PolicyDenied, "{command}");
        assert!(e.message().contains(reason), "{command}: {}", e.message());
    }
    assert_eq!(tree.read("/keep.md").await.unwrap(), b"k");
    assert!(!tree.exists("/x").await);
    // A host policy: network commands the host registered itself may be allowed by name.
    let config = ShellConfig::default().with_policy(CommandPolicy::default().deny_command("ls"));
    let strict = Shell::with_config(tree, config);
    let e = strict.run("ls /").await.unwrap_err();
    assert!(e.message().contains("denied-command"), "{}", e.message());
}

#[tokio::test]
async fn scripted_session_ends_in_one_atomic_commit() {
    let user = new_user();
    let ws = new_workspace(Via::Postgres, &user).await;
    ws.fs().mkdir("/docs", false).await.unwrap();
    ws.fs().write("/docs/old.md", "old\n").await.unwrap();
    ws.fs().write("/docs/rename-me.md", "r\n").await.unwrap();
    ws.fs()
        .write("/docs/target.md", "to be replaced\n")
        .await
        .unwrap();
    ws.fs().write("/docs/gone.md", "bye\n").await.unwrap();
    ws.fs()
        .write("/docs/edit.md", "status: draft\nowner: ann\n")
        .await
        .unwrap();
    let first = ws.commit(CommitOptions::new("host")).await.unwrap();

    let fs: Arc<dyn AgentFs> = ws.fs().clone();
    let shell = Shell::new(fs);
    let session = [
        "mkdir -p /docs/new && cat > /docs/new/plan.md <<'EOF'\n# Plan\n- write\n- review\nEOF",
        "sed -i 's/draft/final/' /docs/edit.md",
        "mv /docs/rename-me.md /docs/new/renamed.md",
        "rm /docs/gone.md",
        "for n in 1 2; do echo \"note $n\" > /docs/new/note-$n.md; done",
        "echo 'scratch' > /tmp/scratch.txt && mv /docs/old.md /docs/target.md",
        "grep -rl final /docs | sort > /tmp/found.txt && cat /tmp/found.txt",
    ];
    for command in session {
        ok(&shell, command).await;
    }
    assert_eq!(
        ws.fs().read("/docs/edit.md").await.unwrap(),
        b"status: final\nowner: ann\n"
    );

    let r = ws.commit(CommitOptions::new("host")).await.unwrap();
    // The overwrite-move names the file it replaced; nothing under /tmp is committed.
    assert_receipt(
        &r.receipt,
        &first.receipt.revision,
        &[
            ("upsert", "/docs/new/plan.md", None),
            ("upsert", "/docs/edit.md", None),
            ("upsert", "/docs/new/note-1.md", None),
            ("upsert", "/docs/new/note-2.md", None),
            ("move", "/docs/new/renamed.md", Some("/docs/rename-me.md")),
            ("delete", "/docs/gone.md", None),
            ("move", "/docs/target.md", Some("/docs/old.md")),
        ],
        "shell session",
    );
    let over = r
        .receipt
        .changes
        .iter()
        .find(|l| l.path == "/docs/target.md")
        .unwrap();
    assert_eq!(over.replaced_size, Some("to be replaced\n".len() as i64));
    let snap = ws.committed_snapshot().await.unwrap().files;
    let names: Vec<&str> = snap.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "/docs/edit.md",
            "/docs/new/note-1.md",
            "/docs/new/note-2.md",
            "/docs/new/plan.md",
            "/docs/new/renamed.md",
            "/docs/target.md"
        ]
    );
    assert_eq!(snap["/docs/target.md"], b"old\n");
    assert_eq!(snap["/docs/new/plan.md"], b"# Plan\n- write\n- review\n");
    assert!(ws.changes().unwrap().is_empty());
}

#[tokio::test]
async fn read_only_and_unmounted_paths_refuse_every_shell_mutation() {
    use supabash_agent::{Mount, MountedFs, SharedSnapshot, SnapshotLimits};
    let private = empty_tree();
    let snapshot = SharedSnapshot::from_rows(
        "shared-docs",
        None,
        vec![("/guide.md".into(), b"read me\n".to_vec())],
        SnapshotLimits::default(),
    )
    .await
    .unwrap();
    let mounted = MountedFs::new(vec![
        Mount::writable("/work", "private", None, private.clone(), None).unwrap(),
        Mount::snapshot("/docs", Arc::new(snapshot), None).unwrap(),
    ])
    .unwrap();
    let shell = Shell::new(Arc::new(mounted));
    // Reading the shared snapshot and copying from it into the writable mount work.
    let out = ok(
        &shell,
        "cat /docs/guide.md && cp /docs/guide.md /work/copy.md",
    )
    .await;
    assert_eq!(out.stdout, "read me\n");
    assert_eq!(private.read("/copy.md").await.unwrap(), b"read me\n");
    // The shell keeps its own scratch /tmp over a mounted filesystem.
    ok(&shell, "echo s > /tmp/s && cat /tmp/s").await;
    assert_eq!(ok(&shell, "cat /tmp/s").await.stdout, "s\n");
    for command in [
        "echo x > /docs/guide.md",
        "echo x >> /docs/guide.md",
        "echo x > /docs/new.md",
        "sed -i 's/read/READ/' /docs/guide.md",
        "rm /docs/guide.md",
        "rm -r /docs",
        "mv /docs/guide.md /docs/moved.md",
        "mv /docs/guide.md /work/stolen.md",
        "mv /work/copy.md /docs/copy.md",
        "mkdir /docs/sub",
        "touch /docs/guide.md",
        "chmod 777 /docs/guide.md",
        "ln -s /work/copy.md /docs/link",
        "echo x > /elsewhere.md",
        "mkdir /outside",
    ] {
        let out = shell.run(command).await.unwrap();
        assert_ne!(out.exit_code, 0, "{command} should fail: {out:?}");
        assert!(
            [
                "Read-only",
                "Permission denied",
                "cross-device",
                "POLICY_DENIED",
                "ermission"
            ]
            .iter()
            .any(|m| out.stderr.contains(m)),
            "{command}: {}",
            out.stderr
        );
    }
    // bashkit's `rm -f` hides every failure (GNU rm reports all but a missing file); the
    // refusal still holds.
    shell.run("rm -rf /docs /docs/guide.md").await.unwrap();
    let out = ok(&shell, "cat /docs/guide.md; ls /docs; ls /work").await;
    assert_eq!(out.stdout, "read me\nguide.md\ncopy.md\n");
    assert!(!private.exists("/stolen.md").await);
}

/// `/tmp` counts against the tree's limits: a write past the file limit or past the whole
/// filesystem's cap fails before anything is staged (the file keeps its old content), and
/// removing files makes room again.
#[tokio::test]
async fn scratch_writes_are_capped() {
    let limits = Limits::default()
        .with_max_file_bytes(1000)
        .with_max_file_system_bytes(1500);
    let tree = Arc::new(StagedTree::empty(limits));
    let shell = Shell::new(tree.clone());
    let refused = |out: Result<ShellOutput, supabash::SupabashError>| match out {
        Ok(out) => {
            assert_ne!(out.exit_code, 0, "{out:?}");
            assert!(out.stderr.contains("QUOTA_EXCEEDED"), "{out:?}");
        }
        Err(e) => assert_eq!(e.code(), ErrorCode::QuotaExceeded, "{e}"),
    };
    // One file past the file limit, in /tmp.
    refused(shell.run("printf '%1200s' x > /tmp/big").await);
    assert!(!tree.exists("/tmp/big").await);
    // Several files past the whole cap.
    ok(
        &shell,
        "printf '%800s' a > /tmp/a && printf '%600s' b > /notes.txt",
    )
    .await;
    refused(shell.run("printf '%200s' c > /tmp/c").await);
    assert!(!tree.exists("/tmp/c").await);
    refused(shell.run("printf '%300s' more >> /tmp/a").await);
    assert_eq!(tree.read("/tmp/a").await.unwrap().len(), 800);
    // Room again after a delete.
    ok(&shell, "rm /tmp/a && printf '%800s' c > /tmp/c").await;
}

//! The shell's `grep -r` and `rg` on a lazily opened workspace search the base on the server
//! (`supabash_grep`) and read only the base files that can match, plus the staged ones: with
//! edits, a delete, a move and a new file staged, every command of the table answers byte for
//! byte what it answers over an eagerly opened tree with the same changes (every body read
//! locally), and far fewer bodies travel. Binary files are read only where the server says the
//! pattern matches them. Commands the server cannot answer faithfully (a regex it cannot
//! widen, `-v`, piped input) run the built-in over every file, with the same answer.

use serde_json::{Map, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use supabash::transport::{RpcError, Transport};
use supabash::{OpenMode, Workspace};
use supabash_agent::shell::{Shell, ShellOutput};
use supabash_agent::view::View;
use supabash_tests::client::{new_user, transport, workspace_with, Via};

/// A transport that counts the base bodies the client fetched.
struct Counting {
    inner: Arc<dyn Transport>,
    bodies: AtomicU64,
}

impl Counting {
    fn count(&self, rpc: &str, args: &Map<String, Value>) {
        if rpc.starts_with("supabash_load_document") {
            let listed: usize = args
                .values()
                .filter_map(Value::as_array)
                .map(Vec::len)
                .sum();
            self.bodies
                .fetch_add(listed.max(1) as u64, Ordering::Relaxed);
        }
    }
}

#[async_trait::async_trait]
impl Transport for Counting {
    async fn call(&self, rpc: &str, args: Map<String, Value>) -> Result<Value, RpcError> {
        self.count(rpc, &args);
        self.inner.call(rpc, args).await
    }
    async fn call_text(&self, rpc: &str, args: Map<String, Value>) -> Result<String, RpcError> {
        self.count(rpc, &args);
        self.inner.call_text(rpc, args).await
    }
}

async fn open(transport: Arc<dyn Transport>, id: &str, mode: OpenMode) -> Workspace {
    Workspace::builder(transport)
        .open_mode(mode)
        .open(id)
        .await
        .unwrap()
}

/// The same uncommitted changes on either tree.
async fn stage(ws: &Workspace) {
    let fs = ws.fs();
    fs.write("/src/a/one.rs", "fn one() {}\n").await.unwrap();
    fs.rm("/src/b/two.rs", false, false).await.unwrap();
    fs.mkdir("/moved", true).await.unwrap();
    fs.mv("/src/c/three.rs", "/moved/three.rs").await.unwrap();
    fs.mkdir("/src/d", true).await.unwrap();
    fs.write("/src/d/new.rs", "// TODO new and staged\nneedle a.b\n")
        .await
        .unwrap();
    fs.write("/src/e/five.rs", "fn five() {}\n// TODO edited in\n")
        .await
        .unwrap();
}

/// The seeded files: most hold no match, so a server search spares their bodies.
fn seed() -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = Vec::new();
    for d in ["a", "b", "c", "e", "f/g"] {
        for i in 0..8 {
            let body = match i {
                0 => format!("fn f{i}() {{}}\n// TODO in {d} {i}\nthe end\n"),
                1 => format!("line one\r\nneedle in {d}\r\nTODOS and todo\r\n"),
                _ => format!("fn plain_{i}() {{}}\nnothing to see in {d}\n"),
            };
            files.push((format!("/src/{d}/f{i}.rs"), body));
        }
    }
    files.push(("/src/a/one.rs".into(), "// TODO one\nfn one() {}\n".into()));
    files.push(("/src/b/two.rs".into(), "// TODO two\n".into()));
    files.push(("/src/c/three.rs".into(), "// TODO three\n".into()));
    files.push(("/src/e/five.rs".into(), "fn five() {}\n".into()));
    files.push(("/src/notes.txt".into(), "a.b literally\naxb not\n".into()));
    files.push(("/.gitignore".into(), "*.txt\n".into()));
    files.push(("/docs/readme.md".into(), "# Readme\nTODO: write\n".into()));
    files
}

/// Commands the server narrows.
const SERVED: &[&str] = &[
    "grep -rn TODO /",
    "grep -r TODO src",
    "grep -ri todo .",
    "grep -rl TODO /src",
    "grep -rc TODO src",
    "grep -rL TODO src",
    "grep -rF a.b /",
    "grep -rw TODO /",
    "grep -rx 'the end' /",
    "grep -rn -e TODO -e needle src",
    "grep -r --include='*.rs' TODO /",
    "grep -rn -C1 TODO src",
    "grep -rn -A1 -B2 needle /",
    "grep -rh TODO src docs",
    "grep -rHno TODO src/a",
    "grep -rq TODO src; echo $?",
    "grep -rq 'not anywhere' src; echo $?",
    "grep -rn 'nothing matches this' /",
    "grep -rIn TODO /",
    "grep -rm1 TODO /src",
    "grep -rn TODO src/a/f0.rs src/d",
    "cd src && grep -rn TODO .",
    "cd /src/e && grep -r TODO ../a",
    "grep -rn TODO /missing src/a",
    "rg TODO",
    "rg -n TODO src",
    "rg -l -F a.b",
    "rg -c needle src",
    "rg -i todo /",
    "rg --no-heading -n TODO /",
    "grep -rn TODO / | head -3",
    "grep -rn 'TO.O' /",
    "grep -rEn 'TODO|needle' /",
    "grep -rn 'fn .*f0' src",
    "grep -rc 'one.' /",
    "grep -rn 'todo[^x]' /",
    "grep -rEo 'nee(d)+le in [a-c]' /",
    "rg 'f[0-9]' src",
    // Anchors: on lines of files with `\r\n` ends too (`$` is after the `\r` for the built-in).
    "grep -rn '^// TODO' src",
    "grep -rEn '^(needle|TODOS)' /",
    "rg -n 'end$' src",
    "grep -rn 'TODO$' /",
    "grep -rn 'todo$' /",
    "grep -rn '^fn f0' /",
    "rg '^fn one' src",
];

/// Commands the built-in answers over every file.
const LOCAL: &[&str] = &[
    "grep -rv TODO src",
    "cat /src/a/f0.rs | grep TODO",
    "printf 'a TODO\\n' | grep -r TODO - src/a",
    "grep TODO src/a/f0.rs",
    "grep -rEn 'a^b' /",
];

/// A shell over `ws` that reads every body itself: a view of the whole tree never searches on
/// the server.
fn local_only(ws: &Workspace) -> Shell {
    Shell::new(Arc::new(View::new(ws.fs().clone(), "/", &[]).unwrap()))
}

async fn run(shell: &Shell, command: &str) -> ShellOutput {
    shell.run(command).await.unwrap()
}

#[tokio::test]
async fn shell_grep_on_a_lazy_tree_answers_as_on_an_eager_one_and_reads_few_bodies() {
    let user = new_user();
    let files = seed();
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    let seeded = workspace_with(Via::Postgres, &user, &refs).await;
    let counting = Arc::new(Counting {
        inner: transport(Via::Postgres, &user).await,
        bodies: AtomicU64::new(0),
    });
    let lazy = open(counting.clone(), seeded.id(), OpenMode::Lazy).await;
    let eager = open(
        transport(Via::Postgres, &user).await,
        seeded.id(),
        OpenMode::Eager,
    )
    .await;
    stage(&lazy).await;
    stage(&eager).await;
    let on_lazy = Shell::new(lazy.fs().clone());
    let on_eager = local_only(&eager);
    for command in SERVED {
        let served = run(&on_lazy, command).await;
        let local = run(&on_eager, command).await;
        assert_eq!(served, local, "{command}");
    }
    // Matches were found, and the server did the reading.
    let all = run(&on_eager, "grep -rn TODO /").await;
    assert!(all.stdout.contains("/src/d/new.rs:1:") && all.stdout.contains("/moved/three.rs"));
    assert!(!all.stdout.contains("/src/b/two.rs"));
    let searches = on_lazy.search_counters().server_searches();
    assert!(searches >= SERVED.len() as u64 - 2, "{searches}");
    assert!(on_lazy.search_counters().reads_spared() > 100);
    let fetched = counting.bodies.load(Ordering::Relaxed);
    // The files holding a match (and the one hidden file, never spared), not all 47.
    assert!(
        fetched * 2 < files.len() as u64,
        "{fetched} of {} bodies fetched",
        files.len()
    );
    // The rest reads every body, and still answers the same.
    let before = on_lazy.search_counters().server_searches();
    for command in LOCAL {
        let served = run(&on_lazy, command).await;
        let local = run(&on_eager, command).await;
        assert_eq!(served, local, "{command}");
    }
    assert_eq!(on_lazy.search_counters().server_searches(), before);
    // Once every body is here, nothing is left to ask the server.
    let again = run(&on_lazy, "grep -rn TODO /").await;
    assert_eq!(again, all);
    assert_eq!(on_lazy.search_counters().server_searches(), before);
    assert_eq!(on_eager.search_counters().server_searches(), 0);
}

#[tokio::test]
async fn binary_base_files_are_read_only_where_the_server_says_they_match() {
    let user = new_user();
    let seeded = workspace_with(
        Via::Postgres,
        &user,
        &[
            ("/bin.dat", "TODO\0binary"),
            ("/other.bin", "\0nothing here\nat all"),
            ("/a.rs", "// TODO a\n"),
            ("/b.rs", "fn b() {}\n"),
        ],
    )
    .await;
    let eager = open(
        transport(Via::Postgres, &user).await,
        seeded.id(),
        OpenMode::Eager,
    )
    .await;
    let on_eager = local_only(&eager);
    for (command, reported, spared) in [
        // The built-in reports the matching binary file; the other one and b.rs are spared.
        ("grep -r TODO /", "bin.dat: binary file matches", 2),
        ("grep -rn '^at all' /", "other.bin: binary file matches", 3),
        // `-I` skips binary files without a word: none is read.
        ("grep -rI TODO /", "", 3),
    ] {
        let lazy = open(
            transport(Via::Postgres, &user).await,
            seeded.id(),
            OpenMode::Lazy,
        )
        .await;
        let on_lazy = Shell::new(lazy.fs().clone());
        let served = run(&on_lazy, command).await;
        assert_eq!(served, run(&on_eager, command).await, "{command}");
        assert!(served.stderr.contains(reported), "{command}: {served:?}");
        assert_eq!(on_lazy.search_counters().server_searches(), 1, "{command}");
        assert_eq!(
            on_lazy.search_counters().reads_spared(),
            spared,
            "{command}"
        );
    }
}

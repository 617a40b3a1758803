//! Staged tree behaviour against a base held in memory, and the property that applying the
//! computed change set to the base yields the staged tree.

use super::*;
use changes::ChangeKind;
use proptest::prelude::*;
use serde_json::json;
use supabash_core::hash::sha256_hex;
use supabash_core::rpc::{parse_changes, Change, WireChange};

struct MemorySource(BTreeMap<String, Vec<u8>>);

#[async_trait::async_trait]
impl BodySource for MemorySource {
    async fn load(&self, _revision: &str, path: &str) -> Result<StoredFile> {
        let bytes = self.0.get(path).cloned().unwrap_or_default();
        Ok(StoredFile {
            path: path.to_owned(),
            content_hash: sha256_hex(&bytes),
            size: bytes.len() as u64,
            body_hash: sha256_hex(&bytes),
            body_size: bytes.len() as u64,
            metadata: json!({}),
            body: Some(bytes),
            kind: Default::default(),
            mode: 0o644,
            mtime_ns: None,
        })
    }
}

fn tree_over(base: &BTreeMap<String, Vec<u8>>, limits: Limits) -> StagedTree {
    tree_loading_from(base, Arc::new(MemorySource(base.clone())), limits)
}

/// Lists directories of a base held in memory, counting the listings.
struct MemoryDirectories {
    base: BTreeMap<String, Vec<u8>>,
    lists: std::sync::Mutex<Vec<String>>,
}

impl MemoryDirectories {
    fn new(base: &BTreeMap<String, Vec<u8>>) -> Self {
        MemoryDirectories {
            base: base.clone(),
            lists: Default::default(),
        }
    }

    fn listing(&self, dir: &str) -> Listing {
        let prefix = if dir == "/" {
            "/".to_owned()
        } else {
            format!("{dir}/")
        };
        let mut listing = Listing::default();
        for (p, b) in self.base.range(prefix.clone()..) {
            let Some(rest) = p.strip_prefix(&prefix) else {
                break;
            };
            match rest.split_once('/') {
                Some((name, _)) => {
                    if listing.directories.last().map(String::as_str) != Some(name) {
                        listing.directories.push(name.to_owned());
                    }
                }
                None => listing.files.push(entry(p, b)),
            }
        }
        listing
    }
}

#[async_trait::async_trait]
impl DirectorySource for MemoryDirectories {
    async fn list(&self, _revision: &str, dir: &str) -> Result<Listing> {
        self.lists.lock().unwrap().push(dir.to_owned());
        Ok(self.listing(dir))
    }
}

fn entry(p: &str, b: &[u8]) -> BaseEntry {
    BaseEntry {
        path: p.to_owned(),
        content_hash: sha256_hex(b),
        size: b.len() as u64,
        kind: Default::default(),
        mode: 0o644,
        mtime_ns: None,
        target: None,
    }
}

/// Whether trees of these tests open lazily: `SUPABASH_OPEN_MODE=lazy` runs them all so.
fn lazy_by_default() -> bool {
    std::env::var("SUPABASH_OPEN_MODE").as_deref() == Ok("lazy")
}

/// A tree at revision `r0` whose base is `base`, its bodies loaded from `source`.
fn tree_loading_from(
    base: &BTreeMap<String, Vec<u8>>,
    source: Arc<dyn BodySource>,
    limits: Limits,
) -> StagedTree {
    tree_in(lazy_by_default(), base, source, limits)
}

/// [`tree_loading_from`], opened from its root listing when `lazy`.
fn tree_in(
    lazy: bool,
    base: &BTreeMap<String, Vec<u8>>,
    source: Arc<dyn BodySource>,
    limits: Limits,
) -> StagedTree {
    if lazy {
        let dirs = Arc::new(MemoryDirectories::new(base));
        let bytes = base.values().map(|b| b.len() as u64).sum();
        let root = dirs.listing("/");
        let totals = (base.len() as u64, bytes);
        return StagedTree::lazy("r0".into(), root, totals, source, dirs, limits);
    }
    let entries = base.iter().map(|(p, b)| entry(p, b)).collect();
    StagedTree::from_base(Some("r0".into()), entries, Some(source), limits)
}

fn base_of(files: &[(&str, &str)]) -> BTreeMap<String, Vec<u8>> {
    files
        .iter()
        .map(|(p, t)| (p.to_string(), t.as_bytes().to_vec()))
        .collect()
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
}

/// Applies wire changes the way the server does (checked by the server's own checker).
fn apply(base: &mut BTreeMap<String, Vec<u8>>, changes: &[WireChange]) {
    for c in parse_changes(changes.to_vec()).expect("the server accepts them") {
        match c {
            // Only files are compared: directories and links are entries of their own.
            Change::Upsert { path, content } => {
                if content.attrs.kind == supabash_core::posix::Kind::File {
                    base.insert(path, content.body);
                } else {
                    base.remove(&path);
                }
            }
            Change::Delete { path } => {
                base.remove(&path);
            }
            Change::Move {
                from,
                path,
                content,
            } => {
                let old = base.remove(&from).expect("move source exists");
                base.insert(path, content.map_or(old, |c| c.body));
            }
            Change::Setattr { path, .. } => {
                assert!(base.contains_key(&path), "setattr of missing {path}");
            }
        }
    }
}

async fn committable_files(tree: &StagedTree) -> BTreeMap<String, Vec<u8>> {
    tree.load_all().await.unwrap();
    let paths: Vec<String> = tree
        .lock()
        .nodes
        .iter()
        .filter(|(p, n)| committable(p) && matches!(n, Node::File { .. }))
        .map(|(p, _)| p.clone())
        .collect();
    let mut out = BTreeMap::new();
    for p in paths {
        out.insert(p.clone(), tree.read(&p).await.unwrap());
    }
    out
}

#[test]
fn posix_errors() {
    rt().block_on(async {
        let t = tree_over(&base_of(&[("/d/a.md", "A")]), Limits::default());
        assert_eq!(
            t.read("/nope").await.unwrap_err().errno(),
            Some(Errno::ENOENT)
        );
        assert_eq!(t.read("/d").await.unwrap_err().errno(), Some(Errno::EISDIR));
        assert_eq!(
            t.write("/x/y", "1").await.unwrap_err().errno(),
            Some(Errno::ENOENT)
        );
        assert_eq!(
            t.write("/d/a.md/z", "1").await.unwrap_err().errno(),
            Some(Errno::ENOTDIR)
        );
        assert_eq!(
            t.mkdir("/d", false).await.unwrap_err().errno(),
            Some(Errno::EEXIST)
        );
        t.mkdir("/d", true).await.unwrap();
        assert_eq!(
            t.rm("/d", false, false).await.unwrap_err().errno(),
            Some(Errno::ENOTEMPTY)
        );
        assert_eq!(
            t.readdir("/d/a.md").await.unwrap_err().errno(),
            Some(Errno::ENOTDIR)
        );
        assert_eq!(
            t.readlink("/d/a.md").await.unwrap_err().errno(),
            Some(Errno::EINVAL)
        );
        t.rm("/missing", false, true).await.unwrap();
        let e = t.write("/.supabash/x", "1").await.unwrap_err();
        assert!(
            matches!(e, FsError::Supabash(ref s) if s.code == ErrorCode::InvalidPath),
            "{e}"
        );
    });
}

#[test]
fn links_dirs_and_metadata() {
    rt().block_on(async {
        let t = tree_over(&base_of(&[("/d/a.md", "A")]), Limits::default());
        t.symlink("d/a.md", "/link").await.unwrap();
        assert_eq!(t.read_text("/link").await.unwrap(), "A");
        assert_eq!(t.readlink("/link").await.unwrap(), "d/a.md");
        assert_eq!(t.realpath("/link").await.unwrap(), "/d/a.md");
        assert_eq!(t.lstat("/link").await.unwrap().kind, FileKind::Symlink);
        assert_eq!(t.stat("/link").await.unwrap().kind, FileKind::File);
        // A link is committed (its target is its content); an absolute or escaping one is not.
        let changes = t.changes().unwrap();
        assert_eq!(changes.len(), 1);
        assert_eq!(
            (
                changes[0].kind,
                changes[0].path.as_str(),
                changes[0].after_mode
            ),
            (changes::ChangeKind::Upsert, "/link", Some(0o777))
        );
        t.symlink("/etc/passwd", "/d/bad").await.unwrap();
        let e = t.changes().unwrap_err();
        assert_eq!(e.code, ErrorCode::UnsupportedContent);
        t.rm("/d/bad", false, false).await.unwrap();
        // One that climbs above the root is refused as it is made.
        let e = t.symlink("../../x", "/d/bad").await.unwrap_err();
        assert!(
            matches!(e, FsError::Supabash(ref s) if s.code == ErrorCode::InvalidPath),
            "{e}"
        );
        t.rm("/link", false, false).await.unwrap();
        t.mkdir("/p/q", true).await.unwrap();
        t.write("/p/q/r", "R").await.unwrap();
        t.append("/p/q/r", "S").await.unwrap();
        assert_eq!(t.read_text("/p/q/r").await.unwrap(), "RS");
        t.chmod("/p/q/r", 0o755).await.unwrap();
        assert_eq!(t.stat("/p/q/r").await.unwrap().mode, 0o755);
        let names: Vec<_> = t
            .readdir("/")
            .await
            .unwrap()
            .into_iter()
            .map(|e| (e.name, e.kind))
            .collect();
        assert_eq!(
            names,
            [
                ("d".to_string(), FileKind::Directory),
                ("p".to_string(), FileKind::Directory)
            ]
        );
        t.cp("/p", "/p2", true).await.unwrap();
        t.mv("/p2", "/d/p3").await.unwrap();
        assert_eq!(t.read_text("/d/p3/q/r").await.unwrap(), "RS");
        assert_eq!(
            t.mv("/d", "/d/x").await.unwrap_err().errno(),
            Some(Errno::EINVAL)
        );
    });
}

#[test]
fn temp_files_and_undone_renames_leave_no_changes() {
    rt().block_on(async {
        let t = tree_over(
            &base_of(&[("/a.md", "A"), ("/b.md", "B")]),
            Limits::default(),
        );
        t.mkdir("/tmp", true).await.unwrap();
        t.write("/tmp/scratch", "x").await.unwrap();
        t.mv("/a.md", "/a.tmp").await.unwrap();
        t.mv("/a.tmp", "/a.md").await.unwrap();
        t.write("/b.md", "changed").await.unwrap();
        t.write("/b.md", "B").await.unwrap();
        // The rewrite moved /b.md's time: that alone is left, a setattr (no body).
        let left: Vec<_> = t
            .changes()
            .unwrap()
            .into_iter()
            .map(|c| (c.kind, c.path))
            .collect();
        assert_eq!(left, [(changes::ChangeKind::Setattr, "/b.md".to_owned())]);
        t.mv("/a.md", "/c.md").await.unwrap();
        t.mv("/b.md", "/a.md").await.unwrap();
        let changes = t.changes().unwrap();
        let kinds: Vec<_> = changes
            .iter()
            .map(|c| (c.kind, c.path.as_str(), c.from.as_deref()))
            .collect();
        // /a.md still exists (with B's bytes), so only /b.md is a move source.
        assert_eq!(
            kinds,
            [
                (changes::ChangeKind::Move, "/a.md", Some("/b.md")),
                (changes::ChangeKind::Upsert, "/c.md", None),
                // The moved file keeps its rewritten time.
                (changes::ChangeKind::Setattr, "/a.md", None),
            ]
        );
        t.discard().unwrap();
        assert!(t.changes().unwrap().is_empty());
        assert!(!t.exists("/tmp/scratch").await);
    });
}

#[test]
fn limits_refuse_before_staging() {
    rt().block_on(async {
        let limits = Limits {
            max_files: 2,
            max_file_bytes: 4,
            max_staged_bytes: 6,
            max_path_chars: 8,
            ..Limits::default()
        };
        let t = tree_over(&BTreeMap::new(), limits);
        let quota =
            |e: FsError| matches!(e, FsError::Supabash(s) if s.code == ErrorCode::QuotaExceeded);
        assert!(quota(t.write("/a", "12345").await.unwrap_err()));
        assert!(quota(t.write("/abcdefghij", "1").await.unwrap_err()));
        t.write("/a", "1234").await.unwrap();
        assert!(quota(t.write("/b", "123").await.unwrap_err()));
        t.write("/b", "12").await.unwrap();
        assert!(quota(t.write("/c", "").await.unwrap_err()));
        // The file limit holds for scratch paths too (it used to let /tmp hold anything).
        t.mkdir("/tmp", false).await.unwrap();
        assert!(quota(t.write("/tmp/big", "123456789").await.unwrap_err()));
        assert!(!t.exists("/tmp/big").await);
        t.write("/tmp/big", "1234").await.unwrap();
        assert!(quota(t.mv("/tmp/big", "/c").await.unwrap_err()));
        assert!(t.exists("/tmp/big").await);
    });
}

/// `max_file_system_bytes` counts every byte the tree holds, scratch paths and link targets
/// included; a refused write, append, copy or link stages nothing, and a delete makes room.
#[test]
fn the_whole_filesystem_is_capped() {
    rt().block_on(async {
        let limits = Limits::default()
            .with_max_file_bytes(8)
            .with_max_file_system_bytes(10);
        let t = tree_over(&base_of(&[("/a", "12345")]), limits);
        let quota =
            |e: FsError| matches!(e, FsError::Supabash(s) if s.code == ErrorCode::QuotaExceeded);
        t.mkdir("/tmp", false).await.unwrap();
        // 5 committed + 6 scratch bytes: past 10.
        let e = t.write("/tmp/big", "123456").await.unwrap_err();
        assert!(e.to_string().contains("max_file_system_bytes"), "{e}");
        assert!(quota(e));
        assert!(!t.exists("/tmp/big").await);
        t.write("/tmp/x", "123").await.unwrap();
        // Several files together: 5 + 3 + 3 > 10, whichever path it is.
        assert!(quota(t.write("/b", "123").await.unwrap_err()));
        assert!(quota(t.append("/tmp/x", "123").await.unwrap_err()));
        assert!(quota(t.cp("/tmp/x", "/tmp/y", false).await.unwrap_err()));
        assert!(quota(t.symlink("/a/../very/long", "/l").await.unwrap_err()));
        assert!(!t.exists("/b").await && !t.exists("/tmp/y").await);
        assert!(t.lstat("/l").await.is_err());
        // A refused rewrite keeps the old content.
        assert!(quota(t.write("/a", "12345678").await.unwrap_err()));
        assert_eq!(t.read("/a").await.unwrap(), b"12345");
        assert_eq!(t.read("/tmp/x").await.unwrap(), b"123");
        // Deleting makes room again.
        t.rm("/tmp/x", false, false).await.unwrap();
        t.write("/tmp/big", "12345").await.unwrap();
        t.rm("/a", false, false).await.unwrap();
        t.write("/b", "12345").await.unwrap();
    });
}

/// Limits that make no sense never reach use: a tree built with them refuses every change.
#[test]
fn a_tree_with_senseless_limits_refuses_changes() {
    rt().block_on(async {
        let t = tree_over(&BTreeMap::new(), Limits::default().with_max_files(0));
        let e = t.write("/a", "1").await.unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidArgument, "{e:?}");
        assert!(!t.exists("/a").await);
    });
}

#[test]
fn commit_in_progress_blocks_mutations() {
    rt().block_on(async {
        let t = tree_over(&base_of(&[("/a", "A")]), Limits::default());
        t.begin_commit().unwrap();
        let busy =
            |e: FsError| matches!(e, FsError::Supabash(s) if s.code == ErrorCode::CommitInProgress);
        assert!(busy(t.write("/b", "B").await.unwrap_err()));
        assert!(busy(t.rm("/a", false, false).await.unwrap_err()));
        assert_eq!(t.discard().unwrap_err().code, ErrorCode::CommitInProgress);
        assert_eq!(t.read_text("/a").await.unwrap(), "A");
        t.end_commit(None);
        t.write("/b", "B").await.unwrap();
    });
}

#[derive(Debug, Clone)]
enum Op {
    Write(usize, usize),
    Rm(usize),
    Mv(usize, usize),
    Cp(usize, usize),
    MkdirP(usize),
    RmRf(usize),
}

const PATHS: [&str; 8] = ["/a", "/b", "/d/x", "/d/y", "/e/x", "/tmp/t", "/d", "/e"];
const CONTENTS: [&[u8]; 4] = [b"one", b"two", b"", &[0, 255, 1]];

fn op() -> impl Strategy<Value = Op> {
    let p = 0..PATHS.len();
    let c = 0..CONTENTS.len();
    prop_oneof![
        (p.clone(), c).prop_map(|(p, c)| Op::Write(p, c)),
        p.clone().prop_map(Op::Rm),
        (p.clone(), p.clone()).prop_map(|(a, b)| Op::Mv(a, b)),
        (p.clone(), p.clone()).prop_map(|(a, b)| Op::Cp(a, b)),
        p.clone().prop_map(Op::MkdirP),
        p.prop_map(Op::RmRf),
    ]
}

proptest! {
    #[test]
    fn change_set_applied_to_base_equals_staged_tree(
        base_pick in proptest::collection::vec((0usize..6, 0..CONTENTS.len()), 0..5),
        ops in proptest::collection::vec(op(), 0..25),
        lazy in any::<bool>(),
    ) {
        let mut base = BTreeMap::new();
        for (p, c) in base_pick {
            let p = PATHS[p];
            if p != "/tmp/t" && !base.keys().any(|k: &String| k.starts_with(&format!("{p}/")) || p.starts_with(&format!("{k}/"))) {
                base.insert(p.to_owned(), CONTENTS[c].to_vec());
            }
        }
        rt().block_on(async {
            let t = tree_in(lazy, &base, Arc::new(MemorySource(base.clone())), Limits::default());
            for op in ops {
                let _ = match op {
                    Op::Write(p, c) => t.write(PATHS[p], CONTENTS[c]).await,
                    Op::Rm(p) => t.rm(PATHS[p], false, false).await,
                    Op::Mv(a, b) => t.mv(PATHS[a], PATHS[b]).await,
                    Op::Cp(a, b) => t.cp(PATHS[a], PATHS[b], true).await,
                    Op::MkdirP(p) => t.mkdir(PATHS[p], true).await,
                    Op::RmRf(p) => t.rm(PATHS[p], true, true).await,
                };
            }
            let planned = t.wire_changes(&crate::codec::PlainCodec).await.unwrap();
            let (summary, wire) = (planned.summary, planned.wire);
            assert!(planned.canonical.is_empty());
            assert!(summary.iter().all(|c| !c.path.starts_with("/tmp")));
            let mut applied = base.clone();
            apply(&mut applied, &wire);
            assert_eq!(applied, committable_files(&t).await);
            t.begin_commit().unwrap();
            t.end_commit(Some("r1".into()));
            assert!(t.changes().unwrap().is_empty());
        });
    }
}

/// A body source that counts loads and holds each one until released.
struct CountingSource {
    inner: MemorySource,
    loads: std::sync::atomic::AtomicUsize,
    release: tokio::sync::Semaphore,
}

#[async_trait::async_trait]
impl BodySource for CountingSource {
    async fn load(&self, revision: &str, path: &str) -> Result<StoredFile> {
        self.loads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let _permit = self.release.acquire().await.expect("open");
        self.inner.load(revision, path).await
    }
}

#[test]
fn concurrent_lazy_reads_share_one_fetch() {
    rt().block_on(async {
        let base = base_of(&[("/a.md", "shared body"), ("/b.md", "other")]);
        let source = Arc::new(CountingSource {
            inner: MemorySource(base.clone()),
            loads: Default::default(),
            release: tokio::sync::Semaphore::new(0),
        });
        let tree = Arc::new(tree_loading_from(&base, source.clone(), Limits::default()));
        const READERS: usize = 8;
        let mut readers = tokio::task::JoinSet::new();
        for _ in 0..READERS {
            let tree = tree.clone();
            readers.spawn(async move { tree.read("/a.md").await });
        }
        // Wait until every reader holds the one flight for /a.md (the map holds one more).
        let key = ("r0".to_owned(), "/a.md".to_owned());
        loop {
            let joined = tree
                .in_flight
                .lock()
                .unwrap()
                .get(&key)
                .map_or(0, Arc::strong_count);
            if joined == READERS + 1 {
                break;
            }
            tokio::task::yield_now().await;
        }
        source.release.add_permits(READERS);
        while let Some(read) = readers.join_next().await {
            assert_eq!(read.unwrap().unwrap(), b"shared body");
        }
        let loads = || source.loads.load(std::sync::atomic::Ordering::SeqCst);
        // One batch for every reader: /a.md with its unread sibling /b.md (this source loads
        // a batch file by file).
        assert_eq!(loads(), 2, "one fetch for {READERS} concurrent readers");
        assert!(tree.in_flight.lock().unwrap().is_empty());
        // Loaded bodies are kept, the sibling's too.
        assert_eq!(tree.read("/a.md").await.unwrap(), b"shared body");
        assert_eq!(tree.read("/b.md").await.unwrap(), b"other");
        assert_eq!(loads(), 2);
    });
}

#[tokio::test]
async fn the_memory_estimate_counts_loaded_and_staged_bodies_once() {
    let base: BTreeMap<String, Vec<u8>> = [("/big.txt".to_owned(), vec![b'x'; 10_000])].into();
    let tree = tree_over(&base, Limits::default());
    let lazy = tree.memory_bytes();
    assert!(lazy < 1_000, "nothing loaded yet: {lazy}");
    tree.read("/big.txt").await.unwrap();
    let loaded = tree.memory_bytes();
    assert!((10_000..11_000).contains(&loaded), "{loaded}");
    // A staged body adds its bytes.
    tree.write("/new.txt", vec![b'y'; 5_000]).await.unwrap();
    let staged = tree.memory_bytes();
    assert!((15_000..16_000).contains(&staged), "{staged}");
    tree.discard().unwrap();
    assert!(tree.memory_bytes() < staged);
}

/// A lazily opened tree over a base of directories `/d0` .. `/d9` of ten files each, and its
/// directory source.
fn lazy_tree(
    limits: Limits,
) -> (
    StagedTree,
    Arc<MemoryDirectories>,
    BTreeMap<String, Vec<u8>>,
) {
    let mut base = BTreeMap::new();
    for d in 0..10 {
        for f in 0..10 {
            base.insert(format!("/d{d}/s/f{f}.md"), format!("{d}-{f}").into_bytes());
        }
    }
    base.insert("/top.md".into(), b"top".to_vec());
    let dirs = Arc::new(MemoryDirectories::new(&base));
    let bytes = base.values().map(|b| b.len() as u64).sum();
    let tree = StagedTree::lazy(
        "r0".into(),
        dirs.listing("/"),
        (base.len() as u64, bytes),
        Arc::new(MemorySource(base.clone())),
        dirs.clone(),
        limits,
    );
    (tree, dirs, base)
}

#[tokio::test]
async fn a_lazy_tree_lists_a_directory_the_first_time_something_in_it_is_touched() {
    let (tree, dirs, _) = lazy_tree(Limits::default());
    let lists = || dirs.lists.lock().unwrap().clone();
    let names: Vec<String> = tree
        .readdir("/")
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(names.len(), 11);
    assert!(lists().is_empty(), "the root came with the open");
    assert_eq!(tree.stat("/d3").await.unwrap().kind, FileKind::Directory);
    assert!(lists().is_empty(), "a directory's own stat lists nothing");
    assert_eq!(tree.read("/d3/s/f4.md").await.unwrap(), b"3-4");
    assert_eq!(lists(), ["/d3", "/d3/s"]);
    tree.read("/d3/s/f5.md").await.unwrap();
    assert_eq!(lists().len(), 2, "listed once");
    assert!(tree.is_partially_loaded());
    assert!(tree.changes().unwrap().is_empty());
}

#[tokio::test]
async fn removing_and_renaming_unlisted_directories_stage_every_file_below() {
    let (tree, _, base) = lazy_tree(Limits::default());
    tree.rm("/d1", true, false).await.unwrap();
    tree.mv("/d2", "/moved").await.unwrap();
    tree.write("/d4/s/new.md", "new").await.unwrap();
    let changes = tree.changes().unwrap();
    let count = |k: ChangeKind| changes.iter().filter(|c| c.kind == k).count();
    assert_eq!(count(ChangeKind::Delete), 10);
    assert_eq!(count(ChangeKind::Move), 10);
    assert_eq!(count(ChangeKind::Upsert), 1);
    let planned = tree.wire_changes(&crate::codec::PlainCodec).await.unwrap();
    let mut applied = base.clone();
    apply(&mut applied, &planned.wire);
    assert_eq!(applied, committable_files(&tree).await);
    assert!(!tree.is_partially_loaded());
}

#[tokio::test]
async fn a_lazy_tree_counts_what_it_has_not_listed_against_its_limits() {
    let (tree, _, _) = lazy_tree(Limits::default().with_max_files(102));
    tree.write("/one.md", "1").await.unwrap();
    let e = tree.write("/two.md", "2").await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::QuotaExceeded, "{e:?}");
    tree.rm("/d0/s/f0.md", false, false).await.unwrap();
    tree.write("/two.md", "2").await.unwrap();
}

#[tokio::test]
async fn discard_and_commit_keep_unlisted_directories_unlisted() {
    let (tree, dirs, _) = lazy_tree(Limits::default());
    tree.write("/d5/s/f0.md", "edited").await.unwrap();
    tree.discard().unwrap();
    assert_eq!(tree.read("/d5/s/f0.md").await.unwrap(), b"5-0");
    tree.write("/d5/s/f0.md", "edited").await.unwrap();
    tree.begin_commit().unwrap();
    tree.end_commit(Some("r1".into()));
    assert!(tree.changes().unwrap().is_empty());
    assert_eq!(tree.read("/d6/s/f1.md").await.unwrap(), b"6-1");
    assert_eq!(tree.read("/d5/s/f0.md").await.unwrap(), b"edited");
    assert_eq!(dirs.lists.lock().unwrap().len(), 4);
    assert_eq!(tree.readdir("/d7/s").await.unwrap().len(), 10);
}

/// Links resolve as the kernel resolves them once the tree is real files (issue 36): a `..`
/// after a link applies to its target, and a link that leads outside through another, or a
/// loop, is refused as it is made or moved into place.
#[tokio::test]
async fn links_resolve_as_the_kernel_does_and_escaping_ones_are_refused() {
    let t = tree_over(
        &base_of(&[("/x/y/f", "F"), ("/e/t", "T")]),
        Limits::default(),
    );
    let invalid_path =
        |e: &FsError| matches!(e, FsError::Supabash(ref s) if s.code == ErrorCode::InvalidPath);
    // `via -> side/../e/t`: `side` leads to /e, so `..` is / and `via` is /e/t (read as text
    // against /x it would be /x/e/t, which does not exist).
    t.symlink("../e", "/x/side").await.unwrap();
    t.symlink("side/../e/t", "/x/via").await.unwrap();
    assert_eq!(t.read_text("/x/via").await.unwrap(), "T");

    // The reported pair: b first, then c; and c first, then b.
    t.symlink("../..", "/x/y/b").await.unwrap();
    assert!(invalid_path(
        &t.symlink("b/../../../etc", "/x/y/c").await.unwrap_err()
    ));
    t.rm("/x/y/b", false, false).await.unwrap();
    t.symlink("b/../../../etc", "/x/y/c").await.unwrap();
    let e = t.symlink("../..", "/x/y/b").await.unwrap_err();
    assert!(invalid_path(&e), "{e}");
    assert!(e.to_string().contains("/x/y/c"), "{e}");
    // Moved into place: refused too, and nothing moves.
    t.mkdir("/z/w", true).await.unwrap();
    t.symlink("../..", "/z/w/b").await.unwrap();
    assert!(invalid_path(&t.mv("/z/w/b", "/x/y/b").await.unwrap_err()));
    assert_eq!(t.readlink("/z/w/b").await.unwrap(), "../..");
    assert!(t.lstat("/x/y/b").await.is_err());
    t.rm("/z", true, false).await.unwrap();

    // A loop.
    t.symlink("l2", "/l1").await.unwrap();
    assert!(invalid_path(&t.symlink("l1", "/l2").await.unwrap_err()));
    assert!(t.lstat("/l2").await.is_err());

    // The commit refuses what the tree holds anyway (a base stored around the checks).
    t.rm("/x/y/c", false, false).await.unwrap();
    t.symlink("../..", "/x/y/b").await.unwrap();
    let planted = Node::Symlink {
        target: "b/../../../etc".into(),
        meta: super::Meta::new(0o777),
    };
    t.lock().nodes.insert("/x/y/c".into(), planted);
    let e = t.changes().unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidPath, "{e}");
}

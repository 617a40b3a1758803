use super::*;
use proptest::prelude::*;
use std::collections::BTreeMap;

fn tree(links: &[(&str, &str)]) -> BTreeMap<String, String> {
    links
        .iter()
        .map(|(p, t)| ((*p).to_owned(), (*t).to_owned()))
        .collect()
}

fn check_in(links: &BTreeMap<String, String>, p: &str) -> Result<String, LinkError> {
    check(p, Absolute::Escapes, |q| links.get(q).cloned())
}

#[test]
fn a_dot_dot_after_a_link_applies_to_its_target() {
    let links = tree(&[("/x/y/b", "../.."), ("/x/y/c", "b/../../../etc")]);
    assert_eq!(check_in(&links, "/x/y/b"), Ok("/".to_owned()));
    assert_eq!(
        check_in(&links, "/x/y/c"),
        Err(LinkError::Escapes {
            link: "/x/y/c".into(),
            target: "b/../../../etc".into()
        })
    );
    // Read as text against its directory, the same target stays inside.
    assert_eq!(
        crate::posix::check_target("/x/y/c", "b/../../../etc").unwrap(),
        "/etc"
    );
    assert_eq!(
        check_all(&links, Absolute::Escapes).unwrap_err().0,
        "/x/y/c"
    );
}

#[test]
fn loops_and_long_chains_are_refused() {
    let links = tree(&[("/l1", "l2"), ("/l2", "l1")]);
    assert_eq!(check_in(&links, "/l1"), Err(LinkError::TooManyLinks));
    assert_eq!(check_in(&links, "/l2/x"), Err(LinkError::TooManyLinks));
    let me = tree(&[("/me", "me")]);
    assert_eq!(check_in(&me, "/me"), Err(LinkError::TooManyLinks));
    // 40 links in a chain resolve, 41 do not.
    let chain = |n: usize| -> BTreeMap<String, String> {
        (0..n)
            .map(|i| (format!("/c{i}"), format!("c{}", i + 1)))
            .collect()
    };
    assert_eq!(check_in(&chain(40), "/c0"), Ok("/c40".into()));
    assert_eq!(check_in(&chain(41), "/c0"), Err(LinkError::TooManyLinks));
}

#[test]
fn ordinary_links_resolve_as_before() {
    let links = tree(&[
        ("/latest", "notes/a.md"),
        ("/d/up", ".."),
        ("/d/side", "../e/f"),
        ("/e/g", "../d/side/../h"),
    ]);
    assert_eq!(check_in(&links, "/latest"), Ok("/notes/a.md".into()));
    assert_eq!(check_in(&links, "/d/up"), Ok("/".into()));
    assert_eq!(check_in(&links, "/d/side"), Ok("/e/f".into()));
    // side → /e/f, then `..` → /e: /e/h (read as text it would be /d/h).
    assert_eq!(check_in(&links, "/e/g"), Ok("/e/h".into()));
    assert!(check_all(&links, Absolute::Escapes).is_ok());
    // A path below a link resolves through it; the last component is kept when not followed.
    assert_eq!(
        resolve("/d/side/x", true, Absolute::Escapes, |q| links
            .get(q)
            .cloned()),
        Ok("/e/f/x".into())
    );
    assert_eq!(
        resolve("/latest", false, Absolute::Escapes, |q| links
            .get(q)
            .cloned()),
        Ok("/latest".into())
    );
}

#[test]
fn absolute_targets_escape_unless_read_from_the_root() {
    let links = tree(&[("/a/l", "/etc"), ("/a/m", "l/../x")]);
    assert!(matches!(
        check_in(&links, "/a/m"),
        Err(LinkError::Escapes { link, .. }) if link == "/a/m"
    ));
    assert_eq!(
        check("/a/m", Absolute::FromRoot, |q| links.get(q).cloned()),
        Ok("/x".into())
    );
    let up = tree(&[("/a/l", "/..")]);
    assert!(check("/a/l", Absolute::FromRoot, |q| up.get(q).cloned()).is_err());
}

#[test]
fn refused_leaves_out_what_escapes_until_the_rest_resolves() {
    let links = tree(&[
        ("/x/y/b", "../.."),
        ("/x/y/c", "b/../../../etc"),
        ("/l1", "l2"),
        ("/l2", "l1"),
        ("/ok", "x/y"),
        ("/abs", "/etc"),
    ]);
    let out = refused(&links, Absolute::Escapes);
    let names: Vec<&str> = out.keys().map(String::as_str).collect();
    assert_eq!(names, ["/abs", "/l1", "/l2", "/x/y/c"]);
    assert!(refused(&tree(&[("/ok", "x/y")]), Absolute::Escapes).is_empty());
}

#[test]
fn below_a_link() {
    let is_link = |p: &str| p == "/a" || p == "/a/b/c";
    assert_eq!(below_link("/a/b/c/d", is_link), Some("/a".into()));
    assert_eq!(below_link("/a", is_link), None);
    assert_eq!(below_link("/z/y", is_link), None);
}

/// What the kernel says of `root/link`, made real under `root`.
#[derive(Debug)]
enum Kernel {
    Inside(String),
    Outside,
    Loop,
    Missing,
}

fn kernel(root: &std::path::Path, link: &str) -> Kernel {
    match std::fs::canonicalize(root.join(&link[1..])) {
        Ok(p) => match p.strip_prefix(root) {
            Ok(rel) => Kernel::Inside(format!("/{}", rel.to_str().unwrap())),
            Err(_) => Kernel::Outside,
        },
        Err(e) if e.raw_os_error() == Some(40) => Kernel::Loop,
        Err(_) => Kernel::Missing,
    }
}

const DIRS: [&str; 4] = ["/a", "/a/b", "/a/b/c", "/d"];

fn target_strategy() -> impl Strategy<Value = String> {
    let seg = prop_oneof![
        Just("..".to_owned()),
        Just(".".to_owned()),
        Just("a".to_owned()),
        Just("b".to_owned()),
        Just("c".to_owned()),
        Just("d".to_owned()),
        Just("l0".to_owned()),
        Just("l1".to_owned()),
        Just("l2".to_owned()),
    ];
    prop::collection::vec(seg, 1..6).prop_map(|s| s.join("/"))
}

static CASE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Differential test against the kernel: directories and links made real in a temporary
    /// directory, every link resolved by `canonicalize` and by [`check`].
    #[test]
    fn resolution_agrees_with_the_kernel(
        places in prop::collection::vec(0usize..DIRS.len() + 1, 3),
        targets in prop::collection::vec(target_strategy(), 3),
    ) {
        let n = CASE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let base = std::env::temp_dir()
            .join(format!("supabash-links-{}-{n}", std::process::id()));
        let root = base.join("root");
        for d in DIRS {
            std::fs::create_dir_all(root.join(&d[1..])).unwrap();
        }
        let root = std::fs::canonicalize(&root).unwrap();
        let mut links = BTreeMap::new();
        for (i, (place, target)) in places.iter().zip(&targets).enumerate() {
            let dir = if *place == DIRS.len() { "" } else { DIRS[*place] };
            let link = format!("{dir}/l{i}");
            std::os::unix::fs::symlink(target, root.join(&link[1..])).unwrap();
            links.insert(link, target.clone());
        }
        let mut outcomes = Vec::new();
        for link in links.keys() {
            outcomes.push((link.clone(), kernel(&root, link), check_in(&links, link)));
        }
        std::fs::remove_dir_all(&base).unwrap();
        for (link, k, ours) in outcomes {
            match (&k, &ours) {
                (Kernel::Inside(p), Ok(q)) => prop_assert_eq!(p, q, "{}", link),
                (Kernel::Outside, Err(LinkError::Escapes { .. })) => {}
                (Kernel::Loop, Err(LinkError::TooManyLinks)) => {}
                // The kernel stops at a missing name; the rule reads it as a directory that
                // may appear later, and goes on.
                (Kernel::Missing, _) => {}
                _ => prop_assert!(false, "{link}: kernel {k:?}, ours {ours:?} ({links:?})"),
            }
        }
    }
}

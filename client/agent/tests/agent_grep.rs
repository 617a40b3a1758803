//! The grep tool on a lazily opened workspace searches the base on the server
//! (`supabash_grep`) and only the staged files locally: with edits, a delete, a move and a new
//! file staged and not committed, it answers exactly what the same search over an eagerly
//! opened tree with the same staged changes answers (every body read locally).

use supabash::{OpenMode, Workspace};
use supabash_agent::tools::{self, GrepInput, GrepOutput, ToolOptions};
use supabash_agent::view::View;
use supabash_tests::client::{new_user, transport, workspace_with, Via};

async fn open(user: &str, id: &str, mode: OpenMode) -> Workspace {
    Workspace::builder(transport(Via::Postgres, user).await)
        .open_mode(mode)
        .open(id)
        .await
        .unwrap()
}

/// The same uncommitted changes on either tree.
async fn stage(ws: &Workspace) {
    let fs = ws.fs();
    fs.write("/src/a/one.rs", "fn one() {} // TODO gone from here\n")
        .await
        .unwrap();
    fs.write("/src/a/one.rs", "fn one() {}\n").await.unwrap();
    fs.rm("/src/b/two.rs", false, false).await.unwrap();
    fs.mkdir("/moved", true).await.unwrap();
    fs.mv("/src/c/three.rs", "/moved/three.rs").await.unwrap();
    fs.mkdir("/src/d", true).await.unwrap();
    fs.write("/src/d/new.rs", "// TODO new and staged\n")
        .await
        .unwrap();
    fs.write("/src/e/five.rs", "fn five() {}\n// TODO edited in\n")
        .await
        .unwrap();
}

fn lines(out: &GrepOutput) -> Vec<(String, usize, String)> {
    out.matches
        .iter()
        .map(|m| (m.path.clone(), m.line, m.text.clone()))
        .collect()
}

#[tokio::test]
async fn grep_on_a_lazy_tree_searches_the_server_and_the_staged_files() {
    let user = new_user();
    let mut files: Vec<(String, String)> = Vec::new();
    for d in ["a", "b", "c", "e", "f/g"] {
        for i in 0..3 {
            files.push((
                format!("/src/{d}/f{i}.rs"),
                format!("fn f{i}() {{}}\n// TODO in {d} {i}\n"),
            ));
        }
    }
    files.push(("/src/a/one.rs".into(), "// TODO one\nfn one() {}\n".into()));
    files.push(("/src/b/two.rs".into(), "// TODO two\n".into()));
    files.push(("/src/c/three.rs".into(), "// TODO three\n".into()));
    files.push(("/src/e/five.rs".into(), "fn five() {}\n".into()));
    files.push(("/bin.dat".into(), "TODO\0binary".into()));
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    let seeded = workspace_with(Via::Postgres, &user, &refs).await;
    let lazy = open(&user, seeded.id(), OpenMode::Lazy).await;
    let eager = open(&user, seeded.id(), OpenMode::Eager).await;
    stage(&lazy).await;
    stage(&eager).await;
    let o = ToolOptions::default();
    for (pattern, path, ci) in [
        ("TODO", "/", false),
        ("todo", "/", true),
        ("TODO", "/src", false),
        ("fn f1", "/src/f", false),
        ("nothing matches this", "/", false),
    ] {
        let input = || GrepInput {
            pattern: pattern.into(),
            path: path.into(),
            glob: None,
            case_insensitive: ci,
            max_results: None,
        };
        assert!(lazy.fs().is_partially_loaded());
        let from_server = tools::grep(lazy.fs().as_ref(), input(), &o).await.unwrap();
        // A view of the whole tree never searches on the server: every body is read here.
        let local = tools::grep(
            &View::new(eager.fs().clone(), "/", &[]).unwrap(),
            input(),
            &o,
        )
        .await
        .unwrap();
        assert_eq!(lines(&from_server), lines(&local), "{pattern} in {path}");
        assert_eq!(from_server.truncated, local.truncated);
        // The search left the tree lazy: no directory was listed, no base body read.
        assert!(lazy.fs().is_partially_loaded());
    }
    let all = tools::grep(
        lazy.fs().as_ref(),
        GrepInput {
            pattern: "TODO".into(),
            path: "/".into(),
            glob: None,
            case_insensitive: false,
            max_results: None,
        },
        &o,
    )
    .await
    .unwrap();
    let paths: Vec<&str> = all.matches.iter().map(|m| m.path.as_str()).collect();
    assert!(paths.contains(&"/src/d/new.rs") && paths.contains(&"/moved/three.rs"));
    assert!(paths.contains(&"/src/e/five.rs"));
    assert!(!paths.contains(&"/src/b/two.rs") && !paths.contains(&"/src/a/one.rs"));
    assert!(!paths.contains(&"/bin.dat"));
    // A cap applies to the merged answer.
    let capped = tools::grep(
        lazy.fs().as_ref(),
        GrepInput {
            pattern: "TODO".into(),
            path: "/".into(),
            glob: None,
            case_insensitive: false,
            max_results: Some(4),
        },
        &o,
    )
    .await
    .unwrap();
    assert_eq!(capped.matches.len(), 4);
    assert!(capped.truncated);
    assert_eq!(lines(&capped), lines(&all)[..4].to_vec());
    // Anchored patterns hold at every line on the server too: the same lines as over every
    // body, whatever line they are on.
    for (pattern, path) in [("^// TODO", "/"), ("TODO in . 2$", "/src")] {
        let input = || GrepInput {
            pattern: pattern.into(),
            path: path.into(),
            glob: None,
            case_insensitive: false,
            max_results: None,
        };
        let searched = tools::grep(lazy.fs().as_ref(), input(), &o).await.unwrap();
        let local = tools::grep(
            &View::new(eager.fs().clone(), "/", &[]).unwrap(),
            input(),
            &o,
        )
        .await
        .unwrap();
        assert!(!lines(&local).is_empty(), "{pattern}");
        assert_eq!(lines(&searched), lines(&local), "{pattern} in {path}");
    }
}

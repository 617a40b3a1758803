//! The `supabash` binary for the tests that run it as a process (cli, run_sync, mount):
//! `$SUPABASH_BIN`, else the one beside this test binary's directory of the target (`cargo
//! test --workspace` builds it in the same run), built once with cargo when it is missing or
//! older than the sources (a test target of this crate does not get another package's binary
//! from cargo).

use crate::cluster::repo_root;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::SystemTime;

/// The newest modification time of any file below `dir`.
fn newest(dir: &Path) -> SystemTime {
    let mut t = SystemTime::UNIX_EPOCH;
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = e.path();
        let m = if path.is_dir() {
            newest(&path)
        } else {
            e.metadata().and_then(|m| m.modified()).unwrap_or(t)
        };
        t = t.max(m);
    }
    t
}

/// The path of an up-to-date `supabash` binary.
pub fn supabash() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        if let Some(p) = std::env::var_os("SUPABASH_BIN") {
            return PathBuf::from(p);
        }
        let exe = std::env::current_exe().unwrap();
        let profile_dir = exe.parent().unwrap().parent().unwrap().to_path_buf();
        let bin = profile_dir.join("supabash");
        let root = repo_root();
        let sources = ["client/cli", "client/src", "client/agent/src", "core/src"]
            .iter()
            .map(|d| newest(&root.join(d)))
            .max()
            .unwrap();
        let built = std::fs::metadata(&bin).and_then(|m| m.modified()).ok();
        if built.is_none_or(|b| b < sources) {
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            let mut build = Command::new(cargo);
            build
                .current_dir(&root)
                .args(["build", "-q", "-p", "supabash-cli", "--bin", "supabash"])
                .env("CARGO_TARGET_DIR", profile_dir.parent().unwrap());
            if profile_dir.ends_with("release") {
                build.arg("--release");
            }
            assert!(build.status().unwrap().success(), "building supabash");
        }
        bin
    })
}

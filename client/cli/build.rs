//! Records the git commit the binary is built from, for `supabash --version`
//! (`SUPABASH_GIT_COMMIT`: the environment's value when set, e.g. by a release build from a
//! source archive, else `git rev-parse --short HEAD`, else "unknown" outside a checkout).

use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let text = text.trim();
    (out.status.success() && !text.is_empty()).then(|| text.to_string())
}

fn main() {
    println!("cargo:rerun-if-env-changed=SUPABASH_GIT_COMMIT");
    let commit = match std::env::var("SUPABASH_GIT_COMMIT") {
        Ok(c) if !c.is_empty() => c,
        _ => {
            // Built again when HEAD moves: HEAD itself, the branch it names, the packed refs.
            let mut watched = vec!["HEAD".to_string(), "packed-refs".to_string()];
            watched.extend(git(&["rev-parse", "--symbolic-full-name", "HEAD"]));
            for name in watched {
                if let Some(path) =
                    git(&["rev-parse", "--path-format=absolute", "--git-path", &name])
                {
                    if Path::new(&path).exists() {
                        println!("cargo:rerun-if-changed={path}");
                    }
                }
            }
            git(&["rev-parse", "--short", "HEAD"]).unwrap_or_else(|| "unknown".to_string())
        }
    };
    println!("cargo:rustc-env=SUPABASH_GIT_COMMIT={commit}");
}

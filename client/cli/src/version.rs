//! What `supabash --version` prints: the version and the git commit the binary was built from
//! (build.rs; "unknown" when built outside a git checkout).

/// `0.6.0 (commit 1a2b3c4)`.
pub const LONG: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("SUPABASH_GIT_COMMIT"),
    ")"
);

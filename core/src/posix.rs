//! POSIX attributes of a stored entry, shared by every backend and the client: what an entry
//! is ([`Kind`]: a regular file, a symbolic link or a directory), its permission bits
//! ([`check_mode`]: at most `0o7777`), its modification time (nanoseconds since the epoch),
//! and the one rule for a symbolic link's target ([`check_target`]: relative, a valid path
//! once resolved against the link's directory, never above the workspace root). A link's
//! target is its content (its body, as git stores it); a directory has an empty body.
//! [`Capabilities`] says what a backend keeps.

use crate::path::{self, PathError};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The permission bits an entry may carry (setuid, setgid, sticky and `rwxrwxrwx`).
pub const MODE_BITS: u32 = 0o7777;

/// What an entry is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A regular file: its body is its bytes.
    #[default]
    File,
    /// A symbolic link: its body is its target, never followed by a backend.
    Symlink,
    /// A directory, kept even when nothing lies below it: its body is empty.
    Directory,
}

impl Kind {
    /// The name stored and sent (`file`, `symlink`, `directory`).
    pub const fn as_str(self) -> &'static str {
        match self {
            Kind::File => "file",
            Kind::Symlink => "symlink",
            Kind::Directory => "directory",
        }
    }

    /// Reads [`Self::as_str`] back.
    pub fn parse(s: &str) -> Option<Kind> {
        match s {
            "file" => Some(Kind::File),
            "symlink" => Some(Kind::Symlink),
            "directory" => Some(Kind::Directory),
            _ => None,
        }
    }

    /// The mode an entry of this kind gets when none is given (and the mode every entry of a
    /// database from before modes reads as: `0o644` for its files).
    pub const fn default_mode(self) -> u32 {
        match self {
            Kind::File => 0o644,
            Kind::Symlink => 0o777,
            Kind::Directory => 0o755,
        }
    }

    /// The file-type bits git and `stat` show for this kind (`0o100000`, `0o120000`,
    /// `0o040000`).
    pub const fn type_bits(self) -> u32 {
        match self {
            Kind::File => 0o100000,
            Kind::Symlink => 0o120000,
            Kind::Directory => 0o040000,
        }
    }

    /// The mode git records for a file of this kind with permission bits `mode` (`100755`
    /// when any execute bit is set, else `100644`; `120000` for a link; `040000` for a
    /// directory), as `diff --git` prints it.
    pub fn git_mode(self, mode: u32) -> String {
        let bits = match self {
            Kind::File if mode & 0o111 != 0 => 0o100755,
            Kind::File => 0o100644,
            k => k.type_bits(),
        };
        format!("{bits:06o}")
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The attributes a change gives an entry: its kind, and its mode and modification time when
/// the caller sets them (absent: the kind's [`Kind::default_mode`], and for the time the
/// version's own when the content is unchanged, else the commit's).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Attrs {
    pub kind: Kind,
    pub mode: Option<u32>,
    pub mtime_ns: Option<i64>,
}

impl Attrs {
    /// The mode stored: the given one, or the kind's default.
    pub fn mode_or_default(&self) -> u32 {
        self.mode.unwrap_or(self.kind.default_mode())
    }
}

/// Why an attribute was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PosixError {
    /// A mode with bits outside [`MODE_BITS`] (or negative).
    ModeOutOfRange(i64),
    /// An empty symbolic link target.
    EmptyTarget,
    /// An absolute target: it would point outside the workspace on every host.
    AbsoluteTarget,
    /// A target that is not a valid path once resolved (climbs above the root, reserved or
    /// invisible characters, too long, ...).
    InvalidTarget(PathError),
    /// A hard link: a second name for one file is not stored.
    HardLink,
}

impl PosixError {
    /// A short, stable reason code (used in error details).
    pub fn reason(&self) -> &'static str {
        match self {
            PosixError::ModeOutOfRange(_) => "mode-out-of-range",
            PosixError::EmptyTarget => "empty-target",
            PosixError::AbsoluteTarget => "absolute-target",
            PosixError::InvalidTarget(PathError::EscapesRoot) => "target-escapes-root",
            PosixError::InvalidTarget(_) => "invalid-target",
            PosixError::HardLink => "hard-link",
        }
    }
}

impl fmt::Display for PosixError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PosixError::ModeOutOfRange(m) => {
                write!(f, "mode {m:#o} has bits outside {MODE_BITS:#o}")
            }
            PosixError::EmptyTarget => f.write_str("a symbolic link needs a target"),
            PosixError::AbsoluteTarget => {
                f.write_str("a symbolic link target must be relative (an absolute target points outside the workspace)")
            }
            PosixError::InvalidTarget(PathError::EscapesRoot) => {
                f.write_str("a symbolic link target must not climb above the workspace root")
            }
            PosixError::InvalidTarget(e) => {
                write!(f, "a symbolic link target must be a valid path: {e}")
            }
            PosixError::HardLink => f.write_str(
                "hard links are not stored: copy the file, or use a symbolic link",
            ),
        }
    }
}

impl std::error::Error for PosixError {}

/// Checks permission bits: `0..=0o7777`.
pub fn check_mode(mode: i64) -> Result<u32, PosixError> {
    if (0..=i64::from(MODE_BITS)).contains(&mode) {
        Ok(mode as u32)
    } else {
        Err(PosixError::ModeOutOfRange(mode))
    }
}

/// Checks the target of the symbolic link at canonical path `link`: not empty, relative, and
/// resolving (against the link's directory, without following anything) to a path inside the
/// workspace that passes the path rules. Returns the path it resolves to (`/` for the root).
pub fn check_target(link: &str, target: &str) -> Result<String, PosixError> {
    if target.is_empty() {
        return Err(PosixError::EmptyTarget);
    }
    if target.starts_with('/') {
        return Err(PosixError::AbsoluteTarget);
    }
    path::resolve(path::parent(link), target).map_err(PosixError::InvalidTarget)
}

/// What a files-only workspace (created with `files_only`, the seed's text-only behaviour)
/// refuses of an entry of `kind` with permission bits `mode`: a symbolic link, a directory
/// entry, or a file mode other than [`Kind::default_mode`] (`0o644`). `None`: a plain file
/// with the default mode, which it stores. The one rule for the server's commit check and
/// the client's check before sending.
pub fn files_only_refusal(kind: Kind, mode: u32) -> Option<FilesOnlyRefusal> {
    match kind {
        Kind::Symlink => Some(FilesOnlyRefusal::Symlink),
        Kind::Directory => Some(FilesOnlyRefusal::Directory),
        Kind::File if mode != Kind::File.default_mode() => Some(FilesOnlyRefusal::Mode(mode)),
        Kind::File => None,
    }
}

/// Why a files-only workspace refuses an entry (see [`files_only_refusal`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilesOnlyRefusal {
    Symlink,
    Directory,
    /// A file mode other than `0o644`.
    Mode(u32),
}

impl FilesOnlyRefusal {
    /// What was refused, as the error detail's `refused` names it: `symlink`, `directory` or
    /// `mode`.
    pub const fn as_str(self) -> &'static str {
        match self {
            FilesOnlyRefusal::Symlink => "symlink",
            FilesOnlyRefusal::Directory => "directory",
            FilesOnlyRefusal::Mode(_) => "mode",
        }
    }

    /// The error message for the entry at `path`.
    pub fn message(self, path: &str) -> String {
        let what = match self {
            FilesOnlyRefusal::Symlink => "a symbolic link".to_owned(),
            FilesOnlyRefusal::Directory => "a directory entry".to_owned(),
            FilesOnlyRefusal::Mode(m) => {
                format!("mode {m:#o} (only {:#o})", Kind::File.default_mode())
            }
        };
        format!("{path}: this workspace stores plain files only (files_only): {what} is not stored")
    }
}

/// What a backend stores besides regular files' bytes: the seed's `mounted.capabilities`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Capabilities {
    /// `postgres` or `storage`.
    pub backend: &'static str,
    /// `posix-tree`: kinds, modes and times; `file-tree`: plain files only (see
    /// [`Capabilities::files_only`]; the seed's text-only backend said `utf8-text-tree`).
    pub content: &'static str,
    pub durable_empty_directories: bool,
    pub modes: bool,
    pub symbolic_links: bool,
    /// Whether modification times survive a commit.
    pub times: bool,
}

impl Capabilities {
    /// A backend that keeps kinds, modes and times.
    pub const fn posix(backend: &'static str) -> Self {
        Capabilities {
            backend,
            content: "posix-tree",
            durable_empty_directories: true,
            modes: true,
            symbolic_links: true,
            times: true,
        }
    }

    /// A workspace that stores plain files only (a Postgres workspace created with
    /// `files_only`): no symbolic links, no directory entries, every file `0o644`; times are
    /// still kept.
    pub const fn files_only(backend: &'static str) -> Self {
        Capabilities {
            backend,
            content: "file-tree",
            durable_empty_directories: false,
            modes: false,
            symbolic_links: false,
            times: true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn targets() {
        assert_eq!(check_target("/a/l", "b").unwrap(), "/a/b");
        assert_eq!(check_target("/a/l", "../b/c").unwrap(), "/b/c");
        assert_eq!(check_target("/a/l", "..").unwrap(), "/");
        assert_eq!(check_target("/l", ".").unwrap(), "/");
        assert_eq!(check_target("/l", ""), Err(PosixError::EmptyTarget));
        assert_eq!(check_target("/l", "/etc"), Err(PosixError::AbsoluteTarget));
        assert_eq!(
            check_target("/a/l", "../../x"),
            Err(PosixError::InvalidTarget(PathError::EscapesRoot))
        );
        assert!(check_target("/l", "a\nb").is_err());
        assert!(check_target("/l", "a\\b").is_err());
        assert!(check_target("/l", ".supabash/x").is_err());
    }

    #[test]
    fn modes_and_kinds() {
        assert_eq!(check_mode(0o755), Ok(0o755));
        assert_eq!(check_mode(0o7777), Ok(0o7777));
        assert_eq!(
            check_mode(0o10000),
            Err(PosixError::ModeOutOfRange(0o10000))
        );
        assert_eq!(check_mode(-1), Err(PosixError::ModeOutOfRange(-1)));
        for k in [Kind::File, Kind::Symlink, Kind::Directory] {
            assert_eq!(Kind::parse(k.as_str()), Some(k));
        }
        assert_eq!(Kind::parse("fifo"), None);
        assert_eq!(Kind::File.git_mode(0o755), "100755");
        assert_eq!(Kind::File.git_mode(0o600), "100644");
        assert_eq!(Kind::Symlink.git_mode(0o777), "120000");
    }

    #[test]
    fn files_only_refuses_all_but_plain_files() {
        assert_eq!(files_only_refusal(Kind::File, 0o644), None);
        assert_eq!(
            files_only_refusal(Kind::File, 0o755),
            Some(FilesOnlyRefusal::Mode(0o755))
        );
        assert_eq!(
            files_only_refusal(Kind::File, 0o600),
            Some(FilesOnlyRefusal::Mode(0o600))
        );
        assert_eq!(
            files_only_refusal(Kind::Symlink, 0o777),
            Some(FilesOnlyRefusal::Symlink)
        );
        assert_eq!(
            files_only_refusal(Kind::Directory, 0o755),
            Some(FilesOnlyRefusal::Directory)
        );
        assert!(FilesOnlyRefusal::Mode(0o755)
            .message("/a")
            .contains("0o755"));
    }

    proptest! {
        #[test]
        fn files_only_stores_exactly_plain_files_with_the_default_mode(
            kind in prop_oneof![Just(Kind::File), Just(Kind::Symlink), Just(Kind::Directory)],
            mode in 0u32..=MODE_BITS,
        ) {
            let stored = files_only_refusal(kind, mode).is_none();
            prop_assert_eq!(stored, kind == Kind::File && mode == 0o644);
        }

        #[test]
        fn a_mode_is_accepted_exactly_within_the_bits(mode in any::<i64>()) {
            let ok = check_mode(mode).is_ok();
            prop_assert_eq!(ok, (0..=0o7777).contains(&mode));
        }

        #[test]
        fn small_modes_are_kept(mode in 0u32..=0o7777) {
            prop_assert_eq!(check_mode(i64::from(mode)), Ok(mode));
        }

        #[test]
        fn an_accepted_target_resolves_inside_the_workspace(
            depth in 0usize..4,
            target in "(\\.\\./|\\./|[a-z]{1,3}/|/){0,5}[a-z.]{0,3}",
        ) {
            let link = format!("{}/l", "/d".repeat(depth));
            match check_target(&link, &target) {
                Ok(resolved) => {
                    prop_assert!(!target.starts_with('/'));
                    prop_assert!(resolved.starts_with('/'));
                    prop_assert!(!resolved.split('/').any(|s| s == ".." || s == "."));
                    prop_assert!(resolved == "/" || path::validate(&resolved).is_ok()
                        || path::is_shell_owned(&resolved));
                }
                Err(PosixError::AbsoluteTarget) => prop_assert!(target.starts_with('/')),
                Err(_) => {}
            }
        }

        #[test]
        fn a_target_climbing_past_the_root_is_refused(depth in 0usize..4, extra in 1usize..4) {
            let link = format!("{}/l", "/d".repeat(depth));
            let target = format!("{}x", "../".repeat(depth + extra));
            prop_assert_eq!(
                check_target(&link, &target),
                Err(PosixError::InvalidTarget(PathError::EscapesRoot))
            );
        }
    }
}

//! Walking a directory without following anything: every regular file hashed as a stream,
//! every directory listed, links and special files reported, refused names ignored with
//! their subtree, and the limits checked before anything is staged.

use super::{
    local_error, Exclude, Ignored, NotStaged, NotStagedReason, Progress, ProgressFn, WrittenFile,
};
use crate::error::Result;
use crate::limits::Limits;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use supabash_core::links::{self, Absolute};
use supabash_core::{path, posix};

/// A regular file found on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct DiskFile {
    pub content_hash: String,
    pub size: u64,
    pub mode: u32,
    /// Modification time, nanoseconds since the epoch.
    pub mtime_ns: i64,
}

/// What a directory holds.
#[derive(Debug, Default)]
pub(super) struct Scan {
    pub files: BTreeMap<String, DiskFile>,
    pub dirs: BTreeSet<String>,
    /// Symbolic links whose target core's rule accepts: path → target.
    pub links: BTreeMap<String, String>,
    pub ignored: Vec<Ignored>,
    pub not_staged: Vec<NotStaged>,
}

/// Opens a regular file for reading, refusing a link in its last segment.
pub(super) fn open(at: &Path, p: &str) -> Result<fs::File> {
    fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(at)
        .map_err(|e| local_error(p, "cannot open", e))
}

/// Reads the file `p` at `at` whole, refusing more than the file limit.
pub(super) fn read(at: &Path, p: &str, limits: &Limits) -> Result<Vec<u8>> {
    let file = open(at, p)?;
    let mut bytes = Vec::new();
    file.take(limits.max_file_bytes as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| local_error(p, "cannot read", e))?;
    limits.check_file(p, bytes.len())?;
    Ok(bytes)
}

fn hash(at: &Path, p: &str) -> Result<String> {
    let mut file = open(at, p)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => hasher.update(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(local_error(p, "cannot read", e)),
        }
    }
    Ok(format!("{:x}", hasher.finalize()))
}

/// The hash `known` recorded for a file that still has its stamp (same inode, change time,
/// size and modification time as when it was written): its bytes are the ones written.
fn unchanged(known: Option<&WrittenFile>, meta: &fs::Metadata, mtime_ns: i64) -> Option<String> {
    let known = known?;
    let stamp = known.stamp?;
    let ctime_ns = meta
        .ctime()
        .saturating_mul(1_000_000_000)
        .saturating_add(meta.ctime_nsec());
    (stamp.ino == meta.ino()
        && stamp.ctime_ns == ctime_ns
        && known.size == meta.len()
        && known.mtime_ns == Some(mtime_ns))
    .then(|| known.content_hash.clone())
}

/// Walks `root`, leaving out (as ignored) what `exclude` excludes; a file `known` recorded
/// with a stamp it still has is not read again. Fails (naming the path) when a file or the
/// tree is over `limits`.
pub(super) fn scan(
    root: &Path,
    limits: &Limits,
    progress: Option<ProgressFn>,
    exclude: Option<&dyn Exclude>,
    known: &BTreeMap<String, WrittenFile>,
) -> Result<Scan> {
    let mut out = Scan::default();
    let mut done = Progress {
        files: 0,
        bytes: 0,
        total_files: None,
        total_bytes: None,
    };
    let mut stack: Vec<(PathBuf, String)> = vec![(root.to_path_buf(), String::new())];
    while let Some((dir, prefix)) = stack.pop() {
        let shown = if prefix.is_empty() { "/" } else { &prefix };
        let listing = fs::read_dir(&dir).map_err(|e| local_error(shown, "cannot list", e))?;
        for entry in listing {
            let entry = entry.map_err(|e| local_error(shown, "cannot list", e))?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else {
                out.ignored.push(Ignored {
                    path: format!("{prefix}/{}", name.to_string_lossy()),
                    reason: "not-utf-8".to_owned(),
                });
                continue;
            };
            let p = format!("{prefix}/{name}");
            if let Err(e) = path::validate(&p) {
                out.ignored.push(Ignored {
                    path: p,
                    reason: e.reason().to_owned(),
                });
                continue;
            }
            limits.check_path(&p)?;
            let at = entry.path();
            let meta = fs::symlink_metadata(&at).map_err(|e| local_error(&p, "cannot stat", e))?;
            let kind = meta.file_type();
            if exclude.is_some_and(|x| x.excluded(&p, kind.is_dir())) {
                out.ignored.push(Ignored {
                    path: p,
                    reason: super::EXCLUDED.to_owned(),
                });
                continue;
            }
            if kind.is_dir() {
                out.dirs.insert(p.clone());
                stack.push((at, p));
            } else if kind.is_symlink() {
                let target = fs::read_link(&at).map_err(|e| local_error(&p, "cannot read", e))?;
                match target.to_str() {
                    Some(t) if posix::check_target(&p, t).is_ok() => {
                        out.links.insert(p, t.to_owned());
                    }
                    _ => out.not_staged.push(NotStaged {
                        path: p,
                        reason: NotStagedReason::Symlink {
                            target: target.to_string_lossy().into_owned(),
                        },
                    }),
                }
            } else if kind.is_file() {
                limits.check_file(&p, meta.len() as usize)?;
                let mtime_ns = meta
                    .mtime()
                    .saturating_mul(1_000_000_000)
                    .saturating_add(meta.mtime_nsec());
                let content_hash = match unchanged(known.get(&p), &meta, mtime_ns) {
                    Some(h) => h,
                    None => hash(&at, &p)?,
                };
                let file = DiskFile {
                    content_hash,
                    size: meta.len(),
                    mode: meta.mode() & posix::MODE_BITS,
                    mtime_ns,
                };
                done.files += 1;
                done.bytes += file.size;
                out.files.insert(p, file);
                if let Some(progress) = &progress {
                    progress(done);
                }
            } else {
                out.not_staged.push(NotStaged {
                    path: p,
                    reason: NotStagedReason::SpecialFile,
                });
            }
        }
    }
    limits.check_tree(out.files.len(), done.bytes as usize)?;
    leave_out_escaping_links(&mut out);
    out.ignored.sort_by(|a, b| a.path.cmp(&b.path));
    out.not_staged.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

/// Leaves out the links that lead outside the directory as the kernel resolves them (through
/// other links, `supabash_core::links`), reported as not staged.
fn leave_out_escaping_links(out: &mut Scan) {
    for (p, _) in links::refused(&out.links, Absolute::Escapes) {
        let target = out.links.remove(&p).unwrap_or_default();
        out.not_staged.push(NotStaged {
            path: p,
            reason: NotStagedReason::Symlink { target },
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::disk::DiskStamp;
    use std::time::Duration;

    fn stamp_of(meta: &fs::Metadata) -> DiskStamp {
        DiskStamp {
            ino: meta.ino(),
            ctime_ns: meta.ctime() * 1_000_000_000 + meta.ctime_nsec(),
        }
    }

    #[test]
    fn a_stamped_file_is_trusted_until_anything_touches_it() {
        let dir = std::env::temp_dir().join(format!("supabash-scan-{}", uuid::Uuid::new_v4()));
        fs::create_dir_all(&dir).unwrap();
        let at = dir.join("f");
        fs::write(&at, b"before").unwrap();
        let meta = fs::metadata(&at).unwrap();
        let mtime_ns = meta.mtime() * 1_000_000_000 + meta.mtime_nsec();
        let known = WrittenFile {
            content_hash: "recorded".into(),
            size: 6,
            mode: 0o644,
            mtime_ns: Some(mtime_ns),
            stamp: Some(stamp_of(&meta)),
        };
        assert_eq!(
            unchanged(Some(&known), &meta, mtime_ns).as_deref(),
            Some("recorded")
        );
        // Without a stamp, or with another size or time, the file is read.
        let unstamped = WrittenFile {
            stamp: None,
            ..known.clone()
        };
        assert_eq!(unchanged(Some(&unstamped), &meta, mtime_ns), None);
        assert_eq!(unchanged(Some(&known), &meta, mtime_ns + 1), None);
        assert_eq!(unchanged(None, &meta, mtime_ns), None);
        // The same size written again and the old time put back: the change time moved.
        std::thread::sleep(Duration::from_millis(50));
        fs::write(&at, b"after!").unwrap();
        let f = fs::File::options().write(true).open(&at).unwrap();
        f.set_modified(crate::tree::from_ns(mtime_ns)).unwrap();
        let meta = fs::metadata(&at).unwrap();
        assert_eq!(meta.mtime() * 1_000_000_000 + meta.mtime_nsec(), mtime_ns);
        assert_eq!(unchanged(Some(&known), &meta, mtime_ns), None);
        fs::remove_dir_all(&dir).unwrap();
    }
}

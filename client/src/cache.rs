//! The host's content-addressed body cache: rendered file contents by their SHA-256, shared by
//! every process of one user (mounts, `run`, `export`, lazy reads), so a remount or a second
//! run of a revision fetches nothing it already has.
//!
//! It lives in one directory (default `$XDG_CACHE_HOME/supabash`, else `~/.cache/supabash`;
//! `SUPABASH_CACHE_DIR` overrides, `SUPABASH_CACHE=off` turns it off), created `0700` and
//! refused when it is a symbolic link, not a directory, or owned by another user. Every read is
//! checked against its hash: a file whose bytes do not match is deleted and reported as absent,
//! never served. Writes go to a temporary file renamed into place, so concurrent processes
//! never see half a body. The size is bounded (default 1 GiB, `SUPABASH_CACHE_MAX_MB`): past
//! it, the least recently used bodies (by modification time, refreshed on every hit) go first.
//!
//! Redacted bodies leave it: a host that applies a redaction forgets the bodies it removed, and
//! a cache opened for a workspace ([`HostCache::for_workspace`]) lists the bodies it keeps for
//! that workspace with the workspace's redaction epoch; when a later open sees the epoch moved
//! (someone redacted meanwhile), every body listed for that workspace is dropped and fetched
//! again when needed (never served from before the redaction).

use std::fs;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;
use supabash_core::hash::sha256_hex;

/// The default bound of the cache, in bytes.
pub const DEFAULT_MAX_BYTES: u64 = 1 << 30;

/// How stale a body's last-use time may get before a hit refreshes it.
const TOUCH_EVERY: std::time::Duration = std::time::Duration::from_secs(60);

/// Why a cache directory cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CacheError {
    /// Neither `XDG_CACHE_HOME` nor `HOME` is set.
    #[error("no cache directory: set XDG_CACHE_HOME, HOME or SUPABASH_CACHE_DIR")]
    NoDirectory,
    /// The path exists and is a symbolic link or not a directory.
    #[error("{0} is not a real directory: the body cache refuses it")]
    NotADirectory(PathBuf),
    /// The directory belongs to another user.
    #[error("{0} is owned by uid {1}, not by this user: the body cache refuses it")]
    NotOwned(PathBuf, u32),
    /// Creating or checking it failed.
    #[error("{0}: {1}")]
    Io(PathBuf, std::io::Error),
}

/// A body cache on the host (see the module documentation).
#[derive(Debug)]
pub struct HostCache {
    dir: PathBuf,
    max_bytes: u64,
    /// What this process believes the cache holds, in bytes (rescanned when it passes the
    /// bound: other processes write too).
    held: Arc<AtomicU64>,
    /// The list of the workspace this cache keeps bodies for (see [`Self::for_workspace`]),
    /// open for appending.
    listed: Option<Mutex<fs::File>>,
}

fn is_hash(h: &str) -> bool {
    h.len() == 64 && h.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// This process's effective uid: the owner of `/proc/self` on Linux, else of a file it creates
/// (the client crate forbids the unsafe `geteuid` call).
fn euid() -> std::io::Result<u32> {
    if let Ok(meta) = fs::metadata("/proc/self") {
        return Ok(meta.uid());
    }
    let probe = std::env::temp_dir().join(format!("supabash-uid-{}", uuid::Uuid::new_v4()));
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)?;
    let uid = fs::metadata(&probe)?.uid();
    let _ = fs::remove_file(&probe);
    Ok(uid)
}

/// Creates `dir` (mode 0700) when missing and checks it is a real directory of this user.
fn checked_dir(dir: &Path) -> Result<(), CacheError> {
    let io = |e| CacheError::Io(dir.to_owned(), e);
    match fs::symlink_metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if let Some(parent) = dir.parent() {
                fs::create_dir_all(parent).map_err(io)?;
            }
            match fs::DirBuilder::new().mode(0o700).create(dir) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(io(e)),
            }
        }
        Err(e) => return Err(io(e)),
        Ok(_) => {}
    }
    let meta = fs::symlink_metadata(dir).map_err(io)?;
    if !meta.file_type().is_dir() {
        return Err(CacheError::NotADirectory(dir.to_owned()));
    }
    if meta.uid() != euid().map_err(io)? {
        return Err(CacheError::NotOwned(dir.to_owned(), meta.uid()));
    }
    if meta.mode() & 0o077 != 0 {
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700)).map_err(io)?;
    }
    Ok(())
}

impl HostCache {
    /// The cache in `dir` (created 0700 when missing), bounded to `max_bytes`.
    pub fn open(dir: impl Into<PathBuf>, max_bytes: u64) -> Result<Self, CacheError> {
        let dir = dir.into();
        checked_dir(&dir)?;
        for sub in ["bodies", "tmp", "workspaces"] {
            checked_dir(&dir.join(sub))?;
        }
        let cache = HostCache {
            dir,
            max_bytes: max_bytes.max(1),
            held: Arc::new(AtomicU64::new(0)),
            listed: None,
        };
        cache.held.store(cache.scan().0, Ordering::Relaxed);
        Ok(cache)
    }

    /// The user's cache as the environment configures it: `None` when it is turned off
    /// (`SUPABASH_CACHE=off`); an error when its directory cannot be used safely.
    pub fn from_env() -> Result<Option<Self>, CacheError> {
        if std::env::var("SUPABASH_CACHE").is_ok_and(|v| v == "off" || v == "0") {
            return Ok(None);
        }
        let dir = match std::env::var_os("SUPABASH_CACHE_DIR") {
            Some(d) if !d.is_empty() => PathBuf::from(d),
            _ => match std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
                Some(d) => PathBuf::from(d).join("supabash"),
                None => PathBuf::from(std::env::var_os("HOME").ok_or(CacheError::NoDirectory)?)
                    .join(".cache/supabash"),
            },
        };
        let max = std::env::var("SUPABASH_CACHE_MAX_MB")
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
            .map_or(DEFAULT_MAX_BYTES, |mb| mb << 20);
        Self::open(dir, max).map(Some)
    }

    /// The same cache, keeping a list of the bodies it stores for workspace `workspace_id`
    /// (whose redaction epoch is now `redaction_epoch`). When the list was written at another
    /// epoch, every body on it is dropped first: a redaction happened since, and what it
    /// removed must not be served from here.
    pub fn for_workspace(
        &self,
        workspace_id: &str,
        redaction_epoch: i64,
    ) -> Result<HostCache, CacheError> {
        let at = self.dir.join("workspaces").join(workspace_id);
        let io = |e| CacheError::Io(at.clone(), e);
        if workspace_id.is_empty()
            || !workspace_id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        {
            return Err(io(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "not a workspace id",
            )));
        }
        let header = format!("epoch {redaction_epoch}");
        let listed = match fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&at)
        {
            Ok(file) => {
                let mut text = String::new();
                std::io::Read::read_to_string(&mut &file, &mut text).map_err(io)?;
                let mut lines = text.lines();
                if lines.next() == Some(header.as_str()) {
                    None
                } else {
                    Some(lines.map(str::to_owned).collect::<Vec<_>>())
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(Vec::new()),
            Err(e) => return Err(io(e)),
        };
        if let Some(stale) = listed {
            self.forget(&stale);
            self.write(&at, format!("{header}\n").as_bytes())
                .map_err(io)?;
        }
        let file = fs::OpenOptions::new()
            .append(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&at)
            .map_err(io)?;
        Ok(HostCache {
            dir: self.dir.clone(),
            max_bytes: self.max_bytes,
            held: self.held.clone(),
            listed: Some(Mutex::new(file)),
        })
    }

    /// Adds `hash` to the workspace's list (see [`Self::for_workspace`]).
    fn list(&self, hash: &str) {
        if let Some(file) = &self.listed {
            let mut file = file.lock().expect("cache list lock");
            let _ = file.write_all(format!("{hash}\n").as_bytes());
        }
    }

    /// The directory the cache lives in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path_of(&self, hash: &str) -> PathBuf {
        self.dir.join("bodies").join(&hash[..2]).join(hash)
    }

    /// The bytes whose SHA-256 is `hash`, when the cache holds them intact. A file whose bytes
    /// do not match is deleted (and `None` answered).
    pub fn get(&self, hash: &str) -> Option<Vec<u8>> {
        if !is_hash(hash) {
            return None;
        }
        let at = self.path_of(hash);
        let file = fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&at)
            .ok()?;
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut &file, &mut bytes).ok()?;
        if sha256_hex(&bytes) != hash {
            let _ = fs::remove_file(&at);
            return None;
        }
        // Recently used: eviction goes by modification time, refreshed at most once a
        // minute (a write to the file's metadata on every hit costs more than the read).
        let now = SystemTime::now();
        let stale = file
            .metadata()
            .and_then(|m| m.modified())
            .map_or(true, |t| {
                now.duration_since(t).unwrap_or_default() > TOUCH_EVERY
            });
        if stale {
            let _ = file.set_modified(now);
        }
        Some(bytes)
    }

    /// Whether the cache has a file for `hash` (not checked: [`Self::get`] checks).
    pub fn contains(&self, hash: &str) -> bool {
        is_hash(hash) && self.path_of(hash).exists()
    }

    /// Keeps `bytes` under their hash. Bytes whose hash is not `hash` are refused (nothing is
    /// written); a failure to write only costs a later fetch.
    pub fn put(&self, hash: &str, bytes: &[u8]) {
        if !is_hash(hash) || sha256_hex(bytes) != hash {
            return;
        }
        self.list(hash);
        let at = self.path_of(hash);
        if at.exists() {
            return;
        }
        if self.write(&at, bytes).is_ok() {
            let held = self.held.fetch_add(bytes.len() as u64, Ordering::Relaxed);
            if held + bytes.len() as u64 > self.max_bytes {
                self.evict();
            }
        }
    }

    fn write(&self, at: &Path, bytes: &[u8]) -> std::io::Result<()> {
        if let Some(parent) = at.parent() {
            fs::DirBuilder::new()
                .mode(0o700)
                .recursive(true)
                .create(parent)?;
        }
        let tmp = self.dir.join("tmp").join(format!(
            "{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        ));
        let written = (|| {
            let mut f = fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&tmp)?;
            f.write_all(bytes)?;
            fs::rename(&tmp, at)
        })();
        if written.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        written
    }

    /// Every body file: its total size, and (path, size, last use) of each.
    fn scan(&self) -> (u64, Vec<(PathBuf, u64, SystemTime)>) {
        let mut files = Vec::new();
        let mut total = 0;
        let Ok(shards) = fs::read_dir(self.dir.join("bodies")) else {
            return (0, files);
        };
        for shard in shards.flatten() {
            let Ok(entries) = fs::read_dir(shard.path()) else {
                continue;
            };
            for e in entries.flatten() {
                if let Ok(meta) = e.metadata() {
                    total += meta.len();
                    let used = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
                    files.push((e.path(), meta.len(), used));
                }
            }
        }
        (total, files)
    }

    /// Deletes the least recently used bodies until the cache is within 90% of its bound.
    pub fn evict(&self) {
        let (mut total, mut files) = self.scan();
        let target = self.max_bytes / 10 * 9;
        if total > self.max_bytes {
            files.sort_by_key(|(_, _, used)| *used);
            for (p, size, _) in files {
                if total <= target {
                    break;
                }
                if fs::remove_file(&p).is_ok() {
                    total -= size;
                }
            }
        }
        self.held.store(total, Ordering::Relaxed);
    }

    /// Forgets the bodies whose hashes are `hashes` (after a redaction removed them).
    pub fn forget(&self, hashes: &[String]) {
        for h in hashes.iter().filter(|h| is_hash(h)) {
            let _ = fs::remove_file(self.path_of(h));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp() -> PathBuf {
        std::env::temp_dir().join(format!("supabash-cache-test-{}", uuid::Uuid::new_v4()))
    }

    #[test]
    fn a_body_comes_back_only_while_its_bytes_match_its_hash() {
        let dir = temp();
        let cache = HostCache::open(&dir, 1 << 20).unwrap();
        let bytes = b"hello".to_vec();
        let hash = sha256_hex(&bytes);
        assert_eq!(cache.get(&hash), None);
        cache.put(&hash, &bytes);
        assert_eq!(cache.get(&hash), Some(bytes.clone()));
        // Bytes under the wrong hash are never kept.
        let other = sha256_hex(b"other");
        cache.put(&other, &bytes);
        assert_eq!(cache.get(&other), None);
        // A corrupted file is discarded, not served.
        fs::write(cache.path_of(&hash), b"tampered").unwrap();
        assert_eq!(cache.get(&hash), None);
        assert!(!cache.path_of(&hash).exists());
        let mode = fs::metadata(&dir).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o700);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_least_recently_used_bodies_go_first_past_the_bound() {
        let dir = temp();
        let cache = HostCache::open(&dir, 3000).unwrap();
        let bodies: Vec<Vec<u8>> = (0..4).map(|i| vec![b'a' + i as u8; 1000]).collect();
        let hashes: Vec<String> = bodies.iter().map(|b| sha256_hex(b)).collect();
        for (i, (h, b)) in hashes.iter().zip(&bodies).enumerate().take(3) {
            cache.put(h, b);
            let old = SystemTime::now() - std::time::Duration::from_secs(3600 - i as u64);
            fs::File::options()
                .write(true)
                .open(cache.path_of(h))
                .unwrap()
                .set_modified(old)
                .unwrap();
        }
        // Using the first makes the second the oldest.
        assert!(cache.get(&hashes[0]).is_some());
        cache.put(&hashes[3], &bodies[3]);
        assert!(cache.get(&hashes[1]).is_none(), "the oldest went");
        assert!(cache.get(&hashes[0]).is_some() && cache.get(&hashes[3]).is_some());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_moved_redaction_epoch_drops_what_the_workspace_listed() {
        let dir = temp();
        let cache = HostCache::open(&dir, 1 << 20).unwrap();
        let (mine, other) = (b"mine".to_vec(), b"other".to_vec());
        let (h_mine, h_other) = (sha256_hex(&mine), sha256_hex(&other));
        cache.put(&h_other, &other);
        let ws = "7c0d8e56-5a4e-4c8e-9d0b-0b5b3a1f2e11";
        cache.for_workspace(ws, 0).unwrap().put(&h_mine, &mine);
        // The same epoch: nothing goes.
        let again = cache.for_workspace(ws, 0).unwrap();
        assert_eq!(again.get(&h_mine), Some(mine.clone()));
        // Another workspace's epoch does not touch it.
        cache
            .for_workspace("00000000-0000-0000-0000-000000000000", 3)
            .unwrap();
        assert!(cache.contains(&h_mine));
        // A redaction happened: what the workspace listed goes, the rest stays.
        let moved = cache.for_workspace(ws, 1).unwrap();
        assert_eq!(moved.get(&h_mine), None);
        assert_eq!(cache.get(&h_other), Some(other));
        // The list starts again at the new epoch.
        moved.put(&h_mine, &mine);
        assert!(cache.for_workspace(ws, 1).unwrap().contains(&h_mine));
        assert!(cache.for_workspace("../escape", 0).is_err());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_link_or_a_file_in_place_of_the_directory_is_refused() {
        let dir = temp();
        fs::create_dir_all(&dir).unwrap();
        let file = dir.join("file");
        fs::write(&file, b"x").unwrap();
        assert!(matches!(
            HostCache::open(&file, 1),
            Err(CacheError::NotADirectory(_))
        ));
        let link = dir.join("link");
        std::os::unix::fs::symlink(&dir, &link).unwrap();
        assert!(matches!(
            HostCache::open(&link, 1),
            Err(CacheError::NotADirectory(_))
        ));
        fs::remove_dir_all(&dir).unwrap();
    }
}

//! The server key file HS256 capability secrets are derived from (setting
//! `supabash.capability_key_file`, read from postgresql.conf only: `PGC_SIGHUP`, shown to
//! superusers only). The file holds at least [`MIN_KEY_BYTES`] random bytes and must be a
//! regular file owned by the server's OS user (the owner of the data directory) with no
//! permission for group or others; anything else is refused every time the key is loaded, so
//! a file that was loosened later stops working at once. No SQL role reads the file through
//! the extension: the key and every secret derived from it stay inside the server process
//! (docs/capabilities.md, "HS256").

use pgrx::guc::{GucContext, GucFlags, GucRegistry, GucSetting};
use std::ffi::CString;
use std::os::unix::fs::MetadataExt;

/// The setting's name.
pub const SETTING: &str = "supabash.capability_key_file";

/// The fewest bytes a key file may hold (after trailing whitespace is dropped).
pub const MIN_KEY_BYTES: usize = 32;

static KEY_FILE: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(None);

/// Registers the setting (from `_PG_init`).
pub fn define() {
    GucRegistry::define_string_guc(
        c"supabash.capability_key_file",
        c"Server key file HS256 capability verifier secrets are derived from.",
        c"A file of at least 32 random bytes, owned by the server's OS user and readable by it alone (mode 0600 or 0400). Relative paths are read from the data directory. Unset, HS256 verifiers cannot be registered or used.",
        &KEY_FILE,
        GucContext::Sighup,
        GucFlags::SUPERUSER_ONLY,
    );
}

/// Why the key could not be loaded. The text says what to do; it names the file, so the
/// exchange logs it on the server instead of answering it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyFileError(pub String);

impl std::fmt::Display for KeyFileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

const HOW: &str = "create one with `head -c 32 /dev/urandom > $PGDATA/supabash-capability.key && chmod 600 $PGDATA/supabash-capability.key` as the server's OS user, set supabash.capability_key_file = 'supabash-capability.key' in postgresql.conf (or ALTER SYSTEM), then SELECT pg_reload_conf()";

/// The key, read from the configured file after checking who may read it.
pub fn load() -> Result<Vec<u8>, KeyFileError> {
    let path = KEY_FILE
        .get()
        .and_then(|p| p.into_string().ok())
        .filter(|p| !p.trim().is_empty())
        .ok_or_else(|| {
            KeyFileError(format!(
                "HS256 capabilities need a server key file and {SETTING} is not set: {HOW}"
            ))
        })?;
    read_checked(std::path::Path::new(&path))
}

/// Reads `path` as a key file: a regular file of the data directory's owner, no permission
/// for group or others, at least [`MIN_KEY_BYTES`] bytes once trailing whitespace is dropped.
pub fn read_checked(path: &std::path::Path) -> Result<Vec<u8>, KeyFileError> {
    let shown = path.display();
    let meta = std::fs::metadata(path).map_err(|e| {
        KeyFileError(format!(
            "the key file {shown} named by {SETTING} cannot be read ({e}): {HOW}"
        ))
    })?;
    // The server runs in its data directory, which PostgreSQL requires its OS user to own.
    let server_uid = std::fs::metadata(".")
        .map_err(|e| KeyFileError(format!("the data directory cannot be read ({e})")))?
        .uid();
    if !meta.is_file() {
        return Err(KeyFileError(format!(
            "the key file {shown} named by {SETTING} is not a regular file"
        )));
    }
    if meta.uid() != server_uid {
        return Err(KeyFileError(format!(
            "the key file {shown} named by {SETTING} is not owned by the server's OS user: chown it to that user"
        )));
    }
    if meta.mode() & 0o077 != 0 {
        return Err(KeyFileError(format!(
            "the key file {shown} named by {SETTING} is readable or writable by others (mode {:o}): chmod 600 it",
            meta.mode() & 0o777
        )));
    }
    let mut key = std::fs::read(path).map_err(|e| {
        KeyFileError(format!(
            "the key file {shown} named by {SETTING} cannot be read ({e})"
        ))
    })?;
    while key.last().is_some_and(u8::is_ascii_whitespace) {
        key.pop();
    }
    if key.len() < MIN_KEY_BYTES {
        return Err(KeyFileError(format!(
            "the key file {shown} named by {SETTING} holds {} bytes, fewer than {MIN_KEY_BYTES}: {HOW}",
            key.len()
        )));
    }
    Ok(key)
}

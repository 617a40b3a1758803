//! Reading an HTTP answer's body with a cap: every body the client reads from the network
//! (PostgREST, Storage, the key set, Supabase Auth) goes through [`read_capped`], which refuses
//! a `Content-Length` past the cap before reading anything and otherwise reads the body chunk
//! by chunk, stopping as soon as it passes the cap: never an unbounded buffer.

/// The default cap of one PostgREST or Storage answer: 256 MiB. It holds the largest answer a
/// workspace within the database's ceilings gives: a file body at the 64 MiB body ceiling as
/// base64 (about 86 MiB) or as JSON text with ordinary escaping, a Storage object of that size,
/// or a manifest of about a million files (a manifest entry is a few hundred bytes).
pub const DEFAULT_MAX_ANSWER_BYTES: usize = 256 * 1024 * 1024;

/// The largest cap an answer setting accepts: 4 GiB (saturating where `usize` is narrower).
pub const MAX_ANSWER_BYTES: usize = if (4u64 << 30) > usize::MAX as u64 {
    usize::MAX
} else {
    (4u64 << 30) as usize
};

/// Why a capped body was not read.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// The connection failed while the body was read.
    Transport(reqwest::Error),
    /// The body is longer than the cap (as `Content-Length` declared it, or as read so far).
    TooLarge { limit: usize },
}

/// The body of `response`, at most `limit` bytes.
pub(crate) async fn read_capped(
    mut response: reqwest::Response,
    limit: usize,
) -> Result<Vec<u8>, ReadError> {
    let declared = response.content_length();
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(ReadError::TooLarge { limit });
    }
    let mut body = Vec::with_capacity(declared.map_or(0, |n| n as usize));
    while let Some(chunk) = response.chunk().await.map_err(ReadError::Transport)? {
        if chunk.len() > limit - body.len() {
            return Err(ReadError::TooLarge { limit });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The message of an answer past its cap: what, the cap, and the setting that raises it.
pub(crate) fn too_large(what: &str, limit: usize, setting: &str) -> String {
    format!(
        "{what} is larger than {limit} bytes, the limit of one answer (raise it with {setting})"
    )
}

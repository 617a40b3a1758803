//! Stored files as the RPCs return them, and their verification: the client re-renders every
//! body it receives with the shared renderer and checks the content hash and size the server
//! recorded. A mismatch is `HISTORY_CORRUPTION`.

use crate::error::{Result, SupabashError};
use serde_json::Value;
use supabash_core::document::{metadata_from_json, render};
use supabash_core::hash::sha256_hex;
use supabash_core::posix::Kind;
use supabash_core::rpc::File;
use supabash_core::ErrorCode;

/// One stored file: rendered content hash and size, body hash and size, metadata, and the body
/// when the RPC sent it.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredFile {
    pub path: String,
    pub content_hash: String,
    pub size: u64,
    pub body_hash: String,
    pub body_size: u64,
    pub metadata: Value,
    pub body: Option<Vec<u8>>,
    /// What the entry is (a link's body is its target, a directory has none), its permission
    /// bits and modification time (nanoseconds; `None` from a database before 0.6.0).
    pub kind: Kind,
    pub mode: u32,
    pub mtime_ns: Option<i64>,
}

fn corrupt(path: &str, what: impl Into<String>) -> SupabashError {
    SupabashError::new(ErrorCode::HistoryCorruption, what).with_path(path)
}

/// The error for reading a version that redaction removed.
pub(crate) fn redacted(path: &str) -> SupabashError {
    SupabashError::new(
        ErrorCode::Redacted,
        "this version was redacted: its content is gone",
    )
    .with_path(path)
}

impl TryFrom<File> for StoredFile {
    type Error = SupabashError;

    /// A file as an RPC answered it; its body, when sent, decoded from the wire encoding. A
    /// tombstone (a version redaction removed) is `REDACTED`: there is nothing to read.
    fn try_from(f: File) -> Result<Self> {
        if f.redacted {
            return Err(redacted(&f.path));
        }
        let body = f.body().map_err(|e| corrupt(&f.path, e))?;
        let size = |n: i64, what: &str| {
            u64::try_from(n).map_err(|_| corrupt(&f.path, format!("negative {what}")))
        };
        Ok(StoredFile {
            size: size(f.size, "size")?,
            body_size: size(f.body_size, "body size")?,
            content_hash: f.content_hash,
            body_hash: f.body_hash,
            metadata: f.metadata,
            body,
            kind: f.kind,
            mode: f.mode,
            mtime_ns: f.mtime_ns,
            path: f.path,
        })
    }
}

impl StoredFile {
    /// The rendered bytes a shell sees, after checking them against the recorded hashes and
    /// sizes (and `expected`, the content hash and size the caller pinned, when given).
    pub fn verified(&self, expected: Option<(&str, u64)>) -> Result<Vec<u8>> {
        let path = &self.path;
        let body = self
            .body
            .as_ref()
            .ok_or_else(|| corrupt(path, "the server sent no body"))?;
        if body.len() as u64 != self.body_size || sha256_hex(body) != self.body_hash {
            return Err(corrupt(
                path,
                "body bytes do not match their recorded hash or size",
            ));
        }
        let metadata = if self.metadata.is_null() {
            Default::default()
        } else {
            metadata_from_json(&self.metadata)
                .map_err(|e| corrupt(path, format!("stored metadata is invalid: {e}")))?
        };
        let rendered = render(body, &metadata);
        if rendered.len() as u64 != self.size || sha256_hex(&rendered) != self.content_hash {
            return Err(corrupt(
                path,
                "rendered content does not match its recorded hash or size",
            ));
        }
        if let Some((hash, size)) = expected {
            if hash != self.content_hash || size != self.size {
                return Err(corrupt(
                    path,
                    "the stored file differs from the pinned manifest",
                ));
            }
        }
        Ok(rendered)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn stored(text: &str) -> Value {
        json!({"path": "/a", "contentHash": sha256_hex(text.as_bytes()), "size": text.len(),
               "bodyHash": sha256_hex(text.as_bytes()), "bodySize": text.len(), "metadata": {}, "text": text})
    }

    fn from_json(v: &Value) -> Result<StoredFile> {
        StoredFile::try_from(serde_json::from_value::<File>(v.clone()).unwrap())
    }

    #[test]
    fn verifies_and_detects_tampering() {
        let f = from_json(&stored("hello")).unwrap();
        assert_eq!(f.verified(None).unwrap(), b"hello");
        let mut v = stored("hello");
        v["text"] = json!("hellO");
        let e = from_json(&v).unwrap().verified(None).unwrap_err();
        assert_eq!(e.code, ErrorCode::HistoryCorruption);
        let e = f.verified(Some(("00", 5))).unwrap_err();
        assert_eq!(e.code, ErrorCode::HistoryCorruption);
    }

    #[test]
    fn renders_metadata() {
        let body = "b\n";
        let rendered = "---\nt: 1\n---\nb\n";
        let v = json!({"path": "/a", "contentHash": sha256_hex(rendered.as_bytes()), "size": rendered.len(),
                      "bodyHash": sha256_hex(body.as_bytes()), "bodySize": body.len(), "metadata": {"t": 1}, "text": body});
        assert_eq!(
            from_json(&v).unwrap().verified(None).unwrap(),
            rendered.as_bytes()
        );
    }
}

//! The revision pack: one object per commit, `revisions/<rev>.pack`, holding the small bodies
//! the commit adds and, after them, its revision header (receipt and manifest delta, JSON):
//!
//! ```text
//! "SBPACK01" | body … body | header | header length (u64, big-endian)
//! ```
//!
//! Bodies come first so that their offsets are known before the header that lists them is
//! written. A reader that knows the header's [`Span`] (the head and every child header record
//! their parent's) reads it with one range request and checks its SHA-256; one that does not
//! reads the whole object and finds the header from the trailing length. Bodies are read by
//! range and verified against the entry's own SHA-256 by the staged tree.

use serde::{Deserialize, Serialize};
use supabash_core::hash::sha256_hex;

/// The first eight bytes of every pack.
pub const MAGIC: &[u8; 8] = b"SBPACK01";

/// Where a pack's header lies, and its SHA-256.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Span {
    pub offset: u64,
    pub len: u64,
    pub sha256: String,
}

/// Why bytes are not a pack (or a header not what its span says).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PackError {
    /// Too short, or the magic or trailing length is wrong.
    Malformed(&'static str),
    /// The header's bytes do not have the SHA-256 their span records.
    HashMismatch,
}

impl std::fmt::Display for PackError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PackError::Malformed(why) => write!(f, "not a revision pack: {why}"),
            PackError::HashMismatch => f.write_str("the pack header fails its SHA-256"),
        }
    }
}

/// Builds a pack: bodies first, then the header.
pub struct Builder {
    bytes: Vec<u8>,
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            bytes: MAGIC.to_vec(),
        }
    }
}

impl Builder {
    /// Appends a body; answers its offset and size in the pack.
    pub fn add(&mut self, body: &[u8]) -> (u64, u64) {
        let offset = self.bytes.len() as u64;
        self.bytes.extend_from_slice(body);
        (offset, body.len() as u64)
    }

    /// Bytes so far (magic and bodies).
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Whether no body was added.
    pub fn is_empty(&self) -> bool {
        self.bytes.len() == MAGIC.len()
    }

    /// The pack with `header` after the bodies, and the header's span.
    pub fn finish(mut self, header: &[u8]) -> (Vec<u8>, Span) {
        let span = Span {
            offset: self.bytes.len() as u64,
            len: header.len() as u64,
            sha256: sha256_hex(header),
        };
        self.bytes.extend_from_slice(header);
        self.bytes
            .extend_from_slice(&(header.len() as u64).to_be_bytes());
        (self.bytes, span)
    }
}

/// The header of a whole pack.
pub fn header_of(pack: &[u8]) -> Result<&[u8], PackError> {
    if pack.len() < MAGIC.len() + 8 || &pack[..MAGIC.len()] != MAGIC {
        return Err(PackError::Malformed("no magic"));
    }
    let end = pack.len() - 8;
    let len = u64::from_be_bytes(pack[end..].try_into().expect("8 bytes"));
    let start = usize::try_from(len)
        .ok()
        .and_then(|l| end.checked_sub(l))
        .filter(|s| *s >= MAGIC.len())
        .ok_or(PackError::Malformed("the header length passes the pack"))?;
    Ok(&pack[start..end])
}

/// Checks header bytes read by range against their span.
pub fn check_header(bytes: &[u8], span: &Span) -> Result<(), PackError> {
    if bytes.len() as u64 != span.len {
        return Err(PackError::Malformed("the header has the wrong length"));
    }
    if sha256_hex(bytes) != span.sha256 {
        return Err(PackError::HashMismatch);
    }
    Ok(())
}

/// The body at `offset` of `size` bytes in a whole pack.
pub fn body_at(pack: &[u8], offset: u64, size: u64) -> Result<&[u8], PackError> {
    let start = usize::try_from(offset).map_err(|_| PackError::Malformed("offset"))?;
    let len = usize::try_from(size).map_err(|_| PackError::Malformed("size"))?;
    if start < MAGIC.len() {
        return Err(PackError::Malformed("a body offset inside the magic"));
    }
    start
        .checked_add(len)
        .and_then(|end| pack.get(start..end))
        .ok_or(PackError::Malformed("a body passes the pack"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Bodies and the header come back from a pack; the span reads the header.
        #[test]
        fn packs_round_trip(
            bodies in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 0..8),
            header in proptest::collection::vec(any::<u8>(), 0..200),
        ) {
            let mut b = Builder::default();
            let at: Vec<(u64, u64)> = bodies.iter().map(|x| b.add(x)).collect();
            prop_assert_eq!(b.is_empty(), bodies.iter().all(Vec::is_empty));
            let (pack, span) = b.finish(&header);
            prop_assert_eq!(header_of(&pack).unwrap(), &header[..]);
            let s = span.offset as usize;
            let read = &pack[s..s + span.len as usize];
            prop_assert_eq!(check_header(read, &span), Ok(()));
            for (body, (o, n)) in bodies.iter().zip(at) {
                prop_assert_eq!(body_at(&pack, o, n).unwrap(), &body[..]);
            }
        }

        /// Any bytes: parsing never panics; a changed header byte fails its hash.
        #[test]
        fn damaged_packs_are_errors(
            bytes in proptest::collection::vec(any::<u8>(), 0..64),
            flip in any::<usize>(),
            offset in any::<u64>(),
            size in 0u64..100,
        ) {
            let _ = header_of(&bytes);
            let _ = body_at(&bytes, offset, size);
            let (pack, span) = Builder::default().finish(b"{\"h\":1}");
            let mut header = header_of(&pack).unwrap().to_vec();
            let i = flip % header.len();
            header[i] ^= 0x01;
            prop_assert_eq!(check_header(&header, &span), Err(PackError::HashMismatch));
        }
    }

    #[test]
    fn short_and_foreign_bytes_are_not_packs() {
        assert!(header_of(b"SBPACK01").is_err());
        assert!(header_of(b"{\"revision\":\"x\"}0000000").is_err());
        let mut pack = Builder::default().finish(b"hdr").0;
        let n = pack.len();
        pack[n - 1] = 200; // a header longer than the pack
        assert_eq!(
            header_of(&pack),
            Err(PackError::Malformed("the header length passes the pack"))
        );
        assert!(body_at(&pack, 0, 1).is_err());
    }
}

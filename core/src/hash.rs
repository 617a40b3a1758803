//! Content hashing: lowercase hex SHA-256, computed by whoever stores the bytes.

use sha2::{Digest, Sha256};

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Raw SHA-256 of `bytes`.
pub fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// Appends the lowercase hex of `bytes` to `out`, as `hex::encode` writes it, from a table of
/// digits: a manifest encodes two hashes per file, and `hex::encode` collects them a `char` at
/// a time (the largest cost of the extension's own code in a 10,000-file manifest, by `perf`).
pub fn push_hex(out: &mut Vec<u8>, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    out.extend(
        bytes
            .iter()
            .flat_map(|b| [DIGITS[usize::from(b >> 4)], DIGITS[usize::from(b & 0x0f)]]),
    );
}

/// Lowercase hex of `bytes` ([`push_hex`]).
pub fn hex_lower(bytes: &[u8]) -> String {
    let mut out = Vec::with_capacity(bytes.len() * 2);
    push_hex(&mut out, bytes);
    String::from_utf8(out).expect("hex digits are ASCII")
}

/// True when `s` is 64 lowercase hex digits.
pub fn is_hex64(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The table encoder writes what `hex::encode` writes, for any bytes.
        #[test]
        fn hex_lower_is_hex_encode(bytes in proptest::collection::vec(any::<u8>(), 0..80)) {
            prop_assert_eq!(hex_lower(&bytes), hex::encode(&bytes));
        }
    }

    #[test]
    fn known_vector() {
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert!(is_hex64(&sha256_hex(b"abc")));
        assert!(!is_hex64("E3B0"));
    }
}

//! Bodies at rest. `supabash.bodies.body` holds one codec byte and the payload: `0` the bytes
//! as they are, `1` a zstd frame of them (level `LEVEL`), kept only when it is smaller. The
//! column is `STORAGE EXTERNAL`, so PostgreSQL does not compress again: zstd is several times
//! faster than PostgreSQL's pglz and compresses text better. Only this module reads or writes
//! the stored form; `size` and `hash` always describe the plain bytes.

use crate::fail::{Fail, Outcome};
use supabash_core::Marker;

const PLAIN: u8 = 0;
const ZSTD: u8 = 1;
/// Bodies shorter than this are stored plain (a frame would not pay for itself).
const MIN_COMPRESSED: usize = 64;
/// zstd level: 3 (zstd's default) compresses text about a tenth better than 1 at a fraction
/// of pglz's cost.
const LEVEL: i32 = 3;
/// The largest body this store holds; decoding refuses to inflate past it.
const MAX_BODY: usize = supabash_core::limits::MAX_BODY_BYTES;

/// The stored form of `body`.
pub fn encode(body: &[u8]) -> Vec<u8> {
    if body.len() >= MIN_COMPRESSED {
        if let Ok(frame) = zstd::bulk::compress(body, LEVEL) {
            if frame.len() + 1 < body.len() {
                let mut out = Vec::with_capacity(frame.len() + 1);
                out.push(ZSTD);
                out.extend_from_slice(&frame);
                return out;
            }
        }
    }
    let mut out = Vec::with_capacity(body.len() + 1);
    out.push(PLAIN);
    out.extend_from_slice(body);
    out
}

/// The plain bytes of a stored body.
pub fn decode(stored: &[u8]) -> Outcome<Vec<u8>> {
    let corrupt = || Fail::new(Marker::HistoryCorruption, "a stored body is unreadable");
    match stored.split_first() {
        Some((&PLAIN, rest)) => Ok(rest.to_vec()),
        Some((&ZSTD, frame)) => zstd::bulk::decompress(frame, MAX_BODY).map_err(|_| corrupt()),
        _ => Err(corrupt()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn round_trips(body in proptest::collection::vec(any::<u8>(), 0..4096), text in "[a-z ]{0,3000}") {
            prop_assert_eq!(decode(&encode(&body)).ok(), Some(body));
            prop_assert_eq!(decode(&encode(text.as_bytes())).ok(), Some(text.into_bytes()));
        }

        #[test]
        fn decode_never_panics(stored in proptest::collection::vec(any::<u8>(), 0..512)) {
            let _ = decode(&stored);
        }
    }

    #[test]
    fn compresses_text_and_keeps_small_or_random_bodies_plain() {
        let text = "the agent edits the workspace and the host commits it. ".repeat(100);
        let stored = encode(text.as_bytes());
        assert_eq!(stored[0], ZSTD);
        assert!(stored.len() < text.len() / 4);
        assert_eq!(encode(b"short")[0], PLAIN);
        let noise: Vec<u8> = (0..4096u32)
            .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
            .collect();
        let stored = encode(&noise);
        assert!(stored.len() <= noise.len() + 1);
        assert!(decode(&[7, 1, 2]).is_err() && decode(&[]).is_err());
    }
}

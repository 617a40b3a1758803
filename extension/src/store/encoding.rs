//! The byte format of bodies at rest. `supabash.bodies.body` holds one codec byte and the payload: `0` the bytes
//! as they are, `1` a zstd frame of them (level `LEVEL`), `2` a zstd frame compressed against
//! the plain bytes of another body of the workspace (`bodies.base_hash`, the file's previous
//! version) as a prefix, so an edit costs about what it changed. The smallest form wins (a
//! delta must also pay for naming its base). The column is `STORAGE EXTERNAL`, so PostgreSQL
//! does not compress again: zstd is several times faster than PostgreSQL's pglz and
//! compresses text better. Only this module reads or writes the stored form; `size` and
//! `hash` always describe the plain bytes.

use crate::pg::fail::{Fail, Outcome};
use crate::pg::interrupt;
use std::cell::RefCell;
use supabash_core::Marker;
use zstd::zstd_safe::{
    zstd_sys::ZSTD_EndDirective, CCtx, CParameter, DCtx, InBuffer, OutBuffer, ResetDirective,
};

const PLAIN: u8 = 0;
const ZSTD: u8 = 1;
const DELTA: u8 = 2;
/// Bodies shorter than this are stored plain (a frame would not pay for itself).
const MIN_COMPRESSED: usize = 64;
/// zstd level: 3 (zstd's default) compresses text about a tenth better than 1 at a fraction
/// of pglz's cost.
const LEVEL: i32 = 3;
/// The largest body this store holds; decoding refuses to inflate past it.
const MAX_BODY: usize = supabash_core::limits::MAX_BODY_BYTES;
/// What naming a delta's base costs in its row (`bodies.base_hash`, 33 bytes, aligned): a
/// delta must save more than this to be chosen.
const BASE_REFERENCE: usize = 40;
/// Deltas are tried only when the body and its base are both at most this large, which
/// bounds the extra work of a commit (one more frame) and of a read (the base's bytes).
pub const MAX_DELTA_BODY: usize = 1 << 20;
/// Plain bytes compressed or decoded per library call for a larger whole body (with an
/// interrupt check between calls); deltas are never larger than this.
const STEP: usize = interrupt::EVERY as usize;

fn framed(codec: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + 1);
    out.push(codec);
    out.extend_from_slice(payload);
    out
}

fn corrupt() -> Fail {
    Fail::new(Marker::HistoryCorruption, "a stored body is unreadable")
}

thread_local! {
    /// One zstd encoder per backend, reused by every body it stores: creating an encoder
    /// context costs about as much as compressing a 4 KiB body.
    static ENCODER: RefCell<Option<CCtx<'static>>> = const { RefCell::new(None) };
}

/// `prefix` with its lifetime extended, for a context of this module that forgets it before
/// the function handing it over returns (see [`with_encoder`], [`delta_decode`]).
///
/// SAFETY (callers): the context is reset (which drops the reference) before `prefix` can go.
unsafe fn extended(prefix: &[u8]) -> &'static [u8] {
    std::slice::from_raw_parts(prefix.as_ptr(), prefix.len())
}

/// Runs `f` on the backend's encoder, reset before and after (no parameter or prefix of one
/// use reaches the next).
fn with_encoder<T>(f: impl FnOnce(&mut CCtx<'static>) -> Option<T>) -> Option<T> {
    ENCODER.with(|cell| {
        let mut cell = cell.borrow_mut();
        if cell.is_none() {
            *cell = CCtx::try_create();
        }
        let cctx = cell.as_mut()?;
        cctx.reset(ResetDirective::SessionAndParameters).ok()?;
        let out = f(cctx);
        let reset = cctx.reset(ResetDirective::SessionAndParameters);
        if reset.is_err() {
            // A context that cannot be reset is not used again.
            *cell = None;
            return None;
        }
        out
    })
}

/// A zstd frame of `body` at level `LEVEL`. A body longer than [`STEP`] is fed to the encoder
/// a step at a time with an interrupt check after each, so a cancel stops a 64 MiB compression
/// within milliseconds; the frame is the same format (its header declares the size).
fn whole(body: &[u8]) -> Option<Vec<u8>> {
    with_encoder(|cctx| {
        let mut out = Vec::with_capacity(zstd::zstd_safe::compress_bound(body.len()));
        if body.len() <= STEP {
            cctx.compress(&mut out, body, LEVEL).ok()?;
            return Some(out);
        }
        cctx.set_parameter(CParameter::CompressionLevel(LEVEL))
            .ok()?;
        cctx.set_pledged_src_size(Some(body.len() as u64)).ok()?;
        for (i, part) in body.chunks(STEP).enumerate() {
            let last = (i + 1) * STEP >= body.len();
            let end = if last {
                ZSTD_EndDirective::ZSTD_e_end
            } else {
                ZSTD_EndDirective::ZSTD_e_continue
            };
            let mut input = InBuffer::around(part);
            loop {
                if out.len() == out.capacity() {
                    out.reserve(ZSTD_BLOCK);
                }
                let at = out.len();
                let mut output = OutBuffer::around_pos(&mut out, at);
                let left = cctx.compress_stream2(&mut output, &mut input, end).ok()?;
                let finished = if last {
                    left == 0
                } else {
                    input.pos() == part.len()
                };
                if finished {
                    break;
                }
            }
            interrupt::tick(part.len() as u64 * 3);
        }
        Some(out)
    })
}

/// A zstd frame of `body` compressed against `prefix` (zstd's "reference prefix": the frame
/// may copy from it, and only a decoder given the same prefix can read it).
fn delta_frame(body: &[u8], prefix: &[u8]) -> Option<Vec<u8>> {
    with_encoder(|cctx| {
        cctx.set_parameter(CParameter::CompressionLevel(LEVEL))
            .ok()?;
        // SAFETY: `with_encoder` resets the context before returning.
        cctx.ref_prefix(unsafe { extended(prefix) }).ok()?;
        let mut out = Vec::with_capacity(zstd::zstd_safe::compress_bound(body.len()));
        cctx.compress2(&mut out, body).ok()?;
        Some(out)
    })
}

/// The stored form of `body`, and whether it is a delta against `base` (the plain bytes of
/// the body named by `base_hash`; give one only when both are at most `MAX_DELTA_BODY`).
pub fn encode(body: &[u8], base: Option<&[u8]>) -> (Vec<u8>, bool) {
    // A cancel waiting since the last body stops the call before this one; compression and
    // delta encoding run one body per library call (about 3 ns a byte).
    interrupt::tick(body.len() as u64 * 3);
    if body.len() < MIN_COMPRESSED {
        return (framed(PLAIN, body), false);
    }
    let mut best = match whole(body) {
        Some(frame) if frame.len() < body.len() => framed(ZSTD, &frame),
        _ => framed(PLAIN, body),
    };
    if let Some(frame) = base.and_then(|base| delta_frame(body, base)) {
        if frame.len() + 1 + BASE_REFERENCE < best.len() {
            best = framed(DELTA, &frame);
        }
    }
    let delta = best[0] == DELTA;
    (best, delta)
}

/// Whether a stored body is a delta, whose decoding needs its base's plain bytes.
pub fn is_delta(stored: &[u8]) -> bool {
    stored.first() == Some(&DELTA)
}

/// The plain bytes of a stored body; `base` is the plain bytes of its base when it is a delta.
pub fn decode(stored: &[u8], base: Option<&[u8]>) -> Outcome<Vec<u8>> {
    interrupt::tick(stored.len() as u64 + base.map_or(0, <[u8]>::len) as u64);
    match (stored.split_first(), base) {
        (Some((&PLAIN, rest)), _) => Ok(rest.to_vec()),
        (Some((&ZSTD, frame)), _) => whole_frame(frame),
        (Some((&DELTA, frame)), Some(base)) => {
            let size = match zstd::zstd_safe::get_frame_content_size(frame) {
                Ok(Some(n)) if n as usize <= MAX_BODY => n as usize,
                _ => return Err(corrupt()),
            };
            delta_decode(frame, base, size)
        }
        _ => Err(corrupt()),
    }
}

/// The plain bytes (`size` of them, as the frame declares) of a delta frame against `base`,
/// on the backend's decoder, reset before and after so the base is forgotten.
fn delta_decode(frame: &[u8], base: &[u8], size: usize) -> Outcome<Vec<u8>> {
    with_decoder(|dctx| {
        dctx.reset(ResetDirective::SessionAndParameters)
            .map_err(|_| corrupt())?;
        let mut out = Vec::with_capacity(size);
        // SAFETY: the context is reset below, before `base` can go.
        let done = dctx
            .ref_prefix(unsafe { extended(base) })
            .and_then(|_| dctx.decompress(&mut out, frame));
        dctx.reset(ResetDirective::SessionAndParameters)
            .map_err(|_| corrupt())?;
        done.map_err(|_| corrupt())?;
        Ok(out)
    })
}

/// Runs `f` on the backend's decoder (created the first time).
fn with_decoder<T>(f: impl FnOnce(&mut DCtx<'static>) -> Outcome<T>) -> Outcome<T> {
    DECODER.with(|cell| {
        let mut cell = cell.borrow_mut();
        if cell.is_none() {
            *cell = DCtx::try_create();
        }
        let out = f(cell.as_mut().ok_or_else(corrupt)?);
        if out.is_err() {
            // After a failure the context is not trusted again (a reset that failed could
            // leave a base referenced).
            *cell = None;
        }
        out
    })
}

thread_local! {
    /// One zstd decoder per backend, reused by every frame it decodes (a snapshot decodes
    /// thousands, a commit the chain under an edited file): creating a decoder context costs
    /// more than decoding a small body.
    static DECODER: RefCell<Option<DCtx<'static>>> = const { RefCell::new(None) };
}

/// The plain bytes of a whole zstd frame, decoded once into a buffer of exactly the size its
/// header declares (every frame `encode` writes declares it).
fn whole_frame(frame: &[u8]) -> Outcome<Vec<u8>> {
    let size = match zstd::zstd_safe::get_frame_content_size(frame) {
        Ok(Some(n)) if n as usize <= MAX_BODY => n as usize,
        Ok(None) => return zstd::bulk::decompress(frame, MAX_BODY).map_err(|_| corrupt()),
        _ => return Err(corrupt()),
    };
    if size > STEP {
        return with_decoder(|dctx| stepped_frame(dctx, frame, size));
    }
    let mut out = Vec::with_capacity(size);
    // ZSTD_decompressDCtx starts every frame afresh, whatever the previous one left (a delta's
    // base is forgotten by the reset after it).
    with_decoder(|dctx| dctx.decompress(&mut out, frame).map_err(|_| corrupt()))?;
    if out.len() != size {
        return Err(corrupt());
    }
    Ok(out)
}

/// The `size` plain bytes of a whole frame larger than [`STEP`], decoded at most a step at a
/// time with an interrupt check after each: one frame of 64 MiB would otherwise hold the
/// backend for about 0.1 s whatever a cancel asks. The frame must end exactly at `size`.
fn stepped_frame(dctx: &mut DCtx<'static>, frame: &[u8], size: usize) -> Outcome<Vec<u8>> {
    dctx.reset(ResetDirective::SessionOnly)
        .map_err(|_| corrupt())?;
    let mut out = vec![0u8; size];
    let mut input = InBuffer::around(frame);
    let mut at = 0;
    let mut left = 1;
    while at < size {
        let end = size.min(at + STEP);
        let mut output = OutBuffer::around(&mut out[at..end]);
        left = dctx
            .decompress_stream(&mut output, &mut input)
            .map_err(|_| corrupt())?;
        let n = output.pos();
        if n == 0 && (left == 0 || input.pos() == frame.len()) {
            return Err(corrupt());
        }
        at += n;
        interrupt::tick(n as u64);
    }
    if left != 0 {
        // The frame holds more than its header declared, or its end is still buffered.
        let mut spare = [0u8; 1];
        let mut output = OutBuffer::around(&mut spare[..]);
        left = dctx
            .decompress_stream(&mut output, &mut input)
            .map_err(|_| corrupt())?;
        if left != 0 || output.pos() != 0 {
            return Err(corrupt());
        }
    }
    if input.pos() != frame.len() {
        return Err(corrupt());
    }
    Ok(out)
}

/// The largest block of plain bytes a zstd frame holds, and what a block costs at most stored.
const ZSTD_BLOCK: usize = 128 * 1024;
const ZSTD_BLOCK_STORED: usize = ZSTD_BLOCK + 3;
/// The largest zstd frame header.
const ZSTD_HEADER: usize = 18;

/// How many leading bytes of a whole (not delta) stored body suffice to decode its first `max`
/// plain bytes: the codec byte, the frame header, and every block that starts before `max`
/// (a stored block is at most 3 bytes larger than its plain bytes, and holds at most 128 KiB).
pub const fn prefix_needed(max: usize) -> usize {
    1 + ZSTD_HEADER + max + 2 * ZSTD_BLOCK_STORED
}

fn zstd_reader(frame: &[u8]) -> Outcome<zstd::stream::read::Decoder<'_, &[u8]>> {
    zstd::stream::read::Decoder::with_buffer(frame).map_err(|_| corrupt())
}

/// The first `max` plain bytes of a whole stored body, from at least its first
/// [`prefix_needed`]`(max)` stored bytes (or all of them), without decoding the rest.
pub fn decode_prefix(stored: &[u8], max: usize) -> Outcome<Vec<u8>> {
    use std::io::Read;
    match stored.split_first() {
        Some((&PLAIN, rest)) => Ok(rest[..rest.len().min(max)].to_vec()),
        Some((&ZSTD, frame)) => {
            let mut out = Vec::with_capacity(max.min(MAX_BODY));
            zstd_reader(frame)?
                .take(max as u64)
                .read_to_end(&mut out)
                .map_err(|_| corrupt())?;
            Ok(out)
        }
        _ => Err(corrupt()),
    }
}

/// Whether a whole stored body holds exactly `expected`, decoded a block at a time (never the
/// whole body at once); `None` for a delta, whose base must be decoded first.
pub fn same_bytes(stored: &[u8], expected: &[u8]) -> Outcome<Option<bool>> {
    use std::io::Read;
    match stored.split_first() {
        Some((&PLAIN, rest)) => Ok(Some(rest == expected)),
        Some((&ZSTD, frame)) => {
            let mut reader = zstd_reader(frame)?;
            let mut chunk = vec![0u8; ZSTD_BLOCK];
            let mut at = 0;
            loop {
                let n = reader.read(&mut chunk).map_err(|_| corrupt())?;
                interrupt::tick(n as u64);
                if n == 0 {
                    return Ok(Some(at == expected.len()));
                }
                if expected.get(at..at + n) != Some(&chunk[..n]) {
                    return Ok(Some(false));
                }
                at += n;
            }
        }
        Some((&DELTA, _)) => Ok(None),
        _ => Err(corrupt()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn round_trip(body: &[u8], base: Option<&[u8]>) -> Option<Vec<u8>> {
        let (stored, delta) = encode(body, base);
        assert_eq!(delta, is_delta(&stored));
        decode(&stored, if delta { base } else { None }).ok()
    }

    proptest! {
        #[test]
        fn round_trips(body in proptest::collection::vec(any::<u8>(), 0..4096), text in "[a-z ]{0,3000}") {
            prop_assert_eq!(round_trip(&body, None), Some(body.clone()));
            prop_assert_eq!(round_trip(text.as_bytes(), None), Some(text.clone().into_bytes()));
            prop_assert_eq!(round_trip(text.as_bytes(), Some(&body)), Some(text.clone().into_bytes()));
            prop_assert_eq!(round_trip(&body, Some(text.as_bytes())), Some(body));
        }

        #[test]
        fn edits_store_as_deltas(text in "[a-z ]{200,3000}", at in any::<prop::sample::Index>(), insert in "[A-Z]{1,20}") {
            let mut edited = text.clone();
            edited.insert_str(at.index(text.len()), &insert);
            let (stored, delta) = encode(edited.as_bytes(), Some(text.as_bytes()));
            prop_assert!(delta);
            prop_assert!(stored.len() < 80, "{} bytes for a {}-byte edit", stored.len(), insert.len());
            prop_assert_eq!(decode(&stored, Some(text.as_bytes())).ok(), Some(edited.into_bytes()));
        }

        #[test]
        fn decode_never_panics(stored in proptest::collection::vec(any::<u8>(), 0..512), base in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = decode(&stored, None);
            let _ = decode(&stored, Some(&base));
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]
        #[test]
        fn prefixes_decode_from_their_needed_bytes(words in proptest::collection::vec("[a-z]{1,12}", 0..40_000), noise in proptest::collection::vec(any::<u8>(), 0..300_000), max in 0usize..70_000) {
            for body in [words.join(" ").into_bytes(), noise] {
                let (stored, _) = encode(&body, None);
                let cut = &stored[..stored.len().min(prefix_needed(max))];
                let want = &body[..body.len().min(max)];
                let got = decode_prefix(cut, max).ok();
                prop_assert_eq!(got.as_deref(), Some(want));
                prop_assert_eq!(same_bytes(&stored, &body).ok(), Some(Some(true)));
                let mut other = body.clone();
                other.push(b'x');
                prop_assert_eq!(same_bytes(&stored, &other).ok(), Some(Some(false)));
                if let Some(last) = other.len().checked_sub(2) {
                    other.truncate(last);
                    prop_assert_eq!(same_bytes(&stored, &other).ok(), Some(Some(false)));
                }
            }
        }
    }

    /// Bodies past one step go through the stepped encoder and decoder: they round-trip, their
    /// frames declare their size, and a frame cut short, lengthened or lying about its size is
    /// refused.
    #[test]
    fn large_bodies_round_trip_a_step_at_a_time() {
        let text: Vec<u8> = (0..(3 * STEP + 12_345) as u64)
            .map(|i| b"abcdefgh \n"[(i.wrapping_mul(0x9E37_79B9) >> 7) as usize % 10])
            .collect();
        let zeros = vec![0u8; 2 * STEP + 1];
        for body in [&text, &zeros] {
            let (stored, delta) = encode(body, None);
            assert!(!delta && stored[0] == ZSTD && stored.len() < body.len());
            let declared = zstd::zstd_safe::get_frame_content_size(&stored[1..]);
            assert_eq!(declared.ok().flatten(), Some(body.len() as u64));
            assert_eq!(decode(&stored, None).ok().as_ref(), Some(body));
            assert_eq!(same_bytes(&stored, body).ok(), Some(Some(true)));
            let cut = &stored[..stored.len() - 4];
            assert!(decode(cut, None).is_err());
            let mut longer = stored.clone();
            longer.extend_from_slice(&stored[1..]);
            assert!(decode(&longer, None).is_err());
        }
        let (stored, _) = encode(&text, None);
        let small = whole(&text[..STEP + 1]).expect("a frame");
        let mut lying = vec![ZSTD];
        lying.extend_from_slice(&small);
        lying.extend_from_slice(&stored[1..]);
        assert!(decode(&lying, None).is_err());
    }

    #[test]
    fn a_delta_is_never_compared_or_cut_without_its_base() {
        let base = "the first version of a file, long enough to be compressed. ".repeat(40);
        let edited = format!("{base}and one more line");
        let (stored, delta) = encode(edited.as_bytes(), Some(base.as_bytes()));
        assert!(delta);
        assert_eq!(same_bytes(&stored, edited.as_bytes()).ok(), Some(None));
        assert!(decode_prefix(&stored, 10).is_err());
    }

    #[test]
    fn compresses_text_and_keeps_small_or_random_bodies_plain() {
        let text = "the agent edits the workspace and the host commits it. ".repeat(100);
        let (stored, _) = encode(text.as_bytes(), None);
        assert_eq!(stored[0], ZSTD);
        assert!(stored.len() < text.len() / 4);
        assert_eq!(encode(b"short", Some(b"short!")).0[0], PLAIN);
        let noise: Vec<u8> = (0..4096u32)
            .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
            .collect();
        let (stored, _) = encode(&noise, None);
        assert!(stored.len() <= noise.len() + 1);
        assert!(decode(&[7, 1, 2], None).is_err() && decode(&[], None).is_err());
    }

    #[test]
    fn a_delta_needs_its_own_base() {
        let base: String = (0..200u64)
            .map(|l| format!("line {l}: {:016x}\n", l.wrapping_mul(0x9E37_79B9_7F4A_7C15)))
            .collect();
        let edited = format!("{base}one more line\n");
        let (stored, delta) = encode(edited.as_bytes(), Some(base.as_bytes()));
        assert!(delta);
        assert!(decode(&stored, None).is_err());
        let other = "another file entirely\n".repeat(200);
        assert_ne!(
            decode(&stored, Some(other.as_bytes())).ok(),
            Some(edited.into_bytes())
        );
    }
}

//! The output cap: text longer than the cap is cut at a character boundary and ends with the
//! stable [`TRUNCATED_MARKER`]. Output that is not text (invalid UTF-8 or NUL bytes, e.g. a
//! binary HTTP response) is replaced by a notice ([`as_text`]) instead of mangled characters.

/// Appended to text that was cut.
pub const TRUNCATED_MARKER: &str = "\n[truncated]\n";

/// `text` cut to at most `max_bytes` (plus the marker), and whether it was cut.
pub fn cap(text: String, max_bytes: usize) -> (String, bool) {
    if text.len() <= max_bytes {
        return (text, false);
    }
    let mut end = max_bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let mut out = text;
    out.truncate(end);
    out.push_str(TRUNCATED_MARKER);
    (out, true)
}

/// The start of the notice that replaces binary output.
pub const BINARY_NOTICE: &str = "[binary output of ";

/// `bytes` as text, or a notice saying how many bytes of binary output were not shown.
pub fn as_text(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(text) if !text.contains('\0') => text.to_owned(),
        _ => format!(
            "{BINARY_NOTICE}{} bytes not shown: write it to a file (curl -o, > FILE) and inspect it with od or base64]\n",
            bytes.len()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn binary_output_becomes_a_notice() {
        assert_eq!(as_text(b"text\n"), "text\n");
        assert!(as_text(&[0, 1, 2]).starts_with("[binary output of 3 bytes"));
        assert!(as_text(&[0xff, b'a']).starts_with(BINARY_NOTICE));
    }

    #[test]
    fn cuts_at_a_character_boundary() {
        assert_eq!(cap("abc".into(), 3), ("abc".into(), false));
        assert_eq!(cap("abcd".into(), 3), ("abc\n[truncated]\n".into(), true));
        // 'é' is two bytes: a cut inside it backs off.
        assert_eq!(cap("aé".into(), 2), ("a\n[truncated]\n".into(), true));
        assert_eq!(cap("x".into(), 0), ("\n[truncated]\n".into(), true));
    }

    proptest! {
        #[test]
        fn never_exceeds_the_cap(s in "\\PC{0,64}", max in 0usize..80) {
            let (out, cut) = cap(s.clone(), max);
            prop_assert_eq!(cut, s.len() > max);
            if cut {
                let kept = out.strip_suffix(TRUNCATED_MARKER).unwrap();
                prop_assert!(kept.len() <= max);
                prop_assert!(s.starts_with(kept));
            } else {
                prop_assert_eq!(out, s);
            }
        }
    }
}

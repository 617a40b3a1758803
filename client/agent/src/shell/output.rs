//! The output cap: text longer than the cap is cut at a character boundary and ends with the
//! stable [`TRUNCATED_MARKER`].

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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

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

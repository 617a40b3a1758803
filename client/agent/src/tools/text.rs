//! Output shaping shared by the tools: byte caps with the stable truncation marker.

use crate::TRUNCATION_MARKER;

/// `s` cut to at most `max` bytes on a character boundary, with the marker appended when cut.
pub fn cap(s: &str, max: usize) -> (String, bool) {
    if s.len() <= max {
        return (s.to_owned(), false);
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    (format!("{}{TRUNCATION_MARKER}", &s[..end]), true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_cut_on_character_boundaries() {
        assert_eq!(cap("abc", 3), ("abc".into(), false));
        assert_eq!(cap("abcd", 3), ("abc\n[truncated]\n".into(), true));
        assert_eq!(cap("é", 1), ("\n[truncated]\n".into(), true));
    }
}

//! Finding a chunk's lines in a file, from strict to tolerant: exact, then ignoring trailing
//! whitespace, then ignoring surrounding whitespace, then with Unicode punctuation normalised
//! (dashes, quotes and non-breaking spaces read as their ASCII forms). The first tier with a
//! match wins, so a tolerant match never shadows an exact one.

/// How two lines are compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Tier {
    Exact,
    TrailingWhitespace,
    SurroundingWhitespace,
    Punctuation,
}

const TIERS: [Tier; 4] = [
    Tier::Exact,
    Tier::TrailingWhitespace,
    Tier::SurroundingWhitespace,
    Tier::Punctuation,
];

/// The ASCII form of a Unicode dash, quote or space; other characters unchanged.
fn ascii_punctuation(c: char) -> char {
    match c {
        '\u{2010}'..='\u{2015}' | '\u{2212}' | '\u{FE58}' | '\u{FE63}' | '\u{FF0D}' => '-',
        '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' | '\u{2032}' => '\'',
        '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' | '\u{2033}' | '\u{00AB}'
        | '\u{00BB}' => '"',
        '\u{00A0}' | '\u{2002}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => ' ',
        c => c,
    }
}

fn same(a: &str, b: &str, tier: Tier) -> bool {
    match tier {
        Tier::Exact => a == b,
        Tier::TrailingWhitespace => a.trim_end() == b.trim_end(),
        Tier::SurroundingWhitespace => a.trim() == b.trim(),
        Tier::Punctuation => a
            .trim()
            .chars()
            .map(ascii_punctuation)
            .eq(b.trim().chars().map(ascii_punctuation)),
    }
}

fn matches_at(lines: &[String], pattern: &[String], at: usize, tier: Tier) -> bool {
    pattern
        .iter()
        .enumerate()
        .all(|(i, p)| same(&lines[at + i], p, tier))
}

/// Where `pattern` occurs in `lines` at or after `from`. With `at_end` a match ending at the
/// last line is preferred. `None` when there is none, or the pattern is empty.
pub fn seek(lines: &[String], pattern: &[String], from: usize, at_end: bool) -> Option<usize> {
    if pattern.is_empty() || pattern.len() > lines.len() {
        return None;
    }
    let last = lines.len() - pattern.len();
    if from > last {
        return None;
    }
    for tier in TIERS {
        if at_end && matches_at(lines, pattern, last, tier) {
            return Some(last);
        }
        if let Some(i) = (from..=last).find(|&i| matches_at(lines, pattern, i, tier)) {
            return Some(i);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn tiers_apply_in_order() {
        let file = v(&["a  ", " b", "x \u{2014} \u{201C}q\u{201D}\u{00A0}", "a"]);
        assert_eq!(
            seek(&file, &v(&["a"]), 0, false),
            Some(3),
            "exact beats trimmed"
        );
        assert_eq!(seek(&file, &v(&["a", " b"]), 0, false), Some(0));
        assert_eq!(seek(&file, &v(&["b"]), 0, false), Some(1));
        assert_eq!(seek(&file, &v(&["x - \"q\""]), 0, false), Some(2));
        assert_eq!(seek(&file, &v(&["zzz"]), 0, false), None);
        assert_eq!(seek(&file, &v(&["a  "]), 1, false), Some(3));
    }

    #[test]
    fn end_of_file_prefers_the_last_match() {
        let file = v(&["x", "y", "x"]);
        assert_eq!(seek(&file, &v(&["x"]), 0, true), Some(2));
        assert_eq!(seek(&file, &v(&["x"]), 0, false), Some(0));
    }
}

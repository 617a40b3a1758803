//! Applying an update's chunks to a file's text, in memory. Chunks apply in order, each found
//! at or after where the previous one ended: its `@@` anchors are found first (each after the
//! previous), then its old lines. A chunk with no old lines inserts its new lines after the
//! last anchor, or at the end of the file. The file keeps its final newline, or lack of one.

use super::seek::seek;
use super::Chunk;
use supabash::error::{Result, SupabashError};
use supabash_core::ErrorCode;

fn failed(path: &str, n: usize, message: String) -> SupabashError {
    SupabashError::new(
        ErrorCode::InvalidPatch,
        format!("{path}: chunk {n}: {message}"),
    )
    .with_path(path)
}

/// The first line of `pattern` absent from `lines` at or after `from` (for error messages).
fn first_missing<'a>(lines: &[String], pattern: &'a [String], from: usize) -> &'a str {
    pattern
        .iter()
        .find(|p| seek(lines, std::slice::from_ref(p), from, false).is_none())
        .unwrap_or(&pattern[0])
}

/// The text of `path` after `chunks`.
pub fn apply_chunks(path: &str, text: &str, chunks: &[Chunk]) -> Result<String> {
    let final_newline = text.is_empty() || text.ends_with('\n');
    let mut lines: Vec<String> = text.split('\n').map(str::to_owned).collect();
    if text.ends_with('\n') || text.is_empty() {
        lines.pop();
    }
    let mut cursor = 0;
    let mut edits: Vec<(usize, usize, Vec<String>)> = Vec::new();
    for (i, chunk) in chunks.iter().enumerate() {
        let n = i + 1;
        for anchor in &chunk.anchors {
            let found = seek(&lines, std::slice::from_ref(anchor), cursor, false)
                .ok_or_else(|| failed(path, n, format!("context {anchor:?} not found")))?;
            cursor = found + 1;
        }
        if chunk.old.is_empty() {
            let at = if chunk.anchors.is_empty() || chunk.end_of_file {
                lines.len()
            } else {
                cursor
            };
            edits.push((at, 0, chunk.new.clone()));
            continue;
        }
        let (mut old, mut new) = (&chunk.old[..], &chunk.new[..]);
        let mut at = seek(&lines, old, cursor, chunk.end_of_file);
        if at.is_none() && old.last().is_some_and(String::is_empty) {
            // A trailing empty line may stand for the file's final newline.
            old = &old[..old.len() - 1];
            if new.last().is_some_and(String::is_empty) {
                new = &new[..new.len() - 1];
            }
            at = seek(&lines, old, cursor, chunk.end_of_file);
        }
        let at = at.ok_or_else(|| {
            let missing = first_missing(&lines, &chunk.old, cursor);
            failed(
                path,
                n,
                format!(
                    "context not found: {} lines starting {:?} (line {missing:?} does not occur)",
                    chunk.old.len(),
                    chunk.old[0]
                ),
            )
        })?;
        edits.push((at, old.len(), new.to_vec()));
        cursor = at + old.len();
    }
    for (at, len, new) in edits.into_iter().rev() {
        lines.splice(at..at + len, new);
    }
    let mut out = lines.join("\n");
    if final_newline && !lines.is_empty() {
        out.push('\n');
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patch::parse::parse_envelope;
    use crate::patch::PatchOp;
    use proptest::prelude::*;

    #[derive(Debug, Clone)]
    enum Item {
        Ctx(String),
        Del(String),
        Add(String),
    }

    /// A V4A update from an edit script over distinct old lines: each chunk holds a run of
    /// changes with one context line on each side; runs of two or more context lines split
    /// chunks.
    fn patch_of(items: &[Item]) -> String {
        let mut out = String::from("*** Begin Patch\n*** Update File: /f\n");
        let changed: Vec<usize> = (0..items.len())
            .filter(|&i| !matches!(items[i], Item::Ctx(_)))
            .collect();
        let mut groups: Vec<(usize, usize)> = Vec::new();
        for &i in &changed {
            match groups.last_mut() {
                Some((_, end)) if i - *end <= 2 => *end = i,
                _ => groups.push((i, i)),
            }
        }
        for (start, end) in groups {
            let from = start.saturating_sub(1);
            let to = (end + 1).min(items.len() - 1);
            out.push_str("@@\n");
            for item in &items[from..=to] {
                match item {
                    Item::Ctx(l) => out.push_str(&format!(" {l}\n")),
                    Item::Del(l) => out.push_str(&format!("-{l}\n")),
                    Item::Add(l) => out.push_str(&format!("+{l}\n")),
                }
            }
        }
        out.push_str("*** End Patch\n");
        out
    }

    fn text_of(lines: &[String]) -> String {
        lines.iter().map(|l| format!("{l}\n")).collect()
    }

    proptest! {
        #[test]
        fn a_patch_made_from_old_and_new_yields_new(
            script in proptest::collection::vec(
                (any::<bool>(), proptest::collection::vec("[a-z ]{0,6}", 0..3)), 0..25),
            head in proptest::collection::vec("[a-z ]{0,6}", 0..3),
        ) {
            let mut items: Vec<Item> = head.iter().cloned().map(Item::Add).collect();
            let (mut old, mut new) = (Vec::new(), head.clone());
            for (i, (keep, added)) in script.iter().enumerate() {
                let line = format!("line {i}");
                old.push(line.clone());
                if *keep {
                    new.push(line.clone());
                    items.push(Item::Ctx(line));
                } else {
                    items.push(Item::Del(line));
                }
                new.extend(added.iter().cloned());
                items.extend(added.iter().cloned().map(Item::Add));
            }
            if old == new {
                return Ok(());
            }
            let patch = patch_of(&items);
            let ops = parse_envelope(&patch).unwrap();
            let [PatchOp::Update { chunks, .. }] = &ops[..] else {
                panic!("one update expected: {ops:?}")
            };
            let out = apply_chunks("/f", &text_of(&old), chunks).unwrap();
            prop_assert_eq!(out, text_of(&new), "patch:\n{}", patch);
        }
    }

    fn chunk(anchors: &[&str], old: &[&str], new: &[&str], eof: bool) -> Chunk {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect();
        Chunk {
            anchors: v(anchors),
            old: v(old),
            new: v(new),
            end_of_file: eof,
        }
    }

    #[test]
    fn chunks_apply_in_order_and_keep_the_final_newline() {
        let text = "a\nb\nc\nb\n";
        let out = apply_chunks("/f", text, &[chunk(&["c"], &["b"], &["B"], false)]).unwrap();
        assert_eq!(out, "a\nb\nc\nB\n");
        let out = apply_chunks("/f", "a\nb", &[chunk(&[], &["b"], &["c"], false)]).unwrap();
        assert_eq!(out, "a\nc", "no final newline stays none");
        let out = apply_chunks("/f", "", &[chunk(&[], &[], &["x"], false)]).unwrap();
        assert_eq!(out, "x\n");
        let out = apply_chunks("/f", "a\n", &[chunk(&[], &[], &["z"], true)]).unwrap();
        assert_eq!(out, "a\nz\n");
        let out = apply_chunks("/f", "h\nx\n", &[chunk(&["h"], &[], &["i"], false)]).unwrap();
        assert_eq!(out, "h\ni\nx\n", "insertion after an anchor");
    }

    #[test]
    fn missing_context_names_the_line() {
        let e =
            apply_chunks("/f", "a\nb\n", &[chunk(&[], &["a", "zz"], &["a"], false)]).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidPatch);
        assert!(
            e.message().contains("\"zz\" does not occur"),
            "{}",
            e.message()
        );
        assert_eq!(e.path(), Some("/f"));
        let e = apply_chunks("/f", "a\n", &[chunk(&["nope"], &["a"], &[], false)]).unwrap_err();
        assert!(
            e.message().contains("context \"nope\" not found"),
            "{}",
            e.message()
        );
    }
}

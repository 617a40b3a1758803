//! The V4A patch grammar, as this module reads it:
//!
//! ```text
//! patch   := "*** Begin Patch" NL op* "*** End Patch" NL?
//! op      := add | delete | update
//! add     := "*** Add File: " path NL ("+" text NL)*
//! delete  := "*** Delete File: " path NL
//! update  := "*** Update File: " path NL ("*** Move to: " path NL)? chunk*
//! chunk   := ("@@" (" " anchor)? NL)* line+ ("*** End of File" NL)?
//! line    := (" " | "-" | "+") text NL | NL          (an empty line is empty context)
//! ```
//!
//! The envelope may be wrapped in a heredoc (`apply_patch <<'EOF'` … `EOF`). The per-operation
//! form carries one file: the body of an update (chunks only), or the `+` lines of a new file.

use super::{Chunk, PatchOp};
use supabash::error::{Result, SupabashError};
use supabash_core::ErrorCode;

const BEGIN: &str = "*** Begin Patch";
const END: &str = "*** End Patch";
const ADD: &str = "*** Add File: ";
const DELETE: &str = "*** Delete File: ";
const UPDATE: &str = "*** Update File: ";
const MOVE: &str = "*** Move to: ";
const EOF_MARK: &str = "*** End of File";

fn invalid(line_no: usize, message: impl std::fmt::Display) -> SupabashError {
    SupabashError::new(
        ErrorCode::InvalidPatch,
        format!("patch line {line_no}: {message}"),
    )
}

/// The lines of `text` without their line endings (`\r\n` accepted).
fn lines(text: &str) -> Vec<&str> {
    let mut out: Vec<&str> = text
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    if out.last() == Some(&"") {
        out.pop();
    }
    out
}

/// Strips a heredoc wrapper (`apply_patch <<'EOF'` … `EOF`, any quoting, optional `-`).
fn unwrap_heredoc(all: &[&str]) -> Option<(usize, usize)> {
    let first = all.iter().position(|l| !l.trim().is_empty())?;
    let head = all[first].trim();
    let rest = head
        .strip_prefix("apply_patch")
        .or_else(|| head.strip_prefix("applypatch"))?
        .trim_start();
    let tag = rest.strip_prefix("<<")?.trim_start_matches('-').trim();
    let tag = tag.trim_matches(|c| c == '\'' || c == '"');
    if tag.is_empty() || !tag.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return None;
    }
    let last = all.iter().rposition(|l| !l.trim().is_empty())?;
    (last > first && all[last].trim() == tag).then_some((first + 1, last))
}

/// Parses a patch envelope (possibly heredoc-wrapped) into operations.
pub fn parse_envelope(text: &str) -> Result<Vec<PatchOp>> {
    let all = lines(text);
    let (from, to) = unwrap_heredoc(&all).unwrap_or((0, all.len()));
    let body = &all[from..to];
    let start = body
        .iter()
        .position(|l| !l.trim().is_empty())
        .ok_or_else(|| invalid(1, "the patch is empty"))?;
    if body[start].trim() != BEGIN {
        return Err(invalid(from + start + 1, format!("expected {BEGIN:?}")));
    }
    let end = body
        .iter()
        .rposition(|l| !l.trim().is_empty())
        .filter(|&i| i > start && body[i].trim() == END)
        .ok_or_else(|| invalid(from + body.len(), format!("expected {END:?} at the end")))?;
    let mut p = Parser {
        lines: &body[start + 1..end],
        at: 0,
        offset: from + start + 2,
    };
    let mut ops = Vec::new();
    while p.at < p.lines.len() {
        ops.push(p.op()?);
    }
    Ok(ops)
}

/// The chunks of an update given as a bare body (the per-operation form).
pub fn parse_update_body(diff: &str) -> Result<Vec<Chunk>> {
    let all = lines(diff);
    let mut p = Parser {
        lines: &all,
        at: 0,
        offset: 1,
    };
    let chunks = p.chunks()?;
    if p.at < all.len() {
        return Err(p.error(format!("unexpected line {:?}", all[p.at])));
    }
    Ok(chunks)
}

/// The contents of a new file given as `+` lines (the per-operation form).
pub fn parse_add_body(diff: &str) -> Result<String> {
    let all = lines(diff);
    let mut p = Parser {
        lines: &all,
        at: 0,
        offset: 1,
    };
    let contents = p.added()?;
    if p.at < all.len() {
        return Err(p.error(format!(
            "a new file's lines start with '+': {:?}",
            all[p.at]
        )));
    }
    Ok(contents)
}

/// True for a unified-diff range header (`-1,3 +1,4 @@`), which carries no anchor text.
fn is_line_numbers(anchor: &str) -> bool {
    let ranges = anchor.trim_end_matches('@').trim();
    let mut parts = ranges.split_whitespace();
    let is_range = |s: Option<&str>, sign: char| {
        s.and_then(|s| s.strip_prefix(sign))
            .is_some_and(|r| !r.is_empty() && r.chars().all(|c| c.is_ascii_digit() || c == ','))
    };
    is_range(parts.next(), '-') && is_range(parts.next(), '+') && parts.next().is_none()
}

struct Parser<'a> {
    lines: &'a [&'a str],
    at: usize,
    /// The 1-based number of `lines[0]` in the input.
    offset: usize,
}

impl<'a> Parser<'a> {
    fn error(&self, message: impl std::fmt::Display) -> SupabashError {
        invalid(self.offset + self.at, message)
    }

    fn peek(&self) -> Option<&'a str> {
        self.lines.get(self.at).copied()
    }

    fn header<'b>(&self, line: &'b str, prefix: &str) -> Option<&'b str> {
        line.strip_prefix(prefix).map(str::trim)
    }

    fn op(&mut self) -> Result<PatchOp> {
        let line = self.peek().unwrap_or_default();
        if let Some(path) = self.header(line, ADD) {
            self.at += 1;
            let contents = self.added()?;
            return Ok(PatchOp::Add {
                path: path.to_owned(),
                contents,
            });
        }
        if let Some(path) = self.header(line, DELETE) {
            self.at += 1;
            return Ok(PatchOp::Delete {
                path: path.to_owned(),
            });
        }
        if let Some(path) = self.header(line, UPDATE) {
            self.at += 1;
            let move_to = match self.peek().and_then(|l| self.header(l, MOVE)) {
                Some(to) => {
                    self.at += 1;
                    Some(to.to_owned())
                }
                None => None,
            };
            let chunks = self.chunks()?;
            if chunks.is_empty() && move_to.is_none() {
                return Err(self.error(format!("update of {path} has no chunks")));
            }
            return Ok(PatchOp::Update {
                path: path.to_owned(),
                move_to,
                chunks,
            });
        }
        Err(self.error(format!(
            "expected a file operation (*** Add File:, *** Delete File:, *** Update File:), got {line:?}"
        )))
    }

    fn is_op_header(line: &str) -> bool {
        line.starts_with("*** ")
    }

    fn added(&mut self) -> Result<String> {
        let mut out = String::new();
        while let Some(line) = self.peek() {
            let Some(text) = line.strip_prefix('+') else {
                break;
            };
            out.push_str(text);
            out.push('\n');
            self.at += 1;
        }
        Ok(out)
    }

    fn chunks(&mut self) -> Result<Vec<Chunk>> {
        let mut chunks = Vec::new();
        loop {
            let mut chunk = Chunk::default();
            let mut headed = false;
            while let Some(line) = self.peek() {
                let Some(anchor) = line.strip_prefix("@@") else {
                    break;
                };
                headed = true;
                let anchor = anchor.trim();
                if !anchor.is_empty() && !is_line_numbers(anchor) {
                    chunk.anchors.push(anchor.to_owned());
                }
                self.at += 1;
            }
            let mut body = 0;
            while let Some(line) = self.peek() {
                if line.starts_with("@@") {
                    break;
                }
                if line.trim_end() == EOF_MARK {
                    chunk.end_of_file = true;
                    self.at += 1;
                    break;
                }
                if Self::is_op_header(line) {
                    break;
                }
                match line.chars().next() {
                    None => {
                        chunk.old.push(String::new());
                        chunk.new.push(String::new());
                    }
                    Some(' ') => {
                        chunk.old.push(line[1..].to_owned());
                        chunk.new.push(line[1..].to_owned());
                    }
                    Some('-') => chunk.old.push(line[1..].to_owned()),
                    Some('+') => chunk.new.push(line[1..].to_owned()),
                    Some(_) => {
                        return Err(self.error(format!(
                            "a chunk line starts with ' ', '-' or '+': {line:?}"
                        )))
                    }
                }
                body += 1;
                self.at += 1;
            }
            if body == 0 {
                if headed {
                    return Err(self.error("a chunk header with no lines after it"));
                }
                return Ok(chunks);
            }
            chunks.push(chunk);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_envelope_parses_every_operation() {
        let ops = parse_envelope(
            "*** Begin Patch\n*** Add File: /a.md\n+one\n+two\n*** Delete File: /b.md\n\
             *** Update File: /c.md\n*** Move to: /d.md\n@@ fn main\n ctx\n-old\n+new\n\
             *** End of File\n*** End Patch\n",
        )
        .unwrap();
        assert_eq!(ops.len(), 3);
        assert!(
            matches!(&ops[0], PatchOp::Add { path, contents } if path == "/a.md" && contents == "one\ntwo\n")
        );
        assert!(matches!(&ops[1], PatchOp::Delete { path } if path == "/b.md"));
        let PatchOp::Update {
            path,
            move_to,
            chunks,
        } = &ops[2]
        else {
            panic!("update expected")
        };
        assert_eq!(
            (path.as_str(), move_to.as_deref()),
            ("/c.md", Some("/d.md"))
        );
        assert_eq!(chunks[0].anchors, ["fn main"]);
        assert_eq!(chunks[0].old, ["ctx", "old"]);
        assert_eq!(chunks[0].new, ["ctx", "new"]);
        assert!(chunks[0].end_of_file);
    }

    #[test]
    fn unified_range_headers_are_not_anchors() {
        let chunks = parse_update_body("@@ -1,2 +1,2 @@\n-a\n+b\n@@ def f\n x\n").unwrap();
        assert!(chunks[0].anchors.is_empty());
        assert_eq!(chunks[1].anchors, ["def f"]);
    }

    #[test]
    fn a_heredoc_wrapper_is_accepted() {
        for head in [
            "apply_patch <<'EOF'",
            "apply_patch <<EOF",
            "applypatch << \"EOF\"",
        ] {
            let text =
                format!("{head}\n*** Begin Patch\n*** Delete File: /x\n*** End Patch\nEOF\n");
            assert_eq!(parse_envelope(&text).unwrap().len(), 1, "{head}");
        }
    }

    #[test]
    fn malformed_patches_name_the_line() {
        let e = parse_envelope("*** Begin Patch\n*** Frobnicate: /x\n*** End Patch").unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidPatch);
        assert!(e.message().starts_with("patch line 2:"), "{}", e.message());
        assert!(parse_envelope("*** Begin Patch\n*** Delete File: /x\n").is_err());
        assert!(parse_update_body("@@\n").is_err());
        assert!(parse_update_body("?bad\n").is_err());
        assert!(parse_add_body("+ok\nnot added\n").is_err());
    }

    proptest! {
        #[test]
        fn the_parser_never_panics(text in "(\\*\\*\\* (Begin|End) Patch|\\*\\*\\* (Add|Update|Delete) File: /[a-z]{0,3}|\\*\\*\\* Move to: [a-z/]{0,3}|@@[ a-z]{0,3}|[ +-][a-z ]{0,4}|\\*\\*\\* End of File|apply_patch <<'EOF'|EOF|[^\\n]{0,6})(\\n(\\*\\*\\* (Begin|End) Patch|\\*\\*\\* (Add|Update|Delete) File: /[a-z]{0,3}|@@[ a-z]{0,3}|[ +-][a-z ]{0,4}|\\*\\*\\* End of File|EOF|[^\\n]{0,6})){0,12}\\n?") {
            let _ = parse_envelope(&text);
            let _ = parse_update_body(&text);
            let _ = parse_add_body(&text);
        }
    }
}

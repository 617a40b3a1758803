//! What a `grep` or `rg` invocation asks, read conservatively: only the options that change
//! which lines match are interpreted; output options are recognised and left to the built-in.
//! Anything not recognised, or a pattern the server cannot be trusted to match at least as
//! often as the built-in, gives no [`Plan`], and the built-in reads every file as it would.

/// What the server is asked, for one invocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Plan {
    /// A Rust regex that matches, in a line, every line the built-in selects (and maybe more):
    /// the literal patterns escaped and joined with `|`.
    pub pattern: String,
    /// Case-insensitive on the server: a superset of a case-sensitive search, so it is set
    /// whenever the built-in might fold case.
    pub ignore_case: bool,
    /// The directories searched recursively, as written (empty: the working directory).
    pub dirs: Vec<String>,
    /// Binary files are skipped without a word (`grep -I`): the server's silence about them
    /// is then the built-in's answer too.
    pub binary_silent: bool,
}

/// Which built-in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tool {
    Grep,
    Rg,
}

impl Tool {
    /// The command name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Tool::Grep => "grep",
            Tool::Rg => "rg",
        }
    }
}

/// Pattern syntax as the built-in reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Syntax {
    /// grep's default BRE.
    Basic,
    Extended,
    Fixed,
    /// rg's default (Rust regex), or grep -P: no literal reading is safe beyond plain text.
    Rust,
}

/// The characters after which a pattern is plain text in every dialect the built-ins speak:
/// letters, digits, and punctuation that is special in none of BRE, ERE, PCRE or Rust regex.
fn plain(pattern: &str) -> bool {
    !pattern.is_empty()
        && pattern.chars().all(|c| {
            (c.is_alphanumeric() && c.is_ascii())
                || matches!(
                    c,
                    ' ' | '_'
                        | '-'
                        | ':'
                        | ';'
                        | ','
                        | '/'
                        | '='
                        | '<'
                        | '>'
                        | '@'
                        | '%'
                        | '&'
                        | '~'
                        | '\''
                        | '"'
                        | '!'
                )
        })
}

/// A bracket expression at the start of `rest` (after its `[`): its Rust form and the length it
/// took, when it means the same in POSIX and in Rust (ASCII, no `]` first, no `[`, `\`, and
/// none of Rust's set operators).
fn bracket(rest: &str) -> Option<(String, usize)> {
    let end = rest.find(']')?;
    let body = &rest[..end];
    let items = body.strip_prefix('^').unwrap_or(body);
    if items.is_empty()
        || !body.is_ascii()
        || body.contains(['[', '\\'])
        || ["&&", "--", "~~"].iter().any(|op| body.contains(op))
    {
        return None;
    }
    let class = format!("[{body}]");
    // A negated class may match the `\r` the server strips from a line's end: let it match
    // there at the end of the line too (a wider search only reads more).
    let rust = if body.starts_with('^') {
        format!("(?:{class}|$)")
    } else {
        class
    };
    Some((rust, end + 1))
}

/// A Rust regex that matches in a line (as the server cuts lines: at `\n`, one trailing `\r`
/// dropped) at least where `pattern` under `syntax` matches as the built-in reads it; `None`
/// when that is not certain. Literal text, `.`, `*`, bracket expressions, the anchors `^` and
/// `$` where every dialect reads them as anchors (BRE: first and last; elsewhere: also next to
/// `(` and `|`; the server matches anchored patterns line by line) and, outside BRE,
/// `+ ? | ( )` are translated; back-references, intervals, escapes and POSIX classes are not.
fn server_regex(pattern: &str, syntax: Syntax) -> Option<String> {
    if pattern.is_empty() || pattern.contains(['\n', '\r', '\0']) {
        return None;
    }
    if syntax == Syntax::Fixed {
        return Some(regex::escape(pattern));
    }
    let extended = syntax != Syntax::Basic;
    let mut out = String::new();
    // Whether the last thing written can take a quantifier, and the open groups.
    let mut atom = false;
    let mut depth = 0usize;
    let mut rest = pattern;
    while let Some(c) = rest.chars().next() {
        rest = &rest[c.len_utf8()..];
        match c {
            '.' => {
                // `.` may match the trailing `\r` the server strips.
                out.push_str("(?:.|$)");
                atom = true;
            }
            '[' => {
                let (class, used) = bracket(rest)?;
                out.push_str(&class);
                rest = &rest[used..];
                atom = true;
            }
            '*' if atom => {
                out.push('*');
                atom = false;
            }
            // BRE: a leading `*` is literal.
            '*' if !extended && out.is_empty() => {
                out.push_str(r"\*");
                atom = true;
            }
            '+' | '?' if extended => {
                if !atom {
                    return None;
                }
                out.push(c);
                atom = false;
            }
            '|' if extended => {
                out.push('|');
                atom = false;
            }
            '(' if extended => {
                out.push_str("(?:");
                depth += 1;
                atom = false;
            }
            ')' if extended => {
                depth = depth.checked_sub(1)?;
                out.push(')');
                atom = true;
            }
            // An anchor at the pattern's (or, outside BRE, a branch's) start.
            '^' if out.is_empty() || (extended && (out.ends_with('|') || out.ends_with("(?:"))) => {
                out.push('^');
                atom = false;
            }
            // An anchor at the pattern's (or, outside BRE, a branch's) end.
            '$' if rest.is_empty() || (extended && rest.starts_with([')', '|'])) => {
                out.push('$');
                atom = false;
            }
            // Literal in BRE elsewhere; not certain in the other dialects.
            '^' | '$' if !extended => {
                out.push('\\');
                out.push(c);
                atom = true;
            }
            // Literal in BRE.
            '+' | '?' | '|' | '(' | ')' if !extended => {
                out.push_str(&regex::escape(&c.to_string()));
                atom = true;
            }
            c if plain(&c.to_string()) => {
                out.push(c);
                atom = true;
            }
            _ => return None,
        }
    }
    (depth == 0).then_some(out)
}

/// One argument as getopt_long reads it.
enum Arg<'a> {
    /// `--name` or `--name=value`.
    Long(&'a str, Option<&'a str>),
    /// A cluster of short options (`-in5`), without its dash.
    Short(&'a str),
    /// An operand: `-`, anything not starting with a dash, and every argument after `--`.
    Operand(&'a str),
}

/// Walks a command's arguments, taking options' values from the next argument as getopt does.
struct Walk<'a> {
    args: &'a [String],
    next: usize,
    /// `--` was seen: the rest are operands.
    operands_only: bool,
}

impl<'a> Walk<'a> {
    fn new(args: &'a [String]) -> Self {
        Walk {
            args,
            next: 0,
            operands_only: false,
        }
    }

    fn take(&mut self) -> Option<&'a str> {
        let arg = self.args.get(self.next)?;
        self.next += 1;
        Some(arg)
    }

    fn next(&mut self) -> Option<Arg<'a>> {
        let arg = self.take()?;
        if self.operands_only {
            return Some(Arg::Operand(arg));
        }
        if arg == "--" {
            self.operands_only = true;
            return self.next();
        }
        if let Some(long) = arg.strip_prefix("--") {
            return Some(match long.split_once('=') {
                Some((name, value)) => Arg::Long(name, Some(value)),
                None => Arg::Long(long, None),
            });
        }
        match arg.strip_prefix('-') {
            Some(cluster) if !cluster.is_empty() => Some(Arg::Short(cluster)),
            _ => Some(Arg::Operand(arg)),
        }
    }

    /// An option's value: the one written inline, else the next argument (`None` when there
    /// is none: the invocation is left to the built-in).
    fn value(&mut self, inline: Option<&str>) -> Option<String> {
        match inline {
            Some(value) => Some(value.to_owned()),
            None => self.take().map(str::to_owned),
        }
    }

    /// The options of a short cluster in order; the first one `valued` says takes a value gets
    /// the rest of the cluster, or the next argument, and ends the cluster.
    fn shorts(
        &mut self,
        cluster: &str,
        valued: impl Fn(char) -> bool,
    ) -> Option<Vec<(char, Option<String>)>> {
        let mut out = Vec::new();
        for (at, c) in cluster.char_indices() {
            if valued(c) {
                let rest = &cluster[at + c.len_utf8()..];
                let value = self.value((!rest.is_empty()).then_some(rest))?;
                out.push((c, Some(value)));
                return Some(out);
            }
            out.push((c, None));
        }
        Some(out)
    }
}

/// How a long option is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Long {
    /// Takes a value, inline (`--name=value`) or as the next argument.
    Valued,
    /// Takes no value; one written inline leaves the invocation to the built-in.
    Flag,
    /// Takes no value from the next argument, and an inline one is ignored.
    Lenient,
}

/// What the options and operands of one invocation ask, as the walk reads them.
#[derive(Debug)]
struct Reading {
    syntax: Syntax,
    ignore_case: bool,
    recursive: bool,
    binary_silent: bool,
    /// Given with `-e` / `--regexp`, else the first operand.
    patterns: Vec<String>,
    operands: Vec<String>,
}

impl Reading {
    fn new(syntax: Syntax) -> Self {
        Reading {
            syntax,
            ignore_case: false,
            recursive: false,
            binary_silent: false,
            patterns: Vec::new(),
            operands: Vec::new(),
        }
    }
}

/// One built-in's options: how each is written, and what it does to a [`Reading`]. The
/// `apply_*` functions answer `None` for an option the built-in alone must answer.
trait Options {
    /// How long option `name` is written (`None`: not one the plan knows). Only full names
    /// are known (a prefix the built-in would expand is left to it).
    fn long(name: &str) -> Option<Long>;
    /// Whether short option `c` takes a value.
    fn short_valued(c: char) -> bool;
    fn apply_long(reading: &mut Reading, name: &str, value: Option<&str>) -> Option<()>;
    fn apply_short(reading: &mut Reading, c: char, value: Option<String>) -> Option<()>;
}

/// Reads `args` getopt_long style, as the built-ins parse them, with `O`'s options; the first
/// operand is the pattern when no option gave one.
fn read<O: Options>(args: &[String], mut reading: Reading) -> Option<Reading> {
    let mut walk = Walk::new(args);
    while let Some(arg) = walk.next() {
        match arg {
            Arg::Operand(operand) => reading.operands.push(operand.to_owned()),
            Arg::Long(name, inline) => {
                let value = match O::long(name)? {
                    Long::Valued => Some(walk.value(inline)?),
                    Long::Flag if inline.is_some() => return None,
                    Long::Flag | Long::Lenient => None,
                };
                O::apply_long(&mut reading, name, value.as_deref())?;
            }
            Arg::Short(cluster) => {
                for (c, value) in walk.shorts(cluster, O::short_valued)? {
                    O::apply_short(&mut reading, c, value)?;
                }
            }
        }
    }
    if reading.patterns.is_empty() {
        if reading.operands.is_empty() {
            return None;
        }
        let first = reading.operands.remove(0);
        reading.patterns.push(first);
    }
    Some(reading)
}

/// `grep`'s options.
struct Grep;

impl Options for Grep {
    fn long(name: &str) -> Option<Long> {
        const VALUED: &[&str] = &[
            "after-context",
            "before-context",
            "context",
            "include",
            "exclude",
            "exclude-dir",
            "max-count",
            "regexp",
            "group-separator",
            "label",
            "binary-files",
            "directories",
        ];
        const FLAGS: &[&str] = &[
            "basic-regexp",
            "extended-regexp",
            "fixed-strings",
            "ignore-case",
            "no-ignore-case",
            "word-regexp",
            "line-regexp",
            "line-number",
            "with-filename",
            "no-filename",
            "count",
            "files-with-matches",
            "files-without-match",
            "only-matching",
            "quiet",
            "silent",
            "recursive",
            "dereference-recursive",
            "no-messages",
            "byte-offset",
            "initial-tab",
            "null",
            "no-group-separator",
            "line-buffered",
        ];
        if matches!(name, "color" | "colour") {
            Some(Long::Lenient)
        } else if VALUED.contains(&name) {
            Some(Long::Valued)
        } else {
            FLAGS.contains(&name).then_some(Long::Flag)
        }
    }

    fn short_valued(c: char) -> bool {
        matches!(c, 'A' | 'B' | 'C' | 'e' | 'm' | 'd')
    }

    fn apply_long(r: &mut Reading, name: &str, value: Option<&str>) -> Option<()> {
        match (name, value) {
            ("basic-regexp", _) => r.syntax = Syntax::Basic,
            ("extended-regexp", _) => r.syntax = Syntax::Extended,
            ("fixed-strings", _) => r.syntax = Syntax::Fixed,
            ("ignore-case", _) => r.ignore_case = true,
            ("no-ignore-case", _) => r.ignore_case = false,
            ("recursive" | "dereference-recursive", _) => r.recursive = true,
            ("regexp", Some(p)) => r.patterns.push(p.to_owned()),
            ("directories", Some("recurse")) => r.recursive = true,
            ("directories", Some(_)) => r.recursive = false,
            ("binary-files", Some("without-match")) => r.binary_silent = true,
            ("binary-files", Some("binary")) => r.binary_silent = false,
            ("binary-files", _) => return None,
            _ => {}
        }
        Some(())
    }

    fn apply_short(r: &mut Reading, c: char, value: Option<String>) -> Option<()> {
        match c {
            'e' => r.patterns.extend(value),
            'd' => r.recursive = value.as_deref() == Some("recurse"),
            // A context length (`-5`) or a value read above.
            '0'..='9' | 'A' | 'B' | 'C' | 'm' => {}
            'i' | 'y' => r.ignore_case = true,
            'F' => r.syntax = Syntax::Fixed,
            'E' => r.syntax = Syntax::Extended,
            'G' => r.syntax = Syntax::Basic,
            'P' => r.syntax = Syntax::Rust,
            'r' | 'R' => r.recursive = true,
            'I' => r.binary_silent = true,
            // Output only: the built-in applies them to what it reads.
            'n' | 'c' | 'l' | 'L' | 'o' | 'w' | 'x' | 'q' | 'H' | 'h' | 'b' | 's' | 'Z' | 'T'
            | 'U' | 'u' => {}
            // -v, -a, -z, -f and anything else change which lines match or what is read: the
            // built-in alone answers.
            _ => return None,
        }
        Some(())
    }
}

/// `rg`'s options (recursive by default; patterns are Rust regexes unless `-F`).
struct Rg;

impl Options for Rg {
    fn long(name: &str) -> Option<Long> {
        match name {
            "fixed-strings" => Some(Long::Lenient),
            "ignore-case" | "smart-case" | "case-sensitive" | "line-number" | "no-line-number"
            | "count" | "files-with-matches" | "word-regexp" | "no-filename" | "with-filename"
            | "no-heading" | "heading" | "quiet" => Some(Long::Flag),
            "glob" | "max-count" | "context" | "after-context" | "before-context" | "regexp"
            | "color" => Some(Long::Valued),
            _ => None,
        }
    }

    fn short_valued(c: char) -> bool {
        matches!(c, 'A' | 'B' | 'C' | 'e' | 'm' | 'g')
    }

    fn apply_long(r: &mut Reading, name: &str, value: Option<&str>) -> Option<()> {
        match (name, value) {
            ("fixed-strings", _) => r.syntax = Syntax::Fixed,
            ("regexp", Some(p)) => r.patterns.push(p.to_owned()),
            _ => {}
        }
        Some(())
    }

    fn apply_short(r: &mut Reading, c: char, value: Option<String>) -> Option<()> {
        match c {
            'e' => r.patterns.extend(value),
            'F' => r.syntax = Syntax::Fixed,
            'A' | 'B' | 'C' | 'm' | 'g' => {}
            'i' | 's' | 'S' | 'n' | 'N' | 'c' | 'l' | 'w' | 'H' | 'I' | 'q' => {}
            _ => return None,
        }
        Some(())
    }
}

/// Reads `grep` arguments: a plan only for a recursive search.
fn grep(args: &[String]) -> Option<Plan> {
    let r = read::<Grep>(args, Reading::new(Syntax::Basic))?;
    if !r.recursive {
        return None;
    }
    finish(
        &r.patterns,
        r.syntax,
        r.ignore_case,
        r.operands,
        r.binary_silent,
    )
}

/// Reads `rg` arguments.
fn rg(args: &[String]) -> Option<Plan> {
    let r = read::<Rg>(args, Reading::new(Syntax::Rust))?;
    // rg skips binary files found while recursing without a word, unlike grep; whatever its
    // case flags, the server searches case-insensitively (a superset).
    finish(&r.patterns, r.syntax, true, r.operands, false)
}

fn finish(
    patterns: &[String],
    syntax: Syntax,
    ignore_case: bool,
    dirs: Vec<String>,
    binary_silent: bool,
) -> Option<Plan> {
    // Case folding: the server's (Unicode simple folding) covers the built-in's for ASCII
    // text; other letters are left to the built-in.
    if ignore_case && !patterns.iter().all(|p| p.is_ascii()) {
        return None;
    }
    let regexes: Vec<String> = patterns
        .iter()
        .map(|p| server_regex(p, syntax))
        .collect::<Option<_>>()?;
    let pattern = match regexes.as_slice() {
        [one] => one.clone(),
        many => many
            .iter()
            .map(|r| format!("(?:{r})"))
            .collect::<Vec<_>>()
            .join("|"),
    };
    Some(Plan {
        pattern,
        ignore_case,
        dirs,
        binary_silent,
    })
}

/// The plan for `tool` called with `args`, when the server can narrow what it reads.
pub(crate) fn plan(tool: Tool, args: &[String]) -> Option<Plan> {
    match tool {
        Tool::Grep => grep(args),
        Tool::Rg => rg(args),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn p(tool: Tool, args: &[&str]) -> Option<Plan> {
        plan(
            tool,
            &args.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
        )
    }

    #[test]
    fn literal_recursive_greps_have_a_plan() {
        let plan = p(Tool::Grep, &["-rn", "TODO", "src", "docs"]).unwrap();
        assert_eq!(plan.pattern, "TODO");
        assert_eq!(plan.dirs, ["src", "docs"]);
        assert!(!plan.ignore_case && !plan.binary_silent);
        let plan = p(Tool::Grep, &["-riIF", "-e", "a.b", "-e", "c(d", "-C2", "."]).unwrap();
        assert_eq!(plan.pattern, r"(?:a\.b)|(?:c\(d)");
        assert!(plan.ignore_case && plan.binary_silent);
        let plan = p(
            Tool::Grep,
            &["--include=*.rs", "-r", "--context", "3", "x y"],
        )
        .unwrap();
        assert!(plan.dirs.is_empty());
        assert_eq!(plan.pattern, "x y");
        assert!(p(Tool::Rg, &["-n", "fn main"]).unwrap().ignore_case);
        // Regexes: `.` and negated classes may also end at a line's end (a stripped `\r`).
        for (args, want) in [
            (&["-r", "fn .*main"][..], "fn (?:.|$)*main"),
            (&["-r", "a+b(c)|d"], r"a\+b\(c\)\|d"),
            (&["-rE", "TODO|need(le)+"], "TODO|need(?:le)+"),
            (&["-r", "*x[^ab]"], r"\*x(?:[^ab]|$)"),
            (&["-rE", "[a-z]?"], "[a-z]?"),
            // Anchors; in BRE `^` and `$` inside the pattern are literal.
            (&["-r", "^TODO"], "^TODO"),
            (&["-r", "TODO$"], "TODO$"),
            (&["-r", "a^b$c"], r"a\^b\$c"),
            (&["-rE", "^(a|^b$)$"], "^(?:a|^b$)$"),
        ] {
            assert_eq!(p(Tool::Grep, args).unwrap().pattern, want, "{args:?}");
        }
    }

    #[test]
    fn anything_else_is_left_to_the_built_in() {
        // Not recursive, inverted, a regex, a pattern file, text mode, an unknown option, a
        // long-option prefix, no pattern, a non-ASCII pattern folded.
        for args in [
            &["TODO", "f"][..],
            &["-rv", "TODO"],
            &["-rE", "a^b"],
            &["-rE", "a$b"],
            &["-rE", "a{2}"],
            &["-r", r"a\|b"],
            &["-r", "[[:alpha:]]x"],
            &["-r", "[]a]"],
            &["-rE", "(a"],
            &["-rE", "*a"],
            &["-r", "a**"],
            &["-r", "-f", "pats"],
            &["-ra", "x"],
            &["-rz", "x"],
            &["-r", "--regex=x"],
            &["-r", "--fixed", "x"],
            &["-r"],
            &["-ri", "é"],
            &["-r", ""],
        ] {
            assert_eq!(p(Tool::Grep, args), None, "{args:?}");
        }
        assert_eq!(p(Tool::Rg, &["^a$"]).unwrap().pattern, "^a$");
        for args in [
            &["a^"][..],
            &["-v", "x"],
            &["--type", "rust", "x"],
            &["-f", "x"],
        ] {
            assert_eq!(p(Tool::Rg, args), None, "{args:?}");
        }
    }

    /// Whether bashkit's `grep` (with `flag`) selects the one line of `body`, or `None` when it
    /// refuses the pattern.
    fn built_in_selects(flag: &str, pattern: &str, body: &str) -> Option<bool> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let mut bash = bashkit::Bash::builder().mount_text("/f", body).build();
            let options = bashkit::ExecOptions::new().positional([flag, pattern]);
            let out = bash
                .exec_with_options("grep -c \"$1\" -e \"$2\" /f", options)
                .await
                .unwrap();
            match out.exit_code {
                0 | 1 => Some(out.stdout.as_bytes() == b"1\n"),
                _ => None,
            }
        })
    }

    #[test]
    fn the_oracle_is_the_built_in() {
        assert_eq!(built_in_selects("-G", "a.b", "axb\n"), Some(true));
        assert_eq!(built_in_selects("-G", "a|b", "b\n"), Some(false));
        assert_eq!(built_in_selects("-E", "a|b", "b\n"), Some(true));
        // `\r` is data to the built-in: `.` matches it, `$` is after it.
        assert_eq!(built_in_selects("-G", "a.", "a\r\n"), Some(true));
        assert_eq!(built_in_selects("-G", "a$", "a\r\n"), Some(false));
        assert_eq!(built_in_selects("-E", "(a", "a\n"), None);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]

        /// Wherever the built-in selects a line, the server's regex matches it as the server
        /// cuts it (a trailing `\r` dropped), and, unless it has an anchor, matches the whole
        /// body (the server's pre-check, which it skips for anchored patterns).
        #[test]
        fn the_server_regex_covers_the_built_in(
            pattern in "[ab.*+?|()\\[\\]^$-]{1,6}",
            line in "[ab.*+?|()\\[\\]^$ -]{0,8}",
            cr in any::<bool>(),
            flag in prop::sample::select(vec!["-G", "-E", "-F"]),
        ) {
            let args = ["-r", flag, "-e", pattern.as_str()];
            if let Some(plan) = p(Tool::Grep, &args) {
                let body = format!("{line}{}\n", if cr { "\r" } else { "" });
                if built_in_selects(flag, &pattern, &body) == Some(true) {
                    let re = regex::bytes::Regex::new(&plan.pattern).unwrap();
                    prop_assert!(re.is_match(line.as_bytes()), "{:?} on {:?}", plan.pattern, line);
                    let anchored = regex_syntax::Parser::new()
                        .parse(&plan.pattern)
                        .unwrap()
                        .properties()
                        .look_set()
                        .contains_anchor();
                    prop_assert!(anchored || re.is_match(body.as_bytes()));
                }
            }
        }
    }
}

//! The bounded regex engine of `supabash_grep`. The `regex` crate runs in time linear in the
//! text, but its constant is the size of the pattern's automaton: when its lazy DFA cannot serve
//! a search (a Unicode `\b` on non-ASCII text, a DFA that outgrows its cache) it simulates the
//! NFA, at a cost of up to (NFA states) × (bytes), in one call that checks no interrupt. So a
//! search is cut where the worst case is known:
//!
//! - the `regex` crate searches a piece of text only when (NFA states) × (its length) is at most
//!   [`FAST_WORK`] (a few milliseconds at worst), and the work of each piece is reported to
//!   [`interrupt::tick`] at its worst-case price;
//! - a longer line is searched by [`Slow`], an NFA simulation of our own that finds the same
//!   leftmost match start and reports every step it takes, so a cancel or `statement_timeout`
//!   stops it within a millisecond or so;
//! - a pattern of more than [`MAX_STATES`] NFA states is refused, which bounds the cost of a
//!   byte (docs/sql-contract.md has the measured worst case per MiB).

use crate::pg::fail::{invalid, Outcome};
use crate::pg::interrupt;
use regex::bytes::{Regex, RegexBuilder};
use regex_automata::nfa::thompson::{self, State, WhichCaptures, NFA};
use regex_automata::util::primitives::StateID;
use regex_automata::util::syntax;

/// Compiled-program ceiling for a pattern: a pattern that needs more is refused.
const REGEX_SIZE_LIMIT: usize = 4 * 1024 * 1024;
/// Most NFA states a pattern may compile to (`\w+` has 321, `\w{26}` 8,200).
pub const MAX_STATES: usize = 8192;
/// Most (NFA states) × (bytes) the `regex` crate searches in one call.
const FAST_WORK: usize = 1 << 21;
/// Interrupt units (about a nanosecond each) one state-byte of a `regex` call costs at worst.
const FAST_UNITS: u64 = 16;
/// Interrupt units one step of [`Slow`] costs.
const SLOW_UNITS: u64 = 12;

/// A compiled pattern: the `regex` crate's engine and the NFA [`Slow`] runs.
pub struct Matcher {
    re: Regex,
    nfa: NFA,
    /// Longest text handed to the `regex` crate at once.
    fast_len: usize,
    /// False for a pattern with a line or text anchor (`^`, `$`, `\A`, `\z`): on many lines at
    /// once those hold only at the ends, so a test of several lines would miss a later one.
    pub region_test: bool,
}

impl Matcher {
    /// Compiles `source` as the `regex` crate's `bytes::Regex` does (Unicode, leftmost-first).
    pub fn new(source: &str, ignore_case: bool) -> Outcome<Matcher> {
        let bad = |e: &dyn std::fmt::Display| invalid(format!("pattern does not compile: {e}"));
        let re = RegexBuilder::new(source)
            .case_insensitive(ignore_case)
            .size_limit(REGEX_SIZE_LIMIT)
            .dfa_size_limit(REGEX_SIZE_LIMIT)
            .build()
            .map_err(|e| bad(&e))?;
        let nfa = thompson::Compiler::new()
            .syntax(
                syntax::Config::new()
                    .case_insensitive(ignore_case)
                    .utf8(false),
            )
            .configure(
                thompson::Config::new()
                    .nfa_size_limit(Some(REGEX_SIZE_LIMIT))
                    .which_captures(WhichCaptures::None),
            )
            .build(source)
            .map_err(|e| bad(&e))?;
        let states = nfa.states().len();
        if states > MAX_STATES {
            return Err(invalid(format!(
                "pattern is too complex: it compiles to {states} automaton states, more than {MAX_STATES}"
            )));
        }
        // The regex compiled, so its syntax parses; an unexpected parse failure only costs the
        // shortcut.
        let region_test = regex_syntax::ParserBuilder::new()
            .case_insensitive(ignore_case)
            .build()
            .parse(source)
            .is_ok_and(|hir| !hir.properties().look_set().contains_anchor());
        Ok(Matcher {
            re,
            fast_len: (FAST_WORK / states.max(1)).min(interrupt::EVERY as usize),
            nfa,
            region_test,
        })
    }

    /// Bytes the compiled pattern holds (its NFA, for each of the two engines, and the
    /// thread lists of [`Slow`]), charged to the call's budget.
    pub fn memory(&self) -> u64 {
        (2 * self.nfa.memory_usage() + Slow::BYTES_PER_STATE * self.nfa.states().len()) as u64
    }

    /// Longest text [`Matcher::may_match`] takes.
    pub fn region_len(&self) -> usize {
        self.fast_len
    }

    /// Whether `text` (whole lines, at most [`Matcher::region_len`] bytes) has a match: only
    /// for a pattern whose `region_test` holds.
    pub fn may_match(&self, text: &[u8]) -> bool {
        self.fast_tick(text.len());
        self.re.is_match(text)
    }

    /// The byte offset where the leftmost match in `line` starts.
    pub fn find(&self, line: &[u8]) -> Option<usize> {
        if line.len() <= self.fast_len {
            self.fast_tick(line.len());
            return self.re.find(line).map(|m| m.start());
        }
        Slow::new(&self.nfa).leftmost_start(&self.nfa, line)
    }

    fn fast_tick(&self, len: usize) {
        interrupt::tick((self.nfa.states().len() * len.max(1)) as u64 * FAST_UNITS);
    }
}

/// An NFA simulation (Pike's) that answers only where the leftmost match starts, which needs
/// no capture slots: each thread carries the start of its match, and where two threads reach
/// one state the earlier start wins (their futures are the same). Time: at most two steps per
/// NFA state per byte; memory: two thread lists of the NFA's size.
struct Slow {
    cur: Threads,
    next: Threads,
    stack: Vec<StateID>,
}

/// Threads at one position: NFA states with the start of their match, in ascending start.
struct Threads {
    dense: Vec<(StateID, usize)>,
    sparse: Vec<u32>,
}

impl Threads {
    fn new(states: usize) -> Threads {
        Threads {
            dense: Vec::with_capacity(states),
            sparse: vec![0; states],
        }
    }

    fn contains(&self, id: StateID) -> bool {
        let i = self.sparse[id.as_usize()] as usize;
        self.dense.get(i).is_some_and(|t| t.0 == id)
    }

    fn insert(&mut self, id: StateID, start: usize) {
        self.sparse[id.as_usize()] = self.dense.len() as u32;
        self.dense.push((id, start));
    }
}

impl Slow {
    /// Bytes per NFA state of the two thread lists and the stack.
    const BYTES_PER_STATE: usize = 2 * (16 + 4) + 4;

    fn new(nfa: &NFA) -> Slow {
        let n = nfa.states().len();
        Slow {
            cur: Threads::new(n),
            next: Threads::new(n),
            stack: Vec::new(),
        }
    }

    /// Where the leftmost match in `hay` starts. Threads stay in ascending start: each step
    /// visits them in order, and a new thread (starting here) comes after all of them.
    fn leftmost_start(&mut self, nfa: &NFA, hay: &[u8]) -> Option<usize> {
        let anchored = nfa.is_always_start_anchored();
        let mut best: Option<usize> = None;
        for at in 0..=hay.len() {
            if best.is_none() && (at == 0 || !anchored) {
                let start = nfa.start_anchored();
                closure(nfa, start, (at, at), hay, &mut self.cur, &mut self.stack);
            }
            self.next.dense.clear();
            let mut i = 0;
            while let Some(&(sid, start)) = self.cur.dense.get(i) {
                i += 1;
                if best.is_some_and(|b| start >= b) {
                    break;
                }
                let to = match nfa.state(sid) {
                    State::Match { .. } => {
                        // Every later thread starts here or after.
                        best = Some(start);
                        break;
                    }
                    State::ByteRange { trans } => trans.matches(hay, at).then_some(trans.next),
                    State::Sparse(t) => t.matches(hay, at),
                    State::Dense(t) => t.matches(hay, at),
                    _ => None,
                };
                if let Some(to) = to {
                    closure(
                        nfa,
                        to,
                        (at + 1, start),
                        hay,
                        &mut self.next,
                        &mut self.stack,
                    );
                }
            }
            interrupt::tick((i + self.next.dense.len()) as u64 * SLOW_UNITS);
            std::mem::swap(&mut self.cur, &mut self.next);
            if self.cur.dense.is_empty() && (best.is_some() || anchored) {
                break;
            }
        }
        best
    }
}

/// Adds `from` and every state it reaches without reading a byte at position `at` to `set`,
/// as threads whose match starts at `start` (a state already there keeps its earlier start).
fn closure(
    nfa: &NFA,
    from: StateID,
    (at, start): (usize, usize),
    hay: &[u8],
    set: &mut Threads,
    stack: &mut Vec<StateID>,
) {
    stack.push(from);
    while let Some(id) = stack.pop() {
        if set.contains(id) {
            continue;
        }
        set.insert(id, start);
        match nfa.state(id) {
            State::Union { alternates } => stack.extend(alternates.iter().rev()),
            State::BinaryUnion { alt1, alt2 } => stack.extend([*alt2, *alt1]),
            State::Capture { next, .. } => stack.push(*next),
            State::Look { look, next } if nfa.look_matcher().matches(*look, hay, at) => {
                stack.push(*next)
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn starts(
        pattern: &str,
        ignore_case: bool,
        hay: &[u8],
    ) -> Option<(Option<usize>, Option<usize>)> {
        let m = Matcher::new(pattern, ignore_case).ok()?;
        let slow = Slow::new(&m.nfa).leftmost_start(&m.nfa, hay);
        Some((m.re.find(hay).map(|x| x.start()), slow))
    }

    fn piece() -> impl Strategy<Value = String> {
        prop::sample::select(vec![
            "a",
            "b",
            "é",
            " ",
            ".",
            r"\b",
            r"\B",
            "^",
            "$",
            r"\w",
            r"[aé]",
            r"[^a ]",
            r"\s",
            r"(?-u:\b)",
            r"\A",
            r"\z",
            "x",
            "(?m:^)",
            "(?m:$)",
            r"\d",
            "ab",
            r"(?-u:\xE9)",
            r"(?-u:.)",
            r"\b{start}",
            r"\b{end}",
        ])
        .prop_map(str::to_owned)
    }

    fn pattern() -> impl Strategy<Value = String> {
        piece().prop_recursive(4, 24, 2, |inner| {
            prop_oneof![
                (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("{a}{b}")),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("(?:{a}|{b})")),
                inner.clone().prop_map(|a| format!("(?:{a})*")),
                inner.clone().prop_map(|a| format!("(?:{a})+?")),
                inner.clone().prop_map(|a| format!("(?:{a})?")),
                inner.prop_map(|a| format!("(?:{a}){{1,3}}")),
            ]
        })
    }

    fn text() -> impl Strategy<Value = Vec<u8>> {
        prop::collection::vec(
            prop::sample::select(vec!["a", "b", "é", " ", "x", "1", "\r"]),
            0..12,
        )
        .prop_flat_map(|parts| {
            let bytes = parts.concat().into_bytes();
            let n = bytes.len();
            (Just(bytes), 0..=n)
        })
        .prop_map(|(b, cut)| if cut % 5 == 1 { b[..cut].to_vec() } else { b })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]
        #[test]
        fn the_slow_engine_finds_the_start_the_regex_crate_finds(p in pattern(), ci in any::<bool>(), hay in text()) {
            if let Some((fast, slow)) = starts(&p, ci, &hay) {
                prop_assert_eq!(fast, slow, "pattern {:?} on {:?}", p, String::from_utf8_lossy(&hay));
            }
        }
    }

    #[test]
    fn patterns_past_the_state_ceiling_are_refused() {
        assert!(Matcher::new(r"\w{30}", false).is_err());
        assert!(Matcher::new(r"(?:\b[aé ]){2000}[^aé ]", false).is_ok());
    }
}

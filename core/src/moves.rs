//! The move rule: a path that went away and a path that appeared with the same content are
//! one move. Each target, in the order given, takes the first unpaired source (in the order
//! given) with an equal key. The staged tree's change set, the database's diff and the
//! Storage backend's diff all pair this way.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;

/// Sources and targets paired as moves, and those left over (each in its input order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paired<S, T> {
    pub moves: Vec<(S, T)>,
    pub sources: Vec<S>,
    pub targets: Vec<T>,
}

/// Pairs `sources` with `targets` by key (a content hash).
pub fn pair<K: Eq + Hash, S, T>(
    sources: impl IntoIterator<Item = (K, S)>,
    targets: impl IntoIterator<Item = (K, T)>,
) -> Paired<S, T> {
    let mut by_key: HashMap<K, VecDeque<(usize, S)>> = HashMap::new();
    for (i, (k, s)) in sources.into_iter().enumerate() {
        by_key.entry(k).or_default().push_back((i, s));
    }
    let mut moves = Vec::new();
    let mut left_targets = Vec::new();
    for (k, t) in targets {
        match by_key.get_mut(&k).and_then(VecDeque::pop_front) {
            Some((_, s)) => moves.push((s, t)),
            None => left_targets.push(t),
        }
    }
    let mut left: Vec<(usize, S)> = by_key.into_values().flatten().collect();
    left.sort_by_key(|(i, _)| *i);
    Paired {
        moves,
        sources: left.into_iter().map(|(_, s)| s).collect(),
        targets: left_targets,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn first_source_in_order_wins() {
        let p = pair(
            [("h", "/a"), ("x", "/b"), ("h", "/c")],
            [("h", "/d"), ("y", "/e"), ("h", "/f"), ("h", "/g")],
        );
        assert_eq!(p.moves, [("/a", "/d"), ("/c", "/f")]);
        assert_eq!(p.sources, ["/b"]);
        assert_eq!(p.targets, ["/e", "/g"]);
    }

    proptest! {
        #[test]
        fn every_item_lands_once(s in proptest::collection::vec(0u8..4, 0..12), t in proptest::collection::vec(0u8..4, 0..12)) {
            let p = pair(s.iter().copied().enumerate().map(|(i, k)| (k, i)), t.iter().copied().enumerate().map(|(i, k)| (k, i)));
            prop_assert_eq!(p.moves.len() + p.sources.len(), s.len());
            prop_assert_eq!(p.moves.len() + p.targets.len(), t.len());
            for (a, b) in &p.moves { prop_assert_eq!(s[*a], t[*b]); }
            prop_assert!(p.sources.windows(2).all(|w| w[0] < w[1]));
            for x in &p.sources { for y in &p.targets { prop_assert_ne!(s[*x], t[*y]); } }
        }
    }
}

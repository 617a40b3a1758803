//! Inode numbers of a mount: the kernel names files by number, the staged tree by path. A
//! path's number is derived from the path (the first 8 bytes of its SHA-256), so the same tree
//! mounted again shows the same numbers and git's index still matches its files after a
//! remount. A path keeps its number while it exists (renames carry numbers along); a number
//! whose path went is never handed out again in the session (a handle may still hold it), and a
//! number already taken moves on to the next free one, so the generation is always 0.

use std::collections::{BTreeMap, HashMap, HashSet};

/// The root directory's inode number (FUSE's `FUSE_ROOT_ID`).
pub const ROOT: u64 = 1;

/// A two-way map between inode numbers and canonical paths.
#[derive(Debug)]
pub struct Inodes {
    by_ino: HashMap<u64, String>,
    by_path: BTreeMap<String, u64>,
    /// Numbers whose path went in this session.
    retired: HashSet<u64>,
}

impl Default for Inodes {
    fn default() -> Self {
        let mut inodes = Inodes {
            by_ino: HashMap::new(),
            by_path: BTreeMap::new(),
            retired: HashSet::new(),
        };
        inodes.by_ino.insert(ROOT, "/".to_owned());
        inodes.by_path.insert("/".to_owned(), ROOT);
        inodes
    }
}

/// The number `path` asks for first: its hash, above the reserved 0 and `ROOT`.
pub fn stable_number(path: &str) -> u64 {
    let digest = supabash_core::hash::sha256(path.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_le_bytes(first).max(ROOT + 1)
}

/// `dir`'s child `name`.
pub fn child(dir: &str, name: &str) -> String {
    if dir == "/" {
        format!("/{name}")
    } else {
        format!("{dir}/{name}")
    }
}

/// Every key of `map` equal to `p` or below it.
fn subtree<V>(map: &BTreeMap<String, V>, p: &str) -> Vec<String> {
    let prefix = format!("{p}/");
    let mut keys: Vec<String> = map
        .range(prefix.clone()..)
        .take_while(|(k, _)| k.starts_with(&prefix))
        .map(|(k, _)| k.clone())
        .collect();
    if map.contains_key(p) {
        keys.push(p.to_owned());
    }
    keys
}

impl Inodes {
    /// The path of `ino`, if it still names one.
    pub fn path(&self, ino: u64) -> Option<&str> {
        self.by_ino.get(&ino).map(String::as_str)
    }

    /// The number of `path`, assigned on first sight (its stable number unless taken).
    pub fn ino(&mut self, path: &str) -> u64 {
        if let Some(ino) = self.by_path.get(path) {
            return *ino;
        }
        let mut ino = stable_number(path);
        while self.by_ino.contains_key(&ino) || self.retired.contains(&ino) {
            ino = ino.checked_add(1).unwrap_or(ROOT + 1);
        }
        self.by_path.insert(path.to_owned(), ino);
        self.by_ino.insert(ino, path.to_owned());
        ino
    }

    /// Forgets `path` and everything below it (after an unlink or rmdir). Open handles keep
    /// their inode numbers, which no longer name a path.
    pub fn remove(&mut self, path: &str) {
        for k in subtree(&self.by_path, path) {
            if let Some(ino) = self.by_path.remove(&k) {
                self.by_ino.remove(&ino);
                self.retired.insert(ino);
            }
        }
    }

    /// Carries the numbers of `from` and everything below it over to `to`; what `to` held
    /// before is forgotten.
    pub fn rename(&mut self, from: &str, to: &str) {
        self.remove(to);
        for k in subtree(&self.by_path, from) {
            if let Some(ino) = self.by_path.remove(&k) {
                let moved = format!("{to}{}", &k[from.len()..]);
                self.by_ino.insert(ino, moved.clone());
                self.by_path.insert(moved, ino);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_follow_renames_and_never_come_back() {
        let mut inodes = Inodes::default();
        let dir = inodes.ino("/a");
        let file = inodes.ino("/a/f");
        let other = inodes.ino("/b");
        assert_eq!(inodes.ino("/a/f"), file);
        inodes.rename("/a", "/b");
        assert_eq!(inodes.path(dir), Some("/b"));
        assert_eq!(inodes.path(file), Some("/b/f"));
        assert_eq!(
            inodes.path(other),
            None,
            "the overwritten target is forgotten"
        );
        inodes.remove("/b");
        assert_eq!(inodes.path(file), None);
        let again = inodes.ino("/b/f");
        assert_ne!(again, file, "numbers are not reused");
        assert_ne!(again, other);
        assert_eq!(inodes.path(ROOT), Some("/"));
        assert_eq!(child("/", "n"), "/n");
        assert_eq!(child("/d", "n"), "/d/n");
    }

    #[test]
    fn a_path_gets_the_same_number_in_every_session() {
        let mut first = Inodes::default();
        let mut second = Inodes::default();
        let paths = ["/src/main.rs", "/src", "/README.md", "/.git/index"];
        let numbers: Vec<u64> = paths.iter().map(|p| first.ino(p)).collect();
        let again: Vec<u64> = paths.iter().rev().map(|p| second.ino(p)).collect();
        let again: Vec<u64> = again.into_iter().rev().collect();
        assert_eq!(numbers, again, "the order of first sight does not matter");
        assert_eq!(numbers[0], stable_number("/src/main.rs"));
        assert!(numbers.iter().all(|n| *n > ROOT));
    }

    #[test]
    fn a_taken_number_moves_on_to_a_free_one() {
        let mut inodes = Inodes::default();
        let a = inodes.ino("/a");
        // "/b" pretends to collide: another path holds its number.
        inodes
            .by_ino
            .insert(stable_number("/b"), "/elsewhere".to_owned());
        let b = inodes.ino("/b");
        assert_ne!(b, stable_number("/b"));
        assert_ne!(a, b);
        assert_eq!(inodes.path(b), Some("/b"));
    }
}

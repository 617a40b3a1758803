//! Inode numbers of a mount: the kernel names files by number, the staged tree by path. A path
//! keeps its number while it exists (renames carry numbers along); numbers are never reused, so
//! the generation is always 0.

use std::collections::{BTreeMap, HashMap};

/// The root directory's inode number (FUSE's `FUSE_ROOT_ID`).
pub const ROOT: u64 = 1;

/// A two-way map between inode numbers and canonical paths.
#[derive(Debug)]
pub struct Inodes {
    by_ino: HashMap<u64, String>,
    by_path: BTreeMap<String, u64>,
    next: u64,
}

impl Default for Inodes {
    fn default() -> Self {
        let mut inodes = Inodes {
            by_ino: HashMap::new(),
            by_path: BTreeMap::new(),
            next: ROOT + 1,
        };
        inodes.by_ino.insert(ROOT, "/".to_owned());
        inodes.by_path.insert("/".to_owned(), ROOT);
        inodes
    }
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

/// Moves `from` and everything below it to `to` in `map`, dropping what `to` held.
pub fn move_subtree<V>(map: &mut BTreeMap<String, V>, from: &str, to: &str) {
    for k in subtree(map, to) {
        map.remove(&k);
    }
    for k in subtree(map, from) {
        if let Some(v) = map.remove(&k) {
            map.insert(format!("{to}{}", &k[from.len()..]), v);
        }
    }
}

impl Inodes {
    /// The path of `ino`, if it still names one.
    pub fn path(&self, ino: u64) -> Option<&str> {
        self.by_ino.get(&ino).map(String::as_str)
    }

    /// The number of `path`, assigned on first sight.
    pub fn ino(&mut self, path: &str) -> u64 {
        if let Some(ino) = self.by_path.get(path) {
            return *ino;
        }
        let ino = self.next;
        self.next += 1;
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
        assert!(again > other, "numbers are not reused");
        assert_eq!(inodes.path(ROOT), Some("/"));
    }

    #[test]
    fn subtree_moves_do_not_touch_siblings_with_a_common_prefix() {
        let mut map = BTreeMap::from([
            ("/a".to_owned(), 1),
            ("/a/x".to_owned(), 2),
            ("/ab".to_owned(), 3),
        ]);
        move_subtree(&mut map, "/a", "/c");
        let keys: Vec<&str> = map.keys().map(String::as_str).collect();
        assert_eq!(keys, ["/ab", "/c", "/c/x"]);
        assert_eq!(child("/", "n"), "/n");
        assert_eq!(child("/d", "n"), "/d/n");
    }
}

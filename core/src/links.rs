//! Symbolic links resolved the way the kernel resolves them once a tree is real files: every
//! link on a path is followed, component by component, and a `..` after a followed link
//! applies to the link's target, not to the link's own directory. A tree is materialised in a
//! directory (an export, a mount, `run`'s private directory) whose parent is the host's: a
//! `..` past the workspace root, or an absolute target, leaves it.
//!
//! [`check`] is the one rule every writer of links applies (the server's commit, the staged
//! tree, import) and every reader that materialises a tree applies again: a link must resolve
//! inside the workspace within [`MAX_FOLLOWS`] links. A path component that is not a link
//! counts as a directory, whether it exists or not, so the answer holds whatever files and
//! directories are added later: only a change to the tree's links can change it.
//!
//! `/x/y/b → ../..` resolves to `/`; `/x/y/c → b/../../../etc` then climbs from `/` and leaves
//! the workspace, although its target, read as text against `/x/y`, stays inside.

use crate::path;
use std::collections::BTreeMap;
use std::fmt;

/// How many links one resolution follows at most (Linux's `MAXSYMLINKS`): more is a loop.
pub const MAX_FOLLOWS: usize = 40;

/// How a link's absolute target is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Absolute {
    /// It leaves the workspace (the kernel reads it from the host's root): refused.
    Escapes,
    /// From the workspace root, as the staged tree reads it for the shell (an absolute target
    /// is never committed: see [`crate::posix::check_target`]).
    FromRoot,
}

/// Why a path or link does not resolve inside the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkError {
    /// Following `link` (whose target is `target`) leaves the workspace: a `..` past its root
    /// or, with [`Absolute::Escapes`], an absolute target.
    Escapes { link: String, target: String },
    /// More than [`MAX_FOLLOWS`] links on the way: a loop, or a chain too long.
    TooManyLinks,
}

impl LinkError {
    /// A short, stable reason code (used in error details).
    pub fn reason(&self) -> &'static str {
        match self {
            LinkError::Escapes { .. } => "link-escapes-root",
            LinkError::TooManyLinks => "too-many-links",
        }
    }

    /// The error message for a problem found resolving the link or path `at`.
    pub fn message(&self, at: &str) -> String {
        match self {
            LinkError::Escapes { link, target } if link == at => format!(
                "{at:?}: the symbolic link's target {target:?} leads outside the workspace once the links on its way are followed as the kernel follows them"
            ),
            LinkError::Escapes { link, target } => format!(
                "{at:?}: resolving it follows {link:?} (target {target:?}), which leads outside the workspace as the kernel follows links"
            ),
            LinkError::TooManyLinks => format!(
                "{at:?}: more than {MAX_FOLLOWS} symbolic links on the way (a loop of links?)"
            ),
        }
    }
}

impl fmt::Display for LinkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LinkError::Escapes { link, .. } => f.write_str(&self.message(link)),
            LinkError::TooManyLinks => f.write_str(&self.message("path")),
        }
    }
}

impl std::error::Error for LinkError {}

/// Resolves the absolute path `path` following every symbolic link on it (the last component
/// too when `follow_last`), as the kernel does. `target_of` answers a link's target for a
/// path (`None`: not a link). Returns the resolved path (`/` for the root).
pub fn resolve(
    path: &str,
    follow_last: bool,
    absolute: Absolute,
    mut target_of: impl FnMut(&str) -> Option<String>,
) -> Result<String, LinkError> {
    // Components still to walk, the next one last; and the resolved segments so far.
    let mut pending: Vec<String> = path.rsplit('/').map(str::to_owned).collect();
    let mut resolved: Vec<String> = Vec::new();
    let mut follows = 0usize;
    let mut via: Option<(String, String)> = None;
    let escape = |via: &Option<(String, String)>| {
        let (link, target) = via
            .clone()
            .unwrap_or_else(|| (path.to_owned(), String::new()));
        LinkError::Escapes { link, target }
    };
    while let Some(component) = pending.pop() {
        match component.as_str() {
            "" | "." => continue,
            ".." => {
                if resolved.pop().is_none() {
                    return Err(escape(&via));
                }
                continue;
            }
            _ => {}
        }
        resolved.push(component);
        if pending.iter().all(|c| c.is_empty()) && !follow_last {
            continue;
        }
        let here = format!("/{}", resolved.join("/"));
        let Some(target) = target_of(&here) else {
            continue;
        };
        follows += 1;
        if follows > MAX_FOLLOWS {
            return Err(LinkError::TooManyLinks);
        }
        resolved.pop();
        if target.starts_with('/') {
            if absolute == Absolute::Escapes {
                return Err(LinkError::Escapes { link: here, target });
            }
            resolved.clear();
        }
        pending.extend(target.rsplit('/').map(str::to_owned));
        via = Some((here, target));
    }
    Ok(format!("/{}", resolved.join("/")))
}

/// Checks the link at `link` (a canonical path `target_of` answers for): it resolves inside
/// the workspace, every link on its way followed, within [`MAX_FOLLOWS`] links. Returns what
/// it resolves to; a refusal names `link` itself, with its own target.
pub fn check(
    link: &str,
    absolute: Absolute,
    mut target_of: impl FnMut(&str) -> Option<String>,
) -> Result<String, LinkError> {
    let own = target_of(link).unwrap_or_default();
    resolve(link, true, absolute, &mut target_of).map_err(|e| match e {
        LinkError::Escapes { .. } => LinkError::Escapes {
            link: link.to_owned(),
            target: own,
        },
        e => e,
    })
}

/// Checks every link of `links` (path → target) with [`check`] against the links of `links`
/// themselves; the first refused one, in path order, with why. The cost is one resolution per
/// link, each at most [`MAX_FOLLOWS`] links long.
pub fn check_all<'a, I>(links: I, absolute: Absolute) -> Result<(), (String, LinkError)>
where
    I: IntoIterator<Item = (&'a String, &'a String)>,
    I::IntoIter: Clone,
{
    let links = links.into_iter();
    let map: BTreeMap<&str, &str> = links
        .clone()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    for (p, _) in links {
        check(p, absolute, |q| map.get(q).map(|t| (*t).to_owned())).map_err(|e| (p.clone(), e))?;
    }
    Ok(())
}

/// The links of `links` (path → target) to leave out, each with why, so that every other one
/// resolves inside the workspace among the links kept: for a writer that materialises a tree
/// it did not check (a database written around the checks) or stages one from disk. Leaving a
/// link out can change another's resolution, so it is repeated until nothing more is refused.
pub fn refused(
    links: &BTreeMap<String, String>,
    absolute: Absolute,
) -> BTreeMap<String, LinkError> {
    let mut kept: BTreeMap<&str, &str> = links
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    let mut out = BTreeMap::new();
    loop {
        let bad: Vec<(String, LinkError)> = kept
            .keys()
            .filter_map(|p| {
                check(p, absolute, |q| kept.get(q).map(|t| (*t).to_owned()))
                    .err()
                    .map(|e| ((*p).to_owned(), e))
            })
            .collect();
        if bad.is_empty() {
            return out;
        }
        for (p, e) in bad {
            kept.remove(p.as_str());
            out.insert(p, e);
        }
    }
}

/// Whether `p` (canonical) or any of its ancestors is a key `is_link` says is a link: a path
/// a writer must not create through.
pub fn below_link(p: &str, mut is_link: impl FnMut(&str) -> bool) -> Option<String> {
    let mut dir = path::parent(p);
    let mut found = None;
    while dir != "/" {
        if is_link(dir) {
            found = Some(dir.to_owned());
        }
        dir = path::parent(dir);
    }
    found
}

#[cfg(test)]
mod tests;

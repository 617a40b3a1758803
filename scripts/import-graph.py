#!/usr/bin/env python3
"""The module import graph of each crate, and its loops.

For every `.rs` file under a crate's `src/`, every `crate::…`, `super::…` and `self::…` path
(a name the crate root re-exports counted as the module it comes from)
it names in code (not in comments, nor in its `#[cfg(test)]` tail) is an edge to the module that path lands in. A
module may use its own children and its ancestors (that is Rust's nesting, not a loop); any
other edge is counted between the two siblings where the paths part. A loop is a cycle
among siblings. Test-only files (`tests.rs`, `*_tests.rs`) are left out.

    scripts/import-graph.py            # every crate: loops only; exit 1 if there is one
    scripts/import-graph.py --edges    # also print each sibling edge
"""
import os
import re
import sys
from collections import defaultdict

CRATES = ["core/src", "extension/src", "client/src", "client/agent/src", "client/cli/src",
          "devcluster/src", "tests/src", "bench/src"]


def module_of(root, path):
    parts = os.path.relpath(path, root)[:-3].split(os.sep)
    if parts[-1] == "mod":
        parts = parts[:-1]
    if parts in (["lib"], ["main"]):
        return ()
    return tuple(parts)


def names_in(group):
    """`a::{b, c::d}` as a list of paths."""
    out = []
    depth, cur = 0, ""
    for ch in group:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


PATH = re.compile(r"\b(crate|super|self)::((?:[A-Za-z_0-9]+::)*)(\{[^;]*?\}|[A-Za-z_0-9]+)")


def targets(module, src):
    for m in PATH.finditer(src):
        head, mid, last = m.group(1), m.group(2), m.group(3)
        base = {"crate": (), "self": module, "super": module[:-1]}[head]
        mids = tuple(p for p in mid.split("::") if p)
        if last.startswith("{"):
            for inner in names_in(last[1:-1]):
                yield base + mids + tuple(p for p in inner.split(" as ")[0].split("::") if p)
        else:
            yield base + mids + (last,)


def reexports(root, modules):
    """Names the crate root re-exports (`pub use a::b::{C, d}`), each with its module."""
    out = {}
    lib = modules.get(())
    if not lib:
        return out
    for m in re.finditer(r"pub use (?:crate::)?([a-z_0-9:]+?)::(\{[^;]*\}|[A-Za-z_0-9]+);",
                         open(lib, encoding="utf-8").read()):
        module = tuple(m.group(1).split("::"))
        names = names_in(m.group(2)[1:-1]) if m.group(2).startswith("{") else [m.group(2)]
        for name in names:
            parts = name.split(" as ")
            out[parts[-1].strip().split("::")[-1]] = module + tuple(parts[0].strip().split("::")[:-1])
    return out


def graph(root):
    modules = {}
    for d, _, files in os.walk(root):
        for f in files:
            if f.endswith(".rs"):
                p = os.path.join(d, f)
                modules[module_of(root, p)] = p
    exported = reexports(root, modules)
    edges = defaultdict(set)
    for module, path in modules.items():
        if module and (module[-1] == "tests" or module[-1].endswith("_tests")):
            continue
        src = open(path, encoding="utf-8").read()
        cut = src.find("#[cfg(test)]\nmod ")
        if cut >= 0:
            src = src[:cut]
        src = re.sub(r"//[^\n]*", "", src)  # comments and doc links are not imports
        for t in targets(module, src):
            if t and t[0] not in modules and t[0] in exported and len(module) > 0:
                t = exported[t[0]] + t[1:]  # `crate::Name` through the root's re-export
            while t and t not in modules:  # a function or type: the module holding it
                t = t[:-1]
            k = 0
            while k < min(len(t), len(module)) and t[k] == module[k]:
                k += 1
            if k == len(t) or k == len(module):
                continue  # an ancestor or a descendant
            edges["::".join(module[:k + 1])].add("::".join(t[:k + 1]))
    return edges


def loops(edges):
    index, low, stack, on, found = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(set(edges) | {w for ws in edges.values() for w in ws}):
        if v not in index:
            visit(v)
    return found


def main():
    top = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    bad = 0
    for crate in CRATES:
        root = os.path.join(top, crate)
        if not os.path.isdir(root):
            continue
        edges = graph(root)
        found = loops(edges)
        print(f"{crate}: {len(edges)} modules import siblings, "
              f"{'no loop' if not found else 'loops: ' + '; '.join(' <-> '.join(c) for c in found)}")
        if "--edges" in sys.argv:
            for a in sorted(edges):
                print(f"  {a} -> {', '.join(sorted(edges[a]))}")
        bad += len(found)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()

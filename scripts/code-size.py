#!/usr/bin/env python3
"""Room sizes of the live code: no source file over 800 lines, no function over 100.

Live code is every `.rs` file under the shipped crates' `src/` (core, extension, client, agent,
CLI, and the dev cluster the demo uses; not the test harness or the benchmarks) except test modules (`tests.rs`,
`*_tests.rs`, `pg_tests.rs`) and the `#[cfg(test)]` tail of a file. A function's length runs
from its `fn` line to its closing brace. Exit 1 when a limit is passed, naming each place.

    scripts/code-size.py
"""
import os
import re
import sys

CRATES = ["core/src", "extension/src", "client/src", "client/agent/src", "client/cli/src",
          "devcluster/src"]
MAX_FILE_LINES = 800
MAX_FN_LINES = 100
FN = re.compile(r"^\s*(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?fn\s+([a-z_0-9]+)")
STRING = re.compile(r'"(\\.|[^"\\])*"')


def live_lines(path):
    lines = open(path, encoding="utf-8").read().split("\n")
    for i, line in enumerate(lines):
        if line.startswith("#[cfg(test)]") and i + 1 < len(lines) and lines[i + 1].startswith("mod "):
            return lines[:i]
    return lines


def long_functions(lines):
    for i, line in enumerate(lines):
        m = FN.match(line)
        if not m:
            continue
        depth, started = 0, False
        for j in range(i, len(lines)):
            code = STRING.sub('""', lines[j]).split("//")[0]
            if not started and ";" in code and "{" not in code:
                break  # a declaration without a body
            depth += code.count("{") - code.count("}")
            started = started or "{" in code
            if started and depth <= 0:
                if j - i + 1 > MAX_FN_LINES:
                    yield i + 1, m.group(6), j - i + 1
                break


def main():
    top = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    bad = []
    for crate in CRATES:
        for root, _, files in os.walk(os.path.join(top, crate)):
            for f in sorted(files):
                if not f.endswith(".rs") or f in ("tests.rs", "pg_tests.rs") or f.endswith("_tests.rs"):
                    continue
                path = os.path.join(root, f)
                rel = os.path.relpath(path, top)
                lines = live_lines(path)
                if len(lines) > MAX_FILE_LINES:
                    bad.append(f"{rel}: {len(lines)} lines (at most {MAX_FILE_LINES})")
                for at, name, n in long_functions(lines):
                    bad.append(f"{rel}:{at}: fn {name} is {n} lines (at most {MAX_FN_LINES})")
    for b in bad:
        print(b)
    print(f"code-size: {len(bad)} over the limits" if bad else "code-size: every file and function within the limits")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""List the functions of crates/*/src longer than a limit (default 120 lines), longest
first, and count them: `python3 scripts/fn-lengths.py [LIMIT] [FILE...]`.

A function's length runs from its `fn` line to its closing brace (braces counted outside
strings, chars and `//` comments: a heuristic, not a parser). Exits 0 always; the last line
is `count N`.
"""
import glob
import re
import sys

FN = re.compile(
    r'^\s*(pub(\([^)]*\))?\s+)?(async\s+)?(const\s+)?(unsafe\s+)?(extern\s+"C"\s+)?fn\s+(\w+)'
)


def code(line):
    line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
    line = re.sub(r"'(\\.|[^'\\])'", "''", line)
    i = line.find("//")
    return line if i < 0 else line[:i]


def lengths(path):
    lines = open(path, encoding="utf-8").read().split("\n")
    for i, line in enumerate(lines):
        m = FN.match(line)
        if not m:
            continue
        depth, started, j = 0, False, i
        while j < len(lines):
            s = code(lines[j])
            if not started and ";" in s and "{" not in s:
                break  # a declaration without a body
            for c in s:
                if c == "{":
                    depth, started = depth + 1, True
                elif c == "}":
                    depth -= 1
            if started and depth <= 0:
                break
            j += 1
        if started:
            yield j - i + 1, path, i + 1, m.group(7)


def main():
    limit = int(sys.argv[1]) if len(sys.argv) > 1 else 120
    files = sys.argv[2:] or sorted(glob.glob("crates/*/src/**/*.rs", recursive=True))
    long = sorted((f for p in files for f in lengths(p) if f[0] > limit), reverse=True)
    for n, path, line, name in long:
        print(f"{n} {path}:{line} {name}")
    print(f"count {len(long)}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Sum an e2e tier's per-test durations by test group: `python3 scripts/tier-sums.py LOG [N]`.

LOG is the output of the e2e step (`cargo nextest run --features e2e --profile e2e`), or
the whole `bash .ci/run` output (then only the lines after its `==> scripts/test.sh: e2e:`
header and before the next step's count); nextest prints one `PASS [ 12.345s] (i/n) BINARY TEST`
line per test. The heavy group's members come from nextest itself
(`cargo nextest show-config test-groups --features e2e --profile e2e`, run here, so run
this from the same checkout and CARGO_TARGET_DIR the log came from: it builds nothing new
then). Prints each group's count and sum, and the N longest tests of each (default 5).

The heavy group runs one test at a time and so does the light group; the larger sum is a
floor under the tier's wall time (docs/TESTING.md, "What the e2e tier's time is made of").
"""
import re
import subprocess
import sys

RESULT = re.compile(r"^\s*(PASS|FAIL|SIGSEGV|SIGABRT|TIMEOUT)\s+\[\s*([\d.]+)s\]\s+(?:\(\s*\d+/\d+\)\s+)?(\S+)\s+(\S+)\s*$")


def heavy_tests():
    """The (binary id, test name) pairs nextest puts in the heavy group."""
    out = subprocess.run(
        ["cargo", "nextest", "show-config", "test-groups", "--features", "e2e", "--profile", "e2e"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    members, group, binary = set(), None, None
    for line in out.splitlines():
        m = re.match(r"^group: (\S+)", line)
        if m:
            group = m.group(1)
            continue
        m = re.match(r"^ {6}(\S+):$", line)
        if m:
            binary = m.group(1)
            continue
        m = re.match(r"^ {10}(\S+)$", line)
        if m and group == "heavy" and binary:
            members.add((binary, m.group(1)))
    return members


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(sys.argv) >= 2 else 2
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    heavy = heavy_tests()
    if not heavy:
        print("tier-sums: nextest listed no heavy test (is this the repo's root?)", file=sys.stderr)
        return 1
    groups = {"heavy": [], "light": []}
    with open(sys.argv[1], encoding="utf-8", errors="replace") as f:
        lines = f.read().splitlines()
    steps = [i for i, l in enumerate(lines) if l.startswith("==> scripts/test.sh: ")]
    e2e = [i for i in steps if lines[i].startswith("==> scripts/test.sh: e2e:")]
    if e2e:
        end = min([i for i in steps if i > e2e[0]] or [len(lines)])
        lines = lines[e2e[0] : end]
    for line in lines:
        m = RESULT.match(line)
        if not m:
            continue
        _, secs, binary, test = m.groups()
        group = "heavy" if (binary, test) in heavy else "light"
        groups[group].append((float(secs), f"{binary} {test}"))
    if not any(groups.values()):
        print(f"tier-sums: no `PASS [ N s]` lines in {sys.argv[1]}", file=sys.stderr)
        return 1
    for name, tests in groups.items():
        tests.sort(reverse=True)
        print(f"{name}: {len(tests)} tests, {sum(t for t, _ in tests):,.0f} s")
        for secs, test in tests[:top]:
            print(f"  {secs:7.1f} s  {test}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Prove the workspace has no import cycles: between crates, and between the modules of
each crate target (lib, bin, integration-test crates).

Crates: the workspace members' normal and build dependencies on each other, from
`cargo metadata --no-deps` (cargo refuses a cycle there too; printed for the record).

Modules: every file module reachable from a crate root through `mod NAME;` (inline
`mod NAME { ... }` blocks belong to their file). A reference is a path starting with
`crate::`, `super::` or `self::`, in a `use` tree or anywhere in the code (comments and
string literals are ignored). Each resolves to the longest module prefix it names, refined
through the target's own `pub use child::Name` re-exports. A reference between a module and
its own ancestor or descendant is containment, not a dependency; any other reference A -> B
becomes an edge between the children of their lowest common ancestor that contain A and B
(siblings at one level). A strongly connected component of more than one module is a cycle:
it is printed with the references that make it, and the script exits 1.

Usage: scripts/check-module-cycles.py [--verbose] [--self-test] [WORKSPACE_DIR]
"""

import json
import os
import re
import subprocess
import sys
import tempfile
from collections import defaultdict

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"

# Cycles that predate this check, each with why it stays for now. A listed cycle that
# changes (more modules) or disappears fails the check, so the list only shrinks.
KNOWN: dict = {}


def strip(text):
    """Blank out comments, string and char literals (newlines kept, so lines still count)."""
    out = []
    i, n = 0, len(text)

    def blank(s):
        return "".join("\n" if c == "\n" else " " for c in s)

    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(blank(text[i:j]))
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(blank(text[i:j]))
            i = j
        elif re.match(r'(b?r#*")', text[i:i + 8]) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'b?r(#*)"', text[i:])
            end = '"' + m.group(1)
            j = text.find(end, i + m.end())
            j = n if j < 0 else j + len(end)
            out.append(blank(text[i:j]))
            i = j
        elif c == '"' or (c == "b" and text.startswith('b"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_"))):
            j = i + (2 if c == "b" else 1)
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(blank(text[i:j + 1]))
            i = j + 1
        elif c == "'":
            # A char literal ('x', '\n', '\'', '\u{1F600}') or a lifetime ('a).
            if text.startswith("\\", i + 1):
                j = text.find("'", i + 3)
                j = n if j < 0 else j + 1
                out.append(blank(text[i:j]))
                i = j
            elif i + 2 < n and text[i + 2] == "'":
                out.append("   ")
                i += 3
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def expand_use(tree):
    """`a::{b, c::{d as e, self}}` -> [['a','b'], ['a','c','d'], ['a','c']] (aliases dropped);
    the final segment of each is the imported name."""
    tree = re.sub(r"\s*(::|\{|\}|,)\s*", r"\1", tree.strip())
    tree = re.sub(r"\s+as\s+" + IDENT, "", tree)

    def split_top(s):
        parts, depth, cur = [], 0, ""
        for ch in s:
            depth += {"{": 1, "}": -1}.get(ch, 0)
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
            else:
                cur += ch
        return parts + ([cur] if cur else [])

    def go(prefix, s):
        if "{" in s:
            head, rest = s.split("{", 1)
            rest = rest[: rest.rfind("}")]
            head = [p for p in head.split("::") if p]
            return [out for part in split_top(rest) for out in go(prefix + head, part)]
        segs = prefix + [p for p in s.split("::") if p]
        if segs and segs[-1] == "self":
            segs = segs[:-1]
        return [segs] if segs else []

    return go([], tree)


class Target:
    """One crate target: its file modules and the references between them."""

    def __init__(self, name, root):
        self.name = name
        self.root = root
        self.modules = {}  # tuple(path) -> file
        self.reexports = {}  # (module tuple, name) -> child module tuple
        self.refs = []  # (src module, dst module, file, line, text)
        self._walk((), root, True)
        for mod, path in list(self.modules.items()):
            self._references(mod, path)

    def _walk(self, mod, path, is_dir_owner):
        self.modules[mod] = path
        text = strip(open(path, encoding="utf-8").read())
        base = os.path.dirname(path)
        if not is_dir_owner:
            base = os.path.join(base, os.path.splitext(os.path.basename(path))[0])
        for m in re.finditer(r"(?:#\[path\s*=\s*\"([^\"]+)\"\]\s*)?\bmod\s+(" + IDENT + r")\s*;", text):
            name = m.group(2)
            for cand, owner in ((os.path.join(base, name + ".rs"), False), (os.path.join(base, name, "mod.rs"), True)):
                if os.path.exists(cand):
                    self._walk(mod + (name,), cand, owner)
                    break
        for m in re.finditer(r"\bpub(?:\([^)]*\))?\s+use\s+([^;]+);", text):
            for segs in expand_use(m.group(1)):
                if segs and segs[0] == "self":
                    segs = segs[1:]
                if len(segs) >= 2:
                    self.reexports[(mod, segs[-1])] = mod + (segs[0],)

    def _inline_at(self, text):
        """For each offset, the inline module path (list) in force: computed lazily."""
        spans = []  # (start, end, name)
        stack = []
        depth = 0
        pending = None
        for m in re.finditer(r"\bmod\s+(" + IDENT + r")\s*\{|[{}]", text):
            tok = m.group(0)
            if tok.startswith("mod"):
                depth += 1
                stack.append((m.group(1), depth, m.start()))
            elif tok == "{":
                depth += 1
            else:
                if stack and stack[-1][1] == depth:
                    name, _, start = stack.pop()
                    spans.append((start, m.end(), name, len(stack)))
                depth -= 1

        def at(off):
            inside = sorted([s for s in spans if s[0] <= off < s[1]], key=lambda s: s[3])
            return [s[2] for s in inside]

        return at

    def _resolve(self, mod, segs):
        cur = list(mod)
        i = 0
        if segs[0] == "crate":
            cur, i = [], 1
        elif segs[0] in ("super", "self"):
            while i < len(segs) and segs[i] in ("super", "self"):
                if segs[i] == "super":
                    if not cur:
                        return None
                    cur.pop()
                i += 1
        else:
            return None
        full = cur + segs[i:]
        best = ()
        for k in range(len(full), -1, -1):
            if tuple(full[:k]) in self.modules:
                best = tuple(full[:k])
                rest = full[k:]
                break
        while rest and (best, rest[0]) in self.reexports:
            best = self.reexports[(best, rest[0])]
            rest = rest[1:]
        return best

    def _references(self, mod, path):
        raw = open(path, encoding="utf-8").read()
        text = strip(raw)
        inline = self._inline_at(text)
        found = []
        for m in re.finditer(r"\buse\s+([^;]+);", text):
            for segs in expand_use(m.group(1)):
                if segs and segs[0] in ("crate", "super", "self"):
                    found.append((m.start(), segs))
        for m in re.finditer(r"\b(crate|super|self)((?:\s*::\s*" + IDENT + r")+)", text):
            segs = [m.group(1)] + [s for s in re.split(r"\s*::\s*", m.group(2)) if s]
            found.append((m.start(), segs))
        for off, segs in found:
            here = tuple(list(mod) + inline(off))
            dst = self._resolve(here, segs)
            if dst is None or dst == mod:
                continue
            line = text.count("\n", 0, off) + 1
            self.refs.append((mod, dst, path, line, "::".join(segs)))

    def sibling_edges(self):
        edges = defaultdict(list)
        for src, dst, path, line, what in self.refs:
            k = 0
            while k < min(len(src), len(dst)) and src[k] == dst[k]:
                k += 1
            if k == len(src) or k == len(dst):
                continue  # ancestor and descendant: containment
            a, b = src[: k + 1], dst[: k + 1]
            edges[(a, b)].append((path, line, what))
        return edges


def sccs(nodes, succ):
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in succ.get(v, ()):
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
            out.append(comp)

    sys.setrecursionlimit(10000)
    for v in nodes:
        if v not in index:
            visit(v)
    return out


def name(mod):
    return "crate" if not mod else "crate::" + "::".join(mod)


def check_target(t, verbose, known=None):
    known = KNOWN if known is None else known
    edges = t.sibling_edges()
    succ = defaultdict(set)
    nodes = set(t.modules)
    for (a, b) in edges:
        succ[a].add(b)
        nodes.update((a, b))
    cycles = [c for c in sccs(sorted(nodes), succ) if len(c) > 1]
    allowed = [c for c in cycles if (t.name, frozenset(name(m) for m in c)) in known]
    bad = [c for c in cycles if c not in allowed]
    gone = [k for k in known if k[0] == t.name and k[1] not in {frozenset(name(m) for m in c) for c in allowed}]
    print(f"{t.name}: {len(t.modules)} module(s), {len(edges)} dependency edge(s) between siblings, "
          + (f"{len(bad)} CYCLE(S)" if bad else "no cycles")
          + (f" apart from {len(allowed)} known one(s)" if allowed else ""))
    if verbose:
        for (a, b) in sorted(edges):
            print(f"    {name(a)} -> {name(b)}")
    for c in allowed:
        print("  known cycle among " + ", ".join(sorted(name(m) for m in c)) + ": "
              + known[(t.name, frozenset(name(m) for m in c))])
    for k in gone:
        print("  the known cycle among " + ", ".join(sorted(k[1])) + " is gone: remove it from KNOWN")
    for comp in bad:
        members = set(comp)
        print("  cycle among: " + ", ".join(sorted(name(m) for m in comp)))
        for (a, b), ev in sorted(edges.items()):
            if a in members and b in members:
                path, line, what = ev[0]
                print(f"    {name(a)} -> {name(b)}: {os.path.relpath(path)}:{line} ({what})")
    return not bad and not gone


def targets_of(crate_dir, crate):
    out = []
    src = os.path.join(crate_dir, "src")
    for root, kind in (("lib.rs", "lib"), ("main.rs", "bin")):
        p = os.path.join(src, root)
        if os.path.exists(p):
            out.append(Target(f"{crate} ({kind})", p))
    tests = os.path.join(crate_dir, "tests")
    if os.path.isdir(tests):
        for d in sorted(os.listdir(tests)):
            p = os.path.join(tests, d, "main.rs")
            if os.path.exists(p):
                out.append(Target(f"{crate} (test {d})", p))
    return out


def check_crates(ws):
    meta = json.loads(subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--no-deps", "--offline"],
        cwd=ws, check=True, capture_output=True, text=True).stdout)
    members = {p["name"]: p for p in meta["packages"]}
    succ = {n: sorted({d["name"] for d in p["dependencies"] if d["name"] in members and d["kind"] in (None, "build")})
            for n, p in members.items()}
    bad = [c for c in sccs(sorted(succ), succ) if len(c) > 1]
    print("crates: " + "; ".join(f"{n} -> {', '.join(succ[n]) or '-'}" for n in sorted(succ)))
    print(f"crates: {len(succ)} workspace crate(s), " + ("no cycles" if not bad else f"CYCLE among {bad}"))
    return members, not bad


def self_test():
    """The checker finds a sibling cycle, ignores containment, and sees through re-exports."""
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "src")
        os.makedirs(os.path.join(src, "fam"))
        files = {
            "lib.rs": "pub mod a;\npub mod b;\npub mod fam;\n",
            "a.rs": "// crate::b::x in a comment is not a reference\nuse crate::fam::Thing;\npub fn f() { let _s = \"crate::b::y\"; }\n",
            "b.rs": "pub fn g() { crate::a::f(); }\n#[cfg(test)]\nmod tests {\n    use super::*;\n}\n",
            "fam/mod.rs": "mod plan;\nmod run;\npub use run::Thing;\n",
            "fam/plan.rs": "use super::run::Thing;\n",
            "fam/run.rs": "pub struct Thing;\nfn h() -> char { '\"' }\n",
        }
        for f, body in files.items():
            with open(os.path.join(src, f), "w") as fh:
                fh.write(body)
        t = Target("selftest (lib)", os.path.join(src, "lib.rs"))
        e = t.sibling_edges()
        assert set(e) == {(("a",), ("fam",)), (("b",), ("a",)), (("fam", "plan"), ("fam", "run"))}, sorted(e)
        assert check_target(t, False, {})
        with open(os.path.join(src, "fam", "run.rs"), "a") as fh:
            fh.write("fn back() { super::plan::nothing(); }\n")
        with open(os.path.join(src, "a.rs"), "a") as fh:
            fh.write("use crate::b::g;\n")
        t = Target("selftest (lib, with cycles)", os.path.join(src, "lib.rs"))
        assert not check_target(t, False, {}), "cycles must be found"
        allow = {("selftest (lib, with cycles)", frozenset({"crate::a", "crate::b"})): "test"}
        assert not check_target(t, False, allow), "an unlisted cycle still fails"
        allow[("selftest (lib, with cycles)", frozenset({"crate::fam::plan", "crate::fam::run"}))] = "test"
        assert check_target(t, False, allow), "listed cycles pass"
        allow[("selftest (lib, with cycles)", frozenset({"crate::x", "crate::y"}))] = "test"
        assert not check_target(t, False, allow), "a listed cycle that is gone fails"
        comps = [c for c in sccs(sorted(t.modules), {k: {b for (a, b) in t.sibling_edges() if a == k} for k in t.modules}) if len(c) > 1]
        assert sorted(sorted(c) for c in comps) == [[("a",), ("b",)], [("fam", "plan"), ("fam", "run")]], comps
    print("self-test: ok")


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    verbose = "--verbose" in sys.argv
    if "--self-test" in sys.argv:
        self_test()
    ws = os.path.abspath(args[0] if args else os.path.join(os.path.dirname(__file__), ".."))
    members, ok = check_crates(ws)
    for crate, p in sorted(members.items()):
        for t in targets_of(os.path.dirname(p["manifest_path"]), crate):
            ok = check_target(t, verbose) and ok
    if not ok:
        print("check-module-cycles: FAILED")
        sys.exit(1)
    print("check-module-cycles: no cycles" + (f" (apart from the {len(KNOWN)} known one(s) listed in KNOWN)" if KNOWN else ""))


if __name__ == "__main__":
    main()

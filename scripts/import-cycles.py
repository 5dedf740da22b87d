#!/usr/bin/env python3
"""Fail on an import cycle between the modules of the core crate (`src/`).

Usage: scripts/import-cycles.py [--layers] [SRC_DIR]   (default: src/ of this repository)
       scripts/import-cycles.py --self-test

`--layers` also prints the modules in layers when there is no cycle, each layer importing
only the ones below it.

What counts as an import: every path that starts with `crate::` (or `$crate::`, `super::`,
`self::`) in the code of a file, outside comments and string literals: the paths of `use`
items, nested brace groups of a multi-line `use` included, and paths written inline
(`crate::purge::sweep(reg)`). Each path resolves to the file that defines the module it names
(the deepest `a.rs`, `a/mod.rs`, `a/b.rs`, ... that exists along it). A path through a
re-export of `lib.rs` (`crate::Pool`, `crate::{SubmitError, LaneId}`) resolves to the module
that `lib.rs` re-exports it from.

The units of the graph:
- A top-level module and its private child files are one unit: `registry.rs` with
  `registry/*.rs`, `worker.rs` with `worker/*.rs`. Its child files are chapters of one
  module (`impl Registry` is split over them, so a use of `Registry` is a use of every
  chapter), so imports between them are internal and never a cycle; an import from any of
  them to another unit is an edge of the whole unit.
- A child declared `pub(crate) mod` is a module of its own that the rest of the crate
  imports by its path, so it is its own unit (`metrics::counters`, `sleep::barrier`): the
  engine may import the counters, and `metrics/mod.rs`, which reads the registry to make
  `Stats`, is a feature above it.
- The modules of `GROUPS` below count as one unit each: the engine's core ("engine"), whose
  files call each other by design (rayon-core's `registry.rs` and `latch.rs` do too). The
  check then says what matters for layering: nothing below the engine imports it, the
  engine imports no feature, and no two other modules import each other. So the pool
  handle (`pool.rs`) imports none of the features it offers as its methods: each feature
  adds its methods in an `impl Pool` of its own file (`Pool::scope` in `scope.rs`,
  `Pool::builder` in `builder.rs`, `PoolBuilder::build_global` in `global.rs`) and imports
  the handle. A new module that closes a cycle with the engine either belongs to it (say
  so there) or must not import what it imports.
- `lib.rs` is the root: it declares the modules and re-exports the public surface, so it is
  no unit; its re-exports are followed to the module that defines the item.
- Tests are excluded: they may import anything. An item under a `#[cfg(...)]` that holds only
  in tests (`test` in it, outside any `not(...)`: the `mod tests { ... }` blocks, a test-only
  `use` or `fn`) is skipped, and so is every file declared by such a `mod name;`
  (`loom_tests.rs`).

Known limit: a `super::` path inside an inline `mod name { ... }` is resolved from the file's
module, one level too high (src/ has none outside tests; inline modules there use `crate::`).

A cycle is a strongly connected component of more than one unit. Each is printed as a chain
of files: for each edge of the cycle, the file that imports, the path it imports, and the
file that path resolves to. The exit status is 1 when a cycle was found, 0 otherwise.

`--self-test` builds a small fake crate with a known cycle in a temporary directory and
checks that it is reported (and that a tree without one passes), so the check cannot pass
silently because the parser stopped seeing imports.
"""

import os
import re
import sys
import tempfile

# Modules that count as one unit (see the module docs): name -> its modules.
GROUPS = {
    # The engine's core: the registry starts the workers (`worker::run`) and the lane
    # reserve, which read it; a worker waits on latches, which wake workers; the wakers
    # report a panicking waker with the current worker's index; the last worker out sweeps
    # the queues (`purge::sweep`), with the code that `Pool::purge` and a cancel use.
    "engine": {"registry", "worker", "latch", "lane_reserve", "wakers", "purge"},
}

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
INLINE_PATH = re.compile(r"(\$?crate|\bsuper|\bself)((?:\s*::\s*" + IDENT + r")+)")
CFG = re.compile(r"#\[cfg\(((?:[^()\]]|\((?:[^()]|\([^()]*\))*\))*)\)\]")
NOT = re.compile(r"\bnot\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)")
MOD_DECL = re.compile(
    r"((?:#\[[^\]]*\]\s*)*)(pub(?:\([^)]*\))?\s+)?mod\s+(" + IDENT + r")\s*;"
)
USE_ITEM = re.compile(r"\buse\s+([^;]*);")


def strip_comments_and_strings(text):
    """Blank out comments, string and char literals, keeping newlines and offsets."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
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
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "r" and re.match(r'r#*"', text[i:]) and not re.match(r"\w", text[i - 1 : i] or " "):
            hashes = re.match(r"r(#*)\"", text[i:]).group(1)
            end = text.find('"' + hashes, i + 2 + len(hashes))
            j = n if end < 0 else end + 1 + len(hashes)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "'":
            m = re.match(r"'(\\.[^']*|[^\\'])'", text[i:])
            if m:
                out.append(" " * len(m.group(0)))
                i += len(m.group(0))
            else:  # a lifetime
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def cfg_test(attrs):
    """The first `#[cfg(...)]` in `attrs` that holds only under `test` (`test` outside any
    `not(...)`: `cfg(all(test, not(flock_loom)))` is one, `cfg(not(test))` is not)."""
    for m in CFG.finditer(attrs):
        if re.search(r"\btest\b", NOT.sub("", m.group(1))):
            return m
    return None


def item_end(text, start):
    """The end of the item starting at `start`: its `;` or its matching `}`."""
    depth, i = 0, start
    while i < len(text):
        c = text[i]
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        elif c == ";" and depth == 0:
            return i + 1
        i += 1
    return len(text)


def strip_test_items(text):
    """Blank out every item under a `#[cfg(...)]` that mentions `test`."""
    while True:
        m = cfg_test(text)
        if not m:
            return text
        end = item_end(text, m.end())
        text = text[: m.start()] + re.sub(r"[^\n]", " ", text[m.start() : end]) + text[end:]


def expand_use_tree(tree):
    """`a::{b, c::{d, e as f}, self}` -> [a::b, a::c::d, a::c::e, a]."""
    tree = re.sub(r"\s+", "", re.sub(r"\s+as\s+" + IDENT, "", tree))
    brace = tree.find("{")
    if brace < 0:
        return [tree] if tree else []
    prefix, inner = tree[:brace], tree[brace + 1 : tree.rfind("}")]
    parts, depth, cur = [], 0, ""
    for c in inner:
        if c == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += c == "{"
        depth -= c == "}"
        cur += c
    parts.append(cur)
    paths = []
    for part in filter(None, parts):
        if part == "self":
            paths.append(prefix.rstrip(":"))
        else:
            paths.extend(expand_use_tree(prefix + part))
    return paths


class Crate:
    def __init__(self, src, groups=None):
        self.src = src
        self.groups = GROUPS if groups is None else groups
        self.files = {}  # module path (tuple) -> file path relative to src
        self.test_only = set()
        self.public_children = set()  # `pub(crate) mod x;` below the top level: own units
        self.reexports = {}  # name re-exported by lib.rs -> module path it comes from
        self._load(("crate",), "lib.rs")

    def _load(self, module, rel):
        self.files[module] = rel
        raw = open(os.path.join(self.src, rel), encoding="utf-8").read()
        code = strip_comments_and_strings(raw)
        base = os.path.dirname(rel)
        if rel not in ("lib.rs",) and not rel.endswith("mod.rs"):
            base = os.path.join(base, os.path.splitext(os.path.basename(rel))[0])
        for m in MOD_DECL.finditer(code):
            name = m.group(3)
            if m.group(2) and module != ("crate",):
                self.public_children.add(module + (name,))
            child = None
            for cand in (os.path.join(base, name + ".rs"), os.path.join(base, name, "mod.rs")):
                if os.path.exists(os.path.join(self.src, cand)):
                    child = cand
                    break
            if child is None:
                continue
            if cfg_test(m.group(1)) or module in self.test_only:
                self.test_only.add(module + (name,))
            self._load(module + (name,), child)
        if module == ("crate",):
            for m in USE_ITEM.finditer(strip_test_items(code)):
                if not re.search(r"\bpub\s+$", code[max(0, m.start() - 12) : m.start()]):
                    continue
                for path in expand_use_tree(m.group(1)):
                    segs = path.split("::")
                    self.reexports[segs[-1]] = ("crate",) + tuple(s for s in segs[:-1] if s != "crate")

    def resolve(self, module, path):
        """The module path a `crate::`/`super::`/`self::` path names, or None."""
        segs = [s for s in re.split(r"\s*::\s*", path.strip()) if s]
        if not segs:
            return None
        if segs[0] in ("crate", "$crate"):
            cur, segs = ("crate",), segs[1:]
        elif segs[0] == "self":
            cur, segs = module, segs[1:]
        else:
            cur = module
            while segs and segs[0] == "super":
                cur, segs = cur[:-1] or ("crate",), segs[1:]
        if cur == ("crate",) and segs and (cur + (segs[0],)) not in self.files:
            if segs[0] in self.reexports:
                cur, segs = self.reexports[segs[0]], segs[1:]
        for s in segs:
            if cur + (s,) in self.files:
                cur = cur + (s,)
            else:
                break
        return cur

    def unit(self, module):
        """The unit `module` belongs to: its top-level module, extended through each child
        declared `pub(crate) mod` (its own unit), and then its group, if it is in one."""
        if len(module) < 2:
            return None
        end = 2
        while end < len(module) and module[:end + 1] in self.public_children:
            end += 1
        name = "::".join(module[1:end])
        return next((g for g, members in self.groups.items() if name in members), name)

    def edges(self):
        """(unit, unit) -> (file, path, file) of the first import that makes the edge."""
        edges = {}
        for module, rel in sorted(self.files.items(), key=lambda kv: kv[1]):
            if module in self.test_only or module == ("crate",):
                continue
            raw = open(os.path.join(self.src, rel), encoding="utf-8").read()
            code = strip_test_items(strip_comments_and_strings(raw))
            paths = []
            for m in USE_ITEM.finditer(code):
                paths.extend(p for p in expand_use_tree(m.group(1)))
            for m in INLINE_PATH.finditer(USE_ITEM.sub(";", code)):
                paths.append(m.group(1) + m.group(2))
            for path in paths:
                if not re.match(r"(\$?crate|super|self)\b", path):
                    continue
                target = self.resolve(module, path)
                a, b = self.unit(module), self.unit(target or ("crate",))
                if a is None or b is None or a == b or target in self.test_only:
                    continue
                edges.setdefault((a, b), (rel, re.sub(r"\s+", "", path), self.files[target]))
        return edges


def sccs(nodes, succ):
    """Tarjan's strongly connected components, iteratively."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(succ.get(root, ())))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(succ.get(w, ()))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    out.append(sorted(comp))
    return out


def shortest_cycle(comp, succ, start):
    """A shortest cycle through `start` inside `comp` (breadth-first)."""
    members, prev, queue = set(comp), {start: None}, [start]
    for v in queue:
        for w in sorted(succ.get(v, ())):
            if w == start:
                chain = [v]
                while prev[chain[-1]] is not None:
                    chain.append(prev[chain[-1]])
                return list(reversed(chain)) + [start]
            if w in members and w not in prev:
                prev[w] = v
                queue.append(w)
    return [start]


def check(src, out=sys.stdout, groups=None):
    """Print every cycle of `src`; return the list of cycles (each a list of units)."""
    crate = Crate(src, groups)
    edges = crate.edges()
    succ = {}
    for a, b in edges:
        succ.setdefault(a, set()).add(b)
    units = sorted({crate.unit(m) for m in crate.files if crate.unit(m) and m not in crate.test_only})
    found = []
    for comp in sccs(units, succ):
        if len(comp) < 2:
            continue
        found.append(comp)
        print(f"cycle between {len(comp)} modules: {', '.join(comp)}", file=out)
        chain = shortest_cycle(comp, succ, comp[0])
        for a, b in zip(chain, chain[1:]):
            f, path, g = edges[(a, b)]
            print(f"  {f} -> {g}  ({path})", file=out)
        # Every other edge inside the component, so that all of it can be seen and broken.
        shown = set(zip(chain, chain[1:]))
        rest = sorted((a, b) for a, b in edges if a in comp and b in comp and (a, b) not in shown)
        if rest:
            print("  other edges inside it:", file=out)
            for a, b in rest:
                f, path, g = edges[(a, b)]
                print(f"    {f} -> {g}  ({path})", file=out)
    return found


def layers(src, groups=None):
    """The units in layers, each above the ones it imports (only meaningful without cycles)."""
    crate = Crate(src, groups)
    succ = {}
    for a, b in crate.edges():
        succ.setdefault(a, set()).add(b)
    units = sorted({crate.unit(m) for m in crate.files if crate.unit(m) and m not in crate.test_only})
    level = {}

    def depth(u, seen=()):
        if u in level:
            return level[u]
        if u in seen:
            return 0
        level[u] = 1 + max((depth(w, seen + (u,)) for w in succ.get(u, ())), default=-1)
        return level[u]

    for u in units:
        depth(u)
    return [sorted(u for u in units if level[u] == d) for d in range(max(level.values()) + 1)]


FAKE = {
    "lib.rs": "mod engine;\nmod feature;\nmod leaf;\nmod stats;\n#[cfg(test)]\nmod tests_only;\n"
    "pub use feature::Feature;\n",
    "engine.rs": "//! Imports `crate::feature` only in this comment.\nmod part;\n"
    'use crate::leaf::Leaf;\nuse crate::stats::counters::Count;\n'
    'const S: &str = "crate::feature::Feature";\n'
    "#[cfg(test)]\nmod tests {\n    use crate::feature::Feature;\n}\n",
    "engine/part.rs": "use super::super::leaf;\npub(crate) fn f() {\n"
    "    crate::Feature::new();\n}\n",
    "feature.rs": "use crate::{\n    engine::{self, part},\n    leaf::Leaf as L,\n};\n"
    "pub struct Feature;\n",
    "leaf.rs": "pub(crate) struct Leaf;\n#[cfg(not(test))]\nuse crate::stats::counters;\n",
    # `stats` reads the engine; its `pub(crate)` child `counters`, which the engine uses, is a
    # unit of its own, so engine -> stats::counters and stats -> engine make no cycle.
    "stats/mod.rs": "pub(crate) mod counters;\nuse crate::engine;\n",
    "stats/counters.rs": "pub(crate) struct Count;\n",
    "tests_only.rs": "use crate::feature::Feature;\nuse crate::engine;\n",
}


def self_test():
    with tempfile.TemporaryDirectory() as tmp:
        for rel, text in FAKE.items():
            os.makedirs(os.path.dirname(os.path.join(tmp, rel)), exist_ok=True)
            with open(os.path.join(tmp, rel), "w", encoding="utf-8") as f:
                f.write(text)
        sink = open(os.devnull, "w")
        found = check(tmp, sink, groups={})
        # engine/part.rs -> feature.rs (through lib.rs's re-export), feature.rs -> engine.rs.
        assert found == [["engine", "feature"]], f"expected the engine/feature cycle, got {found}"
        edges = Crate(tmp, groups={}).edges()
        assert edges[("engine", "feature")][0] == "engine/part.rs", edges
        for edge in [
            ("engine", "leaf"),
            ("feature", "leaf"),
            ("engine", "stats::counters"),
            ("leaf", "stats::counters"),  # under `cfg(not(test))`: not a test
        ]:
            assert edge in edges, (edge, edges)
        assert not any("tests_only" in e for e in edges), "a test-only module counted"
        # A group is one unit: the cycle inside it is not reported, one through it is.
        assert check(tmp, sink, groups={"g": {"engine", "feature"}}) == [], "a cycle in a group"
        with open(os.path.join(tmp, "leaf.rs"), "a", encoding="utf-8") as f:
            f.write("use crate::feature::Feature;\n")
        found = check(tmp, sink, groups={"g": {"engine", "feature"}})
        assert found == [["g", "leaf"]], f"expected the g/leaf cycle, got {found}"
        with open(os.path.join(tmp, "leaf.rs"), "w", encoding="utf-8") as f:
            f.write(FAKE["leaf.rs"])
        # Without the inline call the tree has no cycle: comments, strings and tests don't count.
        with open(os.path.join(tmp, "engine/part.rs"), "w", encoding="utf-8") as f:
            f.write("use super::super::leaf;\n")
        assert check(tmp, sink, groups={}) == [], "a cycle reported where there is none"
        got = layers(tmp, groups={})
        assert got == [["stats::counters"], ["leaf"], ["engine"], ["feature", "stats"]], got
    print("import-cycles self-test: ok")


def main():
    args = sys.argv[1:]
    if args == ["--self-test"]:
        self_test()
        return 0
    show_layers = "--layers" in args
    args = [a for a in args if a != "--layers"]
    src = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
    if check(src):
        print("import cycles found: features import the engine, never the reverse", file=sys.stderr)
        return 1
    if show_layers:
        for d, units in enumerate(layers(src)):
            print(f"layer {d}: {' '.join(units)}")
    print("import-cycles: no cycle between the modules of src/")
    return 0


if __name__ == "__main__":
    sys.exit(main())

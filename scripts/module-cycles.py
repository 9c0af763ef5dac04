#!/usr/bin/env python3
"""Report import cycles between the library's modules (issue #17: no cycles).

Reads every `.rs` file under `src/` (the library; not a `src/bin/` folder: the
command-line tool is its own crate, `cli/`, and `core/` is the no_std crate),
maps it to a module path (`src/ring/mod.rs` -> `ring`), and
collects the modules each file names through `crate::…`, `super::…` and
`self::…` paths (in `use` lines and inline paths), outside `#[cfg(test)]`
modules (a unit test may reach anywhere) and `#[doc(hidden)]` re-exports (what
a macro's expansion names, say: it names an item; it is not a dependency). A reference to `crate::a::b::C` is an
edge to the deepest module that exists (`a::b` if it is a module, else `a`).

The graph is then reduced to *top-level* modules of `src/` and to the children
of each folder module (`queues::ring` and `queues::fixed` are distinct, both
inside `queues`); an edge between two children of different parents counts as
an edge between their ancestors that are siblings. Re-exports in `lib.rs` are
not edges (the crate root is the façade, not a layer); a path through an
inline re-export module of `lib.rs` (`crate::queue::QueueContext`) is an edge
to the module that defines the item.

Prints every cycle found (one per line, `a -> b -> a`) with, for each edge, one
file and line that makes it, and exits 1 if there is any; prints
`module-cycles: N modules, M edges, no cycle` and exits 0 otherwise.

Usage: scripts/module-cycles.py [-v] [--graph] [SRC_DIR]
       scripts/module-cycles.py --self-test

SRC_DIR defaults to the repository's `src/` (`../src` from this script) and
must hold a `lib.rs` (`core/src` works; `cli/src`, a binary, does not); -v
lists every edge inside each cycle's strongly connected set; --graph prints
every module's outgoing edges first; --self-test checks three small trees,
with and without cycles.
"""

import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ARGS = [a for a in sys.argv[1:] if a not in ("-v", "--graph", "--self-test")]
SRC = ARGS[0] if ARGS else os.path.join(HERE, "..", "src")
SRC = os.path.normpath(SRC)


def module_of(path):
    rel = os.path.relpath(path, SRC)[:-3].split(os.sep)
    if rel[-1] in ("mod", "lib"):
        rel = rel[:-1]
    return tuple(rel)


def strip_tests(text):
    """Drop `#[cfg(test)] mod … { … }` blocks and comments (line-based brace count)."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    out, depth, skipping, pending = [], 0, False, False
    for line in text.splitlines():
        code = line.split("//")[0]
        if not skipping and (re.match(r"\s*#\[cfg\((all\()?test", code) or re.match(r"\s*#\[doc\(hidden\)\]", code)):
            pending = True
            out.append("")
            continue
        if pending and not skipping:
            if re.match(r"\s*(pub(\([^)]*\))?\s+)?mod\s+\w+\s*\{", code):
                skipping, depth = True, 0
            elif re.match(r"\s*pub use\b", code):
                # A hidden re-export (a macro's internals) names an item;
                # it is not a dependency.
                out.append("")
                pending = ";" not in code
                continue
            else:
                pending = False
        if skipping:
            depth += code.count("{") - code.count("}")
            out.append("")
            if depth <= 0 and "}" in code:
                skipping = pending = False
            continue
        out.append(code)
    return out


def read_facades(lib, known):
    """Inline `pub mod NAME { pub use crate::…; }` blocks of lib.rs: modules
    that only re-export. Maps NAME to {item: module}, `*` for a glob."""
    facades = {}
    text = open(lib, encoding="utf-8").read()
    for m in re.finditer(r"pub mod (\w+) \{(.*?)\n\}", text, re.S):
        table = {}
        for u in re.finditer(r"pub use crate::([\w:]+?)::(\*|\w+|\{[^}]*\});", m.group(2)):
            mod = tuple(u.group(1).split("::"))
            while mod and mod not in known:
                mod = mod[:-1]
            for item in re.findall(r"\*|\w+", u.group(2)):
                table[item] = mod
        facades[(m.group(1),)] = table
    # The crate root's own re-exports (`pub use tracer::{Config, Tracer};`):
    # `crate::Tracer` is an edge to `tracer`.
    root = {}
    outside = re.sub(r"pub mod \w+ \{.*?\n\}", "", text, flags=re.S)
    for u in re.finditer(r"^pub use (?:crate::)?([\w:]+?)::(\*|\w+|\{[^}]*\});", outside, re.M):
        mod = tuple(u.group(1).split("::"))
        if mod not in known and mod[0] in root and root[mod[0]] in known:
            mod = root[mod[0]] + mod[1:]  # through a module the root re-exports
            while len(mod) > 1 and mod not in known:
                mod = mod[:-1]
        mod = mod if mod in known or mod in facades else mod[:1]
        for item in re.findall(r"\w+", u.group(2)):
            # `pub use model::{event};` re-exports a module: crate::event is it.
            root[item] = mod + (item,) if mod + (item,) in known else mod
    facades[()] = root
    return facades


def main():
    files = []
    for root, dirs, names in os.walk(SRC):
        dirs[:] = [d for d in dirs if not (root == SRC and d == "bin")]
        files += [os.path.join(root, n) for n in names if n.endswith(".rs")]
    modules = {module_of(f): f for f in files}
    known = set(modules)
    facades = read_facades(os.path.join(SRC, "lib.rs"), known)

    def resolve(base, parts):
        """Deepest known module for base + parts (through lib.rs façades)."""
        if base == () and parts and (parts[0],) in facades and (parts[0],) not in known:
            table = facades[(parts[0],)]
            item = parts[1] if len(parts) > 1 else "*"
            return table.get(item, table.get("*"))
        if base == () and parts and (parts[0],) not in known and parts[0] in facades[()]:
            target = facades[()][parts[0]]
            if target in facades and target not in known:  # re-exported from a façade
                return facades[target].get(parts[0], facades[target].get("*"))
            return target
        best = None
        for i in range(len(parts) + 1):
            cand = base + tuple(parts[:i])
            if cand in known:
                best = cand
        return best

    # Each module's own file is its body; `mod foo;` declarations are not edges.
    edges = {}
    path_re = re.compile(r"\b(crate|super|self)((?:::\w+)+|::\{)")
    use_group = re.compile(r"\buse\s+(crate|super|self)::\{(.*?)\};", re.S)
    for mod, path in sorted(modules.items()):
        lines = strip_tests(open(path, encoding="utf-8").read())
        body = "\n".join(lines)
        refs = []  # (target module, line number)
        for m in use_group.finditer(body):
            lineno = body[: m.start()].count("\n") + 1
            head = m.group(1)
            for item in re.split(r",\s*", re.sub(r"\s+", " ", m.group(2))):
                item = item.strip()
                if not item:
                    continue
                parts = re.findall(r"\w+", item.split("{")[0])
                refs.append((head, parts, lineno))
        for lineno, line in enumerate(lines, 1):
            for m in path_re.finditer(line):
                parts = m.group(2).strip(":").split("::") if m.group(2) != "::{" else []
                refs.append((m.group(1), [p for p in parts if p], lineno))
        for head, parts, lineno in refs:
            if head == "crate":
                base = ()
            elif head == "self":
                base = mod
            else:  # super: the parent module, whether this is a mod.rs or not
                base = mod[:-1]
                while parts and parts[0] == "super":
                    parts, base = parts[1:], base[:-1]
            target = resolve(base, parts)
            if target is None or mod == ():
                continue
            # Reduce to siblings: the first differing component under a
            # common prefix.
            k = 0
            while k < min(len(mod), len(target)) and mod[k] == target[k]:
                k += 1
            if k == len(mod) or k == len(target):
                continue  # an ancestor or descendant: not a sibling edge
            a, b = mod[: k + 1], target[: k + 1]
            edges.setdefault(a, {}).setdefault(b, (os.path.relpath(path, os.path.dirname(SRC)), lineno))

    # Find cycles: strongly connected components (Tarjan), then one cycle per SCC.
    nodes = sorted(set(edges) | {b for e in edges.values() for b in e})
    index, low, stack, on, sccs = {}, {}, [], set(), []
    counter = [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, {})):
            if w not in index:
                strong(w)
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
                sccs.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in nodes:
        if v not in index:
            strong(v)

    name = lambda m: "::".join(m)
    if "--graph" in sys.argv[1:]:
        for a in nodes:
            print(f"{name(a)} -> {', '.join(name(b) for b in sorted(edges.get(a, {})))}")
    n_edges = sum(len(e) for e in edges.values())
    if not sccs:
        print(f"module-cycles: {len(nodes)} modules, {n_edges} edges, no cycle")
        return 0
    for comp in sccs:
        members = set(comp)
        # Shortest cycle through comp[0] (BFS back to itself).
        start = comp[0]
        prev, frontier, found = {start: None}, [start], None
        while frontier and found is None:
            nxt = []
            for v in frontier:
                for w in sorted(edges.get(v, {})):
                    if w not in members:
                        continue
                    if w == start:
                        found = v
                        break
                    if w not in prev:
                        prev[w] = v
                        nxt.append(w)
                if found is not None:
                    break
            frontier = nxt
        path = [found]
        while prev[path[-1]] is not None:
            path.append(prev[path[-1]])
        path = list(reversed(path)) + [start]
        print(f"strongly connected ({len(comp)} modules): " + ", ".join(name(m) for m in comp))
        print("  e.g. cycle: " + " -> ".join(name(m) for m in path))
        for a, b in zip(path, path[1:]):
            f, line = edges[a][b]
            print(f"      {name(a)} -> {name(b)}: {f}:{line}")
        if "-v" in sys.argv[1:]:
            for a in comp:
                for b in sorted(edges.get(a, {})):
                    if b in members:
                        f, line = edges[a][b]
                        print(f"    edge {name(a)} -> {name(b)}: {f}:{line}")
    print(f"module-cycles: {len(sccs)} cycle(s) among {len(nodes)} modules")
    return 1


def self_test():
    """Runs the checker on small trees: a cycle through a façade re-export,
    a sibling cycle inside a folder, and an acyclic tree (a unit test may
    import anything)."""
    import subprocess
    import tempfile

    cases = {
        "facade cycle": (1, "cycle: a -> b -> a", {
            "lib.rs": "pub mod a;\nmod b;\npub mod f {\n    pub use crate::b::*;\n}\n",
            "a.rs": "use crate::f::Thing;\n",
            "b.rs": "use crate::a::Other;\npub struct Thing;\n",
        }),
        "sibling cycle": (1, "cycle: q::x -> q::y -> q::x", {
            "lib.rs": "mod q;\n",
            "q/mod.rs": "mod x;\nmod y;\n",
            "q/x.rs": "use super::y::Y;\npub struct X;\n",
            "q/y.rs": "use super::{x::X, z};\npub struct Y;\n",
        }),
        "acyclic": (0, "no cycle", {
            "lib.rs": "mod a;\nmod b;\n",
            "a.rs": "use crate::b::B;\n",
            "b.rs": "pub struct B;\n#[cfg(test)]\nmod tests {\n    use crate::a::*;\n}\n",
        }),
    }
    failed = 0
    for name, (want_rc, want_text, files) in cases.items():
        with tempfile.TemporaryDirectory() as d:
            for rel, text in files.items():
                os.makedirs(os.path.dirname(os.path.join(d, rel)), exist_ok=True)
                open(os.path.join(d, rel), "w").write(text)
            r = subprocess.run([sys.executable, os.path.abspath(__file__), d],
                               capture_output=True, text=True)
            ok = r.returncode == want_rc and want_text in r.stdout
            failed += not ok
            print(f"self-test {name}: {'ok' if ok else 'FAILED'}"
                  + ("" if ok else f" (exit {r.returncode}):\n{r.stdout}"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(self_test() if "--self-test" in sys.argv[1:] else main())

"""Check pygbn's module structure from the source (nothing is imported).

Reports, over every module of ``pygbn`` (function-local imports included):

* import cycles between modules (strongly connected components of the import
  graph; ``from pygbn import text`` counts as an import of ``pygbn.text``);
* imports of another subpackage's private names or modules (e.g.
  ``pygbn.estimator`` importing ``pygbn.inference._blocked``; the top-level
  ``pygbn._utils``, ``pygbn._version`` and ``pygbn._sklearn`` are shared by all);
* modules longer than ``--max-lines`` lines.

Usage::

    python tools/check_imports.py [--max-lines 800]     # exit 1 if anything is reported
"""
from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = ("pygbn._utils", "pygbn._version", "pygbn._sklearn")


def modules(root: Path) -> dict:
    """Dotted name -> path of every .py (and .pyx) module under ``root``."""
    mods = {}
    for p in sorted(root.rglob("*.py")) + sorted(root.rglob("*.pyx")):
        parts = list(p.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods.setdefault(".".join(parts), p)
    return mods


def _resolve(name: str, mods: dict) -> str:
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name


def _private(dotted: str, name) -> bool:
    parts = dotted.split(".")[1:] + ([name] if name else [])
    return any(p.startswith("_") and not p.startswith("__") for p in parts)


def import_graph(mods: dict):
    """``(graph, private)``: module -> imported pygbn modules, and the private imports."""
    graph, private = {}, []
    for mod, path in mods.items():
        if path.suffix != ".py":
            continue
        pkg = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        deps = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [(a.name, None) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    b = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                    base = ".".join(b + ([base] if base else []))
                for a in node.names:
                    full = f"{base}.{a.name}"
                    targets.append((full, None) if full in mods else (base, a.name))
            for target, name in targets:
                if not target.startswith("pygbn"):
                    continue
                dep = _resolve(target, mods)
                if dep and dep != mod:
                    deps.add(dep)
                same_subpackage = target.split(".")[:2] == mod.split(".")[:2]
                if _private(target, name) and not same_subpackage and dep not in SHARED:
                    private.append(f"{mod} imports {target}" + (f".{name}" if name else ""))
        graph[mod] = deps
    return graph, private


def cycles(graph: dict) -> list:
    """The strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
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
                out.append(sorted(comp))

    sys.setrecursionlimit(max(10000, sys.getrecursionlimit()))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--max-lines", type=int, default=800)
    args = ap.parse_args(argv)
    mods = modules(REPO / "pygbn")
    graph, private = import_graph(mods)
    problems = 0
    for comp in cycles(graph):
        problems += 1
        print("cycle: " + ", ".join(f"{m} -> {sorted(set(graph[m]) & set(comp))}" for m in comp))
    for line in private:
        problems += 1
        print("private import: " + line)
    for mod, path in mods.items():
        n = len(path.read_text(encoding="utf-8").splitlines())
        if path.suffix == ".py" and n > args.max_lines:
            problems += 1
            print(f"long module: {mod} ({n} lines)")
    print("ok" if not problems else f"{problems} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

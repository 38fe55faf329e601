"""Check the public API's numpydoc docstrings against the signatures.

For every name in each public module's ``__all__`` (and every public method of
a public class, those inherited from pygbn classes included) it reports

* errors: a numpydoc section that is malformed (an unknown title, an underline
  of another length, a section twice), a line at the left margin of a
  Parameters section that is not an entry (numpydoc would read it as a
  parameter), a documented parameter that the signature lacks, a default
  stated in the docstring (``default=X`` / ``default X``) that differs from the
  signature's, a parameter marked ``optional`` without a default, an
  exception in Raises that does not exist;
* notes: a parameter that the docstring does not name anywhere, a public
  method or property without a docstring (many of these are internal-facing
  protocol methods documented as one line; read them, do not fix them blind).

A class's Parameters document ``__init__``; a dataclass's or named tuple's
Attributes document its fields, which are its constructor's parameters.

Run ``PYTHONPATH=. python tools/check_docstrings.py [--notes]``; exits 1 on
errors.  ``tests/test_docs.py`` runs it.
"""
from __future__ import annotations

import argparse
import ast
import builtins
import dataclasses
import importlib
import inspect
import re
import sys

MODULES = ["pygbn", "pygbn.random", "pygbn.stats", "pygbn.io", "pygbn.model", "pygbn.inference",
           "pygbn.evaluation", "pygbn.explore", "pygbn.text", "pygbn.datasets", "pygbn.testing",
           "pygbn.dask", "pygbn.inference.partition", "pygbn.inference.geweke"]
SECTIONS = {"Parameters", "Returns", "Yields", "Receives", "Other Parameters", "Raises", "Warns",
            "Warnings", "See Also", "Notes", "References", "Examples", "Attributes", "Methods"}
ENTRY = re.compile(r"^(\*{0,2}[A-Za-z_]\w*(?:\s*,\s*\*{0,2}[A-Za-z_]\w*)*)\s*(?::\s*(.*))?$")


def sections(doc: str):
    """``({title: lines}, problems)`` of a cleaned docstring (text before the first title: "_summary")."""
    lines = doc.splitlines()
    out, problems, cur = {"_summary": []}, [], "_summary"
    i = 0
    while i < len(lines):
        line = lines[i]
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if nxt.strip() and set(nxt.strip()) == {"-"} and line.strip() and not line.startswith(" "):
            name = line.strip()
            if name not in SECTIONS:
                problems.append(f"unknown section {name!r}")
            if len(nxt.strip()) != len(name):
                problems.append(f"section {name!r} underlined with {len(nxt.strip())} dashes")
            if name in out:
                problems.append(f"section {name!r} twice")
            cur = name
            out[cur] = []
            i += 2
            continue
        out[cur].append(line)
        i += 1
    return out, problems


def entries(lines):
    """``[(names, type text, is_entry)]`` of a Parameters-like section's left-margin lines."""
    res = []
    for line in lines:
        if line.strip() and not line.startswith(" "):
            m = ENTRY.match(line.strip())
            if m:
                res.append(([n.strip().lstrip("*") for n in m.group(1).split(",")], m.group(2) or "", True))
            else:
                res.append(([line.strip()], "", False))
    return res


def _doc_default(typ: str):
    m = re.search(r"default\s*[=:]?\s*(.+)$", typ)
    return m.group(1).strip() if m else None


def _same_default(text: str, value) -> bool:
    text = text.strip().strip("`")
    try:
        lit = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text in (repr(value), str(value)) or (callable(value) and getattr(value, "__name__", "?") in text)
    if isinstance(lit, bool) or isinstance(value, bool):
        return lit is value
    if isinstance(lit, list) and isinstance(value, tuple):
        lit = tuple(lit)
    if isinstance(lit, (int, float)) and isinstance(value, (int, float)):
        return lit == value
    return type(lit) is type(value) and lit == value


def _exception_exists(name: str, obj) -> bool:
    base = name.split(".")[-1]
    if isinstance(getattr(builtins, base, None), type):
        return True
    mods = [getattr(obj, "__module__", None), "pygbn", "pygbn.text", "pygbn.dask"]
    return any(isinstance(getattr(sys.modules.get(m or ""), base, None), type) for m in mods)


def check(qual: str, obj, *, sig_obj=None, fields_documented=False):
    """``(errors, notes)`` for one documented object."""
    errors, notes = [], []
    doc = inspect.getdoc(obj)
    if not doc:
        return errors, [f"{qual}: no docstring"]
    secs, problems = sections(doc)
    errors += [f"{qual}: {p}" for p in problems]
    documented = {}
    keys = ["Parameters", "Other Parameters"]
    if fields_documented and "Parameters" not in secs:
        keys.append("Attributes")
    for key in keys:
        for names, typ, is_entry in entries(secs.get(key, [])):
            if not is_entry:
                errors.append(f"{qual}: {key} line {names[0][:50]!r} is not an entry "
                              "(numpydoc would read it as a parameter)")
                continue
            for n in names:
                documented[n] = typ
    try:
        sig = inspect.signature(sig_obj if sig_obj is not None else obj)
    except (TypeError, ValueError):
        sig = None
    if sig is not None:
        real = {p.name: p for p in sig.parameters.values() if p.name not in ("self", "cls")}
        for n in real:
            if n in documented:
                continue
            if "Parameters" in secs:
                notes.append(f"{qual}: parameter {n!r} missing from the Parameters section")
            elif not re.search(r"\b%s\b" % re.escape(n), doc):
                notes.append(f"{qual}: parameter {n!r} not named in the docstring")
        for n, typ in documented.items():
            if n not in real:
                errors.append(f"{qual}: documented parameter {n!r} not in the signature {sig}")
                continue
            p = real[n]
            d = _doc_default(typ)
            if d is not None:
                if p.default is inspect.Parameter.empty:
                    errors.append(f"{qual}: {n!r} documented with default {d!r} but has none")
                elif not _same_default(d, p.default):
                    errors.append(f"{qual}: {n!r} documented default {d!r} != real {p.default!r}")
            elif re.search(r"\boptional\b", typ) and p.default is inspect.Parameter.empty \
                    and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                errors.append(f"{qual}: {n!r} marked optional but has no default")
    for names, _, is_entry in entries(secs.get("Raises", [])):
        for n in names:
            if not is_entry or not _exception_exists(n, obj):
                errors.append(f"{qual}: Raises names {n!r}, not an exception")
    return errors, notes


def _members(cls):
    """Public methods and properties of ``cls`` defined in pygbn classes of its MRO."""
    seen = {}
    for klass in reversed(cls.__mro__):
        if (getattr(klass, "__module__", "") or "").startswith("pygbn"):
            for name, value in klass.__dict__.items():
                if not name.startswith("_"):
                    seen[name] = value
    return seen


def run(modules=MODULES):
    """``(errors, notes)`` over the public API (a module that cannot be imported is skipped)."""
    errors, notes, done = [], [], set()

    def add(res):
        errors.extend(res[0])
        notes.extend(res[1])

    for modname in modules:
        try:
            mod = importlib.import_module(modname)
        except ImportError:   # pygbn.dask without its optional dependencies
            continue
        for name in getattr(mod, "__all__", []):
            obj = getattr(mod, name)
            if inspect.ismodule(obj) or not callable(obj) or id(obj) in done:
                continue
            done.add(id(obj))
            qual = f"{modname}.{name}"
            if not inspect.isclass(obj):
                add(check(qual, obj))
                continue
            fields = dataclasses.is_dataclass(obj) or hasattr(obj, "_fields")
            add(check(qual, obj, sig_obj=None if issubclass(obj, BaseException) else obj,
                      fields_documented=fields))
            for mname, value in _members(obj).items():
                if isinstance(value, property):
                    if not inspect.getdoc(value):
                        notes.append(f"{qual}.{mname}: property without docstring")
                    continue
                if isinstance(value, (staticmethod, classmethod)):
                    value = getattr(obj, mname)
                elif not inspect.isfunction(value):
                    continue
                add(check(f"{qual}.{mname}", value))
    return errors, notes


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--notes", action="store_true", help="also list the notes (undocumented names)")
    args = ap.parse_args(argv)
    errors, notes = run()
    for line in errors:
        print("error:", line)
    if args.notes:
        for line in notes:
            print("note:", line)
    print(f"{len(errors)} errors, {len(notes)} notes", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())

"""Regenerate the generated parts of the docs from the code.

* ``docs/api.md``: the API reference, written out from the numpydoc
  docstrings and signatures of the public objects (each module's
  ``__all__``);
* ``docs/cli.md``: the ``--help`` text of ``pygbn`` and of each subcommand,
  between the ``<!-- BEGIN generated usage -->`` and
  ``<!-- END generated usage -->`` markers (the prose around them is kept).

Run against a built pygbn: the one Python imports, else this checkout built in
place (no ``PYTHONPATH`` needed)::

    python tools/gen_docs.py            # rewrite both files
    python tools/gen_docs.py --check    # exit 1 if either is stale

``tests/test_cli.py`` and ``tests/test_docs.py`` check that the files are current.
"""
from __future__ import annotations

import argparse
import importlib
import inspect
import re
import sys

from _path import REPO  # noqa: E402  (pygbn: the importable one, else this checkout's)
API_MD = REPO / "docs" / "api.md"
CLI_MD = REPO / "docs" / "cli.md"
BEGIN = "<!-- BEGIN generated usage -->"
END = "<!-- END generated usage -->"

#: (module, intro, names or None for the module's __all__)
API_SECTIONS = [
    ("pygbn", "The estimator, saving and loading it, and the top-level helpers. "
     "`pygbn.split_tokens` is documented under `pygbn.evaluation`; the "
     "object model is re-exported from `pygbn.model`; `pygbn.explore`, `pygbn.text`, "
     "`pygbn.datasets` and `pygbn.random` are the modules below. `pygbn.dask.DaskGBN` (the "
     "optional extra `[dask]`) is documented in [scaling.md](scaling.md).",
     ["GBN", "save", "load", "get_include"]),
    ("pygbn.model", "The object model: a `Network` is a stack of `Layer`s under a top-layer "
     "shape `r`, observed through a `Link`.", None),
    ("pygbn.io", "Model files without pickle: networks and plain data (`pygbn.save` and "
     "`pygbn.load` use it).", None),
    ("pygbn.evaluation", "The held-out token split and the perplexity of the paper's protocol.", None),
    ("pygbn.explore", "Exploring a fitted network (paper Section 2.3); the `Network` methods of the "
     "same names delegate here. See also [exploring.md](exploring.md).", None),
    ("pygbn.text", "Text in, counts out: vectoriser and readers/writers.", None),
    ("pygbn.datasets", "The bundled demo corpus.", None),
    ("pygbn.random", "Exact samplers for the GBN's distributions (numpy `Generator` conventions: "
     "`size`, `random_state`).", None),
    ("pygbn.stats", "Exact log-PMFs/densities and moments of the samplers' distributions, as used "
     "by the tests.", None),
    ("pygbn.testing", "Goodness-of-fit and moment tests for samplers.", None),
    ("pygbn.inference", "The Gibbs sampler itself (advanced use: the estimator drives it).",
     ["GibbsSampler", "fit_layerwise", "Schedule", "FitResult", "infer_local", "LocalInference",
      "HeldoutPredictive"]),
    ("pygbn.inference.partition", "The chain split into a global part and local parts (what "
     "`pygbn.dask` runs on the workers; see [engine.md](engine.md)).", None),
    ("pygbn.inference.geweke", "Geweke's getting-it-right test harness.", None),
    ("pygbn.cli", "The command line (see [cli.md](cli.md)).", ["main", "build_parser", "help_text"]),
]


def _sig(obj, name: str) -> str:
    """``name(params)`` with defaults but without annotations (they are in the docstrings)."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return f"{name}(...)"
    params = [p.replace(annotation=inspect.Parameter.empty) for p in sig.parameters.values()]
    sig = sig.replace(parameters=params, return_annotation=inspect.Signature.empty)
    return f"{name}{sig}"


def _doc_block(obj) -> list[str]:
    doc = inspect.getdoc(obj)
    if not doc:
        return ["*(no docstring)*", ""]
    parts = doc.split("\n\n", 1)
    summary = " ".join(parts[0].split())
    out = [summary, ""]
    if len(parts) > 1 and parts[1].strip():
        out += ["```text", parts[1].rstrip(), "```", ""]
    return out


def _public_members(cls) -> list[tuple[str, object]]:
    """Public methods and properties of ``cls``, with those of its private pygbn mixins
    (bases from a ``pygbn._*`` module, e.g. GBN's scikit-learn protocol), which have no page."""
    members, seen = [], set()
    classes = [cls] + [b for b in cls.__mro__[1:] if b.__module__.startswith("pygbn._")]
    for name, value in ((n, v) for c in classes for n, v in c.__dict__.items()):
        if name.startswith("_") or name in seen:
            continue
        seen.add(name)
        if isinstance(value, property):
            members.append((name, value))
        elif isinstance(value, (staticmethod, classmethod)):
            members.append((name, getattr(cls, name)))  # bound: no cls in the signature
        elif inspect.isfunction(value):
            members.append((name, value))
    return members


def _object_section(modname: str, name: str, obj) -> list[str]:
    qual = f"{modname}.{name}"
    out = [f"### `{qual}`", ""]
    if inspect.isclass(obj):
        out += ["```python", f"class {_sig(obj, name)}", "```", ""]
        out += _doc_block(obj)
        for mname, member in _public_members(obj):
            if isinstance(member, property):
                out += [f"#### `{name}.{mname}` (property)", ""]
                out += _doc_block(member)
            else:
                out += [f"#### `{name}.{mname}`", "", "```python", _sig(member, mname), "```", ""]
                out += _doc_block(member)
    elif callable(obj):
        out += ["```python", _sig(obj, name), "```", ""]
        out += _doc_block(obj)
    else:
        out += [f"Constant: `{name} = {obj!r}`", ""]
    return out


def api_markdown() -> str:
    """The text of docs/api.md."""
    import pygbn

    lines = [
        "# API reference",
        "",
        "Written out from the numpydoc docstrings and signatures of the code by "
        "`python tools/gen_docs.py` (do not edit by hand; edit the docstrings and regenerate). "
        f"pygbn {pygbn.__version__}.",
        "",
        "Equation names (`eq:z`, `eq:step1`, ...) are the labels of the paper's LaTeX source; "
        "[math_to_code.md](math_to_code.md) maps each to its implementation.",
        "",
        "## Contents",
        "",
    ]
    body = []
    for modname, intro, names in API_SECTIONS:
        try:
            mod = importlib.import_module(modname)
        except ImportError as e:  # a section is never dropped silently: the page would lose it
            raise SystemExit(f"gen_docs: cannot import {modname} for its section of docs/api.md: {e}")
        if names is None:
            names = list(getattr(mod, "__all__", []))
        anchor = modname.replace(".", "")
        lines.append(f"- [`{modname}`](#{anchor})")
        body += [f"## `{modname}`", "", intro, ""]
        for name in names:
            body += _object_section(modname, name, getattr(mod, name))
    return "\n".join(lines + [""] + body).rstrip() + "\n"


def cli_usage_markdown() -> str:
    """The generated block of docs/cli.md (between the markers)."""
    from pygbn import cli

    ver = f"{sys.version_info[0]}.{sys.version_info[1]}"
    out = [BEGIN, "", f"*Usage texts generated with Python {ver} by `python tools/gen_docs.py`; "
           "argparse's layout varies slightly between Python versions.*", ""]
    for cmd in (None, *cli.COMMANDS):
        title = "pygbn" if cmd is None else f"pygbn {cmd}"
        out += [f"## {title}", "", "```text", cli.help_text(cmd).rstrip(), "```", ""]
    out.append(END)
    return "\n".join(out)


def cli_markdown(current: str) -> str:
    block = cli_usage_markdown()
    if BEGIN in current and END in current:
        pre, rest = current.split(BEGIN, 1)
        _, post = rest.split(END, 1)
        return pre + block + post
    return current.rstrip() + "\n\n" + block + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="only check that the files are current")
    args = ap.parse_args(argv)
    targets = {API_MD: api_markdown(), CLI_MD: cli_markdown(CLI_MD.read_text(encoding="utf-8")
                                                           if CLI_MD.exists() else "# Command line\n")}
    stale = []
    for path, text in targets.items():
        old = path.read_text(encoding="utf-8") if path.exists() else None
        if old != text:
            stale.append(path)
            if not args.check:
                path.write_text(text, encoding="utf-8")
    for path in stale:
        print(("stale: " if args.check else "wrote ") + str(path.relative_to(REPO)))
    return 1 if (args.check and stale) else 0


if __name__ == "__main__":
    sys.exit(main())

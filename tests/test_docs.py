"""The docs stay true to the code: names in math_to_code.md resolve, api.md covers the API,
local links work, and the README starts with the two commands.

Skipped where the docs are not beside the tests (an installed copy without the checkout).
"""
import importlib
import importlib.util
import inspect
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
pytestmark = pytest.mark.skipif(not (DOCS / "math_to_code.md").exists(), reason="docs/ not beside the tests")


def resolve(dotted: str):
    """Import the longest module prefix of ``dotted`` and getattr the rest."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for name in parts[i:]:
            obj = getattr(obj, name)
        return obj
    raise ImportError(dotted)


def test_math_to_code_names_exist():
    text = (DOCS / "math_to_code.md").read_text(encoding="utf-8")
    names = set(re.findall(r"`(pygbn(?:\.\w+)+)`", text))
    assert len(names) > 40
    missing = []
    for name in sorted(names):
        try:
            resolve(name)
        except (ImportError, AttributeError):
            missing.append(name)
    assert not missing, f"math_to_code.md names that do not exist: {missing}"
    # C-level kernels are named as "file.pyx: function" (or file.pxd); the function must be
    # defined there
    # (a file that no longer exists fails: the check skipped it, so a moved kernel passed)
    kernels = re.findall(r"`(pygbn/[\w/]+\.px[dx]): (\w+)`", text)
    assert kernels
    for path, func in kernels:
        src = REPO / path
        assert src.is_file(), f"math_to_code.md names {path}, which does not exist"
        assert re.search(rf"\bc?p?def\b[^\n]*\b{func}\(", src.read_text(encoding="utf-8")), (path, func)


#: every equation label of the paper's LaTeX source (Zhou, Cong & Chen 2016); there is no eq:step3
PAPER_LABELS = ["PGBN", "Phi", "c_j", "PFA", "BerPo", "CRT", "step1", "step2", "step4", "step5", "step6",
                "p", "z", "Ber-PGBN", "Gam-PGBN", "c_g", "projection", "weight", "PoAug", "NBAug",
                "deepPFA_aug", "CompoundPo", "Po-log", "x_given_theta", "phi_given_r", "gamma", "sigmoid"]


def test_math_to_code_covers_the_paper_equations():
    text = (DOCS / "math_to_code.md").read_text(encoding="utf-8")
    for label in PAPER_LABELS:
        assert re.search(rf"eq:{re.escape(label)}\b", text), f"eq:{label} is not mapped"


def _c_docstring(path: str, func: str) -> str:
    """The docstring of the C-level (cdef/def) function ``func`` in the source file ``path``."""
    src = (REPO / path).read_text(encoding="utf-8")
    m = re.search(rf"^[ \t]*c?p?def\b[^\n]*\b{func}\((.*?)\):[^\n]*\n\s*(?:r?\"\"\")(.*?)\"\"\"", src, re.S | re.M)
    return m.group(2) if m else ""


def test_math_to_code_rows_name_a_function_citing_their_equations():
    # the promise of math_to_code.md: each equation is findable in one function whose
    # docstring cites it; so every row that maps labels to code names at least one
    # function, class or kernel whose docstring cites each of the row's labels
    text = (DOCS / "math_to_code.md").read_text(encoding="utf-8")
    uncited = []
    for row in text.splitlines():
        cells = row.split(" | ")
        if not row.startswith("| eq:") or len(cells) < 3:
            continue
        labels = re.findall(r"eq:([\w-]*\w)", cells[0])
        docs = []
        for name in re.findall(r"`(pygbn(?:\.\w+)+)`", cells[2]):
            docs.append(inspect.getdoc(resolve(name)) or "")
        for path, func in re.findall(r"`(pygbn/[\w/]+\.px[dx]): (\w+)`", cells[2]):
            docs.append(_c_docstring(path, func))
        if not docs:        # discussion only, no code of its own
            continue
        for label in labels:
            if not any(re.search(rf"eq:{re.escape(label)}(?![\w-])", d) for d in docs):
                uncited.append(f"eq:{label}")
    assert not uncited, f"math_to_code.md rows whose named code has no docstring citing them: {uncited}"


def test_equation_citations_are_paper_labels():
    # an eq: citation in the code or the docs names a label of the paper (a typo, or a label
    # the paper does not have, such as eq:step3, would send the reader nowhere)
    files = [p for ext in ("*.py", "*.pyx", "*.pxd") for p in (REPO / "pygbn").rglob(ext)]
    files += [*DOCS.glob("*.md"), REPO / "README.md"]
    bad = []
    for path in files:
        for label in re.findall(r"\beq:([A-Za-z][\w-]*\w)", path.read_text(encoding="utf-8")):
            if label not in PAPER_LABELS:
                bad.append(f"{path.relative_to(REPO)}: eq:{label}")
    assert not bad, f"eq: citations of labels the paper does not have: {bad}"


def _tool(name: str):
    """The module tools/<name>.py (the tools are scripts, not a package), with tools/ on
    sys.path as when it runs (for ``import _path`` and the tools' shared modules)."""
    if str(REPO / "tools") not in sys.path:
        sys.path.insert(0, str(REPO / "tools"))
    spec = importlib.util.spec_from_file_location(name, REPO / "tools" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _gen_docs():
    return _tool("gen_docs")


def test_api_reference_lists_every_public_name():
    gen = _gen_docs()
    text = (DOCS / "api.md").read_text(encoding="utf-8")
    missing = []
    for modname, _, names in gen.API_SECTIONS:
        try:
            mod = importlib.import_module(modname)
        except ImportError:
            continue
        for name in names if names is not None else getattr(mod, "__all__", []):
            if f"### `{modname}.{name}`" not in text:
                missing.append(f"{modname}.{name}")
    assert not missing, f"not in docs/api.md (run python tools/gen_docs.py): {missing}"
    # the Network methods added for exploration are documented
    for meth in ("project", "node_weights", "top_terms", "relabel_by_popularity", "tree", "subnetwork",
                 "generate_top_terms"):
        assert f"#### `Network.{meth}`" in text


def test_local_links_resolve():
    for page in [REPO / "README.md", *DOCS.glob("*.md")]:
        text = page.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)#:]+\.md)(?:#[^)]*)?\)", text):
            assert (page.parent / target).exists(), f"{page.name} links to missing {target}"


def test_readme_has_no_relative_links():
    """The README is the description on PyPI (pyproject's readme), where a link relative to
    the checkout does not resolve: it names the files instead."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    relative = [t for t in re.findall(r"\]\(([^)]*)\)", text) if not re.match(r"[a-z][a-z0-9+.-]*:|#", t)]
    assert not relative, f"README.md links relative to the checkout (broken on PyPI): {relative}"


def test_readme_starts_with_the_two_commands():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```bash\n(.*?)```", text, re.S)
    assert blocks[0].strip() == "python -m pip install . && pygbn demo"
    assert blocks[1].strip() == 'python -m pip install ".[test]" && pytest tests'


def _check_docstrings():
    return _tool("check_docstrings")


def test_docstrings_agree_with_the_signatures():
    # well-formed numpydoc sections, no documented parameter the signature lacks, stated
    # defaults equal to the real ones, Raises naming exceptions (tools/check_docstrings.py)
    errors, _ = _check_docstrings().run()
    assert not errors, "\n".join(errors)


#: a sampler's arguments, for a call with size=(4, 5)
SAMPLER_ARGS = {"crt": (5, 1.0), "logarithmic": (0.5,), "truncated_poisson": (1.0,),
                "truncated_bessel": (1.0,), "poisson_randomized_gamma": (1.0, 1.0),
                "negative_binomial": (1.0, 0.5), "multinomial_split": (3, [1.0, 2.0]),
                "dirichlet": ([1.0, 2.0],)}


@pytest.mark.parametrize("name", sorted(SAMPLER_ARGS))
def test_sampler_docstrings_say_what_size_is(name):
    import numpy as np

    import pygbn.random as R

    secs, _ = _check_docstrings().sections(inspect.getdoc(getattr(R, name)))
    text = "\n".join(secs["Parameters"])
    size_entry = text.split("size : ", 1)[1].split("random_state : ", 1)[0]
    assert "size" not in text.split("n_jobs : ", 1)[1]
    shape = np.shape(getattr(R, name)(*SAMPLER_ARGS[name], size=(4, 5), random_state=0))
    if name in ("multinomial_split", "dirichlet"):   # a batch shape: one vector per entry
        assert "size + (k,)" in size_entry and shape == (4, 5, 2)
    else:
        assert "Output shape" in size_entry and shape == (4, 5)

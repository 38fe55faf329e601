"""The public Cython API (``pygbn/random/kernels.pxd``) works for a downstream package.

A tiny extension is written to a temporary folder, compiled once per session
with Cython and the C compiler, found through :func:`pygbn.get_include` only,
and checked to draw exactly the numbers of the Python samplers on the same
stream (same seed, same bit generator).  Skipped where Cython or a C compiler
is missing.
"""
import importlib
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import numpy as np
import pytest

import pygbn
import pygbn.random as R
from pygbn.random._api import _kernel
from pygbn.random._validate import BLOCK_MIN

MODULE = "pygbn_downstream_check"
DOCS_MODULE = "pygbn_docs_example"     # the example of docs/cython_api.md, where the docs are here
THREADS_MODULE = "pygbn_docs_threads"  # its prange example (per-block generators)
PXD_MODULE = "pygbn_pxd_example"       # the example in kernels.pxd's docstring
DOC = Path(__file__).resolve().parent.parent / "docs" / "cython_api.md"
PUBLIC_PXD = Path(pygbn.get_include()) / "pygbn" / "random" / "kernels.pxd"
PRIVATE_PXD = PUBLIC_PXD.with_name("_kernels.pxd")

PYX = r'''
# cython: language_level=3, boundscheck=False, wraparound=False
"""A downstream extension drawing with pygbn's public Cython API only."""
import numpy as np
from libc.stdint cimport int64_t, uint32_t, uint64_t
from pygbn.random.kernels cimport (
    bitgen_t, binomial_t, get_bitgen,
    random_crt, random_logarithmic, random_truncated_poisson, random_truncated_bessel,
    random_prg, random_nb, random_multinomial_split, random_dirichlet, random_log_gamma,
    random_categorical, random_poisson_exact, random_gamma_exact, random_binomial_exact,
)

ctypedef int64_t (*kern_i_d)(bitgen_t *, double) noexcept nogil
ctypedef double (*kern_d_d)(bitgen_t *, double) noexcept nogil


cdef kern_i_d pick_i_d(str name):
    if name == "logarithmic":
        return random_logarithmic
    if name == "truncated_poisson":
        return random_truncated_poisson
    if name == "truncated_bessel":
        return random_truncated_bessel
    if name == "poisson":
        return random_poisson_exact
    return NULL


cdef kern_d_d pick_d_d(str name):
    if name == "gamma":
        return random_gamma_exact
    if name == "log_gamma":
        return random_log_gamma
    return NULL


def draw_one(str name, generator, const double[::1] a):
    """One draw per a[i] from a one-parameter kernel (int64- or float64-valued)."""
    cdef kern_i_d fi = pick_i_d(name)
    cdef kern_d_d fd = pick_d_d(name)
    if fi == NULL and fd == NULL:
        raise KeyError(name)
    cdef bitgen_t *rng = get_bitgen(generator)
    out = np.empty(a.shape[0], dtype=np.int64 if fi != NULL else np.float64)
    cdef int64_t[::1] oi
    cdef double[::1] od
    if fi != NULL:
        oi = out
    else:
        od = out
    cdef Py_ssize_t i
    with generator.bit_generator.lock:
        with nogil:
            for i in range(a.shape[0]):
                if fi != NULL:
                    oi[i] = fi(rng, a[i])
                else:
                    od[i] = fd(rng, a[i])
    return out


def draw_pairs(str name, generator, const double[::1] a, const double[::1] b):
    """crt (a = n), binomial (a = n), negative_binomial, prg: one draw per pair."""
    cdef bitgen_t *rng = get_bitgen(generator)
    cdef Py_ssize_t i, m = a.shape[0]
    cdef binomial_t state
    state.has_binomial = 0
    cdef int kind = ["crt", "binomial", "negative_binomial", "prg"].index(name)
    out = np.empty(m, dtype=np.float64 if kind == 3 else np.int64)
    cdef int64_t[::1] oi
    cdef double[::1] od
    if kind == 3:
        od = out
    else:
        oi = out
    with generator.bit_generator.lock:
        with nogil:
            for i in range(m):
                if kind == 0:
                    oi[i] = random_crt(rng, <int64_t> a[i], b[i])
                elif kind == 1:
                    oi[i] = random_binomial_exact(rng, <int64_t> a[i], b[i], &state)
                elif kind == 2:
                    oi[i] = random_nb(rng, a[i], b[i])
                else:
                    od[i] = random_prg(rng, a[i], b[i])
    return out


def split(generator, const int64_t[::1] n, const double[:, ::1] w, const double[::1] total):
    cdef bitgen_t *rng = get_bitgen(generator)
    out = np.empty((n.shape[0], w.shape[1]), dtype=np.int64)
    cdef int64_t[:, ::1] o = out
    cdef Py_ssize_t i
    with generator.bit_generator.lock:
        with nogil:
            for i in range(n.shape[0]):
                random_multinomial_split(rng, n[i], &w[i, 0], w.shape[1], total[i], &o[i, 0])
    return out


def dirichlet(generator, const double[:, ::1] alpha):
    cdef bitgen_t *rng = get_bitgen(generator)
    out = np.empty((alpha.shape[0], alpha.shape[1]), dtype=np.float64)
    cdef double[:, ::1] o = out
    cdef Py_ssize_t i
    with generator.bit_generator.lock:
        with nogil:
            for i in range(alpha.shape[0]):
                random_dirichlet(rng, &alpha[i, 0], alpha.shape[1], &o[i, 0])
    return out


# A bit generator that replays given uniforms (for boundary tests of the kernels).
cdef struct Script:
    const double *values
    Py_ssize_t n
    Py_ssize_t used


cdef double _script_double(void *st) noexcept nogil:
    cdef Script *s = <Script *> st
    cdef double v = s.values[s.used % s.n]
    s.used += 1
    return v


cdef uint64_t _script_u64(void *st) noexcept nogil:
    return 0


cdef uint32_t _script_u32(void *st) noexcept nogil:
    return 0


def poisson_scripted(double lam, const double[::1] uniforms):
    """random_poisson_exact(lam) on a stream replaying ``uniforms``: (draw, uniforms used)."""
    cdef Script s
    s.values = &uniforms[0]
    s.n = uniforms.shape[0]
    s.used = 0
    cdef bitgen_t bg
    bg.state = &s
    bg.next_uint64 = _script_u64
    bg.next_uint32 = _script_u32
    bg.next_double = _script_double
    bg.next_raw = _script_u64
    cdef int64_t k = random_poisson_exact(&bg, lam)
    return k, s.used


def address(generator):
    """The ``bitgen_t*`` that get_bitgen finds, as an integer."""
    return <size_t> get_bitgen(generator)


def categorical(generator, const double[::1] w, Py_ssize_t m):
    cdef bitgen_t *rng = get_bitgen(generator)
    cdef double total = 0.0
    cdef Py_ssize_t i
    for i in range(w.shape[0]):
        total += w[i]
    out = np.empty(m, dtype=np.intp)
    cdef Py_ssize_t[::1] o = out
    with generator.bit_generator.lock:
        with nogil:
            for i in range(m):
                o[i] = random_categorical(rng, &w[0], w.shape[0], total)
    return out
'''

SETUP = '''
from Cython.Build import cythonize
from setuptools import Extension, setup

setup(
    name="downstream",
    ext_modules=cythonize(
        [Extension(m, [m + ".pyx"], include_dirs=[{numpy_include!r}],
                   define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
                   extra_compile_args={extra_args!r} + {openmp!r}.get(m, []),
                   extra_link_args={openmp!r}.get(m, []))
         for m in {modules!r}],
        include_path=[{pygbn_include!r}],
        quiet=True,
    ),
)
'''


def _have_c_compiler() -> bool:
    if sys.platform == "win32":
        try:
            import setuptools  # noqa: F401  (provides distutils on Python >= 3.12)
            from distutils.ccompiler import new_compiler
            compiler = new_compiler()
            compiler.initialize()       # raises where MSVC is missing
        except Exception:
            return False
        return True
    cc = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()
    return bool(cc) and shutil.which(cc[0]) is not None


def _python_headers() -> bool:
    return (Path(sysconfig.get_paths()["include"]) / "Python.h").exists()


def _docs_example(name="crtsum/_fast.pyx"):
    """The code block of docs/cython_api.md labelled ``name`` (None without the docs)."""
    if not DOC.exists():
        return None
    text = DOC.read_text(encoding="utf-8")
    m = re.search(r"`" + re.escape(name) + r"`:\s*```cython\n(.*?)```", text, flags=re.S)
    assert m, f"docs/cython_api.md lost its {name} example"
    return m.group(1)


def _pxd_docstring():
    text = PUBLIC_PXD.read_text(encoding="utf-8")
    return text.split('"""', 2)[1]


def _pxd_example():
    """The code example of kernels.pxd's docstring, as a module."""
    m = re.search(r"::\n\n((?:    .*\n|\n)+)", _pxd_docstring())
    assert m, "kernels.pxd lost its example"
    return "# cython: language_level=3\n" + textwrap.dedent(m.group(1))


def _openmp_args():
    """OpenMP flags for the prange example, where pygbn itself was built with OpenMP
    (the build falls back to a serial one if the compiler refuses them)."""
    if not R.openmp_enabled():
        return []
    if sys.platform == "win32":
        return ["/openmp"]
    return ["-fopenmp"] if sys.platform.startswith("linux") else []


@pytest.fixture(scope="module")
def ext(tmp_path_factory):
    """The downstream extension, compiled once for this module."""
    pytest.importorskip("Cython")
    pytest.importorskip("setuptools")
    if not _have_c_compiler():
        pytest.skip("no C compiler")
    if not _python_headers():
        pytest.skip("no Python headers (Python.h)")
    folder = tmp_path_factory.mktemp("downstream")
    sources = {MODULE: PYX, PXD_MODULE: _pxd_example()}
    example = _docs_example()
    if example is not None:
        sources[DOCS_MODULE] = example
        sources[THREADS_MODULE] = _docs_example("crt_blocks.pyx")
    for name, src in sources.items():
        (folder / f"{name}.pyx").write_text(src, encoding="utf-8")

    def build(openmp):
        (folder / "setup.py").write_text(SETUP.format(
            modules=list(sources), numpy_include=np.get_include(), pygbn_include=pygbn.get_include(),
            extra_args=[] if sys.platform == "win32" else ["-O0"],   # a test build: compile fast
            openmp={THREADS_MODULE: openmp} if openmp else {}), encoding="utf-8")
        return subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"],
                              cwd=folder, capture_output=True, text=True, timeout=600)

    res = build(_openmp_args())
    if res.returncode != 0 and _openmp_args():
        res = build([])                 # no OpenMP in this compiler: prange runs serially
    assert res.returncode == 0, f"downstream build failed:\n{res.stdout[-4000:]}\n{res.stderr[-4000:]}"
    sys.path.insert(0, str(folder))
    try:
        yield importlib.import_module(MODULE)
    finally:
        sys.path.remove(str(folder))
        for name in sources:
            sys.modules.pop(name, None)


def _pair(seed=20240611):
    """Two generators on identical streams (same seed, same bit generator)."""
    return (np.random.Generator(np.random.PCG64(seed)),
            np.random.Generator(np.random.PCG64(seed)))


def _same_stream_after(g1, g2):
    assert g1.bit_generator.state == g2.bit_generator.state


# ---- without a compiler ---------------------------------------------------------

def test_public_pxd_is_beside_the_package():
    pxd = Path(pygbn.get_include()) / "pygbn" / "random" / "kernels.pxd"
    assert pxd.is_file(), pxd
    assert Path(pygbn.get_include()).is_absolute()


def test_public_pxd_exports_every_python_sampler_kernel():
    text = (Path(pygbn.get_include()) / "pygbn" / "random" / "kernels.pxd").read_text(encoding="utf-8")
    block = text.split("from pygbn.random._kernels cimport (", 1)[1].split("\n)\n", 1)[0]
    exported = set(re.findall(r"^\s*(\w+),", block, flags=re.M))
    for name in ["random_crt", "random_logarithmic", "random_truncated_poisson",
                 "random_truncated_bessel", "random_prg", "random_nb", "random_multinomial_split",
                 "random_dirichlet", "random_log_gamma", "random_categorical",
                 "random_poisson_exact", "random_gamma_exact", "random_binomial_exact"]:
        assert name in exported, name
    assert not any(name.startswith("_") for name in exported)
    assert "cdef inline bitgen_t *get_bitgen(" in text


# ---- a compiled downstream extension ---------------------------------------------

@pytest.mark.parametrize("name, sampler, params", [
    ("logarithmic", R.logarithmic, [0.0, 0.3, 0.9, 0.999999]),
    ("truncated_poisson", R.truncated_poisson, [0.0, 1e-300, 0.7, 3.0, 50.0, 2e10, 1e18]),
    ("truncated_bessel", R.truncated_bessel, [0.0, 1e-9, 0.5, 5.0, 30.0, 1e6, 1e15]),
])
def test_one_parameter_kernels_match_python_api(ext, name, sampler, params):
    a = np.repeat(np.asarray(params, dtype=np.float64), 40)
    g_py, g_c = _pair()
    np.testing.assert_array_equal(ext.draw_one(name, g_c, a), sampler(a, random_state=g_py))
    _same_stream_after(g_py, g_c)


@pytest.mark.parametrize("name, params", [
    ("poisson", [0.0, 0.5, 12.0, 3e9, 2e10, 1e17]),
    ("gamma", [0.0, 1e-3, 0.5, 7.0, 3e10]),
    ("log_gamma", [1e-300, 1e-5, 0.5, 3.0]),
])
def test_building_blocks_match_single_kernel_draws(ext, name, params):
    a = np.repeat(np.asarray(params, dtype=np.float64), 40)
    g_py, g_c = _pair(3)
    np.testing.assert_array_equal(ext.draw_one(name, g_c, a), _kernel(name, a, random_state=g_py))
    _same_stream_after(g_py, g_c)


def test_crt_matches_python_api(ext):
    n = np.repeat([0, 1, 5, 15, 16, 17, 300, 10**6], 30)
    r = np.tile([0.0, 1e-3, 0.5, 2.0, 40.0, 1e4, np.inf, 3.0], 30)
    g_py, g_c = _pair(1)
    np.testing.assert_array_equal(ext.draw_pairs("crt", g_c, n.astype(np.float64), r),
                                  R.crt(n, r, random_state=g_py))
    _same_stream_after(g_py, g_c)


def test_negative_binomial_and_prg_match_python_api(ext):
    r = np.repeat([0.0, 0.01, 1.0, 50.0, 1e8], 25)
    p = np.tile([0.0, 0.1, 0.5, 0.9, 0.999], 25)
    g_py, g_c = _pair(2)
    np.testing.assert_array_equal(ext.draw_pairs("negative_binomial", g_c, r, p),
                                  R.negative_binomial(r, p, random_state=g_py))
    lam = np.repeat([0.0, 1e-4, 0.3, 8.0, 1e12], 25)
    c = np.tile([1e-3, 0.5, 1.0, 7.0, 1e6], 25)
    np.testing.assert_array_equal(ext.draw_pairs("prg", g_c, lam, c),
                                  R.poisson_randomized_gamma(lam, c, random_state=g_py))
    _same_stream_after(g_py, g_c)


def test_binomial_matches_single_kernel_draws(ext):
    n = np.repeat([0, 1, 40, 1000, 10**12], 30).astype(np.float64)
    p = np.tile([0.0, 1e-9, 0.3, 0.5, 1.0], 30)
    g_py, g_c = _pair(4)
    np.testing.assert_array_equal(ext.draw_pairs("binomial", g_c, n, p),
                                  _kernel("binomial", n.astype(np.int64), p, random_state=g_py))
    _same_stream_after(g_py, g_c)


def test_multinomial_split_and_dirichlet_match_python_api(ext):
    # integer weights: every way of summing a row gives the same total
    w = np.array([[1.0, 0.0, 3.0, 2.0], [5.0, 5.0, 0.0, 1.0], [0.0, 0.0, 7.0, 0.0]])
    w = np.repeat(w, 20, axis=0)
    n = np.tile([0, 3, 10**6], 20).astype(np.int64)
    g_py, g_c = _pair(5)
    np.testing.assert_array_equal(ext.split(g_c, n, w, w.sum(axis=1)),
                                  R.multinomial_split(n, w, random_state=g_py))
    alpha = np.repeat([[0.5, 2.0, 1e-4], [1e-300, 1e-300, 1e-300], [3.0, 0.0, 1.0]], 20, axis=0)
    np.testing.assert_array_equal(ext.dirichlet(g_c, alpha), R.dirichlet(alpha, random_state=g_py))
    _same_stream_after(g_py, g_c)


def test_categorical_is_one_uniform_against_cumulative_weights(ext):
    w = np.array([0.0, 2.0, 1.0, 0.0, 5.0])
    g_ref, g_c = _pair(6)
    u = g_ref.random(500) * w.sum()
    expected = np.searchsorted(np.cumsum(w), u, side="right")
    np.testing.assert_array_equal(ext.categorical(g_c, w, 500), expected)
    _same_stream_after(g_ref, g_c)


def test_ptrs_rejects_a_candidate_past_int64_max(ext):
    """Near lam = 9e18 a PTRS candidate floor(lam) + y can pass INT64_MAX: it is rejected.

    The replayed stream gives first U = 1 - 1.9e-10, V = 1e-12 (offset y ~ 1e18,
    past INT64_MAX - 9e18 ~ 2.2e17, and V small enough to reach the exact test),
    then U = V = 0.5 (offset 0, accepted at once): the draw is the second
    candidate, floor(lam), after exactly four uniforms.
    """
    script = np.array([1.0 - 1.8846e-10, 1e-12, 0.5, 0.5])
    k, used = ext.poisson_scripted(9e18, script)
    assert (k, used) == (9 * 10**18, 4)
    k, used = ext.poisson_scripted(9.2e18, script)      # clipped to 9e18, the kernel's cap
    assert (k, used) == (9 * 10**18, 4)
    # the candidate alone, accepted: an offset of 0 from floor(lam)
    k, used = ext.poisson_scripted(9e18, np.array([0.5, 0.5]))
    assert (k, used) == (9 * 10**18, 2)


def test_get_bitgen_takes_a_generator_or_a_bit_generator(ext):
    bg = np.random.PCG64(9)
    a = np.full(50, 0.4)
    g = np.random.Generator(bg)
    expected = bg.ctypes.bit_generator.value
    assert ext.address(g) == ext.address(bg) == expected
    np.testing.assert_array_equal(ext.draw_one("logarithmic", g, a),
                                  R.logarithmic(a, random_state=np.random.PCG64(9)))
    with pytest.raises(AttributeError):
        ext.address(object())


def test_docs_example_draws_the_python_api_numbers(ext):
    if not DOC.exists():
        pytest.skip("docs/ not beside the tests")
    crt_rows = importlib.import_module(DOCS_MODULE).crt_rows
    n = np.array([[3, 10, 0], [100, 1, 7]], dtype=np.int64)
    np.testing.assert_array_equal(crt_rows(np.random.default_rng(0), n, 2.0),
                                  R.crt(n, 2.0, random_state=np.random.default_rng(0)).sum(axis=1))


def test_docs_show_the_build_helper():
    if not DOC.exists():
        pytest.skip("docs/ not beside the tests")
    text = DOC.read_text(encoding="utf-8")
    assert "from pygbn.random.kernels cimport" in text
    assert "include_path=[pygbn.get_include()]" in text


# ---- the docs and kernels.pxd say what the code does -------------------------------

def _declarations():
    """``name -> (return type, [argument after bitgen_t *, ...])`` from _kernels.pxd."""
    text = PRIVATE_PXD.read_text(encoding="utf-8")
    out = {}
    for m in re.finditer(r"^cdef\s+(.+?)\s*\b(\w+)\(([^)]*)\)\s*noexcept nogil", text, flags=re.M | re.S):
        args = [" ".join(a.split()) for a in m.group(3).split(",")]
        assert args[0] == "bitgen_t *bitgen", m.group(2)
        out[m.group(2)] = (" ".join(m.group(1).split()), args[1:])
    return out


def _exported():
    text = PUBLIC_PXD.read_text(encoding="utf-8")
    block = text.split("from pygbn.random._kernels cimport (", 1)[1].split("\n)\n", 1)[0]
    return re.findall(r"^\s*(\w+),", block, flags=re.M)


def test_docs_table_gives_every_kernel_its_real_signature():
    if not DOC.exists():
        pytest.skip("docs/ not beside the tests")
    rows = re.findall(r"^\| `(random_\w+)` \| `\((.*?)\) -> (.*?)` \|", DOC.read_text(encoding="utf-8"),
                      flags=re.M)
    decl = _declarations()
    assert [name for name, _, _ in rows] == _exported()
    for name, args, ret in rows:
        assert (ret, [" ".join(a.split()) for a in args.split(",")]) == decl[name], name


def test_pxd_comments_give_every_kernel_its_real_types():
    """Each export's comment in kernels.pxd starts with its (short) signature."""
    text = PUBLIC_PXD.read_text(encoding="utf-8")

    def norm(s):
        return " ".join(re.sub(r"\s*\*\s*", " *", s.replace("#", " ").replace("int64_t", "int64")).split())

    for name in _exported():
        ret, args = _declarations()[name]
        m = re.search(rf"^\s*{name},\s*# \((.*?)\)\s*(?:#\s*)?->\s*(\w+)", text, flags=re.M | re.S)
        assert m, name
        documented = [norm(a) for a in m.group(1).split(",")]
        assert documented == ["bitgen"] + [norm(a) for a in args], name
        assert m.group(2) == norm(ret), name


def test_block_sizes_in_the_docs_are_the_samplers():
    """kernels.pxd and the docs name the samplers' one-stream limit (and no other)."""
    sizes = set(re.findall(r"\d{1,3}(?:,\d{3})+", _pxd_docstring()))
    assert sizes == {f"{BLOCK_MIN:,}", "65,536"}, sizes
    if DOC.exists():
        text = DOC.read_text(encoding="utf-8").split("## Same stream", 1)[1].split("\n## ", 1)[0]
        assert set(re.findall(r"\d{1,3}(?:,\d{3})+", text)) == {f"{BLOCK_MIN:,}", "65,536"}


def test_one_stream_up_to_the_block_size(ext):
    """An output of BLOCK_MIN items is drawn from the generator itself (for CRT too)."""
    n = np.full(BLOCK_MIN, 20.0)
    r = np.full(BLOCK_MIN, 3.0)
    g_py, g_c = _pair(8)
    np.testing.assert_array_equal(ext.draw_pairs("crt", g_c, n, r),
                                  R.crt(n.astype(np.int64), r, random_state=g_py))
    _same_stream_after(g_py, g_c)


def test_pxd_example_takes_a_generator_or_a_bit_generator(ext):
    tables = importlib.import_module(PXD_MODULE).tables
    expected = R.crt(100, 2.5, random_state=np.random.PCG64(3))
    assert tables(np.random.Generator(np.random.PCG64(3)), 100, 2.5) == expected
    assert tables(np.random.PCG64(3), 100, 2.5) == expected


def test_pxd_threads_recipe_makes_generators():
    """The spawning recipe of kernels.pxd's docstring runs and gives generators."""
    m = re.search(r"``(\[numpy\.random\..*?\])``", _pxd_docstring(), flags=re.S)
    assert m, "kernels.pxd lost its recipe for per-thread generators"
    gens = eval(" ".join(m.group(1).split()), {"numpy": np, "seed": 5, "n_blocks": 3})
    assert len(gens) == 3 and all(isinstance(g, np.random.Generator) for g in gens)
    assert len({int(g.integers(2**62)) for g in gens}) == 3


def test_docs_thread_example_draws_each_block_from_its_generator(ext):
    if not DOC.exists():
        pytest.skip("docs/ not beside the tests")
    crt_blocks = importlib.import_module(THREADS_MODULE).crt_blocks
    n = np.random.default_rng(0).integers(0, 500, 1000)
    block = 64
    seeds = np.random.SeedSequence(17).spawn(-(-n.size // block))
    expected = np.concatenate([R.crt(n[b * block:(b + 1) * block], 1.5,
                                     random_state=np.random.default_rng(s))
                               for b, s in enumerate(seeds)])
    np.testing.assert_array_equal(crt_blocks(17, n, 1.5, block), expected)


@pytest.mark.parametrize("scale", [1e308, 1e-300])
def test_split_of_a_rescaled_row_matches_python_api(ext, scale):
    """Rows whose weights sum to inf or below 2**-900: the Python sampler's numbers are the
    kernel's on the row divided by its max (docs/cython_api.md)."""
    w = np.repeat(np.array([[1.0, 0.0, 0.75, 0.5], [0.25, 1.0, 0.0, 0.0]]) * scale, 20, axis=0)
    n = np.tile([2, 3, 1000, 5], 10).astype(np.int64)
    scaled = w / w.max(axis=1, keepdims=True)
    g_py, g_c = _pair(10)
    with np.errstate(over="ignore"):
        expected = R.multinomial_split(n, w, random_state=g_py)
    np.testing.assert_array_equal(ext.split(g_c, n, scaled, scaled.sum(axis=1)), expected)
    _same_stream_after(g_py, g_c)

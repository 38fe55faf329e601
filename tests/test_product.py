"""The upper layers' Phi theta product kernel (``pygbn.inference._upper``, issue 13).

Every entry ``max(sum_k theta[j, k] phi[v, k], DBL_MIN)`` is one chain of
correctly rounded fused multiply-adds in the order of k on the row scaled by
``2^S`` (``_row_scale``), then scaled back: the tests compare with that chain
formed in exact rational arithmetic, check that every fused path this CPU runs
(AVX-512, AVX2 + FMA or NEON, portable C) gives the same bits, and that an entry does
not depend on the rows beside it, the blocks or the thread count.  The SSE2 path
(x86-64 CPUs without FMA) forms the chain with separately rounded products and
sums instead: its entries are compared with that chain in exact arithmetic.
"""
from fractions import Fraction
import math
import platform

import numpy as np
import pytest

from pygbn._utils import BlockStreams
from pygbn.inference import _upper

TINY = np.finfo(float).tiny
SIZES = [1, 3, 7, 8, 15, 16, 17, 33, 100, 101]
BEST = _upper._product_path()
PATHS = list(range(BEST + 1))   # 0 portable C; x86-64: 1 SSE2, 2 AVX2 + FMA, 3 AVX-512; AArch64: 1 NEON
NAMES = _upper._product_path_names()
MULADD = [p for p in PATHS if NAMES[p] == "SSE2"]       # y = y + phi t, the product rounded
FUSED = [p for p in PATHS if p not in MULADD]           # y = fma(phi, t, y): the same bits


def _row_scale(row):
    """The kernel's S: max(row) brought to at most 2^900, S in [0, 1000] (0 for zeros); the
    exponent from the bits of the largest entry (frexp's for normal numbers)."""
    bits = int(np.max(row.view(np.int64))) if row.size else 0
    if bits == 0:
        return 0
    return min(max(900 - ((bits >> 52) - 1022), 0), 1000)


def _chain(theta_row, phi_row, s, fused=True):
    """The kernel's entry in exact arithmetic: y = fma(phi[k], theta[k] 2^s, y) for k = 0, ...,
    each step rounded once (Fraction -> float rounds correctly), then max(y, DBL_MIN 2^s) 2^-s;
    ``fused=False``: y = y + phi[k] theta[k] 2^s, the product rounded, then the sum (SSE2)."""
    y = 0.0
    for t, p in zip(theta_row, phi_row):
        prod = Fraction(float(p)) * Fraction(math.ldexp(float(t), s))
        if not fused:
            prod = Fraction(float(prod))
        y = float(prod + Fraction(y))
    lim = math.ldexp(TINY, s)
    return math.ldexp(y if y > lim else lim, -s)


def _prior(theta, phi, bounds=None, n_threads=1, path=-1):
    J = theta.shape[0]
    bounds = np.array([0, J], dtype=np.int64) if bounds is None else np.asarray(bounds, dtype=np.int64)
    out = np.full((bounds[-1] - bounds[0], phi.shape[0]), np.nan)
    _upper._product_path(path)
    try:
        _upper.doc_prior(theta, phi, bounds, out, n_threads)
    finally:
        _upper._product_path(-1)
    return out


def _inputs(J, kin, kup, seed):
    rng = np.random.default_rng(seed)
    theta = rng.gamma(0.3, size=(J, kup))
    theta[rng.random((J, kup)) < 0.15] = TINY          # the upper layers' floored theta
    phi = rng.dirichlet(np.full(kin, 0.5), size=kup).T.copy()
    if J > 3:
        theta[1] = TINY                                 # a row of DBL_MIN: every sum is subnormal
        theta[2] = 0.0                                  # a row of zeros
        theta[3, :] = TINY
        theta[3, -1] = 1e-300                           # tiny, but not all below DBL_MIN
    return theta, phi


def test_product_path_hook_reports_and_restores():
    assert BEST in (0, 1, 2, 3)
    assert _upper._product_path(0) == 0
    assert _upper._product_path(5) == BEST              # never more than the CPU runs
    assert _upper._product_path(-1) == BEST
    names = _upper._product_path_names()
    assert len(names) == BEST + 1 and names[0] == "portable C"
    assert set(names[1:]) <= {"SSE2", "AVX2 + FMA", "AVX-512", "NEON"}
    # the x86-64 paths in their order (every x86-64 CPU runs SSE2); AArch64 has NEON only
    assert names[1:] in (["SSE2", "AVX2 + FMA", "AVX-512"][:BEST], ["NEON"][:BEST])
    if platform.machine().lower() in ("x86_64", "amd64") and BEST > 0:
        assert names[1] == "SSE2"


@pytest.mark.parametrize("kin", SIZES)
@pytest.mark.parametrize("kup", SIZES)
def test_entries_are_the_fma_chain_and_all_paths_agree(kin, kup):
    J = 19                                              # tiles of 8, 8, 2 and 1 rows on AVX-512
    theta, phi = _inputs(J, kin, kup, 1000 * kin + kup)
    outs = [_prior(theta, phi, path=p) for p in FUSED]
    for p, out in zip(FUSED, outs):
        assert out.tobytes() == outs[0].tobytes(), f"path {p} differs from path 0"
    out = outs[-1]
    assert np.all(out >= TINY)
    # the exact chain, for rows of each kind of tile (all rows where the sizes are small)
    rows = range(J) if kin * kup <= 300 else [0, 1, 2, 3, 7, 15, 17, 18]
    for j in rows:
        s = _row_scale(theta[j])
        expect = [_chain(theta[j], phi[v], s) for v in range(kin)]
        np.testing.assert_array_equal(out[j], expect, err_msg=f"row {j}")
    np.testing.assert_array_equal(out[2], TINY)                      # zeros: floored
    np.testing.assert_allclose(out[1], np.maximum(TINY * phi.sum(axis=1), TINY), rtol=1e-13)


@pytest.mark.parametrize("path", [-1] + MULADD)                 # the default path, SSE2
def test_product_is_close_to_the_long_double_product(path):
    """A Debian-sized row block: within kup ulps of the sum in long double (nonnegative terms)."""
    theta, phi = _inputs(300, 100, 100, 7)
    out = _prior(theta, phi, path=path)
    exact = np.maximum(theta.astype(np.longdouble) @ phi.T.astype(np.longdouble), TINY)
    rel = np.abs(out.astype(np.longdouble) - exact) / exact
    assert float(rel.max()) <= 100 * 2.0 ** -53


@pytest.mark.parametrize("path", PATHS)
def test_rows_do_not_depend_on_blocks_or_threads(path):
    J, kin, kup = 301, 33, 17
    theta, phi = _inputs(J, kin, kup, 3)
    ref = _prior(theta, phi, path=path)
    for bounds in ([0, 1, 4, 11, 19, 35, 100, 301], [0, 150, 301], np.arange(0, 302, 7).tolist() + [301]):
        bounds = sorted(set(bounds))
        for nt in (1, 2, 3):
            assert _prior(theta, phi, bounds, nt, path).tobytes() == ref.tobytes(), (bounds, nt)
    # a part of the blocks gives the same rows as the whole
    part = _prior(theta, phi, [5, 12, 40, 301], 2, path)
    assert part.tobytes() == ref[5:].tobytes()


def _theta_draws(path, bounds, n_threads):
    """sample_theta's draws (bytes) on a forced path, one stream per block of ``bounds``."""
    rng = np.random.default_rng(5)
    J, kin, kup = 50, 17, 9
    theta, phi = _inputs(J, kin, kup, 5)
    m = rng.poisson(1.0, size=(J, kin)).astype(np.int32)
    rate = 1.0 + rng.random(J)
    bounds = np.array(bounds, dtype=np.int64)
    streams = BlockStreams(np.random.default_rng(6), len(bounds) - 1)
    out, sums = np.empty((J, kin)), np.empty(J)
    _upper._product_path(path)
    try:
        _upper.sample_theta(theta, phi, np.empty(0), m, rate, bounds, streams.addresses, out, sums, n_threads)
    finally:
        _upper._product_path(-1)
    return out.tobytes()


def test_sample_theta_prior_is_doc_prior_on_every_path():
    """sample_theta's prior rows come from the same product: the same draws on every path."""
    draws = [_theta_draws(p, [0, 13, 50], 2) for p in FUSED]
    assert len(set(draws)) == 1


@pytest.mark.skipif(not MULADD, reason="no SSE2 path (not x86-64, or built without SIMD)")
@pytest.mark.parametrize("kin", SIZES)
@pytest.mark.parametrize("kup", SIZES)
def test_sse2_entries_are_the_mul_add_chain(kin, kup):
    """The SSE2 path (x86-64 without FMA): y = y + phi[v, k] ts[j, k], each product and sum
    rounded, bit for bit in every kind of tile; within a few ulps of the fused paths."""
    J = 19                                              # tiles of 4, 4, 4, 4, 2 and 1 rows
    theta, phi = _inputs(J, kin, kup, 1000 * kin + kup)
    out = _prior(theta, phi, path=MULADD[0])
    assert np.all(out >= TINY)
    rows = range(J) if kin * kup <= 300 else [0, 1, 2, 3, 7, 15, 16, 17, 18]
    for j in rows:
        s = _row_scale(theta[j])
        expect = [_chain(theta[j], phi[v], s, fused=False) for v in range(kin)]
        np.testing.assert_array_equal(out[j], expect, err_msg=f"row {j}")
    np.testing.assert_array_equal(out[2], TINY)                      # zeros: floored
    np.testing.assert_allclose(out[1], np.maximum(TINY * phi.sum(axis=1), TINY), rtol=1e-13)
    np.testing.assert_allclose(out, _prior(theta, phi, path=0), rtol=2 * kup * 2.0 ** -53, atol=0)


@pytest.mark.skipif(not MULADD, reason="no SSE2 path (not x86-64, or built without SIMD)")
def test_sample_theta_on_the_sse2_path_does_not_depend_on_threads():
    draws = [_theta_draws(MULADD[0], [0, 13, 31, 50], nt) for nt in (1, 2, 3)]
    assert len(set(draws)) == 1

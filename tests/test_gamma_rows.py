"""The theta gamma kernel (``pygbn/random/_gamma.pxd``) against the exact gamma law.

Binned chi-square on the scale ``a log x`` against the exact CDF (scipy's
regularised incomplete gamma and its series below 1, as in
``test_random_large``) for shapes from 1e-3 to 1e3, chosen so that every
branch is reached often: proposals accepted without a test (x <= 2^-53),
tests decided by the 11 spare bits, by ``exp`` and by a further uniform,
GS's second proposal (P > 1) in the vectorised tail pass and one at a time,
rejections and the further rounds of proposals (vectorised, padded to 8
lanes or not, and the last few one at a time), draws below e^-700 whose
quotient is formed from their log, the floor at DBL_MIN, and Marsaglia-Tsang
from 1 up.  Level ``ALPHA = 1e-5`` per check, fixed seeds.  The vectorised
passes give the same bits in every instruction set's version.
"""
import zlib

import numpy as np
import pytest
from scipy import special

from pygbn._utils import BlockStreams
from pygbn.random import _gamma
from test_random_large import ALPHA, _assert_gamma_gof

N = 4 * 10**5
TINY = np.finfo(float).tiny


def seed(*key):
    return zlib.crc32(repr(key).encode())


def draw(shapes, rate=1.0, n_rows=None, n_threads=1, key=0):
    """``gamma_rows`` on ``n_rows`` rows of ``shapes`` (rate per row), blocks of 100 rows."""
    shapes = np.atleast_1d(np.asarray(shapes, dtype=np.float64))
    n_rows = n_rows or N // shapes.size
    a = np.ascontiguousarray(np.broadcast_to(shapes, (n_rows, shapes.size)))
    rate = np.ascontiguousarray(np.broadcast_to(np.asarray(rate, dtype=np.float64), (n_rows,)))
    bounds = np.arange(0, n_rows + 100, 100, dtype=np.int64)
    bounds[-1] = n_rows
    streams = BlockStreams(np.random.default_rng(seed("rows", key)), len(bounds) - 1)
    out, sums = np.empty(a.shape), np.empty(n_rows)
    _gamma.gamma_rows(a, rate, bounds, streams.addresses, out, sums, n_threads)
    return out, sums


SHAPES = [1e-3, 0.015, 0.1, 0.3, 0.5, 0.7, 0.9, 0.999, 0.9999, 1.0, 1.5, 7.0, 1e3]


@pytest.mark.parametrize("a", SHAPES)
def test_gamma_rows_match_the_gamma_law(a):
    out, sums = draw([a], key=a)
    assert np.all(out >= TINY) and np.all(np.isfinite(out))
    _assert_gamma_gof(out[:, 0], a)


def test_mixed_rows_each_draw_follows_its_own_shape():
    shapes = [1e-3, 0.02, 0.3, 0.8, 1.0, 4.0, 0.05, 2e-4]
    out, sums = draw(shapes, n_rows=N // 2, key="mixed")
    for i, a in enumerate(shapes):
        _assert_gamma_gof(out[:, i], a)
    # the row sums are the sums of the rows (the kernel's fixed order)
    np.testing.assert_allclose(sums, out.sum(axis=1), rtol=1e-13)


@pytest.mark.parametrize("row", [
    # rows of 100 like the test chain's theta^(1) (shapes r_k + m_jk: in [0.4, 1), or from
    # 1.4 up): a first round of 70 lanes padded to 72, the P > 1 ones in a vectorised pass,
    # further rounds, the last few one at a time
    [0.43, 0.51, 0.55, 0.68, 0.81, 0.9, 0.97, 1.43, 2.51, 5.68] * 10,
    # every shape in [0.3, 1): no room to pad the first round (a scalar remainder), many
    # rejections and tails (1 - 1/b = 25% at 0.999), several vectorised rounds
    [0.3, 0.5, 0.7, 0.9, 0.999] * 13,
    # rows with 8 and 7 shapes below 1: a round of 8 lanes (no room to pad), or every draw one at a time
    [0.3, 0.5, 0.7, 0.9, 0.999, 0.6, 0.8, 0.95, 2.0],
    [0.3, 0.5, 0.7, 0.9, 0.999, 0.6, 0.8, 3.0],
])
def test_rows_with_shapes_from_0_3_to_1_follow_their_laws(row):
    out, sums = draw(row, rate=1.3, n_rows=(50 * N) // len(row) // 10, key=("rows", len(row)))
    shapes = np.array(row)
    for a in np.unique(shapes):
        _assert_gamma_gof(1.3 * out[:, shapes == a].ravel(), a)
    np.testing.assert_allclose(sums, out.sum(axis=1), rtol=1e-13)


def _pass_inputs(tail, n=4000, key=0):
    """Shapes, uniforms (lead) or values P > 1 (tail), and 11-bit h spread over every branch
    of the passes: shapes 1e-300 to 1 - 2^-53, uniforms from 2^-53 to 1 - 2^-53, P up to
    (1 + a/e)(1 - 2^-53)."""
    rng = np.random.default_rng(seed("pass", tail, key))
    a = np.exp(rng.uniform(np.log(1e-300), 0.0, size=n))
    a[: n // 2] = rng.uniform(0.3, 1.0, size=n // 2)
    a[:8] = [1e-300, 1e-17, 1e-3, 0.3, 0.5, 0.999, 1.0 - 2.0**-53, 0.9]
    u = rng.random(n)
    u[8:16] = [2.0**-53, 1e-300, 0.5, 1.0 - 2.0**-53, 1e-10, 0.9, 0.999, 1e-200]
    b = 1.0 + a * np.exp(-1.0)
    if tail:
        u = np.maximum(np.nextafter(1.0, 2.0), np.minimum(b * np.maximum(u, 1e-300), b * (1.0 - 2.0**-53)))
        keep = u > 1.0
        a, u = a[keep], u[keep]
    h = np.floor(rng.random(a.size) * 2048.0)
    return a, u, h


@pytest.mark.parametrize("tail", [False, True])
@pytest.mark.parametrize("rate", [1.0, 1e-280, 1e200])
def test_vectorised_passes_same_bits_in_every_instruction_set(tail, rate):
    """The baseline, AVX2 and AVX-512F versions of the lead and tail passes (each chosen
    at run time by the CPU; here each called by name where the CPU has it) give the same
    bits: no multiply-add is fused (-ffp-contract=off), every operation is the same."""
    a, u, h = _pass_inputs(tail, key=rate)
    base = _gamma.gs_pass(0, tail, a, u, h, rate)
    assert base is not None
    val = base[2]
    assert np.all((val >= TINY) | np.isin(val, [-1.0, -2.0, -3.0])), val
    if tail:
        assert np.any(val == -1.0) and np.any(val == -2.0) and np.any(val >= TINY)
    else:
        for code in (-1.0, -2.0, -3.0):
            assert np.any(val == code), code
    versions = 1
    for isa in (1, 2):
        other = _gamma.gs_pass(isa, tail, a, u, h, rate)
        if other is None:
            continue
        versions += 1
        for x, y in zip(base, other):
            np.testing.assert_array_equal(x.view(np.int64), y.view(np.int64))
    if versions == 1:
        pytest.skip("only the baseline version on this CPU or build")


@pytest.mark.parametrize("a,rate", [(2e-3, 1e-280), (0.02, 1e-30), (0.3, 1e5), (0.02, 1e200), (3.0, 1e-100)])
def test_rate_scales_and_tiny_draws_keep_their_precision(a, rate):
    """P(out <= q) = P(a, q rate) at quantiles spread over the floor at DBL_MIN and
    the draws below e^-700 that are formed from their log."""
    out, _ = draw([a], rate=rate, key=("rate", a, rate))
    out = out[:, 0]
    assert np.all(out >= TINY)
    log_x = np.log(np.quantile(out, [0.02, 0.1, 0.3, 0.5, 0.7, 0.9, 0.98])) + np.log(rate)
    log_x = log_x[np.log(np.exp(log_x - np.log(rate)).clip(TINY)) > np.log(TINY) + 1.0]   # above the floor
    expected = np.where(log_x < np.log(1e-30), np.exp(a * log_x - special.gammaln(a + 1)),
                        special.gammainc(a, np.exp(np.maximum(log_x, -700.0))))
    observed = (out[:, None] <= np.exp(log_x - np.log(rate))[None, :]).mean(axis=0)
    assert np.all(np.abs(observed - expected) < 5 * np.sqrt(expected * (1 - expected) / out.size) + 1e-12), \
        (observed, expected)
    # the floor: P(G / rate < DBL_MIN) = P(a, DBL_MIN rate)
    p_floor = special.gammainc(a, TINY * rate) if TINY * rate > 1e-300 else \
        np.exp(a * (np.log(TINY) + np.log(rate)) - special.gammaln(a + 1))
    n_floor = np.sum(out == TINY)
    assert abs(n_floor - out.size * p_floor) < 6 * np.sqrt(out.size * p_floor * (1 - p_floor)) + 1, \
        (n_floor, out.size * p_floor)


def test_draws_do_not_depend_on_the_thread_count():
    shapes = [1e-3, 0.3, 0.9, 2.0, 0.01]
    one, s1 = draw(shapes, rate=np.linspace(0.5, 2.0, 20000), n_rows=20000, n_threads=1, key="nt")
    three, s3 = draw(shapes, rate=np.linspace(0.5, 2.0, 20000), n_rows=20000, n_threads=3, key="nt")
    np.testing.assert_array_equal(one, three)
    np.testing.assert_array_equal(s1, s3)


@pytest.mark.parametrize("y", [0.0, 1e-12, 2e-4, 0.01, 0.3, 0.7, 1.0, 2.5, 30.0])
def test_accept_exp_neg_is_the_exact_test(y):
    """V = (h + W) / 2048 < exp(-y): every h below T = 2048 exp(-y) whose cell lies
    below T always accepts, every h >= T never, the cell holding T with
    probability frac(T) (decided by W)."""
    streams = BlockStreams(np.random.default_rng(seed("accept", y)), 1)
    repeat = 2000
    counts = _gamma.accept_counts(y, streams.addresses, repeat)
    t = 2048.0 * np.exp(-y)
    h = np.arange(2048)
    always, never = h + 1 <= t, h >= t
    assert np.all(counts[always] == repeat) and np.all(counts[never] == 0)
    edge = ~(always | never)
    assert edge.sum() <= 1
    if edge.any():
        p = t - np.floor(t)
        c = counts[edge][0]
        assert abs(c - repeat * p) <= 5 * np.sqrt(repeat * p * (1 - p)) + 1, (c, p)
